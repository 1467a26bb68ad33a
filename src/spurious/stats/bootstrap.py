"""Bootstrap confidence intervals over evaluation examples.

:func:`bootstrap_interval` takes any vectorised statistic (via ``scipy.stats.bootstrap``);
:func:`bootstrap_of_means` is the fast path for statistics that depend on the data only
through the means of a few paired arrays (accuracies, agreement rates and their ratios):
it resamples the *counts* of the joint outcomes, which has the same bootstrap
distribution as resampling the examples, in time independent of the number of examples.

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
            batch=_batch(n_resamples, len(arrays[0]) if arrays else 0),
            vectorized=True,
            paired=True,
            confidence_level=confidence,
            method="percentile",
            rng=np.random.default_rng(random_state),
        )
    return estimate, float(res.confidence_interval.low), float(res.confidence_interval.high)


#: Most resampled values held at once (resamples x examples): 10M. scipy holds the
#: indices, the resampled arrays and the statistic's temporaries of a batch: 1,000
#: resamples of 30k examples allocate 480 MB in one batch, 240 MB in batches of 10M
#: values, with the same interval (batches draw the same random stream;
#: tests/test_memory_paths.py). Below this size all in one batch.
_MAX_RESAMPLED = 10_000_000


def _batch(n_resamples: int, n: int) -> int | None:
    """Resamples per batch so that ``batch x n`` stays under ``_MAX_RESAMPLED``; None: all.

    Examples
    --------
    >>> _batch(1000, 10_000) is None, _batch(1000, 1_000_000), _batch(10, 10**9)
    (True, 10, 1)
    """
    if n_resamples * n <= _MAX_RESAMPLED:
        return None
    return max(1, _MAX_RESAMPLED // max(n, 1))


#: Above this many distinct joint outcomes, counting them saves nothing over resampling
#: the examples themselves (continuous data), so :func:`bootstrap_of_means` does that.
_MAX_JOINT_OUTCOMES = 4096


def bootstrap_of_means(
    statistic: Callable[..., np.ndarray],
    data: Sequence[np.ndarray],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    random_state: int | None = 0,
) -> tuple[float, float, float]:
    """Point estimate and percentile bootstrap interval of a function of paired means.

    The statistic is ``statistic(mean(a_1), ..., mean(a_m))`` for the arrays
    ``a_1 ... a_m`` of ``data``, whose rows (examples) are resampled together. Such a
    statistic depends on a resample only through how often each *joint outcome* (a
    distinct row ``(a_1[i], ..., a_m[i])``) was drawn, and those counts follow a
    multinomial distribution with the outcomes' observed frequencies. Drawing the
    counts instead of ``n`` example indices gives the same bootstrap distribution
    (the same interval up to Monte-Carlo error) as ``bootstrap_interval`` with the
    means taken inside the statistic, but costs ``O(n_resamples x outcomes)`` instead
    of ``O(n_resamples x n)``: milliseconds for the 0/1 vectors of accuracy-type metrics
    at a million examples.

    Parameters
    ----------
    statistic : callable
        ``statistic(*means)``, vectorised: each mean is a float or an array of means,
        one per resample.
    data : sequence of ndarray
        Arrays of equal length (one entry per evaluation example).
    n_resamples : int
        Bootstrap resamples.
    confidence : float
        Interval coverage (percentile method, as ``scipy.stats.bootstrap``).
    random_state : int, optional
        Seed of the ``numpy.random.Generator`` drawing the counts; the same seed gives
        the same interval.

    Returns
    -------
    (estimate, low, high) : tuple of float
        ``low``/``high`` are NaN when the statistic is undefined on some resample (a
        ratio whose denominator was never drawn), as with :func:`bootstrap_interval`.

    Examples
    --------
    >>> correct = np.array([1, 1, 1, 0] * 50, dtype=float)
    >>> est, lo, hi = bootstrap_of_means(lambda m: m, [correct])
    >>> est, lo < 0.75 < hi
    (0.75, True)
    """
    arrays = [np.asarray(a, dtype=np.float64).ravel() for a in data]
    n = len(arrays[0]) if arrays else 0
    if n == 0 or any(len(a) != n for a in arrays):
        raise ValueError(
            "bootstrap_of_means needs non-empty arrays of equal length; got lengths "
            f"{[len(a) for a in arrays]}."
        )
    # The point estimate from the plain means, exactly as a statistic over the examples.
    with np.errstate(divide="ignore", invalid="ignore"):
        estimate = float(statistic(*(np.mean(a) for a in arrays)))
    # Joint outcomes: a mixed-radix code of each array's distinct values, then counted.
    codes = np.zeros(n, dtype=np.int64)
    for a in arrays:
        distinct, inverse = np.unique(a, return_inverse=True)
        codes = codes * len(distinct) + inverse.ravel()
        if codes.max() >= _MAX_JOINT_OUTCOMES**2:  # guard the code range, not a limit
            codes = np.unique(codes, return_inverse=True)[1].ravel()
    _, first, counts = np.unique(codes, return_index=True, return_counts=True)
    rng = np.random.default_rng(random_state)
    if len(counts) <= _MAX_JOINT_OUTCOMES:
        values = np.stack([a[first] for a in arrays], axis=1)  # (outcomes, m)
        draws = rng.multinomial(n, counts / n, size=n_resamples)  # (B, outcomes)
        means = (draws @ values) / n
    else:
        # Resamples in batches of at most _MAX_RESAMPLED values (memory); one batch below.
        batch = _batch(n_resamples, n) or n_resamples
        parts = []
        for start in range(0, n_resamples, batch):
            idx = rng.integers(0, n, size=(min(batch, n_resamples - start), n))
            parts.append(np.stack([a[idx].mean(axis=1) for a in arrays], axis=1))
        means = np.concatenate(parts)
    with np.errstate(divide="ignore", invalid="ignore"):
        theta = np.asarray(statistic(*means.T), dtype=np.float64)
    alpha = (1.0 - confidence) / 2.0
    # Linear-interpolation quantiles with NaN propagation: scipy's percentile method.
    low, high = np.quantile(theta, [alpha, 1.0 - alpha])
    return estimate, float(low), float(high)


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
