"""One small torch training loop for models on frozen features (the fast paths).

Cartography's fast path (:func:`spurious.models.dynamics.probe_dynamics`) and the
debiasing fast path (:func:`spurious.models.debias.fast.train_fast`) train the same kind
of model the same way: a one-hidden-layer MLP (or a linear softmax layer) on z-scored
feature rows, initialised from a seed drawn from the caller's generator, trained with
Adam on mini-batches in a seeded order. This module holds that model and loop; the
callers add what differs through hooks: the loss of a batch, and what to record after a
step or an epoch (dynamics snapshots, epoch losses, early stopping).

torch is imported only when a function runs.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from scipy import sparse

from spurious.models.runtime.threads import import_torch, torch_threads

__all__ = [
    "default_batch_size",
    "rows_tensor",
    "seeded_mlp",
    "train_loop",
    "zscore",
]


def _torch() -> Any:
    return import_torch("Models on frozen features (the fast paths)")


def zscore(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(mean, std)`` of the columns of a dense ``X``, a std under 1e-8 set to 1
    (constant columns carry nothing; this avoids dividing by 0). Scale with
    ``(X - mean) / std``.

    Examples
    --------
    >>> mean, std = zscore(np.array([[1.0, 5.0], [3.0, 5.0]], dtype=np.float32))
    >>> mean.tolist(), std.tolist()
    ([2.0, 5.0], [1.0, 1.0])
    """
    mean = X.mean(axis=0)
    std = X.std(axis=0)
    std[std < 1e-8] = 1.0
    return mean, std


def default_batch_size(n: int) -> int:
    """``n // 32`` clipped to [8, 128]: a small training split still takes ~30
    optimisation steps per epoch, and 10k rows take batches of 128.

    Examples
    --------
    >>> default_batch_size(100), default_batch_size(1000), default_batch_size(10**6)
    (8, 31, 128)
    """
    return min(128, max(8, n // 32))


def rows_tensor(
    X: Any, idx: np.ndarray, scaling: tuple[np.ndarray, np.ndarray] | None = None
) -> Any:
    """Rows ``idx`` of a dense or sparse matrix as a float32 torch tensor, z-scored as
    ``(rows - mean) / std`` when ``scaling = (mean, std)`` is given (the same numbers
    as scaling all of ``X`` first, without its copy)."""
    part = X[idx]
    if sparse.issparse(part):
        part = part.toarray()
    if scaling is not None:
        part = (part - scaling[0]) / scaling[1]
    return _torch().from_numpy(np.ascontiguousarray(part, dtype=np.float32))


_INIT_LOCK = threading.Lock()


def seeded_mlp(
    rng: np.random.Generator,
    n_features: int,
    n_classes: int,
    hidden_size: int | None,
    extra: Callable[[], Iterable[Any]] | None = None,
) -> tuple[Any, Any]:
    """``(encoder, head)``: ``Linear -> ReLU`` and the output ``Linear`` of an MLP, or
    with ``hidden_size=None`` an identity and a linear softmax layer.

    Initialised under a torch seed drawn from ``rng`` (one draw), inside
    ``torch.random.fork_rng``, so torch's global generator is left as it was;
    ``extra()`` gives more parameters to draw from N(0, 0.01^2) after the layers
    (LearnedMixin's gate).
    """
    torch = _torch()
    seed = int(rng.integers(0, 2**31 - 1))
    # The lock: fits running side by side on worker threads (Executor.map(side_by_side))
    # must not interleave their seeding and draws on torch's one global generator.
    with _INIT_LOCK, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if hidden_size is None:
            encoder, head = torch.nn.Identity(), torch.nn.Linear(n_features, n_classes)
        else:
            encoder = torch.nn.Sequential(torch.nn.Linear(n_features, hidden_size), torch.nn.ReLU())
            head = torch.nn.Linear(hidden_size, n_classes)
        for p in extra() if extra is not None else ():
            torch.nn.init.normal_(p, std=0.01)
    return encoder, head


def _adam(params: list[Any], lr: float, weight_decay: float) -> Any:
    """Adam, fused into one kernel per step where torch has it (CPU since torch 2.4): on
    the fast paths' MLP (10k x 1536, batch 128, one thread) training took 3.4 s instead
    of 5.0 s, the update being a third of a step; the numbers agree to float rounding.
    """
    torch = _torch()
    try:
        return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay, fused=True)
    except (RuntimeError, TypeError):  # an older torch, or a device without the kernel
        return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)


def train_loop(
    params: Iterable[Any],
    batch_loss: Callable[[np.ndarray], Any],
    *,
    rows: np.ndarray,
    epochs: int,
    batch_size: int,
    rng: np.random.Generator,
    lr: float = 1e-3,
    weight_decay: float = 0.0,
    n_threads: int | None = 1,
    after_step: Callable[[int, int, np.ndarray, Any], None] | None = None,
    after_epoch: Callable[[int], bool | None] | None = None,
    progress: str | None = None,
) -> None:
    """Minimise ``batch_loss`` with Adam over ``epochs`` passes of mini-batches of ``rows``.

    Each epoch draws one permutation of ``rows`` from ``rng`` and cuts it into
    ``ceil(len(rows) / batch_size)`` batches; for each batch ``idx`` the loop takes an
    Adam step on ``batch_loss(idx)`` (a scalar tensor) and calls
    ``after_step(epoch, step, idx, loss)``; after each epoch ``after_epoch(epoch)``,
    whose true return value stops training. Epochs and steps count from 0.

    Parameters
    ----------
    params : iterable of tensors
        What Adam optimises.
    batch_loss : callable
        ``batch_loss(idx) -> loss`` for an array of row indices.
    rows : ndarray of int
        The training rows of one epoch (repeats allowed: oversampling).
    epochs, batch_size : int
    rng : numpy.random.Generator
        Draws the batch order (after whatever the caller drew from it before).
    lr, weight_decay : float
        Adam's.
    n_threads : int or None, default=1
        Torch intra-op threads while training (restored afterwards; ``None`` leaves
        torch's setting). The per-step matrices are small, so extra threads gain little,
        and on a busy machine spinning threads cost ~14x.
    after_step, after_epoch : callable, optional
        The hooks above.
    progress : str, optional
        A progress bar with this description (epochs, examples/s); ``None``: none.

    Examples
    --------
    >>> import torch  # doctest: +SKIP
    >>> rng = np.random.default_rng(0)  # doctest: +SKIP
    >>> w = torch.zeros(1, requires_grad=True)  # doctest: +SKIP
    >>> train_loop([w], lambda idx: ((w - 3.0) ** 2).sum(), rows=np.arange(10),
    ...            epochs=50, batch_size=5, rng=rng, lr=0.1)  # doctest: +SKIP
    >>> round(float(w), 1)  # doctest: +SKIP
    3.0
    """
    opt = _adam(list(params), float(lr), float(weight_decay))
    m = len(rows)
    steps = math.ceil(m / batch_size)
    from tqdm.auto import tqdm

    bar = tqdm(total=epochs * m, desc=progress, unit="ex", unit_scale=True,
               disable=progress is None, leave=False)  # fmt: skip
    with bar, torch_threads(None if n_threads is None else int(n_threads)):
        for epoch in range(epochs):
            bar.set_postfix_str(f"epoch {epoch + 1}/{epochs}")  # once per epoch: cheap
            order = rows[rng.permutation(m)]
            for step in range(steps):
                idx = order[step * batch_size : (step + 1) * batch_size]
                opt.zero_grad(set_to_none=True)
                loss = batch_loss(idx)
                loss.backward()
                opt.step()
                if after_step is not None:
                    after_step(epoch, step, idx, loss)
                bar.update(len(idx))
            if after_epoch is not None and after_epoch(epoch):
                break
