"""The PECO score: cluster label distributions, divergences and the area (paper 003 Sec. 3.2).

Notation of the paper: ``k`` clusters of the elicited-sentence embeddings, ``p_i`` the
label distribution in cluster ``i``, ``p_G`` the global one, ``s_i`` the divergence of
cluster ``i`` (Eq. 11), and

.. math:: \\mathrm{PECO} = 100 \\int_{\\min s}^{\\max s} \\frac{\\#\\{i: s_i > t\\}}{k}\\,dt
   \\qquad (12)

Computed exactly: between consecutive sorted divergences the count is constant, so the
integral is a finite sum, and it equals ``100 * (mean(s) - min(s))`` (the layer-cake
identity ``\\int_0^\\infty P(S > t) dt = E[S]`` cut at ``min(s)``). The authors'
public code (michaelsaxon/DatasetAnalysis, behind Table 5) scores differently:
``integral="reference"`` reproduces it (:func:`reference_divergences`: L2 as a sum of
squares without Eq. 11's ``1/C``, ``KL(p_G || p_i)`` in bits; a 20-step curve from 0
on thresholds 0.05 apart for L2 and 0.25 apart for KL); see :func:`peco_area` and
``docs/methods/peco.md``.

Everything here is NumPy on small arrays (``k x C`` counts); the clustering itself is
scikit-learn (:func:`reduce_dimensions`, :func:`kmeans_clusters`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.special import rel_entr

from spurious.exceptions import ParameterError

__all__ = [
    "DIVERGENCES",
    "INTEGRALS",
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

#: Divergences of a cluster's label distribution from the global one.
DIVERGENCES = ("l2", "kl")
#: ``eq12``: Eq. 12 exactly, from min(s) to max(s); ``reference``: the 20-step curve from 0.
INTEGRALS = ("eq12", "reference")
#: Steps of the reference curve (the authors' ``peco_score``: ``n_steps=20``).
REFERENCE_STEPS = 20
#: Range of the reference curve's thresholds per divergence (the authors' ``scale``): L2
#: thresholds 0, 0.05, ..., 0.95; KL thresholds 0, 0.25, ..., 4.75 (bits).
REFERENCE_SCALE = {"l2": 1.0, "kl": 5.0}
#: How Table 5 prints the reference area: L2 x 100, KLD "in the [0, 1] range" (x 1).
REFERENCE_FACTOR = {"l2": 100.0, "kl": 1.0}
#: The authors add this to every probability before the log (a label absent from a
#: cluster gives a large, finite KL instead of infinity).
REFERENCE_EPS = 1e-30
#: The authors' biased-cluster rule: a sum of squared deviations above 0.25
#: (``threshold_score(clusters_L2, .25)``; Fig. 8's "PECO_L2 > 0.25").
AUTHORS_REGION_THRESHOLD = 0.25
#: Examples per cluster the ``"auto"`` rule aims at (paper: SNLI's ~10k test, k = 50).
EXAMPLES_PER_CLUSTER = 200


# =======================================================================================
# Divergences and the area
# =======================================================================================
def label_counts(
    clusters: np.ndarray, labels: np.ndarray, n_clusters: int, n_classes: int
) -> np.ndarray:
    """``(n_clusters, n_classes)`` counts of each label in each cluster.

    Examples
    --------
    >>> label_counts(np.array([0, 0, 1]), np.array([1, 1, 0]), 2, 2).tolist()
    [[0, 2], [1, 0]]
    """
    flat = np.asarray(clusters, dtype=np.int64) * n_classes + np.asarray(labels, dtype=np.int64)
    return np.bincount(flat, minlength=n_clusters * n_classes).reshape(n_clusters, n_classes)


def cluster_divergences(counts: np.ndarray, divergence: str = "l2") -> np.ndarray:
    """Divergence ``s_i`` of every non-empty cluster's label distribution from the global one.

    ``"l2"`` is Eq. 11 for any number of classes ``C``:
    ``s_i = (1/C) * sum_j (P(Y=j) - P(Y=j | cluster=i))**2``; ``"kl"`` is
    ``KL(p_i || p_G)`` in nats (finite: every label of a cluster occurs globally). Classes
    that never occur are left out (``C`` counts the classes present), so a label name
    without examples does not dilute the score. Empty clusters (possible in a bootstrap
    resample) are dropped.

    Parameters
    ----------
    counts : ndarray of shape (k, C)
        :func:`label_counts`.
    divergence : {"l2", "kl"}

    Returns
    -------
    ndarray of shape (k',)
        One divergence per non-empty cluster, in cluster order.

    Examples
    --------
    A pure cluster against a uniform 3-class global distribution:
    ``((2/3)**2 + 2 * (1/3)**2) / 3 = 2/9``.

    >>> counts = np.array([[3, 0, 0], [0, 3, 0], [0, 0, 3]])
    >>> cluster_divergences(counts, "l2").round(4).tolist()
    [0.2222, 0.2222, 0.2222]
    >>> cluster_divergences(counts, "kl").round(4).tolist()  # log 3
    [1.0986, 1.0986, 1.0986]
    """
    if divergence not in DIVERGENCES:
        raise ParameterError(
            f"The 'divergence' argument must be one of {list(DIVERGENCES)}; got {divergence!r}."
        )
    p, p_global = _distributions(counts)
    if len(p) == 0:
        return np.zeros(0)
    if divergence == "l2":
        return ((p - p_global) ** 2).mean(axis=1)
    return rel_entr(p, p_global).sum(axis=1)


def reference_divergences(counts: np.ndarray, divergence: str = "l2") -> np.ndarray:
    """Cluster divergences as the authors' public code computes them (Table 5's inputs).

    ``"l2"``: ``sum_j (p_G[j] - p_i[j])**2``, Eq. 11 *without* its ``1/C`` (so ``C``
    times :func:`cluster_divergences`' L2). ``"kl"``: ``KL(p_G || p_i)`` in bits, i.e.
    ``sum_j p_G[j] * (log2(p_G[j] + eps) - log2(p_i[j] + eps))`` with ``eps = 1e-30``
    (the global distribution first, unlike :func:`cluster_divergences`' ``KL(p_i || p_G)``
    in nats; a label missing from a cluster gives a large finite value). Classes that
    never occur and empty clusters are left out, as in :func:`cluster_divergences`.

    Examples
    --------
    >>> counts = np.array([[3, 0, 0], [0, 3, 0], [0, 0, 3]])
    >>> reference_divergences(counts, "l2").round(4).tolist()  # (2/3)**2 + 2 * (1/3)**2
    [0.6667, 0.6667, 0.6667]
    >>> bool(reference_divergences(counts, "kl")[0] > 30)  # two labels missing: ~ 2/3 * 100
    True
    >>> reference_divergences(np.array([[2, 2], [1, 1]]), "kl").round(6).tolist()
    [0.0, 0.0]
    """
    if divergence not in DIVERGENCES:
        raise ParameterError(
            f"The 'divergence' argument must be one of {list(DIVERGENCES)}; got {divergence!r}."
        )
    p, p_global = _distributions(counts)
    if len(p) == 0:
        return np.zeros(0)
    if divergence == "l2":
        return ((p_global - p) ** 2).sum(axis=1)
    log_ratio = np.log2(p_global + REFERENCE_EPS) - np.log2(p + REFERENCE_EPS)
    return (p_global * log_ratio).sum(axis=1)


def _distributions(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Label distributions of the non-empty clusters and the global one (present classes)."""
    counts = np.asarray(counts, dtype=float)
    counts = counts[:, counts.sum(axis=0) > 0]
    counts = counts[counts.sum(axis=1) > 0]
    if counts.shape[0] == 0:
        return np.zeros((0, counts.shape[1])), np.zeros(counts.shape[1])
    return counts / counts.sum(axis=1, keepdims=True), counts.sum(axis=0) / counts.sum()


def peco_from_counts(counts: np.ndarray, divergence: str = "l2", integral: str = "eq12") -> float:
    """The PECO score of one clustering's label counts.

    ``integral="eq12"``: :func:`cluster_divergences` integrated exactly (Eq. 12);
    ``"reference"``: the authors' computation, :func:`reference_divergences` on their
    20-step curve (Table 5's scale).

    Examples
    --------
    >>> counts = np.array([[8, 2], [2, 8], [5, 5]])
    >>> round(peco_from_counts(counts), 4)  # 100 * (mean(s) - min(s)), s = (.09, .09, 0)
    6.0
    >>> # s = (.18, .18, 0): 2 of 3 clusters above t = 0, 0.05, 0.10, 0.15; none above 0.20
    >>> round(peco_from_counts(counts, "l2", "reference"), 4)  # 100 * 4 * (2/3) / 20
    13.3333
    """
    if integral == "reference":
        return peco_area(reference_divergences(counts, divergence), integral, divergence=divergence)
    return peco_area(cluster_divergences(counts, divergence), integral, divergence=divergence)


def peco_curve(divergences: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Fraction of clusters whose divergence exceeds each threshold (Fig. 4 d).

    Examples
    --------
    >>> peco_curve(np.array([0.1, 0.2, 0.3]), np.array([0.0, 0.15, 0.3])).tolist()
    [1.0, 0.6666666666666666, 0.0]
    """
    s = np.sort(np.asarray(divergences, dtype=float))
    t = np.asarray(thresholds, dtype=float)
    if len(s) == 0:
        return np.zeros(len(t))
    return (len(s) - np.searchsorted(s, t, side="right")) / len(s)


def peco_area(
    divergences: np.ndarray,
    integral: str = "eq12",
    *,
    divergence: str = "l2",
    steps: int = REFERENCE_STEPS,
) -> float:
    """The PECO score of a set of cluster divergences.

    ``integral="eq12"`` (default) integrates Eq. 12 exactly from ``min(s)`` to ``max(s)``
    and scales by 100: with the divergences sorted, ``s_(1) <= ... <= s_(k)``, the count
    above ``t`` is ``k - j`` on ``[s_(j), s_(j+1))``, so the area is
    ``sum_j (s_(j+1) - s_(j)) * (k - j) / k``, which equals ``mean(s) - min(s)``.

    ``integral="reference"`` is the authors' curve (their ``peco_score``): the fraction of
    clusters above each of ``steps`` thresholds ``0, scale/steps, ..., (steps-1)*scale/steps``,
    averaged, with ``scale`` 1 for L2 (thresholds 0.05 apart) and 5 for KL (0.25 apart,
    in bits), and printed as Table 5 prints it: L2 x 100, KL as a fraction in [0, 1]. It
    is a left Riemann sum of the curve from 0 (not from ``min(s)``), so it is at least
    ``1/steps`` of the full scale (5.0 for L2, 0.05 for KL: Table 5's floor) whenever
    every cluster diverges at all. Feed it :func:`reference_divergences` to get the
    authors' numbers.

    Parameters
    ----------
    divergences : array-like of float
        ``s_i``, one per cluster.
    integral : {"eq12", "reference"}
    divergence : {"l2", "kl"}, default="l2"
        Which divergence ``divergences`` are (sets the reference curve's thresholds and
        scale; unused by ``"eq12"``).
    steps : int, default=20
        Thresholds of the reference curve.

    Returns
    -------
    float
        ``nan`` for no clusters.

    Examples
    --------
    >>> s = np.array([0.01, 0.03, 0.07])
    >>> round(peco_area(s), 6), round(float(100 * (s.mean() - s.min())), 6)
    (2.666667, 2.666667)
    >>> round(peco_area(s, "reference"), 6)  # 100 * (1 + 1/3) / 20
    6.666667
    >>> # KL thresholds 0, 0.25, ..., 4.75: 3 clusters above 0, 2 above 0.25, 1 above 0.5-1.75
    >>> round(peco_area(np.array([0.1, 0.3, 2.0]), "reference", divergence="kl"), 4)
    0.1833
    """
    if integral not in INTEGRALS:
        raise ParameterError(
            f"The 'integral' argument must be one of {list(INTEGRALS)}; got {integral!r}."
        )
    s = np.sort(np.asarray(divergences, dtype=float))
    k = len(s)
    if k == 0:
        return float("nan")
    if integral == "reference":
        thresholds = np.arange(steps) / steps * REFERENCE_SCALE[divergence]
        return float(REFERENCE_FACTOR[divergence] * peco_curve(s, thresholds).mean())
    above = (k - np.arange(1, k)) / k  # clusters above t on [s_(j), s_(j+1)), j = 1..k-1
    return float(100.0 * np.sum(np.diff(s) * above))


# =======================================================================================
# Representation and clustering (scikit-learn)
# =======================================================================================
def reduce_dimensions(X: Any, n_components: int | None, random_state: int = 0) -> np.ndarray:
    """PCA to ``n_components`` (``None``: keep every dimension), as a dense float array.

    Sparse input (tf-idf, bag of words) goes through ``TruncatedSVD``, which is PCA
    without centring (centring would densify the matrix). ``n_components`` above what
    the data supports is capped.

    Examples
    --------
    >>> X = np.random.default_rng(0).normal(size=(50, 8))
    >>> reduce_dimensions(X, 3).shape, reduce_dimensions(X, None).shape
    ((50, 3), (50, 8))
    """
    from sklearn.decomposition import PCA, TruncatedSVD

    is_sparse = sparse.issparse(X)
    n, d = X.shape
    if n_components is None:
        if is_sparse:
            return np.asarray(X.toarray(), dtype=np.float32) if d <= 4096 else X
        return np.asarray(X, dtype=np.float32)
    if is_sparse:
        k = min(n_components, d - 1, n - 1)
        if k < 1:
            return np.asarray(X.toarray(), dtype=np.float32)
        svd = TruncatedSVD(n_components=k, random_state=random_state)
        return svd.fit_transform(X).astype(np.float32)
    k = min(n_components, d, n)
    if k >= d:
        return np.asarray(X, dtype=np.float32)
    return PCA(n_components=k, random_state=random_state).fit_transform(X).astype(np.float32)


def kmeans_clusters(Z: Any, n_clusters: int, random_state: int = 0) -> np.ndarray:
    """k-means cluster of every row (scikit-learn ``KMeans``, k-means++, seeded).

    Examples
    --------
    >>> Z = np.r_[np.zeros((5, 2)), np.ones((5, 2)) * 10]
    >>> c = kmeans_clusters(Z, 2)
    >>> len(set(c[:5])), len(set(c[5:])), bool(c[0] != c[5])
    (1, 1, True)
    """
    from sklearn.cluster import KMeans

    n = Z.shape[0]
    if not 1 <= n_clusters <= n:
        raise ParameterError(
            f"The 'n_clusters' parameter must be between 1 and the number of examples ({n}); "
            f"got {n_clusters}."
        )
    km = KMeans(n_clusters=n_clusters, n_init=1, random_state=random_state)
    return km.fit_predict(Z).astype(np.int64)


def auto_n_clusters(n: int) -> int:
    """k for ``n`` examples: about 200 per cluster, between 10 and 100 (App. C advice).

    The paper used k = 50 on SNLI's ~10k test examples and saw small test sets (ANLI
    rounds, OCNLI: 1-3k) swing at high k; 200 examples per cluster keeps the shuffled
    baseline of Eq. 11 near ``(C-1)/(C * 200)`` per class whatever the data size.

    Examples
    --------
    >>> auto_n_clusters(9824), auto_n_clusters(1000), auto_n_clusters(200_000)
    (49, 10, 100)
    """
    return int(np.clip(round(n / EXAMPLES_PER_CLUSTER), 10, 100))


# =======================================================================================
# One fit, its uncertainty
# =======================================================================================
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
) -> NullDistribution:
    """PECO with the labels shuffled over the examples, clusters kept: the null baseline.

    The clustering never sees the labels, so shuffling the labels against fixed
    clusterings is an exact permutation test of "labels independent of clusters": what
    small clusters score by chance alone. Each permutation is scored under every
    clustering (k-means seed), so each seed has its own null (``per_clustering``) and the
    mean over seeds has one too (``scores``).

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
    for _ in range(n_permutations):
        one = _scores_per_clustering(
            clusterings, rng.permutation(labels), None, n_clusters, n_classes, integral, sorted_sum
        )
        for d in DIVERGENCES:
            rows[d].append(one[d])
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
) -> dict[str, np.ndarray]:
    """PECO under every clustering on bootstrap resamples of the examples.

    The clusterings stay fixed (k-means is not re-run per replicate), so the spread is
    the label sampling noise of the cluster distributions. Every replicate uses the same
    resample for every clustering. Resampling makes the cluster label shares noisier,
    which shifts the divergences up; :func:`seed_bootstrap_interval` keeps the spread and drops
    that shift.

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
    for _ in range(n_bootstrap):
        idx = rng.integers(0, n, size=n)
        one = _scores_per_clustering(clusterings, labels[idx], idx, n_clusters, n_classes, integral)
        for d in DIVERGENCES:
            out[d].append(one[d])
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


# =======================================================================================
# App. C: the sweep
# =======================================================================================
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
