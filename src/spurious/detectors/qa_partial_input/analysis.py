"""The registered ``qa_partial_input`` analysis: question-only and passage-only QA baselines.

:class:`QAPartialInput` asks Kaushik & Lipton's (2018) question, "how much reading does
reading comprehension require?", of an extractive QA set without any model's
predictions. Extractive QA becomes **answer-sentence selection** (choose the sentence of
the context that holds the answer; :mod:`spurious.features.qa_sentences`), and a
conditional-logit probe (one weight vector scoring every sentence, a softmax over the
item's sentences) answers it from partial views of the item
(:mod:`spurious.features.qa_views`): the passage without the question, the question
with only the sentences' positions, the positions alone, and the whole item. Each view's
accuracy is judged against chance (the mean of 1 / number of sentences) with bootstrap
intervals and a shuffled-gold permutation test: the model, folds and statistics are
those of ``mc_leakage`` (:mod:`spurious.detectors.mcq_leakage`), whose items choose
among options the way these choose among sentences.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from spurious.analysis import AnalysisOutput, Requirements, VerdictScale, register_analysis
from spurious.context import RunContext
from spurious.detectors.base import Detector
from spurious.detectors.mcq_leakage.fitting import option_probabilities, shuffled_gold_null
from spurious.detectors.mcq_leakage.metrics import mc_leakage_metrics, permutation_p_value
from spurious.detectors.qa_partial_input.inputs import (
    build_inputs,
    describe_positions,
    grouped_folds,
)
from spurious.exceptions import AnalysisError, ParameterError
from spurious.features.qa_views import QA_VIEWS
from spurious.results import Headline
from spurious.stats.bootstrap import bootstrap_of_means
from spurious.utils.validation import Interval

__all__ = ["PARTIAL_VIEWS", "QAPartialInput"]

#: The views the verdict may rest on (position_only is the reference they are read against).
PARTIAL_VIEWS = ("passage_only", "question_only")
#: Fewest permutations whose smallest p-value, 1 / (B + 1), can fall below alpha = 0.05.
_MIN_PERMUTATIONS = 19
#: Fewest questions to cross-fit on, and to train on / score with an evaluation split.
_MIN_ITEMS = 20


def _view_label(view: str) -> str:
    return view.replace("_only", "-only").replace("_", " ")


@register_analysis
class QAPartialInput(Detector):
    """Question-only and passage-only baselines of extractive QA, against chance.

    Parameters
    ----------
    views : list of str, optional
        Views to score, from ``("full", "passage_only", "question_only",
        "position_only")`` (default: all four; see :mod:`spurious.features.qa_views`).
        ``full`` is needed for %R_R, NBA and NBR, ``position_only`` for the gain over
        the position prior. The verdict rests on the partial view (passage-only or
        question-only) whose Delta-over-chance interval lies highest.
    n_folds : int, default=5
        Without an evaluation split, out-of-fold predictions from this many folds score
        every question; a fold holds whole articles (``title``), else paragraphs
        (``group``), else contexts.
    l2 : float, default=1.0
        Ridge penalty of the conditional-logit probe.
    n_components : int, default=16
        SVD dimensions of the sentences' tf-idf vectors (the questions get
        ``min(8, n_components)``).
    n_bootstrap : int, default=1000
        Bootstrap resamples of the questions for every interval.
    confidence : float, default=0.95
    n_permutations : int, default=20
        Shuffled-gold refits for the permutation test of the judged view (each
        question's gold sentence re-drawn uniformly among its sentences, every fold
        refitted); 0: no test (the verdict rests on the interval alone). B is 0 or at
        least 19.
    issue_threshold : float, default=0.5
        A question is flagged (``is_qa_partial_input_issue``) when the judged view leaks
        (its Delta-over-chance interval lies above 0), its probe picks the gold sentence
        and gives it a probability of at least this.
    n_threads : int, optional
        Probe fits side by side on this many threads (default: the cores, at most 8);
        the result does not depend on it.
    random_state : int, default=0
        Folds, SVDs, bootstrap and permutations.

    Examples
    --------
    >>> from spurious.data.synthetic_qa import make_qa_artifacts
    >>> ds = make_qa_artifacts(n=200, artifact_rate=0.9).dataset
    >>> res = QAPartialInput(n_bootstrap=100, n_components=4).run(ds)
    >>> res.details["judged_view"], res.headline["severity"]
    ('passage_only', 'high')
    """

    name: ClassVar[str] = "qa_partial_input"
    description: ClassVar[str] = (
        "How well a probe finds the answer's sentence of extractive QA from the passage "
        "alone or the question alone, against chance (Kaushik & Lipton 2018, as answer-"
        "sentence selection); no model predictions needed."
    )
    requires: ClassVar[Requirements] = Requirements(tasks=("qa",))
    #: Delta over chance of the judged view, by its 95% interval's lower bound.
    verdict_scale: ClassVar[VerdictScale] = VerdictScale(
        1e-12,
        0.05,
        0.15,
        {
            "none": "no partial-input leakage detectable (the interval includes chance)",
            "low": "weak partial-input leakage",
            "moderate": "moderate partial-input leakage",
            "high": "strong partial-input leakage",
        },
    )
    # Cheap (lexical features, Newton fits) and decisive for QA: early in the audit.
    audit_order: ClassVar[int] = 20
    fast_params: ClassVar[dict[str, Any]] = {"n_bootstrap": 100, "n_components": 4}
    profiles: ClassVar[dict[str, dict[str, Any]]] = {
        # Measured on SQuAD 1.1 dev (10,570 questions, 52,478 sentences; 2 busy cores):
        # features ~20 s of CPU, the 20 fits ~25 s, the 20 shuffled-gold refits of the
        # passage-only view's 5 folds ~15 s.
        "quick": {"n_bootstrap": 500},
        "full": {},
    }
    metric_docs: ClassVar[dict[str, str]] = {
        "accuracy_<view>": "Share of scored questions whose answer sentence the probe "
        "seeing <view> picks, [0, 1] (sentence level, not span F1).",
        "chance": "Mean over the scored questions of 1/k (k sentences in the context): a "
        "blind guess's accuracy, the baseline of the verdict.",
        "delta_chance_<view>": "Accuracy minus chance; > 0: the view finds answers.",
        "majority_accuracy": "Accuracy of always picking the sentence position most often "
        "gold in training (usually the first sentence).",
        "delta_maj_<view>": "Accuracy minus majority_accuracy.",
        "delta_position_<view>": "Accuracy minus the position-only probe's, paired; > 0: "
        "the view knows more than where answers usually sit.",
        "recovery_<view>": "%R_R, chance-corrected: (A_view - chance) / (A_full - chance); "
        "NaN when the full probe does not beat chance.",
        "recovery_raw_<view>": "A_view / A_full.",
        "nba_<view>": "Share of questions where the <view> and full probes pick the same sentence.",
        "nbr_<view>": "Of the questions where they agree, the share both get right.",
        "<metric>_ci_low / _ci_high": "Percentile bootstrap interval over the scored questions.",
        "p_value": "Permutation p-value of the judged view's accuracy against the probe "
        "refitted on gold sentences re-drawn uniformly within each question, (1 + #null >= "
        "observed) / (1 + B); NaN without permutations.",
        "null_accuracy_mean / null_accuracy_q95": "Mean and 95th percentile of the judged "
        "view's accuracy under that null.",
        "n_permutations": "Shuffled-gold refits (B).",
        "answer_in_first_sentence": "Share of scored questions whose answer is in the "
        "context's first sentence.",
        "mean_sentences": "Mean sentences per scored context.",
        "n_train": "Questions the probes were trained on (per fold when cross-fitting).",
        "n_eval": "Questions scored (with a located answer).",
        "n_unlocated": "Scored-split questions whose answer was not found in the context "
        "(left out).",
        "n_issues": "Questions flagged is_qa_partial_input_issue.",
    }
    score_columns: ClassVar[dict[str, str]] = {
        "id": "Question id.",
        "gold_sentence": "Index of the sentence holding the first answer (0 = first; -1: "
        "the answer was not located, the question is not scored).",
        "n_sentences": "Sentences in the context.",
        "pred_<view>": "Sentence the probe seeing <view> picks (-1: not scored).",
        "p_gold_<view>": "Probability that probe gives the gold sentence, [0, 1].",
        "correct_<view>": "Whether it picks the gold sentence.",
        "qa_partial_input_score": "p_gold of the judged view, [0, 1]; higher = the answer "
        "sentence is easier to find from that view alone.",
        "is_qa_partial_input_issue": "The judged view leaks (Delta-over-chance interval "
        "above 0), its probe picks the gold sentence with p >= issue_threshold.",
    }
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "views": [list, tuple, None],
        "n_folds": [Interval(Integral, 2, None, closed="left")],
        "l2": [Interval(Real, 0, None, closed="neither")],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "n_bootstrap": [Interval(Integral, 10, None, closed="left")],
        "confidence": [Interval(Real, 0, 1, closed="neither")],
        "n_permutations": [Interval(Integral, 0, None, closed="left")],
        "issue_threshold": [Interval(Real, 0, 1, closed="both")],
        "n_threads": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        views: list[str] | None = None,
        n_folds: int = 5,
        l2: float = 1.0,
        n_components: int = 16,
        n_bootstrap: int = 1000,
        confidence: float = 0.95,
        n_permutations: int = 20,
        issue_threshold: float = 0.5,
        n_threads: int | None = None,
        random_state: int | None = 0,
    ) -> None:
        self.views = views
        self.n_folds = n_folds
        self.l2 = l2
        self.n_components = n_components
        self.n_bootstrap = n_bootstrap
        self.confidence = confidence
        self.n_permutations = n_permutations
        self.issue_threshold = issue_threshold
        self.n_threads = n_threads
        self.random_state = random_state

    # -- parameters and requirements ---------------------------------------------------
    def validate_params(self) -> None:
        """Constraints, plus: ``views`` names distinct views and a partial one; B is 0 or >= 19."""
        super().validate_params()
        self._views()
        if 0 < self.n_permutations < _MIN_PERMUTATIONS:
            raise ParameterError(
                f"The 'n_permutations' parameter must be 0 (no test) or at least "
                f"{_MIN_PERMUTATIONS}: with B permutations the smallest p-value is 1/(B+1), "
                f"which must fall below 0.05. Got {self.n_permutations}."
            )

    def _views(self) -> list[str]:
        if self.views is None:
            return list(QA_VIEWS)
        views = list(self.views)
        bad = [v for v in views if v not in QA_VIEWS]
        if bad or len(set(views)) != len(views) or not set(views) & set(PARTIAL_VIEWS):
            raise ParameterError(
                f"The 'views' parameter must list distinct views from {list(QA_VIEWS)}, "
                f"at least one of {list(PARTIAL_VIEWS)}. Got {self.views!r} instead."
            )
        return [v for v in QA_VIEWS if v in views]  # the report's order

    def _seed(self) -> int | None:
        rs: Any = self.random_state
        if rs is None or isinstance(rs, Integral):
            return None if rs is None else int(rs)
        return int(rs.randint(2**31 - 1))

    def check(self, context: RunContext) -> None:
        """Enough questions to cross-fit (or to train on and score)."""
        n = len(context.train)
        if context.eval is None:
            need = max(_MIN_ITEMS, 2 * self.n_folds)
            if n < need:
                raise AnalysisError(
                    f"qa_partial_input cross-fits with n_folds={self.n_folds} and needs at "
                    f"least {need} questions; got {n}. Pass more questions or an evaluation "
                    "split."
                )
        elif n < _MIN_ITEMS or len(context.eval) < _MIN_ITEMS // 2:
            raise AnalysisError(
                f"qa_partial_input needs at least {_MIN_ITEMS} training and "
                f"{_MIN_ITEMS // 2} evaluation questions; got {n} and {len(context.eval)}."
            )

    # -- the work ------------------------------------------------------------------------
    def _run(self, ctx: RunContext) -> AnalysisOutput:
        views, seed = self._views(), self._seed()
        scored = ctx.target
        inp = build_inputs(
            ctx.train, ctx.eval, views, n_components=int(self.n_components),
            random_state=0 if seed is None else seed,
        )  # fmt: skip
        if len(inp.y_train) < _MIN_ITEMS or len(inp.y) < _MIN_ITEMS // 2:
            raise AnalysisError(
                f"qa_partial_input found the answer in the context of {len(inp.y_train)} "
                f"training and {len(inp.y)} scored questions; it needs at least {_MIN_ITEMS} "
                f"and {_MIN_ITEMS // 2} (answers are located by answer_starts, else by their "
                "first occurrence in the context)."
            )
        fold_of, grouped_by = None, None
        if ctx.eval is None:
            fold_of, grouped_by = grouped_folds(
                ctx.train.frame, inp.train_rows, int(self.n_folds), seed
            )
        fit: dict[str, Any] = dict(
            l2=float(self.l2), n_threads=self.n_threads, progress=ctx.progress, label=self.name
        )
        probas = option_probabilities(inp.views, inp.y_train, fold_of=fold_of, **fit)
        preds = {v: p.argmax(axis=1) for v, p in probas.items()}
        majority = int(np.argmax(np.bincount(inp.y_train)))
        boot: dict[str, Any] = dict(
            n_resamples=self.n_bootstrap, confidence=self.confidence, random_state=seed
        )
        metrics = mc_leakage_metrics(inp.y, inp.k, preds, majority, **boot)
        correct = {v: preds[v] == inp.y for v in views}
        if "position_only" in views:
            base = correct["position_only"].astype(float)
            for v in views:
                if v != "position_only":
                    est, lo, hi = bootstrap_of_means(
                        lambda a, b: a - b, [correct[v].astype(float), base], **boot
                    )
                    metrics[f"delta_position_{v}"] = est
                    metrics[f"delta_position_{v}_ci_low"] = lo
                    metrics[f"delta_position_{v}_ci_high"] = hi
        judged = max(
            (v for v in PARTIAL_VIEWS if v in views),
            key=lambda v: metrics[f"delta_chance_{v}_ci_low"],
        )
        self._null_test(metrics, inp, judged, fold_of, ctx.eval is not None, fit, seed)

        leaks = metrics[f"delta_chance_{judged}_ci_low"] > 0
        scores = self._scores(scored, inp, probas, preds, judged, leaks)
        n_train = len(inp.y_train)
        if ctx.eval is None:  # per fold
            n_train = n_train * (self.n_folds - 1) // self.n_folds
        metrics.update(
            answer_in_first_sentence=float((inp.y == 0).mean()),
            mean_sentences=float(inp.k.mean()),
            n_train=float(n_train),
            n_eval=float(len(inp.y)),
            n_unlocated=float((~inp.located).sum()),
            n_issues=float(scores["is_qa_partial_input_issue"].sum()),
        )
        details = {
            "views": views,
            "judged_view": judged,
            "level": "sentence",
            "task_reduction": "answer-sentence selection: the label is the sentence holding "
            "the first gold answer's start; a conditional logit over the context's sentences",
            "mode": "eval_split" if ctx.eval is not None else f"{self.n_folds}-fold",
            "folds_grouped_by": grouped_by,
            "majority_position": majority + 1,
            "answer_positions": describe_positions(inp.y),
            "featurizer": {
                "features": "lexical",
                "n_components": int(self.n_components),
                "n_columns": {v: len(c) for v, c in inp.columns.items()},
            },
            "probe": {"model": "conditional_logit", "l2": float(self.l2)},
        }
        return AnalysisOutput(
            scores=scores,
            metrics=metrics,
            summary=_summary(metrics, views, judged),
            details=details,
        )

    def _null_test(
        self,
        metrics: dict[str, float],
        inp: Any,
        judged: str,
        fold_of: np.ndarray | None,
        has_eval: bool,
        fit: dict[str, Any],
        seed: int | None,
    ) -> None:
        """The judged view refitted on gold sentences re-drawn within each question."""
        metrics["n_permutations"] = float(self.n_permutations)
        if not self.n_permutations:
            metrics["p_value"] = math.nan
            return
        null = shuffled_gold_null(
            inp.views[judged], inp.k_train, inp.k if has_eval else None, fold_of=fold_of,
            n_permutations=int(self.n_permutations), random_state=seed, **fit,
        )  # fmt: skip
        null_acc = null.mean(axis=1)
        metrics["p_value"] = permutation_p_value(metrics[f"accuracy_{judged}"], null_acc)
        metrics["null_accuracy_mean"] = float(null_acc.mean())
        metrics["null_accuracy_q95"] = float(np.quantile(null_acc, 0.95))

    def _scores(
        self,
        scored: Any,
        inp: Any,
        probas: dict[str, np.ndarray],
        preds: dict[str, np.ndarray],
        judged: str,
        leaks: bool,
    ) -> pd.DataFrame:
        n, at = len(scored), inp.located
        rows = np.arange(len(inp.y))
        scores = pd.DataFrame({"id": scored.ids})
        scores["gold_sentence"] = inp.gold.astype(np.int64)
        scores["n_sentences"] = inp.n_sentences.astype(np.int64)
        for v in probas:
            pred = np.full(n, -1, dtype=np.int64)
            pred[at] = preds[v]
            p_gold = np.full(n, np.nan)
            p_gold[at] = probas[v][rows, inp.y]
            scores[f"pred_{v}"] = pred
            scores[f"p_gold_{v}"] = p_gold
            scores[f"correct_{v}"] = at & (pred == inp.gold)
        p = scores[f"p_gold_{judged}"].to_numpy()
        scores["qa_partial_input_score"] = p
        # Only a leaking view says which questions leak (as partial_input, mc_leakage).
        scores["is_qa_partial_input_issue"] = (
            leaks
            & scores[f"correct_{judged}"].to_numpy()
            & (np.nan_to_num(p) >= self.issue_threshold)
        )
        return scores

    def headline(self, result: Any) -> Headline:
        """The judged view against chance, by its Delta interval and the null; position beside."""
        m = result.metrics
        judged = (result.details or {}).get("judged_view")
        if not judged or f"delta_chance_{judged}" not in m:
            return super().headline(result)
        acc, chance = m[f"accuracy_{judged}"], m["chance"]
        lo, hi = m[f"accuracy_{judged}_ci_low"], m[f"accuracy_{judged}_ci_high"]
        d_lo, d_hi = m[f"delta_chance_{judged}_ci_low"], m[f"delta_chance_{judged}_ci_high"]
        label = _view_label(judged)
        text = (
            f"{label} probe finds the answer sentence {acc:.1%} [{lo:.1%}, {hi:.1%}] vs chance "
            f"{chance:.1%} (Delta {m[f'delta_chance_{judged}']:+.3f} [{d_lo:+.3f}, {d_hi:+.3f}])"
        )
        if "accuracy_position_only" in m:
            text += f"; position alone {m['accuracy_position_only']:.1%}"
        p = m.get("p_value")
        if p is not None and p == p:
            text += f"; permutation p = {p:.3g}"
        return self.verdict_scale.headline(
            "QA partial-input leakage",
            m[f"delta_chance_{judged}"],
            text,
            interval=(d_lo, d_hi),
            p_value=p,
            null="the probe refitted on gold sentences re-drawn uniformly within each question",
            measured=f"Delta over chance of the {label} probe choosing the answer's sentence: "
            "its accuracy minus the mean of 1/(number of sentences), with a 95% bootstrap "
            "interval over the scored questions",
        )


def _summary(metrics: dict[str, float], views: list[str], judged: str) -> str:
    """Each view's accuracy against chance in one line, the judged view first."""
    order = [judged, *(v for v in views if v != judged)]
    parts = [
        f"{v}: {metrics[f'accuracy_{v}']:.3f} [{metrics[f'accuracy_{v}_ci_low']:.3f}, "
        f"{metrics[f'accuracy_{v}_ci_high']:.3f}]"
        for v in order
    ]
    text = f"answer sentence found, {'; '.join(parts)} vs chance {metrics['chance']:.3f}"
    if metrics.get("p_value") == metrics.get("p_value"):
        text += f" (permutation p = {metrics['p_value']:.3g})"
    return text
