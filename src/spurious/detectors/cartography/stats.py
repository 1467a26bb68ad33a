"""Numbers of a data map: per-view metrics and the agreement of two maps.

:func:`view_metrics` summarises one view's map (region shares, means, anti-biased
counts, final accuracy). The agreement of the full and partial-input maps is the
Spearman correlation of their confidences (:func:`spearman_or_none`) with its Fisher-z
interval (:func:`spearman_interval`), judged against the same correlation with permuted
labels (:func:`excess_over_null`); :func:`difference_interval` compares two such
correlations (Zou 2007).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from spurious.detectors.cartography.regions import REGIONS
from spurious.models.dynamics import TrainingDynamics


def view_metrics(
    table: pd.DataFrame, dyn: TrainingDynamics, split: str, prefix: str
) -> dict[str, float]:
    """Metrics of one view's map; names carry ``prefix`` (``"partial_"`` for the partial view)."""
    m: dict[str, float] = {}
    n = len(table)
    for region in REGIONS:
        m[f"{prefix}share_{region}"] = float((table["region"] == region).mean()) if n else 0.0
    for col in ("confidence", "variability", "correctness", "forgetting"):
        m[f"{prefix}mean_{col}"] = float(table[col].mean())
    anti = table["anti_biased"].to_numpy()
    m[f"{prefix}n_anti_biased"] = float(anti.sum())
    m[f"{prefix}anti_biased_fraction"] = float(anti.mean()) if n else 0.0
    if anti.any():
        m[f"{prefix}hard_confidence_cut"] = float(table["confidence"][anti].max())
    curve = dyn.accuracy(split)
    m[f"{prefix}final_accuracy"] = float(curve[max(curve)])
    return m


def spearman_or_none(a: pd.Series, b: pd.Series) -> float | None:
    """Spearman rho of ``a`` and ``b``; ``None`` where it is undefined."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return None  # undefined for constant inputs; leave the metric out
    rho = spearmanr(a, b).statistic
    return float(rho) if np.isfinite(rho) else None


def spearman_interval(rho: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """Fisher-z interval of a Spearman correlation of ``n`` pairs.

    ``tanh(atanh(rho) -/+ z * se)`` with ``se = sqrt(1.06 / (n - 3))``, the variance of
    Fieller, Hartley and Pearson (1957) for Spearman's rho. Fewer than 4 pairs: (-1, 1).

    Examples
    --------
    >>> lo, hi = spearman_interval(0.5, 103)
    >>> round(lo, 3), round(hi, 3)
    (0.334, 0.636)
    """
    from scipy.stats import norm

    if n < 4 or not np.isfinite(rho):
        return -1.0, 1.0
    z = np.arctanh(np.clip(rho, -0.999999, 0.999999))
    half = norm.ppf(0.5 + level / 2) * math.sqrt(1.06 / (n - 3))
    return float(np.tanh(z - half)), float(np.tanh(z + half))


def excess_over_null(rho: float, nulls: Sequence[float], n: int) -> dict[str, float]:
    """``rho`` against Spearman correlations of the same maps made with permuted labels.

    The excess is ``rho - mean(nulls)``; its standard error combines the sampling
    variance of ``rho`` (delta method on Fisher's z: ``(1 - rho^2)^2 * 1.06 / (n - 3)``)
    with the spread of the null over permutations (``sd^2 * (1 + 1/B)``, the variance of
    a new draw around the mean of B). A 95% normal interval and a one-sided p-value of
    ``excess > 0`` follow.

    Examples
    --------
    >>> out = excess_over_null(0.8, [0.6, 0.7, 0.65], 1003)
    >>> round(out["spearman_excess"], 3), out["spearman_excess_ci_low"] > 0
    (0.15, True)
    >>> excess_over_null(0.7, [0.6, 0.8], 100)["spearman_excess_p_value"] > 0.05
    True
    """
    from scipy.stats import norm

    null = np.asarray(nulls, dtype=float)
    sd = float(null.std(ddof=1)) if len(null) > 1 else 0.0
    var_rho = (1 - rho**2) ** 2 * 1.06 / max(n - 3, 1)
    se = math.sqrt(var_rho + sd**2 * (1 + 1 / len(null)))
    excess = float(rho - null.mean())
    half = float(norm.ppf(0.975) * se)
    return {
        "spearman_confidence_null": float(null.mean()),
        "spearman_confidence_null_sd": sd,
        "spearman_excess": excess,
        "spearman_excess_ci_low": excess - half,
        "spearman_excess_ci_high": excess + half,
        "spearman_excess_p_value": float(norm.sf(excess / se)) if se > 0 else float(excess <= 0),
    }


def difference_interval(
    r1: float, ci1: tuple[float, float], r2: float, ci2: tuple[float, float]
) -> tuple[float, float]:
    """Interval of ``r1 - r2`` from the two correlations' own intervals (Zou 2007, Eq. 4).

    ``L = r1 - r2 - sqrt((r1 - l1)^2 + (u2 - r2)^2)``,
    ``U = r1 - r2 + sqrt((u1 - r1)^2 + (r2 - l2)^2)``; it treats the two correlations as
    independent (they come from different models' maps).

    Examples
    --------
    >>> lo, hi = difference_interval(0.5, (0.4, 0.6), 0.2, (0.1, 0.3))
    >>> round(lo, 4), round(hi, 4)
    (0.1586, 0.4414)
    """
    (l1, u1), (l2, u2) = ci1, ci2
    d = r1 - r2
    return (
        float(d - math.sqrt((r1 - l1) ** 2 + (u2 - r2) ** 2)),
        float(d + math.sqrt((u1 - r1) ** 2 + (r2 - l2) ** 2)),
    )
