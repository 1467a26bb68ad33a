"""Labels within clusters: counts per cluster and label, minority labels, homogeneity.

Plain functions on a cluster-by-label count matrix (paper 002 Sec. 3, footnote 10 and
App. C.4.1); :mod:`~spurious.detectors.minority.clustering` calls them on its clusters.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spurious.exceptions import ParameterError

__all__ = ["MINORITY_SHARE_CUT", "RULES", "homogeneity_stats", "label_counts", "minority_labels"]

#: Which labels of a cluster are minority labels: all but the majority (Sec. 3), or the
#: least frequent (footnote 10).
RULES = ("not_majority", "least_frequent")
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
    the majority label. An empty cluster has no minority label.

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
