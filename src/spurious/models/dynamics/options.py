"""The fast path for multiple-choice items: an option scorer on frozen option blocks.

A multiple-choice item's gold is one of its own options, not a class of its text, so
:func:`~spurious.models.dynamics.probe_dynamics` (a softmax over a fixed label set) does
not fit it. :func:`option_dynamics` trains a scorer that gives every option block of an
item one score with shared weights (a linear layer, or a small MLP applied to each block)
and takes a softmax over the item's real options, padding masked with ``-inf``; it is
trained with the one loop of :mod:`spurious.models.torch_loop` (seeded initialisation
and batch order, Adam, cross-entropy) and records, after every epoch, each item's
probability of its gold option. The record has the columns of
:class:`~spurious.models.dynamics.TrainingDynamics` (``pred`` and ``gold`` are option
positions, ``logits`` the scores of the item's real options only), so cartography reads
it as it reads a classifier's.

The option blocks come from :class:`spurious.features.mcq.OptionFeaturizer` (the run
shares them as the ``option_blocks`` artifact): ``X`` of shape ``(n, K * d)``, ``K``
blocks of ``d`` columns, column 0 of a block 1 for a real option and 0 for padding.
torch is imported only when a function runs.
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
from spurious.models.dynamics.probe import _check_options, _ids, _records_frame
from spurious.models.runtime.threads import import_torch
from spurious.models.torch_loop import default_batch_size, seeded_mlp, train_loop, zscore

logger = logging.getLogger(__name__)

__all__ = ["option_dynamics", "permute_gold_within_counts"]

#: (epoch, split, scores (n, K) with -inf at padding, gold positions, real-option mask).
_Record = tuple[float, str, np.ndarray, np.ndarray, np.ndarray]


def option_dynamics(
    X_train: Any,
    y_train: Any,
    X_eval: Any = None,
    y_eval: Any = None,
    *,
    n_features: int,
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
    train_ids: Sequence[Any] | np.ndarray | None = None,
    eval_ids: Sequence[Any] | np.ndarray | None = None,
    random_state: int | None = 0,
    progress: str | None = None,
) -> pd.DataFrame:
    """Train an option scorer on frozen option blocks and record every item after every epoch.

    Each option block ``x`` gets the score ``f(x)``, one function for every block of every
    item (``"linear"``: ``w . x``; ``"mlp"``: one hidden ReLU layer, then a linear output);
    an item's options compete through a softmax over their scores, padding blocks masked
    with ``-inf``. After each epoch (or ``records_per_epoch`` times per epoch) the model,
    in evaluation mode, scores every training and evaluation item; evaluation items are
    never trained on.

    Parameters
    ----------
    X_train : array-like, shape (n_train, K * n_features)
        Option blocks (:attr:`spurious.features.mcq.OptionBlocks.X`); column 0 of each
        block is 1 for a real option and 0 for padding.
    y_train : array-like of int, shape (n_train,)
        The gold option's position (0-based), a real option of its item.
    X_eval, y_eval : optional
        Held-out items recorded alongside (``split="eval"``), with the same ``K``.
    n_features : int
        ``d``, the columns of one block (the indicator included).
    model : {"mlp", "linear"}, default="mlp"
    epochs : int, default=10
    lr : float, default=1e-3
        Adam learning rate.
    batch_size : int, optional
        Items per step; default ``n_train // 32`` clipped to [8, 128].
    hidden_size : int, default=256
        Width of the MLP's hidden layer (ignored by ``"linear"``).
    weight_decay : float, default=0.0
    records_per_epoch : int, default=1
    standardize : bool, default=True
        Z-score each column with the mean and std over the training split's real options
        (padding stays 0; a constant column, such as the indicator, becomes 0).
    record_logits : bool, default=True
        Keep each item's option scores (one per real option).
    n_threads : int or None, default=1
        Torch intra-op threads while training (see :func:`~spurious.models.torch_loop.train_loop`).
    train_ids, eval_ids : sequence, optional
        Item ids (default: row numbers as strings).
    random_state : int or None, default=0
        Seeds the initialisation and the batch order; the global random state of numpy
        and torch is left as it was.
    progress : str, optional
        A progress bar over the epochs with this description (``None``: none).

    Returns
    -------
    pandas.DataFrame
        The :attr:`TrainingDynamics.frame` columns; ``pred`` and ``gold`` are option
        positions, ``p_gold`` the softmax probability of the gold option among the item's
        own options.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(200, 3)); x[:100, 2] = -np.inf  # 100 items of 2 options
    >>> y = x.argmax(axis=1)  # the gold: the option with the largest x
    >>> real = np.isfinite(x)
    >>> X = np.stack([real * 1.0, np.where(real, x, 0.0)], axis=2).reshape(200, 6)
    >>> frame = option_dynamics(X[:150], y[:150], X[150:], y[150:], n_features=2, epochs=3)
    >>> frame.groupby("split").size().to_dict(), len(frame["logits"].iloc[0])
    ({'eval': 150, 'train': 450}, 2)
    >>> frame[frame.split == "eval"].groupby("epoch")["correct"].mean().iloc[-1] > 0.8
    np.True_
    """
    _check_options(
        model, epochs, batch_size, hidden_size, records_per_epoch, lr, owner="option_dynamics"
    )
    d = _check_width(n_features)
    Btr, mtr, ytr = _check_blocks(X_train, y_train, d, "X_train", "y_train")
    has_eval = X_eval is not None
    if has_eval != (y_eval is not None):
        raise ParameterError("Pass both 'X_eval' and 'y_eval', or neither.")
    splits = [("train", Btr, ytr, mtr)]
    if has_eval:
        Bev, mev, yev = _check_blocks(X_eval, y_eval, d, "X_eval", "y_eval")
        if Bev.shape[1] != Btr.shape[1]:
            raise ParameterError(
                f"The 'X_eval' argument has {Bev.shape[1]} option blocks; 'X_train' has "
                f"{Btr.shape[1]} (give every split the same n_blocks)."
            )
        splits.append(("eval", Bev, yev, mev))
    ids_tr = _ids(train_ids, len(ytr), "train_ids")
    ids_ev = _ids(eval_ids, len(splits[1][2]), "eval_ids") if has_eval else None
    if standardize:
        # Statistics over real options only: padding rows would pull every mean to 0.
        mu, sd = zscore(Btr[mtr])
        splits = [(s, np.where(m[:, :, None], (B - mu) / sd, 0.0), y, m) for s, B, y, m in splits]

    torch = _torch()
    rng = np.random.default_rng(random_state)
    encoder, head = seeded_mlp(rng, d, 1, hidden_size if model == "mlp" else None)
    tensors = [
        (s, torch.from_numpy(np.ascontiguousarray(B, dtype=np.float32)), y, torch.from_numpy(m))
        for s, B, y, m in splits
    ]
    X_t, mask_t, y_t = tensors[0][1], tensors[0][3], torch.from_numpy(ytr)
    loss_fn = torch.nn.CrossEntropyLoss()

    def batch_loss(idx: np.ndarray) -> Any:
        rows = torch.from_numpy(idx)
        return loss_fn(_scores(encoder, head, X_t[rows], mask_t[rows]), y_t[rows])

    n = len(ytr)
    batch_size = default_batch_size(n) if batch_size is None else batch_size
    steps = math.ceil(n / batch_size)
    # Recording j of an epoch follows step round(steps * j / records_per_epoch).
    checkpoints = {
        max(1, round(steps * j / records_per_epoch)): j for j in range(1, records_per_epoch + 1)
    }
    records: list[_Record] = []

    def after_step(epoch: int, step: int, idx: np.ndarray, loss: Any) -> None:
        if step + 1 in checkpoints:
            value = epoch + checkpoints[step + 1] / records_per_epoch
            records.extend(_record(encoder, head, tensors, value))

    start = time.perf_counter()
    encoder.train()
    head.train()
    train_loop(
        [*encoder.parameters(), *head.parameters()],
        batch_loss,
        rows=np.arange(n),
        epochs=epochs,
        batch_size=batch_size,
        rng=rng,
        lr=lr,
        weight_decay=weight_decay,
        n_threads=n_threads,
        progress=progress,
        after_step=after_step,
    )
    logger.info(
        "option_dynamics: %s, %d epochs on %d items x %d blocks x %d in %.2fs",
        model, epochs, n, Btr.shape[1], d, time.perf_counter() - start,
    )  # fmt: skip
    return _records_frame(records, ids_tr, ids_ev, record_logits)


def permute_gold_within_counts(y: Any, n_options: Any, rng: np.random.Generator) -> np.ndarray:
    """Gold positions permuted among items with the same number of options.

    The permuted-label null of multiple-choice items: every gold stays a real option of
    its item (a plain permutation could point a 2-option item at "E") and the gold
    positions' base rates within each option count are kept.

    Examples
    --------
    >>> y = permute_gold_within_counts([0, 1, 2, 0, 1], [2, 2, 3, 3, 3], np.random.default_rng(0))
    >>> bool((y[:2] < 2).all()), sorted(y[2:].tolist())
    (True, [0, 1, 2])
    """
    y = np.asarray(y, dtype=np.int64)
    k = np.asarray(n_options, dtype=np.int64)
    if y.shape != k.shape or y.ndim != 1:
        raise ParameterError(
            f"The 'y' and 'n_options' arguments must be 1-D and of equal length; got shapes "
            f"{y.shape} and {k.shape}."
        )
    out = y.copy()
    for count in np.unique(k):
        rows = np.flatnonzero(k == count)
        out[rows] = y[rows[rng.permutation(len(rows))]]
    return out


def _torch() -> Any:
    return import_torch("Training dynamics of multiple-choice items (the fast path)")


def _check_width(n_features: Any) -> int:
    if (
        isinstance(n_features, bool)
        or not isinstance(n_features, int | np.integer)
        or n_features < 2
    ):
        raise ParameterError(
            "The 'n_features' argument of option_dynamics must be an int >= 2 (the indicator "
            f"column and at least one feature); got {n_features!r}."
        )
    return int(n_features)


def _check_blocks(
    X: Any, y: Any, d: int, what: str, what_y: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(blocks (n, K, d), real-option mask (n, K), gold positions)`` checked."""
    _torch()  # a missing torch is reported before the data is looked at
    arr = X.toarray() if sparse.issparse(X) else np.asarray(X)
    arr = np.asarray(arr, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] % d or arr.shape[1] // d < 2:
        raise ParameterError(
            f"The {what!r} argument must be a 2-D matrix of at least 2 option blocks of "
            f"n_features={d} columns; got shape {arr.shape}."
        )
    if len(arr) == 0:
        raise ParameterError(f"The {what!r} argument has no rows.")
    if not np.isfinite(arr).all():
        raise ParameterError(f"The {what!r} argument holds NaN or infinite values.")
    blocks = arr.reshape(len(arr), arr.shape[1] // d, d)
    flag = blocks[:, :, 0]
    if not np.isin(flag, (0.0, 1.0)).all():
        raise ParameterError(
            f"Column 0 of each block of {what!r} must be 1 (a real option) or 0 (padding); "
            f"got values {sorted(set(np.unique(flag).tolist()) - {0.0, 1.0})[:3]}."
        )
    mask = flag > 0.5
    yv = np.asarray(y)
    if yv.shape != (len(arr),) or (len(yv) and not np.issubdtype(yv.dtype, np.integer)):
        raise ParameterError(
            f"The {what_y!r} argument must hold one gold option position (int) per row "
            f"({len(arr)}); got shape {yv.shape} of dtype {yv.dtype}."
        )
    yv = yv.astype(np.int64)
    bad = (yv < 0) | (yv >= blocks.shape[1])
    bad[~bad] = ~mask[np.flatnonzero(~bad), yv[~bad]]
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ParameterError(
            f"The {what_y!r} argument must point at a real option of each item; row {i} has "
            f"gold {int(yv[i])} and {int(mask[i].sum())} option(s)."
        )
    return blocks, mask, yv


def _scores(encoder: Any, head: Any, X: Any, mask: Any) -> Any:
    """Scores (b, K) of blocks (b, K, d), shared weights; padding at -inf."""
    return head(encoder(X)).squeeze(-1).masked_fill(~mask, float("-inf"))


def _record(encoder: Any, head: Any, tensors: list[tuple[Any, ...]], epoch: float) -> list[_Record]:
    """The option scores of every item of every split, in evaluation mode (8192 at a time)."""
    torch = _torch()
    encoder.eval()
    head.eval()
    out = []
    with torch.no_grad():
        for split, X, y, mask in tensors:
            parts = [
                _scores(encoder, head, X[s : s + 8192], mask[s : s + 8192]).numpy()
                for s in range(0, X.shape[0], 8192)
            ]
            out.append((epoch, split, np.concatenate(parts), y, mask.numpy()))
    encoder.train()
    head.train()
    return out
