"""Plot helpers and the generic plots of the HTML report, as self-contained ``data:`` URIs.

Figures are built with :class:`matplotlib.figure.Figure` directly, never through
``matplotlib.pyplot``: pyplot selects a process-wide backend and keeps a registry of
open figures, which a library must not do behind its caller's back. A bare ``Figure``
renders through ``savefig`` without any backend being selected.

Plots are written as SVG with text converted to glyph outlines, then embedded as
``<img src="data:image/svg+xml;base64,...">``. An ``<img>`` keeps the SVG isolated from
the page (no clashing element ids, no scripts), and outlined glyphs mean no font has to
be present where the report is opened.

A section's own plot is a function decorated with :func:`styled` that builds a
``Figure``, labels it with :func:`plain` text and returns :func:`figure_to_data_uri`;
plots specific to one analysis live in that analysis' section module.

Examples
--------
>>> from matplotlib.figure import Figure
>>> @styled
... def line(ys):
...     fig = Figure(figsize=(2, 1))
...     fig.add_subplot().plot(ys, color=PALETTE["full"])
...     return figure_to_data_uri(fig)
>>> line([0, 1, 0]).startswith("data:image/svg+xml;base64,")
True
"""

from __future__ import annotations

import base64
import functools
import io
import logging
import re
import struct
from collections.abc import Callable, Sequence
from typing import ParamSpec, TypeVar

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from spurious.report.formatting import as_flags, finite
from spurious.report.legends import place_legends

logger = logging.getLogger(__name__)

__all__ = [
    "PALETTE",
    "SERIES_COLORS",
    "color_scale",
    "contrast_ratio",
    "figure_to_data_uri",
    "finite",
    "image_css_size",
    "legend_patch",
    "plain",
    "safe_plot",
    "score_column_histogram",
    "score_histogram",
    "styled",
    "to_float_array",
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

#: Line colours for plots with one series per model (distinct in hue and lightness).
SERIES_COLORS = ("#1f4e79", "#d9822b", "#2e7d32", "#7b1fa2", "#00838f", "#c62828", "#5d4037")

#: Resolution of PNG plots; SVG plots are measured in points (72 per inch).
SAVE_DPI = 144

# CSS pixels per inch at which plots are shown: every plot's text at the same size,
# however large its figure (9 pt = 13.75 px, the smallest labels, 7 pt, = 10.7 px).
_CSS_DPI = 110

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


def styled(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """Decorator: build the plot under the report style.

    ``rc_context`` restores the caller's rcParams afterwards, so nothing leaks into the
    process.

    Examples
    --------
    >>> import matplotlib
    >>> @styled
    ... def font_size():
    ...     return matplotlib.rcParams["font.size"]
    >>> font_size()
    9.0
    """

    @functools.wraps(func)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with matplotlib.rc_context(_STYLE_RC):
            return func(*args, **kwargs)

    return wrapper


def safe_plot(plot: Callable[_P, str | None], /, *args: _P.args, **kwargs: _P.kwargs) -> str | None:
    """``plot(*args, **kwargs)``, or ``None`` (logged) if it raises.

    A plot is decoration: the tables carry the numbers, so a plot that fails leaves its
    slot empty instead of taking down the section.

    Examples
    --------
    >>> safe_plot(score_histogram, [0.2, 0.8]).startswith("data:")
    True
    >>> safe_plot(score_histogram, [0.2], bins="many") is None  # logged, not raised
    True
    """
    try:
        return plot(*args, **kwargs)
    except Exception:
        logger.exception("report plot %s failed", getattr(plot, "__name__", repr(plot)))
        return None


def plain(text: object) -> str:
    """Make ``text`` safe to hand to matplotlib: ``$`` would otherwise start mathtext.

    Examples
    --------
    >>> print(plain("cost in $"))
    cost in \\$
    """
    return str(text).replace("$", r"\$")


def to_float_array(values: Sequence[object] | np.ndarray) -> np.ndarray:
    """Coerce ``values`` to a 1-D float array; entries that are not numbers become NaN.

    Examples
    --------
    >>> to_float_array([1, "x", None, 2.5])
    array([1. , nan, nan, 2.5])
    """
    series = pd.to_numeric(pd.Series(np.asarray(values, dtype=object).ravel()), errors="coerce")
    return series.to_numpy(dtype=float, na_value=np.nan)


def legend_patch(color: str, label: str) -> object:
    """A filled square legend entry (for bars drawn without a ``label``).

    Examples
    --------
    >>> legend_patch("#1f4e79", "full input").get_label()
    'full input'
    """
    from matplotlib.patches import Patch

    return Patch(facecolor=color, label=label)


def _luminance(hex_color: str) -> float:
    """WCAG relative luminance of ``#rrggbb``."""
    rgb = [int(hex_color[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast_ratio(a: str, b: str) -> float:
    """WCAG 2 contrast ratio of two ``#rrggbb`` colours (1 to 21; 4.5 is AA for text).

    Examples
    --------
    >>> round(contrast_ratio("#000000", "#ffffff"), 1)
    21.0
    """
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


_DARK_TEXT, _LIGHT_TEXT = "#111827", "#ffffff"


def color_scale(
    value: float | None, vmax: float, *, vmin: float = 0.0, cmap: str = "OrRd"
) -> tuple[str, str] | None:
    """Background colour for ``value`` on a sequential scale, and a readable text colour.

    Parameters
    ----------
    value : float or None
        The number to colour; ``None`` or non-finite gives ``None`` (no colour).
    vmax, vmin : float
        The scale's ends; values outside are clipped.
    cmap : str
        A matplotlib colormap name; sequential maps that start near white (``OrRd``,
        ``Blues``) keep small values quiet.

    Returns
    -------
    (str, str) or None
        ``(background, text)`` as ``#rrggbb``; the text colour (near-black or white) is
        whichever contrasts more with the background.

    Examples
    --------
    >>> color_scale(0.0, 0.2)[0], color_scale(0.2, 0.2)[1]
    ('#fff7ec', '#ffffff')
    """
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    v = finite(value)
    if v is None:
        return None
    span = vmax - vmin
    t = 0.0 if span <= 0 else min(max((v - vmin) / span, 0.0), 1.0)
    background = to_hex(colormaps[cmap](t))
    text = max((_DARK_TEXT, _LIGHT_TEXT), key=lambda c: contrast_ratio(background, c))
    return background, text


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
    # A legend that covers a bar, a curve or a label moves to where it covers nothing.
    place_legends(fig)
    buf = io.BytesIO()
    # rc_context restores the caller's rcParams afterwards; nothing leaks into the process.
    with matplotlib.rc_context(_SAVE_RC):
        metadata = {"Date": None} if fmt == "svg" else {"Software": None}
        fig.savefig(buf, format=fmt, bbox_inches="tight", metadata=metadata, dpi=SAVE_DPI)
    return f"data:{mime};base64,{base64.b64encode(buf.getvalue()).decode('ascii')}"


_SVG_SIZE = re.compile(rb'<svg[^>]*?\swidth="([0-9.]+)pt"[^>]*?\sheight="([0-9.]+)pt"')


def image_css_size(uri: str) -> tuple[int, int] | None:
    """The size in CSS pixels at which to show a plot of :func:`figure_to_data_uri`, read
    from the image itself (110 px per inch of figure); ``None`` if unreadable.

    A page that shows every plot at this size (and no larger than its column) gives
    all plots the same, readable text size, whatever their figure size: 9 pt text shows
    at 13.75 px, the smallest labels (7 pt) at 10.7 px.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> fig = Figure(figsize=(3, 2))
    >>> _ = fig.add_subplot().plot([0, 1])
    >>> w, h = image_css_size(figure_to_data_uri(fig))
    >>> 200 < w <= 3 * 110 and 120 < h <= 2 * 110  # cropped to the content
    True
    >>> pw, ph = image_css_size(figure_to_data_uri(fig, "png"))  # same size, to a pixel
    >>> abs(pw - w) <= 1 and abs(ph - h) <= 1
    True
    >>> image_css_size("data:image/png;base64,AAAA") is None
    True
    """
    head, _, data = uri.partition(";base64,")
    try:
        raw = base64.b64decode(data[:2400] if head.endswith("svg+xml") else data[:44])
    except ValueError:
        return None
    if head == "data:image/svg+xml":
        match = _SVG_SIZE.search(raw)
        if match is None:
            return None
        scale = _CSS_DPI / 72
        return round(float(match[1]) * scale), round(float(match[2]) * scale)
    if head == "data:image/png" and raw[:8] == b"\x89PNG\r\n\x1a\n" and len(raw) >= 24:
        width, height = struct.unpack(">II", raw[16:24])
        return round(width * _CSS_DPI / SAVE_DPI), round(height * _CSS_DPI / SAVE_DPI)
    return None


@styled
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
    values = to_float_array(scores)
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
    ax.set_xlabel(plain(xlabel))
    ax.set_ylabel("examples")
    ax.yaxis.grid(True, color=PALETTE["grid"], zorder=0)
    ax.set_axisbelow(True)
    if title:
        ax.set_title(plain(title), fontsize=10, loc="left")
    return figure_to_data_uri(fig)


def score_column_histogram(
    scores: pd.DataFrame | None, column: str, *, flag_column: str, xlabel: str
) -> str | None:
    """:func:`score_histogram` of ``scores[column]``, stacked by ``scores[flag_column]``.

    ``None`` when the frame has no such column or no rows, or when the plot fails
    (see :func:`safe_plot`); the flags are left out when ``flag_column`` is missing.

    Examples
    --------
    >>> frame = pd.DataFrame({"s": [0.1, 0.9], "is_issue": [False, True]})
    >>> score_column_histogram(frame, "s", flag_column="is_issue", xlabel="s")[:5]
    'data:'
    >>> score_column_histogram(frame, "other", flag_column="is_issue", xlabel="s") is None
    True
    """
    if scores is None or column not in scores.columns or not len(scores):
        return None
    flagged = as_flags(scores[flag_column]) if flag_column in scores.columns else None
    return safe_plot(score_histogram, scores[column].to_numpy(), flagged=flagged, xlabel=xlabel)
