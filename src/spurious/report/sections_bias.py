"""Report section for ``prediction_bias`` results (paper 001, "Think Twice").

Shows the cross-model table (models x heuristics: prediction bias, worse-group
performance, threshold, group sizes) with the natural (human) bias as its own row, the
full per-split table with bootstrap intervals, and one bias-vs-threshold plot per
heuristic. Everything is read from the result's ``details`` (see
:func:`spurious.evaluate.prediction_bias.bias_table`); missing parts are skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np
from markupsafe import Markup

from spurious.report import plots
from spurious.report.sections import (
    _SUMMARY,
    Cell,
    Section,
    _as_float,
    _params_and_provenance,
    format_number,
    html_table,
    metrics_table,
    register_section,
    render_fragment,
    scores_preview,
)
from spurious.results import DetectorResult

logger = logging.getLogger(__name__)

__all__ = ["bias_curve_plot", "prediction_bias_section"]

#: Label of the natural-bias row and curve.
HUMAN = "human"

_LEGEND = """<p class="legend">Each cell: <b>prediction bias</b> (gap between the two
groups' bootstrap intervals, Algorithm 1; 0 when they overlap) and, below it, the mean
{{ metric }} on the <i>worse</i> group. Groups: <i>low</i> = heuristic &le; T,
<i>high</i> = heuristic &gt; T. The <b>human</b> row is the natural bias: the minimum
over annotators scored against the other annotators, at the same threshold. A bias is
only meaningful above the human level.</p>"""


def _num(value: Any, kind: str = "float") -> str:
    return format_number(value, kind)


def _bias_cell(row: Mapping[str, Any] | None) -> Cell:
    if row is None:
        return Cell(text="—", sort="", numeric=True, css="missing")
    bias = _as_float(row.get("bias"))
    worse = _as_float(row.get("worse_performance"))
    text = render_fragment(
        '{{ b }}<br><span class="ci">worse {{ w }}</span>', b=_num(bias), w=_num(worse)
    )
    title = (
        f"threshold {row.get('threshold')}, n_low {row.get('n_low')}, n_high {row.get('n_high')}"
    )
    return Cell(
        text=text,
        sort="" if bias is None else repr(bias),
        numeric=True,
        title=title,
        css="" if bias is not None else "missing",
    )


def _overview_table(details: Mapping[str, Any], metrics: Mapping[str, Any]) -> Markup:
    table = details.get("table") or []
    models = list(details.get("models") or dict.fromkeys(r.get("model") for r in table))
    heur = list(details.get("heuristics") or dict.fromkeys(r.get("heuristic") for r in table))
    if not table or not heur:
        return render_fragment('<p class="muted">No prediction-bias table recorded.</p>')
    by_key = {(r.get("model"), r.get("heuristic")): r for r in table}
    shared = bool(details.get("shared_threshold", True))
    headers: list[Any] = [
        "model",
        ("overall", "the model's mean score on all examples"),
        *heur,
    ]
    rows: list[list[Any]] = []
    for m in models:
        row: list[Any] = [m, _as_float(metrics.get(f"overall_{m}"))]
        row += [_bias_cell(by_key.get((m, h))) for h in heur]
        rows.append(row)
    natural = details.get("natural") or []
    if natural:
        ref = details.get("reference")
        nat_row: list[Any] = [Cell(text=HUMAN, css="label"), None]
        for h in heur:
            cand = [r for r in natural if r.get("heuristic") == h]
            pick = next(
                (r for r in cand if ref in (r.get("models") or [])), cand[0] if cand else None
            )
            nat_row.append(_bias_cell(pick))
        rows.append(nat_row)
    if shared:
        thr_row: list[Any] = [Cell(text="threshold T", css="muted"), None]
        size_row: list[Any] = [Cell(text="n low / high", css="muted"), None]
        for h in heur:
            t = _as_float(metrics.get(f"threshold_{h}"))
            thr_row.append(
                Cell(text=f"{t:g}", sort=repr(t), numeric=True) if t is not None else None
            )
            size_row.append(
                f"{_num(metrics.get(f'n_low_{h}'), 'int')} / {_num(metrics.get(f'n_high_{h}'), 'int')}"
            )
        rows += [thr_row, size_row]
    return html_table(headers, rows, css="compact", wide=True)


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


def _ci(row: Mapping[str, Any], side: str) -> Cell:
    mean = _as_float(row.get(f"{side}_mean"))
    lo, hi = _as_float(row.get(f"{side}_ci_low")), _as_float(row.get(f"{side}_ci_high"))
    ci = f"[{_num(lo)}, {_num(hi)}]" if lo is not None and hi is not None else ""
    return Cell(text=_num(mean), ci=ci, sort="" if mean is None else repr(mean), numeric=True)


def _detail_row(model: Any, r: Mapping[str, Any]) -> list[Any]:
    worse = r.get("worse_group")
    wp = _as_float(r.get("worse_performance"))
    return [
        model,
        r.get("heuristic"),
        _as_float(r.get("threshold")),
        _as_float(r.get("n_low")),
        _as_float(r.get("n_high")),
        _ci(r, "low"),
        _ci(r, "high"),
        _as_float(r.get("bias")),
        _as_float(r.get("margin")),
        f"{worse} ({_num(wp)})" if worse else "—",
        r.get("validity") or "—",
    ]


@plots._styled
def bias_curve_plot(
    curve: Mapping[str, Any], *, heuristic: str, metric: str = "score"
) -> str | None:
    """Prediction bias against the candidate threshold, one line per model (+ human).

    Parameters
    ----------
    curve : mapping
        ``details["curves"][heuristic]`` of a ``prediction_bias`` result: ``threshold``,
        ``valid``, ``bias`` (``{model: [...]}``) and ``selected`` (``{model: T}``).
    heuristic, metric : str
        Axis labels.

    Returns
    -------
    str or None
        A ``data:`` URI, or ``None`` when there is no finite bias to draw.

    Examples
    --------
    >>> c = {"threshold": [1, 2, 3], "valid": [True, True, False],
    ...      "bias": {"m": [0.0, 0.1, None], "human": [0.0, 0.0, None]}, "selected": {"m": 2}}
    >>> bias_curve_plot(c, heuristic="answer_length").startswith("data:image/svg+xml")
    True
    """
    from matplotlib.figure import Figure

    x = plots._to_float_array(curve.get("threshold") or [])
    series = {str(k): plots._to_float_array(v) for k, v in (curve.get("bias") or {}).items()}
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
    fig = Figure(figsize=(4.8, 3.2))
    ax = fig.add_subplot()
    valid = np.asarray(curve.get("valid") or [True] * x.size, dtype=bool)
    if valid.shape == x.shape:
        # Shade candidates outside the validity interval (a group < 2 x sample size).
        for xi in x[~valid & (x >= lo) & (x <= hi)]:
            ax.axvspan(xi - step / 2, xi + step / 2, color=plots.PALETTE["grid"], lw=0, zorder=0)
    ax.set_xlim(lo, hi)
    colors = ["#1f4e79", "#d9822b", "#2e7d32", "#7b1fa2", "#00838f", "#c62828", "#5d4037"]
    selected = curve.get("selected") or {}
    for i, (name, y) in enumerate(series.items()):
        if name == HUMAN:
            ax.plot(x, y, color=plots.PALETTE["baseline"], ls="--", lw=1.4, label="human (natural)")
            continue
        color = colors[i % len(colors)]
        ax.plot(x, y, color=color, lw=1.5, marker="o", ms=2.5, label=plots._plain(name))
        t = plots._finite(selected.get(name))
        if t is not None:
            ax.axvline(t, color=color, ls=":", lw=1.0)
    ax.set_xlabel(plots._plain(f"threshold T on {heuristic}"))
    ax.set_ylabel(plots._plain(f"prediction bias ({metric})"))
    ax.set_ylim(bottom=0.0)
    ax.yaxis.grid(True, color=plots.PALETTE["grid"], zorder=0)
    ax.set_axisbelow(True)
    ax.legend(loc="best", fontsize=7, frameon=False)
    ax.set_title(plots._plain(heuristic), fontsize=10, loc="left")
    return plots.figure_to_data_uri(fig)


def _plots(details: Mapping[str, Any]) -> Markup:
    curves = details.get("curves") or {}
    metric = str(details.get("metric") or "score")
    figures: list[tuple[str, str, str]] = []
    for h, curve in curves.items():
        try:
            uri = bias_curve_plot(curve, heuristic=str(h), metric=metric)
        except Exception:  # a plot is decoration; the tables carry the numbers
            logger.exception("prediction_bias: curve plot for %s failed", h)
            uri = None
        if uri:
            figures.append(
                (
                    uri,
                    f"Prediction bias against the threshold on {h}",
                    f"{h}: bias at each candidate threshold (dotted: the chosen T; grey: "
                    "outside the validity interval; dashed: human).",
                )
            )
    if not figures:
        return Markup("")
    return render_fragment(
        """<div class="figures">{% for uri, alt, cap in figures %}
<figure><img src="{{ uri }}" alt="{{ alt }}"><figcaption>{{ cap }}</figcaption></figure>
{% endfor %}</div>""",
        figures=figures,
    )


@register_section("prediction_bias")
def prediction_bias_section(result: DetectorResult) -> Section:
    """Section for ``prediction_bias`` results: tables and bias-vs-threshold plots.

    Parameters
    ----------
    result : DetectorResult

    Returns
    -------
    Section

    Examples
    --------
    >>> import pandas as pd
    >>> row = {"model": "m", "heuristic": "h", "bias": 0.12, "worse_performance": 0.5,
    ...        "threshold": 3.0, "n_low": 900, "n_high": 1100}
    >>> r = DetectorResult("prediction_bias", pd.DataFrame({"id": ["a"]}), {"threshold_h": 3.0},
    ...                    details={"models": ["m"], "heuristics": ["h"], "table": [row]})
    >>> "0.120" in prediction_bias_section(r).html_body
    True
    """
    details = result.details or {}
    metrics = result.metrics or {}
    metric = str(details.get("metric") or result.params.get("metric") or "score")
    ref = details.get("reference")
    how = (
        "Thresholds chosen on <b>{{ ref }}</b> and shared by every model."
        if details.get("shared_threshold", True)
        else "Each model is split at its own best threshold."
    )
    body = render_fragment(
        _SUMMARY
        + "<p>"
        + how
        + """ Bootstrap: {{ trials }} trials of {{ size }} examples per group,
quantiles {{ q }}.</p>
<h4>Prediction bias per model and heuristic ({{ metric }})</h4>
{{ legend }}
{{ overview }}
{{ figs }}
<h4>All splits</h4>
{{ detail }}
{{ more }}""",
        s=result.summary,
        ref=ref,
        trials=result.params.get("n_trials", "?"),
        size=result.params.get("sample_size", "?"),
        q=result.params.get("quantiles", "?"),
        metric=metric,
        legend=render_fragment(_LEGEND, metric=metric),
        overview=_overview_table(details, metrics),
        figs=_plots(details),
        detail=_detail_table(details),
        more=_params_and_provenance(
            result,
            {
                "All metrics": metrics_table(metrics),
                "Per-example scores (first rows)": scores_preview(result.scores),
            },
        ),
    )
    return Section(
        title="prediction_bias — performance gaps along heuristic splits",
        html_body=body,
        summary=result.summary,
    )
