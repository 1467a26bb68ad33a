"""PECO's biased regions (Fig. 1): which clusters a rule flags, and how many by chance.

:func:`biased_regions` applies :class:`~spurious.detectors.peco.Peco`'s
``region_rule`` (the authors' sum of squares above 0.25, Eq. 11 above a threshold, or a
per-cluster permutation test at the cluster's size) to one clustering, and the same
rule to every label permutation, which says how many clusters it flags when labels and
clusters are independent.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spurious.detectors.peco.divergence import AUTHORS_REGION_THRESHOLD
from spurious.detectors.peco.score import cluster_null_divergences

#: How a cluster becomes a biased region (see :class:`Peco`'s ``region_rule``).
REGION_RULES = ("authors", "eq11", "null")


def biased_regions(
    fit: Any,
    y: np.ndarray,
    k: int,
    n_classes: int,
    seed: int,
    *,
    rule: str,
    region_threshold: float | None,
    alpha: float,
    n_permutations: int,
) -> dict[str, Any]:
    """Biased clusters of ``fit`` by ``rule``, and what the rule flags by chance.

    ``rule``, ``region_threshold`` and ``alpha`` are :class:`Peco`'s ``region_rule``,
    ``region_threshold`` and ``region_alpha``.

    Every cluster's Eq. 11 divergence is compared with its own permutation null (the
    labels shuffled, the cluster's size kept): the ``"null"`` rule flags on that
    p-value; every rule is also applied to each permutation, which gives the number
    of clusters (and share of examples) it flags when labels and clusters are
    independent.
    """
    s = fit.divergences["l2"]
    sizes = fit.counts.sum(axis=1)
    null = cluster_null_divergences(
        fit.clusters, y, k, n_classes, n_permutations=n_permutations, random_state=seed
    )
    n_perm = null.shape[0]
    # A tolerance: the observed and the permuted divergences are computed apart.
    p_values = (1 + (null >= s - 1e-12).sum(axis=0)) / (1 + n_perm)
    out: dict[str, Any] = {"cluster_p_values": p_values}
    if rule == "null":
        biased = p_values <= alpha
        # Each permutation judged against the others (leave-one-out p-values).
        ranked = np.sort(null, axis=0)
        at_least = np.stack(
            [n_perm - np.searchsorted(ranked[:, i], null[:, i], side="left") for i in range(k)],
            axis=1,
        )
        null_flags = at_least / n_perm <= alpha
    else:
        n_present = max(int((np.bincount(y, minlength=n_classes) > 0).sum()), 1)
        if rule == "authors":
            t = AUTHORS_REGION_THRESHOLD if region_threshold is None else region_threshold
            threshold = t / n_present  # a sum of squares on Eq. 11's mean-square scale
        else:
            threshold = 0.2**2 / n_present if region_threshold is None else region_threshold
        biased = s > threshold
        null_flags = null > threshold
        out["region_threshold"] = float(threshold)
    out["biased"] = biased
    out["n_biased_clusters_null"] = float(null_flags.sum(axis=1).mean())
    out["share_in_biased_regions_null"] = float((null_flags @ sizes).mean() / sizes.sum())
    return out
