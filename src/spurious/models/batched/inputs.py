"""Checks and normalises the arguments of ``fit_predict`` and ``shared_start``."""

from __future__ import annotations

from numbers import Integral

import numpy as np

from spurious.exceptions import LabelError, ParameterError
from spurious.utils.matrix import check_features


def _validate(X, y, train_idx, n_classes, X_predict):
    """Check and normalise the arguments of ``fit_predict``."""
    if isinstance(n_classes, bool) or not isinstance(n_classes, Integral) or n_classes < 2:
        raise ParameterError(f"n_classes must be an int >= 2; got {n_classes!r}.")
    n_classes = int(n_classes)
    X = check_features(X, None, "X")
    n = X.shape[0]
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ParameterError(
            f"y must be a 1-D array of {n} labels (one per row of X); got shape {y.shape}."
        )
    if not np.issubdtype(y.dtype, np.integer):
        raise LabelError(f"y must hold integer label ids; got dtype {y.dtype}.")
    if n and (y.min() < 0 or y.max() >= n_classes):
        bad = int(y[(y < 0) | (y >= n_classes)][0])
        raise LabelError(f"y must hold label ids in [0, n_classes={n_classes}); found {bad}.")
    train_idx = np.asarray(train_idx)
    if train_idx.ndim != 2 or train_idx.shape[0] < 1 or train_idx.shape[1] < 1:
        raise ParameterError(
            f"train_idx must be a 2-D array (m classifiers, t rows) with m, t >= 1; got shape {train_idx.shape}."
        )
    if not np.issubdtype(train_idx.dtype, np.integer):
        raise ParameterError(
            f"train_idx must hold integer row indices; got dtype {train_idx.dtype}."
        )
    if train_idx.min() < 0 or train_idx.max() >= n:
        raise ParameterError(f"train_idx must hold row indices in [0, {n}) (rows of X).")
    if X_predict is None:
        X_predict = X
    else:
        X_predict = check_features(X_predict, None, "X_predict")
        if X_predict.shape[1] != X.shape[1]:
            raise ParameterError(
                f"X_predict must have the {X.shape[1]} columns of X; got {X_predict.shape[1]}."
            )
    # Copies (small): torch wants writable arrays, and callers' arrays stay untouched.
    return X, np.array(y, dtype=np.int64), np.array(train_idx, dtype=np.int64), n_classes, X_predict
