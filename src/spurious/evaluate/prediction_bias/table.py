"""Prediction bias of several models for several heuristics, with the natural (human) bias.

:func:`bias_table` computes each model's per-example score once, searches (or fixes)
each heuristic's threshold, bootstraps every model and the annotators at once and
collects the metrics, tables and curves into one
:class:`~spurious.results.DetectorResult` (``detector="prediction_bias"``).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping, Sequence
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from spurious.exceptions import ParameterError, SchemaError
from spurious.provenance import Provenance
from spurious.results import DetectorResult
from spurious.stats.bias_search import (
    MIN_SAMPLE_SIZE,
    NaturalBiasResult,
    _check,
    _grid,
    _natural_at,
    _result_at,
    _select,
    _sweep,
    _valid,
    adapted_sample_size,
    split_capacity,
)
from spurious.stats.metrics import example_scores, leave_one_out_scores, resolve_metric
from spurious.utils.validation import Interval, StrOptions, check_params

if TYPE_CHECKING:  # pragma: no cover
    from spurious.data.dataset import Dataset
    from spurious.data.predictions import PredictionSet

logger = logging.getLogger(__name__)

__all__ = ["MC_REPEATS", "MC_SD_WARN", "bias_table"]

#: Extra bootstrap seeds per reported bias to measure its Monte-Carlo spread.
MC_REPEATS = 4
#: Above this Monte-Carlo sd (1 point), ``n_trials`` is too small to compare biases.
MC_SD_WARN = 0.01


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
    adapt_sample_size: bool = False,
    n_permutations: int = 0,
    **options: Any,
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
        See :func:`~spurious.evaluate.prediction_bias.natural_bias`.
    adapt_sample_size : bool, default=False
        For a searched heuristic whose most even threshold leaves fewer than
        ``sample_size`` examples on a side (its bias would be undefined), bootstrap
        groups of half that side instead (see
        :func:`~spurious.stats.bias_search.adapted_sample_size`); the size
        used is ``sample_size_<heuristic>`` and the reason is in
        ``details["sample_size_notes"]``. Why a bias stays undefined, and what would
        define it, is in ``details["undefined"]`` either way.
    n_permutations : int, default=0
        A permutation test of the largest bias in the table: the per-example scores are
        permuted across examples (every model with the same permutation, so each
        heuristic's values no longer say anything about the scores), thresholds are
        searched again as for the real table, and the largest bias over models and
        heuristics is recorded. ``max_bias_null_p_value`` = (1 + #{null >= observed}) /
        (1 + n_permutations); 0 skips the test. The threshold search picks the best of
        many splits, so a positive bias on its own is not evidence; this test is.
    **options
        The bootstrap and search settings (``n_trials``, ``sample_size``, ``quantiles``,
        ``step``, ``replace``, ``random_state``); see
        :class:`~spurious.stats.bias_search.BootstrapOptions`.

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
    params = _check("bias_table", options)
    check_params(
        {
            "shared_threshold": ["boolean"],
            "natural": ["boolean"],
            "min_annotator_coverage": [Interval(Real, 0, 1, closed="both")],
            "metric": [StrOptions({"f1", "em", "accuracy"}), None],
            "adapt_sample_size": ["boolean"],
            "n_permutations": [Interval(Integral, 0, None, closed="left")],
        },
        {
            "shared_threshold": shared_threshold,
            "natural": natural,
            "min_annotator_coverage": min_annotator_coverage,
            "metric": metric,
            "adapt_sample_size": adapt_sample_size,
            "n_permutations": n_permutations,
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
    # Predictions a file lacked are scored as wrong; how many, per model, stays visible.
    metrics.update({f"n_missing_{p.name}": float(getattr(p, "n_missing", 0)) for p in preds})
    table: list[dict[str, Any]] = []
    natural_rows: list[dict[str, Any]] = []
    curves: dict[str, Any] = {}
    timings: dict[str, float] = {}
    notes: dict[str, str] = {}
    undefined: dict[str, str] = {}
    plan: list[tuple[np.ndarray, np.ndarray, dict[str, Any], int, bool]] = []
    ref_idx = names.index(ref)

    for h in h_names:
        th = time.perf_counter()
        attr = out_scores[f"attr_{h}"]
        mask = np.isfinite(attr) & np.isfinite(scores).all(axis=0)
        a = attr[mask]
        n_excl = int((~mask).sum())
        # A heuristic with few values may not leave sample_size examples on both sides
        # of any threshold; its bias is then measured with the largest size that fits.
        hp = params
        if adapt_sample_size and h not in fixed:
            size = adapted_sample_size(a, params["sample_size"], step=params["step"])
            if size is not None and size != params["sample_size"]:
                hp = {**params, "sample_size": size}
                smaller, cut = split_capacity(a, params["step"])
                notes[h] = (
                    f"{h}: sample size {size} instead of {params['sample_size']} (the most even "
                    f"threshold, {cut:g}, leaves {smaller} examples on its smaller side); the "
                    "bias rests on smaller bootstrap groups"
                )
        metrics[f"sample_size_{h}"] = float(hp["sample_size"])
        if h in fixed:
            grid = np.array([float(fixed[h])])
        else:
            grid = _grid(a, hp["step"], hp["sample_size"])
        sweep_min = 1 if h in fixed else hp["sample_size"]
        sweep = _sweep(scores[:, mask], a, grid, hp, min_size=sweep_min)
        # Which candidate each model uses; a fixed threshold is shared by construction.
        shared = shared_threshold or h in fixed
        if h in fixed:
            chosen = [(0, "fixed")] * len(names)
        elif shared_threshold:
            chosen = [_select(sweep, ref_idx, hp["sample_size"])] * len(names)
        else:
            chosen = [_select(sweep, m, hp["sample_size"]) for m in range(len(names))]
        results = [
            _result_at(sweep, m, c, v, n_excl, hp, curve=False) for m, (c, v) in enumerate(chosen)
        ]
        nat_by_c: dict[int, NaturalBiasResult] = {}
        if human is not None:
            # Annotators only where the models could be bootstrapped, and where they split.
            only = (sweep.n_low >= sweep_min) & (sweep.n_high >= sweep_min)
            only[[c for c, _ in chosen if c is not None]] = True
            nat_by_c = _natural_at(
                human, attr, grid, hp, only=only, min_coverage=min_annotator_coverage
            )
        spread = _monte_carlo_sd(scores[:, mask], a, grid, chosen, results, hp, sweep_min)
        for name, res, (c, _), sd in zip(names, results, chosen, spread, strict=True):
            table.append({"model": name, "heuristic": h, **res.to_dict(), "bias_mc_sd": sd})
            metrics[f"bias_{name}_{h}"] = res.bias
            metrics[f"bias_mc_sd_{name}_{h}"] = sd
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
            undefined[h] = _undefined_reason(a, grid, h in fixed, hp, adapt_sample_size)
            logger.warning("prediction bias on %r is undefined: %s", h, undefined[h])
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
            "valid": _valid(sweep, hp["sample_size"]).tolist(),
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
        plan.append((attr, grid, hp, sweep_min, h in fixed))

    timings["total_s"] = round(time.perf_counter() - t0, 4)
    null: dict[str, Any] = {}
    if n_permutations:
        tn = time.perf_counter()
        null = _permutation_null(
            scores, plan, table, shared_threshold, ref_idx, n_permutations, params
        )
        metrics["max_bias"] = null["observed"]
        metrics["max_bias_null_p_value"] = null["p_value"]
        metrics["max_bias_null_q95"] = null["q95"]
        timings["null_s"] = round(time.perf_counter() - tn, 4)
    # Undefined biases and adapted sizes travel with the result (report and CLI show them).
    warnings = [
        *(f"prediction bias on {h!r} is undefined: {why}" for h, why in undefined.items()),
        *notes.values(),
        *_spread_warnings(table, params["n_trials"]),
    ]
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
            "adapt_sample_size": adapt_sample_size,
            "n_permutations": n_permutations,
            "heuristics": h_names,
            "models": names,
            "sources": {p.name: getattr(p, "source", None) for p in preds},
            **{k: (list(v) if isinstance(v, tuple) else v) for k, v in params.items()},
        },
        provenance=Provenance(
            seed=params["random_state"], fingerprints={"eval": dataset.fingerprint}, timings=timings
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
            "mc_repeats": MC_REPEATS,
            "warnings": warnings,
            "sample_size_notes": notes,
            "undefined": undefined,
            "null": null,
        },
    )


# ---------------------------------------------------------------------------------------
# Internals
# ---------------------------------------------------------------------------------------
def _monte_carlo_sd(
    values: np.ndarray,
    attribute: np.ndarray,
    grid: np.ndarray,
    chosen: Sequence[tuple[int | None, str]],
    results: Sequence[Any],
    params: Mapping[str, Any],
    min_size: int,
) -> list[float]:
    """Sd of each reported bias over ``MC_REPEATS`` extra bootstrap seeds (and the run's own).

    The bias is a bootstrap quantile gap, so it moves with the resampling seed; with the
    paper's 100 trials it moves by about half a point. Only the chosen threshold is
    re-bootstrapped (the search is not repeated), so this measures the estimate's
    resampling noise, not the threshold choice's.
    """
    seed = params["random_state"]
    out = [math.nan] * len(results)
    for c in {c for c, _ in chosen if c is not None}:
        rows = [m for m, (cc, _) in enumerate(chosen) if cc == c]
        draws = [[results[m].bias] for m in rows]
        for r in range(1, MC_REPEATS + 1):
            # Seeds derived from the run's seed: the spread is reproducible too.
            derived = (
                None
                if seed is None
                else int(np.random.SeedSequence([seed, r]).generate_state(1)[0])
            )
            p = {**params, "random_state": derived}
            sw = _sweep(values[rows], attribute, grid[[c]], p, min_size=min_size)
            for k, margin in enumerate(sw.margin[:, 0]):
                draws[k].append(max(float(margin), 0.0) if math.isfinite(margin) else math.nan)
        for m, d in zip(rows, draws, strict=True):
            finite = [x for x in d if math.isfinite(x)]
            out[m] = float(np.std(finite, ddof=1)) if len(finite) > 1 else math.nan
    return out


def _permutation_null(
    scores: np.ndarray,
    plan: Sequence[tuple[np.ndarray, np.ndarray, dict[str, Any], int, bool]],
    table: Sequence[Mapping[str, Any]],
    shared_threshold: bool,
    ref_idx: int,
    n_permutations: int,
    params: Mapping[str, Any],
) -> dict[str, Any]:
    """The largest bias of the table against its distribution with scores permuted.

    Each permutation repeats what the table did (the same grids, sample sizes, validity
    rule and threshold choice) on scores shuffled across examples, so the selection of
    the best threshold, heuristic and model is part of the null.
    """
    finite = [r["bias"] for r in table if r["bias"] is not None and math.isfinite(r["bias"])]
    observed = max(finite) if finite else math.nan
    seed = params["random_state"]
    rng = np.random.default_rng(None if seed is None else [seed, 104729])
    n_models = scores.shape[0]
    draws = np.zeros(n_permutations)
    # A largest bias of 0 is met by every permutation (p = 1): nothing to simulate.
    for b in range(n_permutations if observed > 0 else 0):
        perm = rng.permutation(scores.shape[1])
        permuted = scores[:, perm]
        best = 0.0
        for attr, grid, hp, min_size, fixed in plan:
            mask = np.isfinite(attr) & np.isfinite(permuted).all(axis=0)
            if grid.size == 0 or not mask.any():
                continue
            sweep = _sweep(permuted[:, mask], attr[mask], grid, hp, min_size=min_size)
            if fixed:
                chosen = [0] * n_models
            elif shared_threshold:
                chosen = [_select(sweep, ref_idx, hp["sample_size"])[0]] * n_models
            else:
                chosen = [_select(sweep, m, hp["sample_size"])[0] for m in range(n_models)]
            for m, c in enumerate(chosen):
                if c is not None and math.isfinite(sweep.margin[m, c]):
                    best = max(best, float(sweep.margin[m, c]))
        draws[b] = best
    p_value = (
        float((1 + np.sum(draws >= observed - 1e-12)) / (1 + n_permutations))
        if math.isfinite(observed)
        else math.nan
    )
    return {
        "observed": observed,
        "p_value": p_value,
        "q95": float(np.quantile(draws, 0.95)),
        "mean": float(draws.mean()),
        "n_permutations": n_permutations,
        "null": "per-example scores permuted across examples (heuristic values carry no "
        "information about them); thresholds searched again",
    }


def _undefined_reason(
    a: np.ndarray, grid: np.ndarray, fixed: bool, params: Mapping[str, Any], adapted: bool
) -> str:
    """Why a heuristic's bias is undefined, and what would define it."""
    size = params["sample_size"]
    if a.size == 0:
        return "no example has both a value of this heuristic and a score"
    if fixed:
        n_low = int((a <= grid[0]).sum())
        return (
            f"the fixed threshold {grid[0]:g} leaves {n_low} / {a.size - n_low} examples "
            "(low / high), a group empty; a threshold inside the heuristic's range "
            f"[{a.min():g}, {a.max():g}) would define it"
        )
    if grid.size == 0:
        return f"the heuristic takes one value ({a[0]:g}) on every example: nothing to split"
    smaller, cut = split_capacity(a, params["step"])
    need = MIN_SAMPLE_SIZE if adapted else size
    fix = (
        f"more data (at least {2 * MIN_SAMPLE_SIZE} examples on each side) would define it"
        if adapted or smaller < 2 * MIN_SAMPLE_SIZE
        else f"sample_size={smaller // 2} (--sample-size {smaller // 2}) would define it"
    )
    return (
        f"the most even threshold ({cut:g}) leaves {smaller} example(s) on its smaller side, "
        f"fewer than a bootstrap group of {need}; {fix}"
    )


def _spread_warnings(table: Sequence[Mapping[str, Any]], n_trials: int) -> list[str]:
    sds = [r["bias_mc_sd"] for r in table if math.isfinite(r.get("bias_mc_sd", math.nan))]
    if not sds or max(sds) < MC_SD_WARN:
        return []
    top = max(sds)
    msg = (
        f"The Monte-Carlo sd of the biases reaches {top:.3f} with n_trials={n_trials}: "
        f"differences below about {3 * top:.3f} are resampling noise. Raise n_trials (the sd "
        "falls as 1/sqrt(n_trials))."
    )
    logger.warning("%s", msg)
    return [msg]


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
