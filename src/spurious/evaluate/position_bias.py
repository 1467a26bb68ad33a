"""The ``position_bias`` analysis: do models favour an answer letter of multiple-choice items?

A model with a *letter (position) bias* picks some option letter more often than the
gold answers sit there (LLMs favouring "A", or avoiding the last option: Zheng et al.
2024, "Large Language Models Are Not Robust Multiple Choice Selectors"; Pezeshkpour and
Hruschka 2024). On the items of the judged split (the evaluation split, else the data),
for each model supplied with ``--predictions``:

- **accuracy** with a bootstrap 95% interval (items resampled) and **chance**, the mean
  of 1/k over the items (k = the item's option count);
- **letter shares**: the share of items the model answers with each letter against the
  share whose gold is that letter (both over the items the model answered), with
  intervals;
- **letter bias** (the headline effect): the largest |predicted share - gold share| over
  letters, with an interval from a simultaneous bootstrap band of the per-letter
  differences (a percentile interval of a maximum would sit above 0 on pure noise), and the total-variation distance between the two
  distributions; its **test** is a chi-square goodness-of-fit test of the predicted
  letters against the gold letters (per letter, expected = the gold count) computed
  **within the items of each option count k** (letters past k do not exist there) and
  summed over the k strata (statistics and degrees of freedom add up: independent
  strata); a stratum with fewer than :data:`MIN_STRATUM` items is left out of the test.
  A gold count of 0 in a stratum (no gold "E" among 5-option items) is smoothed by 0.5
  per letter, so the test stays defined;
- **accuracy when the gold is at each position**, with intervals, and its spread (best
  minus worst position over positions with at least :data:`MIN_POSITION_ITEMS` gold
  items).

The bootstrap resamples items: each statistic depends on the items only through the
counts of (predicted letter, gold letter) pairs, so those counts are drawn from a
multinomial (the same distribution as resampling the items; milliseconds on MMLU).

A model that picks letters independently of the gold, with the gold's letter
distribution, has no letter bias: its shares match the gold's, the test does not reject.
A model's predicted letters say nothing about correctness alone, so shuffled gold labels
(which keep the gold letter distribution) leave the letter bias of a model as it is; the
effect is a property of the predictions, the test conditions on the benchmark's gold
letters. Predictions that only say right or wrong (``kind="correctness"``) have no
letters: such a model gets its accuracy only.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from numbers import Integral
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy import stats

from spurious.analysis import (
    Analysis,
    AnalysisOutput,
    Requirements,
    VerdictScale,
    register_analysis,
)
from spurious.context import RunContext
from spurious.data.dataset import Dataset
from spurious.data.mcq import LETTERS, option_counts
from spurious.data.predictions import PredictionSet
from spurious.exceptions import AnalysisError, SchemaError
from spurious.results import Headline
from spurious.utils.limits import MAX_RESAMPLES
from spurious.utils.validation import Interval

__all__ = ["MIN_ITEMS", "MIN_POSITION_ITEMS", "MIN_STRATUM", "PositionBias", "letter_statistics"]

#: Fewest items the analysis runs on (intervals and the test mean little below).
MIN_ITEMS = 20
#: Fewest items of one option count k for that stratum to enter the chi-square test.
MIN_STRATUM = 10
#: Fewest gold items at a position for its accuracy to enter the spread.
MIN_POSITION_ITEMS = 10


@contextmanager
def _quiet() -> Iterator[None]:
    """No warnings for NaN arithmetic: a letter no item has as gold gives 0/0 by design."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _letter_test(pred: np.ndarray, gold: np.ndarray, k: np.ndarray) -> tuple[float, int, float]:
    """Chi-square of predicted vs gold letters within each option count, summed: (stat, dof, p)."""
    total, dof = 0.0, 0
    for kk in np.unique(k):
        m = (k == kk) & (pred >= 0)
        n = int(m.sum())
        if n < MIN_STRATUM:
            continue
        observed = np.bincount(pred[m], minlength=kk)[:kk].astype(float)
        expected = np.bincount(gold[m], minlength=kk)[:kk].astype(float)
        if (expected == 0).any():
            expected = (expected + 0.5) * n / (n + 0.5 * kk)
        total += float(stats.chisquare(observed, expected).statistic)
        dof += int(kk) - 1
    p = float(stats.chi2.sf(total, dof)) if dof else math.nan
    return total, dof, p


def _from_tables(t: np.ndarray, eligible: np.ndarray) -> dict[str, np.ndarray]:
    """Every statistic from (predicted + 1, gold) count tables ``t`` of shape (..., L+1, L).

    Row 0 counts the items without a predicted letter (no prediction, or correctness only).
    """
    t = t.astype(float)
    n = t.sum(axis=(-1, -2))
    letters = t[..., 1:, :]
    n_pred = letters.sum(axis=(-1, -2))
    diag = np.diagonal(letters, axis1=-2, axis2=-1)
    with _quiet():
        pred_share = letters.sum(axis=-1) / n_pred[..., None]
        gold_share = letters.sum(axis=-2) / n_pred[..., None]
        by_gold = diag / t.sum(axis=-2)
        eligible_acc = np.where(eligible, by_gold, np.nan)
        spread = np.nanmax(eligible_acc, axis=-1) - np.nanmin(eligible_acc, axis=-1)
    diff = pred_share - gold_share
    return {
        "accuracy": diag.sum(axis=-1) / n,
        "pred_share": pred_share,
        "gold_share": gold_share,
        "diff": diff,
        "letter_bias": np.abs(diff).max(axis=-1),
        "tvd": 0.5 * np.abs(diff).sum(axis=-1),
        "accuracy_by_gold": by_gold,
        "position_spread": spread,
    }


def letter_statistics(
    pred: np.ndarray,
    gold: np.ndarray,
    k: np.ndarray,
    n_letters: int,
    *,
    n_resamples: int = 1000,
    random_state: int | None = 0,
) -> dict[str, Any]:
    """Accuracy, letter shares, letter bias and accuracy by gold position, with intervals.

    Parameters
    ----------
    pred : numpy.ndarray of int
        Predicted option per item (0 = "A"); ``-1`` where the model gave no letter (no
        prediction, counted wrong; left out of the letter shares).
    gold : numpy.ndarray of int
        Gold option per item.
    k : numpy.ndarray of int
        Option count per item.
    n_letters : int
        Letters shown (the most options of any item).
    n_resamples : int, default=1000
        Bootstrap resamples of the items.
    random_state : int or None, default=0
        Seed of the bootstrap.

    Returns
    -------
    dict
        Point estimates (floats, or lists per letter) and ``<stat>_ci`` = [low, high]
        (95% percentile intervals; for ``letter_bias`` and ``tvd`` from a simultaneous
        band of the per-letter differences, see :func:`_band_intervals`), ``chi2``, ``dof``, ``p_value``, ``chance``,
        ``n_answered``, ``gold_count`` per letter and ``overpredicted`` (the letter of
        the largest positive share difference, or None).

    Examples
    --------
    >>> gold = np.tile([0, 1, 2, 3], 25)
    >>> s = letter_statistics(np.zeros(100, dtype=int), gold, np.full(100, 4), 4)
    >>> round(s["letter_bias"], 2), s["letter_bias_ci"][0] > 0.5, s["p_value"] < 1e-10
    (0.75, True, True)
    >>> s["accuracy_by_gold"]
    [1.0, 0.0, 0.0, 0.0]
    """
    L = n_letters
    codes = (pred + 1) * L + gold
    counts = np.bincount(codes, minlength=(L + 1) * L)
    observed = counts.reshape(L + 1, L)
    eligible = observed.sum(axis=0) >= MIN_POSITION_ITEMS
    point = _from_tables(observed, eligible)
    n = len(pred)
    rng = np.random.default_rng(random_state)
    draws = rng.multinomial(n, counts / n, size=n_resamples).reshape(n_resamples, L + 1, L)
    boot = _from_tables(draws, eligible)
    chi2, dof, p = _letter_test(pred, gold, k)
    out: dict[str, Any] = {}
    for key, value in point.items():
        with _quiet():
            lo, hi = np.nanquantile(boot[key], [0.025, 0.975], axis=0)
        if np.ndim(value):
            out[key] = [float(v) for v in value]
            out[f"{key}_ci"] = [[float(a), float(b)] for a, b in zip(lo, hi, strict=True)]
        else:
            out[key] = float(value)
            out[f"{key}_ci"] = [float(lo), float(hi)]
    out["letter_bias_ci"], out["tvd_ci"] = _band_intervals(point["diff"], boot["diff"])
    diff = np.nan_to_num(point["diff"], nan=0.0)
    out.update(
        chi2=chi2,
        dof=dof,
        p_value=p,
        chance=float(np.mean(1.0 / k)),
        n_answered=int((pred >= 0).sum()),
        gold_count=observed.sum(axis=0).tolist(),
        overpredicted=LETTERS[int(np.argmax(diff))] if diff.max() > 0 else None,
    )
    return out


def _band_intervals(diff: np.ndarray, boot_diff: np.ndarray) -> tuple[list[float], list[float]]:
    """Intervals of max |diff| and of the TVD from a simultaneous 95% band of the diffs.

    A percentile interval of a maximum of absolute values sits above 0 even when every
    true difference is 0 (the maximum of noise is positive), so its lower bound would
    make noise look like a bias. Instead: ``c`` = the 95% quantile of the bootstrap's
    largest deviation ``max_l |diff*_l - diff_l|``; with 95% confidence every true
    difference is within ``diff_l +- c``, so the largest is within
    ``[max(0, max|diff| - c), max|diff| + c]`` (and the TVD within the matching sums).
    """
    d = np.abs(np.nan_to_num(diff, nan=0.0))
    with _quiet():
        dev = np.nanmax(np.abs(boot_diff - np.nan_to_num(diff, nan=0.0)), axis=-1)
        c = float(np.nanquantile(dev, 0.95)) if np.isfinite(dev).any() else math.nan
    if not math.isfinite(c):
        return [math.nan, math.nan], [math.nan, math.nan]
    top = float(d.max())
    bias = [max(0.0, top - c), min(1.0, top + c)]
    tvd = [0.5 * float(np.clip(d - c, 0, None).sum()), min(1.0, 0.5 * float((d + c).sum()))]
    return bias, tvd


def _aligned(ctx: RunContext, ds: Dataset) -> list[PredictionSet]:
    """The run's predictions, each checked to be aligned to ``ds``, with distinct names."""
    preds = list(ctx.predictions)
    names = [p.name for p in preds]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise AnalysisError(
            f"position_bias needs distinct model names; {dup} appear more than once "
            "(rename the prediction files)."
        )
    ids = ds.ids
    for p in preds:
        if len(p.ids) != len(ids) or not np.array_equal(np.asarray(p.ids, dtype=object), ids):
            raise SchemaError(
                f"Predictions {p.name!r} are aligned to other items than {ds.name!r}; load "
                "them with load_predictions(path, dataset)."
            )
    return preds


def _model_letters(p: PredictionSet, k: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Predicted option per item (``-1``: none), checked against each item's options."""
    pred = np.asarray(p.values, dtype=np.int64)
    bad = np.flatnonzero(pred >= k)
    if bad.size:
        i = int(bad[0])
        raise SchemaError(
            f"Predictions {p.name!r}, id {ids[i]!r}: option {int(pred[i])} predicted, but "
            f"the item has {int(k[i])} options ({bad.size} such item(s))."
        )
    return pred


@register_analysis
class PositionBias(Analysis):
    """Letter (position) bias of models on multiple-choice items.

    Parameters
    ----------
    n_resamples : int, default=1000
        Bootstrap resamples of the items (every interval).
    random_state : int or None, default=0
        Seed of the bootstrap.

    See the module docstring for what is measured and how the test treats items with
    different option counts.

    Examples
    --------
    >>> from spurious.data.synthetic_mcq import make_mcq_artifacts
    >>> from spurious.context import RunContext
    >>> from spurious.data.predictions import align_predictions
    >>> ds = make_mcq_artifacts(n=200, artifact="none").dataset
    >>> always_a = align_predictions({i: "A" for i in ds.ids}, ds, name="always_a")
    >>> res = PositionBias(n_resamples=200).run(
    ...     context=RunContext(ds, predictions=[always_a], progress=False))
    >>> res.headline["severity"], res.metrics["pred_share_always_a_A"]
    ('high', 1.0)
    """

    name: ClassVar[str] = "position_bias"
    kind: ClassVar[str] = "evaluation"
    description: ClassVar[str] = (
        "Whether models favour an answer letter of multiple-choice items: predicted vs "
        "gold letter shares, a chi-square test, and accuracy by gold position."
    )
    requires: ClassVar[Requirements] = Requirements(labels=True, predictions=True, tasks=("mcq",))
    metric_docs: ClassVar[dict[str, str]] = {
        "accuracy_<model>": "Share of items the model answers right (no prediction: wrong), "
        "[0, 1], with its bootstrap interval.",
        "chance": "Accuracy of a uniform guess: mean of 1/k over the items, (0, 1).",
        "letter_bias_<model>": "Largest |predicted share - gold share| over the letters, "
        "[0, 1]; 0 = the model answers each letter as often as the gold sits there.",
        "tvd_<model>": "Total-variation distance of predicted and gold letter shares, [0, 1].",
        "letter_p_value_<model>": "Chi-square test of the predicted letters against the gold "
        "letters, within each option count, (0, 1].",
        "pred_share_<model>_<letter>": "Share of the model's answers with that letter, [0, 1].",
        "gold_share_<letter>": "Share of the items whose gold is that letter, [0, 1].",
        "accuracy_<model>_gold_<letter>": "Accuracy on the items whose gold is that letter.",
        "position_spread_<model>": "Best minus worst accuracy by gold position, [0, 1].",
        "max_letter_bias": "Largest letter bias of any model, [0, 1].",
        "max_letter_bias_p_value": "Its test's p-value, Bonferroni-corrected over models.",
        "n_items": "Items judged.",
    }
    score_columns: ClassVar[dict[str, str]] = {
        "id": "Item id.",
        "gold": "Gold letter.",
        "n_options": "Options of the item.",
        "pred_<model>": "The model's letter (empty: no letter).",
        "correct_<model>": "Whether the model answered right.",
        "position_bias_score": "Share of the models (with letters) that answered the item "
        "wrong with the letter they over-predict most, [0, 1].",
        "is_position_bias_issue": "The headline model answered wrong with its most "
        "over-predicted letter.",
    }
    #: The largest |predicted - gold letter share| of a model (share points).
    verdict_scale: ClassVar[VerdictScale] = VerdictScale(
        0.02,
        0.05,
        0.10,
        {
            "none": "no model favours an answer letter",
            "low": "a slight letter preference",
            "moderate": "a clear letter bias",
            "high": "a strong letter bias",
        },
    )
    fast_params: ClassVar[dict[str, Any]] = {"n_resamples": 200}
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "n_resamples": [Interval(Integral, 100, MAX_RESAMPLES, closed="both")],
        "random_state": [Interval(Integral, 0, None, closed="left"), None],
    }

    def __init__(self, n_resamples: int = 1000, random_state: int | None = 0) -> None:
        self.n_resamples = n_resamples
        self.random_state = random_state

    def check(self, ctx: RunContext) -> None:
        n = len(ctx.target)
        if n < MIN_ITEMS:
            raise AnalysisError(
                f"position_bias needs at least {MIN_ITEMS} items for its intervals and test; "
                f"{ctx.target.name!r} has {n}."
            )
        _aligned(ctx, ctx.target)

    def _run(self, ctx: RunContext) -> AnalysisOutput:
        ds = ctx.target
        preds = _aligned(ctx, ds)
        k = option_counts(ds.frame)
        gold = ds.labels
        ids = ds.ids
        n_letters = ds.n_classes
        letters = list(ds.label_names)
        scores = pd.DataFrame({"id": ids, "gold": ds.frame["label"].astype(str), "n_options": k})
        metrics: dict[str, float] = {"n_items": float(len(ds)), "chance": float(np.mean(1.0 / k))}
        shares = np.bincount(gold, minlength=n_letters) / len(gold)
        metrics.update(
            {f"gold_share_{lab}": float(s) for lab, s in zip(letters, shares, strict=True)}
        )
        records = []
        for p in preds:
            has_letters = p.kind != "correctness"
            pred = _model_letters(p, k, ids)
            s = letter_statistics(
                pred,
                gold,
                k,
                n_letters,
                n_resamples=self.n_resamples,
                random_state=self.random_state,
            )
            if not has_letters:
                # Right/wrong only: the values are the gold where right, so the letter
                # statistics would describe the right answers, not the model's choices.
                for key in ("pred_share", "gold_share", "diff"):
                    s[key] = [math.nan] * n_letters
                    s[f"{key}_ci"] = [[math.nan, math.nan]] * n_letters
                for key in ("letter_bias", "tvd", "chi2", "p_value"):
                    s[key] = math.nan
                    s[f"{key}_ci"] = [math.nan, math.nan]
                s["overpredicted"] = None
            records.append({"model": p.name, "has_letters": has_letters, **s})
            metrics.update(_model_metrics(p.name, s, letters))
            scores[f"pred_{p.name}"] = [LETTERS[v] if v >= 0 and has_letters else "" for v in pred]
            scores[f"correct_{p.name}"] = pred == gold
        top = _headline_model(records)
        scores["position_bias_score"], scores["is_position_bias_issue"] = _item_scores(
            records, scores, top
        )
        with_letters = [r for r in records if r["has_letters"]]
        if top is not None:
            metrics["max_letter_bias"] = float(top["letter_bias"])
            metrics["max_letter_bias_p_value"] = _bonferroni(top["p_value"], len(with_letters))
        strata = dict(zip(*np.unique(k, return_counts=True), strict=True))
        details = {
            "letters": letters,
            "models": [p.name for p in preds],
            "per_model": records,
            "headline_model": None if top is None else top["model"],
            "n_models_with_letters": len(with_letters),
            "option_counts": {str(int(a)): int(b) for a, b in strata.items()},
            "test": "chi-square of predicted vs gold letters within each option count "
            f"(strata of >= {MIN_STRATUM} items), summed over the option counts",
        }
        return AnalysisOutput(
            scores=scores,
            metrics=metrics,
            summary=_summary(records, top, metrics["chance"]),
            details=details,
            tables={"letters": _letter_table(records, letters)},
        )

    def headline(self, result: Any) -> Headline:
        """The model with the largest letter bias (by its interval's lower bound), with
        the chi-square test (Bonferroni over models) against "predicted letters
        distributed as the gold letters"."""
        details = result.details or {}
        name = details.get("headline_model")
        rec = next((r for r in details.get("per_model", []) if r.get("model") == name), None)
        if rec is None:
            return self.verdict_scale.headline(
                "letter bias",
                None,
                "no model's predictions name letters (correctness only)",
                severity="info",
            )
        lo, hi = (math.nan if v is None else v for v in rec["letter_bias_ci"])
        over = rec.get("overpredicted")
        idx = LETTERS.index(over) if over else None
        where = (
            f"; {over} predicted {rec['pred_share'][idx]:.1%} vs gold {rec['gold_share'][idx]:.1%}"
            if idx is not None
            else ""
        )
        return self.verdict_scale.headline(
            "letter bias",
            rec["letter_bias"],
            f"{name}: largest letter share gap {rec['letter_bias']:.3f} "
            f"[{lo:.3f}, {hi:.3f}]{where}",
            interval=(lo, hi) if math.isfinite(lo) and math.isfinite(hi) else None,
            p_value=result.metrics.get("max_letter_bias_p_value"),
            null="predicted letters distributed as the gold letters (chi-square within "
            "option counts, Bonferroni over models)",
            measured="largest |predicted - gold letter share| of a model over the letters",
        )


def _bonferroni(p: float, m: int) -> float:
    return float(min(1.0, p * max(m, 1))) if p == p else math.nan


def _model_metrics(name: str, s: dict[str, Any], letters: Sequence[str]) -> dict[str, float]:
    """Flat metrics of one model (intervals as ``_ci_low`` / ``_ci_high``)."""
    out: dict[str, float] = {}
    for key, metric in (
        ("accuracy", f"accuracy_{name}"),
        ("letter_bias", f"letter_bias_{name}"),
        ("tvd", f"tvd_{name}"),
        ("position_spread", f"position_spread_{name}"),
    ):
        out[metric] = float(s[key])
        if not math.isnan(out[metric]):
            out[f"{metric}_ci_low"], out[f"{metric}_ci_high"] = map(float, s[f"{key}_ci"])
    out[f"letter_p_value_{name}"] = float(s["p_value"])
    for i, lab in enumerate(letters):
        out[f"pred_share_{name}_{lab}"] = float(s["pred_share"][i])
        out[f"accuracy_{name}_gold_{lab}"] = float(s["accuracy_by_gold"][i])
    return out


def _headline_model(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The model with letters whose letter bias has the highest lower bound."""
    cands = [r for r in records if r["has_letters"] and r["letter_bias"] == r["letter_bias"]]
    if not cands:
        return None
    return max(cands, key=lambda r: (np.nan_to_num(r["letter_bias_ci"][0]), r["letter_bias"]))


def _item_scores(
    records: list[dict[str, Any]], scores: pd.DataFrame, top: dict[str, Any] | None
) -> tuple[np.ndarray, np.ndarray]:
    """Per item: share of models wrong with their most over-predicted letter; the top model's flag."""
    n = len(scores)
    hits = np.zeros(n)
    flagged = np.zeros(n, dtype=bool)
    used = [r for r in records if r["has_letters"]]
    for r in used:
        over = r.get("overpredicted")
        if over is None:
            continue
        hit = (scores[f"pred_{r['model']}"] == over).to_numpy() & ~scores[
            f"correct_{r['model']}"
        ].to_numpy(dtype=bool)
        hits += hit
        if top is not None and r["model"] == top["model"]:
            flagged = hit
    return (hits / len(used) if used else hits), flagged


def _letter_table(records: list[dict[str, Any]], letters: Sequence[str]) -> pd.DataFrame:
    """Models x letters: shares and accuracy by gold position, with intervals (long form)."""
    rows = []
    for r in records:
        for i, lab in enumerate(letters):
            rows.append(
                {
                    "model": r["model"],
                    "letter": lab,
                    "gold_count": int(r["gold_count"][i]),
                    "pred_share": r["pred_share"][i],
                    "pred_share_low": r["pred_share_ci"][i][0],
                    "pred_share_high": r["pred_share_ci"][i][1],
                    "gold_share": r["gold_share"][i],
                    "accuracy_by_gold": r["accuracy_by_gold"][i],
                    "accuracy_by_gold_low": r["accuracy_by_gold_ci"][i][0],
                    "accuracy_by_gold_high": r["accuracy_by_gold_ci"][i][1],
                }
            )
    return pd.DataFrame(rows)


def _summary(records: list[dict[str, Any]], top: dict[str, Any] | None, chance: float) -> str:
    parts = []
    for r in records:
        lo, hi = r["accuracy_ci"]
        part = f"{r['model']} accuracy {r['accuracy']:.3f} [{lo:.3f}, {hi:.3f}]"
        if r["has_letters"]:
            part += f", letter bias {r['letter_bias']:.3f} (p={r['p_value']:.2g})"
        parts.append(part)
    head = f"chance {chance:.3f}; " + "; ".join(parts)
    if top is not None and top.get("overpredicted"):
        head += f"; most over-predicted letter of {top['model']}: {top['overpredicted']}"
    return head
