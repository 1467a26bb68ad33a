"""HTML building blocks shared by the report page and every section (one import point).

Every fragment is produced by an autoescaping Jinja template (:func:`render_fragment`),
so anything that is not already :class:`markupsafe.Markup` is escaped; every builder
returns Markup. Dataset text
(premises, labels, ids, field names, error messages, summaries) is never marked safe;
:func:`example_table` goes further and escapes its dataset-text columns even when a
caller passes Markup.

The builders live in four modules by concept, and this module re-exports them so that
sections import everything from one place:

- :mod:`~spurious.report.fragments`: :func:`render_fragment` (the escaping rule);
- :mod:`~spurious.report.formatting`: numbers as text (:func:`format_number` ...);
- :mod:`~spurious.report.cells`: :class:`Cell`, :func:`to_cell`, :func:`metric_cell`;
- :mod:`~spurious.report.tables`: :func:`html_table`, :func:`example_table`,
  :func:`kv_table`, :func:`metrics_table`, :func:`scores_preview`, full-table links;
- :mod:`~spurious.report.blocks`: callouts, details, stat and figure blocks, the
  section footer.

Examples
--------
>>> from spurious.report.components import html_table, stat_block, Stat
>>> "&lt;b&gt;" in html_table(["text"], [["<b>"]])
True
>>> "stat-value" in stat_block([Stat("Examples", 1200)])
True
"""

from __future__ import annotations

from spurious.report.blocks import (
    MAX_DETAILS_CHARS,
    Plot,
    Stat,
    callout,
    details_block,
    figure_block,
    provenance_block,
    section_footer,
    stat_block,
    summary_line,
)
from spurious.report.cells import MAX_CELL_CHARS, Cell, metric_cell, to_cell
from spurious.report.formatting import (
    MISSING,
    as_flags,
    cell_value,
    finite,
    format_number,
    format_seconds,
)
from spurious.report.fragments import render_fragment
from spurious.report.tables import (
    FULL_TABLE_PATH,
    MAX_FINDINGS,
    PREVIEW_ROWS,
    Header,
    example_table,
    full_table_block,
    full_table_href,
    html_table,
    kv_table,
    metrics_table,
    scores_preview,
    table_href,
)

__all__ = [
    "FULL_TABLE_PATH",
    "MAX_CELL_CHARS",
    "MAX_DETAILS_CHARS",
    "MAX_FINDINGS",
    "MISSING",
    "PREVIEW_ROWS",
    "Cell",
    "Header",
    "Plot",
    "Stat",
    "as_flags",
    "callout",
    "cell_value",
    "details_block",
    "example_table",
    "figure_block",
    "finite",
    "format_number",
    "format_seconds",
    "full_table_block",
    "full_table_href",
    "html_table",
    "kv_table",
    "metric_cell",
    "metrics_table",
    "provenance_block",
    "render_fragment",
    "scores_preview",
    "section_footer",
    "stat_block",
    "summary_line",
    "table_href",
    "to_cell",
]
