"""Report section of the artifact atlas (Gardner et al. 2021; Gururangan et al. 2018).

Per text field: how many tokens are significant under Bonferroni and Benjamini-Hochberg,
the share of examples holding a flagged token, the p_hat-vs-n plot of Gardner et al.'s
Fig. 1 with the significance curve, and the top tokens per label with z, PMI and example
sentences. Everything is read from the result's metrics and details.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from markupsafe import Markup
from matplotlib.figure import Figure

from spurious.detectors.atlas.stats import significance_curve
from spurious.report import plots
from spurious.report.components import (
    Plot,
    Stat,
    example_table,
    figure_block,
    finite,
    html_table,
    metrics_table,
    render_fragment,
    scores_preview,
    stat_block,
)
from spurious.report.sections import Section, register_section, result_section
from spurious.results import Result

__all__ = ["atlas_section", "significance_plot"]


@plots.styled
def significance_plot(
    plot: Mapping[str, Sequence[Any]],
    p0: Mapping[str, float],
    *,
    alpha: float,
    n_tests: int,
    title: str = "",
    n_labelled: int = 12,
) -> str | None:
    """Gardner et al.'s Fig. 1: p_hat(y | token) against n, with the significance curve.

    Each token is one point, at the label it points to most (colour); the dashed curve
    of each label is the smallest significant p_hat under Bonferroni at ``alpha``
    (:func:`~spurious.detectors.atlas.stats.significance_curve`). The ``n_labelled``
    flagged tokens of largest z are named.

    Parameters
    ----------
    plot : mapping
        ``n``, ``p_hat``, ``z``, ``label``, ``token``, ``flagged`` lists (the details).
    p0 : mapping of str to float
        Null probability per label.
    alpha : float
    n_tests : int
        Size of the field's family (Bonferroni).
    title : str
    n_labelled : int

    Returns
    -------
    str or None
        A ``data:`` URI; ``None`` without tokens.

    Examples
    --------
    >>> d = {"n": [10, 200], "p_hat": [0.5, 0.9], "z": [1.0, 9.0], "label": ["a", "b"],
    ...      "token": ["x", "y"], "flagged": [False, True]}
    >>> significance_plot(d, {"a": 0.5, "b": 0.5}, alpha=0.01, n_tests=4).startswith("data:")
    True
    """
    n = plots.to_float_array(plot.get("n") or [])
    if not len(n):
        return None
    p_hat = plots.to_float_array(plot.get("p_hat") or [])
    z = plots.to_float_array(plot.get("z") or [])
    labels = [str(v) for v in plot.get("label") or []]
    tokens = [str(v) for v in plot.get("token") or []]
    flagged = np.asarray(plot.get("flagged") or [], dtype=bool)
    fig = Figure(figsize=(5.8, 4.2))
    ax = fig.add_subplot()
    names = list(dict.fromkeys([*p0, *labels]))
    colors = {lab: plots.SERIES_COLORS[i % len(plots.SERIES_COLORS)] for i, lab in enumerate(names)}
    xs = np.geomspace(max(1.0, n.min()), n.max() * 1.2, 200)
    for lab in names:
        mask = np.array([v == lab for v in labels])
        if mask.any():
            ax.scatter(
                n[mask], p_hat[mask], s=np.where(flagged[mask], 14, 5), color=colors[lab],
                alpha=0.6, linewidths=0, label=plots.plain(lab), rasterized=len(n) > 300,
            )  # fmt: skip
        if lab in p0 and 0 < p0[lab] < 1:
            curve = significance_curve(xs, p0[lab], alpha, n_tests)
            ax.plot(xs, np.minimum(curve, 1.0), "--", color=colors[lab], linewidth=0.9)
    ax.set_xscale("log")
    ax.set_ylim(0.0, 1.02)
    ax.set_xlabel("n (examples holding the token)")
    ax.set_ylabel("p̂(y | token) at its strongest label")
    order = [i for i in np.argsort(-np.nan_to_num(z, nan=-np.inf)) if flagged[i]][:n_labelled]
    for i in order:
        ax.annotate(
            plots.plain(tokens[i]), (n[i], p_hat[i]), fontsize=7, xytext=(2, 2),
            textcoords="offset points", color=colors[labels[i]],
        )  # fmt: skip
    ax.legend(fontsize=7, loc="upper right", title="label", title_fontsize=7)
    if title:
        ax.set_title(plots.plain(title), fontsize=10, loc="left")
    return plots.figure_to_data_uri(fig, fmt="png" if len(n) > 300 else "svg")


def _field_table(m: Mapping[str, Any], fields: Sequence[str]) -> Markup:
    rows = [
        [
            f,
            m.get(f"{f}_n_tested"),
            m.get(f"{f}_n_significant_bonferroni"),
            m.get(f"{f}_n_significant_bh"),
            finite(m.get(f"{f}_share_flagged")),
            finite(m.get(f"{f}_share_gold_cue")),
            m.get(f"{f}_n_flagged_shuffled"),
        ]
        for f in fields
    ]
    headers = [
        "Field",
        ("Tokens tested", "held by >= min_count examples"),
        "Significant (Bonferroni)",
        "Significant (BH)",
        ("Examples with a flagged token", "share of examples"),
        ("... flagged for their own label", "share of examples"),
        ("Flagged with shuffled labels", "control: the same tests, labels permuted once"),
    ]
    return render_fragment("<h4>Per field</h4>{{ t }}", t=html_table(headers, rows, css="metrics"))


def _token_rows(records: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    return [
        [
            r.get("token"),
            r.get("n"),
            finite(r.get("p_hat")),
            finite(r.get("z")),
            finite(r.get("pmi")),
            finite(r.get("p_bonferroni")),
            finite(r.get("p_bh")),
            "yes" if r.get("flagged") else "",
            " | ".join(str(e.get("text", "")) for e in r.get("examples") or []),
        ]
        for r in records
        if isinstance(r, Mapping)
    ]


def _top_tables(field: str, info: Mapping[str, Any]) -> Markup:
    top = info.get("top")
    if not isinstance(top, Mapping):
        return Markup("")
    headers = ["token", "n", "p̂(y|token)", "z", "PMI", "p (Bonferroni)", "p (BH)", "flagged"]
    blocks = [
        example_table(
            [*headers, "examples"],
            _token_rows(records),
            text_columns=["token", "examples"],
            title=f"{field}: top tokens for {label}",
        )
        for label, records in top.items()
        if isinstance(records, Sequence)
    ]
    return Markup("").join(blocks)


@register_section("atlas")
def atlas_section(result: Result) -> Section:
    """:data:`~spurious.report.sections.SectionRenderer` of the artifact atlas.

    Examples
    --------
    >>> import pandas as pd
    >>> r = Result("atlas", pd.DataFrame({"id": ["a"]}), {"share_flagged": 0.25},
    ...            details={"fields": ["text"]})
    >>> "25.0%" in atlas_section(r).html_body
    True
    """
    m = result.metrics or {}
    details = result.details or {}
    fields = [str(f) for f in details.get("fields") or []]
    params = details.get("params") or {}
    per_field = details.get("per_field") or {}
    share = finite(m.get("share_flagged"))
    lo, hi = finite(m.get("share_flagged_ci_low")), finite(m.get("share_flagged_ci_high"))
    stats = []
    if share is not None:
        ci = f"95% CI {lo:.1%}-{hi:.1%}" if lo is not None and hi is not None else ""
        stats.append(Stat("Examples holding a flagged token", f"{share:.1%}", ci))
    if "n_flagged_tokens" in m:
        stats.append(
            Stat("Flagged tokens", m["n_flagged_tokens"], params.get("correction", ""), "int")
        )
    if "global_p_value" in m:
        stats.append(Stat("Global p-value (corrected)", m["global_p_value"]))
    alpha = finite(params.get("alpha")) or 0.01
    figures = []
    for f in fields:
        info = per_field.get(f) or {}
        if not isinstance(info, Mapping) or not isinstance(info.get("plot"), Mapping):
            continue
        figures.append(
            Plot(
                plots.safe_plot(
                    significance_plot,
                    info["plot"],
                    info.get("p0") or {},
                    alpha=alpha,
                    n_tests=int(info.get("n_tests") or 1),
                    title=f,
                ),
                f"p-hat against n for the tokens of the {f}.",
                f"{f}: each token at the label it points to most; dashed: the smallest "
                f"significant p̂ under Bonferroni at alpha={alpha:g} (Gardner et al. 2021, "
                "Fig. 1); big points are flagged.",
            )
        )
    legend = render_fragment(
        '<p class="legend">z = (p̂(y|token) - p0) / sqrt(p0 (1 - p0) / n), n = examples '
        "holding the token, p0 = {{ p0 }}; PMI = Gururangan et al.'s add-100 smoothed "
        "PMI of word counts (nats). Tokenizer: {{ tok }}.</p>",
        p0="the label's prior" if params.get("p0", "prior") == "prior" else "1 / C",
        tok=params.get("tokenizer", "?"),
    )
    top_blocks = [_top_tables(f, per_field.get(f) or {}) for f in fields]
    extra: dict[str, Markup] = {"All metrics": metrics_table(m)} if m else {}
    flagged_rows = [
        [r.get("field"), r.get("label"), *_token_rows([r])[0][:-1]]
        for f in fields
        for r in (per_field.get(f) or {}).get("flagged") or []
        if isinstance(r, Mapping)
    ]
    if flagged_rows:
        extra["All flagged tokens"] = html_table(
            ["field", "label", "token", "n", "p̂", "z", "PMI", "p (Bonf.)", "p (BH)", "flagged"],
            flagged_rows,
        )
    extra["All per-example scores (first rows)"] = scores_preview(result.scores)
    return result_section(
        result,
        stat_block(stats),
        _field_table(m, fields) if fields else Markup(""),
        figure_block(figures),
        legend,
        render_fragment(
            "<h4>Top tokens per field and label</h4>{{ t }}", t=Markup("").join(top_blocks)
        )
        if any(top_blocks)
        else Markup(""),
        title="atlas — words that give the label away",
        extra=extra,
    )
