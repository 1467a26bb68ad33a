"""The binned classifier of one 1-D feature: quantile bins, out-of-fold accuracy, test.

:func:`bin_feature` cuts a feature at its quantiles (labels unused);
:func:`binned_association` scores it as a classifier (each bin predicts the majority
label of its training folds) against the majority guess, with the mutual information
I(bin; y) and its permutation p-value (the tables of
:mod:`~spurious.detectors.associations.permutation`), into a :class:`BinnedAssociation`;
:func:`bin_names` names the bins for the report.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spurious.detectors.associations.permutation import mutual_information, permuted_tables
from spurious.detectors.atlas.stats import wilson_interval


def bin_feature(x: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Quantile bins of ``x`` (labels are not used); NaN gets a bin of its own (the last).

    A feature with few distinct values gets one bin per value; ties never straddle a bin
    edge. Returns the bin index per row and the inner edges (bin b holds
    ``edges[b-1] <= x < edges[b]``).

    Examples
    --------
    >>> bins, edges = bin_feature(np.array([0, 0, 0, 1, 2, np.nan]), 5)
    >>> bins.tolist(), edges.tolist()
    ([0, 0, 0, 1, 2, 3], [1.0, 2.0])
    """
    x = np.asarray(x, dtype=np.float64)
    ok = np.isfinite(x)
    if not ok.any():
        return np.zeros(len(x), dtype=np.int64), np.array([])
    values = np.unique(x[ok])
    if len(values) <= n_bins:
        edges = values[1:]
    else:
        qs = np.quantile(x[ok], np.linspace(0, 1, n_bins + 1)[1:-1], method="higher")
        edges = np.unique(qs)
        # An edge at the minimum would leave bin 0 empty: cut just above it instead.
        edges = edges[edges > values[0]]
    bins = np.searchsorted(edges, x, side="right").astype(np.int64)
    bins[~ok] = len(edges) + 1
    return bins, edges


@dataclass(frozen=True)
class BinnedAssociation:
    """Out-of-fold binned-classifier accuracy of one feature, with its permutation test.

    Attributes
    ----------
    accuracy, majority, effect : float
        Out-of-fold accuracy of the binned classifier, of the majority guess, and the
        difference (the effect).
    effect_interval : (float, float)
        95% Wilson interval of the accuracy minus the majority rate (the majority rate
        held fixed).
    mutual_information : float
        I(bin; y) in bits (plug-in, all rows).
    p_value : float
        Permutation p-value of I(bin; y).
    table : numpy.ndarray, shape (n_bins, C)
        Counts of (bin, label) over all rows.
    edges : numpy.ndarray
        The bins' inner edges (quantiles of the feature).
    has_nan_bin : bool
        Whether missing values form a bin of their own.
    correct : numpy.ndarray of bool
        Per example: the out-of-fold binned prediction is the gold label.
    p_gold : numpy.ndarray
        Per example: p(gold | its bin) estimated on the other folds.
    """

    accuracy: float
    majority: float
    effect: float
    effect_interval: tuple[float, float]
    mutual_information: float
    p_value: float
    table: np.ndarray
    edges: np.ndarray
    has_nan_bin: bool
    correct: np.ndarray
    p_gold: np.ndarray


def _oof(codes_by_fold: np.ndarray, n_folds: int, n_bins: int, n_classes: int) -> np.ndarray:
    """Fold tables (B, F, n_bins, C) from flat codes; helper of :func:`binned_association`."""
    size = n_folds * n_bins * n_classes
    b = codes_by_fold.shape[0]
    flat = codes_by_fold + (np.arange(b)[:, None] * size)
    tables = np.bincount(flat.ravel(), minlength=b * size)
    return tables.reshape(b, n_folds, n_bins, n_classes)


def _accuracy_gain(fold_tables: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Out-of-fold correct counts of the binned and majority classifiers; per-bin picks."""
    total = fold_tables.sum(axis=1, keepdims=True)
    train = total - fold_tables  # (B, F, bins, C): everything but the fold
    train_labels = train.sum(axis=2)  # (B, F, C)
    majority = train_labels.argmax(axis=-1)  # (B, F)
    pred = train.argmax(axis=-1)  # (B, F, bins); ties -> lower label id
    unseen = train.sum(axis=-1) == 0
    pred = np.where(unseen, majority[..., None], pred)
    hit = np.take_along_axis(fold_tables, pred[..., None], axis=-1)[..., 0].sum(axis=(1, 2))
    maj_hit = np.take_along_axis(fold_tables.sum(axis=2), majority[..., None], axis=-1)
    return hit, maj_hit[..., 0].sum(axis=1), pred


def binned_association(
    x: np.ndarray,
    y: np.ndarray,
    n_classes: int,
    folds: np.ndarray,
    *,
    n_bins: int = 10,
    n_permutations: int = 1000,
    random_state: int | None = 0,
) -> BinnedAssociation:
    """Effect, mutual information and permutation p-value of one 1-D feature.

    Parameters
    ----------
    x : numpy.ndarray of float, shape (n,)
        The feature (NaN allowed: its own bin).
    y : numpy.ndarray of int, shape (n,)
    n_classes : int
    folds : numpy.ndarray of int, shape (n,)
        Fold of every row (0 .. F-1).
    n_bins : int
        At most this many quantile bins (plus one for NaN).
    n_permutations : int
        Label permutations of the test.
    random_state : int or None
        Seeds the permutation tables (:func:`permuted_tables`).

    Returns
    -------
    BinnedAssociation

    Examples
    --------
    A feature equal to the label is perfectly informative; noise is not.

    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 400); folds = np.arange(400) % 5
    >>> a = binned_association(y.astype(float), y, 2, folds, n_permutations=99)
    >>> round(a.accuracy, 3), a.p_value
    (1.0, 0.01)
    >>> b = binned_association(rng.random(400), y, 2, folds, n_permutations=99)
    >>> abs(b.effect) < 0.05
    True
    """
    y = np.asarray(y, dtype=np.int64)
    n = len(y)
    bins, edges = bin_feature(x, n_bins)
    nb = int(bins.max()) + 1
    n_folds = int(folds.max()) + 1
    base = (folds.astype(np.int64) * nb + bins) * n_classes
    fold_tables = _oof((base + y)[None, :], n_folds, nb, n_classes)
    hit, maj_hit, pred = _accuracy_gain(fold_tables)
    accuracy, majority = float(hit[0]) / n, float(maj_hit[0]) / n
    effect = accuracy - majority
    # Per example: correctness and p(gold | bin) from the other folds.
    train = fold_tables.sum(axis=1, keepdims=True) - fold_tables
    correct = pred[0, folds, bins] == y
    row_train = train[0, folds, bins]  # (n, C)
    tot = row_train.sum(axis=1)
    p_gold = np.where(tot > 0, row_train[np.arange(n), y] / np.maximum(tot, 1), np.nan)
    table = fold_tables[0].sum(axis=0)
    mi = mutual_information(table)
    # The statistic is I(bin; y) on all rows: it sees any change of the label shares
    # across bins, also one that moves no bin's majority (which the accuracy cannot see;
    # the accuracy stays the effect size). Under a random permutation of the labels with
    # the bins fixed, the bin x label table is a random table with the same margins:
    # drawn bin by bin from the multivariate hypergeometric law, so the cost does not
    # grow with n.
    mi_perm = mutual_information(
        permuted_tables(table.sum(axis=1), table.sum(axis=0), n_permutations, random_state)
    )
    exceed = int((mi_perm >= mi - 1e-12).sum())
    p_value = (1 + exceed) / (1 + n_permutations)
    lo, hi = wilson_interval(int(hit[0]), n)
    return BinnedAssociation(
        accuracy=accuracy,
        majority=majority,
        effect=effect,
        effect_interval=(lo - majority, hi - majority),
        mutual_information=mi,
        p_value=float(p_value),
        table=table,
        edges=edges,
        has_nan_bin=bool((bins == len(edges) + 1).any()),
        correct=correct,
        p_gold=p_gold,
    )


def bin_names(edges: np.ndarray, has_nan: bool, n_bins: int) -> list[str]:
    def fmt(v: float) -> str:
        return f"{v:.3g}"

    names = []
    bounds = [-np.inf, *edges.tolist(), np.inf]
    for b in range(len(edges) + 1):
        lo, hi = bounds[b], bounds[b + 1]
        if np.isinf(lo):
            names.append(f"< {fmt(hi)}" if not np.isinf(hi) else "all")
        elif np.isinf(hi):
            names.append(f">= {fmt(lo)}")
        else:
            names.append(f"[{fmt(lo)}, {fmt(hi)})")
    if has_nan or n_bins > len(names):
        names.append("missing")
    return names[:n_bins]
