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
    "RowFeeder",
    "default_batch_size",
    "rows_tensor",
    "seeded_mlp",
    "train_loop",
    "zscore",
]


def _torch() -> Any:
    return import_torch("Models on frozen features (the fast paths)")


def zscore(X: np.ndarray, block: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """``(mean, std)`` of the columns of a dense ``X``, a std under 1e-8 set to 1
    (constant columns carry nothing; this avoids dividing by 0). Scale with
    ``(X - mean) / std``.

    The sums run over ``block`` rows at a time into float64 accumulators (more exact
    than numpy's float32 sums) and the moments come back in ``X``'s float dtype:
    ``X.std(axis=0)`` makes a centred copy of all of ``X`` (3.4 GB at 550k x 1536, two
    at once when two trainings start side by side in the audit; the bound is checked in
    tests/test_memory_paths.py).

    Examples
    --------
    >>> mean, std = zscore(np.array([[1.0, 5.0], [3.0, 5.0]], dtype=np.float32))
    >>> mean.tolist(), std.tolist()
    ([2.0, 5.0], [1.0, 1.0])
    """
    n = X.shape[0]
    dtype = X.dtype if np.issubdtype(X.dtype, np.floating) else np.dtype(np.float64)
    if n == 0:
        raise ValueError("zscore needs at least one row; got an empty matrix.")
    total = np.zeros(X.shape[1], dtype=np.float64)
    for start in range(0, n, block):
        total += X[start : start + block].sum(axis=0, dtype=np.float64)
    mean = (total / n).astype(dtype)
    squares = np.zeros_like(total)
    for start in range(0, n, block):  # two passes: no cancellation in E[x^2] - E[x]^2
        diff = np.subtract(X[start : start + block], mean, dtype=dtype)
        np.multiply(diff, diff, out=diff)
        squares += diff.sum(axis=0, dtype=np.float64)
    std = np.sqrt(squares / n).astype(dtype)
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
    X: Any, idx: np.ndarray | slice, scaling: tuple[np.ndarray, np.ndarray] | None = None
) -> Any:
    """Rows ``idx`` (an index array or a slice) of a dense or sparse matrix as a float32
    torch tensor, z-scored as ``(rows - mean) / std`` when ``scaling = (mean, std)`` is
    given (the same numbers as scaling all of ``X`` first, without its copy)."""
    part = X[idx]
    if sparse.issparse(part):
        part = part.toarray()
    if scaling is not None:
        mean, std = scaling
        if part.dtype == mean.dtype == std.dtype == np.float32:
            # The same float32 operations as (part - mean) / std, into one new buffer
            # instead of two: a recording pass over 100k x 1536 took 0.32 s, not 0.61 s
            # (bench/bench_fast_path_recording.py).
            part = np.subtract(part, mean)
            np.divide(part, std, out=part)
        else:
            part = (part - mean) / std
    elif not part.flags.writeable:  # a read-only view (a slice of frozen features)
        part = part.copy()
    return _torch().from_numpy(np.ascontiguousarray(part, dtype=np.float32))


class RowFeeder:
    """Rows of a feature matrix as float32 tensors on one device, z-scored when asked.

    On the CPU each batch is gathered and scaled on the host (:func:`rows_tensor`). On a
    GPU a dense matrix is copied there once, when it takes under half of the free GPU
    memory, and each batch is gathered and scaled there from a tensor of row indices
    already on the GPU (:func:`train_loop` uploads an epoch's order once): no host
    gather and no host-to-device copy per step, which would make every step wait for
    the GPU. A sparse or too large matrix is gathered on the host and copied per batch.
    The arithmetic is the same, ``(rows - mean) / std`` in float32.

    Parameters
    ----------
    X : ndarray or scipy sparse matrix, shape (n, d)
    scaling : (mean, std), optional
    device : str, default="cpu"
        A resolved device ("cpu", "cuda", "cuda:1").

    Examples
    --------
    >>> X = np.array([[0.0, 0.0], [2.0, 4.0]], dtype=np.float32)
    >>> feed = RowFeeder(X, (np.array([1.0, 2.0]), np.array([1.0, 2.0])))
    >>> feed.rows(np.array([1, 0])).tolist()
    [[1.0, 1.0], [-1.0, -1.0]]
    """

    def __init__(
        self, X: Any, scaling: tuple[np.ndarray, np.ndarray] | None = None, device: str = "cpu"
    ) -> None:
        torch = _torch()
        self.X, self.scaling = X, scaling
        self.device = torch.device(device)
        self.on_device: Any = None  # X on the GPU, when it fits
        if self.device.type == "cpu" or sparse.issparse(X):
            return
        X32 = np.ascontiguousarray(X, dtype=np.float32)
        free, _ = torch.cuda.mem_get_info(self.device) if self.device.type == "cuda" else (0, 0)
        if X32.nbytes < free // 2:
            self.on_device = torch.from_numpy(X32).to(self.device)
            if scaling is not None:
                self._mean, self._std = (
                    torch.from_numpy(np.asarray(v, dtype=np.float32)).to(self.device)
                    for v in scaling
                )

    @property
    def gpu(self) -> bool:
        """Whether batches are built on a device other than the CPU."""
        return self.device.type != "cpu"

    def rows(self, idx: Any) -> Any:
        """Rows ``idx`` (a numpy array, or a tensor of indices on this device) as a
        float32 tensor on this device."""
        if self.on_device is not None:
            part = self.on_device[idx]
            return part if self.scaling is None else (part - self._mean) / self._std
        if not isinstance(idx, np.ndarray):  # indices on the GPU, rows on the host
            idx = idx.cpu().numpy()
        part = rows_tensor(self.X, idx, self.scaling)
        return part if not self.gpu else part.to(self.device)

    def labels(self, y: np.ndarray) -> Any:
        """``y`` as an int64 tensor on this device (index it with the batch's indices)."""
        return _torch().from_numpy(np.asarray(y, dtype=np.int64)).to(self.device)

    def numpy(self, t: Any) -> np.ndarray:
        """A tensor of this device back as a numpy array."""
        return t.detach().cpu().numpy()

    def block(self, start: int, stop: int) -> Any:
        """Rows ``start:stop``, indices made where the rows are gathered."""
        if self.on_device is not None:
            return self.rows(_torch().arange(start, stop, device=self.device))
        part = rows_tensor(self.X, slice(start, stop), self.scaling)  # a slice: no gather
        return part if not self.gpu else part.to(self.device)


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
    device: str | None = None,
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
    device : str, optional
        A GPU ("cuda", "cuda:1"): each epoch's order is copied there once and
        ``batch_loss`` gets the batch's row indices as a tensor on it (slices of that
        copy; see :class:`RowFeeder`), so no step waits for a host-to-device copy.
        ``after_step`` still gets them as a numpy array. Default: numpy arrays.

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
    on_gpu = device is not None and _torch().device(device).type != "cpu"
    with bar, torch_threads(None if n_threads is None else int(n_threads)):
        for epoch in range(epochs):
            bar.set_postfix_str(f"epoch {epoch + 1}/{epochs}")  # once per epoch: cheap
            order = rows[rng.permutation(m)]
            order_t = _torch().from_numpy(order.astype(np.int64)).to(device) if on_gpu else None
            for step in range(steps):
                cut = slice(step * batch_size, (step + 1) * batch_size)
                idx = order[cut]
                opt.zero_grad(set_to_none=True)
                loss = batch_loss(idx if order_t is None else order_t[cut])
                loss.backward()
                opt.step()
                if after_step is not None:
                    after_step(epoch, step, idx, loss)
                bar.update(len(idx))
            if after_epoch is not None and after_epoch(epoch):
                break
