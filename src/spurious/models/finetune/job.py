"""What a fine-tune trains on, as :func:`~spurious.models.finetune.fine_tune` hands it to
a training loop (the Trainer's, :func:`~spurious.models.finetune.trainer.run_trainer`, or
the lean one, :func:`~spurious.models.finetune.lean.run_lean`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spurious.models.finetune.config import FineTuneConfig
from spurious.models.finetune.data import EncodedSplit
from spurious.models.finetune.debias import SideInputs


@dataclass
class TrainingJob:
    """One fine-tune, resolved: the model and data loaded, the hardware chosen.

    Attributes
    ----------
    cfg : FineTuneConfig
    model, tokenizer : transformers objects
        The model to train in place (with a debiasing objective's module attached).
    train_enc, eval_enc : EncodedSplit
        The encoded splits (``eval_enc`` may be ``None``).
    side : SideInputs
        Per-example inputs of a debiasing objective.
    loss_module : nn.Module or None
        The debiasing objective (``None``: cross-entropy).
    device, precision : str
        Resolved (no ``"auto"``).
    ckpt_dir : Path
        Where checkpoints go; ``run_info`` is written there as the run's identity.
    run_info : dict
    resume_from : Path or None
        The checkpoint to continue from.
    progress : bool
    t_start : float
        ``time.perf_counter()`` when the fine-tune started (its wall time).
    """

    cfg: FineTuneConfig
    model: Any
    tokenizer: Any
    train_enc: EncodedSplit
    eval_enc: EncodedSplit | None
    side: SideInputs
    loss_module: Any
    device: str
    precision: str
    ckpt_dir: Path
    run_info: dict[str, Any]
    resume_from: Path | None
    progress: bool
    t_start: float
