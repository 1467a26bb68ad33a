"""Cross-fitting: folds, shared inputs and the task every executor runs.

Without an evaluation split every condition is cross-fitted on the same folds
(:func:`~spurious.data.folds.assign_folds`, the ``"cv_folds"`` artifact); lexical
features are tokenised once per text block (the ``"lexical_counts"`` artifact; both in
:mod:`spurious.artifacts.folds`). Each fold x condition task
(:func:`_fit_fold`) reads :class:`_CrossFitInputs`, builds its fold's features and
returns the held-out rows' class probabilities from :func:`_fit_predict`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import clone

from spurious.data.dataset import Dataset
from spurious.data.folds import assign_folds, stratified_group_folds
from spurious.features import Featurizer
from spurious.features.lexical import BlockCounts
from spurious.models.sklearn_adapter import make_probe, predict_proba
from spurious.views import View

__all__ = ["assign_folds", "stratified_group_folds"]


@dataclass(frozen=True, eq=False)
class _CrossFitInputs:
    """What every fold x condition task reads (placed once in a Ray object store).

    Exactly one of ``blocks`` (lexical counts), ``matrices`` (stateless features by view)
    and ``dataset`` (refit any other featurizer per fold) is set.
    """

    featurizer: Featurizer
    y: np.ndarray
    fold_of: np.ndarray
    n_classes: int
    probe: Any
    random_state: Any
    blocks: dict[str, BlockCounts] | None = None
    matrices: dict[str, Any] | None = None
    dataset: Dataset | None = None


def _fit_fold(task: tuple[View, int], shared: _CrossFitInputs) -> np.ndarray:
    """Class probabilities of fold ``k``'s rows from a probe fitted on the other folds.

    A pure function of ``task`` and ``shared`` (the executor contract): the features are
    learned from the training folds only, as refitting the featurizer would.
    """
    view, k = task
    held_out = shared.fold_of == k
    train, test = np.flatnonzero(~held_out), np.flatnonzero(held_out)
    if shared.blocks is not None:
        X = shared.featurizer.fit_rows(shared.blocks, view, train)
        X_train, X_test = X[train], X[test]
        del X  # the training rows' copy is what the probe needs; free the rest early
    elif shared.matrices is not None:
        X = shared.matrices[view.name]
        X_train, X_test = X[train], X[test]
    else:
        feat = clone(shared.featurizer)
        X_train = feat.fit_transform(shared.dataset.subset(train), view)
        X_test = feat.transform(shared.dataset.subset(test), view)
    return _fit_predict(
        shared.probe, shared.random_state, X_train, shared.y[train], X_test, shared.n_classes
    )


def _fit_predict(
    probe: Any, random_state: Any, X_train: Any, y_train: np.ndarray, X_eval: Any, n_classes: int
) -> np.ndarray:
    """Probe fitted on the training rows; probabilities of every label id for ``X_eval``."""
    model = make_probe(probe, random_state=random_state)
    model.fit(X_train, y_train)
    proba = predict_proba(model, X_eval)
    # The probe only knows classes present in training; place them in label-id order.
    full = np.zeros((X_eval.shape[0], n_classes))
    full[:, np.asarray(model.classes_, dtype=int)] = proba
    return full
