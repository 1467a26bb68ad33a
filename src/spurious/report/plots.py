"""Static plots for the HTML report, returned as self-contained ``data:`` URIs.

Figures are built with :class:`matplotlib.figure.Figure` directly, never through
``matplotlib.pyplot``: pyplot selects a process-wide backend and keeps a registry of
open figures, which a library must not do behind its caller's back. A bare ``Figure``
renders through ``savefig`` without any backend being selected.

Plots are written as SVG with text converted to glyph outlines, then embedded as
``<img src="data:image/svg+xml;base64,...">``. An ``<img>`` keeps the SVG isolated from
the page (no clashing element ids, no scripts), and outlined glyphs mean no font has to
be present where the report is opened.
"""

from __future__ import annotations

import base64
import functools
import io
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

logger = logging.getLogger(__name__)

__all__ = [
    "PALETTE",
    "BarSpec",
    "accuracy_plot",
    "figure_to_data_uri",
    "score_histogram",
]

#: Colours shared by every report plot (and echoed by the report's CSS).
PALETTE = {
    "full": "#1f4e79",
    "partial": "#d9822b",
    "baseline": "#6b7280",
    "flagged": "#b42318",
    "neutral": "#5b8db8",
    "grid": "#e5e7eb",
    "text": "#1f2937",
}

# Fixed salt and no date: the same data gives byte-identical SVG, so reports can be diffed.
_SAVE_RC = {"svg.hashsalt": "spurious-report", "svg.fonttype": "path"}

# Style is read when axes are created, so it must be active while a plot is built.
_STYLE_RC = {
    "font.size": 9.0,
    "axes.edgecolor": "#9ca3af",
    "axes.labelcolor": PALETTE["text"],
    "xtick.color": PALETTE["text"],
    "ytick.color": PALETTE["text"],
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
}

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _styled(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """Build the plot under the report style; ``rc_context`` restores the caller's rcParams."""

    @functools.wraps(func)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with matplotlib.rc_context(_STYLE_RC):
            return func(*args, **kwargs)

    return wrapper


def _plain(text: object) -> str:
    """Make ``text`` safe to hand to matplotlib: ``$`` would otherwise start mathtext."""
    return str(text).replace("$", r"\$")


def _finite(value: object) -> float | None:
    """``value`` as a float, or ``None`` when missing, non-numeric or non-finite."""
    try:
        out = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def figure_to_data_uri(fig: Figure, fmt: str = "svg") -> str:
    """Render ``fig`` into a base64 ``data:`` URI suitable for an ``<img src>``.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        A figure created with ``Figure()`` (no pyplot needed).
    fmt : {"svg", "png"}
        Output format. SVG is crisp at any zoom; PNG suits plots with many points.

    Returns
    -------
    str
        ``data:image/svg+xml;base64,...`` or ``data:image/png;base64,...``.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> fig = Figure(figsize=(2, 1))
    >>> _ = fig.add_subplot().plot([0, 1], [1, 0])
    >>> figure_to_data_uri(fig).startswith("data:image/svg+xml;base64,")
    True
    """
    mime = {"svg": "image/svg+xml", "png": "image/png"}.get(fmt)
    if mime is None:
        raise ValueError(f"fmt must be 'svg' or 'png'; got {fmt!r}.")
    buf = io.BytesIO()
    # rc_context restores the caller's rcParams afterwards; nothing leaks into the process.
    with matplotlib.rc_context(_SAVE_RC):
        metadata = {"Date": None} if fmt == "svg" else {"Software": None}
        fig.savefig(buf, format=fmt, bbox_inches="tight", metadata=metadata, dpi=144)
    return f"data:{mime};base64,{base64.b64encode(buf.getvalue()).decode('ascii')}"


@dataclass(frozen=True)
class BarSpec:
    """One bar of :func:`accuracy_plot`.

    Attributes
    ----------
    label : str
        Tick label (for example the condition name).
    value : float or None
        Bar height; ``None`` draws no bar but keeps the slot.
    low, high : float or None
        Confidence interval; drawn as an error bar when both are finite.
    kind : {"full", "partial"}
        Colour group.
    """

    label: str
    value: float | None
    low: float | None = None
    high: float | None = None
    kind: str = "partial"


@_styled
def accuracy_plot(
    bars: Sequence[BarSpec],
    *,
    baseline: float | None = None,
    baseline_label: str = "majority baseline",
    ylabel: str = "accuracy",
    title: str | None = None,
) -> str | None:
    """Bar chart of accuracies with CI error bars and a dashed baseline line.

    Parameters
    ----------
    bars : sequence of BarSpec
        One bar per condition, drawn in order.
    baseline : float, optional
        Drawn as a dashed horizontal line (for example the majority-class accuracy).
    baseline_label, ylabel, title : str
        Legend entry, y axis label and optional title.

    Returns
    -------
    str or None
        A ``data:`` URI, or ``None`` when no bar has a finite value.

    Examples
    --------
    >>> uri = accuracy_plot([BarSpec("full", 0.8, 0.75, 0.85, "full"),
    ...                      BarSpec("hypothesis_only", 0.6, 0.55, 0.65)], baseline=0.34)
    >>> uri.startswith("data:image/svg+xml")
    True
    """
    values = [_finite(b.value) for b in bars]
    if not bars or all(v is None for v in values):
        return None
    baseline = _finite(baseline)
    width = max(4.2, 1.1 * len(bars) + 1.6)
    fig = Figure(figsize=(width, 3.2))
    ax = fig.add_subplot()
    x = np.arange(len(bars))
    heights = [v if v is not None else 0.0 for v in values]
    colors = [PALETTE["full"] if b.kind == "full" else PALETTE["partial"] for b in bars]
    ax.bar(x, heights, width=0.62, color=colors, zorder=2)
    for i, (bar, value) in enumerate(zip(bars, values, strict=True)):
        low, high = _finite(bar.low), _finite(bar.high)
        if value is None:
            ax.text(i, 0.02, "n/a", ha="center", va="bottom", color=PALETTE["baseline"])
            continue
        top = value
        if low is not None and high is not None:
            # A bootstrap interval need not contain the point estimate; clip so the
            # error bar never gets a negative length.
            yerr = [[max(value - low, 0.0)], [max(high - value, 0.0)]]
            ax.errorbar(
                i, value, yerr=yerr, fmt="none", ecolor="#111827", elinewidth=1.1,
                capsize=4, zorder=3,
            )  # fmt: skip
            top = max(top, high)
        ax.text(i, top + 0.02, f"{value:.3f}", ha="center", va="bottom", fontsize=8)
    if baseline is not None:
        ax.axhline(
            baseline, color=PALETTE["baseline"], linestyle="--", linewidth=1.3, zorder=4,
            label=f"{_plain(baseline_label)} ({baseline:.3f})",
        )  # fmt: skip
    ax.set_xticks(x)
    ax.set_xticklabels([_plain(b.label) for b in bars], rotation=0 if len(bars) <= 4 else 20)
    finite = [v for v in values if v is not None] + ([baseline] if baseline is not None else [])
    highs = [h for h in (_finite(b.high) for b in bars) if h is not None]
    upper = max([*finite, *highs, 0.0])
    ax.set_ylim(0.0, 1.05 if upper <= 1.0 else upper * 1.12)
    ax.set_ylabel(_plain(ylabel))
    ax.yaxis.grid(True, color=PALETTE["grid"], zorder=0)
    ax.set_axisbelow(True)
    handles = [
        _legend_patch(PALETTE["full"], "full input"),
        _legend_patch(PALETTE["partial"], "partial input"),
    ]
    kinds = {b.kind for b in bars}
    handles = [h for h, k in zip(handles, ("full", "partial"), strict=True) if k in kinds]
    line_handles, _ = ax.get_legend_handles_labels()
    ax.legend(handles=handles + line_handles, loc="upper right", fontsize=8, frameon=False)
    if title:
        ax.set_title(_plain(title), fontsize=10, loc="left")
    return figure_to_data_uri(fig)


def _legend_patch(color: str, label: str) -> object:
    from matplotlib.patches import Patch

    return Patch(facecolor=color, label=label)


@_styled
def score_histogram(
    scores: Sequence[float] | np.ndarray,
    *,
    flagged: Sequence[bool] | np.ndarray | None = None,
    bins: int = 20,
    value_range: tuple[float, float] | None = (0.0, 1.0),
    xlabel: str = "score",
    title: str | None = None,
) -> str | None:
    """Histogram of per-example scores, stacked by a boolean flag when given.

    Parameters
    ----------
    scores : array-like of float
        Non-finite values are dropped.
    flagged : array-like of bool, optional
        Same length as ``scores``; flagged examples are stacked in a warning colour.
    bins : int
        Number of bins.
    value_range : (float, float) or None
        Histogram range; ``None`` uses the data range.
    xlabel, title : str
        Axis label and optional title.

    Returns
    -------
    str or None
        A ``data:`` URI, or ``None`` when there is no finite score.

    Examples
    --------
    >>> score_histogram([0.1, 0.5, 0.9], flagged=[False, False, True]).startswith("data:")
    True
    """
    values = _to_float_array(scores)
    mask = np.isfinite(values)
    if not mask.any():
        return None
    flags = None
    if flagged is not None:
        flags = np.asarray(flagged, dtype=bool)
        if flags.shape != values.shape:
            logger.warning(
                "score_histogram: 'flagged' has shape %s but scores %s; ignoring the flags.",
                flags.shape,
                values.shape,
            )
            flags = None
    if value_range is not None:
        lo, hi = value_range
        vmin, vmax = float(values[mask].min()), float(values[mask].max())
        value_range = (min(lo, vmin), max(hi, vmax))
    fig = Figure(figsize=(4.6, 3.2))
    ax = fig.add_subplot()
    if flags is None:
        ax.hist(values[mask], bins=bins, range=value_range, color=PALETTE["neutral"], zorder=2)
    else:
        ax.hist(
            [values[mask & ~flags], values[mask & flags]],
            bins=bins,
            range=value_range,
            stacked=True,
            color=[PALETTE["neutral"], PALETTE["flagged"]],
            label=[
                f"not flagged ({int((mask & ~flags).sum())})",
                f"flagged ({int((mask & flags).sum())})",
            ],
            zorder=2,
        )
        ax.legend(loc="upper left", fontsize=8, frameon=False)
    ax.set_xlabel(_plain(xlabel))
    ax.set_ylabel("examples")
    ax.yaxis.grid(True, color=PALETTE["grid"], zorder=0)
    ax.set_axisbelow(True)
    if title:
        ax.set_title(_plain(title), fontsize=10, loc="left")
    return figure_to_data_uri(fig)


def _to_float_array(values: Sequence[object] | np.ndarray) -> np.ndarray:
    """Coerce ``values`` to a 1-D float array; entries that are not numbers become NaN."""
    series = pd.to_numeric(pd.Series(np.asarray(values, dtype=object).ravel()), errors="coerce")
    return series.to_numpy(dtype=float, na_value=np.nan)
