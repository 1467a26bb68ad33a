"""Size-matched baselines for AFLite (paper 000, Sec. 4.2).

AFLite shrinks a dataset; to tell the effect of *which* examples it keeps from the
effect of keeping fewer, the paper compares it with a random subset of the same size
(D_92k, D_182k). :func:`one_shot_filter_baseline` is the other natural control: filter
down to the same size in one shot, from a single classifier, without AFLite's rounds
and ensembles. Accuracy comparisons on these subsets are left to experiment scripts.

:func:`predictability_beyond_null` is the control of AFLite's *verdict* (issue 19 item 1):
the share of examples a representation predicts (p >= tau) against the share it predicts
when the labels are shuffled, on the same partitions, with a bootstrap interval of the
difference. Predictability alone says that the label is learnable; it is read as a
shortcut only for a representation that should not suffice for the task (a partial
input, or a weaker representation the user names).
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral
from typing import Any

import numpy as np
import scipy.sparse as sp

from spurious.data.dataset import Dataset
from spurious.detectors.aflite.algorithm import (
    make_partition_model,
    predictability,
    prepare_start,
    resolve_size,
    sample_partitions,
    score_partitions,
)
from spurious.exceptions import ParameterError
from spurious.execution import Executor, LocalExecutor
from spurious.stats.bootstrap import bootstrap_of_means

__all__ = ["one_shot_filter_baseline", "predictability_beyond_null", "random_subset_baseline"]


def _check_size(size: Any, n: int, owner: str) -> int:
    if not isinstance(size, Integral) or isinstance(size, bool) or not 1 <= size <= n:
        raise ParameterError(
            f"The 'size' parameter of {owner} must be an int in the range [1, {n}] (the number "
            f"of examples to keep). Got {size!r} instead."
        )
    return int(size)


def random_subset_baseline(dataset: Dataset, size: int, random_state: int | None = 0) -> Dataset:
    """A uniform random subset of ``size`` examples (rows keep their original order).

    Parameters
    ----------
    dataset : Dataset
    size : int
        Examples to keep, e.g. the size of the AFLite-filtered set
        (``result.metrics["n_final"]``).
    random_state : int or None, default=0

    Returns
    -------
    Dataset

    Examples
    --------
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> ds = make_nli_artifacts(n=60, random_state=0).dataset
    >>> len(random_subset_baseline(ds, 20, random_state=1))
    20
    """
    size = _check_size(size, len(dataset), "random_subset_baseline")
    rng = np.random.default_rng(random_state)
    keep = np.sort(rng.choice(len(dataset), size=size, replace=False))
    return dataset.subset(keep, f"{dataset.name}[random {size}]")


def one_shot_filter_baseline(
    X: Any,
    y: np.ndarray,
    size: int,
    model: Any = "logistic",
    train_size: int | float = 0.1,
    random_state: int | None = 0,
    *,
    n_partitions: int = 1,
    groups: np.ndarray | None = None,
) -> np.ndarray:
    """Filter to ``size`` examples in one round: drop the most predictable ones.

    One classifier (``n_partitions=1``) is trained on ``train_size`` random examples
    and predicts the others; examples it gets right are removed first (ties at random),
    then, if more must go, the others. Its own training examples have no score and are
    removed last.

    Parameters
    ----------
    X : ndarray or CSR matrix, shape (N, d)
        Features.
    y : ndarray of int, shape (N,)
        Label ids.
    size : int
        Examples to keep.
    model : str, estimator or PartitionModel, default="logistic"
        As :class:`~spurious.detectors.aflite.AFLite`'s ``model``.
    train_size : int or float, default=0.1
        Training examples of the classifier (a float is a fraction of N).
    random_state : int or None, default=0
    n_partitions : int, default=1
        More than one scores each example by the fraction of held-out predictions
        that are right (one AFLite round without iteration).
    groups : ndarray, optional
        Group keys kept on one side of the training split.

    Returns
    -------
    ndarray of int64
        Indices of the kept examples, ascending.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3)).astype(np.float32)
    >>> y = (X[:, 0] > 0).astype(int)
    >>> keep = one_shot_filter_baseline(X, y, 50, model="sklearn-logistic", train_size=50)
    >>> len(keep), bool(np.all(np.diff(keep) > 0))
    (50, True)
    """
    y = np.asarray(y, dtype=np.int64)
    n = len(y)
    size = _check_size(size, n, "one_shot_filter_baseline")
    t = resolve_size(train_size, n, "train_size")
    if not 1 <= t < n:
        raise ParameterError(
            f"The 'train_size' parameter of one_shot_filter_baseline must leave held-out "
            f"examples: 1 <= t < {n}. Got t={t}."
        )
    if groups is None:
        codes = np.arange(n)
    else:
        codes = np.unique(np.asarray(groups, dtype=object).astype(str), return_inverse=True)[1]
    entropy = 0 if random_state is None else int(random_state)
    rng = np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(1, 0)))
    train_idx, excluded = sample_partitions(codes, t, n_partitions, rng)
    part_model = make_partition_model(model, random_state, sparse=sp.issparse(X))
    shared = {"X": X, "y": y, "model": part_model, "n_classes": int(y.max()) + 1}
    correct, held = score_partitions(
        LocalExecutor(), shared, None, train_idx, excluded, n_partitions
    )
    p = predictability(correct, held)
    # Removal order: highest p first, random among ties, unscored (training) rows last.
    key_p = np.where(np.isfinite(p), p, -1.0)
    order = np.lexsort((rng.random(n), -key_p))
    return np.sort(order[n - size :]).astype(np.int64)


def _difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a - b


def predictability_beyond_null(
    X: Any,
    y: np.ndarray,
    train_idx: np.ndarray,
    excluded: list[np.ndarray],
    *,
    model: Any = "logistic",
    n_classes: int | None = None,
    tau: float = 0.75,
    n_shuffles: int = 1,
    random_state: int | None = 0,
    p_real: np.ndarray | None = None,
    executor: Executor | None = None,
    chunk_size: int | None = None,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    n_options: np.ndarray | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Share of examples predictable (p >= tau) with the real labels and with shuffled ones.

    One AFLite round's classifiers (the partitions ``train_idx`` / ``excluded``) are
    trained on the real labels and on ``n_shuffles`` seeded permutations of them; every
    example's predictability p is the share of its held-out predictions that equal the
    labels the classifiers were trained on. Shuffled labels keep the label distribution
    and the representation but break any relation between them, so their share is what
    a model family "predicts" from nothing: a majority guess, chance agreement, memorised
    noise. The effect is the difference of the two shares, with a percentile bootstrap
    interval over examples (the two indicators of an example are resampled together).
    The interval covers the sampling of examples, not of partitions.

    Parameters
    ----------
    X : ndarray or CSR matrix, shape (N, d)
    y : ndarray of int, shape (N,)
    train_idx, excluded
        Partitions, as :func:`~spurious.detectors.aflite.algorithm.sample_partitions`
        returns them (AFLite's round 1 partitions give a paired comparison).
    model : str, estimator or PartitionModel, default="logistic"
    n_classes : int, optional
        Default: ``y.max() + 1``.
    tau : float, default=0.75
    n_shuffles : int, default=1
        Label permutations; the null share per example is the mean over them.
    random_state : int or None, default=0
        Seed of the permutations and the bootstrap.
    p_real : ndarray, optional
        Predictability with the real labels on these partitions, when already known
        (AFLite's round 1); computed otherwise.
    executor : Executor, optional
    chunk_size : int, optional
    n_resamples : int, default=1000
    confidence : float, default=0.95
    n_options : ndarray of int, shape (N,), optional
        Multiple-choice items: the options of each item. The null then draws every
        item's label uniformly among its own options instead of permuting the labels
        (a permuted label could point at an option the item does not have).
    progress : callable, optional
        Called with ``(done, total)`` after each round of partition fits (the real
        labels unless ``p_real`` is given, then each shuffle).

    Returns
    -------
    dict
        ``share``, ``share_null``, ``effect`` (= share - share_null), ``ci_low``,
        ``ci_high`` and ``p`` (per-example predictability with the real labels).

    Examples
    --------
    >>> from spurious.detectors.aflite.algorithm import sample_partitions
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(400, 4)).astype(np.float32)
    >>> y = (X[:, 0] > 0).astype(int)
    >>> parts = sample_partitions(np.arange(400), 100, 8, np.random.default_rng(1))
    >>> out = predictability_beyond_null(X, y, *parts, model="sklearn-logistic")
    >>> out["share"] > 0.8 and out["share_null"] < 0.4 and out["ci_low"] > 0.4
    True
    """
    y = np.asarray(y, dtype=np.int64)
    n = len(y)
    n_classes = int(y.max()) + 1 if n_classes is None else int(n_classes)
    executor = LocalExecutor() if executor is None else executor
    part_model = make_partition_model(model, random_state, sparse=sp.issparse(X))
    chunk = len(train_idx) if chunk_size is None else int(chunk_size)
    t = train_idx.shape[1] if len(train_idx) else 1

    def p_of(labels: np.ndarray) -> np.ndarray:
        shared = {
            "X": X,
            "y": labels,
            "model": part_model,
            "n_classes": n_classes,
            "start": prepare_start(part_model, X, labels, n, t, n_classes, len(train_idx)),
        }
        correct, held = score_partitions(executor, shared, None, train_idx, excluded, chunk)
        return predictability(correct, held)

    def above(p: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            return (np.nan_to_num(p, nan=-1.0) >= tau).astype(float)

    fits, done = int(p_real is None) + int(n_shuffles), 0
    if p_real is None:
        p_real = p_of(y)
        done += 1
        if progress is not None:
            progress(done, fits)
    entropy = 0 if random_state is None else int(random_state)
    rng = np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(2, 0)))
    null = np.zeros(n)
    for _ in range(int(n_shuffles)):
        labels = (
            y[rng.permutation(n)]
            if n_options is None
            else np.floor(rng.random(n) * np.asarray(n_options)).astype(np.int64)
        )
        null += above(p_of(labels))
        done += 1
        if progress is not None:
            progress(done, fits)
    null /= max(int(n_shuffles), 1)
    real = above(np.asarray(p_real, dtype=np.float64))
    est, lo, hi = bootstrap_of_means(
        _difference,
        [real, null],
        n_resamples=n_resamples,
        confidence=confidence,
        random_state=random_state,
    )
    return {
        "share": float(real.mean()),
        "share_null": float(null.mean()),
        "effect": float(est),
        "ci_low": float(lo),
        "ci_high": float(hi),
        "p": np.asarray(p_real, dtype=np.float64),
    }
