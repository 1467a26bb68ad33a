"""Featurizer base class: a view of a dataset -> a float32 feature matrix.

A featurizer is fitted on the training split (``fit``) and applied to any split
(``transform``). Stateless featurizers (sentence encoders, precomputed arrays) need no
fit; ``fit`` is then a no-op so all featurizers share one protocol.

:data:`Matrix`, :func:`check_features` and :func:`as_numeric_2d` live in
:mod:`spurious.utils.matrix` (models use them too) and are re-exported here.
"""

from __future__ import annotations

from typing import Any, ClassVar

from sklearn.base import BaseEstimator

from spurious.data.dataset import Dataset
from spurious.utils.matrix import Matrix, as_numeric_2d, check_features
from spurious.views import View, get_view

__all__ = ["Featurizer", "Matrix", "as_numeric_2d", "check_features"]


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
