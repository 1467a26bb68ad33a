"""Report section of the ``fairness`` analysis (paper 004 Sec. 5, Fig. 1, 3, 5, 7).

A verdict paragraph, the accuracy heatmap (models x adversaries, "none" = the full set,
chance in the title), the filter-stage breakdown per adversary, the models' rank under
each adversary, annotator agreement per stage, and the tables behind them.
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
from spurious.utils.metric_keys import metric_key

__all__ = [
    "accuracy_heatmap",
    "agreement_plot",
    "fairness_section",
    "rank_plot",
    "stage_breakdown_plot",
]

_STAGES = ("filtered_first_round", "filtered_later_round", "af_selected")
_SHORT = ("first_round", "later", "selected")
_STAGE_LABEL = ("filtered in round 1", "filtered later", "AF-selected")


@plots.styled
def accuracy_heatmap(
    models: Sequence[str],
    adversaries: Sequence[str],
    values: Sequence[Sequence[float | None]],
    *,
    chance: float | None = None,
    score: str = "accuracy",
) -> str | None:
    """Heatmap of accuracy (or ``score``, e.g. SQuAD F1) per model (rows) and adversary
    (columns), as paper 004 Fig. 7.

    Examples
    --------
    >>> accuracy_heatmap(["m"], ["none", "bow"], [[0.8, 0.4]], chance=1 / 3).startswith("data:")
    True
    >>> accuracy_heatmap([], [], []) is None
    True
    """
    grid = np.array(
        [[np.nan if finite(v) is None else float(v) for v in row] for row in values], dtype=float
    )
    if grid.size == 0 or not np.isfinite(grid).any():
        return None
    fig = Figure(
        figsize=(1.9 + 1.05 * len(adversaries), 1.1 + 0.45 * len(models)), layout="constrained"
    )
    ax = fig.add_subplot()
    lo = min(float(np.nanmin(grid)), chance if chance is not None else 1.0)
    im = ax.imshow(grid, cmap="viridis", vmin=lo, vmax=float(np.nanmax(grid)), aspect="auto")
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            if np.isfinite(grid[i, j]):
                mark = "*" if chance is not None and grid[i, j] <= chance else ""
                ax.text(j, i, f"{grid[i, j]:.3f}{mark}", ha="center", va="center", fontsize=9,
                        color="white" if grid[i, j] < (lo + np.nanmax(grid)) / 2 else "black")  # fmt: skip
    ax.set_xticks(range(len(adversaries)), [plots.plain(a) for a in adversaries], rotation=30,
                  ha="right")  # fmt: skip
    ax.set_yticks(range(len(models)), [plots.plain(m) for m in models])
    ax.set_xlabel("adversary (none = full set)")
    title = f"{score} on the AF-selected set"
    if chance is not None:
        title += f" (chance {chance:.3f}; * = at or below chance)"
    ax.set_title(plots.plain(title), fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.05, label=score)
    return plots.figure_to_data_uri(fig)


@plots.styled
def stage_breakdown_plot(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """Stacked bars: share of the evaluation set per filter stage and adversary (Fig. 1).

    Examples
    --------
    >>> stage_breakdown_plot([{"adversary": "bow", "first_round": 0.6, "later": 0.3,
    ...                        "selected": 0.1}]).startswith("data:")
    True
    """
    rows = [r for r in rows if isinstance(r, Mapping)]
    if not rows:
        return None
    fig = Figure(figsize=(1.8 + 0.8 * len(rows), 2.6), layout="constrained")
    ax = fig.add_subplot()
    x = np.arange(len(rows))
    bottom = np.zeros(len(rows))
    for k, short in enumerate(_SHORT):
        vals = np.array([finite(r.get(short)) or 0.0 for r in rows])
        ax.bar(x, vals, bottom=bottom, color=plots.SERIES_COLORS[k], label=_STAGE_LABEL[k])
        bottom += vals
    ax.set_xticks(x, [plots.plain(r.get("adversary", "?")) for r in rows], rotation=30, ha="right")
    ax.set_ylabel("share of the evaluation set")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return plots.figure_to_data_uri(fig)


@plots.styled
def rank_plot(ranks: Mapping[str, Mapping[str, float]], adversaries: Sequence[str]) -> str | None:
    """One line per model: its rank (1 = best) on the full set and under each adversary (Fig. 3).

    Examples
    --------
    >>> rank_plot({"none": {"a": 1, "b": 2}, "bow": {"a": 2, "b": 1}}, ["none", "bow"])[:5]
    'data:'
    """
    advs = [a for a in adversaries if a in ranks]
    models = list(ranks.get(advs[0], {})) if advs else []
    if not models or len(advs) < 2:
        return None
    fig = Figure(figsize=(1.8 + 0.9 * len(advs), 0.9 + 0.3 * len(models)), layout="constrained")
    ax = fig.add_subplot()
    for k, m in enumerate(models):
        ys = [finite(ranks[a].get(m)) for a in advs]
        ax.plot(range(len(advs)), [np.nan if y is None else y for y in ys], marker="o",
                color=plots.SERIES_COLORS[k % len(plots.SERIES_COLORS)], label=plots.plain(m))  # fmt: skip
    ax.set_xticks(range(len(advs)), [plots.plain(a) for a in advs], rotation=30, ha="right")
    ax.set_ylim(len(models) + 0.5, 0.5)
    ax.set_ylabel("rank (1 = best)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return plots.figure_to_data_uri(fig)


@plots.styled
def agreement_plot(
    rows: Sequence[Mapping[str, Any]],
    chance_line: float | None = 0.6,
    ylabel: str = "annotator agreement with gold",
) -> str | None:
    """Annotator agreement with gold per stage and adversary, with intervals (Fig. 5/9).

    Examples
    --------
    >>> agreement_plot([{"adversary": "bow", "stage": "af_selected", "agreement": 0.8,
    ...                  "ci_low": 0.7, "ci_high": 0.9}]).startswith("data:")
    True
    """
    rows = [r for r in rows if isinstance(r, Mapping) and finite(r.get("agreement")) is not None]
    if not rows:
        return None
    advs = list(dict.fromkeys(str(r.get("adversary")) for r in rows))
    fig = Figure(figsize=(2.0 + 0.9 * len(advs), 2.6), layout="constrained")
    ax = fig.add_subplot()
    width = 0.8 / len(_STAGES)
    for k, stage in enumerate(_STAGES):
        xs, ys, err = [], [], [[], []]
        for i, a in enumerate(advs):
            r = next(
                (r for r in rows if str(r.get("adversary")) == a and r.get("stage") == stage), None
            )
            if r is None:
                continue
            y = float(r["agreement"])
            lo, hi = finite(r.get("ci_low")), finite(r.get("ci_high"))
            xs.append(i + (k - 1) * width)
            ys.append(y)
            err[0].append(max(0.0, y - lo) if lo is not None else 0.0)
            err[1].append(max(0.0, hi - y) if hi is not None else 0.0)
        ax.bar(xs, ys, width=width, yerr=err, capsize=2, color=plots.SERIES_COLORS[k],
               label=_STAGE_LABEL[k])  # fmt: skip
    if chance_line is not None:
        ax.axhline(chance_line, color="#888888", linestyle=":", linewidth=1)
    ax.set_xticks(range(len(advs)), [plots.plain(a) for a in advs], rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    low = min([float(r["agreement"]) for r in rows] + [0.55])
    ax.set_ylim(max(0.0, low - 0.05), 1.0)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return plots.figure_to_data_uri(fig)


def _fmt_ci(v: Any, lo: Any, hi: Any) -> str | None:
    v, lo, hi = finite(v), finite(lo), finite(hi)
    if v is None:
        return None
    return f"{v:.3f}" + (f" [{lo:.3f}, {hi:.3f}]" if lo is not None and hi is not None else "")


def _score(d: Mapping[str, Any]) -> tuple[str, str]:
    """``(key, words)`` of what the matrix holds: ``("f1", "SQuAD F1 (0-1 ...)")`` on QA.

    Results written before the scores were named (``details["score"]`` = ``"SQuAD F1"``,
    matrix cells under ``"accuracy"``) read as F1.

    Examples
    --------
    >>> _score({"score": "f1", "score_name": "SQuAD F1 (0-1)"}), _score({"score": "SQuAD F1"})
    (('f1', 'SQuAD F1 (0-1)'), ('f1', 'SQuAD F1 (0-1)'))
    >>> _score({})
    ('accuracy', 'accuracy')
    """
    raw = str(d.get("score") or "accuracy")
    key = "f1" if "f1" in raw.lower() else raw
    words = d.get("score_name") or ("SQuAD F1 (0-1)" if key == "f1" else key)
    return key, str(words)


def _cell(row: Mapping[str, Any], key: str) -> Any:
    # Rows written before the scores were named hold every score under "accuracy".
    return row.get(key, row.get("accuracy"))


def _mean(m: Mapping[str, Any], key: str, adversary: str) -> Any:
    # Results written before the "/" keys: mean_acc_<adv>.
    return m.get(metric_key(f"mean_{key}", adversary), m.get(f"mean_acc_{adversary}"))


def _matrix_table(d: Mapping[str, Any]) -> Markup:
    key, score = _score(d)
    cells = [r for r in d.get("matrix") or [] if isinstance(r, Mapping)]
    if not cells:
        return Markup("")
    advs = list(dict.fromkeys(str(r["adversary"]) for r in cells))
    models = list(dict.fromkeys(str(r["model"]) for r in cells))
    by = {(str(r["model"]), str(r["adversary"])): r for r in cells}
    rows = []
    for m in models:
        row: list[Any] = [m]
        for a in advs:
            r = by.get((m, a), {})
            txt = _fmt_ci(_cell(r, key), r.get("ci_low"), r.get("ci_high"))
            sd = finite(r.get("seed_sd"))
            row.append(None if txt is None else txt + (f" ±{sd:.3f}" if sd else ""))
        rows.append(row)
    n_sel = d.get("n_selected") or {}
    rows.append(["examples (mean)", *(finite(n_sel.get(a)) for a in advs)])
    return render_fragment(
        '{{ t }}<p class="legend">{{ s }}, mean over AFLite seeds, [bootstrap 95% interval '
        "over evaluation examples] ±sd over seeds.{{ scale }}</p>",
        t=html_table(["Model", *advs], rows, wide=True),
        s=score[:1].upper() + score[1:],
        scale=" SQuAD F1 and EM are on a 0-1 scale, as every score here; the official "
        "script and Hugging Face evaluate's squad metric print them x100."
        if key != "accuracy"
        else "",
    )


def _ranking_table(d: Mapping[str, Any]) -> Markup:
    rows = [
        [
            r.get("adversary"),
            _fmt_ci(
                r.get("kendall_tau"), r.get("kendall_tau_ci_low"), r.get("kendall_tau_ci_high")
            ),
            _fmt_ci(r.get("spearman"), r.get("spearman_ci_low"), r.get("spearman_ci_high")),
            _fmt_null(r.get("null_null_tau_median"), r.get("null_p_value")),
        ]
        for r in d.get("ranking") or []
        if isinstance(r, Mapping)
    ]
    fam = [
        [r.get("model"), r.get("adversary"), finite(r.get("rank_change"))]
        for r in d.get("family_rank_change") or []
        if isinstance(r, Mapping)
    ]
    out = (
        render_fragment(
            '{{ t }}<p class="legend">Random subsets: the median Kendall tau of random '
            "subsets of the AF-selected size against the full set, and the one-sided p-value "
            "of the adversary's tau under them (small p: the adversary reorders the models "
            "more than a smaller set alone does).</p>",
            t=html_table(
                ["Adversary", "Kendall tau vs none", "Spearman vs none", "Random subsets"], rows
            ),
        )
        if rows
        else Markup("")
    )
    if fam:
        out += render_fragment(
            '{{ t }}<p class="legend">Same-family rank change (paper 004 Fig. 4): rank under an '
            "adversary of the model's own family minus its unfiltered rank (positive = fell).</p>",
            t=html_table(["Model", "Adversary", "Rank change"], fam),
        )
    return out


def _fmt_null(median: Any, p: Any) -> str:
    """``"tau 0.87, p=0.003"`` for the random-subset null (results without it: ``""``)."""
    med, pv = finite(median), finite(p)
    if med is None or pv is None:
        return ""
    return f"tau {med:+.2f}, p={pv:.3g}"


def _agreement_table(d: Mapping[str, Any]) -> Markup:
    rows = [
        [r.get("adversary"), r.get("stage"),
         _fmt_ci(r.get("agreement"), r.get("ci_low"), r.get("ci_high")),
         finite(r.get("entropy")), finite(r.get("n"))]
        for r in d.get("agreement") or []
        if isinstance(r, Mapping)
    ]  # fmt: skip
    if not rows:
        return render_fragment(
            '<p class="legend">No annotator labels: agreement by stage not computed.</p>'
        )
    return html_table(
        ["Adversary", "Stage", "Agreement with gold", "Entropy (bits)", "Examples"], rows
    )


def _stats(m: Mapping[str, Any], d: Mapping[str, Any]) -> Markup:
    key, score = _score(d)
    stats = [Stat(f"Mean {score}, full set", _mean(m, key, "none"), kind="float")]
    advs = list(d.get("adversary_order") or [])
    vals = {a: finite(_mean(m, key, a)) for a in advs}
    vals = {a: v for a, v in vals.items() if v is not None}
    if vals:
        a = min(vals, key=vals.get)
        chance = finite(m.get("chance"))
        stats.append(Stat(f"Mean {score}, {a}", vals[a], kind="float",
                          note=f"chance {chance:.3f}" if chance is not None else ""))  # fmt: skip
    if finite(m.get("min_kendall_tau")) is not None:
        stats.append(Stat("Lowest Kendall tau", m["min_kendall_tau"], kind="float"))
    return stat_block(stats)


@register_section("fairness")
def fairness_section(result: Result) -> Section:
    """:data:`~spurious.report.sections.SectionRenderer` of the fairness analysis.

    Examples
    --------
    >>> import pandas as pd
    >>> r = Result("fairness", pd.DataFrame({"id": ["a"]}), {"mean_accuracy/none": 0.7},
    ...            details={"verdict": "<b>fair</b>"})
    >>> html = fairness_section(r).html_body
    >>> "&lt;b&gt;fair" in html and "<b>fair" not in html and "0.700" in html
    True
    """
    m = result.metrics or {}
    d = result.details or {}
    advs = ["none", *[str(a) for a in d.get("adversary_order") or []]]
    models = [str(x) for x in d.get("models") or []]
    key, score = _score(d)
    cells = {(str(r.get("model")), str(r.get("adversary"))): _cell(r, key)
             for r in d.get("matrix") or [] if isinstance(r, Mapping)}  # fmt: skip
    qa = key != "accuracy"  # QA: SQuAD F1, agreement among the annotators' answers
    figures = [
        Plot(
            plots.safe_plot(
                accuracy_heatmap,
                models,
                advs,
                [[cells.get((mo, a)) for a in advs] for mo in models],
                chance=finite(m.get("chance")),
                score=score,
            ),
            f"{score[:1].upper() + score[1:]} of each model on each adversary's AF-selected set.",
            f"{score[:1].upper() + score[1:]} per evaluated model (rows) on each adversary's "
            "AF-selected set (paper 004 Fig. 7); none = the full evaluation set.",
        ),
        Plot(
            plots.safe_plot(stage_breakdown_plot, d.get("stages") or []),
            "Filter stages per adversary.",
            "Share of the evaluation set filtered in round 1, in later rounds, and AF-selected "
            "(paper 004 Fig. 1), mean over seeds.",
        ),
        Plot(
            plots.safe_plot(rank_plot, d.get("ranks") or {}, advs),
            "Rank of each model per adversary.",
            "Rank of each model (1 = best) on the full set and under each adversary (Fig. 3).",
        ),
        Plot(
            plots.safe_plot(
                agreement_plot,
                d.get("agreement") or [],
                None if qa else 0.6,
                "other answers = first answer" if qa else "annotator agreement with gold",
            ),
            "Annotator agreement per filter stage.",
            "Share of the other annotators' answers equal to the first answer (SQuAD "
            "normalisation) among each stage's questions, with 95% bootstrap intervals."
            if qa
            else "Share of annotator labels equal to gold among each stage's examples, with 95% "
            "bootstrap intervals (Fig. 5); dotted: 3 of 5, the least a validated SNLI pair has.",
        ),
    ]
    verdict = render_fragment('<p class="verdict">{{ v }}</p>', v=str(d.get("verdict") or ""))
    extra: dict[str, Markup] = {"All metrics": metrics_table(m)} if m else {}
    extra["All per-example scores (first rows)"] = scores_preview(result.scores)
    return result_section(
        result,
        _stats(m, d),
        verdict,
        figure_block(figures),
        _matrix_table(d),
        _ranking_table(d),
        _agreement_table(d),
        title="fairness — are adversarially filtered evaluation sets fair?",
        extra=extra,
    )
