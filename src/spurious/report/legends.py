"""Keep every legend of a report plot clear of the data it explains.

A legend at a fixed corner covers whatever the data put there (the tallest bar of a
histogram, a bar's value label, a curve): :func:`place_legends` measures each legend
against the bars, lines, points and labels of its axes once the figure is laid out, and
moves one that covers anything to the first free corner, or outside the axes on the
right when no corner is free. :func:`spurious.report.plots.figure_to_data_uri` runs it
on every figure, so no plot has to get its legend position right by hand.

:func:`legend_clashes` is the same measurement as a report, for tests.

Examples
--------
>>> from matplotlib.figure import Figure
>>> fig = Figure(figsize=(3, 2))
>>> ax = fig.add_subplot()
>>> _ = ax.bar([0, 1, 2, 3], [10, 1, 1, 1], label="counts")
>>> _ = ax.legend(loc="upper left")  # on top of the tall first bar
>>> legend_clashes(fig)
['bar (Rectangle) under the legend of axes 0']
>>> place_legends(fig)
>>> legend_clashes(fig)
[]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backend_bases import RendererBase
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import Collection, PathCollection, PolyCollection
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.transforms import Bbox
from numpy.typing import ArrayLike

if TYPE_CHECKING:
    from matplotlib.typing import LegendLocType  # matplotlib >= 3.8

__all__ = ["legend_clashes", "place_legends"]

#: Corners and edges tried, in order, for a legend that covers data.
INSIDE_LOCATIONS: tuple[LegendLocType, ...] = (
    "upper right",
    "upper left",
    "lower right",
    "lower left",
    "center right",
    "center left",
    "upper center",
    "lower center",
)

# A legend may touch an artist by this many pixels (anti-aliasing, rounding).
_TOLERANCE_PX = 1.0

# Artists below this z-order are background (shaded spans under the grid): a legend may
# sit on them. Bars, lines and points are drawn at 1 and above.
_BACKGROUND_ZORDER = 0.5


def _renderer(fig: Figure) -> RendererBase:
    """Lay ``fig`` out and return a renderer to measure it with (no pyplot, no backend
    switch: an Agg canvas is attached to this figure only)."""
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    fig.draw_without_rendering()  # runs constrained / tight layout, places "best" legends
    return canvas.get_renderer()


def _shrunk(box: Bbox) -> Bbox:
    return Bbox.from_extents(
        box.x0 + _TOLERANCE_PX,
        box.y0 + _TOLERANCE_PX,
        box.x1 - _TOLERANCE_PX,
        box.y1 - _TOLERANCE_PX,
    )


def _points_inside(points: ArrayLike, box: Bbox) -> bool:
    pts = np.asarray(points, dtype=float).reshape(-1, 2)
    pts = pts[np.isfinite(pts).all(axis=1)]
    inside = (
        (pts[:, 0] > box.x0) & (pts[:, 0] < box.x1) & (pts[:, 1] > box.y0) & (pts[:, 1] < box.y1)
    )
    return bool(inside.any())


def _line_covered(line: Line2D, box: Bbox) -> bool:
    path = line.get_transform().transform_path(line.get_path())
    if _points_inside(path.vertices, box):
        return True
    if line.get_linestyle() in ("None", "none", "", " "):
        return False  # markers only: covered only if a marker is inside
    return bool(path.intersects_bbox(box, filled=False))


def _collection_covered(coll: Collection, box: Bbox) -> bool:
    if isinstance(coll, PathCollection):
        # Scatter points: a marker path drawn at each offset.
        offsets: np.ndarray = np.ma.filled(np.ma.asarray(coll.get_offsets(), dtype=float), np.nan)
        return _points_inside(coll.get_offset_transform().transform(offsets), box)
    transform = coll.get_transform()
    filled = isinstance(coll, PolyCollection)
    for path in coll.get_paths():
        shown = transform.transform_path(path)
        if _points_inside(shown.vertices, box) or shown.intersects_bbox(box, filled=filled):
            return True
    return False


def _covered(ax: Axes, box: Bbox, renderer: RendererBase) -> Iterator[Artist]:
    """The artists of ``ax`` that a legend occupying ``box`` (pixels) would cover."""
    # Bars, lines and points are clipped to the axes: what lies outside them is not
    # drawn, so a legend outside the axes covers none of it.
    inside = Bbox.intersection(box, ax.bbox)

    def region(artist: Artist) -> Bbox | None:
        if artist.get_zorder() < _BACKGROUND_ZORDER:
            return None  # shading drawn under everything (axvspan(..., zorder=0))
        return inside if artist.get_clip_on() else box

    for patch in ax.patches:
        where = region(patch)
        if where is None or not patch.get_visible():
            continue
        ext = patch.get_window_extent(renderer)
        if ext.width >= 0.5 and ext.height >= 0.5 and ext.overlaps(where):
            yield patch
    for line in ax.lines:
        where = region(line)
        if where is not None and line.get_visible() and _line_covered(line, where):
            yield line
    for coll in ax.collections:
        where = region(coll)
        if where is not None and coll.get_visible() and _collection_covered(coll, where):
            yield coll
    for text in ax.texts:
        shown = text.get_visible() and text.get_text().strip()
        if shown and text.get_window_extent(renderer).overlaps(box):
            yield text


def _legends(fig: Figure) -> Iterator[tuple[int, Axes, Legend]]:
    for i, ax in enumerate(fig.axes):
        legend = ax.get_legend()
        if legend is not None and legend.get_visible():
            yield i, ax, legend


def _clashes(ax: Axes, legend: Legend, renderer: RendererBase) -> list[Artist]:
    return list(_covered(ax, _shrunk(legend.get_window_extent(renderer)), renderer))


def _kind(artist: Artist) -> str:
    if isinstance(artist, Line2D):
        return "line"
    if isinstance(artist, Collection):
        return "points or area"
    if hasattr(artist, "get_text"):
        return "text"
    return "bar"


def legend_clashes(fig: Figure) -> list[str]:
    """Which legends of ``fig`` cover data, in words (empty: none does).

    Parameters
    ----------
    fig : matplotlib.figure.Figure

    Returns
    -------
    list of str
        One entry per covered artist, e.g. ``"bar (Rectangle) under the legend of axes 0"``.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> fig = Figure(figsize=(3, 2))
    >>> ax = fig.add_subplot()
    >>> _ = ax.plot([0, 1], [0, 1], label="rising")
    >>> _ = ax.legend(loc="lower right")  # clear of a rising line
    >>> legend_clashes(fig)
    []
    """
    renderer = _renderer(fig)
    return [
        f"{_kind(artist)} ({type(artist).__name__}) under the legend of axes {i}"
        for i, ax, legend in _legends(fig)
        for artist in _clashes(ax, legend, renderer)
    ]


def place_legends(fig: Figure) -> None:
    """Move every legend of ``fig`` that covers data to where it covers none.

    A legend that covers nothing stays where its plot put it. One that covers a bar, a
    line, a point or a label (shading drawn under the grid, at a z-order below 0.5, does
    not count) goes to the first of :data:`INSIDE_LOCATIONS` where it
    covers nothing, else outside the axes, to the right of their top (a saved figure
    is cropped to its content, so the figure grows to hold it).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        Changed in place.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> fig = Figure(figsize=(3, 2))
    >>> ax = fig.add_subplot()
    >>> _ = ax.bar(range(8), [1] * 8, label="flat and full")  # no free corner
    >>> _ = ax.legend(loc="upper left")
    >>> place_legends(fig)
    >>> bool(ax.get_legend().get_bbox_to_anchor().x0 > ax.get_window_extent().x1)
    True
    """
    legends = list(_legends(fig))
    if not legends:
        return
    renderer = _renderer(fig)
    for _, ax, legend in legends:
        if not _clashes(ax, legend, renderer):
            continue
        for loc in INSIDE_LOCATIONS:
            _set_loc(legend, loc)
            legend.set_bbox_to_anchor(None)
            if not _clashes(ax, legend, renderer):
                break
        else:
            _set_loc(legend, "upper left")
            legend.set_bbox_to_anchor((1.02, 1.0), transform=ax.transAxes)


def _set_loc(legend: Legend, loc: LegendLocType) -> None:
    if hasattr(legend, "set_loc"):  # matplotlib >= 3.8
        legend.set_loc(loc)
    else:  # pragma: no cover - matplotlib 3.7: the private property set_loc wraps
        cast(Any, legend)._loc = Legend.codes[str(loc)]
