"""Training with a debiasing objective on frozen features: the fast path.

A one-hidden-layer MLP (ReLU) on z-scored sentence embeddings, trained with Adam on
seeded mini-batches, like the fast path of training dynamics
(:func:`spurious.models.dynamics.probe_dynamics`), but with any objective of
:data:`~spurious.models.debias.losses.LOSSES`; the hidden layer is what LearnedMixin's
gate reads. Seconds instead of the minutes of a fine-tune, so a debiasing comparison
over several seeds fits in an audit; the fine-tuning engine is the faithful path. The
model and the training loop are :mod:`spurious.models.torch_loop`'s; torch is imported
only when a function runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import sparse

from spurious.exceptions import ParameterError
from spurious.models.debias.losses import make_loss
from spurious.models.runtime import import_torch
from spurious.models.torch_loop import (
    default_batch_size,
    rows_tensor,
    seeded_mlp,
    train_loop,
    zscore,
)

if TYPE_CHECKING:  # pragma: no cover
    from spurious.models.debias.loss_modules import DebiasLoss

__all__ = ["FastModel", "train_fast"]


@dataclass
class FastModel:
    """A trained MLP: ``predict_proba`` on raw (unscaled) feature rows.

    Attributes
    ----------
    encoder, head : torch.nn.Module
        ``Linear -> ReLU`` and the output ``Linear``.
    mean, std : ndarray or None
        The training split's feature scaling (``None`` for sparse features).
    loss : str
    train_seconds : float
        Wall time of the optimisation.
    epoch_losses : list of float
        Mean training objective per epoch.
    eval_accuracy : list of float
        Accuracy on ``eval_data`` after each epoch (empty without it).
    """

    encoder: Any
    head: Any
    mean: np.ndarray | None
    std: np.ndarray | None
    loss: str
    train_seconds: float = 0.0
    epoch_losses: list[float] = field(default_factory=list)
    eval_accuracy: list[float] = field(default_factory=list)

    def _rows(self, X: Any) -> Any:
        import torch

        part = X.toarray() if sparse.issparse(X) else np.asarray(X, dtype=np.float32)
        if self.mean is not None:
            part = (part - self.mean) / self.std
        return torch.from_numpy(np.ascontiguousarray(part, dtype=np.float32))

    def predict_proba(self, X: Any, batch_size: int = 8192) -> np.ndarray:
        """Class probabilities of the main model alone (no bias model at test time)."""
        import torch

        out = []
        with torch.no_grad():
            for start in range(0, X.shape[0], batch_size):
                logits = self.head(self.encoder(self._rows(X[start : start + batch_size])))
                out.append(torch.softmax(logits, dim=1).numpy())
        return np.concatenate(out) if out else np.zeros((0, self.head.out_features))

    def predict(self, X: Any) -> np.ndarray:
        """Most probable class per row."""
        return self.predict_proba(X).argmax(axis=1)


def train_fast(
    X: Any,
    y: Any,
    *,
    loss: str | DebiasLoss = "plain",
    bias_probs: np.ndarray | None = None,
    teacher_probs: np.ndarray | None = None,
    loss_params: dict[str, Any] | None = None,
    sample_weight_rows: np.ndarray | None = None,
    eval_data: tuple[Any, np.ndarray] | None = None,
    epoch_callback: Callable[[int, FastModel], bool | None] | None = None,
    epochs: int = 10,
    lr: float = 1e-3,
    batch_size: int | None = None,
    hidden_size: int = 256,
    weight_decay: float = 0.0,
    n_classes: int | None = None,
    n_threads: int | None = 1,
    random_state: int | None = 0,
) -> FastModel:
    """Train an MLP on ``X`` with a debiasing objective.

    Parameters
    ----------
    X : array-like or sparse matrix, shape (n, d)
    y : array-like of int, shape (n,)
    loss : str or DebiasLoss, default="plain"
        A name of :data:`~spurious.models.debias.losses.LOSSES` or a loss instance.
    bias_probs : ndarray of shape (n, C), optional
        The bias model's class probabilities per training row (needed by every loss
        but ``plain``); rescale them first if wanted
        (:func:`spurious.models.debias.bias.rescale_bias`).
    teacher_probs : ndarray of shape (n, C), optional
        A teacher's probabilities (``conf_reg``).
    loss_params : dict, optional
        Extra parameters of the loss (``entropy_penalty`` of LearnedMixin).
    sample_weight_rows : ndarray of int, optional
        Train on these row indices (repeats allowed: RESAM's oversampling) instead of
        every row once per epoch.
    eval_data : (X_eval, y_eval), optional
        Scored after every epoch (never trained on): ``FastModel.eval_accuracy``.
    epoch_callback : callable, optional
        Called as ``epoch_callback(epoch, model)`` (epoch counted from 1) after every
        epoch; a true return value stops training (early stopping by the caller).
    epochs, lr, batch_size, hidden_size, weight_decay
        As :func:`spurious.models.dynamics.probe_dynamics` (batch size default
        ``n // 32`` clipped to [8, 128]).
    n_classes : int, optional
    n_threads : int or None, default=1
        Torch threads while training (restored afterwards).
    random_state : int or None, default=0
        Seeds the initialisation and the batch order.

    Returns
    -------
    FastModel

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 4)).astype(np.float32); y = (X[:, 0] > 0).astype(int)
    >>> m = train_fast(X, y, epochs=5)
    >>> bool((m.predict(X) == y).mean() > 0.9)
    True
    """
    torch = import_torch("Debiasing on frozen features (the fast path)")
    Xtr = X if sparse.issparse(X) else np.asarray(X, dtype=np.float32)
    ytr = np.array(y, dtype=np.int64)  # a copy: torch wants a writable array
    n, d = Xtr.shape
    if n == 0 or len(ytr) != n:
        raise ParameterError(f"'X' has {n} rows and 'y' {len(ytr)}; both must be equal and > 0.")
    k = int(n_classes) if n_classes is not None else int(ytr.max()) + 1
    for name, value in (("epochs", epochs), ("hidden_size", hidden_size)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise ParameterError(f"The {name!r} argument must be an int >= 1; got {value!r}.")
    objective = _objective(loss, k, hidden_size, loss_params)
    side = {
        name: torch.from_numpy(arr)
        for name, arr in _side_inputs(objective, n, k, bias_probs, teacher_probs).items()
    }

    mean = std = None
    if not sparse.issparse(Xtr):
        mean, std = zscore(Xtr)
        Xtr = (Xtr - mean) / std
    rng = np.random.default_rng(random_state)
    encoder, head = seeded_mlp(rng, d, k, hidden_size, extra=objective.parameters)
    rows_pool = np.arange(n) if sample_weight_rows is None else np.asarray(sample_weight_rows)
    m = len(rows_pool)
    y_t = torch.from_numpy(ytr)
    model = FastModel(encoder=encoder, head=head, mean=mean, std=std, loss=objective.name)
    total = 0.0  # the epoch's summed objective

    def batch_loss(idx: np.ndarray) -> Any:
        hidden = encoder(rows_tensor(Xtr, idx))
        logits = head(hidden)
        return objective(logits, y_t[idx], hidden=hidden, **{k_: v[idx] for k_, v in side.items()})

    def after_step(epoch: int, step: int, idx: np.ndarray, value: Any) -> None:
        nonlocal total
        total += float(value.detach()) * len(idx)

    def after_epoch(epoch: int) -> bool:
        nonlocal total
        model.epoch_losses.append(total / m)
        total = 0.0
        if eval_data is not None:
            pred = model.predict(eval_data[0])
            model.eval_accuracy.append(float((pred == np.asarray(eval_data[1])).mean()))
        return bool(epoch_callback is not None and epoch_callback(epoch + 1, model))

    start = time.perf_counter()
    train_loop(
        [*encoder.parameters(), *head.parameters(), *objective.parameters()],
        batch_loss,
        rows=rows_pool,
        epochs=epochs,
        batch_size=default_batch_size(m) if batch_size is None else batch_size,
        rng=rng,
        lr=lr,
        weight_decay=weight_decay,
        n_threads=n_threads,
        after_step=after_step,
        after_epoch=after_epoch,
    )
    model.train_seconds = time.perf_counter() - start
    return model


def _objective(
    loss: str | DebiasLoss, k: int, hidden_size: int, loss_params: dict[str, Any] | None
) -> DebiasLoss:
    """The loss module: ``loss`` itself, or the registered loss of that name."""
    from spurious.models.debias import loss_modules

    if isinstance(loss, loss_modules.DebiasLoss):
        return loss
    return make_loss(
        loss,
        hidden_size=hidden_size if loss.startswith("learned_mixin") else None,
        **{"n_classes": k, **(loss_params or {})},
    )


def _side_inputs(
    objective: DebiasLoss,
    n: int,
    k: int,
    bias_probs: np.ndarray | None,
    teacher_probs: np.ndarray | None,
) -> dict[str, np.ndarray]:
    """The bias / teacher probabilities the objective reads, checked, as float32."""
    side = {}
    for name, arr, needed in (
        ("bias_probs", bias_probs, objective.needs_bias),
        ("teacher_probs", teacher_probs, objective.needs_teacher),
    ):
        if not needed:
            continue
        if arr is None:
            raise ParameterError(f"The {objective.name!r} loss needs {name!r}; got None.")
        arr = np.asarray(arr, dtype=np.float32)
        if arr.shape != (n, k):
            raise ParameterError(f"{name!r} must have shape ({n}, {k}); got {arr.shape}.")
        side[name] = arr
    return side
