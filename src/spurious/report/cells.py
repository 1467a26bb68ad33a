"""Table cells: display text, a sort key and an interval for every value shown.

:func:`to_cell` turns any value (number, text, bool, container, Markup) into a
:class:`Cell`; :func:`metric_cell` adds a metric's bootstrap interval. Dataset text is
truncated to :data:`MAX_CELL_CHARS` with the full text in the tooltip.

Examples
--------
>>> from spurious.report.cells import to_cell
>>> to_cell(0.25).text
'0.250'
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from markupsafe import Markup

from spurious.report.formatting import MISSING, cell_value, finite, format_number

__all__ = ["MAX_CELL_CHARS", "Cell", "metric_cell", "text_cell", "to_cell"]

#: Longest dataset string shown in a table cell; the full text goes into the tooltip.
MAX_CELL_CHARS = 400


@dataclass(frozen=True)
class Cell:
    """A table cell with display text and a sort key.

    Attributes
    ----------
    text : str or Markup
        Shown text (escaped unless Markup).
    ci : str
        Confidence interval shown after the value, e.g. ``"[0.58, 0.64]"``.
    sort : str or None
        ``data-sort`` value for the sortable-table script (``""`` sorts last).
    numeric : bool
        Right-aligned, tabular digits.
    title : str
        Tooltip (the full text when ``text`` was truncated).
    css : str
        Extra CSS classes.
    style : str
        Inline CSS (e.g. a colour-scale background); built by the report, never from data.

    Examples
    --------
    >>> Cell("0.5", numeric=True, css="hot").classes
    'num hot'
    """

    text: str | Markup
    ci: str = ""
    sort: str | None = None
    numeric: bool = False
    title: str = ""
    css: str = ""
    style: str = ""

    @property
    def classes(self) -> str:
        """The ``class`` attribute of the ``<td>``."""
        return " ".join(c for c in ("num" if self.numeric else "", self.css) if c)


def _truncate(text: str, limit: int = MAX_CELL_CHARS) -> tuple[str, str]:
    """``(shown, tooltip)``: the tooltip holds the full text only when it was cut."""
    if len(text) <= limit:
        return text, ""
    return text[: limit - 1].rstrip() + "…", text


def text_cell(text: str) -> Cell:
    """A cell of (untrusted) text, truncated to :data:`MAX_CELL_CHARS` with a tooltip."""
    shown, tooltip = _truncate(text)
    # Long free text may wrap anywhere; short values (ids, labels) keep whole words.
    css = "text" if len(shown) > 40 else "nowrap" if len(shown) <= 24 else ""
    return Cell(text=shown, title=tooltip, sort=None, css=css)


def to_cell(value: Any, kind: str = "auto") -> Cell:
    """Convert any value to a :class:`Cell` (numbers formatted, long text truncated).

    Parameters
    ----------
    value : any
        A :class:`Cell` (returned as is), Markup (trusted), a number, a bool, None, a
        container (shown as JSON) or anything else (shown as escaped text).
    kind : str
        Number format, see :func:`format_number`.

    Examples
    --------
    >>> to_cell(0.5).text, to_cell("abc").text, to_cell(None).text
    ('0.500', 'abc', '—')
    """
    value = cell_value(value)
    if isinstance(value, Cell):
        return value
    if isinstance(value, Markup):
        return Cell(text=value)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return Cell(text=MISSING, sort="", numeric=True, css="missing")
    if isinstance(value, bool | np.bool_):
        return Cell(text="yes" if value else "no", sort="1" if value else "0")
    if isinstance(value, numbers.Number):
        f = finite(value)
        return Cell(
            text=format_number(value, kind),
            sort="" if f is None else repr(f),
            numeric=True,
            css="" if f is not None else "missing",
        )
    if isinstance(value, dict | list | tuple):
        value = json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
    return text_cell(str(value))


def metric_cell(metrics: Mapping[str, Any], name: str, kind: str = "float") -> Cell:
    """Cell showing ``metrics[name]`` and, when present, its ``_ci_low``/``_ci_high``.

    Parameters
    ----------
    metrics : mapping
        Flat metrics.
    name : str
        Metric name; the interval is read from ``<name>_ci_low`` / ``<name>_ci_high``.
    kind : str
        Number format, see :func:`format_number`.

    Examples
    --------
    >>> c = metric_cell({"acc": 0.61, "acc_ci_low": 0.58, "acc_ci_high": 0.64}, "acc")
    >>> c.text, c.ci
    ('0.610', '[0.580, 0.640]')
    """
    value = metrics.get(name)
    f = finite(value)
    low, high = finite(metrics.get(f"{name}_ci_low")), finite(metrics.get(f"{name}_ci_high"))
    ci = ""
    if low is not None or high is not None:
        # Percent CIs drop the % sign inside the brackets to keep the cell short.
        fmt_kind = "float" if kind == "percent" else kind
        scale = 100.0 if kind == "percent" else 1.0
        digits = 1 if kind == "percent" else 3
        parts = [
            MISSING if b is None else format_number(b * scale, fmt_kind, digits)
            for b in (low, high)
        ]
        ci = f"[{parts[0]}, {parts[1]}]"
    return Cell(
        text=format_number(value, kind),
        ci=ci,
        sort="" if f is None else repr(f),
        numeric=True,
        title="bootstrap 95% interval" if ci else "",
        css="" if f is not None else "missing",
    )
