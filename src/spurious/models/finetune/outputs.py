"""The output folder of a fine-tune: its layout, resuming into it, writing the model.

::

    output_dir/
      model/              config.json (label names), model.safetensors, tokenizer files,
                          spurious_finetune.json (view, max length, data fingerprints)
      dynamics.parquet    one row per example and snapshot (recording.FINETUNE_FRAME_COLUMNS)
      metrics.json        config, per-epoch history, final metrics (written last)
      checkpoints/        one per epoch while training (removed after success unless
                          keep_checkpoints); a rerun with resume=True continues from them

:class:`FineTuneResult` is what :func:`~spurious.models.finetune.fine_tune` returns and
what :meth:`FineTuneResult.load` reads back; :func:`prepare_output` checks the folder
before any work (finished, interrupted, or another fine-tune's checkpoints) and
:func:`write_model` swaps the trained model in atomically.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from spurious._version import __version__
from spurious.exceptions import ParameterError
from spurious.models.finetune.config import FineTuneConfig
from spurious.models.finetune.debias import save_loss
from spurious.models.finetune.inference import MODEL_META
from spurious.models.finetune.recording import empty_frame, read_dynamics
from spurious.models.runtime import quiet_transformers
from spurious.utils.io import atomic_write_json, read_json, to_jsonable

logger = logging.getLogger(__name__)

__all__ = [
    "CHECKPOINT_DIR",
    "DYNAMICS_FILE",
    "METRICS_FILE",
    "MODEL_DIR",
    "RUN_FILE",
    "FineTuneResult",
]

MODEL_DIR = "model"
DYNAMICS_FILE = "dynamics.parquet"
METRICS_FILE = "metrics.json"
CHECKPOINT_DIR = "checkpoints"
#: Written into checkpoints/ when a fine-tune starts: a resume must match it.
RUN_FILE = "run.json"


@dataclass
class FineTuneResult:
    """What :func:`fine_tune` produced.

    Attributes
    ----------
    output_dir : Path
    model_dir : Path
        The trained model (``output_dir/model``): safetensors weights, config with the
        label names, tokenizer.
    dynamics : pandas.DataFrame
        Columns ``id, split, epoch, p_gold, pred, correct, logits`` (see
        :mod:`~spurious.models.finetune.recording`); empty without recording.
    history : list of dict
        Per epoch: ``epoch, train_loss, train_accuracy, train_mean_p_gold, eval_loss,
        eval_accuracy, train_seconds, dynamics_seconds``.
    metrics : dict
        Final metrics (evaluation accuracy of the kept weights, best epoch, examples/s,
        wall time ...).
    config : FineTuneConfig
    label_names : list of str
    """

    output_dir: Path
    model_dir: Path
    dynamics: pd.DataFrame
    history: list[dict[str, Any]]
    metrics: dict[str, Any]
    config: FineTuneConfig
    label_names: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, output_dir: str | os.PathLike[str]) -> FineTuneResult:
        """Read a finished fine-tune's outputs.

        Examples
        --------
        >>> FineTuneResult.load("runs/train")  # doctest: +SKIP
        """
        out = Path(output_dir)
        meta_path = out / METRICS_FILE
        if not meta_path.is_file():
            raise ParameterError(
                f"The 'output_dir' parameter must be the folder of a finished fine-tune; "
                f"{str(out)!r} has no {METRICS_FILE}."
            )
        meta = read_json(meta_path)
        dyn_path = out / DYNAMICS_FILE
        return cls(
            output_dir=out,
            model_dir=out / MODEL_DIR,
            dynamics=read_dynamics(dyn_path) if dyn_path.is_file() else empty_frame(),
            history=meta.get("history", []),
            metrics=meta.get("metrics", {}),
            config=FineTuneConfig.from_dict(meta.get("config", {})),
            label_names=list(meta.get("label_names", [])),
        )

    def training_dynamics(self) -> Any:
        """The dynamics as :class:`spurious.models.dynamics.TrainingDynamics`."""
        from spurious.models.dynamics import TrainingDynamics

        return TrainingDynamics(
            frame=self.dynamics,
            label_names=list(self.label_names),
            meta={"source": "finetune", "config": self.config.to_dict(), **self.metrics},
        )


def prepare_output(
    out: Path, run_info: dict[str, Any], *, resume: bool, overwrite: bool
) -> Path | None:
    """Check ``out`` before any work; return the checkpoint to resume from, if any."""
    check_not_a_run_dir(out)
    ckpt_dir = out / CHECKPOINT_DIR
    finished = (out / METRICS_FILE).is_file()
    last = last_complete_checkpoint(ckpt_dir) if ckpt_dir.is_dir() else None
    if overwrite:
        for name in (MODEL_DIR, CHECKPOINT_DIR):
            shutil.rmtree(out / name, ignore_errors=True)
        for name in (DYNAMICS_FILE, METRICS_FILE):
            (out / name).unlink(missing_ok=True)
        return None
    if finished:
        raise ParameterError(
            f"The 'output_dir' {str(out)!r} holds a finished fine-tune; pass overwrite=True "
            "(--force) to replace it, or load it with FineTuneResult.load."
        )
    if last is not None and not resume:
        raise ParameterError(
            f"The 'output_dir' {str(out)!r} holds checkpoints of an interrupted fine-tune; "
            "pass resume=True (--resume) to continue it or overwrite=True (--force) to "
            "start over."
        )
    if last is not None:
        previous = read_json(ckpt_dir / RUN_FILE) if (ckpt_dir / RUN_FILE).is_file() else None
        if previous != to_jsonable(run_info):
            raise ParameterError(
                f"Cannot resume in {str(out)!r}: its checkpoints come from a different "
                "fine-tune (data or config differ). Pass overwrite=True (--force) to start over."
            )
        return Path(last)
    return None


def check_not_a_run_dir(out: str | os.PathLike[str]) -> None:
    """Refuse a folder that holds a run of the analyses (its ``manifest.json``): a trained
    model never goes beside another run's results, even with ``overwrite``.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> check_not_a_run_dir(d)  # empty: fine
    >>> _ = (d / "manifest.json").write_text("{}")
    >>> check_not_a_run_dir(d)
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: The 'output_dir' (--out) ... another --out.
    """
    if (Path(out) / "manifest.json").is_file():
        raise ParameterError(
            f"The 'output_dir' (--out) {os.fspath(out)!r} holds a run of the analyses "
            "(manifest.json); a fine-tune never writes beside another run's results, even "
            "with --force. Choose another --out."
        )


#: Written last into a checkpoint folder of the lean loop (:mod:`.lean`).
LEAN_STATE = "spurious_lean_state.json"
#: The file each loop writes last into a checkpoint folder (the Trainer's, the lean loop's).
COMPLETE_MARKERS = ("trainer_state.json", LEAN_STATE)


def last_complete_checkpoint(ckpt_dir: Path) -> Path | None:
    """The newest ``checkpoint-<step>`` folder that was written to the end.

    transformers' Trainer writes ``trainer_state.json`` last when it saves a checkpoint
    (the lean loop, :mod:`~spurious.models.finetune.lean`, ``spurious_lean_state.json``),
    so a folder without either was cut short (a kill while saving); resuming from it ends in
    a ``FileNotFoundError``. Such folders are skipped with a warning (and left in place:
    the next save of that step replaces them).

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> for step in (2, 4):
    ...     (d / f"checkpoint-{step}").mkdir()
    >>> _ = (d / "checkpoint-2" / "trainer_state.json").write_text("{}")
    >>> last_complete_checkpoint(d).name  # checkpoint-4 was cut short
    'checkpoint-2'
    """
    steps = []
    for p in ckpt_dir.iterdir():
        m = re.fullmatch(r"checkpoint-(\d+)", p.name)
        if m and p.is_dir():
            steps.append((int(m.group(1)), p))
    for _, p in sorted(steps, reverse=True):
        if any((p / name).is_file() for name in COMPLETE_MARKERS):
            return p
        logger.warning(
            "skipping the checkpoint %s: it has no %s (interrupted while saving); "
            "resuming from the one before it",
            p,
            " or ".join(COMPLETE_MARKERS),
        )
    return None


def write_model(
    model: Any,
    tokenizer: Any,
    path: Path,
    cfg: FineTuneConfig,
    view: str,
    run_info: dict,
    loss_module: Any = None,
) -> None:
    """Save the kept weights (safetensors), config and tokenizer into ``path`` atomically:
    written to a temporary sibling folder, then swapped in."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        with quiet_transformers():
            model.save_pretrained(str(tmp), safe_serialization=True)
        tokenizer.save_pretrained(str(tmp))
        if loss_module is not None:  # LearnedMixin's gate (not part of the classifier)
            save_loss(loss_module, tmp)
        atomic_write_json(
            tmp / MODEL_META,
            {
                "view": view,
                "max_length": cfg.max_length,
                "config": cfg.to_dict(),
                "base_model": run_info["model"],
                "data": run_info["data"],
                "spurious": __version__,
            },
        )
        old = None
        if path.exists():
            old = path.with_name(f".{path.name}.old-{os.getpid()}")
            os.replace(path, old)
        os.replace(tmp, path)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
