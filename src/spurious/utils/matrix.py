"""Feature matrices: the :data:`Matrix` type and the checks every consumer applies.

A feature matrix is a dense float32 ndarray or a scipy CSR matrix of float32, one row per
example. Featurizers (:mod:`spurious.features`) produce them and models
(:mod:`spurious.models`) consume them, so the type and its validation live here, below
both layers.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from spurious.exceptions import FeatureError

#: A feature matrix: dense float32 ndarray or a scipy CSR matrix of float32.
Matrix = np.ndarray | sp.csr_matrix


def as_numeric_2d(value: Any, what: str = "features") -> np.ndarray:
    """``np.asarray(value)`` checked to be a numeric 2-D array (no copy, no finiteness check).

    Examples
    --------
    >>> as_numeric_2d([[1, 2]]).shape
    (1, 2)
    """
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as e:
        raise FeatureError(f"{what} could not be converted to an array: {e}") from None
    if arr.dtype == object or not np.issubdtype(arr.dtype, np.number):
        raise FeatureError(f"{what} must be numeric; got dtype {arr.dtype}.")
    if arr.ndim != 2:
        raise FeatureError(
            f"{what} must be a 2-D array (n_examples, n_features); got shape {arr.shape}."
        )
    return arr


def all_finite(values: np.ndarray) -> bool:
    """Whether every entry of a numeric array is finite, without an array-sized temporary.

    One float64 sum decides the common case (NaN and inf propagate into it; float64 holds
    the sum of any float32 values without overflow); only a non-finite sum is checked
    entry by entry. ``np.isfinite(X).all()`` allocates a boolean copy of ``X``: 845 MB at
    550k x 1536, on every validation of the audit's shared features.

    Examples
    --------
    >>> all_finite(np.ones((2, 2))), all_finite(np.array([1.0, np.nan]))
    (True, False)
    """
    if values.size == 0 or not np.issubdtype(values.dtype, np.inexact):
        return True
    if np.isfinite(np.sum(values, dtype=np.complex128 if values.dtype.kind == "c" else np.float64)):
        return True
    return bool(np.isfinite(values).all())  # overflow of the sum, or a real NaN/inf


def check_features(X: Any, n_rows: int | None, what: str = "features") -> Matrix:
    """Validate a feature matrix: 2-D, ``n_rows`` rows, finite; return float32.

    Examples
    --------
    >>> check_features(np.ones((2, 3)), 2).dtype
    dtype('float32')
    >>> check_features(np.ones(3), 3)
    Traceback (most recent call last):
    ...
    spurious.exceptions.FeatureError: features must be a 2-D array (n_examples, n_features); got shape (3,).
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float32)
        data = X.data
    else:
        X = np.ascontiguousarray(as_numeric_2d(X, what), dtype=np.float32)
        data = X
    if n_rows is not None and X.shape[0] != n_rows:
        raise FeatureError(f"{what} must have {n_rows} rows (one per example); got {X.shape[0]}.")
    if X.shape[1] == 0:
        raise FeatureError(f"{what} has no columns.")
    if not all_finite(data):
        finite = np.isfinite(data)
        bad = np.argwhere(~finite)[0]
        row = (
            int(bad[0])
            if not sp.issparse(X)
            else int(np.searchsorted(X.indptr, bad[0], "right") - 1)
        )
        raise FeatureError(
            f"{what} contain {int((~finite).sum())} NaN/inf value(s); the first is in row {row}."
        )
    return X


def condensed_euclidean(X: np.ndarray, *, block_entries: int = 1 << 23) -> np.ndarray:
    """Euclidean distances between the rows of ``X`` in SciPy's condensed ``pdist`` layout.

    Computed in float64 as ``sqrt(|a|^2 + |b|^2 - 2 a.b)``, one block of rows against
    the rows after it at a time (GEMMs over the upper triangle only, ``block_entries``
    float64 numbers per block, 64 MiB by default), so it costs half of a full
    :func:`sklearn.metrics.pairwise_distances` and no ``n x n`` temporary. SciPy's
    ``pdist`` gives the same distances (to ~1e-12) at a few times the cost: it loops
    over the pairs without BLAS.

    Examples
    --------
    >>> condensed_euclidean(np.array([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]])).tolist()
    [5.0, 1.0, 4.242640687119285]
    """
    X64 = np.asarray(X, dtype=np.float64)
    n = X64.shape[0]
    sq = np.einsum("ij,ij->i", X64, X64)
    out = np.empty(n * (n - 1) // 2, dtype=np.float64)
    block = max(1, block_entries // max(n, 1))
    for lo in range(0, n - 1, block):
        hi = min(lo + block, n - 1)
        # Rows lo..hi-1 against rows lo+1..n-1: row g's pairs are columns g-lo onwards.
        G = X64[lo:hi] @ X64[lo + 1 :].T
        G *= -2.0
        G += sq[lo:hi, None]
        G += sq[None, lo + 1 :]
        np.maximum(G, 0.0, out=G)  # rounding can take a tiny distance below 0
        np.sqrt(G, out=G)
        for g in range(lo, hi):
            start = g * n - g * (g + 1) // 2
            out[start : start + n - g - 1] = G[g - lo, g - lo :]
    return out
