"""Report section of PVI (Ethayarajh et al. 2022, "Understanding Dataset Difficulty with
V-Usable Information").

Shows the V-information of every condition with its bootstrap interval (a bar chart
against 0, the label prior), the PVI distribution per gold label (a histogram of the
headline condition and a table of quantiles), and, as the paper reads them, the examples
with the lowest full-input PVI (hard for the model or possibly mislabelled) and the
highest partial-input PVI (the label given away by part of the input). Every block reads
only the result and is skipped when its inputs are missing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup
from matplotlib.figure import Figure

from spurious.report import plots
from spurious.report.components import (
    Plot,
    Stat,
    example_table,
    figure_block,
    finite,
    html_table,
    metric_cell,
    metrics_table,
    render_fragment,
    scores_preview,
    stat_block,
)
from spurious.report.sections import Section, register_section, result_section
from spurious.report.sections.partial_input import BarSpec, accuracy_plot
from spurious.results import Result

__all__ = ["pvi_histogram_plot", "pvi_section"]


def _label(condition: str) -> str:
    return condition.replace("_only", "-only").replace("_", " ")


@plots.styled
def pvi_histogram_plot(histogram: Mapping[str, Any], condition: str = "") -> str | None:
    """PVI histogram per gold label on shared bins (stacked outlines), 0 marked.

    Examples
    --------
    >>> h = {"edges": [-1.0, 0.0, 1.0], "counts": {"a": [1, 3], "b": [2, 0]}}
    >>> pvi_histogram_plot(h, "full").startswith("data:image/svg+xml")
    True
    """
    edges = plots.to_float_array(histogram.get("edges") or [])
    counts = histogram.get("counts") or {}
    if len(edges) < 2 or not counts:
        return None
    fig = Figure(figsize=(6.0, 3.0))
    ax = fig.add_subplot()
    for i, (name, values) in enumerate(counts.items()):
        values = plots.to_float_array(values)
        if len(values) != len(edges) - 1:
            continue
        color = plots.SERIES_COLORS[i % len(plots.SERIES_COLORS)]
        ax.stairs(values, edges, label=plots.plain(name), color=color, linewidth=1.5)
    ax.axvline(0.0, color=plots.PALETTE["baseline"], linestyle="--", linewidth=1.2)
    ax.set_xlabel(f"PVI of {plots.plain(_label(condition))} (bits)")
    ax.set_ylabel("examples")
    ax.legend(fontsize=8, frameon=False)
    return plots.figure_to_data_uri(fig)


def _stats(m: Mapping[str, Any], conditions: Sequence[str]) -> Markup:
    stats = [
        Stat(f"V-info {_label(c)}", metric_cell(m, f"v_info_{c}"), "bits, 95% bootstrap CI")
        for c in conditions
        if f"v_info_{c}" in m
    ]
    if "label_entropy" in m:
        stats.append(Stat("H(Y)", m["label_entropy"], "bits: the most any input can carry"))
    return stat_block(stats)


def _figures(result: Result, conditions: Sequence[str], headline: str) -> Markup:
    m = result.metrics or {}
    d = result.details or {}
    bars = [
        BarSpec(
            _label(c),
            finite(m.get(f"v_info_{c}")),
            finite(m.get(f"v_info_{c}_ci_low")),
            finite(m.get(f"v_info_{c}_ci_high")),
            "full" if i == 0 else "partial",
        )
        for i, c in enumerate(conditions)
    ]
    figures = [
        Plot(
            plots.safe_plot(
                accuracy_plot,
                bars,
                baseline=0.0,
                baseline_label="label prior",
                ylabel="V-information (bits)",
            ),
            "V-information of each condition with its bootstrap interval.",
            "V-information (mean PVI) per condition; 0 = no more than the label prior.",
        )
    ]
    hist = (d.get("histograms") or {}).get(headline)
    if isinstance(hist, Mapping):
        figures.append(
            Plot(
                plots.safe_plot(pvi_histogram_plot, hist, headline),
                f"PVI of {_label(headline)} per gold label.",
                f"PVI distribution of {_label(headline)} per gold label; left of the dashed "
                "line the input misleads the model.",
            )
        )
    return figure_block(figures)


def _per_label(details: Mapping[str, Any]) -> Markup:
    rows = []
    for c, by_label in (details.get("per_label") or {}).items():
        for name, s in (by_label or {}).items():
            rows.append(
                [
                    _label(c),
                    name,
                    finite(s.get("n")),
                    *(finite(s.get(k)) for k in ("mean", "q05", "median", "q95")),
                    finite(s.get("share_negative")),
                ]
            )
    if not rows:
        return Markup("")
    table = html_table(
        ["Condition", "Label", "n", "Mean", "5%", "Median", "95%", "Share < 0"], rows
    )
    return render_fragment("<h4>PVI per gold label (bits)</h4>{{ t }}", t=table)


def _examples(details: Mapping[str, Any], conditions: Sequence[str], headline: str) -> Markup:
    examples = details.get("examples") or {}
    blocks = []
    picks = []
    if conditions:
        picks.append(
            (
                conditions[0],
                "lowest",
                "Lowest full-input PVI: hard for the model or possibly mislabelled",
                "As in the paper (Sec. 4), negative PVI means the input made the gold label "
                "less likely than the prior: check these labels first.",
            )
        )
    if headline in conditions[1:]:
        picks.append(
            (
                headline,
                "highest",
                f"Highest {_label(headline)} PVI: the label given away by part of the input",
                "These examples' gold label is predictable without the rest of the input "
                "(an annotation artifact).",
            )
        )
    for c, which, title, note in picks:
        rows = [e for e in (examples.get(c) or {}).get(which) or [] if isinstance(e, Mapping)]
        if not rows:
            continue
        fields = [k for k in rows[0] if k not in ("id", "label", "pvi", "p_gold")]
        blocks.append(
            example_table(
                ["id", "label", *fields, "PVI (bits)", "p(gold)"],
                [
                    [
                        e.get("id"),
                        e.get("label"),
                        *(e.get(f) for f in fields),
                        finite(e.get("pvi")),
                        finite(e.get("p_gold")),
                    ]
                    for e in rows
                ],
                text_columns=["id", "label", *fields],
                title=title,
                note=note,
            )
        )
    return Markup("").join(blocks)


@register_section("pvi")
def pvi_section(result: Result) -> Section:
    """:data:`~spurious.report.sections.SectionRenderer` of the PVI analysis.

    Examples
    --------
    >>> import pandas as pd
    >>> r = Result("pvi", pd.DataFrame({"id": ["a"]}), {"v_info_full": 0.42},
    ...            details={"conditions": ["full"]})
    >>> "0.420" in pvi_section(r).html_body
    True
    """
    m = result.metrics or {}
    d = result.details or {}
    conditions = [str(c) for c in d.get("conditions") or []]
    headline = str(d.get("headline_condition") or (conditions[0] if conditions else ""))
    extra: dict[str, Markup] = {"All metrics": metrics_table(m)} if m else {}
    extra["All per-example scores (first rows)"] = scores_preview(result.scores)
    note = render_fragment(
        '<p class="legend">PVI(x &rarr; y) = log2 g_x[y] - log2 g_null[y] (bits), g_null the '
        "label prior of the rows g_x was trained on ({{ mode }}). High partial-input PVI: "
        "an artifact; negative full-input PVI: hard or possibly mislabelled.</p>",
        mode=str(d.get("mode", "")),
    )
    return result_section(
        result,
        _stats(m, conditions),
        note,
        _figures(result, conditions, headline) if conditions else Markup(""),
        _per_label(d),
        _examples(d, conditions, headline),
        title="PVI — pointwise V-information of each input",
        extra=extra,
    )
