"""PECO's divergences and area: cluster label distributions, Eq. 11 and Eq. 12 (paper 003).

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

Everything here is NumPy on small arrays (``k x C`` counts); the clustering is in
:mod:`~spurious.detectors.peco.clusters`, one fit and its uncertainty in
:mod:`~spurious.detectors.peco.score`.
"""

from __future__ import annotations

import numpy as np
from scipy.special import rel_entr

from spurious.exceptions import ParameterError

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
