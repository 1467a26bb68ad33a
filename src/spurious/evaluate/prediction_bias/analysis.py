"""The ``prediction_bias`` analysis: paper 001's bias table as a registered analysis.

It judges the predictions supplied to the run (``--predictions``) on the split they
cover (the evaluation split, else the data) along every heuristic of the task, through
:func:`spurious.evaluate.prediction_bias.bias_table`; heuristic values come from the run
context (computed once and cached, or supplied with ``--attributes``).
"""

from __future__ import annotations

import logging
import math
from numbers import Integral, Real
from typing import Any, ClassVar

from spurious.analysis import (
    Analysis,
    AnalysisOutput,
    Requirements,
    VerdictScale,
    register_analysis,
)
from spurious.context import RunContext
from spurious.evaluate.prediction_bias.table import MC_REPEATS
from spurious.exceptions import AnalysisError, ParameterError
from spurious.results import Headline
from spurious.utils.metric_keys import metric_key, split_metric_key
from spurious.utils.validation import Interval, StrOptions, check_params

logger = logging.getLogger(__name__)


@register_analysis
class PredictionBias(Analysis):
    """Prediction bias of models along heuristic splits (Mikula et al., paper 001).

    Parameters
    ----------
    heuristics : list of str, optional
        Heuristics to split by (default: every heuristic of the task; with supplied
        attributes, every column of them).
    heuristic_params : dict, optional
        Parameters of heuristics by name, e.g. ``{"answer_length": {"aggregate": "mean"}}``
        (the mean answer length over annotators, as the paper's reference code).
    no_spacy : bool, default=False
        Leave out the heuristics that need spaCy when ``heuristics`` is not given.
    metric : {"f1", "em", "accuracy"}, optional
        Per-example score (default ``em`` for QA, as in the paper, ``accuracy`` otherwise).
    shared_threshold : bool, default=True
        Choose thresholds on the ``reference`` model and split every model there.
    reference : str, optional
        Model whose thresholds are shared (default: the first).
    thresholds : dict of str to float, optional
        Fixed thresholds per heuristic instead of the search.
    natural : bool, default=True
        Also compute the natural (human) bias from several annotations.
    min_annotator_coverage : float, default=0.5
    n_trials : int, default=100
    sample_size : int, default=800
        Examples per bootstrap resample (the paper's 800).
    adapt_sample_size : bool, default=True
        A heuristic whose most even threshold leaves fewer than ``sample_size`` examples
        on a side (negation on SNLI-sized data) is bootstrapped with half that side
        instead of being left undefined; ``sample_size_<heuristic>`` records the size.
    n_permutations : int, default=39
        Permutations of the test of the largest bias against scores shuffled across
        examples (the headline's null test; 0: none, and the headline rests on the
        interval alone). 39 permutations give p-values down to 0.025.
    replace : bool, default=True
    step : float, optional
    random_state : int, default=0

    See :func:`spurious.evaluate.prediction_bias.bias_table` for the metrics and scores.
    """

    name: ClassVar[str] = "prediction_bias"
    kind: ClassVar[str] = "evaluation"
    description: ClassVar[str] = (
        "How much better a model does on one side of a heuristic split than on the other "
        "(bootstrapped prediction bias, Think Twice paper 001 Alg. 1 and App. C)."
    )
    # Every task, multiple choice included (its heuristics are model-free answer cues).
    requires: ClassVar[Requirements] = Requirements(
        predictions=True, heuristics=True, tasks=("nli", "pair", "text", "qa", "mcq")
    )
    metric_docs: ClassVar[dict[str, str]] = {
        "em/<model> / f1/<model> / accuracy/<model>": "Mean per-example score of the model "
        "(the run's metric: SQuAD EM or F1 on a 0-1 scale, x100 = HF evaluate's; or "
        "accuracy), [0, 1].",
        "bias/<model>/<heuristic>": "Prediction bias: gap between the groups' bootstrap "
        "intervals, [0, 1]; 0 when they overlap.",
        "worse_group_em/<model>/<heuristic> / worse_group_f1/<model>/<heuristic> / "
        "worse_group_accuracy/<model>/<heuristic>": "Mean score of the worse group, [0, 1].",
        "threshold/<heuristic>": "T: low group = h(x) <= T (shared thresholds).",
        "n_low/<heuristic> / n_high/<heuristic>": "Group sizes at T.",
        "threshold/<model>/<heuristic> / n_low/<model>/<heuristic> / "
        "n_high/<model>/<heuristic>": "The same per model, without shared thresholds.",
        "natural_bias/<heuristic>": "Natural (human) bias: minimum over annotators.",
        "natural_worse_group_em/<heuristic> / natural_worse_group_f1/<heuristic> / "
        "natural_worse_group_accuracy/<heuristic>": "The annotators' worse group's mean score.",
        "natural_bias/<model>/<heuristic>": "Natural bias at the model's own threshold "
        "(without shared thresholds).",
        "bias_mc_sd/<model>/<heuristic>": "Sd of the bias over Monte-Carlo bootstrap seeds.",
        "sample_size/<heuristic>": "Bootstrap group size used for the heuristic (smaller "
        "than sample_size when adapted).",
        "n_missing/<model>": "Examples the model's file had no prediction for (scored as wrong).",
        "max_bias": "Largest bias over models and heuristics, [0, 1].",
        "max_bias_null_p_value": "Permutation p-value of max_bias (scores shuffled across "
        "examples, thresholds searched again), (0, 1].",
        "max_bias_null_q95": "95th percentile of the largest bias under that null.",
    }
    score_columns: ClassVar[dict[str, str]] = {
        "id": "Example id.",
        "attr_<heuristic>": "The heuristic's value h(x).",
        "score_<model>": "Per-example score of the model (EM, F1 or accuracy).",
        "score_annotator<k>": "Leave-one-out score of annotator k.",
        "group_<heuristic>": "low / high side of the shared threshold.",
        "prediction_bias_score": "Largest bias among the model's heuristics whose worse "
        "group holds the example, [0, 1]; higher = the example sits where the models "
        "lean on a shortcut.",
        "is_prediction_bias_issue": "Whether the example sits in the worse group of a "
        "heuristic with a positive bias for the reference model.",
    }
    #: The largest bias of any model, minus the annotators' bias on the same split.
    verdict_scale: ClassVar[VerdictScale] = VerdictScale(
        0.005,
        0.03,
        0.08,
        {
            "none": "no model leans on these shortcuts beyond the annotators",
            "low": "a small shortcut",
            "moderate": "a clear shortcut",
            "high": "a strong shortcut",
        },
    )
    fast_params: ClassVar[dict[str, Any]] = {
        "n_trials": 20,
        "sample_size": 20,
        "n_permutations": 19,
    }
    profiles: ClassVar[dict[str, dict[str, Any]]] = {
        "quick": {"no_spacy": True, "n_permutations": 19},
        "full": {},
    }
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "heuristics": [list, tuple, None],
        "heuristic_params": [dict, None],
        "no_spacy": ["boolean"],
        "metric": [StrOptions({"f1", "em", "accuracy"}), None],
        "shared_threshold": ["boolean"],
        "reference": [str, None],
        "thresholds": [dict, None],
        "natural": ["boolean"],
        "min_annotator_coverage": [Interval(Real, 0, 1, closed="both")],
        "n_trials": [Interval(Integral, 2, None, closed="left")],
        "sample_size": [Interval(Integral, 1, None, closed="left")],
        "adapt_sample_size": ["boolean"],
        "n_permutations": [Interval(Integral, 0, None, closed="left")],
        "replace": ["boolean"],
        "step": [Interval(Real, 0, None, closed="neither"), None],
        "random_state": [Interval(Integral, 0, None, closed="left"), None],
    }

    def __init__(
        self,
        heuristics: list[str] | None = None,
        heuristic_params: dict[str, dict[str, Any]] | None = None,
        no_spacy: bool = False,
        metric: str | None = None,
        shared_threshold: bool = True,
        reference: str | None = None,
        thresholds: dict[str, float] | None = None,
        natural: bool = True,
        min_annotator_coverage: float = 0.5,
        n_trials: int = 100,
        sample_size: int = 800,
        adapt_sample_size: bool = True,
        n_permutations: int = 39,
        replace: bool = True,
        step: float | None = None,
        random_state: int | None = 0,
    ) -> None:
        self.heuristics = heuristics
        self.heuristic_params = heuristic_params
        self.no_spacy = no_spacy
        self.metric = metric
        self.shared_threshold = shared_threshold
        self.reference = reference
        self.thresholds = thresholds
        self.natural = natural
        self.min_annotator_coverage = min_annotator_coverage
        self.n_trials = n_trials
        self.sample_size = sample_size
        self.adapt_sample_size = adapt_sample_size
        self.n_permutations = n_permutations
        self.replace = replace
        self.step = step
        self.random_state = random_state

    def heuristic_names(self, ctx: RunContext) -> list[str]:
        """The heuristics this run splits by (see the ``heuristics`` parameter)."""
        if self.heuristics:
            return list(self.heuristics)
        if ctx.attributes is not None:
            return [c for c in ctx.attributes.columns if c != "id"]
        from spurious.heuristics import HEURISTICS, list_heuristics

        fitted = ctx.heuristics_train is not None or ctx.eval is not None
        names = [
            n
            for n in list_heuristics(ctx.target.task.name)
            if not (self.no_spacy and HEURISTICS[n].requires_spacy)
            and (fitted or not HEURISTICS[n].needs_train)
        ]
        if not names:
            raise AnalysisError(f"No heuristic is available for task {ctx.target.task.name!r}.")
        return names

    def check(self, context: RunContext) -> None:
        """Everything :func:`bias_table` would refuse, before any work: the metric for the
        task, distinct model names and the reference, the heuristics (known for the task,
        or columns of supplied attributes for these ids) and the fixed thresholds."""
        from spurious.evaluate.prediction_bias.checks import (
            align_attributes,
            check_predictions,
            check_thresholds,
        )
        from spurious.stats.metrics import resolve_metric

        target = context.target
        resolve_metric(target.task.has_labels, self.metric)
        check_predictions(target, context.predictions, self.reference)
        names = self.heuristic_names(context)
        supplied = context.attributes
        if supplied is not None and all(n in supplied.columns for n in names):
            # The values the run will use: numeric, for every id of the judged split.
            align_attributes(supplied, target, names)
        else:
            self._check_heuristics(context, names)
        check_thresholds(self.thresholds, names)
        if (
            not self.adapt_sample_size
            and not self.thresholds
            and len(target) < 2 * self.sample_size
        ):
            raise ParameterError(
                f"The 'sample_size' parameter (--sample-size) is {self.sample_size}: a "
                f"threshold needs 2 x {self.sample_size} examples on each side, and "
                f"{target.name!r} has {len(target)} in all, so every bias would be undefined. "
                "Pass a smaller --sample-size, or drop --fixed-sample-size (sizes then adapt "
                "to the data)."
            )

    def _check_heuristics(self, ctx: RunContext, names: list[str]) -> None:
        """Heuristics computed for the run: registered for the task, their parameters
        valid, a training split for those that estimate statistics on one."""
        from spurious.heuristics import get_heuristic

        task = ctx.target.task.name
        params = dict(self.heuristic_params or {})
        unknown = sorted(set(params) - set(names))
        if unknown:
            raise ParameterError(
                f"The 'heuristic_params' parameter names {unknown}, which this run does not "
                f"split by; heuristics: {names}."
            )
        fitted = ctx.heuristics_train is not None or ctx.eval is not None
        for n in names:
            cls = get_heuristic(n, task=task)
            if task not in cls.tasks:
                raise ParameterError(
                    f"The 'heuristics' parameter (--heuristic) names {n!r}, a heuristic of "
                    f"tasks {list(cls.tasks)}, not of {task!r}."
                )
            try:
                h = cls(**params.get(n, {}))
            except TypeError:
                valid = sorted(cls().get_params(deep=False))
                raise ParameterError(
                    f"The 'heuristic_params' parameter gives {n!r} unknown parameter(s) "
                    f"{sorted(params[n])}; valid: {valid}."
                ) from None
            check_params(h._parameter_constraints, h.get_params(), n)
            if cls.needs_train and not fitted:
                raise ParameterError(
                    f"The heuristic {n!r} estimates its statistics on a training split; pass "
                    "one (--train, or --eval with DATA as the training split)."
                )

    def _run(self, ctx: RunContext) -> AnalysisOutput:
        from spurious.evaluate.prediction_bias import bias_table

        names = self.heuristic_names(ctx)
        attributes = ctx.heuristics(names, self.heuristic_params)
        res = bias_table(
            ctx.target,
            ctx.predictions,
            attributes,
            heuristics=names,
            metric=self.metric,
            shared_threshold=self.shared_threshold,
            reference=self.reference,
            thresholds=self.thresholds,
            natural=self.natural,
            min_annotator_coverage=self.min_annotator_coverage,
            n_trials=self.n_trials,
            sample_size=self.sample_size,
            adapt_sample_size=self.adapt_sample_size,
            n_permutations=self.n_permutations,
            step=self.step,
            replace=self.replace,
            random_state=self.random_state,
            progress=ctx.progress,
        )
        biases = [v for k, v in res.metrics.items() if split_metric_key(k)[0] == "bias"]
        if not any(math.isfinite(v) for v in biases):
            why = "; ".join(f"{h}: {r}" for h, r in res.details.get("undefined", {}).items())
            raise AnalysisError(
                f"Every prediction bias on {len(ctx.target)} examples is undefined "
                f"(sample_size={self.sample_size}): {why}."
            )
        scores = res.scores.copy()
        ref = res.details.get("reference") or res.details.get("models", [None])[0]
        score, flagged = _example_scores(scores, res.metrics, names, ref)
        scores["prediction_bias_score"] = score
        scores["is_prediction_bias_issue"] = flagged
        summary, details = res.summary, res.details
        left_out = self._spacy_left_out(ctx)
        if left_out:
            # The quick profile skips the parse-based heuristics for speed: say so, once.
            note = (
                f"left out the spaCy heuristics {left_out} (no_spacy=True, the quick "
                "profile's setting: they parse every text); the full profile or "
                "--set prediction_bias.no_spacy=false includes them"
            )
            logger.warning("prediction_bias: %s", note)
            summary = f"{summary} ({note})"
            details = {**details, "heuristics_left_out": left_out}
        adapted = self._adapted_note(len(ctx.target), res.metrics, res.details)
        if adapted:
            # Small splits (under 2 x sample_size) are measured with smaller groups instead
            # of failing; the run's notes and the summary say so.
            ctx.warnings.append(f"prediction_bias: {adapted}")
            summary = f"{summary} ({adapted})"
        return AnalysisOutput(scores=scores, metrics=res.metrics, summary=summary, details=details)

    def _adapted_note(self, n: int, metrics: dict[str, float], details: dict[str, Any]) -> str:
        """One sentence on the heuristics bootstrapped below ``sample_size`` ("" if none)."""
        sizes = {
            h: int(metrics[metric_key("sample_size", h)])
            for h in details.get("sample_size_notes") or {}
            if metric_key("sample_size", h) in metrics
        }
        if not sizes:
            return ""
        which = ", ".join(f"{h} {size}" for h, size in sizes.items())
        return (
            f"bootstrap groups adapted to the data for {len(sizes)} heuristic(s) ({which} "
            f"instead of sample_size={self.sample_size}: the {n:,} examples leave fewer than "
            f"{self.sample_size} on a side of their most even threshold)"
        )

    def _spacy_left_out(self, ctx: RunContext) -> list[str]:
        """The task's spaCy heuristics that ``no_spacy`` kept out of the default list."""
        if not self.no_spacy or self.heuristics or ctx.attributes is not None:
            return []
        from spurious.heuristics import HEURISTICS, list_heuristics

        return [n for n in list_heuristics(ctx.target.task.name) if HEURISTICS[n].requires_spacy]

    def headline(self, result: Any) -> Headline:
        """The largest bias of any model beyond the annotators', with its evidence.

        The effect is the largest bias minus the annotators' (natural) bias on the same
        heuristic (0 where no natural bias is measured). Its interval is a t interval
        from the bias' Monte-Carlo spread over ``MC_REPEATS + 1`` bootstrap seeds
        (``bias_mc_sd``); the null test is the permutation test of the largest bias
        (``max_bias_null_p_value``), which accounts for the search over thresholds,
        heuristics and models.
        """
        table = [
            r
            for r in result.details.get("table", [])
            if r.get("bias") is not None and math.isfinite(r["bias"])
        ]
        if not table:
            return super().headline(result)
        top = max(table, key=lambda r: r["bias"])
        human = result.metrics.get(metric_key("natural_bias", top["heuristic"]))
        has_human = isinstance(human, float) and math.isfinite(human)
        human_txt = f" (annotators {human:.3f})" if has_human else ""
        excess = top["bias"] - (human if has_human else 0.0)
        sd = top.get("bias_mc_sd", math.nan)
        interval = None
        if sd is not None and math.isfinite(sd):
            from scipy.stats import t

            # MC_REPEATS + 1 draws of the bias: a t interval with MC_REPEATS degrees of freedom.
            half = float(t.ppf(0.975, MC_REPEATS)) * sd
            interval = (excess - half, excess + half)
        p_value = result.metrics.get("max_bias_null_p_value")
        return self.verdict_scale.headline(
            "prediction bias",
            top["bias"],
            f"{top['model']} on {top['heuristic']}: bias {top['bias']:.3f}{human_txt}",
            effect=excess,
            interval=interval,
            p_value=p_value,
            null="scores shuffled across examples" if p_value is not None else None,
            measured="largest prediction bias of a model beyond the annotators' on the "
            "same split (gap between the groups' bootstrap intervals)",
        )


def _example_scores(
    scores: Any, metrics: dict[str, float], names: list[str], ref: str | None
) -> tuple[Any, Any]:
    """Per example: the largest bias of ``ref`` among the heuristics whose worse group holds it.

    Only shared thresholds give one split per heuristic (``group_<h>`` columns); without
    them the score is 0 and nothing is flagged.
    """
    import numpy as np

    n = len(scores)
    best = np.zeros(n)
    flagged = np.zeros(n, dtype=bool)
    score_col = f"score_{ref}"
    if score_col not in scores:
        return best, flagged
    s = scores[score_col].to_numpy(dtype=float)
    for h in names:
        bias = metrics.get(metric_key("bias", str(ref), h), math.nan)
        if f"group_{h}" not in scores or not bias > 0:
            continue
        groups = scores[f"group_{h}"].to_numpy()
        means = {g: np.nanmean(s[groups == g]) for g in ("low", "high") if (groups == g).any()}
        if len(means) < 2:
            continue
        inside = groups == min(means, key=means.get)
        best = np.where(inside, np.maximum(best, bias), best)
        flagged |= inside
    return best, flagged
