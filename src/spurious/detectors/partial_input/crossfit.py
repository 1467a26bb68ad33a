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


#: Fits whose copies of their training rows take at most this much memory together
#: run side by side on a local executor (one per core); bigger ones one after another.
SIDE_BY_SIDE_BYTES = 2 * 2**30


def side_by_side(executor: Any, inputs: _CrossFitInputs, n_folds: int) -> int:
    """How many fold x condition fits may run side by side in this process (1: one after
    another): one per core on a local executor, for precomputed feature matrices (the
    lexical and refitted featurizers build per-fold state), when every core's copy of a
    fold's training rows fits within :data:`SIDE_BY_SIDE_BYTES`.

    Examples
    --------
    >>> from spurious.execution import LocalExecutor
    >>> X = np.zeros((1000, 8), np.float32)
    >>> inputs = _CrossFitInputs(None, np.zeros(1000), np.zeros(1000), 2, "logistic", 0,
    ...                          matrices={"full": X})
    >>> side_by_side(LocalExecutor(), inputs, 5) >= 1
    True
    """
    from spurious.execution import executor as executors  # its cores, looked up per call

    if executor.remote or inputs.matrices is None:
        return 1
    cores = executors.available_cores()
    per_fit = max(_nbytes(X) for X in inputs.matrices.values()) * (n_folds - 1) / n_folds
    return cores if per_fit * cores <= SIDE_BY_SIDE_BYTES else 1


def _nbytes(X: Any) -> int:
    if hasattr(X, "nbytes"):
        return int(X.nbytes)
    # scipy sparse: its three arrays
    return int(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)


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
