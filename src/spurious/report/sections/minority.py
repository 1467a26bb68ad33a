"""Report section of minority examples (paper 002 Sec. 3, App. C).

Shows the share of minority (anti-biased) examples in each split, the label homogeneity
of the clusters (App. C.4.1: mean majority / minority share, clusters with more than
10% minority instances, and the same for plain k-means and Ward when they were run),
the label distribution of every cluster as a stacked bar chart and as a table, how the
clustering was made, and examples of minority and biased examples per cluster. Every
block reads only the result and is skipped when its inputs are missing; dataset text is
escaped by the example tables.
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
    kv_table,
    metric_cell,
    metrics_table,
    render_fragment,
    scores_preview,
    stat_block,
)
from spurious.report.sections import Section, register_section, result_section
from spurious.results import Result

__all__ = ["cluster_label_plot", "minority_section"]

_METHOD_NAMES = {
    "deepcluster": "DeepCluster + Ward",
    "ward": "Ward",
    "kmeans": "k-means",
}


@plots.styled
def cluster_label_plot(
    clusters: Sequence[Mapping[str, Any]], label_names: Sequence[str]
) -> str | None:
    """Stacked bars: the label distribution of each cluster's training examples.

    Each bar starts with the cluster's majority label, so its first block is the
    majority share; a dotted line marks 90% (at most 10% minority, App. C.4.1).

    Parameters
    ----------
    clusters : sequence of mapping
        Rows of the result's ``details["clusters"]`` (``cluster``, ``n_train``,
        ``label_counts``, ``majority``).
    label_names : sequence of str

    Returns
    -------
    str or None
        A ``data:`` URI, or ``None`` when there is nothing to draw.

    Examples
    --------
    >>> rows = [{"cluster": 0, "n_train": 3, "label_counts": {"a": 2, "b": 1}}]
    >>> cluster_label_plot(rows, ["a", "b"]).startswith("data:image/svg")
    True
    >>> cluster_label_plot([], ["a"]) is None
    True
    """
    rows = [r for r in clusters if isinstance(r, Mapping) and (finite(r.get("n_train")) or 0) > 0]
    if not rows or not label_names:
        return None
    names = [str(n) for n in label_names]
    counts = np.array(
        [[float((r.get("label_counts") or {}).get(n, 0) or 0) for n in names] for r in rows]
    )
    sizes = counts.sum(axis=1)
    shares = counts / np.maximum(sizes[:, None], 1.0)
    # Constrained layout sizes the margins to the labels and the legend below the axes.
    fig = Figure(figsize=(6.0, 0.3 * len(rows) + 1.2), layout="constrained")
    ax = fig.add_subplot()
    y = np.arange(len(rows))[::-1]
    colors = [plots.SERIES_COLORS[j % len(plots.SERIES_COLORS)] for j in range(len(names))]
    # Majority label first in every bar (stable: ties keep label order), so the first
    # block's length is the cluster's majority share.
    order = np.argsort(-counts, axis=1, kind="stable")
    left = np.zeros(len(rows))
    for pos in range(len(names)):
        j = order[:, pos]
        width = shares[np.arange(len(rows)), j]
        ax.barh(y, width, left=left, color=[colors[i] for i in j], height=0.7)
        left += width
    ax.set_yticks(y)
    ax.set_yticklabels(
        [f"{r.get('cluster')} (n={int(s):,})" for r, s in zip(rows, sizes, strict=True)],
        fontsize=8,
    )
    ax.set_xlim(0.0, 1.0)
    ax.set_xlabel("share of the cluster's training examples")
    ax.axvline(0.9, color=plots.PALETTE["baseline"], linestyle=":", linewidth=0.8)
    fig.legend(
        handles=[plots.legend_patch(colors[j], plots.plain(name)) for j, name in enumerate(names)],
        fontsize=8,
        loc="outside lower center",
        ncols=min(len(names), 4),
    )
    return plots.figure_to_data_uri(fig)


def _stats(m: Mapping[str, Any], details: Mapping[str, Any]) -> Markup:
    stats: list[Stat] = []
    if "n_clusters" in m:
        method = _METHOD_NAMES.get(str((details.get("method") or {}).get("method")), "")
        stats.append(Stat("Clusters", m["n_clusters"], method, "int"))
    if "anti_biased_fraction_train" in m:
        n = finite(m.get("n_anti_biased_train"))
        note = f"{int(n):,} training examples" if n is not None else ""
        stats.append(Stat("Minority (train)", m["anti_biased_fraction_train"], note, "percent"))
    if "anti_biased_fraction_eval" in m:
        n = finite(m.get("n_anti_biased_eval"))
        note = f"{int(n):,} evaluation examples" if n is not None else ""
        stats.append(Stat("Minority (eval)", m["anti_biased_fraction_eval"], note, "percent"))
    if "mean_minority_share" in m:
        stats.append(
            Stat(
                "Mean minority share",
                m["mean_minority_share"],
                "per cluster (App. C.4.1)",
                "percent",
            )
        )
    if "n_clusters_minority_over_10pct" in m:
        stats.append(
            Stat("Clusters > 10% minority", m["n_clusters_minority_over_10pct"], "", "int")
        )
    if "homogeneity" in m:
        stats.append(Stat("Label homogeneity", metric_cell(m, "homogeneity"), "1 = pure"))
    if "weighted_majority_share" in m and "base_majority_share" in m:
        p = finite(m.get("purity_p_value"))
        note = f"label base rate {m['base_majority_share']:.1%}"
        if p is not None:
            note += f"; permutation p = {p:.3g}"
        stats.append(Stat("Cluster purity", m["weighted_majority_share"], note, "percent"))
    return stat_block(stats)


def _rule_name(rule: Any) -> str:
    """The rule used: a dict (``details["minority_rule"]``) or, in older results, a name."""
    return str(rule.get("used") if isinstance(rule, Mapping) else rule or "not_majority")


def _notes(details: Mapping[str, Any]) -> Markup:
    notes = [str(n) for n in details.get("notes") or [] if n]
    if not notes:
        return Markup("")
    return render_fragment(
        '{% for n in notes %}<p class="note"><strong>Note:</strong> {{ n }}</p>{% endfor %}',
        notes=notes,
    )


def _cluster_table(details: Mapping[str, Any]) -> Markup:
    rows_in = details.get("clusters")
    names = [str(n) for n in details.get("label_names") or []]
    if not isinstance(rows_in, Sequence) or not rows_in or not names:
        return Markup("")
    has_eval = any(isinstance(r, Mapping) and "n_eval" in r for r in rows_in)
    headers: list[Any] = ["Cluster", "Train examples", *names, "Majority", "Majority share"]
    headers += ["Minority labels", "Minority (train)"]
    if has_eval:
        headers += ["Eval examples", "Minority (eval)"]
    rows = []
    for r in rows_in:
        if not isinstance(r, Mapping):
            continue
        counts = r.get("label_counts") or {}
        row = [r.get("cluster"), r.get("n_train"), *(counts.get(n) for n in names)]
        minority = r.get("minority_labels") or []
        row += [r.get("majority"), finite(r.get("majority_share"))]
        row += [", ".join(str(x) for x in minority), r.get("n_minority_train")]
        if has_eval:
            row += [r.get("n_eval"), r.get("n_minority_eval")]
        rows.append(row)
    rule = _rule_name(details.get("minority_rule"))
    rule_text = (
        "every label but the majority (paper 002 Sec. 3)"
        if rule != "least_frequent"
        else "the least frequent label (paper 002 footnote 10)"
    )
    return render_fragment(
        "<h4>Clusters</h4>{{ t }}"
        '<p class="legend">Training examples per label in each cluster. Minority labels: '
        "{{ rule }}; examples with a minority label are anti-biased. Evaluation examples "
        "take the cluster of their nearest training example.</p>",
        t=html_table(headers, rows, css="metrics"),
        rule=rule_text,
    )


def _comparison(details: Mapping[str, Any]) -> Markup:
    comp = details.get("comparison")
    if not isinstance(comp, Mapping) or len(comp) < 2:
        return Markup("")
    rows = []
    for method, s in comp.items():
        if not isinstance(s, Mapping):
            continue
        rows.append(
            [
                _METHOD_NAMES.get(str(method), str(method)),
                finite(s.get("mean_minority_share")),
                s.get("n_clusters_minority_over_10pct"),
                finite(s.get("homogeneity")),
                finite(s.get("anti_biased_fraction_train")),
            ]
        )
    headers = [
        "Clustering",
        "Mean minority share",
        "Clusters > 10% minority",
        "Homogeneity",
        "Minority (train)",
    ]
    return render_fragment(
        "<h4>Label homogeneity by clustering method (App. C.4.1)</h4>{{ t }}"
        '<p class="legend">Paper 002 (SST-2, fine-tuned RoBERTa-base [CLS]): k-means and Ward '
        "clusters held under 5% minority-label examples on average and one cluster in ten "
        "exceeded 10%; DeepCluster's held 15%, six clusters above 10%.</p>",
        t=html_table(headers, rows, css="metrics"),
    )


def _method(details: Mapping[str, Any]) -> Markup:
    info = details.get("method")
    if not isinstance(info, Mapping):
        return Markup("")
    items = {k: v for k, v in info.items() if k not in ("method",)}
    items = {"features": details.get("features"), "view": details.get("view"), **items}
    return kv_table(items)


def _examples(details: Mapping[str, Any]) -> Markup:
    examples = details.get("examples")
    if not isinstance(examples, Mapping) or not examples:
        return Markup("")
    blocks = []
    for cluster, entry in examples.items():
        if not isinstance(entry, Mapping):
            continue
        for kind in ("minority", "biased"):
            rows_in = entry.get(kind)
            if not isinstance(rows_in, Sequence) or not rows_in:
                continue
            first = rows_in[0] if isinstance(rows_in[0], Mapping) else {}
            fields = [k for k in first if k not in ("id", "label")]
            rows = [
                [e.get("id"), e.get("label"), *(e.get(f) for f in fields)]
                for e in rows_in
                if isinstance(e, Mapping)
            ]
            blocks.append(
                example_table(
                    ["id", "label", *fields],
                    rows,
                    text_columns=["id", "label", *fields],
                    title=f"Cluster {cluster}: {kind} examples",
                    note="anti-biased (minority label of the cluster)"
                    if kind == "minority"
                    else "biased (the cluster's majority label)",
                    collapsed=False,  # inside the folded "Examples per cluster" block
                )
            )
    return Markup("").join(blocks)


@register_section("minority")
def minority_section(result: Result) -> Section:
    """:data:`~spurious.report.sections.SectionRenderer` of the minority analysis.

    Examples
    --------
    >>> import pandas as pd
    >>> r = Result("minority", pd.DataFrame({"id": ["a"]}),
    ...            {"anti_biased_fraction_train": 0.25, "n_clusters": 2.0})
    >>> "25.0%" in minority_section(r).html_body
    True
    """
    m = result.metrics or {}
    details = result.details or {}
    figures = []
    clusters = details.get("clusters")
    if isinstance(clusters, Sequence) and clusters:
        figures.append(
            Plot(
                plots.safe_plot(cluster_label_plot, clusters, details.get("label_names") or []),
                "Label distribution of each cluster's training examples.",
                "Label shares per cluster (training examples), majority label first; the "
                "dotted line marks 90%: bars whose first block passes it are clusters with "
                "at most 10% minority examples.",
            )
        )
    extra: dict[str, Markup] = {}
    method = _method(details)
    if method:
        extra["How the clusters were made"] = method
    if m:
        extra["All metrics"] = metrics_table(m)
    extra["All per-example scores (first rows)"] = scores_preview(result.scores)
    examples = _examples(details)
    return result_section(
        result,
        _notes(details),
        _stats(m, details),
        figure_block(figures),
        _comparison(details),
        _cluster_table(details),
        details_block("Examples per cluster", examples) if examples else Markup(""),
        title="minority examples — clusters and anti-biased examples",
        extra=extra,
    )
