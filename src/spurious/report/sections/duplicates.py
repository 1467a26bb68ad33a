"""Report section of the ``duplicates`` analysis: copies within a split, and their labels.

Headline numbers (copies, their share, label conflicts), a per-field line (how often
each field's text repeats: by design for an NLI premise), then the largest exact groups
and the closest near pairs as example tables (dataset text, escaped). The section
informs: it does not claim a shortcut, it says by how much the split is smaller than
it looks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from spurious.report.components import (
    Stat,
    example_table,
    finite,
    html_table,
    metrics_table,
    render_fragment,
    scores_preview,
    stat_block,
)
from spurious.report.sections import Section, register_section, result_section
from spurious.results import Result

__all__ = ["duplicates_section"]


def _count(m: Mapping[str, Any], key: str) -> int:
    value = finite(m.get(key))
    return 0 if value is None else int(value)


def _stats(m: Mapping[str, Any]) -> Markup:
    n = _count(m, "n_examples")
    stats = [
        Stat(
            "Copies (rows beyond one per cluster)",
            _count(m, "n_redundant"),
            f"{m.get('share_redundant', 0.0):.2%} of {n:,} examples",
            "int",
        ),
        Stat("Exact copies", _count(m, "n_exact_redundant"), "same text in every field", "int"),
    ]
    if m.get("near_searched"):
        stats.append(Stat("Near pairs", _count(m, "n_near_pairs"), "cosine in every field", "int"))
    if "n_exact_conflict_groups" in m:
        stats.append(
            Stat(
                "Exact copies with different labels",
                _count(m, "n_exact_conflict_groups"),
                f"groups ({_count(m, 'n_exact_conflict_rows'):,} rows): annotation conflicts",
                "int",
            )
        )
        if m.get("near_searched"):
            stats.append(
                Stat(
                    "Near pairs with different labels",
                    _count(m, "n_near_conflict_pairs"),
                    "mostly deliberate edits; read them",
                    "int",
                )
            )
    if "train_share_redundant" in m:
        stats.append(
            Stat(
                "Training split: copies",
                _count(m, "train_n_redundant"),
                f"{m['train_share_redundant']:.2%} of its examples",
                "int",
            )
        )
    return stat_block(stats)


def _field_table(m: Mapping[str, Any], fields: Sequence[str]) -> Markup:
    rows = [
        [f, _count(m, f"{f}_n_duplicate_rows"), finite(m.get(f"{f}_share_duplicate"))]
        for f in fields
        if f"{f}_n_duplicate_rows" in m
    ]
    if not rows:
        return Markup("")
    return html_table(
        ["field", ("rows whose text repeats", "normalised text held by another row"), "share"],
        rows,
        caption="A field may repeat by design (an NLI premise has several hypotheses); "
        "only the whole input repeating makes a copy.",
        sortable=False,
    )


def _exact_table(groups: Sequence[Mapping[str, Any]], fields: Sequence[str], title: str) -> Markup:
    rows = [
        [
            g.get("size"),
            *((g.get("texts") or {}).get(f, "") for f in fields),
            ", ".join(str(x) for x in g.get("labels") or []),
            "yes" if g.get("label_conflict") else "",
        ]
        for g in groups
        if isinstance(g, Mapping)
    ]
    if not rows:
        return Markup("")
    return example_table(
        ["copies", *fields, "labels", "conflict"],
        rows,
        text_columns=[*fields, "labels"],
        title=title,
        note="Largest groups of rows with the same normalised input; conflicting labels first.",
    )


def _near_table(pairs: Sequence[Mapping[str, Any]], fields: Sequence[str]) -> Markup:
    rows = []
    for k, p in enumerate(pairs, start=1):
        if not isinstance(p, Mapping):
            continue
        labels = [*(p.get("labels") or []), None, None]
        for side, member in enumerate(("a", "b")):
            texts = p.get(member) or {}
            rows.append(
                [
                    f"{k}{member}",
                    finite(p.get("similarity")) if side == 0 else None,
                    *(texts.get(f, "") for f in fields),
                    "" if labels[side] is None else str(labels[side]),
                    "yes" if p.get("label_conflict") and side == 0 else "",
                ]
            )
    if not rows:
        return Markup("")
    return example_table(
        ["pair", ("cosine", "smallest TF-IDF cosine over the fields"), *fields, "label", "differ"],
        rows,
        text_columns=[*fields, "label"],
        title="Near pairs",
        note="Two rows per pair; pairs that keep the label (copies) first. Pairs whose "
        "labels differ are often minimal edits made on purpose.",
        max_rows=None,
    )


@register_section("duplicates")
def duplicates_section(result: Result) -> Section:
    """:data:`~spurious.report.sections.SectionRenderer` of the duplicates analysis.

    Examples
    --------
    >>> import pandas as pd
    >>> r = Result("duplicates", pd.DataFrame({"id": ["a"]}), {"n_examples": 3.0,
    ...            "n_redundant": 1.0, "share_redundant": 1 / 3, "n_exact_redundant": 1.0},
    ...            details={"fields": ["text"], "exact_examples": [{"size": 2,
    ...            "texts": {"text": "<b>hi</b>"}, "labels": ["pos"]}]})
    >>> html = duplicates_section(r).html_body
    >>> "&lt;b&gt;hi&lt;/b&gt;" in html and "<b>hi" not in html
    True
    """
    m = result.metrics or {}
    details = result.details or {}
    fields = [str(f) for f in details.get("fields") or []]
    threshold = (result.params or {}).get("near_threshold")
    if details.get("near_searched") is False and threshold is not None:
        near_note = (
            f"Near copies were not searched: the split has more than "
            f"{(result.params or {}).get('max_near_rows')} rows (max_near_rows)."
        )
    elif threshold is None:
        near_note = "Near copies were not searched (near_threshold=None)."
    else:
        near_note = (
            f"Near copy: TF-IDF cosine of word uni- and bigrams >= {threshold} in every field."
        )
    legend = render_fragment(
        '<p class="legend">Rows are compared after Unicode NFC, case folding and whitespace '
        "collapsing. {{ near }} A copy is counted twice by every figure computed on the split "
        "(a cross-validated probe meets it in its test fold; an interval is narrower than "
        "the data allow): read the leakage figures with this in mind, or deduplicate. Rows "
        "shared between the data and the evaluation split are the run's overlap warning. "
        "No model is used.</p>",
        near=near_note,
    )
    extra: dict[str, Markup] = {"All metrics": metrics_table(m)} if m else {}
    extra["All per-example scores (first rows)"] = scores_preview(result.scores)
    return result_section(
        result,
        _stats(m),
        legend,
        _field_table(m, fields),
        _exact_table(details.get("exact_examples") or [], fields, "Exact copies"),
        _near_table(details.get("near_examples") or [], fields),
        _exact_table(
            details.get("train_exact_examples") or [], fields, "Exact copies in the training split"
        ),
        title="duplicates — inputs repeated within a split",
        extra=extra,
    )
