"""Prediction bias of several models for several heuristics, with the natural (human) bias.

:func:`bias_table` computes each model's per-example score once, searches (or fixes)
each heuristic's threshold, bootstraps every model and the annotators at once and
collects the metrics, tables and curves into one
:class:`~spurious.results.DetectorResult` (``analysis="prediction_bias"``).

Here: :func:`bias_table` itself, one heuristic's split (:func:`_split_heuristic`: the
sample size, the search or fixed threshold, the bootstraps of the models and the
annotators) and what it adds to the table (:class:`_Table`), and the table's words.
Its inputs are checked by :mod:`~spurious.evaluate.prediction_bias.checks`; the
Monte-Carlo spread and the permutation null are
:mod:`~spurious.evaluate.prediction_bias.spread`.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from spurious.evaluate.prediction_bias.checks import (
    align_attributes,
    check_options,
    check_predictions,
    check_thresholds,
)
from spurious.evaluate.prediction_bias.spread import (
    MC_REPEATS,
    MC_SD_WARN,
    monte_carlo_sd,
    permutation_null,
    spread_warnings,
)
from spurious.provenance import Provenance
from spurious.results import DetectorResult
from spurious.stats.bias_search import (
    MIN_SAMPLE_SIZE,
    BiasResult,
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
from spurious.stats.split_bootstrap import SplitBootstrap
from spurious.utils.metric_keys import metric_key
from spurious.utils.progress import step_bar

if TYPE_CHECKING:  # pragma: no cover
    from spurious.data.dataset import Dataset
    from spurious.data.predictions import PredictionSet

logger = logging.getLogger(__name__)

__all__ = ["MC_REPEATS", "MC_SD_WARN", "bias_table"]


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
    progress: bool = False,
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
        used is ``sample_size/<heuristic>`` and the reason is in
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
    progress : bool, default=False
        A progress bar over the threshold searches (one per heuristic, then one per
        permutation).
    **options
        The bootstrap and search settings (``n_trials``, ``sample_size``, ``quantiles``,
        ``step``, ``replace``, ``random_state``); see
        :class:`~spurious.stats.bias_search.BootstrapOptions`.

    Returns
    -------
    DetectorResult
        ``analysis="prediction_bias"``. Scores: ``id``, ``attr_<heuristic>``,
        ``score_<model>`` (per-example metric), ``score_annotator<k>`` (leave-one-out,
        when natural bias is computed) and, with shared thresholds,
        ``group_<heuristic>`` (``"low"``/``"high"``). Metrics, named for what they hold
        with the names in their own segments
        (:func:`~spurious.utils.metric_keys.metric_key`; ``<metric>`` is ``em``, ``f1``
        or ``accuracy``, on a 0-1 scale): ``<metric>/<model>`` (the mean score),
        ``bias/<model>/<heuristic>``, ``worse_group_<metric>/<model>/<heuristic>`` (the
        worse group's mean score), ``threshold/<heuristic>``, ``n_low/<heuristic>``,
        ``n_high/<heuristic>`` (per model, ``threshold/<model>/<heuristic>`` ..., without
        shared thresholds), ``natural_bias/<heuristic>`` and
        ``natural_worse_group_<metric>/<heuristic>`` (at the reference threshold) and,
        without shared thresholds, ``natural_bias/<model>/<heuristic>``. Details: ``table``
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
    >>> res.metrics["bias/good/length"], res.metrics["natural_bias/length"]
    (0.0, 0.0)
    """
    t0 = time.perf_counter()
    params = _check("bias_table", options)
    check_options(
        shared_threshold=shared_threshold, natural=natural,
        min_annotator_coverage=min_annotator_coverage, metric=metric,
        adapt_sample_size=adapt_sample_size, n_permutations=n_permutations,
    )  # fmt: skip
    metric = resolve_metric(dataset.task.has_labels, metric)
    preds, names, ref = check_predictions(dataset, predictions, reference)
    attr_frame, h_names = align_attributes(attributes, dataset, heuristics)
    fixed = check_thresholds(thresholds, h_names)

    scores = np.vstack([example_scores(dataset, p, metric) for p in preds])  # (M, n)
    human = _human_scores(dataset, natural, metric, min_annotator_coverage)
    out_scores: dict[str, Any] = {"id": dataset.ids}
    for h in h_names:
        out_scores[f"attr_{h}"] = attr_frame[h].to_numpy(dtype=np.float64)
    for name, row in zip(names, scores, strict=True):
        out_scores[f"score_{name}"] = row
    if human is not None:
        for k, row in enumerate(human):
            out_scores[f"score_annotator{k}"] = row
    metrics: dict[str, float] = {
        metric_key(metric, n): float(np.nanmean(s)) for n, s in zip(names, scores, strict=True)
    }
    # Predictions a file lacked are scored as wrong; how many, per model, stays visible.
    metrics.update(
        {metric_key("n_missing", p.name): float(getattr(p, "n_missing", 0)) for p in preds}
    )
    acc = _Table(names, names.index(ref), human is not None, metrics, out_scores, metric=metric)
    timings: dict[str, float] = {}
    bar = step_bar("prediction_bias: threshold search", len(h_names) + n_permutations,
                   enabled=progress, unit="search")  # fmt: skip
    for h in h_names:
        bar.set_postfix_str(h)
        th = time.perf_counter()
        split, note = _split_heuristic(
            out_scores[f"attr_{h}"], scores, human, params,
            fixed=float(fixed[h]) if h in fixed else None,
            adapt=adapt_sample_size, shared_threshold=shared_threshold,
            ref_idx=acc.ref_idx, min_annotator_coverage=min_annotator_coverage,
        )  # fmt: skip
        if note is not None:
            acc.notes[h] = f"{h}: {note}"
        acc.add(h, split, shared=shared_threshold or h in fixed, adapted=adapt_sample_size)
        timings[f"{h}_s"] = round(time.perf_counter() - th, 4)
        bar.update(1)

    timings["total_s"] = round(time.perf_counter() - t0, 4)
    null: dict[str, Any] = {}
    if n_permutations:
        tn = time.perf_counter()
        bar.set_postfix_str("permutation null")
        null = permutation_null(
            scores, acc.plan, acc.table, shared_threshold, acc.ref_idx, n_permutations, params,
            progress=lambda done, total: bar.update(1),
        )  # fmt: skip
        metrics["max_bias"] = null["observed"]
        metrics["max_bias_null_p_value"] = null["p_value"]
        metrics["max_bias_null_q95"] = null["q95"]
        timings["null_s"] = round(time.perf_counter() - tn, 4)
    bar.close()
    # Undefined biases and adapted sizes travel with the result (report and CLI show them).
    warnings = [
        *(f"prediction bias on {h!r} is undefined: {why}" for h, why in acc.undefined.items()),
        *acc.notes.values(),
        *spread_warnings(acc.table, params["n_trials"]),
    ]
    return DetectorResult(
        analysis="prediction_bias",
        scores=pd.DataFrame(out_scores),
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
        summary=_summary(acc.table, metrics, metric, shared_threshold, ref, human is not None),
        details={
            "metric": metric,
            "shared_threshold": shared_threshold,
            "reference": ref,
            "models": names,
            "heuristics": h_names,
            "table": acc.table,
            "natural": acc.natural_rows,
            "curves": acc.curves,
            "mc_repeats": MC_REPEATS,
            "warnings": warnings,
            "sample_size_notes": acc.notes,
            "undefined": acc.undefined,
            "null": null,
        },
    )


# ---------------------------------------------------------------------------------------
# One heuristic
# ---------------------------------------------------------------------------------------
@dataclass
class _Split:
    """One heuristic's split of the evaluation data, searched (or fixed) and bootstrapped.

    ``a`` is the heuristic where it and every score are finite (``attr`` keeps every
    example); ``hp`` the bootstrap settings used (the sample size possibly adapted);
    ``chosen`` each model's candidate index and validity; ``nat_by_c`` the natural bias
    per candidate (empty without annotators); ``spread`` each model's Monte-Carlo sd.
    """

    attr: np.ndarray
    a: np.ndarray
    hp: dict[str, Any]
    grid: np.ndarray
    fixed: bool
    sweep_min: int
    sweep: SplitBootstrap
    chosen: list[tuple[int | None, str]]
    results: list[BiasResult]
    nat_by_c: dict[int, NaturalBiasResult]
    spread: list[float]


def _human_scores(
    dataset: Dataset, natural: bool, metric: str, min_annotator_coverage: float
) -> np.ndarray | None:
    """The annotators' leave-one-out scores (one row per annotator answering at least
    ``min_annotator_coverage`` of the examples), or ``None``: no natural bias."""
    if natural and not dataset.task.has_labels:
        loo = leave_one_out_scores(dataset.frame["answers"].tolist(), metric)
        coverage = np.isfinite(loo).mean(axis=1) if loo.size else np.array([])
        keep = np.flatnonzero(coverage >= max(min_annotator_coverage, 1e-12))
        if keep.size:
            logger.info(
                "natural bias from annotators %s (coverage %s)", keep.tolist(), coverage[keep]
            )
            return loo[keep]
        logger.info("no annotator answers enough examples; natural bias not computed")
    elif natural:
        logger.info("natural (human) bias needs several annotated answers (QA); skipped")
    return None


def _split_heuristic(
    attr: np.ndarray,
    scores: np.ndarray,
    human: np.ndarray | None,
    params: dict[str, Any],
    *,
    fixed: float | None,
    adapt: bool,
    shared_threshold: bool,
    ref_idx: int,
    min_annotator_coverage: float,
) -> tuple[_Split, str | None]:
    """Search (or fix) one heuristic's threshold for every model and bootstrap there.

    Returns the split and, when the sample size was adapted, a note saying so.
    """
    mask = np.isfinite(attr) & np.isfinite(scores).all(axis=0)
    a = attr[mask]
    n_excl = int((~mask).sum())
    # A heuristic with few values may not leave sample_size examples on both sides
    # of any threshold; its bias is then measured with the largest size that fits.
    hp, note = params, None
    if adapt and fixed is None:
        size = adapted_sample_size(a, params["sample_size"], step=params["step"])
        if size is not None and size != params["sample_size"]:
            hp = {**params, "sample_size": size}
            smaller, cut = split_capacity(a, params["step"])
            note = (
                f"sample size {size} instead of {params['sample_size']} (the most even "
                f"threshold, {cut:g}, leaves {smaller} examples on its smaller side); the "
                "bias rests on smaller bootstrap groups"
            )
    if fixed is not None:
        grid = np.array([float(fixed)])
    else:
        grid = _grid(a, hp["step"], hp["sample_size"])
    sweep_min = 1 if fixed is not None else hp["sample_size"]
    sweep = _sweep(scores[:, mask], a, grid, hp, min_size=sweep_min)
    # Which candidate each model uses; a fixed threshold is shared by construction.
    n_models = scores.shape[0]
    if fixed is not None:
        chosen = [(0, "fixed")] * n_models
    elif shared_threshold:
        chosen = [_select(sweep, ref_idx, hp["sample_size"])] * n_models
    else:
        chosen = [_select(sweep, m, hp["sample_size"]) for m in range(n_models)]
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
    spread = monte_carlo_sd(scores[:, mask], a, grid, chosen, results, hp, sweep_min)
    split = _Split(
        attr, a, hp, grid, fixed is not None, sweep_min, sweep, chosen, results, nat_by_c, spread
    )
    return split, note


@dataclass
class _Table:
    """What the heuristics add to the table, in the order it is reported."""

    names: list[str]
    ref_idx: int
    has_human: bool
    metrics: dict[str, float]
    out_scores: dict[str, Any]
    #: The per-example score (em, f1, accuracy): what the worse group's mean holds.
    metric: str = "accuracy"
    table: list[dict[str, Any]] = field(default_factory=list)
    natural_rows: list[dict[str, Any]] = field(default_factory=list)
    curves: dict[str, Any] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    undefined: dict[str, str] = field(default_factory=dict)
    #: Per heuristic, what the permutation null repeats: (attr, grid, hp, min size, fixed).
    plan: list[tuple[np.ndarray, np.ndarray, dict[str, Any], int, bool]] = field(
        default_factory=list
    )

    def add(self, h: str, s: _Split, *, shared: bool, adapted: bool) -> None:
        """Heuristic ``h``'s rows, metrics, group column, natural bias and curves."""
        names, metrics, human = self.names, self.metrics, self.has_human
        worse = f"worse_group_{self.metric}"
        metrics[metric_key("sample_size", h)] = float(s.hp["sample_size"])
        for name, res, (c, _), sd in zip(names, s.results, s.chosen, s.spread, strict=True):
            self.table.append({"model": name, "heuristic": h, **res.to_dict(), "bias_mc_sd": sd})
            metrics[metric_key("bias", name, h)] = res.bias
            metrics[metric_key("bias_mc_sd", name, h)] = sd
            metrics[metric_key(worse, name, h)] = res.worse_performance
            if not shared:
                metrics[metric_key("threshold", name, h)] = res.threshold
                metrics[metric_key("n_low", name, h)] = res.low.n
                metrics[metric_key("n_high", name, h)] = res.high.n
                if human:
                    metrics[metric_key("natural_bias", name, h)] = (
                        s.nat_by_c[c].bias if c is not None else math.nan
                    )
        ref_res, ref_c = s.results[self.ref_idx], s.chosen[self.ref_idx][0]
        if not math.isfinite(ref_res.bias):
            self.undefined[h] = _undefined_reason(s.a, s.grid, s.fixed, s.hp, adapted)
            logger.warning("prediction bias on %r is undefined: %s", h, self.undefined[h])
        if shared:
            metrics[metric_key("threshold", h)] = ref_res.threshold
            metrics[metric_key("n_low", h)] = ref_res.low.n
            metrics[metric_key("n_high", h)] = ref_res.high.n
            if ref_c is not None:
                self.out_scores[f"group_{h}"] = np.where(
                    np.isfinite(s.attr), np.where(s.attr <= ref_res.threshold, "low", "high"), None
                )
        if human:
            ref_nat = s.nat_by_c[ref_c] if ref_c is not None else None
            metrics[metric_key("natural_bias", h)] = ref_nat.bias if ref_nat else math.nan
            metrics[metric_key(f"natural_{worse}", h)] = (
                ref_nat.worse_performance if ref_nat else math.nan
            )
            self._add_natural_rows(h, s)
        self.curves[h] = {
            "threshold": s.grid.tolist(),
            "n_low": s.sweep.n_low.tolist(),
            "n_high": s.sweep.n_high.tolist(),
            "valid": _valid(s.sweep, s.hp["sample_size"]).tolist(),
            "bias": {
                name: np.maximum(s.sweep.margin[m], 0.0).tolist() for m, name in enumerate(names)
            },
            "selected": {name: r.threshold for name, r in zip(names, s.results, strict=True)},
        }
        if human:
            self.curves[h]["bias"]["human"] = [
                s.nat_by_c[c].bias if c in s.nat_by_c else math.nan for c in range(s.grid.size)
            ]
        self.plan.append((s.attr, s.grid, s.hp, s.sweep_min, s.fixed))

    def _add_natural_rows(self, h: str, s: _Split) -> None:
        # One row per distinct threshold in use (one with shared thresholds).
        for c in dict.fromkeys(cc for cc, _ in s.chosen if cc is not None):
            nb = s.nat_by_c[c]
            self.natural_rows.append(
                {
                    "heuristic": h,
                    "threshold": float(s.grid[c]),
                    "models": [
                        n for n, (cc, _) in zip(self.names, s.chosen, strict=True) if cc == c
                    ],
                    "bias": nb.bias,
                    "annotator": nb.annotator,
                    "worse_performance": nb.worse_performance,
                    "per_annotator": {str(k): r.to_dict() for k, r in nb.per_annotator.items()},
                }
            )


# ---------------------------------------------------------------------------------------
# Words
# ---------------------------------------------------------------------------------------
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
        nat = metrics.get(metric_key("natural_bias", top["heuristic"]), math.nan)
        tail += f" (human {nat:.3f})" if math.isfinite(nat) else ""
    return head + tail + "."
