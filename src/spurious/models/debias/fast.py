"""Training with a debiasing objective on frozen features: the fast path.

A one-hidden-layer MLP (ReLU) on z-scored sentence embeddings, trained with Adam on
seeded mini-batches, like the fast path of training dynamics
(:func:`spurious.models.dynamics.probe_dynamics`), but with any objective of
:data:`~spurious.models.debias.losses.LOSSES`; the hidden layer is what LearnedMixin's
gate reads. Seconds instead of the minutes of a fine-tune, so a debiasing comparison
over several seeds fits in an audit; the fine-tuning engine is the faithful path.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import sparse

from spurious.exceptions import ParameterError
from spurious.models.debias.losses import DebiasLoss, make_loss

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
    import torch

    Xtr = X if sparse.issparse(X) else np.asarray(X, dtype=np.float32)
    ytr = np.array(y, dtype=np.int64)  # a copy: torch wants a writable array
    n, d = Xtr.shape
    if n == 0 or len(ytr) != n:
        raise ParameterError(f"'X' has {n} rows and 'y' {len(ytr)}; both must be equal and > 0.")
    k = int(n_classes) if n_classes is not None else int(ytr.max()) + 1
    for name, value in (("epochs", epochs), ("hidden_size", hidden_size)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise ParameterError(f"The {name!r} argument must be an int >= 1; got {value!r}.")
    objective = (
        loss
        if isinstance(loss, DebiasLoss)
        else make_loss(
            loss,
            hidden_size=hidden_size if loss.startswith("learned_mixin") else None,
            **{"n_classes": k, **(loss_params or {})},
        )
    )
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
        side[name] = torch.from_numpy(arr)

    mean = std = None
    if not sparse.issparse(Xtr):
        mean = Xtr.mean(axis=0)
        std = Xtr.std(axis=0)
        std[std < 1e-8] = 1.0
        Xtr = (Xtr - mean) / std
    rng = np.random.default_rng(random_state)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(rng.integers(0, 2**31 - 1)))
        encoder = torch.nn.Sequential(torch.nn.Linear(d, hidden_size), torch.nn.ReLU())
        head = torch.nn.Linear(hidden_size, k)
        for p in objective.parameters():  # LearnedMixin's gate: seeded like the rest
            torch.nn.init.normal_(p, std=0.01)
    params = [*encoder.parameters(), *head.parameters(), *objective.parameters()]
    opt = torch.optim.Adam(params, lr=float(lr), weight_decay=float(weight_decay))
    rows_pool = np.arange(n) if sample_weight_rows is None else np.asarray(sample_weight_rows)
    m = len(rows_pool)
    if batch_size is None:
        batch_size = min(128, max(8, m // 32))
    steps = math.ceil(m / batch_size)
    y_t = torch.from_numpy(ytr)

    def rows(idx: np.ndarray) -> Any:
        part = Xtr[idx]
        if sparse.issparse(part):
            part = part.toarray()
        return torch.from_numpy(np.ascontiguousarray(part, dtype=np.float32))

    threads_before = torch.get_num_threads()
    if n_threads is not None:
        torch.set_num_threads(int(n_threads))
    start = time.perf_counter()
    epoch_losses: list[float] = []
    eval_accuracy: list[float] = []
    model = FastModel(encoder=encoder, head=head, mean=mean, std=std, loss=objective.name)
    try:
        for _ in range(epochs):
            order = rows_pool[rng.permutation(m)]
            total = 0.0
            for s in range(steps):
                idx = order[s * batch_size : (s + 1) * batch_size]
                opt.zero_grad(set_to_none=True)
                hidden = encoder(rows(idx))
                logits = head(hidden)
                value = objective(
                    logits, y_t[idx], hidden=hidden, **{k_: v[idx] for k_, v in side.items()}
                )
                value.backward()
                opt.step()
                total += float(value.detach()) * len(idx)
            epoch_losses.append(total / m)
            if eval_data is not None:
                pred = model.predict(eval_data[0])
                eval_accuracy.append(float((pred == np.asarray(eval_data[1])).mean()))
            if epoch_callback is not None and epoch_callback(len(epoch_losses), model):
                break
    finally:
        torch.set_num_threads(threads_before)
    model.train_seconds = time.perf_counter() - start
    model.epoch_losses = epoch_losses
    model.eval_accuracy = eval_accuracy
    return model
