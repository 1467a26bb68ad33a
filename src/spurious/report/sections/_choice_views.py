"""The per-view table shared by the two "pick one of several" leakage sections.

``mc_leakage`` (a probe picks an item's option) and ``qa_partial_input`` (a probe picks
the context sentence holding the answer) report the same quantities per view: accuracy,
chance, accuracy over chance, recovery %R_R, NBA and NBR (and, for QA, accuracy over the
position-only probe). Only the words differ, so the table is built once here.

Examples
--------
>>> view_label("choices_only")
'choices-only'
>>> m = {"accuracy_full": 0.6, "accuracy_full_ci_low": 0.5, "accuracy_full_ci_high": 0.7,
...      "chance": 0.25}
>>> "choices" not in views_table(["full"], m, roles={}, words=ChoiceWords())
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from spurious.report.components import (
    MISSING,
    Cell,
    finite,
    html_table,
    metric_cell,
    render_fragment,
)
from spurious.results import Result

__all__ = ["ChoiceWords", "view_label", "view_names", "views_table"]


@dataclass(frozen=True)
class ChoiceWords:
    """How a section names what is chosen and scored (the table's header help)."""

    accuracy: str = "share of items the probe answers right"
    chance: str = "mean of 1/k over the items"
    nba: str = "share of items where this view's and the full probe's answers agree"
    nbr: str = "of the agreeing items, the share both answer right"
    majority: str = "majority letter"
    majority_role: str = "always answer the most frequent training gold letter"


def view_names(result: Result, known: Sequence[str]) -> list[str]:
    """The views a result reports: ``details["views"]``, else those of ``known`` with an
    accuracy metric."""
    given = (result.details or {}).get("views")
    if isinstance(given, list) and given:
        return [str(v) for v in given]
    return [v for v in known if f"accuracy_{v}" in (result.metrics or {})]


def view_label(view: str) -> str:
    """``"choices_only"`` -> ``"choices-only"``."""
    return view.replace("_only", "-only").replace("_", " ")


def views_table(
    views: Sequence[str], m: Mapping[str, Any], *, roles: Mapping[str, str], words: ChoiceWords
) -> Markup:
    """Accuracy, chance, Delta over chance (and over position), %R_R, NBA, NBR per view,
    and the majority baseline's row when the result has one."""
    dash = Cell(text=MISSING, sort="", numeric=True, css="na")
    position = any(f"delta_position_{v}" in m for v in views)
    rows: list[list[Any]] = []
    for v in views:
        partial = v != "full" and "accuracy_full" in m
        over_position = [
            metric_cell(m, f"delta_position_{v}", "signed") if f"delta_position_{v}" in m else dash
        ]
        rows.append(
            [
                Cell(
                    text=render_fragment(
                        '<span class="cond">{{ v }}</span><span class="role">{{ r }}</span>',
                        v=view_label(v),
                        r=roles.get(v, ""),
                    ),
                    sort=v,
                ),
                metric_cell(m, f"accuracy_{v}"),
                finite(m.get("chance")),
                metric_cell(m, f"delta_chance_{v}", "signed"),
                *(over_position if position else []),
                metric_cell(m, f"recovery_{v}", "percent") if partial else dash,
                metric_cell(m, f"nba_{v}") if partial else dash,
                metric_cell(m, f"nbr_{v}") if partial else dash,
            ]
        )
    if "majority_accuracy" in m:
        rows.append(
            [
                Cell(
                    text=render_fragment(
                        '<span class="cond">{{ a }}</span><span class="role">{{ b }}</span>',
                        a=words.majority,
                        b=words.majority_role,
                    ),
                    sort="~majority",
                ),
                metric_cell(m, "majority_accuracy"),
                finite(m.get("chance")),
                *[dash] * (5 if position else 4),
            ]
        )
    headers: list[tuple[Any, str]] = [
        ("View", "what the probe saw"),
        ("Accuracy", words.accuracy),
        ("Chance", words.chance),
        (Markup("Δ<sub>chance</sub>"), "accuracy minus chance"),
    ]
    if position:
        headers.append((Markup("Δ<sub>position</sub>"), "accuracy minus the position-only probe's"))
    headers += [
        (Markup("%R<sub>R</sub>"), "(accuracy - chance) / (full accuracy - chance)"),
        ("NBA", words.nba),
        ("NBR", words.nbr),
    ]
    return html_table(headers, rows, css="metrics pi-metrics")
