"""The registered ``associations`` analysis: every heuristic and property against the label.

The :class:`Associations` class gathers the 1-D features (the task's heuristics, the
text properties of :mod:`~spurious.detectors.associations.properties`; for QA, the gold
answer against a random span), tests each with
:mod:`~spurious.detectors.associations.binning`, adjusts the p-values
(Benjamini-Hochberg) and scores every example by the significant feature whose bin
raises p(gold label) most.
"""

from __future__ import annotations

import dataclasses
import logging
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold

from spurious.analysis import AnalysisOutput, Requirements, VerdictScale, register_analysis
from spurious.context import RunContext
from spurious.data.dataset import Dataset
from spurious.detectors.associations.binning import (
    BinnedAssociation,
    bin_names,
    binned_association,
)
from spurious.detectors.associations.properties import (
    null_spans,
    relative_position,
    text_properties,
)
from spurious.detectors.atlas.stats import adjust_p
from spurious.detectors.base import Detector
from spurious.exceptions import AnalysisError
from spurious.results import Headline
from spurious.utils.validation import Interval, StrOptions

logger = logging.getLogger(__name__)

#: Fewest labelled examples (five folds need a few per label).
MIN_EXAMPLES = 20


@register_analysis
class Associations(Detector):
    """Which heuristics and simple properties predict the gold label, without a model.

    Parameters
    ----------
    heuristics : list of str or "auto", default="auto"
        Registered heuristics to test (``"auto"``: every heuristic of the task that needs
        neither a training split nor spaCy).
    properties : bool, default=True
        Also test length in words, punctuation marks and digits of every text field.
    n_bins : int, default=10
        Quantile bins of the binned classifier (a feature with fewer values gets one bin
        per value).
    n_folds : int, default=5
        Folds of the out-of-fold accuracy (stratified by label).
    n_permutations : int, default=1000
        Label permutations of each feature's test (the smallest p-value is 1 / (B + 1)).
    alpha : float, default=0.05
        Level of the Benjamini-Hochberg-adjusted p-values that flag a feature.
    issue_margin : float, default=0.1
        An example is an issue when a flagged feature's bin raises p(gold label) by at
        least this much over the label's prior.
    random_state : int or None, default=0
        Seeds the folds and the permutations.
    """

    name: ClassVar[str] = "associations"
    description: ClassVar[str] = (
        "Heuristics (overlap, negation, length ...) and simple properties against the gold "
        "label: out-of-fold binned accuracy over the majority, permutation p, BH; no model."
    )
    # QA has no class label: there the "label" is gold answer vs a random span (see
    # null_spans), so the analysis needs labels only on classification tasks.
    requires: ClassVar[Requirements] = Requirements()
    # Model-free: right after the atlas.
    audit_order: ClassVar[int] = 11
    fast_params: ClassVar[dict[str, Any]] = {"n_permutations": 99, "n_bins": 5}
    profiles: ClassVar[dict[str, dict[str, Any]]] = {
        "quick": {"n_permutations": 200},
        "full": {},
    }
    verdict_scale: ClassVar[VerdictScale] = VerdictScale(
        0.01,
        0.03,
        0.10,
        {
            "none": "no heuristic or property gives the label away",
            "low": "a simple property predicts the label slightly",
            "moderate": "a simple property predicts the label",
            "high": "a simple property predicts the label strongly",
        },
    )
    metric_docs: ClassVar[dict[str, str]] = {
        "n_features": "Features tested (heuristics + properties per field).",
        "n_significant": "Features with BH-adjusted permutation p <= alpha.",
        "<feature>_effect": "Out-of-fold binned accuracy minus majority accuracy, [-1, 1].",
        "<feature>_mi_bits": "I(bin; label) in bits, >= 0.",
        "<feature>_p_value": "Permutation p-value of I(bin; label), (0, 1].",
        "<feature>_p_bh": "Benjamini-Hochberg-adjusted p-value over all features.",
        "max_effect": "Largest effect among the significant features (0 when none).",
        "max_effect_ci_low / _ci_high": "Its 95% Wilson interval (majority rate fixed).",
        "min_p_bh": "Smallest BH-adjusted p-value.",
        "share_issue": "Share of examples flagged by is_associations_issue.",
    }
    score_columns: ClassVar[dict[str, str]] = {
        "id": "Example id.",
        "associations_feature": "The significant feature whose bin raises p(gold) most ('' "
        "when none).",
        "associations_score": "That rise: p(gold | bin, other folds) - p(gold); in [-1, 1], "
        "larger = the label is more visible in a simple property.",
        "is_associations_issue": "associations_score >= issue_margin.",
    }
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "heuristics": [list, tuple, StrOptions({"auto"})],
        "properties": ["boolean"],
        "n_bins": [Interval(Integral, 2, None, closed="left")],
        "n_folds": [Interval(Integral, 2, None, closed="left")],
        "n_permutations": [Interval(Integral, 1, None, closed="left")],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "issue_margin": [Interval(Real, 0, 1, closed="both")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        heuristics: list[str] | str = "auto",
        properties: bool = True,
        n_bins: int = 10,
        n_folds: int = 5,
        n_permutations: int = 1000,
        alpha: float = 0.05,
        issue_margin: float = 0.1,
        random_state: int | None = 0,
    ) -> None:
        self.heuristics = heuristics
        self.properties = properties
        self.n_bins = n_bins
        self.n_folds = n_folds
        self.n_permutations = n_permutations
        self.alpha = alpha
        self.issue_margin = issue_margin
        self.random_state = random_state

    def _heuristic_names(self, ds: Dataset) -> list[str]:
        from spurious.heuristics import HEURISTICS, get_heuristic, list_heuristics

        task = ds.task.name
        if self.heuristics == "auto":
            return [
                n
                for n in list_heuristics(task)
                if not HEURISTICS[n].needs_train and not HEURISTICS[n].requires_spacy
            ]
        names = list(dict.fromkeys(self.heuristics))
        for n in names:
            get_heuristic(n, task=task)  # unknown -> ParameterError listing the task's
        return names

    def check(self, context: RunContext) -> None:
        self._heuristic_names(context.target)

    def _run(self, ctx: RunContext) -> AnalysisOutput:
        ds = ctx.target
        if not ds.task.has_labels:
            return self._run_qa(ctx)
        if len(ds) < MIN_EXAMPLES:
            raise AnalysisError(
                f"Associations needs at least {MIN_EXAMPLES} labelled examples for "
                f"{self.n_folds}-fold accuracies; got {len(ds)}."
            )
        y = ds.labels
        features: dict[str, tuple[str, np.ndarray]] = {}
        heuristic_names = self._heuristic_names(ds)
        if heuristic_names:
            values = ctx.heuristics(heuristic_names)
            for h in heuristic_names:
                features[h] = ("heuristic", values[h].to_numpy(dtype=np.float64))
        duplicates: dict[str, str] = {}
        if self.properties:
            for col, v in text_properties(ds).items():
                x = v.to_numpy()
                # hypothesis_n_words is the hypothesis_length heuristic: test it once.
                same = next(
                    (k for k, (_, u) in features.items() if np.array_equal(u, x, equal_nan=True)),
                    None,
                )
                if same is None:
                    features[col] = ("property", x)
                else:
                    duplicates[col] = f"same values as {same}"
        if not features:
            raise AnalysisError(
                f"Associations has nothing to test on task {ds.task.name!r}: no heuristic "
                "applies and properties=False."
            )
        return self._test(ds.ids, y, tuple(ds.label_names), features, duplicates)

    def _run_qa(self, ctx: RunContext) -> AnalysisOutput:
        """QA: every heuristic of the gold answer against the same of a random span."""
        from spurious.heuristics import compute_heuristics

        ds = ctx.target
        if len(ds) < MIN_EXAMPLES // 2:
            raise AnalysisError(
                f"Associations needs at least {MIN_EXAMPLES // 2} questions; got {len(ds)}."
            )
        names = self._heuristic_names(ds)
        null_ds = null_spans(ds, random_state=self.random_state)
        gold = ctx.heuristics(names) if names else pd.DataFrame()
        fit_on = ctx.heuristics_train
        if fit_on is None and ctx.eval is not None:
            fit_on = ctx.train
        null = (
            compute_heuristics(null_ds, names, train=fit_on, progress=ctx.progress)
            if names
            else pd.DataFrame()
        )
        features: dict[str, tuple[str, np.ndarray]] = {}
        same: dict[str, str] = {}
        for h in names:
            a, b = gold[h].to_numpy(np.float64), null[h].to_numpy(np.float64)
            if np.array_equal(a, b, equal_nan=True):
                # answer_length, shared_words: equal for a span of the same length.
                same[h] = "not answer-dependent (equal for the random span)"
                continue
            features[h] = ("heuristic", np.concatenate([a, b]))
        if self.properties:
            features["answer_relative_position"] = (
                "property",
                np.concatenate([relative_position(ds), relative_position(null_ds)]),
            )
        if not features:
            raise AnalysisError(
                "Associations has nothing to test on QA: no answer-dependent heuristic "
                f"among {names} and properties=False."
            )
        n = len(ds)
        y = np.repeat(np.array([1, 0]), n)
        groups = np.tile(np.arange(n), 2)
        scored = np.arange(2 * n) < n
        out = self._test(ds.ids, y, ("random span", "gold answer"), features, same, groups, scored)
        out.details["qa_null"] = (
            "label = gold answer (1) or a random span of the same word length in the same "
            "context (0), one of each per question; folds keep a question's two rows together"
        )
        return out

    def _test(
        self,
        ids: np.ndarray,
        y: np.ndarray,
        names: tuple[str, ...],
        features: dict[str, tuple[str, np.ndarray]],
        duplicates: dict[str, str],
        groups: np.ndarray | None = None,
        scored: np.ndarray | None = None,
    ) -> AnalysisOutput:
        """Test every feature against ``y``; the shared part of both task kinds.

        ``groups`` keeps rows of one group in one fold; ``scored`` (a row mask) selects
        the rows that are the examples of ``ids`` (QA: the gold rows).
        """
        n_classes = len(names)
        rng = np.random.default_rng(self.random_state)
        counts = np.bincount(y, minlength=n_classes)
        folds, n_splits = self._folds(y, counts, groups, rng)
        perm_seed = int(rng.integers(2**31 - 1))
        results = {
            name: binned_association(
                x,
                y,
                n_classes,
                folds,
                n_bins=self.n_bins,
                n_permutations=self.n_permutations,
                random_state=perm_seed,
            )
            for name, (_, x) in features.items()
        }
        fnames = list(results)
        _, p_bh = adjust_p(np.array([results[f].p_value for f in fnames]))
        prior = counts / counts.sum()
        metrics: dict[str, float] = {"n_features": len(fnames)}
        table_rows = []
        significant = []
        for f, q in zip(fnames, p_bh, strict=True):
            a = results[f]
            metrics[f"{f}_effect"] = a.effect
            metrics[f"{f}_mi_bits"] = a.mutual_information
            metrics[f"{f}_p_value"] = a.p_value
            metrics[f"{f}_p_bh"] = float(q)
            if q <= self.alpha:
                significant.append(f)
            table_rows.append(self._row(f, features[f][0], a, float(q), names, prior))
        table_rows.sort(key=lambda r: (-r["effect"], r["feature"]))
        score, which = _example_scores(results, significant, prior, y)
        if scored is not None:
            score, which = score[scored], which[scored]
        issue = score >= self.issue_margin
        best = max(significant, key=lambda f: results[f].effect, default=None)
        if best is not None:
            lo, hi = results[best].effect_interval
            metrics.update(
                max_effect=results[best].effect, max_effect_ci_low=lo, max_effect_ci_high=hi
            )
        else:
            metrics.update(max_effect=0.0)
        metrics["n_significant"] = len(significant)
        metrics["min_p_bh"] = float(np.min(p_bh)) if len(p_bh) else 1.0
        metrics["share_issue"] = float(issue.mean())
        scores = pd.DataFrame(
            {
                "id": ids,
                "associations_feature": which,
                "associations_score": score,
                "is_associations_issue": issue,
            }
        )
        summary = _summary(table_rows, len(significant), len(fnames), self.alpha)
        details = {
            "label_names": list(names),
            "prior": {names[c]: float(p) for c, p in enumerate(prior)},
            "features": table_rows,
            "best": best,
            "not_tested": duplicates,
            "params": {
                "n_bins": self.n_bins,
                "n_folds": n_splits,
                "n_permutations": self.n_permutations,
                "alpha": self.alpha,
            },
        }
        return AnalysisOutput(scores=scores, metrics=metrics, summary=summary, details=details)

    def _folds(
        self,
        y: np.ndarray,
        counts: np.ndarray,
        groups: np.ndarray | None,
        rng: np.random.Generator,
    ) -> tuple[np.ndarray, int]:
        """Stratified (grouped) fold of every row, seeded by one draw of ``rng``."""
        n_splits = int(min(self.n_folds, counts[counts > 0].min()))
        if n_splits < 2:
            raise AnalysisError(
                "Associations needs at least 2 examples of every label present for its "
                f"folds; the rarest label has {counts[counts > 0].min()}."
            )
        seed = int(rng.integers(2**31 - 1))
        folds = np.empty(len(y), dtype=np.int64)
        if groups is None:
            skf = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
        else:
            skf = StratifiedGroupKFold(n_splits=n_splits, shuffle=True, random_state=seed)
        for f, (_, te) in enumerate(skf.split(np.zeros(len(y)), y, groups)):
            folds[te] = f
        return folds, n_splits

    def _row(
        self,
        name: str,
        kind: str,
        a: BinnedAssociation,
        p_bh: float,
        labels: tuple[str, ...],
        prior: np.ndarray,
    ) -> dict[str, Any]:
        table = a.table.astype(np.float64)
        n_bin = table.sum(axis=1)
        share = np.divide(table, n_bin[:, None], out=np.zeros_like(table), where=n_bin[:, None] > 0)
        names_of_bins = bin_names(a.edges, a.has_nan_bin, len(table))
        # The lowest and highest non-empty value bins (the NaN bin is not a value).
        value_bins = [b for b in range(len(a.edges) + 1) if b < len(table) and n_bin[b] > 0]

        def points_to(b: int) -> tuple[str | None, float]:
            lift = share[b] - prior
            c = int(np.argmax(lift))
            return labels[c], float(lift[c])

        row: dict[str, Any] = {
            "feature": name,
            "kind": kind,
            "effect": a.effect,
            "effect_ci": list(a.effect_interval),
            "accuracy": a.accuracy,
            "majority": a.majority,
            "mi_bits": a.mutual_information,
            "p_value": a.p_value,
            "p_bh": p_bh,
            "significant": p_bh <= self.alpha,
            "bins": [
                {
                    "bin": names_of_bins[b] if b < len(names_of_bins) else str(b),
                    "n": int(n_bin[b]),
                    **{labels[c]: float(share[b, c]) for c in range(len(labels))},
                }
                for b in range(len(table))
                if n_bin[b] > 0
            ],
        }
        if len(value_bins) >= 2:
            row["low_points_to"], row["low_lift"] = points_to(value_bins[0])
            row["high_points_to"], row["high_lift"] = points_to(value_bins[-1])
        return row

    def headline(self, result) -> Headline:
        m = result.metrics
        best = (result.details or {}).get("best")
        n_sig = int(m.get("n_significant", 0))
        rows = {r["feature"]: r for r in (result.details or {}).get("features", [])}
        if best:
            r = rows.get(best, {})
            where = f" (high -> {r['high_points_to']})" if r.get("high_points_to") else ""
            text = (
                f"{n_sig} of {int(m.get('n_features', 0))} properties are associated with "
                "the label (BH); "
                f"strongest {best}{where}: +{m['max_effect']:.1%} accuracy over the majority"
            )
            interval = (m.get("max_effect_ci_low"), m.get("max_effect_ci_high"))
        else:
            text = (
                f"none of {int(m.get('n_features', 0))} heuristics and properties is "
                "associated with the label"
            )
            interval = None
        scale = dataclasses.replace(self.verdict_scale, alpha=self.alpha)
        return scale.headline(
            "model-free associations",
            m.get("max_effect"),
            text,
            interval=interval,
            p_value=m.get("min_p_bh"),
            null="shuffled labels (permutation test, BH over features)",
            measured="out-of-fold accuracy of a 1-D binned classifier minus the majority rate",
        )


def _example_scores(
    results: dict[str, BinnedAssociation],
    significant: list[str],
    prior: np.ndarray,
    y: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Per example: the significant feature whose bin raises p(gold) the most, and the rise."""
    score = np.full(len(y), -np.inf)
    which = np.full(len(y), "", dtype=object)
    for f in significant:
        lift = results[f].p_gold - prior[y]
        better = np.nan_to_num(lift, nan=-np.inf) > score
        score[better] = lift[better]
        which[better] = f
    score = np.where(np.isfinite(score), score, 0.0)
    return score, which


def _summary(
    table_rows: list[dict[str, Any]], n_significant: int, n_features: int, alpha: float
) -> str:
    top = ", ".join(
        f"{r['feature']} {r['effect']:+.3f}"
        + (f" ({r['high_points_to']} high)" if r.get("high_points_to") else "")
        for r in table_rows
        if r["significant"]
    )
    return (
        f"{n_significant}/{n_features} features are associated with the label "
        f"(BH <= {alpha})" + (f": {top}" if top else "")
    )
