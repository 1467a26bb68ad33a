"""The lean loop's state and checkpoints (:mod:`~spurious.models.finetune.lean`).

A checkpoint folder ``checkpoint-<step>`` holds the weights (``model.safetensors``), the
best epoch's weights (``best.safetensors``, with early stopping), the optimiser,
scheduler, scaler and RNG streams (``optimizer.pt``, a
``torch.save`` file read back with ``weights_only=True``: tensors and plain containers
only), the dynamics so far, the per-epoch timing and, written last, the loop's state
(``spurious_lean_state.json``). It is written in a temporary folder and renamed into
place, so a folder that exists is complete.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from spurious.models.finetune.outputs import LEAN_STATE
from spurious.models.finetune.recording import DynamicsRecorder
from spurious.utils.io import atomic_write_json, read_json

_WEIGHTS = "model.safetensors"
_BEST = "best.safetensors"
_OPTIMIZER = "optimizer.pt"


@dataclass
class LeanState:
    """Where a lean fine-tune stands (stored in every checkpoint)."""

    epochs_done: int = 0
    global_step: int = 0
    best_accuracy: float | None = None
    best_epoch: int | None = None
    bad_epochs: int = 0
    stopped_early: bool = False
    loss_sum: float = 0.0
    loss_batches: int = 0
    log_history: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Optimisation:
    """What a step updates and a checkpoint stores besides the weights."""

    optimizer: Any
    scheduler: Any
    scaler: Any  # torch.amp.GradScaler for fp16, else None


def _rng_state() -> dict[str, Any]:
    import torch

    out: dict[str, Any] = {"cpu": torch.get_rng_state()}
    if torch.cuda.is_available():
        out["cuda"] = torch.cuda.get_rng_state_all()
    return out


def save_checkpoint(
    ckpt_dir: Path,
    state: LeanState,
    model: Any,
    opt: Optimisation,
    recorder: DynamicsRecorder,
    epoch_times: dict[int, dict[str, float]],
    best_weights: dict[str, Any] | None,
) -> None:
    """``checkpoint-<step>`` written in a temporary folder and renamed into place (so a
    folder that exists is complete); older checkpoints are removed after."""
    import torch
    from safetensors.torch import save_file

    ckpt_dir.mkdir(parents=True, exist_ok=True)
    final = ckpt_dir / f"checkpoint-{state.global_step}"
    tmp = Path(tempfile.mkdtemp(prefix=".checkpoint-", dir=ckpt_dir))
    try:
        save_file(_contiguous(model.state_dict()), str(tmp / _WEIGHTS))
        if best_weights is not None:
            save_file(_contiguous(best_weights), str(tmp / _BEST))
        torch.save(
            {
                "optimizer": opt.optimizer.state_dict(),
                "scheduler": opt.scheduler.state_dict(),
                "scaler": None if opt.scaler is None else opt.scaler.state_dict(),
                "rng": _rng_state(),
            },
            tmp / _OPTIMIZER,
        )
        recorder.save(tmp)
        atomic_write_json(tmp / "spurious_timing.json", epoch_times)
        atomic_write_json(tmp / LEAN_STATE, asdict(state))
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    for old in ckpt_dir.glob("checkpoint-*"):
        if old != final and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)


def _contiguous(weights: dict[str, Any]) -> dict[str, Any]:
    # safetensors refuses views that share memory; a state dict's tensors are saved as
    # independent contiguous copies.
    return {k: v.detach().contiguous().clone() for k, v in weights.items()}


def load_checkpoint(
    folder: Path,
    model: Any,
    opt: Optimisation,
    recorder: DynamicsRecorder,
    epoch_times: dict[int, dict[str, float]],
) -> dict[str, Any] | None:
    """Restore everything :func:`save_checkpoint` stored; returns the best weights."""
    import torch
    from safetensors.torch import load_file

    model.load_state_dict(
        load_file(str(folder / _WEIGHTS), device=str(next(model.parameters()).device))
    )
    # weights_only: plain tensors and containers, never arbitrary objects.
    blob = torch.load(folder / _OPTIMIZER, map_location="cpu", weights_only=True)
    opt.optimizer.load_state_dict(blob["optimizer"])
    opt.scheduler.load_state_dict(blob["scheduler"])
    if opt.scaler is not None and blob["scaler"] is not None:
        opt.scaler.load_state_dict(blob["scaler"])
    torch.set_rng_state(blob["rng"]["cpu"])
    if "cuda" in blob["rng"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(blob["rng"]["cuda"])
    recorder.load(folder)
    timing = folder / "spurious_timing.json"
    if timing.is_file():
        epoch_times.update({int(k): v for k, v in read_json(timing).items()})
    best = folder / _BEST
    return load_file(str(best)) if best.is_file() else None
