"""Debiasing objectives for sequence classification (paper 001 Sec. 2, 4.4, App. B.2; 002 Sec. 6).

Every objective reads, per training example, the probabilities a *bias model* gives each
class (``bias_probs``; see :mod:`spurious.models.debias.bias`) and, for confidence
regularization, a teacher's probabilities. All are ``torch.nn.Module`` s with one call
signature, registered in :data:`LOSSES`::

    loss(logits, labels, bias_probs=..., teacher_probs=..., hidden=...) -> scalar

``logits`` are the main model's, ``hidden`` its last hidden layer (LearnedMixin's gate
reads it). At test time only the main model's logits are used.

This module needs no torch: :data:`LOSSES` holds a :class:`LossSpec` per loss (its
name and what it reads), and the ``torch.nn.Module`` classes
(:mod:`~spurious.models.debias.loss_modules`) are imported when a loss is built
(:func:`make_loss`, :meth:`LossSpec.load`) or one of their names is read from here.

- ``plain``: cross-entropy.
- ``poe`` (product of experts; Clark et al. 2019, He et al. 2019, Karimi Mahabadi et
  al. 2020): cross-entropy of ``softmax(log p + log b)``: the main model only has to
  explain what the bias model cannot.
- ``learned_mixin`` (Clark et al. 2019): ``softmax(log p + g(x) log b)`` with a learned
  gate ``g(x) = softplus(w . h(x) + c) >= 0``; ``learned_mixin_h`` adds the entropy
  penalty ``H * entropy(softmax(g(x) log b))`` (paper 001 uses H = 0.4 for QA spans;
  by default we scale it to K classes, :func:`default_entropy_penalty`) so the gate
  cannot switch the bias off.
- ``conf_reg`` (confidence regularization, Utama et al. 2020a): distil a teacher's
  distribution scaled down by the bias model's confidence in the gold label,
  ``S_j = t_j^(1 - b_gold) / sum_k t_k^(1 - b_gold)``; loss ``- sum_j S_j log p_j``.
  Exponentiated once, as published (a known public implementation exponentiates
  values that are already probabilities a second time).
- ``reweight`` (example reweighting, Schuster et al. 2019; Utama et al. 2020b, used by
  paper 002 Sec. 6): cross-entropy weighted by ``w = 1 - b_gold``, normalised by the
  batch's total weight, ``sum(w * CE) / sum(w)``, as Clark et al.'s and Utama et al.'s
  ``ReweightBaseline`` do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from spurious.exceptions import ParameterError
from spurious.models.debias.loss_params import (
    EPS,
    PAPER_ENTROPY_PENALTY,
    QA_POSITIONS,
    default_entropy_penalty,
)
from spurious.models.runtime.threads import import_torch
from spurious.utils.registry import Registry

if TYPE_CHECKING:  # pragma: no cover
    from spurious.models.debias.loss_modules import DebiasLoss

__all__ = [
    "EPS",
    "LOSSES",
    "PAPER_ENTROPY_PENALTY",
    "QA_POSITIONS",
    "LossSpec",
    "default_entropy_penalty",
    "make_loss",
]

#: Class names of :mod:`~spurious.models.debias.loss_modules` served as attributes of
#: this module, imported on first use (not in ``__all__``: a star import needs no torch).
_CLASS_NAMES = (
    "DebiasLoss",
    "PlainLoss",
    "ProductOfExperts",
    "LearnedMixin",
    "LearnedMixinH",
    "ConfidenceRegularization",
    "Reweighting",
)


@dataclass(frozen=True)
class LossSpec:
    """A registered loss: its name, what it reads, and the name of its torch class.

    The flags equal the class's ClassVars (checked when the class is loaded), so
    configurations can be checked without torch.

    Examples
    --------
    >>> LOSSES.get("conf_reg").needs_teacher, LOSSES.get("plain").needs_bias
    (True, False)
    """

    name: str
    class_name: str
    needs_bias: bool = True
    needs_teacher: bool = False
    needs_hidden: bool = False

    def load(self) -> type:
        """The ``DebiasLoss`` subclass (imports torch)."""
        cls = _loss_class(self.class_name)
        flags = (cls.name, cls.needs_bias, cls.needs_teacher, cls.needs_hidden)
        if flags != (self.name, self.needs_bias, self.needs_teacher, self.needs_hidden):
            raise RuntimeError(f"{self.class_name} and its LOSSES entry {self} disagree.")
        return cls

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """An instance of the loss class (as calling the class would)."""
        return self.load()(*args, **kwargs)


#: Registered losses, in the order methods are compared (plain first).
LOSSES: Registry[LossSpec] = Registry("loss")
for _spec in (
    LossSpec("plain", "PlainLoss", needs_bias=False),
    LossSpec("poe", "ProductOfExperts"),
    LossSpec("learned_mixin", "LearnedMixin", needs_hidden=True),
    LossSpec("learned_mixin_h", "LearnedMixinH", needs_hidden=True),
    LossSpec("conf_reg", "ConfidenceRegularization", needs_teacher=True),
    LossSpec("reweight", "Reweighting"),
):
    LOSSES.register(_spec.name, _spec)
del _spec


def make_loss(name: str, *, hidden_size: int | None = None, **params: Any) -> DebiasLoss:
    """A registered loss by name (``plain``, ``poe``, ``learned_mixin``, ``learned_mixin_h``,
    ``conf_reg``, ``reweight``).

    Examples
    --------
    ``n_classes`` sets LearnedMixin+H's default entropy weight
    (:func:`default_entropy_penalty`); an explicit ``entropy_penalty`` wins.

    >>> round(make_loss("learned_mixin_h", hidden_size=8, n_classes=3).entropy_penalty, 4)
    0.0738
    >>> make_loss("learned_mixin_h", hidden_size=8, n_classes=3, entropy_penalty=0.2).entropy_penalty
    0.2
    """
    spec = LOSSES.get(name)
    cls = spec.load()
    n_classes = params.pop("n_classes", None)
    if spec.needs_hidden:
        if hidden_size is None:
            raise ParameterError(f"The {name!r} loss needs 'hidden_size' (its gate's input).")
        if issubclass(cls, _loss_class("LearnedMixinH")):
            return cls(hidden_size=hidden_size, n_classes=n_classes, **params)
        return cls(hidden_size=hidden_size, **params)
    if params:
        raise ParameterError(f"The {name!r} loss takes no parameters; got {sorted(params)}.")
    return cls()


def _loss_class(name: str) -> Any:
    import_torch("Debiasing losses")  # a missing torch names the extra to install
    from spurious.models.debias import loss_modules  # imports torch

    return getattr(loss_modules, name)


def __getattr__(name: str) -> Any:
    # The loss classes need torch: imported only when one is asked for.
    if name in _CLASS_NAMES:
        return _loss_class(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
