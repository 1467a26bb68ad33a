"""Cross-fitting: folds, shared inputs and the task every executor runs.

Without an evaluation split every condition is cross-fitted on the same folds
(:func:`~spurious.data.folds.assign_folds`, the ``"cv_folds"`` artifact); lexical
features are tokenised once per text block (the ``"lexical_counts"`` artifact; both in
:mod:`spurious.artifacts.folds`). Each fold x condition task
(:func:`_fit_fold`) reads :class:`_CrossFitInputs`, builds its fold's features and
returns the held-out rows' class probabilities from :func:`_fit_predict`.

The default probe on a precomputed matrix (sentence embeddings) is fitted per condition
instead (:func:`_fit_view`): every fold's probe in one L-BFGS run over the shared matrix
(:func:`~spurious.models.linear.cross_fit_proba`), which streams the matrix once per
iteration for all folds and copies no fold's rows. At 98k x 1,536 SNLI-dev embeddings
(resampled) it took 42 s against 92 s for the five fits one after another, 1.5-1.7x on
the 384-d partial views (``bench/bench_partial_input_joint.py``); at SNLI dev size on 2
cores it gains nothing (the full condition's fit is most of the work, so the cores
balance worse than with 15 single fits). Those figures predate the probe's
preconditioner (:func:`spurious.models.linear._preconditioner`), which cut the joint fit
at 100k x 1,536 SNLI-like pairs from 57.9 s (200 iterations, short of the minimiser) to
9.4 s (24, at it): ``bench/bench_probe_precondition.py``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import clone

from spurious.data.dataset import Dataset
from spurious.data.folds import assign_folds, stratified_group_folds
from spurious.features import Featurizer
from spurious.features.lexical import BlockCounts
from spurious.models.linear import cross_fit_proba
from spurious.models.sklearn_adapter import make_probe, predict_proba
from spurious.utils.progress import step_bar
from spurious.views import View

logger = logging.getLogger(__name__)

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


def joint(inputs: _CrossFitInputs) -> bool:
    """Whether the folds of a condition are fitted together (:func:`_fit_view`): the
    default probe on a precomputed matrix."""
    return (
        inputs.matrices is not None and isinstance(inputs.probe, str) and inputs.probe == "logistic"
    )


def side_by_side(executor: Any, inputs: _CrossFitInputs, n_folds: int) -> int:
    """How many fits may run side by side in this process (1: one after another): one
    per core on a local executor, for precomputed feature matrices (the lexical and
    refitted featurizers build per-fold state), when every core's copy of a fold's
    training rows fits within :data:`SIDE_BY_SIDE_BYTES`. Joint fits
    (:func:`joint`) copy no rows of a dense matrix (of a sparse one, its transpose).

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
    per_fit: float
    if joint(inputs):
        per_fit = max(0 if hasattr(X, "nbytes") else _nbytes(X) for X in inputs.matrices.values())
    else:
        per_fit = max(_nbytes(X) for X in inputs.matrices.values()) * (n_folds - 1) / n_folds
    return cores if per_fit * cores <= SIDE_BY_SIDE_BYTES else 1


def _nbytes(X: Any) -> int:
    if hasattr(X, "nbytes"):
        return int(X.nbytes)
    # scipy sparse: its three arrays
    return int(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)


def fit_by_condition(
    executor: Any, inputs: _CrossFitInputs, views: list[View], n_folds: int, progress: bool
) -> dict[str, np.ndarray]:
    """One task per condition, every fold's probe fitted together; the conditions run
    side by side on one thread per core (no row copies to bound), or on Ray workers."""
    side = side_by_side(executor, inputs, n_folds) > 1
    bar = step_bar(
        "partial_input: conditions (all folds)", len(views), enabled=progress, unit="fit"
    )
    start, probas = time.perf_counter(), {}
    try:
        shared = executor.put(inputs)
        # The full condition costs most: started first, the others share the other cores.
        for view, proba in zip(
            views, executor.map(_fit_view, views, shared=shared, side_by_side=side), strict=True
        ):
            probas[view.name] = proba
            logger.info("partial_input: %s done (%.1f s)", view.name, time.perf_counter() - start)
            bar.update(1)
    finally:
        bar.close()
    return probas


def fit_by_fold(
    executor: Any, inputs: _CrossFitInputs, views: list[View], n_folds: int, progress: bool
) -> dict[str, np.ndarray]:
    """One task per fold x condition (lexical or refitted features, other probes)."""
    fold_of, n = inputs.fold_of, len(inputs.y)
    tasks = [(v, k) for k in range(n_folds) for v in views]
    probas = {v.name: np.zeros((n, inputs.n_classes)) for v in views}
    bar = step_bar("partial_input: fold x condition", len(tasks), enabled=progress, unit="fit")
    try:
        shared = executor.put(inputs)
        # Locally one task at a time (the bar moves per fit), or, when the fits'
        # copies of their training rows fit in memory together, whole folds side by
        # side on one thread per core; remotely, whole folds per batch, enough to keep
        # every worker busy (the conditions of a fold differ a lot in cost), so the
        # bar and the log still move fold by fold.
        side_workers = side_by_side(executor, inputs, n_folds)
        side = side_workers > 1
        workers = side_workers if side else executor.n_workers
        step = 1 if workers <= 1 else len(views) * -(-workers // len(views))
        if side:
            # One fold per core per batch: a fold's full-input fit costs more than
            # its partial ones, so with one fold per batch a core idles while the
            # other finishes the full fit (SNLI dev quick, 2 cores, 3 alternating
            # runs: the step took 9.7-10.3 s instead of 10.3-10.8 s).
            step = len(views) * workers
        start, done_in_fold = time.perf_counter(), {k: 0 for k in range(n_folds)}
        for i in range(0, len(tasks), step):
            batch = tasks[i : i + step]
            bar.set_postfix_str(f"fold {batch[0][1] + 1}/{n_folds}")  # running now
            for (view, k), proba in zip(
                batch,
                executor.map(_fit_fold, batch, shared=shared, side_by_side=side),
                strict=True,
            ):
                probas[view.name][fold_of == k] = proba
                done_in_fold[k] += 1
                if done_in_fold[k] == len(views):
                    logger.info(
                        "partial_input: fold %d/%d done (%.1f s)",
                        k + 1,
                        n_folds,
                        time.perf_counter() - start,
                    )
            bar.update(len(batch))
    finally:
        bar.close()
    return probas


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


def _fit_view(view: View, shared: _CrossFitInputs) -> np.ndarray:
    """Out-of-fold class probabilities of every row for one condition, every fold's
    default probe fitted in one run (:func:`~spurious.models.linear.cross_fit_proba`);
    fold by fold (:func:`_fit_fold`) when some fold's training rows miss a class.

    A pure function of ``view`` and ``shared`` (the executor contract).
    """
    assert shared.matrices is not None  # joint(shared): a stateless matrix per view
    # "auto": the run's device (spurious audit --device), else a GPU when there is one.
    proba = cross_fit_proba(
        shared.matrices[view.name], shared.y, shared.fold_of, shared.n_classes, device="auto"
    )
    if proba is None:
        proba = np.zeros((len(shared.y), shared.n_classes))
        for k in np.unique(shared.fold_of):
            proba[shared.fold_of == k] = _fit_fold((view, int(k)), shared)
    return proba


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
