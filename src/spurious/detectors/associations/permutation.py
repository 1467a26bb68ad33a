"""The permutation test of the associations: random tables and their mutual information.

Under a random permutation of the labels with the bins fixed, the bin x label table is
a random table with the same margins; :func:`permuted_tables` draws such tables
directly (multivariate hypergeometric, bin by bin) and :func:`mutual_information`
gives I(bin; y) in bits of one table or of a stack of them.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def permuted_tables(
    bin_sizes: np.ndarray, label_counts: np.ndarray, n_permutations: int, random_state: Any
) -> np.ndarray:
    """Bin x label tables of ``n_permutations`` random permutations of the labels.

    Permuting the labels while the bins stay fixed gives bin b a uniform random subset of
    size ``bin_sizes[b]`` of the labels left by the bins before it: its label counts are
    a multivariate hypergeometric draw. So the tables are drawn directly, in
    O(n_permutations x bins) draws instead of O(n_permutations x n).

    Returns
    -------
    numpy.ndarray of int64, shape (n_permutations, n_bins, n_labels)

    Examples
    --------
    >>> t = permuted_tables(np.array([3, 2]), np.array([4, 1]), 100, 0)
    >>> t.shape, bool((t.sum(axis=2) == [3, 2]).all()), bool((t.sum(axis=1) == [4, 1]).all())
    ((100, 2, 2), True, True)
    """
    rng = np.random.default_rng(random_state)
    sizes = np.asarray(bin_sizes, dtype=np.int64)
    counts = np.asarray(label_counts, dtype=np.int64)
    out = np.zeros((n_permutations, len(sizes), len(counts)), dtype=np.int64)
    for p in range(n_permutations):
        pool = counts.copy()
        for b, size in enumerate(sizes[:-1]):
            draw = rng.multivariate_hypergeometric(pool, int(size), method="marginals")
            out[p, b] = draw
            pool -= draw
        out[p, -1] = pool
    return out


def mutual_information(table: np.ndarray) -> Any:
    """I(bin; y) in bits of a count table (bins x labels), or of a stack of them."""
    t = np.asarray(table, dtype=np.float64)
    n = t.sum(axis=(-2, -1), keepdims=True)
    pxy = t / np.maximum(n, 1e-300)
    px = pxy.sum(axis=-1, keepdims=True)
    py = pxy.sum(axis=-2, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(pxy > 0, pxy * np.log2(pxy / (px * py)), 0.0)
    mi = terms.sum(axis=(-2, -1))
    return float(mi) if mi.ndim == 0 else mi
