"""The fast path (issue 8 part 3): a probe on frozen features, recorded after every epoch.

:func:`probe_dynamics` trains a small MLP or a linear softmax layer for a few epochs on
frozen features (cached sentence embeddings), recording every training and evaluation
example after every epoch; torch is imported only when it runs. The model and the
training loop are :mod:`spurious.models.torch_loop`'s (shared with the debiasing fast
path); this module adds the checks of its inputs and the recording.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

from spurious.exceptions import ParameterError
from spurious.models.dynamics.cartography_files import _softmax
from spurious.models.runtime.hardware import check_device, resolve_device
from spurious.models.runtime.threads import import_torch
from spurious.models.torch_loop import (
    RowFeeder,
    default_batch_size,
    seeded_mlp,
    train_loop,
    zscore,
)
from spurious.utils.matrix import all_finite

logger = logging.getLogger(__name__)

__all__ = ["FAST_MODELS", "FAST_OPTIONS", "probe_dynamics"]

#: Models of the fast path.
FAST_MODELS = ("mlp", "linear")
#: Training options of the fast path (keywords of :func:`probe_dynamics`) a caller may set.
FAST_OPTIONS = (
    "lr",
    "batch_size",
    "hidden_size",
    "weight_decay",
    "records_per_epoch",
    "standardize",
    "record_logits",
    "n_threads",
    "device",
)


def _check_matrix(X: Any, what: str) -> Any:
    if sparse.issparse(X):
        return sparse.csr_matrix(X, dtype=np.float32)
    arr = np.asarray(X, dtype=np.float32)
    if arr.ndim != 2:
        raise ParameterError(f"The {what!r} argument must be a 2-D matrix; got shape {arr.shape}.")
    if not all_finite(arr):
        raise ParameterError(f"The {what!r} argument holds NaN or infinite values.")
    return arr


def _check_labels(y: Any, n_rows: int, what: str) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1 or len(y) != n_rows:
        raise ParameterError(
            f"The {what!r} argument must hold one label id per row ({n_rows}); got shape {y.shape}."
        )
    if len(y) and (not np.issubdtype(y.dtype, np.integer) or y.min() < 0):
        raise ParameterError(f"The {what!r} argument must hold label ids (ints >= 0).")
    return y.astype(np.int64)


def probe_dynamics(
    X_train: Any,
    y_train: Any,
    X_eval: Any = None,
    y_eval: Any = None,
    *,
    model: str = "mlp",
    epochs: int = 10,
    lr: float = 1e-3,
    batch_size: int | None = None,
    hidden_size: int = 256,
    weight_decay: float = 0.0,
    records_per_epoch: int = 1,
    standardize: bool = True,
    record_logits: bool = True,
    n_threads: int | None = 1,
    device: str = "auto",
    n_classes: int | None = None,
    train_ids: Sequence[Any] | np.ndarray | None = None,
    eval_ids: Sequence[Any] | np.ndarray | None = None,
    random_state: int | None = 0,
    progress: str | None = None,
) -> pd.DataFrame:
    """Train a small probe on frozen features and record every example after every epoch.

    The probe is an MLP with one hidden layer (ReLU) or a linear softmax layer, trained
    with Adam on mini-batches in a seeded order to minimise cross-entropy. After each
    epoch (or ``records_per_epoch`` times per epoch) the model, in evaluation mode, scores
    every training example and every evaluation example; the evaluation examples are
    never trained on.

    Parameters
    ----------
    X_train : array-like or sparse matrix, shape (n_train, d)
    y_train : array-like of int, shape (n_train,)
        Label ids.
    X_eval, y_eval : optional
        A held-out split recorded alongside (``split="eval"``).
    model : {"mlp", "linear"}, default="mlp"
    epochs : int, default=10
    lr : float, default=1e-3
        Adam learning rate.
    batch_size : int, optional
        Default: ``n_train // 32`` clipped to [8, 128], so a small training split still
        takes ~30 optimisation steps per epoch and 10k examples take batches of 128.
    hidden_size : int, default=256
        Width of the MLP's hidden layer (ignored by ``"linear"``).
    weight_decay : float, default=0.0
    records_per_epoch : int, default=1
        Recordings per epoch, evenly spaced in optimisation steps (epoch values
        ``e + j / records_per_epoch``).
    standardize : bool, default=True
        Z-score dense features with the training split's mean and std (sentence
        embeddings mix scales, e.g. ``u * v`` next to ``u``); sparse features are used
        as they are.
    record_logits : bool, default=True
        Keep the logits (needed by :meth:`TrainingDynamics.to_cartography_jsonl`).
    n_threads : int or None, default=1
        Torch intra-op threads while training (restored afterwards; ``None`` leaves
        torch's setting). The per-step matrices are small, so extra threads gain little,
        and on a busy machine spinning threads cost ~14x (measured: 0.66 s vs 9.5 s per
        epoch on 10k x 1536 with 2 threads on 2 shared cores).
    device : str, default="auto"
        Where the MLP trains: ``"auto"`` is the run's device
        (:func:`spurious.models.runtime.use_device`, ``spurious audit --device``), else
        CUDA when available, else the CPU. On a GPU the features are copied there once
        and every batch is built there (:class:`~spurious.models.torch_loop.RowFeeder`);
        the numbers differ from the CPU's at float rounding.
    n_classes : int, optional
        Number of labels (default: largest label id + 1).
    train_ids, eval_ids : sequence, optional
        Example ids (default: row numbers as strings).
    random_state : int or None, default=0
        Seeds the initialisation and the batch order; the global random state of numpy
        and torch is left as it was.
    progress : str, optional
        A progress bar over the epochs with this description (``None``: none).

    Returns
    -------
    pandas.DataFrame
        The :attr:`TrainingDynamics.frame` columns.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 5)); y = (X[:, 0] > 0).astype(int)
    >>> frame = probe_dynamics(X[:150], y[:150], X[150:], y[150:], epochs=3)
    >>> sorted(frame["epoch"].unique()), frame.groupby("split").size().to_dict()
    ([np.float64(1.0), np.float64(2.0), np.float64(3.0)], {'eval': 150, 'train': 450})
    >>> frame[frame.split == "eval"].groupby("epoch")["correct"].mean().iloc[-1] > 0.8
    np.True_
    """
    _check_options(model, epochs, batch_size, hidden_size, records_per_epoch, lr)
    check_device(device)
    Xtr, ytr, Xev, yev, k = _check_data(X_train, y_train, X_eval, y_eval, n_classes)
    ids_tr = _ids(train_ids, Xtr.shape[0], "train_ids")
    ids_ev = _ids(eval_ids, Xev.shape[0], "eval_ids") if Xev is not None else None
    # Rows are z-scored as they are drawn (RowFeeder), never the whole matrix: no
    # scaled copy of X (3.4 GB at 550k x 1536), the same numbers.
    scaling = zscore(Xtr) if standardize and not sparse.issparse(Xtr) else None

    rng = np.random.default_rng(random_state)
    n, d = Xtr.shape
    encoder, head = seeded_mlp(rng, d, k, hidden_size if model == "mlp" else None)
    torch = _torch_module()
    dev = resolve_device(device)
    encoder, head = encoder.to(dev), head.to(dev)  # initialised on the CPU: same weights
    loss_fn = torch.nn.CrossEntropyLoss()
    feeds = [RowFeeder(Xtr, scaling, dev)]
    if Xev is not None:
        feeds.append(RowFeeder(Xev, scaling, dev))
    ytr_t = feeds[0].labels(ytr)
    if batch_size is None:
        batch_size = default_batch_size(n)
    steps = math.ceil(n / batch_size)
    # Recording j of an epoch follows step round(steps * j / records_per_epoch).
    checkpoints = {
        max(1, round(steps * j / records_per_epoch)): j for j in range(1, records_per_epoch + 1)
    }
    splits = (("train", feeds[0], ytr), *((("eval", feeds[1], yev),) if Xev is not None else ()))
    records: list[tuple[float, str, np.ndarray, np.ndarray]] = []

    def after_step(epoch: int, step: int, idx: np.ndarray, loss: Any) -> None:
        if step + 1 in checkpoints:
            value = epoch + checkpoints[step + 1] / records_per_epoch
            records.extend(_record(encoder, head, splits, value, k))

    start_time = time.perf_counter()
    encoder.train()
    head.train()
    train_loop(
        [*encoder.parameters(), *head.parameters()],
        lambda idx: loss_fn(head(encoder(feeds[0].rows(idx))), ytr_t[idx]),
        rows=np.arange(n),
        epochs=epochs,
        batch_size=batch_size,
        rng=rng,
        lr=lr,
        weight_decay=weight_decay,
        n_threads=n_threads,
        progress=progress,
        after_step=after_step,
        device=dev,
    )
    logger.info(
        "probe_dynamics: %s, %d epochs on %d x %d on %s in %.2fs",
        model,
        epochs,
        n,
        d,
        dev,
        time.perf_counter() - start_time,
    )
    return _records_frame(records, ids_tr, ids_ev, record_logits)


def _torch_module() -> Any:
    return import_torch("Training dynamics on frozen features (the fast path)")


def _check_options(
    model: str,
    epochs: Any,
    batch_size: Any,
    hidden_size: Any,
    records_per_epoch: Any,
    lr: Any,
    owner: str = "probe_dynamics",
) -> None:
    if model not in FAST_MODELS:
        raise ParameterError(
            f"The 'model' parameter of {owner} must be one of {list(FAST_MODELS)}; got {model!r}."
        )
    for name, value, low in (
        ("epochs", epochs, 1),
        ("batch_size", 1 if batch_size is None else batch_size, 1),
        ("hidden_size", hidden_size, 1),
        ("records_per_epoch", records_per_epoch, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
            raise ParameterError(
                f"The {name!r} parameter of {owner} must be an int >= {low}; got {value!r}."
            )
    if not (isinstance(lr, int | float) and lr > 0):
        raise ParameterError(f"The 'lr' parameter of {owner} must be > 0; got {lr!r}.")


def _check_data(
    X_train: Any, y_train: Any, X_eval: Any, y_eval: Any, n_classes: int | None
) -> tuple[Any, np.ndarray, Any, np.ndarray | None, int]:
    """``(X_train, y_train, X_eval, y_eval, n_classes)`` checked; the evaluation pair is
    ``(None, None)`` when not given."""
    _torch_module()  # a missing torch is reported before the data is looked at
    Xtr = _check_matrix(X_train, "X_train")
    ytr = _check_labels(y_train, Xtr.shape[0], "y_train")
    if Xtr.shape[0] == 0:
        raise ParameterError("The 'X_train' argument has no rows.")
    has_eval = X_eval is not None
    if has_eval != (y_eval is not None):
        raise ParameterError("Pass both 'X_eval' and 'y_eval', or neither.")
    Xev = yev = None
    if has_eval:
        Xev = _check_matrix(X_eval, "X_eval")
        yev = _check_labels(y_eval, Xev.shape[0], "y_eval")
        if Xev.shape[1] != Xtr.shape[1]:
            raise ParameterError(
                f"The 'X_eval' argument has {Xev.shape[1]} columns; 'X_train' has {Xtr.shape[1]}."
            )
    k = int(n_classes) if n_classes is not None else int(ytr.max()) + 1
    if has_eval and len(yev):
        k = max(k, int(yev.max()) + 1) if n_classes is None else k
    if ytr.max() >= k or (has_eval and len(yev) and yev.max() >= k):
        raise ParameterError(f"Label ids must be < n_classes={k}; got {ytr.max()}.")
    return Xtr, ytr, Xev, yev, k


def _record(
    encoder: Any,
    head: Any,
    splits: Sequence[tuple[str, RowFeeder, np.ndarray]],
    epoch: float,
    k: int,
) -> list[tuple[float, str, np.ndarray, np.ndarray]]:
    """The logits of every row of every split, in evaluation mode (8192 rows at a time),
    the rows as their :class:`RowFeeder` gives them (z-scored, on the model's device)."""
    torch = _torch_module()
    encoder.eval()
    head.eval()
    out = []
    with torch.no_grad():
        for split, feed, y in splits:
            parts = []
            n_rows = feed.X.shape[0]
            for start in range(0, n_rows, 8192):
                block = feed.block(start, min(start + 8192, n_rows))
                parts.append(feed.numpy(head(encoder(block))))
            logits = np.concatenate(parts) if parts else np.zeros((0, k), dtype=np.float32)
            out.append((epoch, split, logits, y))
    encoder.train()
    head.train()
    return out


def _ids(ids: Sequence[Any] | np.ndarray | None, n: int, what: str) -> np.ndarray:
    if ids is None:
        return np.array([str(i) for i in range(n)], dtype=object)
    out = np.asarray([str(i) for i in ids], dtype=object)
    if len(out) != n:
        raise ParameterError(f"The {what!r} argument must hold {n} ids; got {len(out)}.")
    return out


def _records_frame(
    records: Sequence[tuple[Any, ...]],
    ids_tr: np.ndarray,
    ids_ev: np.ndarray | None,
    with_logits: bool,
) -> pd.DataFrame:
    """Per-epoch records ``(epoch, split, scores, gold[, real-option mask])`` as rows.

    Multiple-choice records carry a mask: padding options score ``-inf`` (no
    probability) and only real options' logits are kept (JSON has no ``-inf``).
    """
    parts = []
    for epoch_value, split, scores, y, *rest in records:
        z = scores.astype(np.float64)
        prob = _softmax(z)
        pred = z.argmax(axis=1)
        part = pd.DataFrame(
            {
                "id": ids_tr if split == "train" else ids_ev,
                "split": split,
                "epoch": float(epoch_value),
                "p_gold": prob[np.arange(len(y)), y],
                "pred": pred.astype(np.int64),
                "correct": pred == y,
                "gold": y.astype(np.int64),
            }
        )
        if with_logits:
            mask = rest[0] if rest else None
            part["logits"] = (
                z.tolist()
                if mask is None
                else [r[m].tolist() for r, m in zip(z, mask, strict=True)]
            )
        parts.append(part)
    return pd.concat(parts, ignore_index=True)
