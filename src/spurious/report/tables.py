"""Tables of the report: generic, example, key/value, metrics and scores tables.

Also the links from a section to its result's full per-example table (Parquet beside
the report), since an example table that shows only its top rows points to it.
:func:`example_table` escapes its dataset-text columns even when a caller passes Markup.

Examples
--------
>>> from spurious.report.tables import html_table
>>> "&lt;b&gt;" in html_table(["text"], [["<b>"]])
True
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
from markupsafe import Markup

from spurious.report.cells import Cell, metric_cell, text_cell, to_cell
from spurious.report.formatting import cell_value
from spurious.report.fragments import as_text, render_fragment
from spurious.results import Result

__all__ = [
    "FULL_TABLE_PATH",
    "MAX_FINDINGS",
    "PREVIEW_ROWS",
    "Header",
    "example_table",
    "full_table_block",
    "full_table_href",
    "html_table",
    "kv_table",
    "metrics_table",
    "scores_preview",
    "table_href",
]

#: Rows of ``scores`` shown by :func:`scores_preview`.
PREVIEW_ROWS = 10
#: Most rows an example or findings table shows in a section; the rest are in the
#: per-example Parquet table beside the report (a page stays readable at any size).
MAX_FINDINGS = 15
#: Where a result's full per-example table sits, relative to the report.
FULL_TABLE_PATH = "{name}/scores.parquet"
#: Suffixes of a metric's bootstrap interval bounds (``auc_ci_low``).
_CI_SUFFIXES = ("_ci_low", "_ci_high")


_TABLE = """
<div class="table-wrap{% if wide %} wide{% endif %}">
<table class="data{% if sortable %} sortable{% endif %}{% if css %} {{ css }}{% endif %}">
{% if caption %}<caption>{{ caption }}</caption>{% endif %}
<thead><tr>
{% for h in headers %}
<th scope="col"{% if h.numeric %} class="num"{% endif %}
{%- if h.title %} title="{{ h.title }}"{% endif %}>{{ h.text }}</th>
{% endfor %}
</tr></thead>
<tbody>
{% for row in rows %}
<tr{% if row.css %} class="{{ row.css }}"{% endif %}>
{% for c in row.cells %}
<td{% if c.classes %} class="{{ c.classes }}"{% endif %}
{%- if c.style %} style="{{ c.style }}"{% endif %}
{%- if c.sort is not none %} data-sort="{{ c.sort }}"{% endif %}
{%- if c.title %} title="{{ c.title }}"{% endif %}>{{ c.text }}
{%- if c.ci %} <span class="ci">{{ c.ci }}</span>{% endif %}</td>
{% endfor %}
</tr>
{% else %}
<tr><td class="empty" colspan="{{ headers|length }}">No rows.</td></tr>
{% endfor %}
</tbody>
</table>
</div>
"""


@dataclass(frozen=True)
class _Header:
    text: str | Markup
    title: str = ""
    numeric: bool = False


@dataclass
class _Row:
    cells: list[Cell]
    css: str = ""


Header = str | Markup | tuple[str | Markup, str]


def _headers(headers: Sequence[Header]) -> list[_Header]:
    return [_Header(*h) if isinstance(h, tuple) else _Header(h) for h in headers]


def html_table(
    headers: Sequence[Header],
    rows: Iterable[Sequence[Any]],
    *,
    caption: str | None = None,
    sortable: bool = True,
    row_classes: Sequence[str] | None = None,
    css: str = "",
    wide: bool = False,
) -> Markup:
    """An escaped HTML table.

    Parameters
    ----------
    headers : sequence
        Column headers; a ``(text, tooltip)`` tuple adds a tooltip.
    rows : iterable of sequences
        Cell values; anything :func:`to_cell` accepts (numbers, text, :class:`Cell`).
    caption : str, optional
        Table caption.
    sortable : bool
        Mark the table for the optional click-to-sort script.
    row_classes : sequence of str, optional
        A CSS class per row.
    css : str
        Extra CSS classes for the ``<table>``.
    wide : bool
        Let the table scroll horizontally instead of squeezing columns.

    Examples
    --------
    >>> html = html_table(["name", "value"], [["<b>", 1.5]])
    >>> "&lt;b&gt;" in html and "<b>" not in html
    True
    """
    hdrs = _headers(headers)
    body: list[_Row] = []
    for i, row in enumerate(rows):
        cells = [to_cell(v) for v in row]
        body.append(_Row(cells, row_classes[i] if row_classes and i < len(row_classes) else ""))
    # A column is numeric (right-aligned header) when all its non-missing cells are.
    for j, h in enumerate(hdrs):
        col = [r.cells[j] for r in body if j < len(r.cells) and r.cells[j].css != "missing"]
        if col and all(c.numeric for c in col):
            hdrs[j] = _Header(h.text, h.title, True)
    return render_fragment(
        _TABLE, headers=hdrs, rows=body, caption=caption, sortable=sortable, css=css, wide=wide
    )


def example_table(
    headers: Sequence[Header],
    rows: Iterable[Sequence[Any]],
    *,
    text_columns: Collection[str] = (),
    title: str = "",
    note: str | Markup = "",
    max_rows: int | None = MAX_FINDINGS,
    full_table: str | None = None,
    collapsed: bool = True,
) -> Markup:
    """A table of dataset examples under an optional heading and note, folded by default.

    At most ``max_rows`` rows are shown (the first ones: pass them best first); the
    note then says how many there were and where the full table is.

    Columns whose header is in ``text_columns`` hold dataset text: their values are
    shown as escaped, truncated text even when passed as Markup or as a Cell with
    Markup text, so a caller cannot mark dataset text safe by accident. Other columns
    take anything :func:`html_table` does (e.g. a Cell built with
    :func:`render_fragment` for a prediction).

    Parameters
    ----------
    headers : sequence
        Column headers, as for :func:`html_table`.
    rows : iterable of sequences
        One sequence of values per example.
    text_columns : collection of str
        Header texts of the dataset-text columns.
    title : str
        Heading shown above the table.
    note : str or Markup
        One line under the heading.
    max_rows : int or None, default=MAX_FINDINGS
        Rows shown; ``None`` shows all.
    full_table : str, optional
        Link (relative to the report) to the full table, e.g. the result's Parquet
        file (:func:`full_table_href`); default: the note points to the line at the end
        of the section (:func:`full_table_block`).
    collapsed : bool, default=True
        Fold the table into a ``<details>`` element whose always-visible line is the
        title and the number of rows: example tables are what makes a report long, and
        a reader opens the ones they want. ``False`` for a table already inside a
        folded block (heading, note and table shown as they are).

    Examples
    --------
    >>> html = example_table(["id", "text"], [["a", Markup("<b>x</b>")]],
    ...                      text_columns=["text"], title="Examples")
    >>> "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x" not in html
    True
    >>> many = example_table(["id"], [[i] for i in range(40)], max_rows=15)
    >>> many.count("<tr>") <= 16, "Top 15 of 40" in many
    (True, True)
    >>> html.startswith('<details class="block examples-block">')
    True
    """
    names = [str(h[0] if isinstance(h, tuple) else h) for h in headers]
    text_idx = {i for i, n in enumerate(names) if n in set(text_columns)}

    def plain(value: Any) -> Any:
        value = cell_value(value)
        if isinstance(value, Cell):
            value = value.text
        if value is None or isinstance(value, float | int):
            return value
        return text_cell(as_text(value))

    rows = list(rows)
    n_rows = len(rows)
    more = ""
    if max_rows is not None and len(rows) > max_rows:
        more = render_fragment(
            'Top {{ k }} of {{ "{:,}".format(n) }} shown; the rest are in '
            '{% if href %}<a href="{{ href }}">the full table</a>{% else %}the full table '
            "linked at the end of this section{% endif %}.",
            k=max_rows,
            n=len(rows),
            href=full_table,
        )
        rows = rows[:max_rows]
    safe_rows = [[plain(v) if i in text_idx else v for i, v in enumerate(row)] for row in rows]
    if not collapsed:
        return render_fragment(
            '{% if title %}<h4>{{ title }}</h4>{% endif %}{% if note or more %}<p class="muted">'
            "{{ note }}{% if note and more %} {% endif %}{{ more }}</p>{% endif %}{{ t }}",
            title=title,
            note=note,
            more=more,
            t=html_table(headers, safe_rows, css="examples", wide=True),
        )
    return render_fragment(
        '<details class="block examples-block"><summary>{{ title or "Examples" }} '
        '<span class="count">({% if more %}top {{ k }} of {{ "{:,}".format(n) }}{% else %}'
        '{{ "{:,}".format(k) }} {{ "row" if k == 1 else "rows" }}{% endif %})</span></summary>'
        '<div class="details-body">{% if note or more %}<p class="muted">'
        "{{ note }}{% if note and more %} {% endif %}{{ more }}</p>{% endif %}{{ t }}"
        "</div></details>",
        title=title,
        note=note,
        more=more,
        k=len(safe_rows),
        n=n_rows,
        t=html_table(headers, safe_rows, css="examples", wide=True),
    )


def full_table_href(result: Result) -> str:
    """Link, relative to the report, to ``result``'s full per-example table (Parquet).

    A run directory holds it as ``<analysis>/scores.parquet`` beside ``report.html``;
    :func:`spurious.report.render` writes it there for results held in memory.

    Examples
    --------
    >>> import pandas as pd
    >>> full_table_href(Result("aflite", pd.DataFrame(), {}))
    'aflite/scores.parquet'
    """
    return FULL_TABLE_PATH.format(name=result.name)


def table_href(result: Result, table: str) -> str:
    """Link, relative to the report, to one of ``result``'s extra tables (``Result.tables``).

    Examples
    --------
    >>> import pandas as pd
    >>> table_href(Result("atlas", pd.DataFrame(), {}), "tokens")
    'atlas/tables/tokens.parquet'
    """
    return f"{result.name}/tables/{table}.parquet"


def full_table_block(result: Result) -> Markup:
    """One line linking the section's full per-example table (Parquet beside the report).

    No element id: a page may show two sections of one analysis.

    Examples
    --------
    >>> import pandas as pd
    >>> html = full_table_block(Result("aflite", pd.DataFrame({"id": ["a", "b"]}), {}))
    >>> 'href="aflite/scores.parquet"' in html and "2 rows" in html
    True
    """
    scores = result.scores
    parts = []
    if scores is not None and not scores.empty:
        parts.append(
            render_fragment(
                '<p class="muted full-table">Full per-example table: '
                '<a href="{{ href }}">{{ href }}</a> ({{ "{:,}".format(n) }} rows, {{ c }} '
                "columns; Parquet beside the report, e.g. "
                '<code>pandas.read_parquet("{{ href }}")</code>).</p>',
                href=full_table_href(result),
                n=len(scores),
                c=scores.shape[1],
            )
        )
    for name, frame in sorted((result.tables or {}).items()):
        parts.append(
            render_fragment(
                '<p class="muted full-table">Full {{ name }} table: '
                '<a href="{{ href }}">{{ href }}</a> ({{ "{:,}".format(n) }} rows, {{ c }} '
                "columns; Parquet beside the report).</p>",
                name=name,
                href=table_href(result, name),
                n=len(frame),
                c=frame.shape[1],
            )
        )
    return Markup("").join(parts)


def kv_table(
    items: Mapping[str, Any] | Iterable[tuple[str, Any]], *, caption: str | None = None
) -> Markup:
    """Two-column key/value table (nested values shown as compact JSON).

    Parameters
    ----------
    items : mapping or iterable of (key, value)
    caption : str, optional

    Examples
    --------
    >>> "seed" in kv_table({"seed": 0})
    True
    """
    pairs = list(items.items()) if isinstance(items, Mapping) else list(items)
    if not pairs:
        return render_fragment('<p class="muted">None recorded.</p>')
    return render_fragment(
        """<table class="kv">{% if caption %}<caption>{{ caption }}</caption>{% endif %}
{% for k, v in pairs %}<tr><th scope="row">{{ k }}</th><td{% if v.numeric %} class="num"{% endif %}
{%- if v.title %} title="{{ v.title }}"{% endif %}>{{ v.text }}</td></tr>
{% endfor %}</table>""",
        pairs=[(str(k), to_cell(v)) for k, v in pairs],
        caption=caption,
    )


def metrics_table(metrics: Mapping[str, Any], *, caption: str | None = None) -> Markup:
    """Table of all metrics, each with its ``[ci_low, ci_high]`` interval when present.

    Parameters
    ----------
    metrics : mapping
        Flat ``{name: value}``; ``<name>_ci_low``/``_ci_high`` become the interval.
    caption : str, optional

    Examples
    --------
    >>> html = metrics_table({"auc": 0.7, "auc_ci_low": 0.6, "auc_ci_high": 0.8})
    >>> "0.700" in html and "[0.600, 0.800]" in html
    True
    """
    names = [k for k in metrics if not k.endswith(_CI_SUFFIXES)]
    # An interval whose point value is missing is still shown rather than dropped.
    orphans = [
        k
        for k in metrics
        if k.endswith(_CI_SUFFIXES) and re.sub(r"_ci_(low|high)$", "", k) not in metrics
    ]
    rows = [[Cell(text=n, sort=n), metric_cell(metrics, n, "auto")] for n in sorted(names)]
    rows += [[Cell(text=n, sort=n), to_cell(metrics[n])] for n in sorted(orphans)]
    if not rows:
        return render_fragment('<p class="muted">No metrics recorded.</p>')
    return html_table(
        ["metric", ("value [95% CI]", "value, bootstrap 95% interval")],
        rows,
        caption=caption,
        css="compact",
    )


def scores_preview(scores: pd.DataFrame | None, n: int = PREVIEW_ROWS) -> Markup:
    """The first ``n`` rows of a scores frame as an escaped table.

    Parameters
    ----------
    scores : pandas.DataFrame or None
    n : int
        Rows shown.

    Examples
    --------
    >>> import pandas as pd
    >>> "<table" in scores_preview(pd.DataFrame({"id": ["a"], "score": [0.3]}))
    True
    """
    if scores is None or scores.empty:
        return render_fragment('<p class="muted">No per-example scores.</p>')
    head = scores.head(n)
    rows = [list(rec) for rec in head.itertuples(index=False, name=None)]
    caption = f"First {len(head)} of {len(scores):,} rows, {scores.shape[1]} columns."
    return html_table([str(c) for c in head.columns], rows, caption=caption, wide=True)
