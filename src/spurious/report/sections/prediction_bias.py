"""Report section of ``prediction_bias`` results (paper 001, "Think Twice").

Shows the cross-model table (models x heuristics: prediction bias on a colour scale,
worse-group performance, threshold, group sizes) with the natural (human) bias as its
own row, the full per-split table with bootstrap intervals, and one bias-vs-threshold
plot per heuristic, all on one shared y-axis. Everything is read from the result's
``details`` (see :func:`spurious.evaluate.prediction_bias.bias_table`); missing parts
are skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from markupsafe import Markup
from matplotlib.figure import Figure

from spurious.report import plots
from spurious.report.components import (
    MISSING,
    Cell,
    Plot,
    figure_block,
    finite,
    format_number,
    html_table,
    metrics_table,
    render_fragment,
    scores_preview,
)
from spurious.report.sections import Section, register_section, result_section
from spurious.results import Result
from spurious.stats.bias_results import BootstrapOptions
from spurious.utils.metric_keys import metric_key

__all__ = [
    "BIAS_SCALE_MIN",
    "HUMAN",
    "bias_color",
    "bias_curve_plot",
    "metric_words",
    "prediction_bias_section",
]

#: Label of the natural-bias row and curve.
HUMAN = "human"

#: The bias colour scale runs from 0 to the table's largest bias, but never to less than
#: this: a table of tiny biases (0.006) stays pale instead of being stretched to full red.
BIAS_SCALE_MIN = 0.1

_LEGEND = """<p class="legend">Each cell: <b>prediction bias</b> (gap between the two
groups' bootstrap intervals, Algorithm 1; 0 when they overlap) and, below it, the mean
{{ metric }} on the <i>worse</i> group. Groups: <i>low</i> = heuristic &le; T,
<i>high</i> = heuristic &gt; T. The <b>human</b> row is the natural bias: the minimum
over annotators scored against the other annotators, at the same threshold. A bias is
only meaningful above the human level. &plusmn; is the Monte-Carlo sd of the bias over
bootstrap seeds: differences smaller than about three of them are resampling noise.
Cell colour follows the bias (scale below).</p>"""


def _num(value: Any, kind: str = "float") -> str:
    return format_number(value, kind)


def bias_color(bias: float | None, vmax: float) -> str:
    """Inline CSS colouring a bias cell on the sequential scale ``[0, vmax]``.

    Parameters
    ----------
    bias : float or None
        The prediction bias; ``None`` gives no colour.
    vmax : float
        The top of the scale (darkest colour).

    Returns
    -------
    str
        ``"background-color:#...;color:#..."`` with a text colour that keeps a readable
        contrast, or ``""``.

    Examples
    --------
    >>> bias_color(0.0, 0.1)
    'background-color:#fff7ec;color:#111827'
    >>> bias_color(None, 0.1)
    ''
    """
    colors = plots.color_scale(bias, vmax)
    return "" if colors is None else f"background-color:{colors[0]};color:{colors[1]}"


def _bias_cell(row: Mapping[str, Any] | None, vmax: float) -> Cell:
    if row is None:
        return Cell(text=MISSING, sort="", numeric=True, css="missing")
    bias = finite(row.get("bias"))
    worse = finite(row.get("worse_performance"))
    sd = finite(row.get("bias_mc_sd"))
    text = render_fragment(
        '{{ b }}{% if sd %}<span class="ci"> &plusmn;{{ sd }}</span>{% endif %}'
        '<br><span class="ci">worse {{ w }}</span>',
        b=_num(bias),
        sd=None if sd is None else _num(sd),
        w=_num(worse),
    )
    title = (
        f"threshold {row.get('threshold')}, n_low {row.get('n_low')}, n_high {row.get('n_high')}"
    )
    return Cell(
        text=text,
        sort="" if bias is None else repr(bias),
        numeric=True,
        title=title,
        css="heat" if bias is not None else "missing",
        style=bias_color(bias, vmax),
    )


def _scale_top(rows: Iterable[Mapping[str, Any] | None]) -> float:
    biases = [finite(r.get("bias")) for r in rows if r is not None]
    return max([b for b in biases if b is not None] + [BIAS_SCALE_MIN])


def _scale_legend(vmax: float, steps: int = 5) -> Markup:
    values = [vmax * i / (steps - 1) for i in range(steps)]
    return render_fragment(
        '<div class="scale-legend" aria-label="colour scale of the bias">'
        '<span class="muted">bias colour:</span>'
        '{% for v, css in items %}<span class="swatch" style="{{ css }}">{{ v }}</span>'
        "{% endfor %}"
        "</div>",
        items=[(_num(v), bias_color(v, vmax)) for v in values],
    )


def _get(metrics: Mapping[str, Any], old: str, metric: str, *names: str) -> Any:
    """``metric/<names>``, or the flat key of a result written before the "/" keys."""
    return metrics.get(metric_key(metric, *names), metrics.get(old))


def metric_words(metric: str) -> str:
    """The per-example score in words, its scale stated for SQuAD's.

    Examples
    --------
    >>> metric_words("em"), metric_words("accuracy")
    ('SQuAD EM (0-1; HF evaluate prints x100)', 'accuracy')
    """
    names = {"em": "SQuAD EM", "f1": "SQuAD F1"}
    return f"{names[metric]} (0-1; HF evaluate prints x100)" if metric in names else metric


def _overview_table(details: Mapping[str, Any], metrics: Mapping[str, Any]) -> Markup:
    table = details.get("table") or []
    models = list(details.get("models") or dict.fromkeys(r.get("model") for r in table))
    heur = list(details.get("heuristics") or dict.fromkeys(r.get("heuristic") for r in table))
    if not table or not heur:
        return render_fragment('<p class="muted">No prediction-bias table recorded.</p>')
    by_key = {(r.get("model"), r.get("heuristic")): r for r in table}
    natural = details.get("natural") or []
    ref = details.get("reference")
    human: dict[Any, Mapping[str, Any] | None] = {}
    for h in heur:
        cand = [r for r in natural if r.get("heuristic") == h]
        human[h] = next(
            (r for r in cand if ref in (r.get("models") or [])), cand[0] if cand else None
        )
    # One scale for every cell, the human row included, so colours compare across cells.
    vmax = _scale_top([*table, *human.values()])
    headers: list[Any] = [
        "model",
        ("overall", "the model's mean score on all examples (0-1)"),
        *heur,
    ]
    rows: list[list[Any]] = []
    for m in models:
        score = str(details.get("metric") or "accuracy")
        row: list[Any] = [m, finite(_get(metrics, f"overall_{m}", score, m))]
        row += [_bias_cell(by_key.get((m, h)), vmax) for h in heur]
        rows.append(row)
    if natural:
        rows.append(
            [Cell(text=HUMAN, css="label"), None, *(_bias_cell(human[h], vmax) for h in heur)]
        )
    if details.get("shared_threshold", True):
        thr_row: list[Any] = [Cell(text="threshold T", css="muted"), None]
        size_row: list[Any] = [Cell(text="n low / high", css="muted"), None]
        for h in heur:
            t = finite(_get(metrics, f"threshold_{h}", "threshold", h))
            thr_row.append(
                Cell(text=f"{t:g}", sort=repr(t), numeric=True) if t is not None else None
            )
            low, high = (_get(metrics, f"{k}_{h}", k, h) for k in ("n_low", "n_high"))
            size_row.append(f"{_num(low, 'int')} / {_num(high, 'int')}")
        rows += [thr_row, size_row]
    return html_table(headers, rows, css="compact bias-table", wide=True) + _scale_legend(vmax)


def _ci(row: Mapping[str, Any], side: str) -> Cell:
    mean = finite(row.get(f"{side}_mean"))
    lo, hi = finite(row.get(f"{side}_ci_low")), finite(row.get(f"{side}_ci_high"))
    ci = f"[{_num(lo)}, {_num(hi)}]" if lo is not None and hi is not None else ""
    return Cell(text=_num(mean), ci=ci, sort="" if mean is None else repr(mean), numeric=True)


def _detail_row(model: Any, r: Mapping[str, Any]) -> list[Any]:
    worse = r.get("worse_group")
    wp = finite(r.get("worse_performance"))
    return [
        model,
        r.get("heuristic"),
        finite(r.get("threshold")),
        finite(r.get("n_low")),
        finite(r.get("n_high")),
        _ci(r, "low"),
        _ci(r, "high"),
        finite(r.get("bias")),
        finite(r.get("margin")),
        f"{worse} ({_num(wp)})" if worse else MISSING,
        r.get("validity") or MISSING,
    ]


def _detail_table(details: Mapping[str, Any]) -> Markup:
    rows: list[list[Any]] = []
    for r in details.get("table") or []:
        rows.append(_detail_row(r.get("model"), r))
    for r in details.get("natural") or []:
        k = r.get("annotator")
        per = (r.get("per_annotator") or {}).get(str(k), {}) if k is not None else {}
        rows.append(
            _detail_row(f"{HUMAN} (annotator {k})", {**per, **r, "heuristic": r.get("heuristic")})
        )
    if not rows:
        return render_fragment('<p class="muted">No rows.</p>')
    headers = [
        "model",
        "heuristic",
        ("T", "threshold: low = heuristic <= T"),
        ("n low", "examples with heuristic <= T"),
        ("n high", "examples with heuristic > T"),
        ("low mean", "mean score of the low group [bootstrap quantiles]"),
        ("high mean", "mean score of the high group [bootstrap quantiles]"),
        ("bias", "max(0, margin)"),
        ("margin", "max(E1_low - E2_high, E2_low - E1_high); negative = overlap"),
        ("worse", "the worse group and its mean score"),
        ("validity", "strict: both groups >= 2 x sample size; relaxed: >= sample size"),
    ]
    return html_table(headers, rows, css="compact", wide=True)


@plots.styled
def bias_curve_plot(
    curve: Mapping[str, Any],
    *,
    heuristic: str,
    metric: str = "score",
    ymax: float | None = None,
) -> str | None:
    """Prediction bias against the candidate threshold, one line per model (+ human).

    Parameters
    ----------
    curve : mapping
        ``details["curves"][heuristic]`` of a ``prediction_bias`` result: ``threshold``,
        ``valid``, ``bias`` (``{model: [...]}``) and ``selected`` (``{model: T}``).
    heuristic, metric : str
        Axis labels.
    ymax : float, optional
        Top of the y-axis; pass the same value to every panel of a report so that equal
        heights mean equal biases. Default: fitted to this curve.

    Returns
    -------
    str or None
        A ``data:`` URI, or ``None`` when there is no finite bias to draw.

    Examples
    --------
    >>> c = {"threshold": [1, 2, 3], "valid": [True, True, False],
    ...      "bias": {"m": [0.0, 0.1, None], "human": [0.0, 0.0, None]}, "selected": {"m": 2}}
    >>> bias_curve_plot(c, heuristic="answer_length", ymax=0.3).startswith("data:image/svg+xml")
    True
    """
    x = plots.to_float_array(curve.get("threshold") or [])
    series = {str(k): plots.to_float_array(v) for k, v in (curve.get("bias") or {}).items()}
    series = {k: v for k, v in series.items() if v.shape == x.shape and np.isfinite(v).any()}
    if x.size == 0 or not series:
        return None
    # Show the thresholds that could be bootstrapped (plus one step each side); the
    # attribute's full range is often far wider (e.g. word distances in the hundreds).
    has = np.zeros(x.shape, dtype=bool)
    for y in series.values():
        has |= np.isfinite(y)
    step = float(np.median(np.diff(x))) if x.size > 1 else 1.0
    lo, hi = float(x[has].min()) - step, float(x[has].max()) + step
    palette = plots.PALETTE
    fig = Figure(figsize=(4.8, 3.2))
    ax = fig.add_subplot()
    valid = np.asarray(curve.get("valid") or [True] * x.size, dtype=bool)
    if valid.shape == x.shape:
        # Shade candidates outside the validity interval (a group < 2 x sample size).
        for xi in x[~valid & (x >= lo) & (x <= hi)]:
            ax.axvspan(xi - step / 2, xi + step / 2, color=palette["grid"], lw=0, zorder=0)
    ax.set_xlim(lo, hi)
    selected = {str(k): finite(v) for k, v in (curve.get("selected") or {}).items()}
    chosen = {t for t in selected.values() if t is not None}
    # A threshold shared by every model is drawn once, in a neutral colour; per-model
    # thresholds take their model's colour.
    if len(chosen) == 1:
        ax.axvline(chosen.pop(), color=palette["text"], ls=":", lw=1.0, label="chosen T")
    for i, (name, y) in enumerate(series.items()):
        if name == HUMAN:
            ax.plot(x, y, color=palette["baseline"], ls="--", lw=1.4, label="human (natural)")
            continue
        color = plots.SERIES_COLORS[i % len(plots.SERIES_COLORS)]
        ax.plot(x, y, color=color, lw=1.5, marker="o", ms=2.5, label=plots.plain(name))
        t = selected.get(name)
        if chosen and t is not None:
            ax.axvline(t, color=color, ls=":", lw=1.0)
    ax.set_xlabel(plots.plain(f"threshold T on {heuristic}"))
    ax.set_ylabel(plots.plain(f"prediction bias ({metric})"))
    top = finite(ymax)
    if top is not None and top > 0:
        ax.set_ylim(0.0, top)
    else:
        ax.set_ylim(bottom=0.0)
    ax.yaxis.grid(True, color=palette["grid"], zorder=0)
    ax.set_axisbelow(True)
    ax.legend(loc="upper left", fontsize=7, frameon=False)
    ax.set_title(plots.plain(heuristic), fontsize=10, loc="left")
    return plots.figure_to_data_uri(fig)


def _shared_ymax(curves: Mapping[str, Any]) -> float:
    """One y-axis top for every panel: the largest bias drawn anywhere, plus headroom."""
    peak = 0.0
    for curve in curves.values():
        if not isinstance(curve, Mapping):
            continue
        for y in (curve.get("bias") or {}).values():
            values = plots.to_float_array(y)
            values = values[np.isfinite(values)]
            if values.size:
                peak = max(peak, float(values.max()))
    # Headroom for the legend; a floor so an all-zero panel still has a visible axis.
    return max(peak * 1.25, 0.01)


def _figures(details: Mapping[str, Any]) -> Markup:
    curves = details.get("curves") or {}
    if not isinstance(curves, Mapping):
        return Markup("")
    metric = str(details.get("metric") or "score")
    ymax = _shared_ymax(curves)
    figures = []
    for h, curve in curves.items():
        figures.append(
            Plot(
                plots.safe_plot(bias_curve_plot, curve, heuristic=str(h), metric=metric, ymax=ymax),
                f"Prediction bias against the threshold on {h}",
                f"{h}: bias at each candidate threshold (dotted: the chosen T; grey: "
                "outside the validity interval; dashed: human).",
            )
        )
    block = figure_block(figures)
    if not block:
        return block
    note = render_fragment(
        '<p class="muted">All panels share one y-axis, from 0 to {{ top }}, so equal heights '
        "mean equal biases.</p>",
        top=f"{ymax:.3g}",
    )
    return note + block


@register_section("prediction_bias")
def prediction_bias_section(result: Result) -> Section:
    """:data:`~spurious.report.sections.SectionRenderer` of ``prediction_bias``.

    Tables and bias-vs-threshold plots.

    Examples
    --------
    >>> import pandas as pd
    >>> row = {"model": "m", "heuristic": "h", "bias": 0.12, "worse_performance": 0.5,
    ...        "threshold": 3.0, "n_low": 900, "n_high": 1100}
    >>> r = Result("prediction_bias", pd.DataFrame({"id": ["a"]}), {"threshold/h": 3.0},
    ...            details={"models": ["m"], "heuristics": ["h"], "table": [row]})
    >>> "0.120" in prediction_bias_section(r).html_body
    True
    """
    details = result.details or {}
    metrics = result.metrics or {}
    metric = metric_words(str(details.get("metric") or result.params.get("metric") or "score"))
    how = (
        "Thresholds chosen on <b>{{ ref }}</b> and shared by every model."
        if details.get("shared_threshold", True)
        else "Each model is split at its own best threshold."
    )
    body = render_fragment(
        '{% for w in warns %}<p class="callout warn">{{ w }}</p>{% endfor %}<p>'
        + how
        + """ Bootstrap: {{ trials }} trials of {{ size }} examples per group,
intervals between the {{ q }} quantiles of the bootstrap means.</p>
<h4>Prediction bias per model and heuristic ({{ metric }})</h4>
{{ legend }}
{{ overview }}
{{ figs }}
<h4>All splits</h4>
{{ detail }}""",
        warns=[str(w) for w in details.get("warnings") or []],
        ref=details.get("reference"),
        trials=result.params.get("n_trials", "?"),
        size=result.params.get("sample_size", "?"),
        q=_quantile_words(result.params.get("quantiles") or BootstrapOptions().quantiles),
        metric=metric,
        legend=render_fragment(_LEGEND, metric=metric),
        overview=_overview_table(details, metrics),
        figs=_figures(details),
        detail=_detail_table(details),
    )
    return result_section(
        result,
        body,
        title="prediction_bias — performance gaps along heuristic splits",
        extra={
            "All metrics": metrics_table(metrics),
            "Per-example scores (first rows)": scores_preview(result.scores),
        },
    )


def _quantile_words(q: Any) -> str:
    """``(0.025, 0.975)`` -> ``"2.5% and 97.5%"`` (the analysis uses the default pair)."""
    lo, hi = (float(x) for x in q)
    return f"{lo:.1%} and {hi:.1%}".replace(".0%", "%")
