"""Debiasing: bias models, debiasing objectives and training with them (paper 001 Sec. 4.4).

Modules: :mod:`~spurious.models.debias.losses` (product of experts, LearnedMixin(+H),
confidence regularization, example reweighting: the :data:`LOSSES` registry; the torch
modules themselves are :mod:`~spurious.models.debias.loss_modules`, loaded on use, and
their shared numbers :mod:`~spurious.models.debias.loss_params`),
:mod:`~spurious.models.debias.bias` (bias probabilities from a partial-input model, a
heuristic split's biased segment, a shallow model or a file; rescaling) and
:mod:`~spurious.models.debias.fast` (an MLP on frozen features trained with any loss).
"""

from typing import Any

from spurious.models.debias.losses import LOSSES, LossSpec, make_loss

__all__ = ["LOSSES", "LossSpec", "make_loss"]


def __getattr__(name: str) -> Any:
    # ``DebiasLoss`` is a torch module: imported only when asked for.
    if name == "DebiasLoss":
        from spurious.models.debias import losses

        return losses.DebiasLoss
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
