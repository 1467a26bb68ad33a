"""Debiasing objectives inside the fine-tuning engine: side inputs, their routing, the gate.

A fine-tune with ``FineTuneConfig(loss=...)`` other than ``"plain"`` trains with a loss
of :data:`spurious.models.debias.losses.LOSSES`. What those losses read besides the
logits comes from here:

- **side inputs** (:class:`SideInputs`): per training example, the bias model's class
  probabilities and, for confidence regularization, a teacher's; arrays aligned to the
  training dataset's rows (its ids), checked once, with a digest that enters the run's
  identity (cache key, resume check);
- **routing**: the training split is wrapped (:class:`SideInputSplit`) so every item
  carries its own rows of the side inputs; :class:`~spurious.models.finetune.data.PadCollator`
  stacks them into the batch, so they follow each example through shuffling,
  length-grouping and sharding; the evaluation split never gets them;
- **the hidden representation** LearnedMixin's gate reads (:class:`HeadInput`): the input
  of the classification head, captured by a forward pre-hook (for BERT/MiniLM the
  dropout-ed pooled ``[CLS]`` vector; for heads that take the token sequence, e.g.
  RoBERTa's, its first token);
- the **loss module** (:func:`build_loss`), created from the seed alone (its RNG forked)
  so plain and debiased runs of one seed see the same batches, and attached to the model
  as a submodule so the Trainer's optimiser, scheduler and checkpoints include the
  gate's parameters; it is detached before the model is written and saved next to it
  (``model/debias_loss.safetensors``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from spurious.exceptions import ParameterError

#: Attribute name of the loss module on the model while training.
LOSS_ATTR = "spurious_debias_loss"
#: The loss module's parameters (LearnedMixin's gate) next to the saved model.
LOSS_FILE = "debias_loss.safetensors"
SIDE_KEYS = ("bias_probs", "teacher_probs")


@dataclass(frozen=True)
class SideInputs:
    """Per-example inputs of a debiasing objective, rows aligned to the training split.

    Attributes
    ----------
    bias_probs : ndarray of float32, shape (n, n_classes), or None
    teacher_probs : ndarray of float32, shape (n, n_classes), or None

    Examples
    --------
    >>> s = SideInputs(np.full((2, 3), 1 / 3, np.float32), None)
    >>> len(s.digest())
    16
    >>> SideInputs(None, None).digest() is None
    True
    """

    bias_probs: np.ndarray | None = None
    teacher_probs: np.ndarray | None = None

    def digest(self) -> str | None:
        """A stable hash of the arrays (``None`` without side inputs)."""
        if self.bias_probs is None and self.teacher_probs is None:
            return None
        h = hashlib.sha256()
        for key in SIDE_KEYS:
            arr = getattr(self, key)
            h.update(key.encode())
            if arr is not None:
                h.update(str(arr.shape).encode())
                h.update(np.ascontiguousarray(arr, dtype=np.float32).tobytes())
        return h.hexdigest()[:16]

    def items(self) -> dict[str, np.ndarray]:
        """The arrays present, by batch key."""
        return {k: getattr(self, k) for k in SIDE_KEYS if getattr(self, k) is not None}


def check_side_inputs(
    loss: str,
    n_rows: int,
    n_classes: int,
    bias_probs: Any = None,
    teacher_probs: Any = None,
) -> SideInputs:
    """Validate the side inputs a loss needs: shape ``(n_rows, n_classes)``, finite, each
    row a probability distribution (non-negative, summing to 1 within 1e-3).

    Examples
    --------
    >>> b = np.array([[0.9, 0.1], [0.5, 0.5]])
    >>> check_side_inputs("poe", 2, 2, bias_probs=b).bias_probs.dtype
    dtype('float32')
    >>> check_side_inputs("poe", 2, 2)
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: The 'poe' loss needs the 'bias_probs' argument (bias-model probabilities of every training example, shape (2, 2)); got None.
    """
    if loss == "plain" and bias_probs is None and teacher_probs is None:
        return SideInputs()  # no torch import for plain training
    from spurious.models.debias.losses import LOSSES

    cls = LOSSES.get(loss)
    out: dict[str, np.ndarray | None] = {}
    for key, value, needed in (
        ("bias_probs", bias_probs, cls.needs_bias),
        ("teacher_probs", teacher_probs, cls.needs_teacher),
    ):
        if value is None:
            if needed:
                what = "bias-model" if key == "bias_probs" else "teacher"
                raise ParameterError(
                    f"The {loss!r} loss needs the {key!r} argument ({what} probabilities of "
                    f"every training example, shape ({n_rows}, {n_classes})); got None."
                )
            out[key] = None
            continue
        if not needed:
            raise ParameterError(
                f"The {key!r} argument was given but the {loss!r} loss does not read it."
            )
        arr = np.asarray(value, dtype=np.float64)
        if arr.shape != (n_rows, n_classes):
            raise ParameterError(
                f"The {key!r} argument must have shape ({n_rows}, {n_classes}) (one row per "
                f"training example, in the training dataset's order). Got {arr.shape}."
            )
        bad = ~np.isfinite(arr).all(axis=1) | (arr < 0).any(axis=1)
        bad |= np.abs(arr.sum(axis=1) - 1.0) > 1e-3
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ParameterError(
                f"The {key!r} argument must hold probability rows (finite, >= 0, summing to "
                f"1); row {row} is {arr[row].tolist()}."
            )
        out[key] = arr.astype(np.float32)
    return SideInputs(**out)


class SideInputSplit:
    """A training split whose items also carry their rows of the side inputs.

    Examples
    --------
    >>> class Split(list):
    ...     lengths = np.array([1, 1])
    >>> base = Split([{"input_ids": [1], "idx": 0}, {"input_ids": [2], "idx": 1}])
    >>> wrapped = SideInputSplit(base, SideInputs(np.eye(2, dtype=np.float32)))
    >>> wrapped[1]["bias_probs"]
    [0.0, 1.0]
    """

    def __init__(self, split: Any, side: SideInputs) -> None:
        self.split = split
        self.arrays = side.items()

    def __len__(self) -> int:
        return len(self.split)

    def __getitem__(self, i: int) -> dict[str, Any]:
        item = self.split[i]
        for key, arr in self.arrays.items():
            item[key] = arr[int(i)].tolist()
        return item

    def __getattr__(self, name: str) -> Any:  # lengths, pad_id ... of the wrapped split
        if name == "split":
            raise AttributeError(name)
        return getattr(self.split, name)


def _head(model: Any) -> Any:
    for name in ("classifier", "score", "classification_head"):
        head = getattr(model, name, None)
        if head is not None:
            return head
    raise ParameterError(
        f"LearnedMixin's gate reads the input of the classification head, but "
        f"{type(model).__name__} has none of 'classifier', 'score', 'classification_head'."
    )


class HeadInput:
    """Captures the input of the model's classification head on every forward pass.

    For heads that read the whole token sequence (RoBERTa's), the first token's vector.
    """

    def __init__(self, model: Any) -> None:
        self.value: Any = None
        self._handle = _head(model).register_forward_pre_hook(self._hook)

    def _hook(self, module: Any, args: tuple[Any, ...]) -> None:
        if not module.training:  # the no-grad dynamics passes do not need it
            return
        x = args[0]
        self.value = x[:, 0] if x.dim() == 3 else x

    def pop(self) -> Any:
        """The last captured input (then forgotten)."""
        value, self.value = self.value, None
        if value is None:
            raise RuntimeError("the classification head was not called in this forward pass")
        return value

    def remove(self) -> None:
        self._handle.remove()


def build_loss(name: str, params: dict[str, Any], model: Any, seed: int) -> Any:
    """The loss module ``name`` for ``model``, initialised from ``seed`` alone.

    The global RNG is forked, so creating a gate does not shift the batch order or the
    dropout masks against a plain run of the same seed.

    Examples
    --------
    >>> import torch
    >>> from transformers import BertConfig, BertForSequenceClassification  # doctest: +SKIP
    >>> m = BertForSequenceClassification(BertConfig(hidden_size=32, num_hidden_layers=1,
    ...     num_attention_heads=2, intermediate_size=32))  # doctest: +SKIP
    >>> build_loss("learned_mixin_h", {}, m, 0).gate.in_features  # doctest: +SKIP
    32
    """
    import torch

    from spurious.models.debias.losses import LOSSES, make_loss

    cls = LOSSES.get(name)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if cls.needs_hidden:
            # LearnedMixin+H's default entropy weight depends on the number of classes.
            extra = {} if "n_classes" in params else {"n_classes": int(model.config.num_labels)}
            return make_loss(name, hidden_size=int(model.config.hidden_size), **extra, **params)
        return make_loss(name, **params)


def detach_loss(model: Any) -> Any:
    """Remove the loss module from ``model`` (before saving it); return the module."""
    module = getattr(model, LOSS_ATTR, None)
    if module is not None:
        delattr(model, LOSS_ATTR)
    return module


def save_loss(module: Any, folder: Any) -> None:
    """Write the loss module's parameters (if any) as safetensors into ``folder``."""
    from pathlib import Path

    from safetensors.torch import save_file

    from spurious.utils.io import atomic_write

    state = {k: v.detach().cpu().contiguous() for k, v in module.state_dict().items()}
    if state:
        atomic_write(Path(folder) / LOSS_FILE, lambda p: save_file(state, str(p)))
