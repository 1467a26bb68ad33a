"""Report section of the multiple-choice cues (``mc_cues``).

The cue table (items where the cue picks, hit rate, chance, effect with its bootstrap
interval, permutation p and BH q), the gold-letter shares against their expectation under
random positions (a bar chart with Wilson intervals), and the significant cues per group.
Everything is read from the result's metrics and details; option and group names are
dataset text and are escaped by the table helpers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from markupsafe import Markup
from matplotlib.figure import Figure

from spurious.report import plots
from spurious.report.components import (
    Cell,
    Plot,
    Stat,
    details_block,
    figure_block,
    finite,
    format_number,
    html_table,
    metrics_table,
    render_fragment,
    scores_preview,
    stat_block,
)
from spurious.report.sections import Section, register_section, result_section
from spurious.report.tables import Header
from spurious.results import Result

__all__ = ["letter_plot", "mc_cues_section"]


@plots.styled
def letter_plot(position: Mapping[str, Sequence[Any]]) -> str | None:
    """Gold-letter shares (bars, 95% Wilson intervals) against uniform positions (ticks).

    Parameters
    ----------
    position : mapping
        ``letters``, ``share``, ``share_ci_low``, ``share_ci_high``, ``expected_share``
        (the ``position`` details of ``mc_cues``).

    Returns
    -------
    str or None
        A ``data:`` URI; ``None`` without letters.

    Examples
    --------
    >>> p = {"letters": ["A", "B"], "share": [0.6, 0.4], "share_ci_low": [0.5, 0.3],
    ...      "share_ci_high": [0.7, 0.5], "expected_share": [0.5, 0.5]}
    >>> letter_plot(p).startswith("data:image/svg+xml")
    True
    """
    letters = [plots.plain(v) for v in position.get("letters") or []]
    if not letters:
        return None
    share = plots.to_float_array(position.get("share") or [])
    lo = plots.to_float_array(position.get("share_ci_low") or share)
    hi = plots.to_float_array(position.get("share_ci_high") or share)
    expected = plots.to_float_array(position.get("expected_share") or [])
    x = np.arange(len(letters))
    fig = Figure(figsize=(max(3.0, 0.55 * len(letters) + 1.5), 2.8))
    ax = fig.add_subplot()
    yerr = np.vstack([np.clip(share - lo, 0, None), np.clip(hi - share, 0, None)])
    ax.bar(x, share, color=plots.PALETTE["full"], width=0.6, label="gold share (95% CI)")
    ax.errorbar(x, share, yerr=yerr, fmt="none", ecolor=plots.PALETTE["text"], capsize=3, lw=1)
    if len(expected) == len(letters):
        ax.scatter(x, expected, marker="_", s=500, color=plots.PALETTE["partial"], zorder=3,
                   label="expected (random positions)")  # fmt: skip
    ax.set_xticks(x, letters)
    ax.set_xlabel("gold letter")
    ax.set_ylabel("share of items")
    top = np.nanmax(np.concatenate([hi, expected])) if len(expected) else np.nanmax(hi)
    ax.set_ylim(0, min(1.0, float(top) * 1.25 + 0.02))
    ax.legend(fontsize=7, loc="upper right")
    return plots.figure_to_data_uri(fig)


def _pct(v: Any) -> str:
    return format_number(v, "percent")


def _effect_cell(r: Mapping[str, Any]) -> Cell:
    lo, hi = finite(r.get("effect_ci_low")), finite(r.get("effect_ci_high"))
    ci = "" if lo is None or hi is None else f"[{lo * 100:+.1f}, {hi * 100:+.1f}]"
    effect = finite(r.get("effect"))
    text = format_number(None if effect is None else effect * 100, "signed", 1)
    return Cell(text + (" pts" if effect is not None else ""), ci=ci, sort=str(effect or ""),
                numeric=True)  # fmt: skip


def _cue_table(cues: Sequence[Mapping[str, Any]], alpha: float) -> Markup:
    rows = []
    for r in cues:
        q = finite(r.get("q_value"))
        significant = q is not None and q < alpha and (finite(r.get("effect")) or 0) > 0
        rows.append([
            r.get("cue"),
            r.get("n"),
            _pct(r.get("coverage")),
            _pct(r.get("hit_rate")),
            _pct(r.get("chance")),
            _effect_cell(r),
            finite(r.get("p_value")),
            q,
            "yes" if significant else "",
        ])  # fmt: skip
    headers: list[Header] = [
        "cue",
        ("items", "items where the cue picks one option (no tie)"),
        ("coverage", "share of all items"),
        ("hit rate", "share of those items where the pick is the gold"),
        ("chance", "mean 1/k over those items"),
        ("effect [95% CI]", "hit rate - chance, percentage points; bootstrap over items"),
        ("p", "one-sided permutation p (gold re-drawn uniformly per item)"),
        ("q", "Benjamini-Hochberg over the tested cues"),
        (f"q < {alpha:g}", "significant and above chance"),
    ]
    return render_fragment("<h4>Cues</h4>{{ t }}", t=html_table(headers, rows))


def _group_table(groups: Mapping[str, Any]) -> Markup:
    sig = [r for r in groups.get("significant") or [] if isinstance(r, Mapping)]
    if not sig:
        return render_fragment(
            "<p>No cue beats chance within a single group of the {{ n }} groups "
            "(BH over groups x cues).</p>",
            n=groups.get("n_groups", "?"),
        )
    rows = [
        [r.get("group"), r.get("cue"), r.get("n"), _pct(r.get("hit_rate")),
         _pct(r.get("chance")), _effect_cell(r), finite(r.get("q_value"))]
        for r in sig
    ]  # fmt: skip
    return html_table(["group", "cue", "items", "hit rate", "chance", "effect", "q"], rows)


@register_section("mc_cues")
def mc_cues_section(result: Result) -> Section:
    """:data:`~spurious.report.sections.SectionRenderer` of the multiple-choice cues.

    Examples
    --------
    >>> import pandas as pd
    >>> r = Result("mc_cues", pd.DataFrame({"id": ["a"]}), {"n_items": 100.0,
    ...            "chance": 0.25}, details={"cues": [{"cue": "longest", "n": 90,
    ...            "hit_rate": 0.4, "chance": 0.25, "effect": 0.15, "q_value": 0.001}]})
    >>> "longest" in mc_cues_section(r).html_body
    True
    """
    m = result.metrics or {}
    details = result.details or {}
    alpha = finite(details.get("alpha")) or 0.05
    cues = [r for r in details.get("cues") or [] if isinstance(r, Mapping)]
    found = details.get("position")
    position: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    stats = [
        Stat("Items", m.get("n_items"), "", "int"),
        Stat("Chance (mean 1/k)", _pct(m.get("chance"))),
    ]
    if "n_cues_significant" in m:
        stats.append(
            Stat("Cues above chance", m["n_cues_significant"],
                 f"of {int(m.get('n_cues_tested', 0))} tested, BH q < {alpha:g}", "int")
        )  # fmt: skip
    if "position_p_value" in m:
        stats.append(Stat("Gold letters vs uniform", format_number(m["position_p_value"]),
                          "chi-square p-value"))  # fmt: skip
    if "majority_letter_accuracy" in m:
        lo, hi = m.get("majority_letter_accuracy_ci_low"), m.get("majority_letter_accuracy_ci_high")
        stats.append(
            Stat(f"Always answer {position.get('majority_letter', 'the top letter')}",
                 _pct(m["majority_letter_accuracy"]), f"95% CI {_pct(lo)}-{_pct(hi)}; "
                 f"chance {_pct(m.get('chance'))}")
        )  # fmt: skip
    figures = []
    if position:
        figures.append(
            Plot(
                plots.safe_plot(letter_plot, position),
                "Share of items per gold letter against the expectation under random positions.",
                "Bars: share of items whose gold is each letter (95% Wilson intervals); "
                "orange ticks: the share expected if the gold sat at a random position "
                "(sum of 1/k over the items offering the letter).",
            )
        )
    legend = render_fragment(
        '<p class="legend">Null: {{ null }}. A cue abstains on a tie for its top option. '
        "The most frequent letter is chosen again on every null draw.</p>",
        null=details.get("null", "gold uniform among each item's options"),
    )
    groups = details.get("groups")
    extra: dict[str, Markup] = {"All metrics": metrics_table(m)} if m else {}
    extra["All per-example scores (first rows)"] = scores_preview(result.scores)
    return result_section(
        result,
        stat_block(stats),
        _cue_table(cues, alpha) if cues else Markup(""),
        figure_block(figures),
        legend,
        details_block("Significant cues per group", _group_table(groups), open_=False)
        if isinstance(groups, Mapping)
        else Markup(""),
        title="mc_cues — answers findable without the question",
        extra=extra,
    )
