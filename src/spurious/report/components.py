"""HTML building blocks shared by the report page and every section.

Every fragment is produced by an autoescaping Jinja template (:func:`render_fragment`),
so anything that is not already :class:`markupsafe.Markup` is escaped; every builder
returns Markup. Dataset text
(premises, labels, ids, field names, error messages, summaries) is never marked safe;
:func:`example_table` goes further and escapes its dataset-text columns even when a
caller passes Markup.

Examples
--------
>>> from spurious.report.components import html_table, stat_block, Stat
>>> "&lt;b&gt;" in html_table(["text"], [["<b>"]])
True
>>> "stat-value" in stat_block([Stat("Examples", 1200)])
True
"""

from __future__ import annotations

import functools
import json
import logging
import math
import numbers
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from jinja2 import Environment, StrictUndefined, Template
from markupsafe import Markup

from spurious.results import Result

logger = logging.getLogger(__name__)

__all__ = [
    "MAX_CELL_CHARS",
    "MAX_DETAILS_CHARS",
    "MISSING",
    "PREVIEW_ROWS",
    "Cell",
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
    "to_cell",
]

#: Longest dataset string shown in a table cell; the full text goes into the tooltip.
MAX_CELL_CHARS = 400
#: Rows of ``scores`` shown by :func:`scores_preview`.
PREVIEW_ROWS = 10
#: Most rows an example or findings table shows in a section; the rest are in the
#: per-example Parquet table beside the report (a page stays readable at any size).
MAX_FINDINGS = 15
#: Where a result's full per-example table sits, relative to the report.
FULL_TABLE_PATH = "{name}/scores.parquet"
#: Characters of ``details`` JSON shown by the generic section.
MAX_DETAILS_CHARS = 20_000
#: Shown for missing or non-finite numbers.
MISSING = "—"

_CI_SUFFIXES = ("_ci_low", "_ci_high")


# ---------------------------------------------------------------------------------------
# Fragment rendering (the only way HTML is built)
# ---------------------------------------------------------------------------------------
_ENV = Environment(
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


@functools.lru_cache(maxsize=256)
def _compile(source: str) -> Template:
    return _ENV.from_string(source)


def render_fragment(source: str, /, **context: Any) -> Markup:
    """Render a Jinja template string with autoescaping on and return it as Markup.

    Parameters
    ----------
    source : str
        Template source (a constant of the calling module, never data). Values from
        ``context`` are escaped unless they are already :class:`markupsafe.Markup`.
    **context
        Template variables.

    Examples
    --------
    >>> str(render_fragment("<p>{{ t }}</p>", t="<b>x</b>"))
    '<p>&lt;b&gt;x&lt;/b&gt;</p>'
    """
    return Markup(_compile(source).render(**context))


def _as_text(value: Any) -> str:
    """``value`` as a plain (untrusted) ``str``: Markup loses its trusted status."""
    return str.__str__(value) if isinstance(value, str) else str(value)


# ---------------------------------------------------------------------------------------
# Numbers
# ---------------------------------------------------------------------------------------
def finite(value: Any) -> float | None:
    """``value`` as a float, or ``None`` when missing, non-numeric, non-finite or a bool.

    Examples
    --------
    >>> finite("0.5"), finite(float("nan")), finite(None), finite(True)
    (0.5, None, None, None)
    """
    if value is None or isinstance(value, bool | np.bool_):
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def as_flags(values: Any) -> np.ndarray:
    """Boolean flags from a column that may hold bools, 0/1 or missing values (False).

    Examples
    --------
    >>> as_flags([True, 0, 1.0, None]).tolist()
    [True, False, True, False]
    """
    return pd.to_numeric(pd.Series(values), errors="coerce").fillna(0).astype(bool).to_numpy()


def format_number(value: Any, kind: str = "auto", digits: int = 3) -> str:
    """Format a metric value for display.

    Parameters
    ----------
    value : number or None
        Missing, NaN and infinite values give ``"—"``.
    kind : {"auto", "float", "percent", "signed", "int"}
        ``percent`` multiplies by 100 and appends ``%``; ``signed`` always shows the sign.
    digits : int
        Decimals for ``float``/``signed`` (``percent`` uses two fewer, at least 1).

    Returns
    -------
    str

    Examples
    --------
    >>> format_number(0.61234), format_number(0.893, "percent"), format_number(0.25, "signed")
    ('0.612', '89.3%', '+0.250')
    >>> format_number(12000), format_number(float("nan"))
    ('12,000', '—')
    """
    f = finite(value)
    if f is None:
        return MISSING
    if kind == "percent":
        return f"{100.0 * f:.{max(digits - 2, 1)}f}%"
    if kind == "signed":
        return f"{f:+.{digits}f}"
    if kind == "int" or (
        kind == "auto"
        # Analyses store counts as floats (n_eval=200.0); show those as integers. 0 and 1
        # stay decimal because they are usually rates.
        and (isinstance(value, numbers.Integral) or (f.is_integer() and abs(f) >= 2))
        and abs(f) < 1e15
    ):
        return f"{round(f):,}"
    if f != 0 and (abs(f) < 10 ** (-digits) or abs(f) >= 1e7):
        return f"{f:.{digits}g}" if abs(f) >= 1e7 else f"{f:.2e}"
    if abs(f) >= 1000:
        return f"{f:,.1f}"
    return f"{f:.{digits}f}"


def format_seconds(value: Any) -> Any:
    """Seconds as ``"1.25 s"`` (minutes added past ten minutes); non-numbers unchanged.

    Examples
    --------
    >>> format_seconds(1.25), format_seconds(900), format_seconds("n/a")
    ('1.25 s', '900 s (15.0 min)', 'n/a')
    """
    f = finite(value)
    if f is None:
        return value
    return f"{f:,.2f} s" if f < 600 else f"{f:,.0f} s ({f / 60:.1f} min)"


def cell_value(value: Any) -> Any:
    """Unwrap numpy scalars so :func:`to_cell` formats them as numbers.

    Examples
    --------
    >>> import numpy as np
    >>> type(cell_value(np.float32(0.5)))
    <class 'float'>
    """
    if isinstance(value, np.generic):
        return value.item()
    return value


# ---------------------------------------------------------------------------------------
# Cells and tables
# ---------------------------------------------------------------------------------------
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


def _text_cell(text: str) -> Cell:
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
    return _text_cell(str(value))


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
) -> Markup:
    """A table of dataset examples under an optional heading and note.

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

    Examples
    --------
    >>> html = example_table(["id", "text"], [["a", Markup("<b>x</b>")]],
    ...                      text_columns=["text"], title="Examples")
    >>> "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x" not in html
    True
    >>> many = example_table(["id"], [[i] for i in range(40)], max_rows=15)
    >>> many.count("<tr>") <= 16, "Top 15 of 40" in many
    (True, True)
    """
    names = [str(h[0] if isinstance(h, tuple) else h) for h in headers]
    text_idx = {i for i, n in enumerate(names) if n in set(text_columns)}

    def plain(value: Any) -> Any:
        value = cell_value(value)
        if isinstance(value, Cell):
            value = value.text
        if value is None or isinstance(value, float | int):
            return value
        return _text_cell(_as_text(value))

    rows = list(rows)
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
    return render_fragment(
        '{% if title %}<h4>{{ title }}</h4>{% endif %}{% if note or more %}<p class="muted">'
        "{{ note }}{% if note and more %} {% endif %}{{ more }}</p>{% endif %}{{ t }}",
        title=title,
        note=note,
        more=more,
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


# ---------------------------------------------------------------------------------------
# Blocks
# ---------------------------------------------------------------------------------------
def details_block(summary: str, body: Markup, *, open_: bool = False) -> Markup:
    """A collapsible ``<details>`` block (readable without JavaScript).

    Parameters
    ----------
    summary : str
        The always-visible line.
    body : Markup
        The folded content.
    open_ : bool
        Start unfolded.

    Examples
    --------
    >>> "<details" in details_block("More", render_fragment("<p>x</p>"))
    True
    """
    return render_fragment(
        '<details class="block"{% if o %} open{% endif %}><summary>{{ s }}</summary>'
        '<div class="details-body">{{ b }}</div></details>',
        s=summary,
        b=body,
        o=open_,
    )


def summary_line(text: str | None) -> Markup:
    """A result's one-line summary as the lead paragraph of a section (empty if none).

    Examples
    --------
    >>> str(summary_line("<b>3</b> flagged"))
    '<p class="summary">&lt;b&gt;3&lt;/b&gt; flagged</p>'
    """
    return render_fragment('{% if s %}<p class="summary">{{ s }}</p>{% endif %}', s=text or "")


_CALLOUT_KINDS = ("warn", "error", "info")


def callout(
    message: str | Markup = "", *, title: str = "", kind: str = "warn", pre: str = ""
) -> Markup:
    """A highlighted box: a bold title, a message and optionally preformatted text.

    Parameters
    ----------
    message : str or Markup
        The explanation (escaped unless Markup).
    title : str
        Bold lead-in.
    kind : {"warn", "error", "info"}
        Colour; ``error`` also gets ``role="alert"``.
    pre : str
        Preformatted text (an error message, a traceback), always escaped.

    Examples
    --------
    >>> html = callout(title="Failed.", kind="error", pre="<oops>")
    >>> 'role="alert"' in html and "&lt;oops&gt;" in html
    True
    """
    if kind not in _CALLOUT_KINDS:
        raise ValueError(f"kind must be one of {_CALLOUT_KINDS}; got {kind!r}.")
    return render_fragment(
        '<div class="callout {{ kind }}"{% if kind == "error" %} role="alert"{% endif %}>'
        "{% if title %}<strong>{{ title }}</strong> {% endif %}{{ message }}"
        '{% if pre %}<pre class="error-text">{{ pre }}</pre>{% endif %}</div>',
        kind=kind,
        title=title,
        message=message,
        pre=pre,
    )


@dataclass(frozen=True)
class Stat:
    """One headline number of :func:`stat_block`.

    Attributes
    ----------
    label : str or Markup
        What the number is.
    value : Cell, str or number
        Shown big; a :class:`Cell` (e.g. from :func:`metric_cell`) also brings its
        interval; numbers are formatted with ``kind``.
    note : str
        A small line under the number.
    kind : str
        Number format for a plain number, see :func:`format_number`.
    """

    label: str | Markup
    value: Any
    note: str = ""
    kind: str = "auto"

    @property
    def cell(self) -> Cell:
        """The value as a :class:`Cell`."""
        return to_cell(self.value, self.kind)


def stat_block(stats: Iterable[Stat]) -> Markup:
    """A row of big numbers with labels (a section's headline figures); empty without stats.

    Parameters
    ----------
    stats : iterable of Stat

    Examples
    --------
    >>> html = stat_block([Stat("Examples kept", 950, note="95.0% of 1,000")])
    >>> "950" in html and "Examples kept" in html
    True
    """
    stats = list(stats)
    if not stats:
        return Markup("")
    return render_fragment(
        """<dl class="stats">{% for s in stats %}{% set c = s.cell %}
<div class="stat"><dt>{{ s.label }}</dt><dd><span class="stat-value">{{ c.text }}</span>
{%- if c.ci %} <span class="ci">{{ c.ci }}</span>{% endif %}
{%- if s.note %}<span class="stat-note">{{ s.note }}</span>{% endif %}</dd></div>
{% endfor %}</dl>""",
        stats=stats,
    )


@dataclass(frozen=True)
class Plot:
    """One image of :func:`figure_block`.

    Attributes
    ----------
    uri : str or None
        A ``data:image/...`` URI (see :func:`spurious.report.plots.figure_to_data_uri`);
        ``None`` (a plot that had nothing to draw) is skipped.
    alt : str
        Text alternative for screen readers.
    caption : str
        Shown under the image.
    """

    uri: str | None
    alt: str
    caption: str = ""


_IMAGE_URI = re.compile(r"data:image/(svg\+xml|png);base64,[A-Za-z0-9+/=]+\Z")


def figure_block(plots: Iterable[Plot]) -> Markup:
    """Figures (inline images with captions) laid out in a responsive grid.

    Only base64 ``data:image/svg+xml`` or ``data:image/png`` URIs are embedded, so a
    figure can never load anything from the network.

    Empty when no plot has a URI.

    Parameters
    ----------
    plots : iterable of Plot

    Examples
    --------
    >>> str(figure_block([Plot(None, "nothing to draw")]))
    ''
    >>> "<figure>" in figure_block([Plot("data:image/png;base64,AAAA", "x", "A plot.")])
    True
    """
    shown = []
    for p in plots:
        if p.uri is None:
            continue
        if not _IMAGE_URI.match(p.uri):
            logger.warning("figure_block: dropping a figure that is not a data: image URI.")
            continue
        shown.append(p)
    if not shown:
        return Markup("")
    return render_fragment(
        """<div class="figures">{% for p in plots %}
<figure><img src="{{ p.uri }}" alt="{{ p.alt }}">
{%- if p.caption %}<figcaption>{{ p.caption }}</figcaption>{% endif %}</figure>
{% endfor %}</div>""",
        plots=shown,
    )


def provenance_block(result: Result) -> Markup:
    """Seed, creation time, library version, dataset fingerprints, timings and versions.

    Examples
    --------
    >>> import pandas as pd
    >>> "fingerprint" in provenance_block(Result("x", pd.DataFrame(), {}))
    True
    """
    prov = result.provenance
    general = {
        "library version": getattr(prov, "library_version", None),
        "seed": getattr(prov, "seed", None),
        "created": getattr(prov, "created", None),
    }
    timings = {k: format_seconds(v) for k, v in (getattr(prov, "timings", {}) or {}).items()}
    return render_fragment(
        """<div class="prov-grid">
<div>{{ kv(general) }}</div>
<div><h5>Dataset fingerprints</h5>{{ kv(fps) }}</div>
<div><h5>Timings</h5>{{ kv(timings) }}</div>
<div><h5>Versions</h5>{{ kv(versions) }}</div>
</div>""",
        kv=kv_table,
        general={k: ("" if v is None else str(v)) for k, v in general.items()},
        fps=dict(getattr(prov, "fingerprints", {}) or {}),
        timings=timings,
        versions=dict(getattr(prov, "versions", {}) or {}),
    )


def section_footer(result: Result, extra: Mapping[str, Markup] | None = None) -> Markup:
    """The folded blocks that end a section: parameters, ``extra``, provenance.

    Parameters
    ----------
    result : Result
    extra : mapping of str to Markup, optional
        ``{title: body}`` blocks shown between the parameters and the provenance.

    Examples
    --------
    >>> import pandas as pd
    >>> html = section_footer(Result("x", pd.DataFrame(), {}, params={"k": 3}))
    >>> html.count("<details")
    2
    """
    parts = [full_table_block(result), details_block("Parameters", kv_table(result.params or {}))]
    parts += [details_block(title, body) for title, body in (extra or {}).items()]
    parts.append(details_block("Provenance", provenance_block(result)))
    return Markup("").join(parts)
