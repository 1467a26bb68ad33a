"""Labels within clusters: counts per cluster and label, minority labels, homogeneity.

Plain functions on a cluster-by-label count matrix (paper 002 Sec. 3, footnote 10 and
App. C.4.1); :mod:`~spurious.detectors.minority.clustering` calls them on its clusters.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spurious.exceptions import ParameterError

__all__ = [
    "AUTO_SWITCH_SHARE",
    "MINORITY_SHARE_CUT",
    "RULES",
    "choose_rule",
    "homogeneity_stats",
    "label_counts",
    "minority_labels",
    "purity_null",
]

#: Which labels of a cluster are minority labels: all but the majority (Sec. 3), the
#: least frequent (footnote 10), or ``"auto"``: footnote 10's switch between the two.
RULES = ("auto", "not_majority", "least_frequent")
#: Paper 002 footnote 10: "all but the majority" marking more than 40% of the training
#: set "leaves too few biased instances for training", so the least frequent label is used.
AUTO_SWITCH_SHARE = 0.40
#: Paper 002 App. C.4.1 counts clusters with more than 10% minority-label instances.
MINORITY_SHARE_CUT = 0.10


def label_counts(clusters: Any, labels: Any, n_clusters: int, n_classes: int) -> np.ndarray:
    """Training examples per cluster and label: an ``(n_clusters, n_classes)`` int matrix.

    Examples
    --------
    >>> label_counts([0, 0, 1, 1, 1], [2, 0, 1, 1, 0], 2, 3).tolist()
    [[1, 0, 1], [1, 2, 0]]
    """
    c = np.asarray(clusters, dtype=np.int64)
    y = np.asarray(labels, dtype=np.int64)
    if c.shape != y.shape:
        raise ParameterError(
            f"The 'clusters' and 'labels' arguments must have equal shapes; got {c.shape} and "
            f"{y.shape}."
        )
    flat = np.bincount(c * n_classes + y, minlength=n_clusters * n_classes)
    return flat.reshape(n_clusters, n_classes)


def minority_labels(counts: Any, rule: str = "not_majority") -> np.ndarray:
    """Which labels are minority labels of each cluster: a boolean matrix like ``counts``.

    The majority label of a cluster is the label with the most training examples in it
    (ties: the lower label id). ``"not_majority"`` (paper 002 Sec. 3): every other label
    is a minority label. ``"least_frequent"`` (footnote 10): the label(s) with the fewest
    training examples in the cluster, over all labels of the task (a label absent from
    the cluster counts 0, so its evaluation examples assigned there are minority), never
    the majority label. An empty cluster has no minority label. ``"auto"``: the rule
    :func:`choose_rule` picks (footnote 10's 40% switch).

    Examples
    --------
    >>> counts = [[5, 3, 1], [0, 4, 4], [2, 2, 2]]
    >>> minority_labels(counts).astype(int).tolist()
    [[0, 1, 1], [1, 0, 1], [0, 1, 1]]
    >>> minority_labels(counts, "least_frequent").astype(int).tolist()
    [[0, 0, 1], [1, 0, 0], [0, 1, 1]]
    """
    counts = np.asarray(counts, dtype=np.int64)
    if rule not in RULES:
        raise ParameterError(f"The 'rule' argument must be one of {list(RULES)}; got {rule!r}.")
    if rule == "auto":
        rule = choose_rule(counts)[0]
    k, c = counts.shape
    majority = counts.argmax(axis=1)  # first maximum: ties go to the lower label id
    is_majority = np.zeros((k, c), dtype=bool)
    is_majority[np.arange(k), majority] = True
    if rule == "not_majority":
        out = ~is_majority
    else:
        out = (counts == counts.min(axis=1, keepdims=True)) & ~is_majority
    out[counts.sum(axis=1) == 0] = False
    return out


def homogeneity_stats(counts: Any, cut: float = MINORITY_SHARE_CUT) -> dict[str, float]:
    """Label homogeneity of a clustering (paper 002 App. C.4.1, Fig. 5).

    Returns the mean over non-empty clusters of the majority label's share
    (``mean_majority_share``) and of the rest (``mean_minority_share``), the number of
    clusters whose minority share exceeds ``cut`` (App. C.4.1: "more than 10%"), the
    share of examples in their cluster's majority label (``weighted_majority_share``)
    and, for comparison, the overall majority label's share (``base_majority_share``).

    Examples
    --------
    >>> s = homogeneity_stats([[9, 1], [5, 5], [0, 0]])
    >>> s["mean_majority_share"], s["n_clusters_minority_over_10pct"], s["n_clusters"]
    (0.7, 1.0, 2.0)
    """
    counts = np.asarray(counts, dtype=np.float64)
    sizes = counts.sum(axis=1)
    nonempty = sizes > 0
    share = counts[nonempty].max(axis=1) / sizes[nonempty]
    total = sizes.sum()
    return {
        "n_clusters": float(nonempty.sum()),
        "mean_majority_share": float(share.mean()) if len(share) else float("nan"),
        "mean_minority_share": float(1 - share.mean()) if len(share) else float("nan"),
        "n_clusters_minority_over_10pct": float(((1 - share) > cut).sum()),
        "weighted_majority_share": float(counts[nonempty].max(axis=1).sum() / total)
        if total
        else float("nan"),
        "base_majority_share": float(counts.sum(axis=0).max() / total) if total else float("nan"),
    }


def choose_rule(
    counts: Any, rule: str = "auto", max_share: float = AUTO_SWITCH_SHARE
) -> tuple[str, float]:
    """The minority rule to apply, and the share of training examples "all but the
    majority" would mark (paper 002 footnote 10).

    ``"auto"`` keeps ``"not_majority"`` (Sec. 3) unless it marks more than ``max_share``
    of the training examples, and then uses ``"least_frequent"``, as the paper did for
    ANLI and WANLI ("more than 40% ... leaves too few biased instances for training").
    Any other rule is returned as it is.

    Parameters
    ----------
    counts : array-like of int, shape (n_clusters, n_classes)
        Training examples per cluster and label (:func:`label_counts`).
    rule : {"auto", "not_majority", "least_frequent"}, default="auto"
    max_share : float in [0, 1], default=0.40

    Returns
    -------
    (str, float)
        The rule used and the ``not_majority`` share.

    Examples
    --------
    >>> choose_rule([[6, 2, 2], [1, 7, 2]])     # 7 of 20 marked: 35% <= 40%
    ('not_majority', 0.35)
    >>> choose_rule([[4, 3, 3], [3, 4, 3]])     # 12 of 20: 60% > 40%
    ('least_frequent', 0.6)
    >>> choose_rule([[4, 3, 3]], "not_majority")
    ('not_majority', 0.6)
    """
    counts = np.asarray(counts, dtype=np.int64)
    if rule not in RULES:
        raise ParameterError(f"The 'rule' argument must be one of {list(RULES)}; got {rule!r}.")
    if not 0.0 <= float(max_share) <= 1.0:
        raise ParameterError(f"The 'max_share' argument must be in [0, 1]; got {max_share!r}.")
    total = counts.sum()
    share = float(1.0 - counts.max(axis=1).sum() / total) if total else 0.0
    if rule != "auto":
        return rule, share
    return ("least_frequent" if share > max_share else "not_majority"), share


def purity_null(
    clusters: Any,
    labels: Any,
    n_clusters: int,
    n_classes: int,
    *,
    n_permutations: int = 200,
    random_state: int | None = 0,
) -> dict[str, float]:
    """Cluster purity against labels permuted over the same clusters (a permutation test).

    Purity is the share of examples in their cluster's majority label
    (``weighted_majority_share`` of :func:`homogeneity_stats`). Permuting the labels over
    the fixed clusters keeps the cluster sizes and the label base rates and removes any
    association between the two; the p-value is ``(1 + #{null >= observed}) / (1 + B)``.
    The clusters themselves are held fixed, so the test asks whether the labels are
    concentrated in them, not how they were found (a representation trained on the
    labels makes clusters that follow them, whatever the labels are).

    Returns
    -------
    dict
        ``purity``, ``purity_null_mean``, ``purity_null_q95``, ``purity_excess``
        (purity minus the null mean), ``purity_p_value``, ``n_permutations``.

    Examples
    --------
    >>> clusters = np.repeat([0, 1, 2], 30)
    >>> planted = purity_null(clusters, np.repeat([0, 1, 2], 30), 3, 3, n_permutations=99)
    >>> planted["purity"], planted["purity_p_value"]
    (1.0, 0.01)
    >>> rng = np.random.default_rng(0)
    >>> noise = purity_null(clusters, rng.integers(0, 3, 90), 3, 3, n_permutations=99)
    >>> noise["purity_p_value"] > 0.05
    True
    """
    c = np.asarray(clusters, dtype=np.int64)
    y = np.asarray(labels, dtype=np.int64)
    if int(n_permutations) < 1:
        raise ParameterError(
            f"The 'n_permutations' argument must be an int >= 1; got {n_permutations!r}."
        )

    def purity(lab: np.ndarray) -> float:
        counts = label_counts(c, lab, n_clusters, n_classes)
        return float(counts.max(axis=1).sum() / max(len(lab), 1))

    observed = purity(y)
    rng = np.random.default_rng(random_state)
    null = np.array([purity(rng.permutation(y)) for _ in range(int(n_permutations))])
    return {
        "purity": observed,
        "purity_null_mean": float(null.mean()),
        "purity_null_q95": float(np.quantile(null, 0.95)),
        "purity_excess": float(observed - null.mean()),
        "purity_p_value": float((1 + (null >= observed - 1e-12).sum()) / (1 + len(null))),
        "n_permutations": float(len(null)),
    }
