"""Report section of ``mc_leakage``: multiple-choice partial-input leakage against chance.

Shows, per view (full item, choices only, question only), the probe's accuracy, chance,
Delta over chance and the chance-corrected %R_R with bootstrap intervals; a bar chart of
accuracy per view with the chance line; and, when the items have groups (MMLU subjects),
the groups leaking most as horizontal bars with their intervals and as a table. Missing
metrics, details or tables are skipped, so a partially filled result still renders.
Group names are dataset text: they reach the page only through the escaping helpers and
the plots' plain-text labels.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from markupsafe import Markup
from matplotlib.figure import Figure

from spurious.report import plots
from spurious.report.components import (
    MISSING,
    Header,
    Plot,
    Stat,
    figure_block,
    finite,
    html_table,
    kv_table,
    metric_cell,
    render_fragment,
    scores_preview,
    stat_block,
)
from spurious.report.sections import Section, register_section, result_section
from spurious.report.sections._choice_views import ChoiceWords, view_label, view_names, views_table
from spurious.report.sections.partial_input import BarSpec, accuracy_plot
from spurious.results import Result

__all__ = ["group_leakage_plot", "mc_leakage_section"]

_VIEWS = ("full", "choices_only", "question_only")
_ROLE = {
    "full": "question and options",
    "choices_only": "options only, in their order",
    "question_only": "question (and letters) only",
}
#: Groups shown in the plot and in the table of the most leaky groups.
_TOP = 15

_LEGEND = """<p class="legend">
<strong>Chance</strong>: the mean over items of 1/k (k options), what a blind guess scores;
it is the baseline of the verdict (the majority letter is itself a shortcut, so it is
shown but not used). <strong>Δ<sub>chance</sub></strong> = accuracy − chance;
<strong>%R<sub>R</sub></strong> = (A<sub>view</sub> − chance) / (A<sub>full</sub> − chance),
the share of the full probe's gain over chance that the view alone recovers (Eq. 5,
chance-corrected); <strong>NBA</strong>: share of items where the view's and the full
probe's answers agree (Eq. 7); <strong>NBR</strong>: of those, the share both get right
(Eq. 8). Brackets: bootstrap 95% interval over the items. The probe is a conditional
logit (one weight vector scoring every option, a softmax over the item's options) on
frozen features.</p>"""


_WORDS = ChoiceWords()


def _views(result: Result) -> list[str]:
    return view_names(result, _VIEWS)


def _views_table(views: list[str], m: Mapping[str, Any]) -> Markup:
    table = views_table(views, m, roles=_ROLE, words=_WORDS)
    return table + render_fragment(_LEGEND)


def _stats(views: list[str], m: Mapping[str, Any], details: Mapping[str, Any]) -> Markup:
    judged = str(details.get("judged_view") or "choices_only")
    stats: list[Stat] = []
    if f"accuracy_{judged}" in m:
        stats.append(Stat(f"{view_label(judged)} accuracy", metric_cell(m, f"accuracy_{judged}")))
    if "chance" in m:
        stats.append(Stat("Chance (mean 1/k)", finite(m.get("chance"))))
    if f"delta_chance_{judged}" in m:
        stats.append(Stat("Over chance", metric_cell(m, f"delta_chance_{judged}", "signed")))
    p = finite(m.get("p_value"))
    if p is not None:
        n_perm = int(finite(m.get("n_permutations")) or 0)
        stats.append(Stat("Permutation p", p, f"{n_perm} shuffled-gold refits"))
    if "n_eval" in m:
        stats.append(Stat("Items scored", m["n_eval"], kind="int"))
    return stat_block(stats)


@plots.styled
def group_leakage_plot(
    table: pd.DataFrame, max_rows: int = _TOP, view: str = "choices_only"
) -> str | None:
    """Horizontal bars: the groups' Delta over chance with 95% intervals, most leaky on top.

    Groups whose interval lies above 0 are drawn in the flagged colour.

    Examples
    --------
    >>> t = pd.DataFrame({"group": ["a", "b"], "delta_chance": [0.2, 0.0],
    ...                   "delta_chance_ci_low": [0.1, -0.1], "delta_chance_ci_high": [0.3, 0.1]})
    >>> group_leakage_plot(t).startswith("data:image/svg")
    True
    >>> group_leakage_plot(t.iloc[:0]) is None
    True
    """
    need = {"group", "delta_chance", "delta_chance_ci_low", "delta_chance_ci_high"}
    if table is None or table.empty or not need <= set(table.columns):
        return None
    rows = table.dropna(subset=["delta_chance"]).head(max_rows).iloc[::-1]  # top at the top
    if rows.empty:
        return None
    y = np.arange(len(rows))
    eff = rows["delta_chance"].to_numpy(dtype=float)
    lo = rows["delta_chance_ci_low"].to_numpy(dtype=float)
    hi = rows["delta_chance_ci_high"].to_numpy(dtype=float)
    lo, hi = np.where(np.isfinite(lo), lo, eff), np.where(np.isfinite(hi), hi, eff)
    leaks = lo > 0
    fig = Figure(figsize=(6.0, 0.28 * len(rows) + 1.1))
    ax = fig.add_subplot()
    colors = [plots.PALETTE["flagged"] if f else "#9ca3af" for f in leaks]
    ax.barh(y, eff, color=colors, height=0.6, zorder=2)
    ax.errorbar(
        eff, y, xerr=np.clip([eff - lo, hi - eff], 0, None), fmt="none", ecolor="#1f2937",
        elinewidth=0.8, capsize=2, zorder=3,
    )  # fmt: skip
    ax.axvline(0.0, color=plots.PALETTE["baseline"], linestyle="--", linewidth=1.0)
    names = [plots.plain(str(g)) for g in rows["group"]]
    ax.set_yticks(y, [n if len(n) <= 40 else n[:39] + "…" for n in names], fontsize=7)
    ax.set_xlabel(f"accuracy over chance ({view_label(view)} probe)")
    ax.xaxis.grid(True, color=plots.PALETTE["grid"], zorder=0)
    ax.set_axisbelow(True)
    return plots.figure_to_data_uri(fig)


def _figures(
    views: list[str], m: Mapping[str, Any], groups: pd.DataFrame | None, judged: str
) -> Markup:
    bars = [
        BarSpec(
            label=view_label(v),
            value=finite(m.get(f"accuracy_{v}")),
            low=finite(m.get(f"accuracy_{v}_ci_low")),
            high=finite(m.get(f"accuracy_{v}_ci_high")),
            kind="full" if v == "full" else "partial",
        )
        for v in views
    ]
    return figure_block(
        [
            Plot(
                plots.safe_plot(
                    accuracy_plot, bars, baseline=finite(m.get("chance")), baseline_label="chance"
                ),
                "Accuracy per view with bootstrap 95% error bars; dashed line: chance.",
                "Accuracy of the probe per view. Error bars: bootstrap 95% interval; dashed "
                "line: chance (mean of 1/k).",
            ),
            Plot(
                plots.safe_plot(group_leakage_plot, groups, view=judged)
                if groups is not None
                else None,
                f"Groups with the highest {view_label(judged)} accuracy over chance, with intervals.",
                f"The {_TOP} groups leaking most: accuracy over chance with bootstrap 95% "
                "intervals (red: the interval lies above 0; unadjusted for the number of "
                "groups).",
            ),
        ]
    )


def _groups_table(groups: pd.DataFrame | None) -> Markup:
    if groups is None or groups.empty or "group" not in groups.columns:
        return Markup("")
    acc_cols = [c for c in groups.columns if str(c).startswith("accuracy_")]
    rows = []
    for rec in groups.head(_TOP).to_dict(orient="records"):
        lo, hi = finite(rec.get("delta_chance_ci_low")), finite(rec.get("delta_chance_ci_high"))
        ci = MISSING if lo is None or hi is None else f"[{lo:+.3f}, {hi:+.3f}]"
        rows.append(
            [
                str(rec.get("group")),
                rec.get("n"),
                *(finite(rec.get(c)) for c in acc_cols),
                finite(rec.get("chance")),
                finite(rec.get("delta_chance")),
                ci,
                finite(rec.get("p_value")),
            ]
        )
    headers: list[Header] = [
        "group",
        ("n", "items scored"),
        *(
            (view_label(c[len("accuracy_") :]), f"accuracy, {c[len('accuracy_') :]}")
            for c in acc_cols
        ),
        ("chance", "mean of 1/k"),
        (Markup("Δ<sub>chance</sub>"), "judged view's accuracy minus chance"),
        ("95% interval", "bootstrap over the group's items"),
        ("p (permutation)", "against the shuffled-gold refits, unadjusted for the groups"),
    ]
    return render_fragment(
        "<h4>Groups leaking most (of {{ n }})</h4>{{ t }}",
        n=len(groups),
        t=html_table(headers, rows, css="compact"),
    )


@register_section("mc_leakage")
def mc_leakage_section(result: Result) -> Section:
    """:data:`~spurious.report.sections.SectionRenderer` of ``mc_leakage``.

    Examples
    --------
    >>> r = Result("mc_leakage", pd.DataFrame({"id": [0]}),
    ...            {"accuracy_choices_only": 0.31, "chance": 0.25})
    >>> "0.310" in mc_leakage_section(r).html_body
    True
    """
    m = result.metrics or {}
    details = result.details or {}
    views = _views(result)
    groups = (result.tables or {}).get("groups")
    extra: dict[str, Markup] = {}
    for key, title in (("featurizer", "Features"), ("probe", "Probe")):
        if isinstance(details.get(key), Mapping) and details[key]:
            extra[title] = kv_table(details[key])
    extra["All per-item scores (first rows)"] = scores_preview(result.scores)
    return result_section(
        result,
        _stats(views, m, details),
        render_fragment("<h4>Leakage per view</h4>{{ t }}", t=_views_table(views, m)),
        _figures(views, m, groups, str(details.get("judged_view") or "choices_only")),
        _groups_table(groups),
        title="mc_leakage — multiple-choice partial-input baselines",
        extra=extra,
    )
