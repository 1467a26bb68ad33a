"""The registered ``mc_cues`` analysis: cues and gold position of multiple-choice items.

See the package docstring for the method; the statistics are in
:mod:`spurious.detectors.mcq_cues.stats`.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from spurious.analysis import AnalysisOutput, Requirements, VerdictScale, register_analysis
from spurious.context import RunContext
from spurious.data.dataset import Dataset
from spurious.data.mcq import LETTERS, option_counts
from spurious.detectors.atlas.stats import wilson_interval
from spurious.detectors.base import Detector
from spurious.detectors.mcq_cues.stats import (
    MIN_ITEMS,
    POSITION_CUE,
    cue_table,
    group_table,
    letter_cue,
    null_draws,
    position_test,
)
from spurious.exceptions import AnalysisError, ParameterError
from spurious.heuristics.mcq import CUES, all_cue_picks
from spurious.results import Headline
from spurious.utils.validation import Interval

__all__ = ["MCCues"]


@register_analysis
class MCCues(Detector):
    """Model-free multiple-choice cues and gold-position bias, each against chance.

    Parameters
    ----------
    cues : list of str or None, default=None
        Option-picking cues to test (``None``: every one of
        :data:`spurious.heuristics.mcq.CUES`); the gold-position cue is always tested.
    n_permutations : int, default=999
        Null draws of the gold (uniform among each item's options).
    n_bootstrap : int, default=1000
        Bootstrap resamples of each effect interval.
    alpha : float, default=0.05
        Significance level of the BH q-values.
    min_items : int, default=10
        A cue picking fewer items (of the data, or of a group) is shown but not tested.
    by_group : bool, default=True
        Also tabulate the cues per ``group`` (e.g. MMLU subject) when the data has groups.
    random_state : int or None, default=0
        Seeds the null draws and the bootstrap.
    """

    name: ClassVar[str] = "mc_cues"
    description: ClassVar[str] = (
        "Multiple-choice answer cues (longest option, question overlap, odd one out, all "
        "of the above, numeric extremes, gold letter) against chance: hit rate, bootstrap "
        "interval, permutation test, BH; the gold-letter chi-square. No model."
    )
    requires: ClassVar[Requirements] = Requirements(labels=True, tasks=("mcq",))
    # Model-free and seconds long, like the atlas: its findings lead the audit.
    audit_order: ClassVar[int] = 10
    profiles: ClassVar[dict[str, dict[str, Any]]] = {"quick": {}, "full": {}}
    verdict_scale: ClassVar[VerdictScale] = VerdictScale(
        0.02,
        0.05,
        0.10,
        {
            "none": "no answer cue beats chance",
            "low": "a weak answer cue",
            "moderate": "an answer cue clearly above chance",
            "high": "an answer cue that gives the gold away far above chance",
        },
    )
    metric_docs: ClassVar[dict[str, str]] = {
        "n_items": "Items judged.",
        "chance": "Mean 1/k over the items: the accuracy of a random guess.",
        "n_cues_tested": "Cues picking at least min_items items (tested).",
        "n_cues_significant": "Cues with BH q < alpha and a positive effect.",
        "<cue>_n": "Items on which the cue picks an option (no tie).",
        "<cue>_coverage": "<cue>_n / n_items, [0, 1].",
        "<cue>_hit_rate": "Share of those items where the pick is the gold, [0, 1].",
        "<cue>_chance": "Mean 1/k over those items: the hit rate under random positions.",
        "<cue>_effect": "hit_rate - chance, [-1, 1]; > 0: the cue points at the gold.",
        "<cue>_effect_ci_low / _ci_high": "95% bootstrap interval of the effect (items).",
        "<cue>_p_value": "One-sided permutation p (gold re-drawn uniformly per item).",
        "<cue>_q_value": "Benjamini-Hochberg q over the tested cues.",
        "position_chi2": "Pearson chi-square of the gold-letter counts against uniform positions.",
        "position_p_value": "Its p-value (scipy.stats.chisquare, dof = letters - 1).",
        "position_p_value_permutation": "Its p-value under the permutation draws.",
        "letter_<L>_share": "Share of items whose gold is letter L.",
        "letter_<L>_expected_share": "Expected share of letter L under uniform positions.",
        "majority_letter_accuracy": "Accuracy of always answering the most frequent gold "
        "letter (over all items).",
        "majority_letter_accuracy_ci_low / _ci_high": "95% Wilson interval of it.",
        "top_effect": "Effect of the headline cue (the strongest significant one, else the "
        "one with the smallest q).",
        "top_effect_ci_low / _ci_high": "Its 95% bootstrap interval.",
        "top_q_value": "Its BH q-value.",
    }
    score_columns: ClassVar[dict[str, str]] = {
        "id": "Item id.",
        "gold": "Gold letter.",
        "pick_<cue>": "Option position the cue picks (0 = A); -1 where it abstains.",
        "hit_<cue>": "1 if the cue picks the gold, 0 if another option, NaN if it abstains.",
        "mc_cues_score": "Significant cues (q < alpha, effect > 0) that pick this item's gold.",
        "is_mc_cues_issue": "At least one significant cue picks the gold: the item can be "
        "answered without reading it.",
    }
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "cues": [list, tuple, None],
        "n_permutations": [Interval(Integral, 99, None, closed="left")],
        "n_bootstrap": [Interval(Integral, 100, None, closed="left")],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "min_items": [Interval(Integral, 1, None, closed="left")],
        "by_group": ["boolean"],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        cues: list[str] | None = None,
        n_permutations: int = 999,
        n_bootstrap: int = 1000,
        alpha: float = 0.05,
        min_items: int = 10,
        by_group: bool = True,
        random_state: int | None = 0,
    ) -> None:
        self.cues = cues
        self.n_permutations = n_permutations
        self.n_bootstrap = n_bootstrap
        self.alpha = alpha
        self.min_items = min_items
        self.by_group = by_group
        self.random_state = random_state

    def _cue_names(self) -> list[str]:
        if self.cues is None:
            return list(CUES)
        cues = [self.cues] if isinstance(self.cues, str) else list(self.cues)
        bad = [c for c in cues if c not in CUES]
        if bad or not cues:
            raise ParameterError(
                f"The 'cues' parameter of MCCues must be a non-empty list of cues among "
                f"{list(CUES)}. Got {self.cues!r} instead."
            )
        return list(dict.fromkeys(cues))

    def check(self, context: RunContext) -> None:
        self._cue_names()

    def _run(self, ctx: RunContext) -> AnalysisOutput:
        ds = ctx.target
        if len(ds) < MIN_ITEMS:
            raise AnalysisError(
                f"mc_cues needs at least {MIN_ITEMS} multiple-choice items for its tests; "
                f"got {len(ds)}."
            )
        gold = ds.labels
        k = option_counts(ds.frame)
        picks = all_cue_picks(ds, self._cue_names())
        codes, group_names = _group_codes(ds) if self.by_group else (None, [])
        rng = np.random.default_rng(self.random_state)
        null = null_draws(k, picks, self.n_permutations, rng, codes)
        letter_pick, letter_null = letter_cue(gold, k, null["letters"])
        all_picks = {**picks, POSITION_CUE: letter_pick}
        table = cue_table(
            all_picks,
            gold,
            k,
            {**null["hits"], POSITION_CUE: letter_null},
            min_items=self.min_items,
            n_bootstrap=self.n_bootstrap,
            random_state=rng,
        )
        position = position_test(gold, k, null["letters"])
        groups = (
            group_table(picks, gold, k, codes, group_names, null["group_hits"], self.min_items)
            if codes is not None
            else None
        )
        return self._output(ds, gold, k, all_picks, table, position, groups)

    def _significant(self, table: pd.DataFrame) -> pd.DataFrame:
        return table[(table["q_value"] < self.alpha) & (table["effect"] > 0)]

    def _output(
        self,
        ds: Dataset,
        gold: np.ndarray,
        k: np.ndarray,
        picks: dict[str, np.ndarray],
        table: pd.DataFrame,
        position: dict[str, Any],
        groups: pd.DataFrame | None,
    ) -> AnalysisOutput:
        """Scores, metrics, details and tables from the computed statistics."""
        letters = np.asarray(list(LETTERS), dtype=object)
        significant = self._significant(table)
        scores = pd.DataFrame({"id": ds.ids, "gold": letters[gold]})
        n_hit = np.zeros(len(ds))
        for cue, pick in picks.items():
            hit = np.where(pick < 0, np.nan, (pick == gold).astype(np.float64))
            scores[f"pick_{cue}"] = pick
            scores[f"hit_{cue}"] = hit
            if cue in set(significant["cue"]):
                n_hit += np.nan_to_num(hit)
        scores["mc_cues_score"] = n_hit
        scores["is_mc_cues_issue"] = n_hit > 0
        metrics: dict[str, float] = {
            "n_items": float(len(ds)),
            "chance": float((1.0 / k).mean()),
            "n_cues_tested": float(table["p_value"].notna().sum()),
            "n_cues_significant": float(len(significant)),
        }
        for r in table.to_dict("records"):
            for key in ("n", "coverage", "hit_rate", "chance", "effect", "p_value", "q_value"):
                metrics[f"{r['cue']}_{key}"] = float(r[key])
            metrics[f"{r['cue']}_effect_ci_low"] = float(r["effect_ci_low"])
            metrics[f"{r['cue']}_effect_ci_high"] = float(r["effect_ci_high"])
        metrics.update(_position_metrics(position, len(ds)))
        top = _top_cue(table, significant)
        if top is not None:
            metrics.update(
                top_effect=float(top["effect"]),
                top_effect_ci_low=float(top["effect_ci_low"]),
                top_effect_ci_high=float(top["effect_ci_high"]),
                top_q_value=float(top["q_value"]),
            )
        details: dict[str, Any] = {
            "cues": _records(table),
            "top_cue": None if top is None else str(top["cue"]),
            "position": position,
            "alpha": self.alpha,
            "null": "gold re-drawn uniformly among each item's options "
            f"({self.n_permutations} draws); one-sided; BH over the tested cues",
        }
        tables = {"cues": table}
        if groups is not None:
            tables["cues_by_group"] = groups
            sig = groups[(groups["q_value"] < self.alpha) & (groups["effect"] > 0)]
            details["groups"] = {
                "n_groups": int(groups["group"].nunique()),
                "significant": _records(sig.sort_values("effect", ascending=False).head(100)),
            }
        return AnalysisOutput(
            scores=scores,
            metrics=metrics,
            summary=_summary(table, significant, position, self.alpha),
            details=details,
            tables=tables,
        )

    def headline(self, result: Any) -> Headline:
        m = result.metrics
        top = (result.details or {}).get("top_cue")
        if top is None or "top_effect" not in m:
            return self.verdict_scale.headline(
                "multiple-choice cues", None, "no cue picks enough items to test",
                severity="info",
            )  # fmt: skip
        text = (
            f"{top}: gold {m[f'{top}_hit_rate']:.1%} vs chance {m[f'{top}_chance']:.1%} on "
            f"{int(m[f'{top}_n'])} items; gold letters chi-square p="
            f"{m.get('position_p_value', float('nan')):.2g}"
        )
        return self.verdict_scale.headline(
            "multiple-choice cues",
            m["top_effect"],
            text,
            interval=(m["top_effect_ci_low"], m["top_effect_ci_high"]),
            p_value=m["top_q_value"],
            null="the gold uniform among each item's options (permutation, BH over cues)",
            measured="hit rate of the strongest significant model-free cue minus chance "
            "(1/k) on the items where it picks an option",
        )


def _group_codes(ds: Dataset) -> tuple[np.ndarray | None, list[str]]:
    """Integer group codes (None without a ``group`` column or with one group)."""
    if "group" not in ds.frame.columns:
        return None, []
    codes, names = pd.factorize(ds.frame["group"].astype(str), sort=True)
    if len(names) < 2:
        return None, []
    return codes.astype(np.int64), [str(n) for n in names]


def _position_metrics(position: dict[str, Any], n: int) -> dict[str, float]:
    out = {
        "position_chi2": position["chi2"],
        "position_p_value": position["p_value"],
    }
    if "p_value_permutation" in position:
        out["position_p_value_permutation"] = position["p_value_permutation"]
    for i, letter in enumerate(position["letters"]):
        out[f"letter_{letter}_share"] = position["share"][i]
        out[f"letter_{letter}_expected_share"] = position["expected_share"][i]
    best = int(np.argmax(position["counts"]))
    lo, hi = wilson_interval(position["counts"][best], n)
    out.update(
        majority_letter_accuracy=position["counts"][best] / n,
        majority_letter_accuracy_ci_low=lo,
        majority_letter_accuracy_ci_high=hi,
    )
    return {key: float(v) for key, v in out.items()}


def _top_cue(table: pd.DataFrame, significant: pd.DataFrame) -> pd.Series | None:
    """The strongest significant cue (largest lower bound of the effect), else the tested
    cue with the smallest q (whose q then says "not distinguishable from chance")."""
    if len(significant):
        return significant.loc[significant["effect_ci_low"].fillna(-np.inf).idxmax()]
    tested = table[table["q_value"].notna()]
    if not len(tested):
        return None
    return tested.loc[tested["q_value"].idxmin()]


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as plain JSON (NaN -> None)."""
    return [
        {k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
        for r in frame.astype(object).to_dict("records")
    ]


def _summary(
    table: pd.DataFrame, significant: pd.DataFrame, position: dict[str, Any], alpha: float
) -> str:
    cues = ", ".join(
        f"{r.cue} {r.hit_rate:.1%} vs {r.chance:.1%}"
        for r in significant.sort_values("effect", ascending=False).itertuples()
    )
    head = (
        f"{len(significant)} of {int(table['p_value'].notna().sum())} cues beat chance "
        f"(BH q < {alpha:g})" + (f": {cues}" if cues else "")
    )
    shares = ", ".join(
        f"{letter} {s:.1%}"
        for letter, s in zip(position["letters"], position["share"], strict=True)
    )
    return f"{head}; gold letters {shares} (chi-square p={position['p_value']:.3g})"
