"""The PECO score of one clustering and its uncertainty (paper 003 Sec. 3.2, App. C).

:func:`fit_peco` clusters the reduced embeddings and scores both divergences
(:class:`PecoFit`); the shuffled baseline (:func:`permutation_scores`,
:class:`NullDistribution`; per cluster, :func:`cluster_null_divergences`), the bootstrap
over examples (:func:`bootstrap_scores`) and the interval over seeds and bootstrap
(:func:`seed_bootstrap_interval`) give its uncertainty; :func:`sweep` is App. C's
k x |PC| x divergence table.

The divergences and the area (Eq. 11-12, the authors' reference curve) are in
:mod:`~spurious.detectors.peco.divergence`, the PCA and k-means in
:mod:`~spurious.detectors.peco.clusters`; their names are importable from here too, as
they were when this module held them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from spurious.detectors.peco.clusters import (
    EXAMPLES_PER_CLUSTER,
    auto_n_clusters,
    kmeans_clusters,
    reduce_dimensions,
)
from spurious.detectors.peco.divergence import (
    AUTHORS_REGION_THRESHOLD,
    DIVERGENCES,
    INTEGRALS,
    REFERENCE_EPS,
    REFERENCE_FACTOR,
    REFERENCE_SCALE,
    REFERENCE_STEPS,
    cluster_divergences,
    label_counts,
    peco_area,
    peco_curve,
    peco_from_counts,
    reference_divergences,
)
from spurious.exceptions import ParameterError

__all__ = [
    "AUTHORS_REGION_THRESHOLD",
    "DIVERGENCES",
    "EXAMPLES_PER_CLUSTER",
    "INTEGRALS",
    "REFERENCE_EPS",
    "REFERENCE_FACTOR",
    "REFERENCE_SCALE",
    "REFERENCE_STEPS",
    "NullDistribution",
    "PecoFit",
    "auto_n_clusters",
    "bootstrap_scores",
    "cluster_divergences",
    "cluster_null_divergences",
    "fit_peco",
    "kmeans_clusters",
    "label_counts",
    "peco_area",
    "peco_curve",
    "peco_from_counts",
    "permutation_scores",
    "reduce_dimensions",
    "reference_divergences",
    "seed_bootstrap_interval",
    "sweep",
]


@dataclass
class PecoFit:
    """One clustering and its scores.

    Attributes
    ----------
    clusters : ndarray of int, shape (n,)
    counts : ndarray of int, shape (k, C)
        Labels per cluster.
    divergences : dict
        ``{"l2": s, "kl": s}`` (Eq. 11 and ``KL(p_i || p_G)``), one value per cluster
        (all clusters are non-empty).
    scores : dict
        ``{"l2": PECO, "kl": PECO}`` with the chosen integral.
    """

    clusters: np.ndarray
    counts: np.ndarray
    divergences: dict[str, np.ndarray]
    scores: dict[str, float]


def fit_peco(
    Z: Any,
    labels: np.ndarray,
    n_clusters: int,
    n_classes: int,
    *,
    integral: str = "eq12",
    random_state: int = 0,
) -> PecoFit:
    """Cluster the (reduced) embeddings and score both divergences.

    Examples
    --------
    Two label-pure blobs: each cluster holds one label, the maximal divergence.

    >>> rng = np.random.default_rng(0)
    >>> Z = np.r_[rng.normal(0, 0.1, (20, 2)), rng.normal(5, 0.1, (20, 2))]
    >>> fit = fit_peco(Z, np.repeat([0, 1], 20), 2, 2)
    >>> fit.divergences["l2"].round(3).tolist(), fit.scores["l2"]
    ([0.25, 0.25], 0.0)
    """
    clusters = kmeans_clusters(Z, n_clusters, random_state)
    counts = label_counts(clusters, labels, n_clusters, n_classes)
    divs = {d: cluster_divergences(counts, d) for d in DIVERGENCES}
    scores = {d: peco_from_counts(counts, d, integral) for d in DIVERGENCES}
    return PecoFit(clusters=clusters, counts=counts, divergences=divs, scores=scores)


@dataclass
class NullDistribution:
    """PECO under shuffled labels (:func:`permutation_scores`).

    Attributes
    ----------
    per_clustering : dict
        ``{"l2": a, "kl": a}``, ``a`` of shape ``(n_permutations, n_clusterings)``: the
        score of each permutation under each clustering (k-means seed).
    mean_sorted : dict
        ``{"l2": s, "kl": s}``: the sorted cluster divergences (Eq. 11, KL) averaged over
        permutations and clusterings (expected order statistics), to draw the null curve.
    """

    per_clustering: dict[str, np.ndarray]
    mean_sorted: dict[str, np.ndarray]

    @property
    def scores(self) -> dict[str, np.ndarray]:
        """One score per permutation, the mean over the clusterings (as the observed one)."""
        return {d: v.mean(axis=1) for d, v in self.per_clustering.items()}


def _scores_per_clustering(
    clusterings: list[np.ndarray],
    labels: np.ndarray,
    rows: np.ndarray | None,
    n_clusters: int,
    n_classes: int,
    integral: str,
    sorted_sum: dict[str, np.ndarray] | None = None,
) -> dict[str, np.ndarray]:
    """PECO under each clustering, for one relabelling / resample of the examples."""
    out = {d: np.empty(len(clusterings)) for d in DIVERGENCES}
    for i, clusters in enumerate(clusterings):
        c = clusters if rows is None else clusters[rows]
        counts = label_counts(c, labels, n_clusters, n_classes)
        for d in DIVERGENCES:
            out[d][i] = peco_from_counts(counts, d, integral)
            if sorted_sum is not None:
                s = np.sort(cluster_divergences(counts, d))
                if len(s) == n_clusters:
                    sorted_sum[d] = sorted_sum[d] + s if d in sorted_sum else s.copy()
    return out


def permutation_scores(
    clusterings: list[np.ndarray],
    labels: np.ndarray,
    n_clusters: int,
    n_classes: int,
    *,
    n_permutations: int,
    random_state: int = 0,
    integral: str = "eq12",
    progress: Callable[[int, int], None] | None = None,
) -> NullDistribution:
    """PECO with the labels shuffled over the examples, clusters kept: the null baseline.

    The clustering never sees the labels, so shuffling the labels against fixed
    clusterings is an exact permutation test of "labels independent of clusters": what
    small clusters score by chance alone. Each permutation is scored under every
    clustering (k-means seed), so each seed has its own null (``per_clustering``) and the
    mean over seeds has one too (``scores``).
    ``progress``, if given, is called with ``(done, n_permutations)`` after each permutation.

    Examples
    --------
    >>> c = np.repeat(np.arange(10), 30)
    >>> null = permutation_scores([c], c % 3, 10, 3, n_permutations=50)
    >>> bool(null.scores["l2"].mean() < 1.0), null.mean_sorted["l2"].shape
    (True, (10,))
    >>> null.per_clustering["l2"].shape
    (50, 1)
    """
    rng = np.random.default_rng(random_state)
    labels = np.asarray(labels)
    rows: dict[str, list[np.ndarray]] = {d: [] for d in DIVERGENCES}
    sorted_sum: dict[str, np.ndarray] = {}
    for i in range(n_permutations):
        one = _scores_per_clustering(
            clusterings, rng.permutation(labels), None, n_clusters, n_classes, integral, sorted_sum
        )
        for d in DIVERGENCES:
            rows[d].append(one[d])
        if progress is not None:
            progress(i + 1, n_permutations)
    n_sum = max(n_permutations * len(clusterings), 1)
    shape = (0, len(clusterings))
    return NullDistribution(
        per_clustering={
            d: np.asarray(v).reshape(-1, len(clusterings)) if v else np.zeros(shape)
            for d, v in rows.items()
        },
        mean_sorted={d: v / n_sum for d, v in sorted_sum.items()},
    )


def cluster_null_divergences(
    clusters: np.ndarray,
    labels: np.ndarray,
    n_clusters: int,
    n_classes: int,
    *,
    n_permutations: int,
    random_state: int = 0,
) -> np.ndarray:
    """Eq. 11 divergence of every cluster under shuffled labels, cluster sizes kept.

    Row ``j`` holds each cluster's L2 divergence (Eq. 11) after the ``j``-th permutation
    of the labels: the null of each cluster *at its own size*, which the null-calibrated
    biased-region rule compares the observed divergence with.

    Returns
    -------
    ndarray of shape (n_permutations, n_clusters)
        ``nan`` for empty clusters.

    Examples
    --------
    >>> c = np.repeat([0, 1], [20, 200])
    >>> null = cluster_null_divergences(c, np.arange(220) % 2, 2, 2, n_permutations=200)
    >>> bool(null[:, 0].mean() > 3 * null[:, 1].mean())  # a small cluster diverges more
    True
    """
    rng = np.random.default_rng(random_state)
    labels = np.asarray(labels)
    clusters = np.asarray(clusters)
    present = np.bincount(labels, minlength=n_classes) > 0
    p_global = np.bincount(labels, minlength=n_classes)[present] / len(labels)
    sizes = np.bincount(clusters, minlength=n_clusters).astype(float)
    out = np.empty((n_permutations, n_clusters))
    with np.errstate(invalid="ignore", divide="ignore"):
        for j in range(n_permutations):
            counts = label_counts(clusters, rng.permutation(labels), n_clusters, n_classes)
            p = counts[:, present] / sizes[:, None]
            out[j] = ((p - p_global) ** 2).mean(axis=1)
    return out


def bootstrap_scores(
    clusterings: list[np.ndarray],
    labels: np.ndarray,
    n_clusters: int,
    n_classes: int,
    *,
    n_bootstrap: int,
    random_state: int = 0,
    integral: str = "eq12",
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, np.ndarray]:
    """PECO under every clustering on bootstrap resamples of the examples.

    The clusterings stay fixed (k-means is not re-run per replicate), so the spread is
    the label sampling noise of the cluster distributions. Every replicate uses the same
    resample for every clustering. Resampling makes the cluster label shares noisier,
    which shifts the divergences up; :func:`seed_bootstrap_interval` keeps the spread and drops
    that shift. ``progress``, if given, is called with ``(done, n_bootstrap)`` after each
    replicate.

    Returns
    -------
    dict
        ``{"l2": a, "kl": a}``, ``a`` of shape ``(n_bootstrap, n_clusterings)``.

    Examples
    --------
    >>> c = np.repeat(np.arange(4), 25)
    >>> reps = bootstrap_scores([c, c[::-1]], c % 2, 4, 2, n_bootstrap=20)
    >>> reps["l2"].shape
    (20, 2)
    """
    rng = np.random.default_rng(random_state)
    labels = np.asarray(labels)
    n = len(labels)
    out: dict[str, list[np.ndarray]] = {d: [] for d in DIVERGENCES}
    for i in range(n_bootstrap):
        idx = rng.integers(0, n, size=n)
        one = _scores_per_clustering(clusterings, labels[idx], idx, n_clusters, n_classes, integral)
        for d in DIVERGENCES:
            out[d].append(one[d])
        if progress is not None:
            progress(i + 1, n_bootstrap)
    return {d: np.asarray(v).reshape(-1, len(clusterings)) for d, v in out.items()}


def seed_bootstrap_interval(
    seed_values: np.ndarray, replicates: np.ndarray, confidence: float
) -> tuple[float, float]:
    """Interval of a per-seed statistic that covers both k-means seeds and sampling.

    Each seed ``s`` has its own value ``v_s`` (its score, or its excess over the mean of
    its own permutation null) and its own bootstrap replicates ``T*_bs`` of the score.
    The replicates' deviations from their seed's bootstrap median,
    ``T*_bs - median_b T*_bs``, carry the sampling spread without the upward shift that
    resampling gives a divergence (a resample's cluster shares are noisier than the
    sample's); added to ``v_s`` they give ``n_bootstrap x n_seeds`` draws of "the value
    of one k-means run on another sample", whose quantiles are the interval. The seeds'
    spread enters as the mixture over ``v_s``. Centring each seed on its own median puts
    the interval around the seeds' values, so it contains their mean (the reported
    estimate) unless the seeds disagree wildly, which the basic (reverse-percentile)
    interval used before did not on small sets (see ``docs/methods/peco.md``).

    Parameters
    ----------
    seed_values : ndarray of shape (n_seeds,)
    replicates : ndarray of shape (n_bootstrap, n_seeds)
        :func:`bootstrap_scores` of one divergence.
    confidence : float
        In (0, 1]; 1 gives the range of the draws.

    Examples
    --------
    >>> reps = np.array([[1.1, 2.1], [1.3, 2.3], [1.2, 2.2]])  # medians 1.2 and 2.2
    >>> seed_bootstrap_interval(np.array([0.5, 0.7]), reps, 1.0)
    (0.4, 0.8)
    """
    values = np.asarray(seed_values, dtype=float)
    reps = np.asarray(replicates, dtype=float)
    if reps.ndim != 2 or reps.shape[1] != len(values):
        raise ParameterError(
            f"'replicates' must have shape (n_bootstrap, {len(values)}) to match "
            f"'seed_values'; got {reps.shape}."
        )
    draws = values[None, :] + (reps - np.median(reps, axis=0, keepdims=True))
    alpha = 1.0 - confidence
    lo, hi = np.quantile(draws.ravel(), [alpha / 2, 1 - alpha / 2])
    return round(float(lo), 12), round(float(hi), 12)


def sweep(
    X: Any,
    labels: np.ndarray,
    n_classes: int,
    *,
    ks: tuple[int, ...] = (10, 25, 50, 100),
    components: tuple[int | None, ...] = (None, 50, 100),
    integral: str = "eq12",
    n_seeds: int = 3,
    n_permutations: int = 20,
    random_state: int = 0,
    progress: Any = None,
) -> pd.DataFrame:
    """PECO for every ``k`` x ``|PC|`` x divergence, with the shuffled baseline (Table 5).

    Every cell is the mean over ``n_seeds`` k-means runs (seeds ``random_state, ...``,
    one initialisation each, as in the main score): one run per cell is too noisy to
    read a trend off the table. The shuffled baseline of a cell scores each permutation
    under every seed's clustering and averages, like the observed score.

    Parameters
    ----------
    X : array or sparse matrix of shape (n, d)
        Embeddings of the elicited sentences, rows in a fixed (canonical) order.
    labels : ndarray of int
    ks, components : tuples
        Cluster counts and PCA sizes (``None``: no PCA); ``k`` above ``n`` is skipped.
    integral : {"eq12", "reference"}
        The score of ``peco``; ``reference`` is always reported beside it.
    n_seeds : int, default=3
        k-means seeds per cell.
    progress : callable, optional
        Called with ``(done, total)`` after each cell.

    Returns
    -------
    pandas.DataFrame
        Columns ``k``, ``n_components`` (``"none"`` or the number), ``divergence``,
        ``peco`` (mean over seeds), ``peco_seed_sd``, ``peco_seed_min``,
        ``peco_seed_max``, ``baseline``, ``excess``, ``reference`` (the authors'
        computation on the same clusters, Table 5's scale, mean over seeds),
        ``reference_seed_sd`` and ``n_seeds``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 6)); y = (X[:, 0] > 0).astype(int)
    >>> t = sweep(X, y, 2, ks=(5, 10), components=(None, 3), n_permutations=5, n_seeds=2)
    >>> t.shape, sorted(t["divergence"].unique())
    ((8, 12), ['kl', 'l2'])
    """
    rows = []
    n = X.shape[0]
    ks = tuple(k for k in ks if k <= n)
    total, done = len(ks) * len(components), 0
    seeds = [random_state + i for i in range(n_seeds)]
    for pc in components:
        Z = reduce_dimensions(X, pc, random_state)
        for k in ks:
            fits = [
                fit_peco(Z, labels, k, n_classes, integral=integral, random_state=s) for s in seeds
            ]
            null = permutation_scores(
                [f.clusters for f in fits],
                labels,
                k,
                n_classes,
                n_permutations=n_permutations,
                random_state=random_state,
                integral=integral,
            )
            for d in DIVERGENCES:
                per_seed = np.array([f.scores[d] for f in fits])
                ref = np.array([peco_from_counts(f.counts, d, "reference") for f in fits])
                base = float(null.scores[d].mean()) if n_permutations else float("nan")
                sd = float(per_seed.std(ddof=1)) if len(fits) > 1 else 0.0
                rows.append(
                    {
                        "k": k,
                        "n_components": "none" if pc is None else str(pc),
                        "divergence": d,
                        "peco": float(per_seed.mean()),
                        "peco_seed_sd": sd,
                        "peco_seed_min": float(per_seed.min()),
                        "peco_seed_max": float(per_seed.max()),
                        "baseline": base,
                        "excess": float(per_seed.mean()) - base,
                        "reference": float(ref.mean()),
                        "reference_seed_sd": float(ref.std(ddof=1)) if len(fits) > 1 else 0.0,
                        "n_seeds": len(fits),
                    }
                )
            done += 1
            if progress is not None:
                progress(done, total)
    return pd.DataFrame(rows)
