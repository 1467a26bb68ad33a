"""Bootstrap confidence intervals over evaluation examples (via ``scipy.stats.bootstrap``).

For the bootstrap of the two groups of a threshold split (prediction bias), see
:mod:`spurious.stats.split_bootstrap`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats


def bootstrap_interval(
    statistic: Callable[..., np.ndarray],
    data: Sequence[np.ndarray],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    random_state: int | None = 0,
) -> tuple[float, float, float]:
    """Point estimate and percentile bootstrap interval of a paired statistic.

    The examples (rows of every array in ``data``) are resampled together, so
    statistics comparing two models on the same examples keep their pairing.

    Parameters
    ----------
    statistic : callable
        ``statistic(*arrays, axis=-1)``, vectorised over a leading resample axis.
    data : sequence of ndarray
        Arrays of equal length (one entry per evaluation example).
    n_resamples : int
        Bootstrap resamples.
    confidence : float
        Interval coverage.
    random_state : int, optional
        Seed; the same seed gives the same interval.

    Returns
    -------
    (estimate, low, high) : tuple of float
        ``low``/``high`` are NaN when the statistic is undefined on resamples.

    Examples
    --------
    >>> correct = np.array([1, 1, 1, 0] * 50, dtype=float)
    >>> est, lo, hi = bootstrap_interval(lambda c, axis=-1: c.mean(axis=axis), [correct])
    >>> est, lo < 0.75 < hi
    (0.75, True)
    """
    arrays = tuple(np.asarray(a) for a in data)
    estimate = float(statistic(*arrays, axis=-1))
    with warnings.catch_warnings():
        # Ratios can be 0/0 on a resample (e.g. no agreement); those give NaN bounds,
        # reported as such rather than as a warning storm.
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        res = stats.bootstrap(
            arrays,
            statistic,
            n_resamples=n_resamples,
            vectorized=True,
            paired=True,
            confidence_level=confidence,
            method="percentile",
            rng=np.random.default_rng(random_state),
        )
    return estimate, float(res.confidence_interval.low), float(res.confidence_interval.high)


def safe_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` with NaN where ``den == 0`` (no warnings).

    Examples
    --------
    >>> safe_ratio(np.array([1.0, 1.0]), np.array([2.0, 0.0])).tolist()
    [0.5, nan]
    """
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den != 0)
    return out
