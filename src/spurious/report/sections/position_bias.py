"""Report section of ``position_bias`` results (letter bias on multiple-choice items).

Shows each model's accuracy against chance with intervals and its letter bias with the
test; a grouped bar chart of the predicted-letter shares of every model beside the gold
shares; and accuracy when the gold sits at each position, as a plot and a models x
letters table. Everything is read from the result's ``details`` (see
:mod:`spurious.evaluate.position_bias`); missing parts are skipped. Model names and
letters come from the user's files and are escaped like any other text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    render_fragment,
)
from spurious.report.sections import Section, register_section, result_section
from spurious.report.tables import Header
from spurious.results import Result

__all__ = ["accuracy_by_position_plot", "letter_share_plot", "position_bias_section"]


def _value_cell(value: Any, ci: Any = None) -> Cell | None:
    v = finite(value)
    if v is None:
        return None
    text = ""
    if isinstance(ci, Sequence) and len(ci) == 2:
        lo, hi = finite(ci[0]), finite(ci[1])
        if lo is not None and hi is not None:
            text = f"[{format_number(lo, 'float')}, {format_number(hi, 'float')}]"
    return Cell(text=format_number(v, "float"), ci=text, sort=repr(v), numeric=True)


def _models(details: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [r for r in details.get("per_model") or [] if isinstance(r, Mapping)]


def _series(record: Mapping[str, Any], key: str, n: int) -> np.ndarray:
    values = plots.to_float_array(record.get(key) or [])
    return values if values.shape == (n,) else np.full(n, np.nan)


def _errors(record: Mapping[str, Any], key: str, mid: np.ndarray) -> np.ndarray | None:
    """Error-bar lengths (2, n) from ``[[low, high], ...]``; None when missing."""
    ci = record.get(f"{key}_ci") or []
    if len(ci) != len(mid):
        return None
    lo = plots.to_float_array([c[0] if isinstance(c, Sequence) else None for c in ci])
    hi = plots.to_float_array([c[1] if isinstance(c, Sequence) else None for c in ci])
    err = np.vstack([mid - lo, hi - mid])
    return np.where(np.isfinite(err), np.clip(err, 0, None), 0.0)


@plots.styled
def letter_share_plot(details: Mapping[str, Any]) -> str | None:
    """Grouped bars per letter: the gold share, then each model's predicted share (95% CI).

    Examples
    --------
    >>> d = {"letters": ["A", "B"], "per_model": [{"model": "m", "has_letters": True,
    ...      "pred_share": [0.9, 0.1], "gold_share": [0.5, 0.5],
    ...      "pred_share_ci": [[0.8, 1.0], [0.0, 0.2]]}]}
    >>> letter_share_plot(d).startswith("data:image/svg+xml")
    True
    """
    letters = [str(x) for x in details.get("letters") or []]
    models = [r for r in _models(details) if r.get("has_letters")]
    if not letters or not models:
        return None
    n = len(letters)
    gold = _series(models[0], "gold_share", n)
    width = 0.8 / (len(models) + 1)
    x = np.arange(n)
    fig = Figure(figsize=(max(5.0, 0.9 * n + 2.5), 3.2))
    ax = fig.add_subplot()
    ax.bar(x, np.nan_to_num(gold), width, color=plots.PALETTE["baseline"], label="gold")
    for i, r in enumerate(models, start=1):
        share = _series(r, "pred_share", n)
        ax.bar(
            x + i * width,
            np.nan_to_num(share),
            width,
            yerr=_errors(r, "pred_share", share),
            color=plots.SERIES_COLORS[(i - 1) % len(plots.SERIES_COLORS)],
            error_kw={"lw": 0.8, "capsize": 2},
            label=plots.plain(r.get("model")),
        )
    ax.set_xticks(x + width * len(models) / 2, [plots.plain(lab) for lab in letters])
    ax.set_xlabel("answer letter")
    ax.set_ylabel("share of items")
    # Room above the tallest bar (and its interval), never past a share of 1.
    top = max([float(np.nanmax(np.r_[gold, 0.0]))] + [_top(r, n) for r in models])
    ax.set_ylim(0.0, min(1.0, max(0.1, 1.15 * top)))
    ax.yaxis.grid(True, color=plots.PALETTE["grid"], zorder=0)
    ax.set_axisbelow(True)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    fig.tight_layout()
    return plots.figure_to_data_uri(fig)


def _top(record: Mapping[str, Any], n: int) -> float:
    """The highest predicted share or interval bound of a model (0 when none)."""
    values = _series(record, "pred_share", n)
    for bound in record.get("pred_share_ci") or []:
        if isinstance(bound, Sequence) and len(bound) == 2:
            values = np.r_[values, plots.to_float_array([bound[1]])]
    values = values[np.isfinite(values)]
    return float(values.max()) if values.size else 0.0


@plots.styled
def accuracy_by_position_plot(
    details: Mapping[str, Any], chance: float | None = None
) -> str | None:
    """Accuracy per gold position, one line per model (95% CI), chance dashed.

    Examples
    --------
    >>> d = {"letters": ["A", "B"], "per_model": [{"model": "m",
    ...      "accuracy_by_gold": [0.9, 0.4], "accuracy_by_gold_ci": [[0.8, 1.0], [0.3, 0.5]]}]}
    >>> accuracy_by_position_plot(d, 0.5).startswith("data:image/svg+xml")
    True
    """
    letters = [str(x) for x in details.get("letters") or []]
    models = _models(details)
    if not letters or not models:
        return None
    n = len(letters)
    x = np.arange(n)
    fig = Figure(figsize=(max(5.0, 0.7 * n + 2.5), 3.2))
    ax = fig.add_subplot()
    drawn = False
    for i, r in enumerate(models):
        acc = _series(r, "accuracy_by_gold", n)
        if not np.isfinite(acc).any():
            continue
        ax.errorbar(
            x + (i - (len(models) - 1) / 2) * 0.06,
            acc,
            yerr=_errors(r, "accuracy_by_gold", acc),
            color=plots.SERIES_COLORS[i % len(plots.SERIES_COLORS)],
            marker="o",
            ms=3,
            lw=1.2,
            capsize=2,
            label=plots.plain(r.get("model")),
        )
        drawn = True
    if not drawn:
        return None
    if chance is not None:
        ax.axhline(chance, color=plots.PALETTE["baseline"], ls="--", lw=1.0, label="chance")
    ax.set_xticks(x, [plots.plain(lab) for lab in letters])
    ax.set_xlabel("gold answer letter")
    ax.set_ylabel("accuracy")
    ax.set_ylim(0.0, 1.05)
    ax.yaxis.grid(True, color=plots.PALETTE["grid"], zorder=0)
    ax.set_axisbelow(True)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    fig.tight_layout()
    return plots.figure_to_data_uri(fig)


def _model_table(details: Mapping[str, Any], chance: float | None) -> Markup:
    rows = []
    for r in _models(details):
        letters = bool(r.get("has_letters"))
        p = finite(r.get("p_value"))
        rows.append(
            [
                str(r.get("model")),
                _value_cell(r.get("accuracy"), r.get("accuracy_ci")),
                chance,
                _value_cell(r.get("letter_bias"), r.get("letter_bias_ci")) if letters else None,
                _value_cell(r.get("tvd"), r.get("tvd_ci")) if letters else None,
                Cell(text=f"{p:.2g}", sort=repr(p), numeric=True) if p is not None else None,
                str(r.get("overpredicted") or MISSING) if letters else MISSING,
                _value_cell(r.get("position_spread"), r.get("position_spread_ci")),
            ]
        )
    if not rows:
        return render_fragment('<p class="muted">No model was judged.</p>')
    headers: list[Header] = [
        "model",
        ("accuracy", "share of items answered right [bootstrap 95% interval]"),
        ("chance", "mean of 1/k over the items"),
        ("letter bias", "largest |predicted share - gold share| over letters [simultaneous 95%]"),
        ("TVD", "total-variation distance of predicted and gold letter shares"),
        ("p", "chi-square of predicted vs gold letters within each option count"),
        ("over-predicted", "the letter the model answers most in excess of the gold"),
        ("position spread", "best minus worst accuracy by gold position"),
    ]
    return html_table(headers, rows, css="compact")


def _letter_table(details: Mapping[str, Any], key: str, with_gold: bool) -> Markup:
    letters = [str(x) for x in details.get("letters") or []]
    models = _models(details)
    if not letters or not models:
        return Markup("")
    rows: list[list[Any]] = []
    if with_gold:
        gold = models[0].get("gold_share") or []
        rows.append(
            [Cell(text="gold", css="label"), *(_value_cell(g) for g in gold[: len(letters)])]
        )
    for r in models:
        values = r.get(key) or [None] * len(letters)
        cis = r.get(f"{key}_ci") or [None] * len(letters)
        rows.append(
            [str(r.get("model")), *(_value_cell(v, c) for v, c in zip(values, cis, strict=False))]
        )
    counts = models[0].get("gold_count") or []
    if not with_gold and counts:
        rows.append([Cell(text="gold items", css="muted"), *counts[: len(letters)]])
    return html_table(["model", *letters], rows, css="compact", wide=True)


@register_section("position_bias")
def position_bias_section(result: Result) -> Section:
    """:data:`~spurious.report.sections.SectionRenderer` of ``position_bias``.

    Examples
    --------
    >>> import pandas as pd
    >>> rec = {"model": "<m>", "has_letters": True, "accuracy": 0.5, "accuracy_ci": [0.4, 0.6],
    ...        "letter_bias": 0.3, "letter_bias_ci": [0.2, 0.4], "p_value": 0.001,
    ...        "pred_share": [0.8, 0.2], "gold_share": [0.5, 0.5], "overpredicted": "A"}
    >>> r = Result("position_bias", pd.DataFrame({"id": ["a"]}), {"chance": 0.5},
    ...            details={"letters": ["A", "B"], "per_model": [rec]})
    >>> html = position_bias_section(r).html_body
    >>> "&lt;m&gt;" in html and "<m>" not in html
    True
    """
    details = result.details or {}
    chance = finite((result.metrics or {}).get("chance"))
    figures = figure_block(
        [
            Plot(
                plots.safe_plot(letter_share_plot, details),
                "Predicted-letter shares of each model beside the gold-letter shares",
                "Share of items per answer letter: gold (grey) and each model's answers, "
                "with 95% bootstrap intervals.",
            ),
            Plot(
                plots.safe_plot(accuracy_by_position_plot, details, chance),
                "Accuracy of each model by the gold answer's letter",
                "Accuracy on the items whose gold is each letter (95% intervals); dashed: chance.",
            ),
        ]
    )
    body = render_fragment(
        """<p>A model with a letter bias answers some letter more often than the gold
answers sit there. The letter bias is the largest gap between a model's predicted-letter
share and the gold share; its test compares the predicted letters with the gold letters
within the items of each option count ({{ test }}).</p>
<h4>Accuracy and letter bias per model</h4>
{{ models }}
{{ figs }}
<h4>Predicted-letter shares (models x letters)</h4>
{{ shares }}
<h4>Accuracy by gold position</h4>
{{ by_gold }}""",
        test=str(details.get("test") or "chi-square"),
        models=_model_table(details, chance),
        figs=figures,
        shares=_letter_table(details, "pred_share", with_gold=True),
        by_gold=_letter_table(details, "accuracy_by_gold", with_gold=False),
    )
    return result_section(result, body, title="Position (letter) bias")
