"""Report section of dataset cartography (paper 002 Sec. 3, Swayamdipta et al. 2020).

Shows the data map (confidence against variability, coloured by correctness, with the
marginal densities) of the full input and, beside it, of the partial input; the share of
each region; how the two maps' regions cross; the anti-biased examples per label; the
learning curves of the mapping models; and example tables per region. Every block reads
only the result (scores, metrics, details) and is skipped when its inputs are missing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from markupsafe import Markup
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

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
from spurious.results import Result

__all__ = [
    "REGION_LABELS",
    "cartography_section",
    "data_map_figure",
    "data_map_plot",
    "learning_curve_plot",
]

#: Region key -> shown name and the rule (see spurious.detectors.cartography.assign_regions).
REGION_LABELS: dict[str, tuple[str, str]] = {
    "easy_to_learn": ("easy-to-learn", "highest confidence"),
    "ambiguous": ("ambiguous", "highest variability, of the rest"),
    "hard_to_learn": ("hard-to-learn", "lowest confidence"),
    "other": ("other", "middle confidence, low variability"),
}

_VIEW_PREFIX = {"full": "", "partial": "partial_"}


# ---------------------------------------------------------------------------------------
# Plots
# ---------------------------------------------------------------------------------------
@plots.styled
def data_map_figure(
    confidence: Sequence[float] | np.ndarray,
    variability: Sequence[float] | np.ndarray,
    correctness: Sequence[float] | np.ndarray,
    *,
    anti_biased_cut: float | None = None,
    title: str | None = None,
    max_points: int = 6000,
    random_state: int = 0,
    size: tuple[float, float] = (4.8, 4.0),
    fig: Figure | None = None,
    spec: Any = None,
) -> Figure | None:
    """The data map: variability (x) against confidence (y), coloured by correctness.

    Densities of both coordinates sit on the margins (over all examples); the scatter
    shows at most ``max_points`` examples (a seeded sample) so large maps stay legible.

    Parameters
    ----------
    confidence, variability, correctness : array-like of float
        Per-example coordinates (see :func:`spurious.models.dynamics.cartography_stats`).
    anti_biased_cut : float, optional
        Drawn as a dashed line: examples below it are anti-biased.
    title : str, optional
    max_points : int
    random_state : int
        Seeds the sample of plotted points.
    size : (float, float)
        Figure size in inches (a new figure). The default lets two maps share a row of
        the report at full scale (see :func:`spurious.report.plots.image_css_size`).
    fig, spec : Figure and SubplotSpec, optional
        Draw into this cell of an existing figure (e.g. two maps side by side).

    Returns
    -------
    matplotlib.figure.Figure or None
        ``None`` when no example has finite coordinates.

    Examples
    --------
    >>> fig = data_map_figure([0.9, 0.2, 0.5], [0.05, 0.04, 0.3], [1.0, 0.0, 0.5])
    >>> len(fig.axes)  # map, two margins, colour bar
    4
    """
    conf = plots.to_float_array(confidence)
    var = plots.to_float_array(variability)
    corr = plots.to_float_array(correctness)
    ok = np.isfinite(conf) & np.isfinite(var)
    if not ok.any():
        return None
    conf, var, corr = conf[ok], var[ok], np.where(np.isfinite(corr[ok]), corr[ok], 0.0)
    shown = np.arange(len(conf))
    if len(shown) > max_points:
        shown = np.sort(np.random.default_rng(random_state).choice(len(conf), max_points, False))
    if fig is None:
        fig = Figure(figsize=size)
    if spec is None:
        spec = fig.add_gridspec(1, 1)[0]
    grid = spec.subgridspec(
        2, 3, width_ratios=(5, 1, 0.18), height_ratios=(1, 4), hspace=0.05, wspace=0.05
    )
    ax = fig.add_subplot(grid[1, 0])
    top = fig.add_subplot(grid[0, 0], sharex=ax)
    right = fig.add_subplot(grid[1, 1], sharey=ax)
    cax = fig.add_subplot(grid[1, 2])
    # Draw the most correct points last so the easy region is not hidden under the rest.
    order = shown[np.argsort(corr[shown], kind="stable")]
    points = ax.scatter(
        var[order], conf[order], c=corr[order], cmap="viridis", vmin=0.0, vmax=1.0,
        s=7 if len(order) > 1500 else 14, alpha=0.7, linewidths=0, rasterized=len(order) > 1500,
    )  # fmt: skip
    cbar = fig.colorbar(points, cax=cax)
    cbar.set_label("correctness (fraction of epochs)")
    x_hi = max(0.05, float(np.nanmax(var)) * 1.08)
    ax.set_xlim(0.0, x_hi)
    ax.set_ylim(-0.02, 1.02)
    bins_x = np.linspace(0.0, x_hi, 40)
    bins_y = np.linspace(0.0, 1.0, 40)
    color = plots.PALETTE["full"]
    top.hist(var, bins=bins_x, density=True, color=color, alpha=0.55)
    right.hist(conf, bins=bins_y, density=True, orientation="horizontal", color=color, alpha=0.55)
    for a in (top, right):
        a.tick_params(labelleft=False, labelbottom=False, left=False, bottom=False)
        for side in ("top", "right", "left", "bottom"):
            a.spines[side].set_visible(False)
    top.set_ylabel("density", fontsize=8)
    cut = finite(anti_biased_cut)
    if cut is not None:
        ax.axhline(cut, color=plots.PALETTE["flagged"], linestyle="--", linewidth=1.0)
        # x in axes fraction, y in data: the note sits on the line, clear of the region
        # labels at the left and right edges.
        ax.text(
            0.5, cut, "anti-biased below", transform=ax.get_yaxis_transform(), ha="center",
            va="top", fontsize=8, color=plots.PALETTE["flagged"],
            bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.7},
        )  # fmt: skip
    box = {"boxstyle": "round,pad=0.25", "fc": "white", "ec": "#9ca3af", "alpha": 0.85}
    ax.text(0.03, 0.95, "easy-to-learn", transform=ax.transAxes, va="top", fontsize=8, bbox=box)
    ax.text(0.03, 0.05, "hard-to-learn", transform=ax.transAxes, va="bottom", fontsize=8, bbox=box)
    ax.text(0.97, 0.5, "ambiguous", transform=ax.transAxes, ha="right", fontsize=8, bbox=box)
    ax.set_xlabel("variability (std of p(gold) over epochs)")
    ax.set_ylabel("confidence (mean p(gold) over epochs)")
    if title:
        top.set_title(plots.plain(title), fontsize=10, loc="left")
    return fig


def data_map_plot(
    confidence: Sequence[float] | np.ndarray,
    variability: Sequence[float] | np.ndarray,
    correctness: Sequence[float] | np.ndarray,
    **kwargs: Any,
) -> str | None:
    """:func:`data_map_figure` as a ``data:`` URI (PNG above 1,500 points, else SVG).

    Examples
    --------
    >>> data_map_plot([0.9, 0.2], [0.05, 0.04], [1.0, 0.0]).startswith("data:image/svg")
    True
    >>> data_map_plot([], [], []) is None
    True
    """
    fig = data_map_figure(confidence, variability, correctness, **kwargs)
    if fig is None:
        return None
    # Thousands of SVG circles make a heavy page; a raster keeps the report light.
    fmt = "png" if len(plots.to_float_array(confidence)) > 1500 else "svg"
    return plots.figure_to_data_uri(fig, fmt=fmt)


@plots.styled
def learning_curve_plot(curves: Mapping[str, Mapping[str, Any]]) -> str | None:
    """Accuracy per recording of each mapping model (view x split).

    Parameters
    ----------
    curves : mapping
        ``{view: {split: [[epoch, accuracy], ...]}}`` as in the result's details.

    Examples
    --------
    >>> learning_curve_plot({"full": {"train": [[1, 0.5], [2, 0.7]]}}).startswith("data:")
    True
    >>> learning_curve_plot({}) is None
    True
    """
    series = []
    for view, by_split in (curves or {}).items():
        if not isinstance(by_split, Mapping):
            continue
        for split, points in by_split.items():
            pts = [(finite(p[0]), finite(p[1])) for p in points or [] if len(p) == 2]
            pts = [(e, a) for e, a in pts if e is not None and a is not None]
            if pts:
                series.append((f"{view} input, {split}", view, split, pts))
    if not series:
        return None
    fig = Figure(figsize=(4.6, 3.0))
    ax = fig.add_subplot()
    colors = {"full": plots.PALETTE["full"], "partial": plots.PALETTE["partial"]}
    for label, view, split, pts in series:
        e, a = zip(*pts, strict=True)
        ax.plot(
            e, a, marker="o", markersize=3, color=colors.get(view, plots.PALETTE["neutral"]),
            linestyle="-" if split == "train" else "--", label=plots.plain(label),
        )  # fmt: skip
    ax.set_xlabel("epoch")
    if all(e is not None and float(e).is_integer() for *_, pts in series for e, _ in pts):
        # Whole epochs only: no 1.5 / 2.5 ticks between them.
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("accuracy")
    ax.set_ylim(0.0, 1.02)
    ax.yaxis.grid(True, color=plots.PALETTE["grid"])
    ax.legend(fontsize=7, loc="lower right")
    return plots.figure_to_data_uri(fig)


# ---------------------------------------------------------------------------------------
# Blocks
# ---------------------------------------------------------------------------------------
def _views(result: Result) -> dict[str, str | None]:
    views = (result.details or {}).get("views")
    out: dict[str, str | None] = {"full": "full", "partial": None}
    if isinstance(views, Mapping):
        out.update({k: (str(v) if v else None) for k, v in views.items() if k in out})
    scores = result.scores
    if out["partial"] is None and scores is not None and "partial_confidence" in scores:
        out["partial"] = "partial"
    return out


def _stats(m: Mapping[str, Any], views: Mapping[str, str | None]) -> Markup:
    stats: list[Stat] = []
    if "n_scored" in m:
        stats.append(Stat("Examples mapped", m["n_scored"], kind="int"))
    if "mean_confidence" in m:
        stats.append(Stat("Mean confidence", metric_cell(m, "mean_confidence")))
    if "n_anti_biased" in m:
        frac = finite(m.get("anti_biased_fraction"))
        note = f"{frac:.1%} of the scored split" if frac is not None else ""
        stats.append(Stat("Anti-biased (hardest)", m["n_anti_biased"], note, "int"))
    if "spearman_confidence" in m:
        stats.append(
            Stat(
                "Full vs partial confidence",
                metric_cell(m, "spearman_confidence"),
                f"Spearman; partial input: {views.get('partial') or '?'}",
            )
        )
    if "final_accuracy" in m:
        stats.append(Stat("Final accuracy (full)", metric_cell(m, "final_accuracy")))
    return stat_block(stats)


def _regions_table(m: Mapping[str, Any], views: Mapping[str, str | None]) -> Markup:
    present = [v for v in ("full", "partial") if f"{_VIEW_PREFIX[v]}share_ambiguous" in m]
    if not present:
        return Markup("")
    n = finite(m.get("n_scored"))
    rows = []
    for key, (label, rule) in REGION_LABELS.items():
        row: list[Any] = [label, rule]
        for v in present:
            share = finite(m.get(f"{_VIEW_PREFIX[v]}share_{key}"))
            if share is None:
                row.append(None)
                continue
            count = f" ({round(share * n):,})" if n is not None else ""
            row.append(
                render_fragment("{{ s }}{{ c }}", s=f"{share:.1%}", c=count),
            )
        rows.append(row)
    headers = ["Region", "Rule (by rank)"] + [
        f"{v} input ({views.get(v) or v})" if v == "partial" else "full input" for v in present
    ]
    return render_fragment(
        "<h4>Regions</h4>{{ t }}"
        '<p class="legend">Each region is a rank rule over the mapped split (see the '
        "parameters): easy-to-learn = highest confidence, hard-to-learn = lowest "
        "confidence, ambiguous = highest variability among the rest.</p>",
        t=html_table(headers, rows, css="metrics"),
    )


def _figures(result: Result, views: Mapping[str, str | None]) -> Markup:
    scores = result.scores
    m = result.metrics or {}
    figures = []
    if scores is not None:
        for v in ("full", "partial"):
            p = _VIEW_PREFIX[v]
            cols = [f"{p}confidence", f"{p}variability", f"{p}correctness"]
            if not all(c in scores.columns for c in cols):
                continue
            name = views.get(v) or v
            figures.append(
                Plot(
                    plots.safe_plot(
                        data_map_plot,
                        scores[cols[0]],
                        scores[cols[1]],
                        scores[cols[2]],
                        anti_biased_cut=m.get(f"{p}hard_confidence_cut"),
                        title=f"{'full' if v == 'full' else 'partial'} input: {name}",
                    ),
                    f"Data map of the {name} model: variability against confidence.",
                    f"Data map ({name}): each point an example; colour = fraction of epochs "
                    "predicted correctly; margins = densities.",
                )
            )
    curves = (result.details or {}).get("learning_curves")
    if isinstance(curves, Mapping) and curves:
        figures.append(
            Plot(
                plots.safe_plot(learning_curve_plot, curves),
                "Accuracy per epoch of the mapping models.",
                _curve_caption(curves),
            )
        )
    return figure_block(figures)


def _curve_caption(curves: Mapping[str, Any]) -> str:
    """The learning curves' caption; the dashed line is named only when it is drawn."""
    splits = {
        split for by_split in curves.values() if isinstance(by_split, Mapping) for split in by_split
    }
    if splits - {"train"}:
        return (
            "Learning curves of the mapping models (solid: training split, dashed: "
            "evaluation split, recorded without training on it)."
        )
    return "Learning curves of the mapping models on the training split."


def _crosstab(details: Mapping[str, Any], views: Mapping[str, str | None]) -> Markup:
    table = details.get("region_crosstab")
    if not isinstance(table, Mapping) or not table:
        return Markup("")
    keys = [k for k in REGION_LABELS if k in table]
    cols = sorted({q for r in table.values() if isinstance(r, Mapping) for q in r})
    cols = [k for k in REGION_LABELS if k in cols]
    rows = [
        [REGION_LABELS[r][0], *[(table[r] or {}).get(q) for q in cols]] for r in keys
    ]  # fmt: skip
    partial = views.get("partial") or "partial"
    headers = ["full input \\ " + partial, *(REGION_LABELS[q][0] for q in cols)]
    return render_fragment(
        "<h4>Full-input regions against {{ p }} regions</h4>{{ t }}"
        '<p class="legend">Counts of examples. Easy-to-learn examples that are also easy '
        "from the partial input alone are the ones a shortcut can explain (paper 002: "
        "partial-input cartography).</p>",
        p=partial,
        t=html_table(headers, rows, css="metrics"),
    )


def _by_label(details: Mapping[str, Any]) -> Markup:
    data = details.get("anti_biased_by_label")
    if not isinstance(data, Mapping) or not isinstance(data.get("full"), Mapping):
        return Markup("")
    rows = []
    for label, info in data["full"].items():
        if not isinstance(info, Mapping):
            continue
        partial = (data.get("partial") or {}).get(label) or {}
        rows.append(
            [
                label,
                info.get("n"),
                info.get("n_anti_biased"),
                info.get("mean_confidence"),
                partial.get("n_anti_biased"),
                partial.get("mean_confidence"),
            ]
        )
    if not rows:
        return Markup("")
    headers = [
        "Label",
        "Examples",
        "Anti-biased (full)",
        "Mean confidence (full)",
        "Anti-biased (partial)",
        "Mean confidence (partial)",
    ]
    return render_fragment("<h4>Per label</h4>{{ t }}", t=html_table(headers, rows))


def _example_tables(details: Mapping[str, Any], view: str, *, collapsed: bool = True) -> Markup:
    examples = (details.get("examples") or {}).get(view)
    if not isinstance(examples, Mapping):
        return Markup("")
    other = "partial_" if view == "full" else "full_"
    blocks = []
    for region, (label, rule) in REGION_LABELS.items():
        rows_in = examples.get(region)
        if not isinstance(rows_in, Sequence) or not rows_in:
            continue
        known = {"id", "label", "confidence", "variability", "correctness", "forgetting"}
        known |= {"anti_biased", f"{other}confidence", f"{other}region"}
        text_fields = [k for k in rows_in[0] if k not in known]
        headers = ["id", "label", *text_fields, "confidence", "variability", "correctness"]
        has_other = f"{other}confidence" in rows_in[0]
        if has_other:
            headers += [f"{other.rstrip('_')} confidence", f"{other.rstrip('_')} region"]
        rows = []
        for e in rows_in:
            if not isinstance(e, Mapping):
                continue
            row = [e.get("id"), e.get("label"), *(e.get(f) for f in text_fields)]
            row += [finite(e.get(c)) for c in ("confidence", "variability", "correctness")]
            if has_other:
                region_name = REGION_LABELS.get(str(e.get(f"{other}region")), ("?",))[0]
                row += [finite(e.get(f"{other}confidence")), region_name]
            rows.append(row)
        blocks.append(
            example_table(
                headers,
                rows,
                text_columns=["id", "label", *text_fields],
                title=f"{label.capitalize()} examples",
                note=f"Region rule: {rule}. Most typical first.",
                collapsed=collapsed,
            )
        )
    return Markup("").join(blocks)


def _notes(details: Mapping[str, Any]) -> Markup:
    """How the map was made, when it matters for reading it (fast-path proxy, in-sample)."""
    notes = [str(n) for n in details.get("notes") or [] if n]
    if not notes:
        return Markup("")
    return render_fragment(
        '{% for n in notes %}<p class="note"><strong>Note:</strong> {{ n }}</p>{% endfor %}',
        notes=notes,
    )


def _null(m: Mapping[str, Any], views: Mapping[str, str | None]) -> Markup:
    """The two maps' agreement against the same maps made with permuted labels."""
    if "spearman_confidence" not in m:
        return Markup("")
    rows = [
        [
            "real labels",
            finite(m.get("spearman_confidence")),
            finite(m.get("spearman_confidence_ci_low")),
            finite(m.get("spearman_confidence_ci_high")),
        ]
    ]
    if "spearman_excess" in m:
        rows.append(["permuted labels", finite(m.get("spearman_confidence_null")), None, None])
        rows.append(
            [
                "excess (the headline)",
                finite(m.get("spearman_excess")),
                finite(m.get("spearman_excess_ci_low")),
                finite(m.get("spearman_excess_ci_high")),
            ]
        )
    return render_fragment(
        "<h4>Full vs {{ partial }} confidence (Spearman)</h4>{{ t }}"
        '<p class="legend">Both maps are made again with the labels permuted: the two probes '
        "agree even then (both see the partial input and the label base rates), so the "
        "verdict rests on the excess over that null; 95% intervals: Fisher z for rho, Zou "
        "(2007) for the difference.</p>",
        partial=str(views.get("partial") or "partial input"),
        t=html_table(["labels", "Spearman", "95% low", "95% high"], rows, css="metrics"),
    )


@register_section("cartography")
def cartography_section(result: Result) -> Section:
    """:data:`~spurious.report.sections.SectionRenderer` of the cartography analysis.

    Examples
    --------
    >>> import pandas as pd
    >>> r = Result("cartography", pd.DataFrame({"id": ["a"], "confidence": [0.9],
    ...            "variability": [0.1], "correctness": [1.0]}), {"mean_confidence": 0.9})
    >>> "0.900" in cartography_section(r).html_body
    True
    """
    m = result.metrics or {}
    details = result.details or {}
    views = _views(result)
    extra: dict[str, Markup] = {"All metrics": metrics_table(m)} if m else {}
    # In the folded footer block already: not folded a second time.
    partial_examples = _example_tables(details, "partial", collapsed=False)
    if partial_examples:
        extra[f"Examples per region of the partial input ({views.get('partial')})"] = (
            partial_examples
        )
    rule = details.get("region_rule")
    if isinstance(rule, Mapping) and rule.get("text"):
        extra["Region rule"] = render_fragment("<p>{{ t }}</p>", t=str(rule["text"]))
    extra["All per-example scores (first rows)"] = scores_preview(result.scores)
    full_examples = _example_tables(details, "full")
    return result_section(
        result,
        _notes(details),
        _stats(m, views),
        _null(m, views),
        _figures(result, views),
        _regions_table(m, views),
        _crosstab(details, views),
        _by_label(details),
        render_fragment("<h4>Examples per region (full input)</h4>{{ t }}", t=full_examples)
        if full_examples
        else Markup(""),
        title="cartography — data maps and anti-biased examples",
        extra=extra,
    )
