"""One process of a data-parallel fine-tune, for tests/test_finetune_ddp.py.

Run under ``python -m torch.distributed.run --nproc_per_node N`` (gloo on CPU)::

    ddp_finetune_worker.py MODEL OUT REPORTS CONFIG_JSON

fine-tunes the tiny BERT ``MODEL`` on the planted-cue NLI data of the fine-tuning tests
into ``OUT`` and writes what this process's :func:`fine_tune` returned to
``REPORTS/rank<R>.json``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

from spurious.data.synthetic import make_nli_artifacts
from spurious.models.finetune import FineTuneConfig, fine_tune


def planted_data():
    """``(train, dev)``: the fine-tuning tests' planted-cue NLI pairs ("Nobody doubts
    that ..." in 90% of the contradiction hypotheses and in no other)."""
    ds = make_nli_artifacts(n=160, artifact_rate=0.9, random_state=0).dataset
    return ds.split(0.25, random_state=0)


def cue_bias_probs(train) -> np.ndarray:
    """A bias model that knows the cue: 0.8 on contradiction for a cued row, else uniform."""
    k = train.n_classes
    probs = np.full((len(train), k), 1.0 / k)
    cued = train.frame["hypothesis"].str.contains("Nobody").to_numpy()
    probs[cued] = 0.2 / (k - 1)
    probs[cued, train.label_names.index("contradiction")] = 0.8
    return probs


def _crash_at(step: int):
    """A callback that stops process 1 at the end of global step ``step`` (an
    interruption: torchrun then stops the other process too)."""
    from transformers import TrainerCallback

    class Crash(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            if state.global_step == step and int(os.environ["RANK"]) == 1:
                os._exit(3)

    return Crash()


def main() -> None:
    model, out, reports, config = sys.argv[1:5]
    train, dev = planted_data()
    options = json.loads(config)
    crash_at = options.pop("crash_at_step", None)
    resume = options.pop("resume", False)
    progress = options.pop("progress", False)
    cfg = FineTuneConfig(model=model, **options)
    side = {} if cfg.loss == "plain" else {"bias_probs": cue_bias_probs(train)}
    callbacks = [] if crash_at is None else [_crash_at(crash_at)]
    res = fine_tune(
        train, dev, cfg, out, progress=progress, resume=resume, callbacks=callbacks, **side
    )
    rank = int(os.environ["RANK"])
    report = {
        "rank": rank,
        "world_size": int(os.environ["WORLD_SIZE"]),
        "history": res.history,
        "n_dynamics": len(res.dynamics),
    }
    Path(reports, f"rank{rank}.json").write_text(json.dumps(report))


if __name__ == "__main__":
    main()
