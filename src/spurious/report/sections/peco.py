"""Report section of PECO (paper 003 Sec. 3.2, Fig. 1, Fig. 4, Fig. 8, App. C).

Shows the score against its shuffled-label baseline; the PECO curve (fraction of
clusters above each divergence threshold, the area under it shaded) beside the curve of
shuffled labels; the clusters' divergences with the biased-region threshold; the 2-D map
of the elicited sentences coloured by label with biased regions marked (Fig. 1); the
App. C sweep as a heatmap and a table; the cartography confidence of examples in biased
vs other clusters (Fig. 8); and example sentences per biased region. Every block reads
only the result and is skipped when its inputs are missing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from markupsafe import Markup
from matplotlib.figure import Figure

from spurious.report import plots
from spurious.report.components import (
    Plot,
    Stat,
    details_block,
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
    "cluster_divergence_plot",
    "confidence_histogram_plot",
    "peco_curve_plot",
    "peco_map_plot",
    "peco_section",
    "sweep_heatmap_plot",
]


def _curve(divergences: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step curve (t, fraction of clusters with s > t) from 0 to max(s)."""
    s = np.sort(divergences[np.isfinite(divergences)])
    k = len(s)
    t = np.r_[0.0, np.repeat(s, 2)]
    frac = np.r_[1.0, np.repeat((k - np.arange(k)) / k, 2)]
    frac[2::2] = (k - np.arange(1, k + 1)) / k
    return t, frac


# ---------------------------------------------------------------------------------------
# Plots
# ---------------------------------------------------------------------------------------
@plots.styled
def peco_curve_plot(
    divergences: Sequence[float] | np.ndarray,
    null_divergences: Sequence[float] | np.ndarray | None = None,
    *,
    divergence: str = "l2",
) -> str | None:
    """The PECO curve (Fig. 4 d): fraction of clusters whose divergence exceeds t.

    The shaded area between ``min(s)`` and ``max(s)`` is Eq. 12 (/100); the dashed curve
    is the same for shuffled labels (expected sorted divergences).

    Examples
    --------
    >>> peco_curve_plot([0.01, 0.05, 0.2], [0.005, 0.01, 0.02]).startswith("data:")
    True
    >>> peco_curve_plot([]) is None
    True
    """
    s = plots.to_float_array(divergences)
    s = s[np.isfinite(s)]
    if len(s) == 0:
        return None
    fig = Figure(figsize=(4.6, 3.0))
    ax = fig.add_subplot()
    t, frac = _curve(s)
    ax.step(t, frac, where="post", color=plots.PALETTE["full"], label="data")
    inside = (t >= s.min()) & (t <= s.max())
    ax.fill_between(
        t[inside], frac[inside], step="post", color=plots.PALETTE["full"], alpha=0.2,
        label="area (Eq. 12)",
    )  # fmt: skip
    if null_divergences is not None and len(null_divergences):
        tn, fn = _curve(plots.to_float_array(null_divergences))
        ax.step(tn, fn, where="post", color=plots.PALETTE["baseline"], linestyle="--",
                label="shuffled labels")  # fmt: skip
    ax.set_xlabel(f"divergence threshold t ({divergence.upper()})")
    ax.set_ylabel("fraction of clusters with s > t")
    ax.set_ylim(0.0, 1.02)
    ax.set_xlim(0.0, float(s.max()) * 1.05 or 1.0)
    ax.legend(fontsize=7)
    return plots.figure_to_data_uri(fig)


@plots.styled
def cluster_divergence_plot(
    clusters: Sequence[Mapping[str, Any]],
    *,
    threshold: float | None = None,
    label_names: Sequence[str] = (),
) -> str | None:
    """Each cluster's L2 divergence (sorted), coloured by its dominant label.

    Examples
    --------
    >>> rows = [{"divergence_l2": 0.1, "dominant_label": "a"},
    ...         {"divergence_l2": 0.01, "dominant_label": "b"}]
    >>> cluster_divergence_plot(rows, threshold=0.05).startswith("data:")
    True
    """
    rows = [r for r in clusters if finite(r.get("divergence_l2")) is not None]
    if not rows:
        return None
    rows = sorted(rows, key=lambda r: -float(r["divergence_l2"]))
    names = list(label_names) or sorted({str(r.get("dominant_label")) for r in rows})
    colors = {n: plots.SERIES_COLORS[i % len(plots.SERIES_COLORS)] for i, n in enumerate(names)}
    fig = Figure(figsize=(5.2, 3.0))
    ax = fig.add_subplot()
    ax.bar(
        np.arange(len(rows)),
        [float(r["divergence_l2"]) for r in rows],
        color=[colors.get(str(r.get("dominant_label")), plots.PALETTE["neutral"]) for r in rows],
        width=0.85,
    )
    cut = finite(threshold)
    if cut is not None:
        ax.axhline(cut, color=plots.PALETTE["flagged"], linestyle="--", linewidth=1.0)
        ax.text(len(rows) - 0.5, cut, "biased above", ha="right", va="bottom", fontsize=7,
                color=plots.PALETTE["flagged"])  # fmt: skip
    ax.set_xlabel("clusters, most divergent first")
    ax.set_ylabel("L2 divergence (Eq. 11)")
    ax.set_xticks([])
    ax.legend(
        handles=[plots.legend_patch(c, plots.plain(n)) for n, c in colors.items()],
        fontsize=7,
        title="dominant label",
        title_fontsize=7,
    )
    return plots.figure_to_data_uri(fig)


@plots.styled
def peco_map_plot(projection: Mapping[str, Any], label_names: Sequence[str] = ()) -> str | None:
    """Fig. 1: the elicited sentences in 2-D, coloured by label, biased regions marked big.

    Examples
    --------
    >>> p = {"x": [0, 1, 2], "y": [1, 0, 1], "label": [0, 1, 0], "biased": [True, False, True],
    ...      "method": "pca"}
    >>> peco_map_plot(p, ["a", "b"]).startswith("data:")
    True
    """
    x = plots.to_float_array(projection.get("x") or [])
    y = plots.to_float_array(projection.get("y") or [])
    labels = np.asarray(projection.get("label") or [], dtype=int)
    biased = np.asarray(projection.get("biased") or [], dtype=bool)
    if len(x) == 0 or not (len(x) == len(y) == len(labels) == len(biased)):
        return None
    fig = Figure(figsize=(5.6, 4.4))
    ax = fig.add_subplot()
    handles = []
    for j in np.unique(labels):
        color = plots.SERIES_COLORS[int(j) % len(plots.SERIES_COLORS)]
        name = label_names[j] if 0 <= j < len(label_names) else str(j)
        rows = labels == j
        ax.scatter(x[rows & ~biased], y[rows & ~biased], s=4, color=color, alpha=0.35,
                   linewidths=0, rasterized=True)  # fmt: skip
        ax.scatter(x[rows & biased], y[rows & biased], s=16, color=color, alpha=0.85,
                   linewidths=0, rasterized=True)  # fmt: skip
        handles.append(plots.legend_patch(color, plots.plain(name)))
    ax.legend(handles=handles, fontsize=7, title="large = biased region", title_fontsize=7)
    ax.set_xticks([])
    ax.set_yticks([])
    method = str(projection.get("method", "")).upper().replace("TSNE", "t-SNE")
    ax.set_xlabel(f"{method} 1")
    ax.set_ylabel(f"{method} 2")
    return plots.figure_to_data_uri(fig, fmt="png")


@plots.styled
def sweep_heatmap_plot(sweep: Sequence[Mapping[str, Any]]) -> str | None:
    """App. C / Table 5: PECO for each k x |PC|, one panel per divergence (excess in cells).

    Examples
    --------
    >>> rows = [{"k": k, "n_components": pc, "divergence": d, "peco": 1.0, "excess": 0.5}
    ...         for k in (10, 25) for pc in ("none", "50") for d in ("l2", "kl")]
    >>> sweep_heatmap_plot(rows).startswith("data:")
    True
    """
    rows = [r for r in sweep if finite(r.get("peco")) is not None]
    if not rows:
        return None
    divs = [d for d in ("l2", "kl") if any(r.get("divergence") == d for r in rows)]
    ks = sorted({int(r["k"]) for r in rows})
    pcs = sorted({str(r["n_components"]) for r in rows}, key=lambda p: (p != "none", len(p), p))
    fig = Figure(figsize=(4.0 * len(divs), 2.9), layout="constrained")
    for i, d in enumerate(divs):
        ax = fig.add_subplot(1, len(divs), i + 1)
        grid = np.full((len(ks), len(pcs)), np.nan)
        excess = np.full_like(grid, np.nan)
        for r in rows:
            if r.get("divergence") == d:
                a, b = ks.index(int(r["k"])), pcs.index(str(r["n_components"]))
                grid[a, b] = float(r["peco"])
                excess[a, b] = finite(r.get("excess")) or np.nan
        im = ax.imshow(grid, cmap="viridis", aspect="auto")
        for a in range(len(ks)):
            for b in range(len(pcs)):
                if np.isfinite(grid[a, b]):
                    lum = im.cmap(im.norm(grid[a, b]))
                    dark = 0.299 * lum[0] + 0.587 * lum[1] + 0.114 * lum[2] > 0.5
                    ax.text(b, a, f"{grid[a, b]:.2f}\n({excess[a, b]:+.2f})", ha="center",
                            va="center", fontsize=6.5, color="black" if dark else "white")  # fmt: skip
        ax.set_xticks(range(len(pcs)), [f"|PC|={p}" if p != "none" else "no PCA" for p in pcs])
        ax.set_yticks(range(len(ks)), [f"k={k}" for k in ks])
        ax.set_title(f"PECO {d.upper()} (excess over shuffled)", fontsize=8)
        fig.colorbar(im, ax=ax, fraction=0.05)
    return plots.figure_to_data_uri(fig)


@plots.styled
def confidence_histogram_plot(cartography: Mapping[str, Any]) -> str | None:
    """Fig. 8: cartography confidence of examples in biased vs other clusters (shares).

    Examples
    --------
    >>> confidence_histogram_plot({"bins": [0, 0.5, 1], "biased": [1, 3], "other": [2, 2]}
    ...                           ).startswith("data:")
    True
    """
    bins = plots.to_float_array(cartography.get("bins") or [])
    groups = {g: plots.to_float_array(cartography.get(g) or []) for g in ("biased", "other")}
    if len(bins) < 2 or any(len(v) != len(bins) - 1 for v in groups.values()):
        return None
    fig = Figure(figsize=(4.6, 3.0))
    ax = fig.add_subplot()
    width = np.diff(bins)
    colors = {"biased": plots.PALETTE["flagged"], "other": plots.PALETTE["full"]}
    for i, (g, counts) in enumerate(groups.items()):
        total = counts.sum()
        share = counts / total if total else counts
        ax.bar(bins[:-1] + width * (0.05 + 0.45 * i), share, width=width * 0.45, align="edge",
               color=colors[g], label=f"{g} clusters (n={int(total):,})")  # fmt: skip
    ax.set_xlabel("cartography confidence (mean p(gold) over epochs)")
    ax.set_ylabel("share of the group's examples")
    ax.legend(fontsize=7)
    return plots.figure_to_data_uri(fig)


# ---------------------------------------------------------------------------------------
# Blocks
# ---------------------------------------------------------------------------------------
def _stats(m: Mapping[str, Any], divergence: str) -> Markup:
    stats: list[Stat] = []
    for d in dict.fromkeys((divergence, "l2", "kl")):
        if f"peco_{d}" not in m:
            continue
        base = finite(m.get(f"peco_{d}_baseline"))
        p = finite(m.get(f"peco_{d}_p_value"))
        note = f"shuffled labels {base:.2f}" if base is not None else ""
        if p is not None:
            note += f"; p = {p:.3f}"
        stats.append(Stat(f"PECO {d.upper()}", metric_cell(m, f"peco_{d}"), note))
        if f"peco_{d}_excess" in m:
            lo = finite(m.get(f"peco_{d}_excess_ci_low"))
            hi = finite(m.get(f"peco_{d}_excess_ci_high"))
            ci = f"95% CI [{lo:.2f}, {hi:.2f}] (seeds + bootstrap)" if lo is not None else ""
            stats.append(
                Stat(f"{d.upper()} above shuffled", m[f"peco_{d}_excess"], ci, kind="float")
            )
    if "share_in_biased_regions" in m:
        n = finite(m.get("n_biased_clusters"))
        k = finite(m.get("n_clusters"))
        note = f"{int(n)} of {int(k)} clusters" if n is not None and k is not None else ""
        n_null = finite(m.get("n_biased_clusters_null"))
        if n_null is not None:
            note += f"; shuffled labels: {n_null:.1f}"
        stats.append(Stat("In biased regions", m["share_in_biased_regions"], note, "percent"))
    return stat_block(stats)


def _figures(result: Result) -> Markup:
    d = result.details or {}
    m = result.metrics or {}
    names = [str(n) for n in d.get("label_names") or []]
    clusters = [c for c in d.get("clusters") or [] if isinstance(c, Mapping)]
    null = (d.get("null_sorted_divergences") or {}).get("l2")
    figures = []
    if clusters:
        divs = [finite(c.get("divergence_l2")) for c in clusters]
        figures.append(
            Plot(
                plots.safe_plot(
                    peco_curve_plot, [v for v in divs if v is not None], null, divergence="l2"
                ),
                "PECO curve: fraction of clusters above each divergence threshold.",
                "PECO curve (Fig. 4 d), L2: the shaded area is the score / 100; dashed: "
                "the same clusters with shuffled labels.",
            )
        )
        figures.append(
            Plot(
                plots.safe_plot(
                    cluster_divergence_plot,
                    clusters,
                    threshold=m.get("region_threshold"),
                    label_names=names,
                ),
                "Divergence of each cluster, coloured by dominant label.",
                "Cluster divergences (Eq. 11); bars above the dashed line are biased regions.",
            )
        )
    projection = d.get("projection")
    if isinstance(projection, Mapping):
        n_total = projection.get("n_total")
        shown = len(projection.get("x") or [])
        figures.append(
            Plot(
                plots.safe_plot(peco_map_plot, projection, names),
                "2-D map of the elicited sentences coloured by label.",
                f"Elicited sentences ({shown:,} of {n_total:,} shown), as in the paper's "
                "Fig. 1: large points lie in biased regions.",
            )
        )
    carto = d.get("cartography")
    if isinstance(carto, Mapping):
        figures.append(
            Plot(
                plots.safe_plot(confidence_histogram_plot, carto),
                "Cartography confidence in biased vs other clusters.",
                "PECO vs cartography (Sec. 6.1, Fig. 8): confidence of examples in biased "
                "and in other clusters, each as a share of its group.",
            )
        )
    return figure_block(figures)


def _cartography_note(m: Mapping[str, Any]) -> Markup:
    a, b = finite(m.get("confidence_biased")), finite(m.get("confidence_other"))
    if a is None or b is None:
        return Markup("")
    p = finite(m.get("confidence_mwu_p"))
    return render_fragment(
        '<p class="legend">Mean cartography confidence: {{ a }} in biased regions, {{ b }} '
        "elsewhere (Mann-Whitney p = {{ p }}). Paper 003 found the two orthogonal on SNLI: "
        "some examples are easy because they are simple, others because a shortcut gives "
        "them away.</p>",
        a=f"{a:.3f}",
        b=f"{b:.3f}",
        p="n/a" if p is None else f"{p:.3g}",
    )


def _regions(details: Mapping[str, Any], m: Mapping[str, Any]) -> Markup:
    clusters = {
        int(c["cluster"]): c
        for c in details.get("clusters") or []
        if isinstance(c, Mapping) and "cluster" in c
    }
    biased = [c for c in clusters.values() if c.get("biased")]
    threshold = finite(m.get("region_threshold"))
    rule = str(details.get("region_rule", ""))
    if rule == "null":
        how = (
            "Clusters whose label distribution (Eq. 11) is farther from the global one than "
            "shuffled labels put a cluster of the same size (permutation test)"
        )
    elif rule == "authors":
        how = (
            "Clusters whose squared deviations from the global label distribution sum to "
            "more than 0.25, the authors' rule (Eq. 11 above "
            + ("?" if threshold is None else f"{threshold:.4f}")
            + ")"
        )
    else:
        how = "Clusters whose Eq. 11 divergence exceeds " + (
            "?" if threshold is None else f"{threshold:.4f}"
        )
    n_null = finite(m.get("n_biased_clusters_null"))
    chance = (
        ""
        if n_null is None
        else f" With the labels shuffled the same rule flags {n_null:.1f} clusters on average."
    )
    heading = render_fragment(
        '<h4>Biased regions</h4><p class="legend">{{ how }}.{{ chance }}</p>',
        how=how,
        chance=chance,
    )
    if not biased:
        return heading + render_fragment("<p>No cluster passes the threshold.</p>")
    names = [str(n) for n in details.get("label_names") or []]
    rows = []
    for c in sorted(biased, key=lambda c: -float(c.get("divergence_l2") or 0)):
        counts = c.get("counts") or {}
        rows.append(
            [
                c.get("cluster"),
                c.get("size"),
                c.get("dominant_label"),
                finite(c.get("dominant_share")),
                *(counts.get(n) for n in names),
                finite(c.get("divergence_l2")),
                finite(c.get("divergence_kl")),
                finite(c.get("p_value")),
            ]
        )
    table = html_table(
        ["Cluster", "Size", "Dominant label", "Dominant share", *names, "L2", "KL", "p (shuffled)"],
        rows,
    )
    blocks = [heading, table]
    for region in details.get("regions") or []:
        examples = [e for e in region.get("examples") or [] if isinstance(e, Mapping)]
        if not examples:
            continue
        fields = [k for k in examples[0] if k not in ("id", "label")]
        blocks.append(
            example_table(
                ["id", "label", *fields],
                [[e.get("id"), e.get("label"), *(e.get(f) for f in fields)] for e in examples],
                text_columns=["id", "label", *fields],
                title=f"Cluster {region.get('cluster')}: mostly {region.get('dominant_label')}",
            )
        )
    return Markup("").join(blocks)


def _sweep(details: Mapping[str, Any]) -> Markup:
    rows = [r for r in details.get("sweep") or [] if isinstance(r, Mapping)]
    if not rows:
        return Markup("")
    figure = figure_block(
        [
            Plot(
                plots.safe_plot(sweep_heatmap_plot, rows),
                "PECO for each number of clusters and principal components.",
                "The App. C sweep (Table 5): PECO per k x |PC| (mean over k-means seeds), "
                "excess over shuffled labels in brackets.",
            )
        ]
    )
    cells = [
        [
            r.get("k"),
            r.get("n_components"),
            str(r.get("divergence", "")).upper(),
            *(
                finite(r.get(c))
                for c in ("peco", "peco_seed_sd", "baseline", "excess", "reference")
            ),
        ]
        for r in rows
    ]
    seeds = rows[0].get("n_seeds")
    table = html_table(
        ["k", "|PC|", "Divergence", "PECO", "Seed sd", "Shuffled", "Excess", "Reference"],
        cells,
    )
    note = render_fragment(
        '<p class="legend">Each cell: mean over {{ n }} k-means seeds; reference = the '
        "authors' computation on the same clusters (Table 5's scale).</p>",
        n=seeds if seeds is not None else "?",
    )
    table = note + table
    return render_fragment("<h4>Parameter sweep</h4>{{ f }}{{ t }}", f=figure, t=table)


@register_section("peco")
def peco_section(result: Result) -> Section:
    """:data:`~spurious.report.sections.SectionRenderer` of the PECO analysis.

    Examples
    --------
    >>> import pandas as pd
    >>> r = Result("peco", pd.DataFrame({"id": ["a"]}), {"peco_l2": 1.5, "peco_l2_baseline": 0.1})
    >>> "1.500" in peco_section(r).html_body
    True
    """
    m = result.metrics or {}
    details = result.details or {}
    divergence = str(details.get("headline_divergence", "l2"))
    extra: dict[str, Markup] = {"All metrics": metrics_table(m)} if m else {}
    extra["All per-example scores (first rows)"] = scores_preview(result.scores)
    sweep = _sweep(details)
    return result_section(
        result,
        _stats(m, divergence),
        _figures(result),
        _cartography_note(m),
        _regions(details, m),  # its own heading; the example tables in it are folded
        details_block("Parameter sweep (App. C)", sweep) if sweep else Markup(""),
        title="PECO — single-sentence label leakage by clusters",
        extra=extra,
    )
