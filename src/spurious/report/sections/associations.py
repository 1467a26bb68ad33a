"""Report section of the model-free associations (heuristics and properties vs the label).

One row per feature: the effect (out-of-fold binned accuracy over the majority) with its
interval, mutual information, permutation and BH-adjusted p-values, and which label the
low and high values point to; a bar chart of the effects; and the per-bin label shares
of the significant features.
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

__all__ = ["associations_section", "effect_plot"]


@plots.styled
def effect_plot(rows: Sequence[Mapping[str, Any]], max_rows: int = 15) -> str | None:
    """Horizontal bars: each feature's effect with its 95% interval; flagged ones in red.

    Examples
    --------
    >>> effect_plot([{"feature": "a", "effect": 0.1, "effect_ci": [0.08, 0.12],
    ...               "significant": True}]).startswith("data:image/svg")
    True
    >>> effect_plot([]) is None
    True
    """
    rows = [r for r in rows if finite(r.get("effect")) is not None][:max_rows]
    if not rows:
        return None
    rows = rows[::-1]  # largest at the top
    fig = Figure(figsize=(5.6, 0.3 * len(rows) + 1.0))
    ax = fig.add_subplot()
    y = np.arange(len(rows))
    eff = np.array([float(r["effect"]) for r in rows])
    ci = np.array([r.get("effect_ci") or [e, e] for r, e in zip(rows, eff, strict=True)], float)
    colors = [plots.PALETTE["flagged"] if r.get("significant") else "#9ca3af" for r in rows]
    ax.barh(y, eff, color=colors, height=0.6)
    ax.errorbar(
        eff, y, xerr=np.clip([eff - ci[:, 0], ci[:, 1] - eff], 0, None), fmt="none", ecolor="#1f2937",
        elinewidth=0.8, capsize=2,
    )  # fmt: skip
    ax.axvline(0.0, color="#6b7280", linewidth=0.8)
    ax.set_yticks(y, [plots.plain(r.get("feature", "?")) for r in rows], fontsize=7)
    ax.set_xlabel("out-of-fold accuracy over the majority guess")
    return plots.figure_to_data_uri(fig)


def _feature_table(rows: Sequence[Mapping[str, Any]]) -> Markup:
    body = [
        [
            r.get("feature"),
            r.get("kind"),
            finite(r.get("effect")),
            (
                f"[{r['effect_ci'][0]:.3f}, {r['effect_ci'][1]:.3f}]"
                if isinstance(r.get("effect_ci"), Sequence) and len(r["effect_ci"]) == 2
                else None
            ),
            finite(r.get("mi_bits")),
            finite(r.get("p_value")),
            finite(r.get("p_bh")),
            "yes" if r.get("significant") else "",
            r.get("low_points_to"),
            r.get("high_points_to"),
        ]
        for r in rows
        if isinstance(r, Mapping)
    ]
    headers = [
        "feature",
        "kind",
        ("effect", "out-of-fold binned accuracy minus majority accuracy"),
        ("95% interval", "Wilson interval of the accuracy, majority rate fixed"),
        ("MI (bits)", "I(bin; label), plug-in"),
        ("p (permutation)", "test of I(bin; label): labels permuted, bins fixed"),
        ("p (BH)", "Benjamini-Hochberg over all features"),
        "flagged",
        ("low values ->", "label whose share rises most in the lowest bin"),
        ("high values ->", "label whose share rises most in the highest bin"),
    ]
    return html_table(headers, body, css="metrics")


def _bins_tables(rows: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> Markup:
    blocks = []
    for r in rows:
        if not (isinstance(r, Mapping) and r.get("significant")):
            continue
        bins = [b for b in r.get("bins") or [] if isinstance(b, Mapping)]
        body = [[b.get("bin"), b.get("n"), *(finite(b.get(lab)) for lab in labels)] for b in bins]
        blocks.append(
            render_fragment(
                "<h4>{{ f }}: p(label | bin)</h4>{{ t }}",
                f=r.get("feature"),
                t=html_table(["bin", "n", *labels], body, css="metrics"),
            )
        )
    return Markup("").join(blocks)


@register_section("associations")
def associations_section(result: Result) -> Section:
    """:data:`~spurious.report.sections.SectionRenderer` of the associations analysis.

    Examples
    --------
    >>> import pandas as pd
    >>> r = Result("associations", pd.DataFrame({"id": ["a"]}), {"n_significant": 1},
    ...            details={"features": [{"feature": "overlap_rate", "effect": 0.1,
    ...                                   "significant": True}]})
    >>> "overlap_rate" in associations_section(r).html_body
    True
    """
    m = result.metrics or {}
    details = result.details or {}
    rows = [r for r in details.get("features") or [] if isinstance(r, Mapping)]
    labels = [str(v) for v in details.get("label_names") or []]
    stats = []
    if "n_significant" in m:
        note = f"of {int(m.get('n_features', 0))} tested (BH)"
        stats.append(Stat("Features that predict the label", m["n_significant"], note, "int"))
    if details.get("best"):
        lo, hi = finite(m.get("max_effect_ci_low")), finite(m.get("max_effect_ci_high"))
        ci = f"95% CI {lo:+.1%} to {hi:+.1%}" if lo is not None and hi is not None else ""
        stats.append(Stat(f"Strongest: {details['best']}", f"{m.get('max_effect', 0):+.1%}", ci))
    if "share_issue" in m:
        stats.append(Stat("Examples flagged", f"{m['share_issue']:.1%}", "p(gold | bin) raised"))
    params = details.get("params") or {}
    legend = render_fragment(
        '<p class="legend">Each feature is cut into at most {{ b }} quantile bins; each bin '
        "predicts the majority label of its training folds ({{ f }} folds). Effect = that "
        "classifier's out-of-fold accuracy minus the majority guess's; p: a test of I(bin; "
        "label) with {{ p }} label permutations, Benjamini-Hochberg over the features. No model is used.</p>",
        b=params.get("n_bins", "?"),
        f=params.get("n_folds", "?"),
        p=params.get("n_permutations", "?"),
    )
    figure = figure_block(
        [
            Plot(
                plots.safe_plot(effect_plot, rows),
                "Effect of each feature with its interval.",
                "Effect per feature (red: flagged after BH); bars: 95% interval.",
            )
        ]
    )
    bins = _bins_tables(rows, labels)
    extra: dict[str, Markup] = {"All metrics": metrics_table(m)} if m else {}
    extra["All per-example scores (first rows)"] = scores_preview(result.scores)
    return result_section(
        result,
        stat_block(stats),
        figure,
        _feature_table(rows) if rows else Markup(""),
        legend,
        details_block("Label shares per bin of the flagged features", bins) if bins else Markup(""),
        title="associations — heuristics and properties that give the label away",
        extra=extra,
    )
