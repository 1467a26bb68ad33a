"""The registered ``mc_leakage`` analysis: partial-input leakage of multiple-choice items.

:class:`MCLeakage` is paper 003's partial-input test (Sec. 2-3.1) in multiple-choice
form: an option-scoring probe sees an item through a view (the whole item, the options
alone, the question alone: :data:`~spurious.features.mcq.MC_VIEWS`) and its accuracy is
compared with chance. A choices-only probe above chance means the options give the answer
away (Balepur et al., ACL 2024). Predictions come from
:mod:`~spurious.detectors.mcq_leakage.fitting`, metrics from
:mod:`~spurious.detectors.mcq_leakage.metrics`.
"""

from __future__ import annotations

import os
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from spurious.analysis import AnalysisOutput, Requirements, VerdictScale, register_analysis
from spurious.context import RunContext
from spurious.data.mcq import LETTERS
from spurious.detectors.base import Detector
from spurious.detectors.mcq_leakage.fitting import (
    ProbeInputs,
    item_folds,
    option_probabilities,
    shuffled_gold_null,
)
from spurious.detectors.mcq_leakage.metrics import (
    group_table,
    mc_leakage_metrics,
    permutation_p_value,
)
from spurious.exceptions import AnalysisError, ParameterError
from spurious.features.mcq import MC_VIEWS
from spurious.results import Headline
from spurious.utils.validation import Interval

__all__ = ["MCLeakage", "option_features"]

#: Fewest permutations whose smallest p-value, 1 / (B + 1), can fall below alpha = 0.05.
_MIN_PERMUTATIONS = 19
#: Fewest items to cross-fit on, and to train on / score with an evaluation split.
_MIN_ITEMS = 20
#: The other tasks' lexical representations: ``spurious audit --features tfidf`` shares
#: its representation with every analysis, and on options it means the lexical cues.
_LEXICAL_ALIASES = ("lexical", "bow", "tfidf")


def option_features(features: str) -> str:
    """The :class:`~spurious.features.mcq.OptionFeaturizer` spec a ``features`` value names.

    Examples
    --------
    >>> option_features("tfidf"), option_features("minilm")
    ('lexical', 'minilm')
    """
    if features in _LEXICAL_ALIASES:
        return "lexical"
    if features == "minilm" or (isinstance(features, str) and os.path.isdir(features)):
        return features
    raise ParameterError(
        "The 'features' parameter of mc_leakage must be 'minilm', 'lexical' ('bow' and "
        f"'tfidf' mean 'lexical' on options) or a local sentence-encoder folder. Got "
        f"{features!r} instead."
    )


def _view_label(view: str) -> str:
    return view.replace("_only", "-only").replace("_", " ")


@register_analysis
class MCLeakage(Detector):
    """Partial-input leakage of multiple-choice items: choices-only, question-only vs chance.

    Parameters
    ----------
    features : str, default="minilm"
        Option features (:class:`~spurious.features.mcq.OptionFeaturizer`): ``"lexical"``
        (letter, length, overlap, numeric and "all of the above" cues; no torch; ``"bow"``
        and ``"tfidf"``, which ``spurious audit --features`` may share, mean it too),
        ``"minilm"`` (those plus frozen all-MiniLM-L6-v2 option / question embeddings,
        PCA-reduced) or a local sentence-encoder folder.
    views : list of str, optional
        Views to score, from ``("full", "choices_only", "question_only")`` (default: all
        three). ``full`` is needed for %R_R, NBA and NBR; the verdict rests on
        ``choices_only`` when it is scored, else on the view leaking most.
    n_folds : int, default=5
        Without an evaluation split, out-of-fold predictions from this many folds
        (items shuffled with ``random_state``) score every item.
    l2 : float, default=1.0
        Ridge penalty of the conditional-logit probe.
    n_components : int, default=32
        PCA dimensions of each embedding block (``features="minilm"``).
    n_bootstrap : int, default=1000
        Bootstrap resamples of the items for every interval.
    confidence : float, default=0.95
    n_permutations : int, default=20
        Shuffled-gold refits for the permutation test of the judged view (gold
        positions re-drawn uniformly within each item, every fold refitted); 0: no test
        (the verdict rests on the interval alone). With B permutations the smallest
        p-value is 1 / (B + 1), so B is 0 or at least 19.
    by_group : bool, default=True
        Leakage per group (MMLU subject) when items have a ``group``: the ``groups``
        table.
    issue_threshold : float, default=0.5
        An item is flagged (``is_mc_leakage_issue``) when the judged view leaks (its
        Delta-over-chance interval lies above 0) and its probe gives the gold option a
        probability of at least this (for 4 options, twice chance).
    n_threads : int, optional
        Probe fits run side by side on this many threads (default: the cores, at most
        8); the result does not depend on it.
    random_state : int, default=0
        Folds, bootstrap and permutations.

    Examples
    --------
    >>> from spurious.data.synthetic_mcq import make_mcq_artifacts
    >>> ds = make_mcq_artifacts(n=300, artifact="length", artifact_rate=0.6).dataset
    >>> res = MCLeakage(features="lexical", n_bootstrap=100).run(ds)
    >>> res.metrics["delta_chance_choices_only_ci_low"] > 0.2, res.headline["severity"]
    (True, 'high')
    """

    name: ClassVar[str] = "mc_leakage"
    description: ClassVar[str] = (
        "How well a probe answers multiple-choice items from the options alone (choices-"
        "only) or the question alone, against chance - PECO paper Sec. 2-3.1 in MC form."
    )
    requires: ClassVar[Requirements] = Requirements(labels=True, features=True, tasks=("mcq",))
    #: Delta over chance of the judged view, by its 95% interval's lower bound (the "low"
    #: threshold is the smallest positive step: a bound of exactly 0 reads "none").
    verdict_scale: ClassVar[VerdictScale] = VerdictScale(
        1e-12,
        0.05,
        0.15,
        {
            "none": "no leakage detectable (the interval includes chance)",
            "low": "weak leakage",
            "moderate": "moderate leakage",
            "high": "strong leakage",
        },
    )
    # Seconds of probe fits on shared option features, and the decisive MC verdict.
    audit_order: ClassVar[int] = 20
    fast_params: ClassVar[dict[str, Any]] = {"features": "lexical", "n_bootstrap": 100}
    profiles: ClassVar[dict[str, dict[str, Any]]] = {
        # Measured on MMLU test (14,033 items, 2 quiet cores): lexical option blocks ~4 s,
        # the 15 fits ~2 s and the 20 shuffled-gold refits of every fold ~8 s, no torch.
        # With MiniLM the refits take ~40 s, plus ~4 min to embed the items the first
        # time. So the quick audit keeps the permutation test on lexical cues; the full
        # one uses MiniLM. (`spurious audit` shares its --features with every analysis.)
        "quick": {"features": "lexical", "n_bootstrap": 500},
        "full": {},
    }
    metric_docs: ClassVar[dict[str, str]] = {
        "accuracy_<view>": "Accuracy of the probe seeing <view> (full = A_PSC, Eq. 2; "
        "choices_only / question_only = A_SSC, Eq. 3), [0, 1].",
        "chance": "Mean over the scored items of 1/k (k options): the accuracy of a blind "
        "guess, the baseline of the verdict (not the majority letter).",
        "delta_chance_<view>": "Accuracy minus chance; > 0 means the view gives answers away.",
        "majority_accuracy": "Accuracy of always answering the most frequent training gold "
        "letter (reported; a letter bias is itself a shortcut, so not the baseline).",
        "delta_maj_<view>": "Delta_maj (Eq. 4) = accuracy - majority-letter accuracy.",
        "recovery_<view>": "%R_R (Eq. 5), chance-corrected: (A_view - chance) / (A_full - "
        "chance), a fraction; NaN when the full probe does not beat chance.",
        "recovery_raw_<view>": "%R_R as printed in Eq. 5: A_view / A_full.",
        "nba_<view>": "NBA (Eq. 7): share of items where the <view> and full probes agree.",
        "nbr_<view>": "NBR (Eq. 8): of the items where they agree, the share both get right.",
        "<metric>_ci_low / _ci_high": "Percentile bootstrap interval over the scored items.",
        "p_value": "Permutation p-value of the judged view's accuracy against the probe "
        "refitted on gold positions re-drawn uniformly within each item, (1 + #null >= "
        "observed) / (1 + B); NaN without permutations.",
        "null_accuracy_mean / null_accuracy_q95": "Mean and 95th percentile of the judged "
        "view's accuracy under that null.",
        "n_permutations": "Shuffled-gold refits (B).",
        "n_train": "Items the probes were trained on (per fold when cross-fitting).",
        "n_eval": "Items scored.",
        "n_issues": "Items flagged is_mc_leakage_issue.",
        "n_groups": "Groups in the groups table (0 without it).",
        "n_leaky_groups": "Groups whose Delta-over-chance interval lies above 0 (unadjusted).",
    }
    score_columns: ClassVar[dict[str, str]] = {
        "id": "Item id.",
        "group": "The item's group (MMLU subject), when items have one.",
        "gold": "Gold letter.",
        "k": "Number of options.",
        "pred_<view>": "Letter the probe seeing <view> answers.",
        "p_gold_<view>": "Probability that probe gives the gold option, [0, 1].",
        "correct_<view>": "Whether that answer is the gold.",
        "mc_leakage_score": "p_gold of the judged view (choices_only by default), [0, 1]; "
        "higher = the gold is easier to pick from that view alone.",
        "is_mc_leakage_issue": "The judged view leaks (Delta-over-chance interval above 0) "
        "and its probe gives the gold p >= issue_threshold.",
    }
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "features": [str],
        "views": [list, tuple, None],
        "n_folds": [Interval(Integral, 2, None, closed="left")],
        "l2": [Interval(Real, 0, None, closed="neither")],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "n_bootstrap": [Interval(Integral, 10, None, closed="left")],
        "confidence": [Interval(Real, 0, 1, closed="neither")],
        "n_permutations": [Interval(Integral, 0, None, closed="left")],
        "by_group": ["boolean"],
        "issue_threshold": [Interval(Real, 0, 1, closed="both")],
        "n_threads": [Interval(Integral, 1, None, closed="left"), None],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        features: str = "minilm",
        views: list[str] | None = None,
        n_folds: int = 5,
        l2: float = 1.0,
        n_components: int = 32,
        n_bootstrap: int = 1000,
        confidence: float = 0.95,
        n_permutations: int = 20,
        by_group: bool = True,
        issue_threshold: float = 0.5,
        n_threads: int | None = None,
        random_state: int | None = 0,
    ) -> None:
        self.features = features
        self.views = views
        self.n_folds = n_folds
        self.l2 = l2
        self.n_components = n_components
        self.n_bootstrap = n_bootstrap
        self.confidence = confidence
        self.n_permutations = n_permutations
        self.by_group = by_group
        self.issue_threshold = issue_threshold
        self.n_threads = n_threads
        self.random_state = random_state

    # -- parameters and requirements ---------------------------------------------------
    def validate_params(self) -> None:
        """Constraints, plus: ``views`` names distinct MC views; B is 0 or >= 19."""
        super().validate_params()
        option_features(self.features)
        self._views()
        if 0 < self.n_permutations < _MIN_PERMUTATIONS:
            raise ParameterError(
                f"The 'n_permutations' parameter must be 0 (no test) or at least "
                f"{_MIN_PERMUTATIONS}: with B permutations the smallest p-value is 1/(B+1), "
                f"which must fall below 0.05. Got {self.n_permutations}."
            )

    def _views(self) -> list[str]:
        if self.views is None:
            return list(MC_VIEWS)
        views = list(self.views)
        bad = [v for v in views if v not in MC_VIEWS]
        if not views or bad or len(set(views)) != len(views):
            raise ParameterError(
                f"The 'views' parameter must list distinct views from {list(MC_VIEWS)}. "
                f"Got {self.views!r} instead."
            )
        return [v for v in MC_VIEWS if v in views]  # the report's order

    def requirements(self) -> Requirements:
        """MiniLM features need the encoder extra; lexical ones need nothing."""
        req = type(self).requires
        if self.features in _LEXICAL_ALIASES:
            return req
        extras = (("torch", "encoder"), ("transformers", "encoder"))
        return Requirements(labels=True, features=True, tasks=("mcq",), extras=extras)

    def _seed(self) -> int | None:
        # Folds, bootstrap and permutations take a plain seed; a RandomState gives one.
        rs: Any = self.random_state
        if rs is None or isinstance(rs, Integral):
            return None if rs is None else int(rs)
        return int(rs.randint(2**31 - 1))

    def check(self, context: RunContext) -> None:
        """Enough items to cross-fit (or to train on and score)."""
        n = len(context.train)
        if context.eval is None:
            need = max(_MIN_ITEMS, 2 * self.n_folds)
            if n < need:
                raise AnalysisError(
                    f"mc_leakage cross-fits with n_folds={self.n_folds} and needs at least "
                    f"{need} items; got {n}. Pass more items or an evaluation split."
                )
        elif n < _MIN_ITEMS or len(context.eval) < _MIN_ITEMS // 2:
            raise AnalysisError(
                f"mc_leakage needs at least {_MIN_ITEMS} training and {_MIN_ITEMS // 2} "
                f"evaluation items; got {n} and {len(context.eval)}."
            )

    # -- the run -----------------------------------------------------------------------
    def _inputs(self, ctx: RunContext, views: list[str]) -> dict[str, ProbeInputs]:
        out = {}
        for v in views:
            cfg = dict(
                features=option_features(self.features),
                view=v,
                n_components=int(self.n_components),
            )
            train = ctx.artifact("option_blocks", split="train", **cfg)
            X_eval = None
            if ctx.eval is not None:
                X_eval = ctx.artifact("option_blocks", split="eval", **cfg).X
            out[v] = ProbeInputs(train.X, train.n_features, X_eval)
        return out

    def _run(self, ctx: RunContext) -> AnalysisOutput:
        views, seed = self._views(), self._seed()
        scored = ctx.target
        y_train, y = ctx.train.labels, scored.labels
        k_train = ctx.train.frame["options"].map(len).to_numpy(dtype=np.int64)
        k = scored.frame["options"].map(len).to_numpy(dtype=np.int64)
        fold_of = item_folds(len(ctx.train), self.n_folds, seed) if ctx.eval is None else None
        inputs = self._inputs(ctx, views)
        fit: dict[str, Any] = dict(
            l2=float(self.l2), n_threads=self.n_threads, progress=ctx.progress
        )
        probas = option_probabilities(inputs, y_train, fold_of=fold_of, **fit)
        preds = {v: p.argmax(axis=1) for v, p in probas.items()}
        majority = int(np.argmax(np.bincount(y_train)))
        boot: dict[str, Any] = dict(
            n_resamples=self.n_bootstrap, confidence=self.confidence, random_state=seed
        )
        metrics = mc_leakage_metrics(y, k, preds, majority, **boot)
        judged = self._judged_view(views, metrics)

        null = None
        if self.n_permutations:
            null = shuffled_gold_null(
                inputs[judged], k_train, k if ctx.eval is not None else None,
                fold_of=fold_of, n_permutations=int(self.n_permutations),
                random_state=seed, **fit,
            )  # fmt: skip
            null_acc = null.mean(axis=1)
            metrics["p_value"] = permutation_p_value(metrics[f"accuracy_{judged}"], null_acc)
            metrics["null_accuracy_mean"] = float(null_acc.mean())
            metrics["null_accuracy_q95"] = float(np.quantile(null_acc, 0.95))
        else:
            metrics["p_value"] = float("nan")
        metrics["n_permutations"] = float(self.n_permutations)

        correct = {v: preds[v] == y for v in views}
        leaks = metrics[f"delta_chance_{judged}_ci_low"] > 0
        scores = self._scores(scored, probas, preds, correct, judged, leaks)
        tables: dict[str, pd.DataFrame] = {}
        groups = scored.groups
        if self.by_group and groups is not None:
            tables["groups"] = group_table(groups, y, k, correct, judged, null, **boot)
        n_train = len(ctx.train)
        if ctx.eval is None:  # per fold
            n_train = n_train * (self.n_folds - 1) // self.n_folds
        metrics.update(
            n_train=float(n_train),
            n_eval=float(len(scored)),
            n_issues=float(scores["is_mc_leakage_issue"].sum()),
            n_groups=float(len(tables["groups"]) if tables else 0),
            n_leaky_groups=float((tables["groups"]["delta_chance_ci_low"] > 0).sum())
            if tables
            else 0.0,
        )
        details = {
            "views": views,
            "judged_view": judged,
            "majority_letter": LETTERS[majority],
            "mode": "eval_split" if ctx.eval is not None else f"{self.n_folds}-fold",
            "featurizer": {
                "features": option_features(self.features),
                "n_components": int(self.n_components),
            },
            "probe": {"model": "conditional_logit", "l2": float(self.l2)},
            "top_groups": _top_groups(tables.get("groups")),
        }
        return AnalysisOutput(
            scores=scores,
            metrics=metrics,
            summary=_summary(metrics, views, judged),
            details=details,
            tables=tables,
        )

    @staticmethod
    def _judged_view(views: list[str], metrics: dict[str, float]) -> str:
        """``choices_only`` when scored; else the view whose Delta interval is highest."""
        if "choices_only" in views:
            return "choices_only"
        return max(views, key=lambda v: metrics[f"delta_chance_{v}_ci_low"])

    def _scores(
        self,
        scored: Any,
        probas: dict[str, np.ndarray],
        preds: dict[str, np.ndarray],
        correct: dict[str, np.ndarray],
        judged: str,
        leaks: bool,
    ) -> pd.DataFrame:
        y = scored.labels
        rows = np.arange(len(y))
        letters = np.array(list(LETTERS), dtype=object)
        scores = pd.DataFrame({"id": scored.ids})
        if scored.groups is not None:
            scores["group"] = scored.groups.astype(str)
        scores["gold"] = letters[y]
        scores["k"] = scored.frame["options"].map(len).to_numpy(dtype=np.int64)
        for v in probas:
            scores[f"pred_{v}"] = letters[preds[v]]
            scores[f"p_gold_{v}"] = probas[v][rows, y]
            scores[f"correct_{v}"] = correct[v]
        p_gold = probas[judged][rows, y]
        scores["mc_leakage_score"] = p_gold
        # Only a leaking view says which items leak (as partial_input): otherwise its
        # confident guesses are noise, and nothing is flagged.
        scores["is_mc_leakage_issue"] = leaks & correct[judged] & (p_gold >= self.issue_threshold)
        return scores

    def headline(self, result: Any) -> Headline:
        """The judged view's accuracy against chance, by its Delta interval and the null."""
        m = result.metrics
        judged = (result.details or {}).get("judged_view")
        if not judged or f"delta_chance_{judged}" not in m:
            return super().headline(result)
        acc, chance = m[f"accuracy_{judged}"], m["chance"]
        lo, hi = m[f"accuracy_{judged}_ci_low"], m[f"accuracy_{judged}_ci_high"]
        d_lo, d_hi = m[f"delta_chance_{judged}_ci_low"], m[f"delta_chance_{judged}_ci_high"]
        label = _view_label(judged)
        text = (
            f"{label} model answers {acc:.1%} [{lo:.1%}, {hi:.1%}] vs chance {chance:.1%} "
            f"(Delta {m[f'delta_chance_{judged}']:+.3f} [{d_lo:+.3f}, {d_hi:+.3f}])"
        )
        p = m.get("p_value")
        if p is not None and p == p:
            text += f"; permutation p = {p:.3g}"
        return self.verdict_scale.headline(
            "multiple-choice partial-input leakage",
            m[f"delta_chance_{judged}"],
            text,
            interval=(d_lo, d_hi),
            p_value=p,
            null="the probe refitted on gold positions re-drawn uniformly within each item",
            measured=f"Delta over chance of the {label} probe: its accuracy minus the mean of "
            "1/k over the items, with a 95% bootstrap interval over the scored items",
        )


def _top_groups(table: pd.DataFrame | None, n: int = 5) -> list[dict[str, Any]]:
    """The ``n`` groups leaking most (by Delta over chance), for the summary and report."""
    if table is None or table.empty:
        return []
    cols = ["group", "n", "delta_chance", "delta_chance_ci_low", "delta_chance_ci_high"]
    return table[cols].head(n).to_dict(orient="records")


def _summary(metrics: dict[str, float], views: list[str], judged: str) -> str:
    """Each view's accuracy against chance in one line, the judged view first."""
    order = [judged, *(v for v in views if v != judged)]
    parts = [
        f"{v}: {metrics[f'accuracy_{v}']:.3f} [{metrics[f'accuracy_{v}_ci_low']:.3f}, "
        f"{metrics[f'accuracy_{v}_ci_high']:.3f}]"
        for v in order
    ]
    text = f"{'; '.join(parts)} vs chance {metrics['chance']:.3f}"
    if metrics.get("p_value") == metrics.get("p_value"):
        text += f" (permutation p = {metrics['p_value']:.3g})"
    return text
