"""Prediction bias: how much better a model does on one side of a heuristic's split.

Mikula et al., "Think Twice: Measuring the Efficiency of Eliminating Prediction
Shortcuts of Question Answering Models" (Algorithm 1, Sec. 3, App. C).

A *heuristic* ``h`` gives every example an attribute ``A_h = h(x)`` (for example the
number of words between the answer and the closest question word). A threshold ``T``
splits the evaluation data into

- ``X1`` (the *low* group): ``A_h <= T``, and
- ``X2`` (the *high* group): ``A_h > T``.

Each group is bootstrapped (``n_trials`` resamples of ``sample_size`` examples; the
paper: 100 x 800) into a distribution of mean scores ``E1`` / ``E2``, and

``prediction bias = max(0, E1_q_low - E2_q_high, E2_q_low - E1_q_high)``

with ``q_low = 0.025`` and ``q_high = 0.975``: the gap between the two groups' bootstrap
intervals, 0 when they overlap. The *margin* is the same expression without the
``max(0, .)`` (negative: by how much the intervals overlap); it breaks ties among
thresholds whose bias is 0.

**Threshold search** (App. C): candidates run over the attribute's range in steps of 1
(of 0.1 when every value lies in ``[0, 1]``); a candidate is *valid* when both groups
hold at least ``2 * sample_size`` examples. The threshold with the largest bias among
valid candidates is chosen. When no valid candidate separates the groups (bias 0
everywhere), the paper allows a threshold whose groups only exceed ``sample_size``; we
then take the best such candidate with a positive bias (``validity="relaxed"``).

**Natural bias** (Sec. 3, "Human"): where examples carry several annotations, every
annotator is scored against the others (leave-one-out) and treated as a model; the
natural prediction bias is the minimum over annotators at the same threshold.

Bootstrap resampling is vectorised: one ``(n_trials, sample_size)`` matrix of uniform
draws per group turns into indices for every candidate threshold and every model in one
gather and one mean (common random numbers across thresholds, which also makes the
bias-vs-threshold curve smooth). Per-example metrics are computed once beforehand.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from spurious.evaluate.metrics import example_scores, leave_one_out_scores, resolve_metric
from spurious.exceptions import ParameterError, SchemaError
from spurious.provenance import Provenance
from spurious.results import DetectorResult
from spurious.utils.validation import Interval, StrOptions, check_params

if TYPE_CHECKING:  # pragma: no cover
    from spurious.data.dataset import Dataset
    from spurious.data.predictions import PredictionSet

logger = logging.getLogger(__name__)

__all__ = [
    "PAPER_QA_THRESHOLDS",
    "BiasResult",
    "GroupStats",
    "NaturalBiasResult",
    "bias_table",
    "candidate_thresholds",
    "natural_bias",
    "prediction_bias",
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

_CONSTRAINTS: dict[str, list[Any]] = {
    "n_trials": [Interval(Integral, 2, None, closed="left")],
    "sample_size": [Interval(Integral, 1, None, closed="left")],
    "random_state": ["random_state"],
    "replace": ["boolean"],
    "step": [Interval(Real, 0, None, closed="neither"), None],
}


@dataclass(frozen=True)
class GroupStats:
    """One side of a split: its size, mean score and bootstrap interval.

    Attributes
    ----------
    n : int
        Examples in the group.
    mean : float
        Mean per-example score over the whole group (the group's performance).
    boot_mean : float
        Mean of the bootstrap means.
    ci_low, ci_high : float
        The ``q_low`` / ``q_high`` quantiles of the bootstrap means (``E^down``, ``E^up``).
    """

    n: int
    mean: float
    boot_mean: float
    ci_low: float
    ci_high: float


@dataclass
class BiasResult:
    """Prediction bias of one model for one heuristic at one threshold.

    Attributes
    ----------
    bias : float
        ``max(0, margin)``, in the metric's units (``[0, 1]``). NaN when no threshold
        gives two groups large enough to bootstrap.
    margin : float
        ``max(E1_low - E2_high, E2_low - E1_high)``; negative when the intervals overlap.
    threshold : float
        ``T``: the low group is ``attribute <= T``, the high group ``attribute > T``.
    low, high : GroupStats
        The groups ``X1`` (``<= T``) and ``X2`` (``> T``).
    valid : bool
        Both groups hold at least ``2 * sample_size`` examples.
    validity : {"strict", "relaxed", "fixed", "invalid"}
        How the threshold was chosen: a valid search candidate, the relaxed rule (groups
        of at least ``sample_size``), given by the caller, or no usable candidate.
    n_excluded : int
        Examples left out because their attribute or score is missing (NaN).
    curve : pandas.DataFrame or None
        Threshold search only: one row per candidate (``threshold``, ``n_low``,
        ``n_high``, ``low_mean``, ``low_ci_low``, ``low_ci_high``, ``high_mean``,
        ``high_ci_low``, ``high_ci_high``, ``margin``, ``bias``, ``valid``); bootstrap
        columns are NaN where a group is smaller than ``sample_size``.
    params : dict
        The bootstrap settings.
    """

    bias: float
    margin: float
    threshold: float
    low: GroupStats
    high: GroupStats
    valid: bool
    validity: str
    n_excluded: int = 0
    curve: pd.DataFrame | None = None
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def worse_group(self) -> str | None:
        """``"low"`` or ``"high"``: the group with the lower mean score."""
        if not (math.isfinite(self.low.mean) and math.isfinite(self.high.mean)):
            return None
        return "low" if self.low.mean < self.high.mean else "high"

    @property
    def worse_performance(self) -> float:
        """Mean score of the worse group (the paper reports it beside the bias)."""
        g = self.worse_group
        return float("nan") if g is None else getattr(self, g).mean

    @property
    def gap(self) -> float:
        """Signed difference of the group means, ``low.mean - high.mean``."""
        return self.low.mean - self.high.mean

    def to_dict(self, curve: bool = False) -> dict[str, Any]:
        """A flat JSON-ready summary (the curve as a list of records when ``curve``)."""
        out: dict[str, Any] = {
            "bias": self.bias,
            "margin": self.margin,
            "threshold": self.threshold,
            "valid": self.valid,
            "validity": self.validity,
            "worse_group": self.worse_group,
            "worse_performance": self.worse_performance,
            "gap": self.gap,
            "n_excluded": self.n_excluded,
        }
        for side in ("low", "high"):
            for k, v in asdict(getattr(self, side)).items():
                out[f"{side}_{k}" if k != "n" else f"n_{side}"] = v
        if curve and self.curve is not None:
            out["curve"] = self.curve.to_dict(orient="list")
        return out


@dataclass
class NaturalBiasResult:
    """Natural ("human") prediction bias: the minimum over annotators.

    Attributes
    ----------
    bias : float
        ``min_k bias_k`` over the annotators used.
    annotator : int or None
        Index of the annotator reaching the minimum.
    per_annotator : dict of int to BiasResult
        Each annotator's prediction bias at the same threshold.
    """

    bias: float
    annotator: int | None
    per_annotator: dict[int, BiasResult]

    @property
    def worse_performance(self) -> float:
        """The worse group's mean score of the annotator reaching the minimum."""
        if self.annotator is None:
            return float("nan")
        return self.per_annotator[self.annotator].worse_performance


# ---------------------------------------------------------------------------------------
# Public single-model API
# ---------------------------------------------------------------------------------------
def prediction_bias(
    correctness: np.ndarray | Sequence[float],
    attribute: np.ndarray | Sequence[float],
    threshold: float | None = None,
    *,
    n_trials: int = 100,
    sample_size: int = 800,
    quantiles: tuple[float, float] = (0.025, 0.975),
    step: float | None = None,
    replace: bool = True,
    random_state: int | None = 0,
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
    n_trials : int, default=100
        Bootstrap resamples per group.
    sample_size : int, default=800
        Examples drawn per resample.
    quantiles : (float, float), default=(0.025, 0.975)
        ``(q_low, q_high)`` of the bootstrap means.
    step : float, optional
        Search grid step (default 1, or 0.1 for attributes within ``[0, 1]``).
    replace : bool, default=True
        Draw with replacement (a bootstrap). ``False`` draws ``sample_size`` distinct
        examples, as the authors' code does; it needs groups of at least that size.
    random_state : int or None, default=0
        Seed of the resampling.

    Returns
    -------
    BiasResult

    Examples
    --------
    Every example at or below 5 is right, every example above is wrong:

    >>> attr = np.arange(4000) % 10
    >>> correct = (attr <= 5).astype(float)
    >>> res = prediction_bias(correct, attr, threshold=5, n_trials=20, sample_size=200)
    >>> res.bias, res.worse_group, res.low.n, res.high.n
    (1.0, 'high', 2400, 1600)
    """
    params = _check(n_trials, sample_size, quantiles, random_state, replace, step)
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
    n_trials: int = 100,
    sample_size: int = 800,
    quantiles: tuple[float, float] = (0.025, 0.975),
    step: float | None = None,
    replace: bool = True,
    random_state: int | None = 0,
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
    n_trials, sample_size, quantiles, step, replace, random_state
        See :func:`prediction_bias`.

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
    params = _check(n_trials, sample_size, quantiles, random_state, replace, step)
    c, a, n_excluded = _clean_pair(correctness, attribute)
    grid = None if thresholds is None else np.asarray(thresholds, dtype=np.float64)
    return _search_one(c, a, n_excluded, params, thresholds=grid)


def natural_bias(
    annotator_scores: np.ndarray,
    attribute: np.ndarray | Sequence[float],
    threshold: float,
    *,
    min_coverage: float = 0.5,
    n_trials: int = 100,
    sample_size: int = 800,
    quantiles: tuple[float, float] = (0.025, 0.975),
    replace: bool = True,
    random_state: int | None = 0,
) -> NaturalBiasResult:
    """Natural (human) prediction bias at ``threshold``: the minimum over annotators.

    Parameters
    ----------
    annotator_scores : ndarray, shape (n_annotators, n)
        Each annotator's leave-one-out score per example (see
        :func:`spurious.evaluate.metrics.leave_one_out_scores`); NaN where the annotator
        gave no answer.
    attribute : array-like, shape (n,)
    threshold : float
        The split, normally the one chosen for the models.
    min_coverage : float, default=0.5
        Annotators scored on fewer than this fraction of the examples are ignored
        (SQuAD dev has a 4th-6th answer on under a fifth of the questions).
    n_trials, sample_size, quantiles, replace, random_state
        See :func:`prediction_bias`.

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
    params = _check(n_trials, sample_size, quantiles, random_state, replace, None)
    scores = np.atleast_2d(np.asarray(annotator_scores, dtype=np.float64))
    attr = np.asarray(attribute, dtype=np.float64)
    if scores.shape[1] != attr.shape[0]:
        raise ParameterError(
            f"'annotator_scores' must have one column per example ({attr.shape[0]}). "
            f"Got shape {scores.shape}."
        )
    return _natural_at(scores, attr, np.array([float(threshold)]), params, min_coverage)[0]


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


# ---------------------------------------------------------------------------------------
# Across models and heuristics
# ---------------------------------------------------------------------------------------
def bias_table(
    dataset: Dataset,
    predictions: Sequence[PredictionSet],
    attributes: pd.DataFrame,
    *,
    heuristics: Sequence[str] | None = None,
    metric: str | None = None,
    shared_threshold: bool = True,
    reference: str | None = None,
    thresholds: Mapping[str, float] | None = None,
    natural: bool = True,
    min_annotator_coverage: float = 0.5,
    n_trials: int = 100,
    sample_size: int = 800,
    quantiles: tuple[float, float] = (0.025, 0.975),
    step: float | None = None,
    replace: bool = True,
    random_state: int | None = 0,
) -> DetectorResult:
    """Prediction bias of every model for every heuristic, with the natural (human) bias.

    Parameters
    ----------
    dataset : Dataset
        The evaluation data (QA: ``answers`` with one entry per annotator).
    predictions : sequence of PredictionSet
        Each model's predictions aligned to ``dataset`` (see
        :func:`spurious.data.predictions.load_predictions`). Names must be distinct.
    attributes : pandas.DataFrame
        ``id`` plus one numeric column per heuristic (the output of
        ``spurious.heuristics.compute_heuristics``); rows are matched by id.
    heuristics : sequence of str, optional
        Columns of ``attributes`` to use (default: all but ``id``).
    metric : {"f1", "em", "accuracy"}, optional
        Per-example score (default ``em`` for QA, as in paper 001, ``accuracy`` otherwise).
    shared_threshold : bool, default=True
        Choose each heuristic's threshold on the ``reference`` model and split every
        model there (as the paper does for its OOD models, so that models and the human
        reference are compared on the same groups). ``False``: each model gets its own
        best threshold.
    reference : str, optional
        Name of the model whose threshold is shared (default: the first).
    thresholds : mapping of str to float, optional
        Fixed thresholds per heuristic (e.g. the paper's App. C values); no search for
        those heuristics.
    natural : bool, default=True
        Also compute the natural (human) bias where examples have several answers.
    min_annotator_coverage : float, default=0.5
        See :func:`natural_bias`.
    n_trials, sample_size, quantiles, step, replace, random_state
        See :func:`prediction_bias`.

    Returns
    -------
    DetectorResult
        ``detector="prediction_bias"``. Scores: ``id``, ``attr_<heuristic>``,
        ``score_<model>`` (per-example metric), ``score_annotator<k>`` (leave-one-out,
        when natural bias is computed) and, with shared thresholds,
        ``group_<heuristic>`` (``"low"``/``"high"``). Metrics: ``overall_<model>``,
        ``bias_<model>_<heuristic>``, ``worse_group_<model>_<heuristic>`` (the worse
        group's mean score), ``threshold_<heuristic>``, ``n_low_<heuristic>``,
        ``n_high_<heuristic>`` (per model, ``..._<model>_<heuristic>``, without shared
        thresholds), ``natural_bias_<heuristic>`` and
        ``natural_worse_group_<heuristic>`` (at the reference threshold) and, without
        shared thresholds, ``natural_bias_<model>_<heuristic>``. Details: ``table``
        (one row per model and heuristic), ``natural`` (one row per heuristic and
        threshold), ``curves`` (bias per candidate threshold for every model and the
        human reference).

    Examples
    --------
    >>> import pandas as pd
    >>> from spurious.data import Dataset
    >>> from spurious.data.predictions import align_predictions
    >>> n = 2000
    >>> ds = Dataset.from_frame(pd.DataFrame({"id": [str(i) for i in range(n)],
    ...     "question": ["q"] * n, "context": ["c"] * n,
    ...     "answers": [["yes", "yes"]] * n}), "qa")
    >>> attr = pd.DataFrame({"id": ds.ids, "length": np.arange(n) % 10})
    >>> good = align_predictions({i: "yes" for i in ds.ids}, ds, name="good")
    >>> res = bias_table(ds, [good], attr, n_trials=20, sample_size=200)
    >>> res.metrics["bias_good_length"], res.metrics["natural_bias_length"]
    (0.0, 0.0)
    """
    t0 = time.perf_counter()
    params = _check(n_trials, sample_size, quantiles, random_state, replace, step)
    check_params(
        {
            "shared_threshold": ["boolean"],
            "natural": ["boolean"],
            "min_annotator_coverage": [Interval(Real, 0, 1, closed="both")],
            "metric": [StrOptions({"f1", "em", "accuracy"}), None],
        },
        {
            "shared_threshold": shared_threshold,
            "natural": natural,
            "min_annotator_coverage": min_annotator_coverage,
            "metric": metric,
        },
        "bias_table",
    )
    metric = resolve_metric(dataset.task.has_labels, metric)
    preds = list(predictions)
    if not preds:
        raise ParameterError("The 'predictions' parameter must hold at least one PredictionSet.")
    names = [p.name for p in preds]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ParameterError(
            f"The 'predictions' must have distinct names; {dup} appear more than once. "
            "Rename the files or pass name= to load_predictions."
        )
    ref = names[0] if reference is None else reference
    if ref not in names:
        raise ParameterError(
            f"The 'reference' parameter must be one of the model names {names}. Got {reference!r}."
        )
    ids = dataset.ids
    for p in preds:
        if len(p.ids) != len(ids) or not np.array_equal(np.asarray(p.ids, dtype=object), ids):
            raise SchemaError(
                f"Predictions {p.name!r} are aligned to different examples than dataset "
                f"{dataset.name!r}; load them with load_predictions(path, dataset)."
            )
    attr_frame, h_names = _align_attributes(attributes, dataset, heuristics)
    fixed = dict(thresholds or {})
    unknown = sorted(set(fixed) - set(h_names))
    if unknown:
        raise ParameterError(
            f"The 'thresholds' parameter names unknown heuristic(s) {unknown}; heuristics: {h_names}."
        )

    scores = np.vstack([example_scores(dataset, p, metric) for p in preds])  # (M, n)
    human: np.ndarray | None = None
    if natural and not dataset.task.has_labels:
        loo = leave_one_out_scores(dataset.frame["answers"].tolist(), metric)
        coverage = np.isfinite(loo).mean(axis=1) if loo.size else np.array([])
        keep = np.flatnonzero(coverage >= max(min_annotator_coverage, 1e-12))
        if keep.size:
            human = loo[keep]
            logger.info(
                "natural bias from annotators %s (coverage %s)", keep.tolist(), coverage[keep]
            )
        else:
            logger.info("no annotator answers enough examples; natural bias not computed")
    elif natural:
        logger.info("natural (human) bias needs several annotated answers (QA); skipped")

    out_scores: dict[str, Any] = {"id": ids}
    for h in h_names:
        out_scores[f"attr_{h}"] = attr_frame[h].to_numpy(dtype=np.float64)
    for name, row in zip(names, scores, strict=True):
        out_scores[f"score_{name}"] = row
    if human is not None:
        for k, row in enumerate(human):
            out_scores[f"score_annotator{k}"] = row

    metrics: dict[str, float] = {
        f"overall_{n}": float(np.nanmean(s)) for n, s in zip(names, scores, strict=True)
    }
    table: list[dict[str, Any]] = []
    natural_rows: list[dict[str, Any]] = []
    curves: dict[str, Any] = {}
    timings: dict[str, float] = {}
    ref_idx = names.index(ref)

    for h in h_names:
        th = time.perf_counter()
        attr = out_scores[f"attr_{h}"]
        mask = np.isfinite(attr) & np.isfinite(scores).all(axis=0)
        a = attr[mask]
        n_excl = int((~mask).sum())
        if h in fixed:
            grid = np.array([float(fixed[h])])
        else:
            grid = _grid(a, params["step"], params["sample_size"])
        sweep_min = 1 if h in fixed else params["sample_size"]
        sweep = _sweep(scores[:, mask], a, grid, params, min_size=sweep_min)
        # Which candidate each model uses; a fixed threshold is shared by construction.
        shared = shared_threshold or h in fixed
        if h in fixed:
            chosen = [(0, "fixed")] * len(names)
        elif shared_threshold:
            chosen = [_select(sweep, ref_idx, params["sample_size"])] * len(names)
        else:
            chosen = [_select(sweep, m, params["sample_size"]) for m in range(len(names))]
        results = [
            _result_at(sweep, m, c, v, n_excl, params, curve=False)
            for m, (c, v) in enumerate(chosen)
        ]
        nat_by_c: dict[int, NaturalBiasResult] = {}
        if human is not None:
            # Annotators only where the models could be bootstrapped, and where they split.
            only = (sweep.n_low >= sweep_min) & (sweep.n_high >= sweep_min)
            only[[c for c, _ in chosen if c is not None]] = True
            nat_by_c = _natural_at(human, attr, grid, params, min_annotator_coverage, only=only)
        for name, res, (c, _) in zip(names, results, chosen, strict=True):
            table.append({"model": name, "heuristic": h, **res.to_dict()})
            metrics[f"bias_{name}_{h}"] = res.bias
            metrics[f"worse_group_{name}_{h}"] = res.worse_performance
            if not shared:
                metrics[f"threshold_{name}_{h}"] = res.threshold
                metrics[f"n_low_{name}_{h}"] = res.low.n
                metrics[f"n_high_{name}_{h}"] = res.high.n
                if human is not None:
                    metrics[f"natural_bias_{name}_{h}"] = (
                        nat_by_c[c].bias if c is not None else math.nan
                    )
        ref_res, ref_c = results[ref_idx], chosen[ref_idx][0]
        if not math.isfinite(ref_res.bias):
            logger.warning(
                "prediction bias on %r is undefined: %s",
                h,
                f"threshold {grid[0]:g} leaves a group empty"
                if h in fixed
                else f"no threshold leaves {sample_size} examples in both groups",
            )
        if shared:
            metrics[f"threshold_{h}"] = ref_res.threshold
            metrics[f"n_low_{h}"] = ref_res.low.n
            metrics[f"n_high_{h}"] = ref_res.high.n
            if ref_c is not None:
                out_scores[f"group_{h}"] = np.where(
                    np.isfinite(attr), np.where(attr <= ref_res.threshold, "low", "high"), None
                )
        if human is not None:
            ref_nat = nat_by_c[ref_c] if ref_c is not None else None
            metrics[f"natural_bias_{h}"] = ref_nat.bias if ref_nat else math.nan
            metrics[f"natural_worse_group_{h}"] = ref_nat.worse_performance if ref_nat else math.nan
            # One row per distinct threshold in use (one with shared thresholds).
            for c in dict.fromkeys(cc for cc, _ in chosen if cc is not None):
                nb = nat_by_c[c]
                natural_rows.append(
                    {
                        "heuristic": h,
                        "threshold": float(grid[c]),
                        "models": [n for n, (cc, _) in zip(names, chosen, strict=True) if cc == c],
                        "bias": nb.bias,
                        "annotator": nb.annotator,
                        "worse_performance": nb.worse_performance,
                        "per_annotator": {str(k): r.to_dict() for k, r in nb.per_annotator.items()},
                    }
                )
        curves[h] = {
            "threshold": grid.tolist(),
            "n_low": sweep.n_low.tolist(),
            "n_high": sweep.n_high.tolist(),
            "valid": (
                (sweep.n_low >= 2 * sample_size) & (sweep.n_high >= 2 * sample_size)
            ).tolist(),
            "bias": {
                name: np.maximum(sweep.margin[m], 0.0).tolist() for m, name in enumerate(names)
            },
            "selected": {name: r.threshold for name, r in zip(names, results, strict=True)},
        }
        if human is not None:
            curves[h]["bias"]["human"] = [
                nat_by_c[c].bias if c in nat_by_c else math.nan for c in range(grid.size)
            ]
        timings[f"{h}_s"] = round(time.perf_counter() - th, 4)

    timings["total_s"] = round(time.perf_counter() - t0, 4)
    scores_df = pd.DataFrame(out_scores)
    summary = _summary(table, metrics, metric, shared_threshold, ref, human is not None)
    return DetectorResult(
        detector="prediction_bias",
        scores=scores_df,
        metrics={k: float(v) for k, v in metrics.items()},
        params={
            "metric": metric,
            "shared_threshold": shared_threshold,
            "reference": ref if shared_threshold else None,
            "thresholds": {k: float(v) for k, v in fixed.items()},
            "natural": natural,
            "min_annotator_coverage": min_annotator_coverage,
            "heuristics": h_names,
            "models": names,
            "sources": {p.name: getattr(p, "source", None) for p in preds},
            **{k: (list(v) if isinstance(v, tuple) else v) for k, v in params.items()},
        },
        provenance=Provenance(
            seed=random_state, fingerprints={"eval": dataset.fingerprint}, timings=timings
        ),
        summary=summary,
        details={
            "metric": metric,
            "shared_threshold": shared_threshold,
            "reference": ref,
            "models": names,
            "heuristics": h_names,
            "table": table,
            "natural": natural_rows,
            "curves": curves,
        },
    )


# ---------------------------------------------------------------------------------------
# Internals
# ---------------------------------------------------------------------------------------
@dataclass
class _Sweep:
    """Bootstrap statistics of ``M`` score rows at ``C`` candidate thresholds."""

    thresholds: np.ndarray  # (C,)
    n_low: np.ndarray  # (C,)
    n_high: np.ndarray  # (C,)
    low_mean: np.ndarray  # (M, C)
    high_mean: np.ndarray
    low_boot: np.ndarray  # (M, C) mean of bootstrap means
    high_boot: np.ndarray
    low_q: np.ndarray  # (M, C, 2)
    high_q: np.ndarray

    @property
    def margin(self) -> np.ndarray:
        """``max(E1_low - E2_high, E2_low - E1_high)``, shape (M, C); NaN if not bootstrapped."""
        return np.maximum(
            self.low_q[..., 0] - self.high_q[..., 1], self.high_q[..., 0] - self.low_q[..., 1]
        )


def _check(
    n_trials: int,
    sample_size: int,
    quantiles: tuple[float, float],
    random_state: int | None,
    replace: bool,
    step: float | None,
) -> dict[str, Any]:
    check_params(
        _CONSTRAINTS,
        {
            "n_trials": n_trials,
            "sample_size": sample_size,
            "random_state": random_state,
            "replace": replace,
            "step": step,
        },
        "prediction_bias",
    )
    try:
        q_low, q_high = (float(q) for q in quantiles)
    except (TypeError, ValueError):
        raise ParameterError(
            "The 'quantiles' parameter of prediction_bias must be a pair (q_low, q_high). "
            f"Got {quantiles!r} instead."
        ) from None
    if not 0.0 <= q_low < q_high <= 1.0:
        raise ParameterError(
            "The 'quantiles' parameter of prediction_bias must satisfy 0 <= q_low < q_high <= 1. "
            f"Got {quantiles!r} instead."
        )
    if isinstance(random_state, np.random.RandomState | np.random.Generator):
        raise ParameterError(
            "The 'random_state' parameter of prediction_bias must be an int or None. "
            f"Got {type(random_state).__name__} instead."
        )
    return {
        "n_trials": int(n_trials),
        "sample_size": int(sample_size),
        "quantiles": (q_low, q_high),
        "random_state": random_state,
        "replace": bool(replace),
        "step": None if step is None else float(step),
    }


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


def _sweep(
    values: np.ndarray,
    attribute: np.ndarray,
    thresholds: np.ndarray,
    params: Mapping[str, Any],
    *,
    min_size: int,
    only: np.ndarray | None = None,
) -> _Sweep:
    """Bootstrap every row of ``values`` on both groups of every threshold.

    ``values`` (M, n) and ``attribute`` (n,) must be free of NaN. Candidates where a
    group is smaller than ``min_size``, or outside the boolean mask ``only``, keep NaN
    bootstrap statistics.
    """
    n_trials, size = params["n_trials"], params["sample_size"]
    q = np.asarray(params["quantiles"])
    m_rows, n = values.shape
    order = np.argsort(attribute, kind="stable")
    a_sorted = attribute[order]
    v_sorted = values[:, order]
    thresholds = np.asarray(thresholds, dtype=np.float64)
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
    return _Sweep(
        thresholds, n_low, n_high, low_mean, high_mean, low_boot, high_boot, low_q, high_q
    )


def _select(sweep: _Sweep, row: int, sample_size: int) -> tuple[int | None, str]:
    """Candidate index and validity for one row (App. C's validity interval)."""
    margin = sweep.margin[row]
    finite = np.isfinite(margin)
    strict = finite & (sweep.n_low >= 2 * sample_size) & (sweep.n_high >= 2 * sample_size)
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
    sweep: _Sweep,
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
    low = GroupStats(
        int(sweep.n_low[c]),
        float(sweep.low_mean[row, c]),
        float(sweep.low_boot[row, c]),
        float(sweep.low_q[row, c, 0]),
        float(sweep.low_q[row, c, 1]),
    )
    high = GroupStats(
        int(sweep.n_high[c]),
        float(sweep.high_mean[row, c]),
        float(sweep.high_boot[row, c]),
        float(sweep.high_q[row, c, 0]),
        float(sweep.high_q[row, c, 1]),
    )
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


def _curve_frame(sweep: _Sweep, row: int, sample_size: int) -> pd.DataFrame:
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
            "valid": (sweep.n_low >= 2 * sample_size) & (sweep.n_high >= 2 * sample_size),
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
    min_coverage: float,
    *,
    only: np.ndarray | None = None,
) -> dict[int, NaturalBiasResult]:
    """Natural bias per candidate index: each annotator on its own answered examples, min over them."""
    fin_attr = np.isfinite(attribute)
    per: dict[int, tuple[_Sweep, int]] = {}
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


def _align_attributes(
    attributes: pd.DataFrame, dataset: Any, heuristics: Sequence[str] | None
) -> tuple[pd.DataFrame, list[str]]:
    if not isinstance(attributes, pd.DataFrame) or "id" not in attributes.columns:
        raise ParameterError(
            "The 'attributes' parameter must be a DataFrame with an 'id' column and one "
            f"column per heuristic. Got {type(attributes).__name__}"
            + (
                f" with columns {list(attributes.columns)}."
                if isinstance(attributes, pd.DataFrame)
                else "."
            )
        )
    cols = [c for c in attributes.columns if c != "id"]
    h_names = list(heuristics) if heuristics is not None else cols
    missing_cols = [h for h in h_names if h not in attributes.columns]
    if missing_cols or not h_names:
        raise ParameterError(
            f"The 'heuristics' parameter must name columns of 'attributes' ({cols}). "
            f"Got {list(h_names)}."
        )
    frame = attributes.assign(id=attributes["id"].map(str)).set_index("id")
    if not frame.index.is_unique:
        dup = frame.index[frame.index.duplicated()].unique()
        raise SchemaError(f"'attributes' has duplicated ids, e.g. {list(dup[:5])}.")
    ids = dataset.ids
    missing = [i for i in ids if i not in frame.index]
    if missing:
        raise SchemaError(
            f"'attributes' lacks {len(missing)} of the {len(ids)} ids of {dataset.name!r} "
            f"(e.g. {missing[:5]}); compute the heuristics on the same dataset."
        )
    frame = frame.loc[list(ids), h_names]
    for h in h_names:
        try:
            frame[h] = pd.to_numeric(frame[h], errors="raise").astype(np.float64)
        except (TypeError, ValueError):
            raise SchemaError(
                f"'attributes' column {h!r} must be numeric; got dtype {frame[h].dtype}."
            ) from None
    return frame.reset_index(drop=True), h_names


def _summary(
    table: list[dict[str, Any]],
    metrics: Mapping[str, float],
    metric: str,
    shared: bool,
    ref: str,
    has_natural: bool,
) -> str:
    models = list(dict.fromkeys(r["model"] for r in table))
    heur = list(dict.fromkeys(r["heuristic"] for r in table))
    how = f"thresholds chosen on {ref}" if shared else "each model's own thresholds"
    finite = [r for r in table if r["bias"] is not None and math.isfinite(r["bias"])]
    head = f"{metric} prediction bias of {len(models)} model(s) on {len(heur)} heuristic(s), {how}"
    if not finite:
        return head + "; no heuristic gave a usable split."
    top = max(finite, key=lambda r: r["bias"])
    tail = f"; largest: {top['model']} on {top['heuristic']} = {top['bias']:.3f}"
    if has_natural:
        nat = metrics.get(f"natural_bias_{top['heuristic']}", math.nan)
        tail += f" (human {nat:.3f})" if math.isfinite(nat) else ""
    return head + tail + "."
