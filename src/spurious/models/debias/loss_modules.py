"""The torch modules of the debiasing objectives registered in :data:`~spurious.models.debias.losses.LOSSES`.

The one module of :mod:`spurious.models` that imports torch at import time: its classes
subclass ``torch.nn.Module``. Nothing imports it at import time either:
:func:`~spurious.models.debias.losses.make_loss` and the class names of
:mod:`~spurious.models.debias.losses` load it when a loss is built, so listing the
losses or checking a configuration needs no torch. Each class's flags
(``needs_bias``, ``needs_teacher``, ``needs_hidden``) must equal its registry entry's;
:meth:`~spurious.models.debias.losses.LossSpec.load` checks that.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn
from torch.nn import functional as fn

from spurious.exceptions import ParameterError
from spurious.models.debias.loss_params import (
    EPS,
    PAPER_ENTROPY_PENALTY,
    default_entropy_penalty,
)

__all__ = [
    "ConfidenceRegularization",
    "DebiasLoss",
    "LearnedMixin",
    "LearnedMixinH",
    "PlainLoss",
    "ProductOfExperts",
    "Reweighting",
]


class DebiasLoss(nn.Module):
    """Base class: a training objective that may read bias probabilities and a teacher.

    Subclasses set the ClassVars and implement :meth:`forward`; a loss with parameters
    (LearnedMixin's gate) registers them as module parameters, so the trainer optimises
    them with the model.
    """

    name: ClassVar[str] = ""
    needs_bias: ClassVar[bool] = True
    needs_teacher: ClassVar[bool] = False
    needs_hidden: ClassVar[bool] = False

    def forward(  # pragma: no cover - abstract
        self,
        logits: torch.Tensor,
        labels: torch.Tensor,
        *,
        bias_probs: torch.Tensor | None = None,
        teacher_probs: torch.Tensor | None = None,
        hidden: torch.Tensor | None = None,
    ) -> torch.Tensor:
        raise NotImplementedError

    def _need(self, what: str, value: torch.Tensor | None) -> torch.Tensor:
        if value is None:
            raise ParameterError(f"The {self.name!r} loss needs {what!r}; got None.")
        return value


def _gold(probs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return probs.gather(1, labels.view(-1, 1)).squeeze(1)


class PlainLoss(DebiasLoss):
    """Cross-entropy (the baseline every method is compared with).

    Examples
    --------
    >>> loss = PlainLoss()(torch.tensor([[2.0, 0.0]]), torch.tensor([0]))
    >>> round(float(loss), 4)  # -log(e^2 / (e^2 + 1))
    0.1269
    """

    name: ClassVar[str] = "plain"
    needs_bias: ClassVar[bool] = False

    def forward(self, logits, labels, *, bias_probs=None, teacher_probs=None, hidden=None):
        return fn.cross_entropy(logits, labels)


class ProductOfExperts(DebiasLoss):
    """Product of experts: cross-entropy of ``softmax(log_softmax(logits) + log b)``.

    Examples
    --------
    Equal logits and a bias model sure of class 0: the ensemble already predicts 0, so
    the loss on label 0 is low and on label 1 high.

    >>> b = torch.tensor([[0.9, 0.1]])
    >>> poe = ProductOfExperts()
    >>> round(float(poe(torch.zeros(1, 2), torch.tensor([0]), bias_probs=b)), 4)
    0.1054
    >>> round(float(poe(torch.zeros(1, 2), torch.tensor([1]), bias_probs=b)), 4)
    2.3026
    """

    name: ClassVar[str] = "poe"

    def forward(self, logits, labels, *, bias_probs=None, teacher_probs=None, hidden=None):
        b = self._need("bias_probs", bias_probs)
        combined = fn.log_softmax(logits, dim=1) + torch.log(b.clamp_min(EPS))
        return fn.cross_entropy(combined, labels)


class LearnedMixin(DebiasLoss):
    """LearnedMixin (Clark et al. 2019) with an optional entropy penalty (LearnedMixin+H).

    Parameters
    ----------
    hidden_size : int
        Width of the main model's hidden layer the gate reads.
    entropy_penalty : float, default=0.0
        ``H``; paper 001 uses 0.4 (:data:`LOSSES` ``"learned_mixin_h"``).

    Examples
    --------
    >>> import math
    >>> lm = LearnedMixin(hidden_size=2)
    >>> with torch.no_grad():
    ...     _ = lm.gate.weight.zero_(), lm.gate.bias.fill_(math.log(math.e - 1))  # g = 1
    >>> b = torch.tensor([[0.9, 0.1]])
    >>> out = lm(torch.zeros(1, 2), torch.tensor([0]), bias_probs=b, hidden=torch.zeros(1, 2))
    >>> round(out.item(), 4)  # g = 1: the same as the product of experts
    0.1054
    """

    name: ClassVar[str] = "learned_mixin"
    needs_hidden: ClassVar[bool] = True

    def __init__(self, hidden_size: int, entropy_penalty: float = 0.0) -> None:
        super().__init__()
        if entropy_penalty < 0:
            raise ParameterError(
                f"The 'entropy_penalty' argument must be >= 0; got {entropy_penalty!r}."
            )
        self.gate = nn.Linear(int(hidden_size), 1)
        self.entropy_penalty = float(entropy_penalty)

    def forward(self, logits, labels, *, bias_probs=None, teacher_probs=None, hidden=None):
        b = self._need("bias_probs", bias_probs)
        h = self._need("hidden", hidden)
        g = fn.softplus(self.gate(h))  # (B, 1), >= 0
        scaled_bias = g * torch.log(b.clamp_min(EPS))
        loss = fn.cross_entropy(fn.log_softmax(logits, dim=1) + scaled_bias, labels)
        if self.entropy_penalty:
            p = fn.softmax(scaled_bias, dim=1)
            entropy = -(p * fn.log_softmax(scaled_bias, dim=1)).sum(dim=1).mean()
            loss = loss + self.entropy_penalty * entropy
        return loss


class LearnedMixinH(LearnedMixin):
    """LearnedMixin+H: the entropy penalty on by default (paper 001 App. B.2.3).

    Parameters
    ----------
    hidden_size : int
    entropy_penalty : float or None, default=None
        ``H``; ``None``: :func:`default_entropy_penalty` of ``n_classes`` (0.4 scaled
        from QA's 384 positions to K classes), or the paper's 0.4 when ``n_classes`` is
        not given.
    n_classes : int or None, default=None

    Examples
    --------
    >>> round(LearnedMixinH(hidden_size=4, n_classes=3).entropy_penalty, 4)
    0.0738
    >>> LearnedMixinH(hidden_size=4, entropy_penalty=0.4, n_classes=3).entropy_penalty
    0.4
    """

    name: ClassVar[str] = "learned_mixin_h"

    def __init__(
        self,
        hidden_size: int,
        entropy_penalty: float | None = None,
        n_classes: int | None = None,
    ) -> None:
        if entropy_penalty is None:
            entropy_penalty = (
                PAPER_ENTROPY_PENALTY if n_classes is None else default_entropy_penalty(n_classes)
            )
        super().__init__(hidden_size, entropy_penalty)


class ConfidenceRegularization(DebiasLoss):
    """Confidence regularization: distil a teacher scaled by ``1 - b_gold`` (Utama et al. 2020a).

    Examples
    --------
    A bias model sure of the gold label (b_gold = 1) flattens the teacher to uniform;
    one that gives it 0 leaves the teacher as it is.

    >>> t = torch.tensor([[0.8, 0.2]])
    >>> creg = ConfidenceRegularization()
    >>> y = torch.tensor([0])
    >>> round(float(creg(torch.zeros(1, 2), y, bias_probs=torch.tensor([[1.0, 0.0]]),
    ...                  teacher_probs=t)), 4)  # - log(1/2)
    0.6931
    >>> round(float(creg.scaled_teacher(t, torch.tensor([[0.0, 1.0]]), y)[0, 0]), 4)
    0.8
    """

    name: ClassVar[str] = "conf_reg"
    needs_teacher: ClassVar[bool] = True

    @staticmethod
    def scaled_teacher(
        teacher_probs: torch.Tensor, bias_probs: torch.Tensor, labels: torch.Tensor
    ) -> torch.Tensor:
        """``S_j = t_j^(1 - b_gold) / sum_k t_k^(1 - b_gold)`` (computed in log space)."""
        exponent = (1.0 - _gold(bias_probs, labels)).unsqueeze(1)
        return fn.softmax(exponent * torch.log(teacher_probs.clamp_min(EPS)), dim=1)

    def forward(self, logits, labels, *, bias_probs=None, teacher_probs=None, hidden=None):
        b = self._need("bias_probs", bias_probs)
        t = self._need("teacher_probs", teacher_probs)
        target = self.scaled_teacher(t, b, labels).detach()
        return -(target * fn.log_softmax(logits, dim=1)).sum(dim=1).mean()


class Reweighting(DebiasLoss):
    """Example reweighting: ``sum_i w_i CE_i / sum_i w_i``, ``w_i = 1 - b_gold(i)``.

    Normalised by the batch's total weight as the reference implementations (Clark et
    al. 2019's and Utama et al. 2020b's ``ReweightBaseline``) do, so the loss stays on
    cross-entropy's scale however biased a batch is (a batch mean would shrink the
    learning rate by the mean weight). A batch whose weights are all 0 gives 0.

    Examples
    --------
    >>> rw = Reweighting()
    >>> logits, y = torch.tensor([[2.0, 0.0], [0.0, 0.0]]), torch.tensor([0, 0])
    >>> b = torch.tensor([[0.5, 0.5], [0.75, 0.25]])  # weights 0.5 and 0.25
    >>> round(float(rw(logits, y, bias_probs=b)), 4)  # (0.5 * 0.1269 + 0.25 * 0.6931) / 0.75
    0.3157
    """

    name: ClassVar[str] = "reweight"

    def forward(self, logits, labels, *, bias_probs=None, teacher_probs=None, hidden=None):
        b = self._need("bias_probs", bias_probs)
        weights = 1.0 - _gold(b, labels)
        ce = fn.cross_entropy(logits, labels, reduction="none")
        return (weights * ce).sum() / weights.sum().clamp_min(EPS)
