"""The ``duplicates`` analysis: how many inputs of a split repeat another, and whether
their copies agree on the label.

A duplicated input is counted twice by every figure computed on the split: a
cross-validated leakage probe meets the copy of a training row in its test fold, a
held-out score weighs the repeated example twice, and an interval is narrower than the
data allow. This analysis counts them, cheaply and without a model
(:mod:`~spurious.detectors.duplicates.search`): exact copies after normalisation (NFC,
case folded, whitespace collapsed) of each field and of the whole input, near copies
(TF-IDF cosine >= ``near_threshold`` in every field), and the copies whose labels
disagree (an annotation conflict for exact copies; for near copies often a deliberate
minimal edit, as in NLI contrast sets). It judges the split the other analyses judge
(the evaluation split when there is one) and, with an evaluation split, also the
training split; rows shared *between* the two are the run's overlap warning.

Its headline is information, not a shortcut claim (severity ``info``).
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from spurious.analysis import AnalysisOutput, Requirements, VerdictScale, register_analysis
from spurious.context import RunContext
from spurious.data.dataset import Dataset
from spurious.detectors.base import Detector
from spurious.detectors.duplicates.search import (
    clusters,
    exact_codes,
    near_pairs,
    normalise_fields,
)
from spurious.exceptions import AnalysisError
from spurious.results import Headline, Result
from spurious.utils.validation import Interval

__all__ = ["Duplicates", "split_duplicates"]

#: Fewest examples of a split: below it a share of duplicates says nothing.
MIN_EXAMPLES = 10
#: Share of copies from which the verdict asks to deduplicate before reading figures.
NOTABLE_SHARE = 0.01
#: Metrics of the training split reported beside the judged split's (prefixed ``train_``).
TRAIN_METRICS = (
    "n_exact_redundant",
    "share_exact_redundant",
    "n_exact_conflict_groups",
    "n_near_pairs",
    "n_redundant",
    "share_redundant",
)


def _labels(ds: Dataset) -> np.ndarray | None:
    return ds.labels if ds.task.has_labels else None


def _texts(ds: Dataset, row: int) -> dict[str, str]:
    return {f: str(ds.frame[f].iat[row]) for f in ds.task.text_fields}


def _label_name(ds: Dataset, labels: np.ndarray | None, row: int) -> str | None:
    if labels is None:
        return None
    names = ds.label_names
    k = int(labels[row])
    return str(names[k]) if 0 <= k < len(names) else str(k)


def split_duplicates(
    ds: Dataset, near_threshold: float | None, max_near_rows: int, n_examples: int
) -> tuple[dict[str, float], pd.DataFrame, dict[str, Any]]:
    """Duplicates within one split: metrics, per-row columns and examples.

    Parameters
    ----------
    ds : Dataset
    near_threshold : float or None
        Smallest TF-IDF cosine of a near copy, in every field; ``None``: exact only.
    max_near_rows : int
        Above this many rows the near search (quadratic) is skipped and said so.
    n_examples : int
        Exact groups and near pairs listed in the details, each.

    Returns
    -------
    metrics, columns, details
        ``columns`` has one row per example (``duplicates_cluster``, ``duplicates_copies``,
        ``duplicates_score``, ``is_duplicates_issue``, ``duplicates_label_conflict``).
        A cluster joins exact copies and near copies that keep the label: the copies that
        count twice in a figure. Near pairs whose labels differ are counted apart.

    Examples
    --------
    >>> frame = pd.DataFrame({"text": ["Good film", "good  film", "bad film"] * 4,
    ...                       "label": ["pos", "neg", "neg"] * 4})
    >>> m, cols, _ = split_duplicates(Dataset.from_frame(frame, "text"), 0.9, 100, 3)
    >>> m["n_exact_redundant"], m["n_exact_conflict_groups"]
    (10.0, 1.0)
    """
    fields = normalise_fields({f: ds.frame[f].astype(str) for f in ds.task.text_fields})
    n = len(ds)
    labels = _labels(ds)
    codes = exact_codes(fields)
    sizes = np.bincount(codes)
    m: dict[str, float] = {"n_examples": float(n)}
    for f, texts in fields.items():
        field_codes = exact_codes({f: texts})
        repeated = np.bincount(field_codes)[field_codes] > 1
        m[f"{f}_n_duplicate_rows"] = float(repeated.sum())
        m[f"{f}_share_duplicate"] = float(repeated.mean())
    dup_groups = np.flatnonzero(sizes > 1)
    m["n_exact_groups"] = float(len(dup_groups))
    m["n_exact_rows"] = float(sizes[dup_groups].sum())
    m["n_exact_redundant"] = float(n - len(sizes))
    m["share_exact_redundant"] = m["n_exact_redundant"] / n
    conflict_groups = np.zeros(len(sizes), dtype=bool)
    if labels is not None:
        distinct = pd.Series(labels).groupby(codes).nunique().to_numpy()
        conflict_groups = distinct > 1
        m["n_exact_conflict_groups"] = float(conflict_groups.sum())
        m["n_exact_conflict_rows"] = float(sizes[conflict_groups].sum())
    searched = near_threshold is not None and n <= max_near_rows
    i = j = np.zeros(0, np.int64)
    sim = np.zeros(0)
    if searched:
        assert near_threshold is not None
        i, j, sim = near_pairs(fields, near_threshold, codes)
    m["near_searched"] = float(searched)
    m["n_near_pairs"] = float(len(i))
    near_rows = np.zeros(n, dtype=bool)
    near_rows[i] = near_rows[j] = True
    m["n_near_rows"] = float(near_rows.sum())
    same_label = np.ones(len(i), dtype=bool)
    if labels is not None:
        same_label = labels[i] == labels[j]
        m["n_near_conflict_pairs"] = float((~same_label).sum())
    # Copies that inflate a figure: exact ones, and near ones that keep the label (near
    # pairs whose labels differ are mostly deliberate edits, counted apart above).
    cluster = clusters(codes, i[same_label], j[same_label])
    m["n_redundant"] = float(n - (cluster.max() + 1 if n else 0))
    m["share_redundant"] = m["n_redundant"] / n
    # The closest copy of each row: 1 for an exact one, the cosine for a near one.
    best = np.where(sizes[codes] > 1, 1.0, 0.0)
    np.maximum.at(best, i, sim)
    np.maximum.at(best, j, sim)
    cluster_size = np.bincount(cluster)[cluster]
    # An exact or near copy of the row carries another label.
    conflict = conflict_groups[codes]
    conflict[i[~same_label]] = conflict[j[~same_label]] = True
    columns = pd.DataFrame(
        {
            "duplicates_cluster": np.where(cluster_size > 1, cluster, -1),
            "duplicates_copies": sizes[codes],
            "duplicates_score": best,
            "is_duplicates_issue": cluster_size > 1,
            "duplicates_label_conflict": conflict,
        }
    )
    details = {
        "near_searched": searched,
        "exact_examples": _exact_examples(ds, labels, codes, sizes, conflict_groups, n_examples),
        "near_examples": _near_examples(ds, labels, i, j, sim, n_examples),
    }
    return m, columns, details


def _exact_examples(
    ds: Dataset,
    labels: np.ndarray | None,
    codes: np.ndarray,
    sizes: np.ndarray,
    conflict: np.ndarray,
    k: int,
) -> list[dict[str, Any]]:
    """The largest exact groups, label conflicts first."""
    groups = np.flatnonzero(sizes > 1)
    groups = groups[np.lexsort((groups, -sizes[groups], ~conflict[groups]))][:k]
    out = []
    for g in groups:
        rows = np.flatnonzero(codes == g)
        out.append(
            {
                "size": int(sizes[g]),
                "texts": _texts(ds, int(rows[0])),
                "labels": sorted({str(_label_name(ds, labels, int(r))) for r in rows})
                if labels is not None
                else [],
                "label_conflict": bool(conflict[g]),
                "ids": [str(x) for x in ds.ids[rows[:5]]],
            }
        )
    return out


def _near_examples(
    ds: Dataset,
    labels: np.ndarray | None,
    i: np.ndarray,
    j: np.ndarray,
    sim: np.ndarray,
    k: int,
) -> list[dict[str, Any]]:
    """The most similar near pairs: those that keep the label (copies) first."""
    differ = (labels[i] != labels[j]) if labels is not None else np.zeros(len(i), dtype=bool)
    order = np.lexsort((-sim, differ))[:k]
    return [
        {
            "similarity": float(sim[p]),
            "a": _texts(ds, int(i[p])),
            "b": _texts(ds, int(j[p])),
            "labels": [_label_name(ds, labels, int(i[p])), _label_name(ds, labels, int(j[p]))],
            "label_conflict": bool(differ[p]),
            "ids": [str(ds.ids[i[p]]), str(ds.ids[j[p]])],
        }
        for p in order
    ]


@register_analysis
class Duplicates(Detector):
    """Exact and near duplicates within a split, and the copies that disagree on the label.

    Parameters
    ----------
    near_threshold : float or None, default=0.9
        Smallest TF-IDF cosine (word uni- and bigrams) of a near copy, in every text
        field; ``None`` counts exact copies only.
    max_near_rows : int, default=50000
        Largest split searched for near copies (the search compares every pair of rows;
        about a second for 10,000 rows); larger splits get exact copies only, and the
        result says so.
    n_examples : int, default=10
        Exact groups and near pairs listed in the report, each.
    """

    name: ClassVar[str] = "duplicates"
    description: ClassVar[str] = (
        "Inputs repeated within a split: exact copies after normalisation, near copies "
        "(TF-IDF cosine in every field) and copies with conflicting labels; no model."
    )
    requires: ClassVar[Requirements] = Requirements()
    # Model-free and about a second: it frames every figure computed on the split.
    audit_order: ClassVar[int] = 12
    fast_params: ClassVar[dict[str, Any]] = {}
    profiles: ClassVar[dict[str, dict[str, Any]]] = {"quick": {}, "full": {}}
    verdict_scale: ClassVar[VerdictScale] = VerdictScale(0, 0, 0)
    metric_docs: ClassVar[dict[str, str]] = {
        "n_examples": "Examples of the judged split.",
        "<field>_n_duplicate_rows": "Rows whose normalised field text occurs in another row.",
        "<field>_share_duplicate": "Share of rows whose field text occurs in another, [0, 1].",
        "n_exact_groups": "Distinct inputs (all fields, normalised) held by >= 2 rows.",
        "n_exact_rows": "Rows in such groups.",
        "n_exact_redundant": "Exact copies beyond the first of each input (n - distinct).",
        "share_exact_redundant": "n_exact_redundant / n_examples, [0, 1].",
        "n_exact_conflict_groups": "Exact groups whose rows carry more than one label.",
        "n_exact_conflict_rows": "Rows in those groups.",
        "near_searched": "1 when near copies were searched, 0 (exact only) otherwise.",
        "n_near_pairs": "Pairs of rows, not exact copies, with TF-IDF cosine >= "
        "near_threshold in every field.",
        "n_near_rows": "Rows in at least one near pair.",
        "n_near_conflict_pairs": "Near pairs whose labels differ (often a deliberate edit).",
        "n_redundant": "Rows beyond one per cluster of exact copies and near copies that "
        "keep the label (all near copies without labels).",
        "share_redundant": "n_redundant / n_examples, [0, 1]: how much smaller the split "
        "is without copies.",
        "train_<metric>": "The same for the training split, when an evaluation split is judged.",
    }
    score_columns: ClassVar[dict[str, str]] = {
        "id": "Example id.",
        "duplicates_cluster": "Cluster of exact copies and same-label near copies the row "
        "belongs to (-1: none).",
        "duplicates_copies": "Rows with the same normalised input, the row included (>= 1).",
        "duplicates_score": "Similarity to the closest copy, [0, 1]: 1 exact, the cosine "
        "for a near copy, 0 when none.",
        "is_duplicates_issue": "The row has an exact copy, or a near copy with its label, in "
        "the split.",
        "duplicates_label_conflict": "An exact or near copy of the row carries another label.",
    }
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "near_threshold": [Interval(Real, 0, 1, closed="right"), None],
        "max_near_rows": [Interval(Integral, 2, None, closed="left")],
        "n_examples": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(
        self, near_threshold: float | None = 0.9, max_near_rows: int = 50000, n_examples: int = 10
    ) -> None:
        self.near_threshold = near_threshold
        self.max_near_rows = max_near_rows
        self.n_examples = n_examples

    def uses_eval(self) -> bool:
        return True  # the evaluation split is the judged one, and the data is counted too

    def check(self, ctx: RunContext) -> None:
        for role, ds in (("data", ctx.target), ("training split", ctx.train)):
            if len(ds) < MIN_EXAMPLES:
                raise AnalysisError(
                    f"The duplicates analysis needs at least {MIN_EXAMPLES} examples in the "
                    f"{role} for a share of copies to mean anything; {ds.name!r} has {len(ds)}."
                )

    def _run(self, ctx: RunContext) -> AnalysisOutput:
        ds = ctx.target
        args = (self.near_threshold, self.max_near_rows, self.n_examples)
        metrics, columns, details = split_duplicates(ds, *args)
        details["splits"] = {"judged": ds.name}
        if ctx.eval is not None:
            train_metrics, _, train_details = split_duplicates(ctx.train, *args)
            metrics.update({f"train_{k}": train_metrics[k] for k in TRAIN_METRICS})
            details["splits"]["train"] = ctx.train.name
            details["train_exact_examples"] = train_details["exact_examples"]
        details["fields"] = list(ds.task.text_fields)
        details["has_labels"] = ds.task.has_labels
        scores = pd.concat([pd.DataFrame({"id": ds.ids}), columns], axis=1)
        scores["duplicates_score"] = scores["duplicates_score"].astype(float)
        return AnalysisOutput(
            scores=scores, metrics=metrics, summary=_summary(metrics), details=details
        )

    def headline(self, result: Result) -> Headline:
        m = result.metrics
        share = float(m.get("share_redundant", 0.0))
        head = self.verdict_scale.headline(
            "duplicated inputs", share, _summary(m), severity="info",
            measured="rows beyond one per cluster of copies, per example",
        )  # fmt: skip
        if share == 0:
            head["verdict"] = "no input repeats another"
        elif share < NOTABLE_SHARE:
            head["verdict"] = "few copies: figures on this split are barely inflated"
        else:
            head["verdict"] = (
                "copies are counted twice by cross-validated and held-out scores: "
                "deduplicate (or group) them before reading leakage figures"
            )
        if m.get("n_exact_conflict_groups"):
            head["verdict"] += "; exact copies with different labels (annotation conflicts)"
        return head


def _summary(m: dict[str, float]) -> str:
    """``"12 of 135 examples (8.89%) repeat another input (8 exact, 4 near copies); 3 exact
    group(s) with different labels; ..."``."""
    n, red = int(m.get("n_examples", 0)), int(m.get("n_redundant", 0))
    exact = int(m.get("n_exact_redundant", 0))
    parts = [
        f"{red:,} of {n:,} examples ({m.get('share_redundant', 0.0):.2%}) repeat another input"
    ]
    if red:
        parts[0] += f" ({exact:,} exact, {red - exact:,} near copies)"
    if not m.get("near_searched"):
        parts.append("near copies not searched")
    if m.get("n_exact_conflict_groups"):
        parts.append(f"{int(m['n_exact_conflict_groups']):,} exact group(s) with different labels")
    if m.get("n_near_conflict_pairs"):
        parts.append(f"{int(m['n_near_conflict_pairs']):,} near pair(s) with different labels")
    return "; ".join(parts)
