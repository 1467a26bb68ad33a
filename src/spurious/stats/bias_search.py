"""Prediction bias of one model and one heuristic: a fixed split or the threshold search.

:func:`prediction_bias` (Algorithm 1 of paper 001 at a given threshold, or searched),
:func:`threshold_search` (App. C: the grid of :func:`candidate_thresholds`, validity,
selection) and :func:`natural_bias` (the minimum over annotators). The bootstrap itself
is :func:`spurious.stats.split_bootstrap.split_bootstrap`; the package docstring of
:mod:`spurious.evaluate.prediction_bias` defines the quantities. The option and result
types (:class:`BootstrapOptions`, :class:`GroupStats`, :class:`BiasResult`,
:class:`NaturalBiasResult`) live in :mod:`spurious.stats.bias_results` and are
re-exported here.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

import numpy as np
import pandas as pd

from spurious.exceptions import ParameterError
from spurious.stats.bias_results import BiasResult, BootstrapOptions, GroupStats, NaturalBiasResult
from spurious.stats.split_bootstrap import SplitBootstrap, split_bootstrap

logger = logging.getLogger(__name__)

__all__ = [
    "MAX_CANDIDATES",
    "MIN_SAMPLE_SIZE",
    "PAPER_QA_THRESHOLDS",
    "PAPER_QA_WORSE_GROUP_SIZES",
    "BiasResult",
    "BootstrapOptions",
    "GroupStats",
    "NaturalBiasResult",
    "adapted_sample_size",
    "candidate_thresholds",
    "natural_bias",
    "prediction_bias",
    "split_capacity",
    "threshold_search",
]

#: Thresholds of paper 001, App. C, chosen on BERT-base-cased on SQuAD 1.1 dev (by exact
#: match), keyed by our heuristic names (``answer_sentence_rank`` has none in the paper).
PAPER_QA_THRESHOLDS: dict[str, float] = {
    "word_distance": 7.0,
    "shared_words": 3.0,
    "answer_length": 4.0,
    "qa_tfidf_similarity": 0.1,
    "entity_count": 0.0,
    "subject_position": 1.0,
}
#: Size of the under-performing group at those thresholds (App. C, n = 10,570).
PAPER_QA_WORSE_GROUP_SIZES: dict[str, int] = {
    "word_distance": 1651,
    "shared_words": 3281,
    "answer_length": 3124,
    "qa_tfidf_similarity": 954,
    "entity_count": 5006,
    "subject_position": 1672,
}
#: A grid longer than this is restricted to the thresholds where both groups can be bootstrapped.
MAX_CANDIDATES = 2000
#: Decimals thresholds are rounded to (so 0.1-steps read 0.3, not 0.30000000000000004).
_DECIMALS = 10


# ---------------------------------------------------------------------------------------
# Public single-model API
# ---------------------------------------------------------------------------------------
def prediction_bias(
    correctness: np.ndarray | Sequence[float],
    attribute: np.ndarray | Sequence[float],
    threshold: float | None = None,
    **options: Any,
) -> BiasResult:
    """Prediction bias of one model for one heuristic (Algorithm 1).

    Parameters
    ----------
    correctness : array-like of float, shape (n,)
        Per-example score of the model (EM, F1 or accuracy, in ``[0, 1]``); NaN
        entries are left out.
    attribute : array-like of float, shape (n,)
        The heuristic's value ``h(x)`` per example; NaN entries are left out.
    threshold : float, optional
        ``T``. ``None`` searches for the threshold with the largest bias
        (:func:`threshold_search`).
    **options
        ``n_trials``, ``sample_size``, ``quantiles``, ``step``, ``replace``,
        ``random_state``: see :class:`BootstrapOptions`.

    Returns
    -------
    BiasResult

    Examples
    --------
    A model right on every example with ``attribute <= 5`` and wrong on all others:

    >>> attr = np.arange(4000) % 10
    >>> res = prediction_bias(attr <= 5, attr, threshold=5, n_trials=20, sample_size=200)
    >>> res.bias, res.worse_group, res.low.n, res.high.n
    (1.0, 'high', 2400, 1600)
    """
    params = _check("prediction_bias", options)
    c, a, n_excluded = _clean_pair(correctness, attribute)
    if threshold is None:
        return _search_one(c, a, n_excluded, params, thresholds=None)
    t = float(threshold)
    if not math.isfinite(t):
        raise ParameterError(
            f"The 'threshold' parameter must be a finite number. Got {threshold!r}."
        )
    n_low = int((a <= t).sum())
    if n_low == 0 or n_low == len(a):
        raise ParameterError(
            f"The 'threshold' parameter puts all {len(a)} examples in one group (attribute "
            f"range [{a.min():g}, {a.max():g}]). Got {threshold!r}; choose T inside the range."
        )
    sweep = _sweep(c[None, :], a, np.array([t]), params, min_size=1)
    return _result_at(sweep, 0, 0, "fixed", n_excluded, params, curve=False)


def threshold_search(
    correctness: np.ndarray | Sequence[float],
    attribute: np.ndarray | Sequence[float],
    *,
    thresholds: Sequence[float] | np.ndarray | None = None,
    **options: Any,
) -> BiasResult:
    """Search the threshold with the largest prediction bias (paper App. C).

    Candidates default to :func:`candidate_thresholds`. A candidate is valid when both
    groups hold at least ``2 * sample_size`` examples; the valid candidate with the
    largest margin wins (bias ties at 0 are broken by the least overlap). When no valid
    candidate has a positive bias, the best candidate with a positive bias whose groups
    hold at least ``sample_size`` examples is taken (``validity="relaxed"``).

    Parameters
    ----------
    correctness, attribute : array-like of float, shape (n,)
        See :func:`prediction_bias`.
    thresholds : array-like of float, optional
        Explicit candidates instead of the grid.
    **options
        See :class:`BootstrapOptions`.

    Returns
    -------
    BiasResult
        With ``curve`` holding every candidate; ``validity="invalid"`` and NaN bias when
        no candidate leaves ``sample_size`` examples on both sides.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> attr = rng.integers(0, 11, 6000).astype(float)
    >>> correct = (rng.random(6000) < np.where(attr > 5, 0.3, 0.8)).astype(float)
    >>> res = threshold_search(correct, attr, n_trials=50, sample_size=400)
    >>> res.threshold, res.bias > 0.35, res.worse_group
    (5.0, True, 'high')
    """
    params = _check("threshold_search", options)
    c, a, n_excluded = _clean_pair(correctness, attribute)
    grid = None if thresholds is None else np.asarray(thresholds, dtype=np.float64)
    return _search_one(c, a, n_excluded, params, thresholds=grid)


def natural_bias(
    annotator_scores: np.ndarray,
    attribute: np.ndarray | Sequence[float],
    threshold: float,
    *,
    min_coverage: float = 0.5,
    **options: Any,
) -> NaturalBiasResult:
    """Natural (human) prediction bias at ``threshold``: the minimum over annotators.

    Parameters
    ----------
    annotator_scores : ndarray, shape (n_annotators, n)
        Each annotator's leave-one-out score per example (see
        :func:`spurious.stats.metrics.leave_one_out_scores`); NaN where the annotator
        gave no answer.
    attribute : array-like, shape (n,)
    threshold : float
        The split, normally the one chosen for the models.
    min_coverage : float, default=0.5
        Annotators scored on fewer than this fraction of the examples are ignored
        (SQuAD dev has a 4th-6th answer on under a fifth of the questions).
    **options
        See :class:`BootstrapOptions`.

    Returns
    -------
    NaturalBiasResult

    Examples
    --------
    >>> attr = np.arange(4000) % 10
    >>> humans = np.vstack([np.ones(4000), (attr <= 5).astype(float)])
    >>> r = natural_bias(humans, attr, 5, n_trials=20, sample_size=200)
    >>> r.bias, r.annotator
    (0.0, 0)
    """
    params = _check("natural_bias", options)
    scores = np.atleast_2d(np.asarray(annotator_scores, dtype=np.float64))
    attr = np.asarray(attribute, dtype=np.float64)
    if scores.shape[1] != attr.shape[0]:
        raise ParameterError(
            f"'annotator_scores' must have one column per example ({attr.shape[0]}). "
            f"Got shape {scores.shape}."
        )
    grid = np.array([float(threshold)])
    return _natural_at(scores, attr, grid, params, only=None, min_coverage=min_coverage)[0]


def candidate_thresholds(
    attribute: np.ndarray | Sequence[float], step: float | None = None
) -> np.ndarray:
    """The search grid of App. C: the attribute's range in steps of 1 (0.1 within [0, 1]).

    The grid starts at the largest multiple of ``step`` not above the minimum and stops
    below the maximum (a threshold at the maximum leaves the high group empty).

    Examples
    --------
    >>> candidate_thresholds([0.0, 0.25, 0.9]).tolist()
    [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
    >>> candidate_thresholds([2, 3, 7, 6]).tolist()
    [2.0, 3.0, 4.0, 5.0, 6.0]
    """
    a = np.asarray(attribute, dtype=np.float64)
    a = a[np.isfinite(a)]
    if a.size == 0:
        return np.array([], dtype=np.float64)
    lo, hi = float(a.min()), float(a.max())
    if step is None:
        step = 0.1 if lo >= 0.0 and hi <= 1.0 else 1.0
    start = math.floor(round(lo / step, 9)) * step
    n = max(math.ceil(round((hi - start) / step, 9)), 0)
    grid = np.round(start + step * np.arange(n), _DECIMALS)
    return grid[grid < hi]


#: The smallest bootstrap group an adapted sample size goes down to.
MIN_SAMPLE_SIZE = 10


def split_capacity(
    attribute: np.ndarray | Sequence[float], step: float | None = None
) -> tuple[int, float]:
    """The most even split of the search grid: its smaller side's size and its threshold.

    Returns ``(0, nan)`` when no candidate threshold splits the values (a constant
    attribute, or none finite).

    Examples
    --------
    >>> split_capacity(np.r_[np.zeros(9655), np.ones(187)])  # negation on SNLI dev
    (187, 0.0)
    >>> split_capacity([3.0, 3.0, 3.0])
    (0, nan)
    """
    a = np.asarray(attribute, dtype=np.float64)
    a = np.sort(a[np.isfinite(a)])
    grid = candidate_thresholds(a, step)
    if grid.size == 0:
        return 0, math.nan
    below = np.searchsorted(a, grid + 10.0**-_DECIMALS, side="right")
    smaller = np.minimum(below, a.size - below)
    k = int(np.argmax(smaller))
    return int(smaller[k]), float(grid[k])


def adapted_sample_size(
    attribute: np.ndarray | Sequence[float],
    sample_size: int,
    *,
    step: float | None = None,
    minimum: int = MIN_SAMPLE_SIZE,
) -> int | None:
    """``sample_size``, or the largest size the attribute's most even split can bootstrap.

    Paper 001's bootstrap draws ``sample_size`` examples from each side of a threshold,
    and App. C calls a threshold valid when both sides hold ``2 * sample_size``. A
    heuristic with few values (negation: 0, 1 or 2 negation words) may leave fewer than
    ``sample_size`` examples on the smaller side of every threshold, so its bias would be
    undefined; this returns half the most even split's smaller side instead (that split
    is then valid), as the debiasing analysis does, down to ``minimum``. ``None``: no
    split holds ``2 * minimum`` examples on both sides, so no size defines the bias.

    Examples
    --------
    >>> negation = np.r_[np.zeros(9655), np.ones(187)]  # SNLI dev: 187 negated hypotheses
    >>> adapted_sample_size(negation, 800), adapted_sample_size(np.arange(9842.0), 800)
    (93, 800)
    >>> adapted_sample_size(np.r_[np.zeros(100), np.ones(15)], 800) is None
    True
    """
    smaller, _ = split_capacity(attribute, step)
    if smaller >= sample_size:
        return int(sample_size)
    size = min(int(sample_size), smaller // 2)
    return size if size >= minimum else None


# ---------------------------------------------------------------------------------------
# Internals
# ---------------------------------------------------------------------------------------
_OPTION_NAMES = tuple(f.name for f in fields(BootstrapOptions))


def _check(owner: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``owner``'s keyword ``options`` as :meth:`BootstrapOptions.checked` returns them."""
    unknown = sorted(set(options) - set(_OPTION_NAMES))
    if unknown:
        raise TypeError(
            f"{owner}() got unexpected keyword argument(s) {unknown}; "
            f"its bootstrap options are {list(_OPTION_NAMES)}."
        )
    return BootstrapOptions(**options).checked()


def _valid(sweep: SplitBootstrap, sample_size: int) -> np.ndarray:
    """Candidates whose groups both hold at least ``2 * sample_size`` examples (App. C)."""
    return (sweep.n_low >= 2 * sample_size) & (sweep.n_high >= 2 * sample_size)


def _sweep(
    values: np.ndarray,
    attribute: np.ndarray,
    thresholds: np.ndarray,
    params: Mapping[str, Any],
    *,
    min_size: int,
    only: np.ndarray | None = None,
) -> SplitBootstrap:
    """:func:`~spurious.stats.split_bootstrap.split_bootstrap` with the checked ``params``."""
    return split_bootstrap(
        values,
        attribute,
        thresholds,
        n_trials=params["n_trials"],
        sample_size=params["sample_size"],
        quantiles=params["quantiles"],
        replace=params["replace"],
        random_state=params["random_state"],
        min_size=min_size,
        only=only,
    )


def _clean_pair(correctness: Any, attribute: Any) -> tuple[np.ndarray, np.ndarray, int]:
    c = np.asarray(correctness, dtype=np.float64)
    a = np.asarray(attribute, dtype=np.float64)
    if c.ndim != 1 or a.ndim != 1 or c.shape != a.shape:
        raise ParameterError(
            "'correctness' and 'attribute' must be 1-D arrays of the same length. "
            f"Got shapes {c.shape} and {a.shape}."
        )
    mask = np.isfinite(c) & np.isfinite(a)
    if mask.sum() < 2:
        raise ParameterError(
            f"prediction_bias needs at least 2 examples with a finite score and attribute. "
            f"Got {int(mask.sum())} of {c.size}."
        )
    return c[mask], a[mask], int((~mask).sum())


def _grid(a: np.ndarray, step: float | None, sample_size: int) -> np.ndarray:
    grid = candidate_thresholds(a, step)
    if grid.size > MAX_CANDIDATES:
        # Only thresholds leaving sample_size examples on each side can be bootstrapped.
        s = np.sort(a)
        if s.size >= 2 * sample_size:
            lo, hi = s[sample_size - 1], s[s.size - sample_size - 1]
            grid = grid[(grid >= lo - 1e-12) & (grid <= hi + 1e-12)]
        if grid.size > MAX_CANDIDATES:
            raise ParameterError(
                f"The attribute spans {grid.size} candidate thresholds at step "
                f"{step or 1}; pass a larger 'step' (or explicit thresholds)."
            )
    return grid


def _select(sweep: SplitBootstrap, row: int, sample_size: int) -> tuple[int | None, str]:
    """Candidate index and validity for one row (App. C's validity interval)."""
    margin = sweep.margin[row]
    finite = np.isfinite(margin)
    strict = finite & _valid(sweep, sample_size)
    relaxed = finite & (sweep.n_low >= sample_size) & (sweep.n_high >= sample_size)
    best_strict = _argmax_where(margin, strict)
    if best_strict is not None and margin[best_strict] > 0:
        return best_strict, "strict"
    best_relaxed = _argmax_where(margin, relaxed & (margin > 0))
    if best_relaxed is not None:
        return best_relaxed, "relaxed"
    if best_strict is not None:
        return best_strict, "strict"
    best_any = _argmax_where(margin, relaxed)
    if best_any is not None:
        return best_any, "relaxed"
    return None, "invalid"


def _argmax_where(values: np.ndarray, mask: np.ndarray) -> int | None:
    if not mask.any():
        return None
    idx = np.flatnonzero(mask)
    return int(idx[np.argmax(values[idx])])  # first on ties: the smallest threshold


def _result_at(
    sweep: SplitBootstrap,
    row: int,
    c: int | None,
    validity: str,
    n_excluded: int,
    params: Mapping[str, Any],
    *,
    curve: bool,
) -> BiasResult:
    size = params["sample_size"]
    json_params = {k: (list(v) if isinstance(v, tuple) else v) for k, v in params.items()}
    curve_df = _curve_frame(sweep, row, size) if curve else None
    if c is None:
        nan_group = GroupStats(0, math.nan, math.nan, math.nan, math.nan)
        return BiasResult(
            math.nan, math.nan, math.nan, nan_group, nan_group, False, "invalid",
            n_excluded, curve_df, json_params,
        )  # fmt: skip
    margin = float(sweep.margin[row, c])
    low, high = (_group_stats(sweep, side, row, c) for side in ("low", "high"))
    return BiasResult(
        bias=max(margin, 0.0) if math.isfinite(margin) else math.nan,
        margin=margin,
        threshold=float(sweep.thresholds[c]),
        low=low,
        high=high,
        valid=bool(low.n >= 2 * size and high.n >= 2 * size),
        validity=validity,
        n_excluded=n_excluded,
        curve=curve_df,
        params=json_params,
    )


def _group_stats(sweep: SplitBootstrap, side: str, row: int, c: int) -> GroupStats:
    """The ``"low"`` or ``"high"`` group of score row ``row`` at candidate ``c``."""
    q = getattr(sweep, f"{side}_q")[row, c]
    return GroupStats(
        int(getattr(sweep, f"n_{side}")[c]),
        float(getattr(sweep, f"{side}_mean")[row, c]),
        float(getattr(sweep, f"{side}_boot")[row, c]),
        float(q[0]),
        float(q[1]),
    )


def _curve_frame(sweep: SplitBootstrap, row: int, sample_size: int) -> pd.DataFrame:
    margin = sweep.margin[row]
    return pd.DataFrame(
        {
            "threshold": sweep.thresholds,
            "n_low": sweep.n_low,
            "n_high": sweep.n_high,
            "low_mean": sweep.low_mean[row],
            "low_ci_low": sweep.low_q[row, :, 0],
            "low_ci_high": sweep.low_q[row, :, 1],
            "high_mean": sweep.high_mean[row],
            "high_ci_low": sweep.high_q[row, :, 0],
            "high_ci_high": sweep.high_q[row, :, 1],
            "margin": margin,
            "bias": np.maximum(margin, 0.0),
            "valid": _valid(sweep, sample_size),
        }
    )


def _search_one(
    c: np.ndarray,
    a: np.ndarray,
    n_excluded: int,
    params: Mapping[str, Any],
    thresholds: np.ndarray | None,
) -> BiasResult:
    grid = _grid(a, params["step"], params["sample_size"]) if thresholds is None else thresholds
    sweep = _sweep(c[None, :], a, grid, params, min_size=params["sample_size"])
    idx, validity = _select(sweep, 0, params["sample_size"])
    if idx is None:
        logger.warning(
            "prediction_bias: no threshold leaves %d examples on both sides (n=%d, attribute "
            "range [%g, %g]); bias is undefined.",
            params["sample_size"], a.size, a.min(), a.max(),
        )  # fmt: skip
    return _result_at(sweep, 0, idx, validity, n_excluded, params, curve=True)


def _natural_at(
    scores: np.ndarray,
    attribute: np.ndarray,
    thresholds: np.ndarray,
    params: Mapping[str, Any],
    only: np.ndarray | None,
    min_coverage: float,
) -> dict[int, NaturalBiasResult]:
    """Natural bias per candidate index: each annotator on its own answered examples, min over them.

    ``only`` restricts the bootstrap to those candidates (``None``: every candidate).
    """
    fin_attr = np.isfinite(attribute)
    per: dict[int, tuple[SplitBootstrap, int]] = {}
    for k, row in enumerate(scores):
        answered = np.isfinite(row)
        mask = answered & fin_attr
        # Coverage is the annotator's (answers given), not the heuristic's: a heuristic
        # undefined on most examples must not silence every annotator.
        if answered.mean() < min_coverage or mask.sum() < 2:
            continue
        sweep = _sweep(
            row[mask][None, :], attribute[mask], thresholds, params, min_size=1, only=only
        )
        per[k] = (sweep, int((~mask).sum()))
    out: dict[int, NaturalBiasResult] = {}
    for c in range(len(thresholds)) if only is None else np.flatnonzero(only).tolist():
        results = {
            k: _result_at(sw, 0, c, "fixed", excl, params, curve=False)
            for k, (sw, excl) in per.items()
        }
        finite = {k: r.bias for k, r in results.items() if math.isfinite(r.bias)}
        if finite:
            k_min = min(finite, key=finite.__getitem__)
            out[c] = NaturalBiasResult(finite[k_min], k_min, results)
        else:
            out[c] = NaturalBiasResult(math.nan, None, results)
    return out
