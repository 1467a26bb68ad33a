"""LearnedMixin+H's entropy weight H on SNLI (issue 19 item 7): dev accuracy per epoch.

Fast path (MLP on frozen MiniLM pair features, 30 epochs, seed 0), trained on SNLI test
(9,824), evaluated on SNLI dev (9,842); the bias model is the debiasing analysis' default
(hypothesis-only, out-of-fold, early-stopped on the out-of-fold NLL, temperature-scaled),
rescaled into <0; 0.8> as for LearnedMixin. H = 0 is LearnedMixin; 0.0738 is the default
``0.4 ln 3 / ln 384``; 0.4 is paper 001's QA value. Writes
``bench/results/debiasing_entropy_grid.json``.

Usage::

    python bench/debiasing_entropy_grid.py [--grid 0 0.0738] [--epochs 30]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from spurious import load_dataset
from spurious.context import RunContext
from spurious.models.debias.bias import fit_bias_model, rescale_bias
from spurious.models.debias.fast import train_fast
from spurious.models.debias.losses import default_entropy_penalty
from spurious.provenance import dependency_versions
from spurious.utils.io import atomic_write_json

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
GRID = (0.0, 0.01, 0.03, round(default_entropy_penalty(3), 4), 0.4)
#: Two values of H, 2 epochs each.
SMOKE_ARGS = ["--grid", "0", "0.4", "--epochs", "2"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--grid", type=float, nargs="+", default=list(GRID), help="values of H")
    ap.add_argument("--epochs", type=int, default=30, help="main-model epochs per value of H")
    args = ap.parse_args()
    train = load_dataset(DATA / "snli/test_tokenized.jsonl", "nli", name="snli-test")
    dev = load_dataset(DATA / "snli/dev.jsonl", "nli", name="snli-dev")
    ctx = RunContext(train, dev, progress=False)
    y, y_dev = np.asarray(train.labels), np.asarray(dev.labels)
    Xh, Xh_dev = (ctx.features("minilm", "hypothesis_only", split=s) for s in ("train", "eval"))
    X, X_dev = (ctx.features("minilm", "full", split=s) for s in ("train", "eval"))
    fit = fit_bias_model(Xh, y, Xh_dev, n_classes=3, groups=train.group_keys("auto"))
    bias = rescale_bias(fit.train_probs, 0.8)
    hard = fit.eval_probs.argmax(1) != y_dev
    rows = {}
    for h in args.grid:
        t0 = time.process_time()
        model = train_fast(
            X, y, loss="learned_mixin_h", bias_probs=bias, loss_params={"entropy_penalty": h},
            epochs=args.epochs, eval_data=(X_dev, y_dev), n_classes=3, random_state=0,
        )  # fmt: skip
        curve = model.eval_accuracy
        pred = model.predict(X_dev)
        rows[str(h)] = {
            "dev_accuracy_by_epoch": [round(a, 4) for a in curve],
            "best": max(curve),
            "best_epoch": int(np.argmax(curve)) + 1,
            "last": curve[-1],
            "hard_accuracy_last": float((pred[hard] == y_dev[hard]).mean()),
            "cpu_s": round(time.process_time() - t0, 1),
        }
        print(h, {k: v for k, v in rows[str(h)].items() if k != "dev_accuracy_by_epoch"},
              flush=True)  # fmt: skip
    atomic_write_json(
        ROOT / "bench/results/debiasing_entropy_grid.json",
        {"protocol": __doc__, "bias_model_temperature": fit.temperature,
         "bias_model_epochs": fit.epochs, "n_hard": int(hard.sum()), "epochs": args.epochs, "grid": rows,
         "versions": dependency_versions()},
    )  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
