"""Bootstrap of the two groups of threshold splits, for many splits and score rows at once.

A threshold ``T`` on an attribute splits examples into a *low* group (``attribute <= T``)
and a *high* group (``attribute > T``). :func:`split_bootstrap` resamples each group
``n_trials`` times (``sample_size`` examples per resample) and summarises the resample
means of every score row (models, annotators) at every candidate threshold: the group
means, the mean of the bootstrap means and two quantiles of them. Prediction bias
(paper 001, Algorithm 1) is the gap between the two groups' quantile intervals,
:attr:`SplitBootstrap.margin`.

It is vectorised: sorting by the attribute makes every low group a prefix and every
high group a suffix, so one ``(n_trials, sample_size)`` matrix of uniform draws per
group turns into indices for every threshold and every row by one gather and one mean.
The same draws serve every threshold and every row (common random numbers), so a
bias-vs-threshold curve moves with the split, not with resampling noise.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral
from typing import Any

import numpy as np

from spurious.exceptions import ParameterError
from spurious.utils.validation import Interval, check_params

__all__ = ["SplitBootstrap", "check_bootstrap_params", "split_bootstrap"]

_CONSTRAINTS: dict[str, list[Any]] = {
    "n_trials": [Interval(Integral, 2, None, closed="left")],
    "sample_size": [Interval(Integral, 1, None, closed="left")],
    "random_state": ["random_state"],
    "replace": ["boolean"],
}


@dataclass
class SplitBootstrap:
    """Bootstrap statistics of ``M`` score rows at ``C`` candidate thresholds.

    Statistics of a threshold that was not bootstrapped (a group smaller than
    ``min_size``, or left out by ``only``) are NaN; ``low_mean``/``high_mean`` are NaN
    only where a group is empty.

    Attributes
    ----------
    thresholds : ndarray, shape (C,)
        The candidate thresholds ``T``.
    n_low, n_high : ndarray of int64, shape (C,)
        Sizes of the low (``<= T``) and high (``> T``) groups.
    low_mean, high_mean : ndarray, shape (M, C)
        Mean score of each whole group.
    low_boot, high_boot : ndarray, shape (M, C)
        Mean of the bootstrap means.
    low_q, high_q : ndarray, shape (M, C, 2)
        The two quantiles of the bootstrap means (``E^down``, ``E^up``).
    """

    thresholds: np.ndarray
    n_low: np.ndarray
    n_high: np.ndarray
    low_mean: np.ndarray
    high_mean: np.ndarray
    low_boot: np.ndarray
    high_boot: np.ndarray
    low_q: np.ndarray
    high_q: np.ndarray

    @property
    def margin(self) -> np.ndarray:
        """``max(E1_low - E2_high, E2_low - E1_high)``, shape (M, C); NaN if not bootstrapped.

        Positive: the two groups' intervals are this far apart (the prediction bias);
        negative: they overlap by this much.
        """
        return np.maximum(
            self.low_q[..., 0] - self.high_q[..., 1], self.high_q[..., 0] - self.low_q[..., 1]
        )


def check_bootstrap_params(
    n_trials: int,
    sample_size: int,
    quantiles: tuple[float, float],
    random_state: int | None,
    replace: bool,
    owner: str = "split_bootstrap",
) -> dict[str, Any]:
    """Validate the bootstrap settings; return them normalised (plain ints, float pair).

    Parameters
    ----------
    n_trials, sample_size, quantiles, random_state, replace
        See :func:`split_bootstrap`.
    owner : str
        The function named in error messages.

    Returns
    -------
    dict
        ``n_trials``, ``sample_size``, ``quantiles``, ``random_state``, ``replace``.

    Raises
    ------
    ParameterError
        In scikit-learn's message format.

    Examples
    --------
    >>> check_bootstrap_params(100, 800, (0.025, 0.975), 0, True)["quantiles"]
    (0.025, 0.975)
    >>> check_bootstrap_params(1, 800, (0.025, 0.975), 0, True)
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: The 'n_trials' parameter of split_bootstrap must be an int in the range [2, inf). Got 1 instead.
    """
    check_params(
        _CONSTRAINTS,
        {
            "n_trials": n_trials,
            "sample_size": sample_size,
            "random_state": random_state,
            "replace": replace,
        },
        owner,
    )
    try:
        q_low, q_high = (float(q) for q in quantiles)
    except (TypeError, ValueError):
        raise ParameterError(
            f"The 'quantiles' parameter of {owner} must be a pair (q_low, q_high). "
            f"Got {quantiles!r} instead."
        ) from None
    if not 0.0 <= q_low < q_high <= 1.0:
        raise ParameterError(
            f"The 'quantiles' parameter of {owner} must satisfy 0 <= q_low < q_high <= 1. "
            f"Got {quantiles!r} instead."
        )
    if isinstance(random_state, np.random.RandomState | np.random.Generator):
        # The draws must be reproducible from the stored params (an int or None).
        raise ParameterError(
            f"The 'random_state' parameter of {owner} must be an int or None. "
            f"Got {type(random_state).__name__} instead."
        )
    return {
        "n_trials": int(n_trials),
        "sample_size": int(sample_size),
        "quantiles": (q_low, q_high),
        "random_state": random_state,
        "replace": bool(replace),
    }


def split_bootstrap(
    values: np.ndarray,
    attribute: np.ndarray,
    thresholds: np.ndarray,
    *,
    n_trials: int = 100,
    sample_size: int = 800,
    quantiles: tuple[float, float] = (0.025, 0.975),
    replace: bool = True,
    random_state: int | None = 0,
    min_size: int = 1,
    only: np.ndarray | None = None,
) -> SplitBootstrap:
    """Bootstrap every row of ``values`` on both groups of every threshold.

    Parameters
    ----------
    values : array-like of float, shape (M, n) or (n,)
        Per-example scores, one row per model (or annotator); no NaN.
    attribute : array-like of float, shape (n,)
        The attribute that is thresholded; no NaN.
    thresholds : array-like of float, shape (C,)
        Candidate thresholds ``T`` (low group: ``attribute <= T``).
    n_trials : int, default=100
        Bootstrap resamples per group.
    sample_size : int, default=800
        Examples drawn per resample.
    quantiles : (float, float), default=(0.025, 0.975)
        Quantiles of the bootstrap means to report.
    replace : bool, default=True
        Draw with replacement. ``False`` draws ``sample_size`` distinct examples, so
        only groups of at least ``sample_size`` are bootstrapped.
    random_state : int or None, default=0
        Seed of the draws (shared by every threshold and row).
    min_size : int, default=1
        Thresholds whose smaller group has fewer examples are not bootstrapped.
    only : array-like of bool, shape (C,), optional
        Bootstrap only these thresholds (the group sizes and means are computed for all).

    Returns
    -------
    SplitBootstrap

    Examples
    --------
    Every example at or below 4 is right, every example above is wrong:

    >>> attr = np.arange(1000) % 10
    >>> correct = (attr <= 4).astype(float)
    >>> sb = split_bootstrap(correct, attr, [2.0, 4.0], n_trials=20, sample_size=100)
    >>> sb.n_low.tolist(), sb.low_mean.tolist(), sb.high_mean.round(3).tolist()
    ([300, 500], [[1.0, 1.0]], [[0.286, 0.0]])
    >>> sb.margin.round(2).tolist()  # the intervals' gap: T = 4 separates them fully
    [[0.63, 1.0]]
    """
    params = check_bootstrap_params(n_trials, sample_size, quantiles, random_state, replace)
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[None, :]
    attribute = np.asarray(attribute, dtype=np.float64)
    if values.ndim != 2 or attribute.ndim != 1 or values.shape[1] != attribute.shape[0]:
        raise ParameterError(
            "'values' must have shape (M, n) or (n,) and 'attribute' shape (n,). "
            f"Got {values.shape} and {attribute.shape}."
        )
    if not (np.isfinite(values).all() and np.isfinite(attribute).all()):
        raise ParameterError("'values' and 'attribute' must be free of NaN and infinity.")
    thresholds = np.asarray(thresholds, dtype=np.float64)
    if only is not None:
        only = np.asarray(only, dtype=bool)
        if only.shape != thresholds.shape:
            raise ParameterError(
                f"'only' must have one entry per threshold ({thresholds.shape}). "
                f"Got shape {only.shape}."
            )
    return _split_bootstrap(values, attribute, thresholds, params, int(min_size), only)


def _split_bootstrap(
    values: np.ndarray,
    attribute: np.ndarray,
    thresholds: np.ndarray,
    params: dict[str, Any],
    min_size: int,
    only: np.ndarray | None,
) -> SplitBootstrap:
    n_trials, size = params["n_trials"], params["sample_size"]
    q = np.asarray(params["quantiles"])
    m_rows, n = values.shape
    order = np.argsort(attribute, kind="stable")
    a_sorted = attribute[order]
    v_sorted = values[:, order]
    c_count = thresholds.size
    # Sorting by the attribute makes every low group a prefix and every high group a suffix.
    n_low = np.searchsorted(a_sorted, thresholds, side="right").astype(np.int64)
    n_high = n - n_low
    csum = np.concatenate([np.zeros((m_rows, 1)), np.cumsum(v_sorted, axis=1)], axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        low_mean = csum[:, n_low] / n_low
        high_mean = (csum[:, -1:] - csum[:, n_low]) / n_high
    low_boot = np.full((m_rows, c_count), np.nan)
    high_boot = np.full((m_rows, c_count), np.nan)
    low_q = np.full((m_rows, c_count, 2), np.nan)
    high_q = np.full((m_rows, c_count, 2), np.nan)

    # The same draws serve every candidate and every row (common random numbers), so the
    # bias-vs-threshold curve moves with the split, not with resampling noise.
    rng = np.random.default_rng(params["random_state"])
    replace = params["replace"]
    if replace:
        u_low = rng.random((n_trials, size))
        u_high = rng.random((n_trials, size))
    else:
        # Random sort keys: the sample_size smallest keys of a group are a uniform draw
        # without replacement from it.
        k_low = rng.random((n_trials, n))
        k_high = rng.random((n_trials, n))
    need = max(min_size, 1 if replace else size)
    todo = (n_low >= need) & (n_high >= need)
    if only is not None:
        todo &= only
    for c in np.flatnonzero(todo):
        nl, nh = int(n_low[c]), int(n_high[c])
        if replace:
            idx_low = np.minimum((u_low * nl).astype(np.intp), nl - 1)
            idx_high = nl + np.minimum((u_high * nh).astype(np.intp), nh - 1)
        else:
            idx_low = np.argpartition(k_low[:, :nl], size - 1, axis=1)[:, :size]
            idx_high = nl + np.argpartition(k_high[:, nl:], size - 1, axis=1)[:, :size]
        means_low = v_sorted[:, idx_low].mean(axis=2)  # (M, n_trials)
        means_high = v_sorted[:, idx_high].mean(axis=2)
        low_boot[:, c] = means_low.mean(axis=1)
        high_boot[:, c] = means_high.mean(axis=1)
        low_q[:, c, :] = np.quantile(means_low, q, axis=1).T
        high_q[:, c, :] = np.quantile(means_high, q, axis=1).T
    return SplitBootstrap(
        thresholds, n_low, n_high, low_mean, high_mean, low_boot, high_boot, low_q, high_q
    )
