"""Featurizer base class: a view of a dataset -> a float32 feature matrix.

A featurizer is fitted on the training split (``fit``) and applied to any split
(``transform``). Stateless featurizers (sentence encoders, precomputed arrays) need no
fit; ``fit`` is then a no-op so all featurizers share one protocol.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator

from spurious.data.dataset import Dataset
from spurious.exceptions import FeatureError
from spurious.views import View, get_view

#: A feature matrix: dense float32 ndarray or a scipy CSR matrix of float32.
Matrix = np.ndarray | sp.csr_matrix


class Featurizer(BaseEstimator):
    """Turn ``(dataset, view)`` into a ``(len(dataset), d)`` float32 matrix."""

    name: ClassVar[str] = ""
    #: True when ``transform`` does not depend on ``fit`` (so results can be cached by
    #: dataset fingerprint + view + config alone).
    stateless: ClassVar[bool] = False

    def fit(self, dataset: Dataset, view: str | View) -> Featurizer:
        """Learn what the featurizer needs from the training split (default: nothing)."""
        return self

    def transform(self, dataset: Dataset, view: str | View, *, progress: bool = False) -> Matrix:
        """Features of ``dataset`` seen through ``view``."""
        v = get_view(dataset.task, view)
        X = self._transform(dataset, v, progress=progress)
        return check_features(X, len(dataset), f"{self.name} features for view {v.name!r}")

    def fit_transform(
        self, dataset: Dataset, view: str | View, *, progress: bool = False
    ) -> Matrix:
        """``fit`` then ``transform`` on the same split."""
        return self.fit(dataset, view).transform(dataset, view, progress=progress)

    def config(self) -> dict[str, Any]:
        """JSON-serialisable identity of this featurizer (for cache keys and provenance)."""
        params = {
            k: (v if isinstance(v, str | int | float | bool | type(None)) else repr(v))
            for k, v in self.get_params(deep=False).items()
            if k not in ("cache_dir", "progress")
        }
        return {"featurizer": self.name, **params}

    def _transform(self, dataset: Dataset, view: View, *, progress: bool) -> Matrix:
        raise NotImplementedError  # pragma: no cover  (abstract)


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
    finite = np.isfinite(data)
    if not finite.all():
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
