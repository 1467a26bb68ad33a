"""Report sections: one per detector result, looked up in a registry by detector name.

A section renderer is a function ``(DetectorResult) -> Section`` registered with
:func:`register_section`. Detectors without a renderer get :func:`generic_section`;
failed results always get :func:`failed_section`, so a failure is never hidden behind
an empty specialised section.

Safety rule: every HTML fragment is produced by an autoescaping Jinja template
(:func:`render_fragment`), so dataset text (premises, labels, ids, field names, error
messages) is always escaped. ``Section.html_body`` must be :class:`markupsafe.Markup`
built that way; a plain ``str`` is treated as text and escaped.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import numbers
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import pandas as pd
from jinja2 import Environment, StrictUndefined, Template
from markupsafe import Markup, escape

from spurious.report import plots
from spurious.results import DetectorResult

logger = logging.getLogger(__name__)

__all__ = [
    "SECTION_REGISTRY",
    "Cell",
    "Section",
    "SectionRenderer",
    "build_section",
    "details_block",
    "failed_section",
    "format_number",
    "generic_section",
    "get_section_renderer",
    "html_table",
    "kv_table",
    "metric_cell",
    "metrics_table",
    "provenance_block",
    "register_section",
    "render_fragment",
    "scores_preview",
]

#: Longest dataset string shown in a table cell; the full text goes into the tooltip.
MAX_CELL_CHARS = 400
#: Rows of ``scores`` shown by the generic section.
PREVIEW_ROWS = 10
#: Characters of ``details`` JSON shown by the generic section.
MAX_DETAILS_CHARS = 20_000
#: Shown for missing or non-finite numbers.
MISSING = "—"


# ---------------------------------------------------------------------------------------
# Section type and registry
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Section:
    """A rendered report section.

    Attributes
    ----------
    title : str
        Heading (plain text; escaped when rendered).
    html_body : markupsafe.Markup
        Body HTML, built with :func:`render_fragment` or the table helpers. A plain
        ``str`` is escaped (treated as text), never trusted as HTML.
    status : str
        ``"ok"``, ``"failed"`` or ``"error"`` (could not be loaded/rendered); drives the
        badge next to the heading and in the table of contents.
    summary : str
        One line for the overview table (plain text).
    """

    title: str
    html_body: Markup
    status: str = "ok"
    summary: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.html_body, Markup):
            # Only Markup is trusted; anything else may carry dataset text.
            object.__setattr__(self, "html_body", escape(str(self.html_body)))


SectionRenderer = Callable[[DetectorResult], Section]
_F = TypeVar("_F", bound=SectionRenderer)

#: detector name -> section renderer. Filled by :func:`register_section`.
SECTION_REGISTRY: dict[str, SectionRenderer] = {}


def register_section(detector: str, *, replace: bool = False) -> Callable[[_F], _F]:
    """Decorator registering the report section renderer for ``detector``.

    Parameters
    ----------
    detector : str
        The detector's registry name (``DetectorResult.detector``).
    replace : bool
        Allow replacing an existing renderer (otherwise a duplicate raises ``ValueError``).

    Returns
    -------
    callable
        The decorator; it returns the function unchanged.

    Examples
    --------
    >>> @register_section("my_detector", replace=True)
    ... def _my_section(result):
    ...     body = render_fragment("<p>{{ s }}</p>", s=result.summary)
    ...     return Section(title="My detector", html_body=body)
    >>> get_section_renderer("my_detector") is _my_section
    True
    >>> del SECTION_REGISTRY["my_detector"]
    """
    if not detector or not isinstance(detector, str):
        raise ValueError(f"register_section needs a non-empty detector name; got {detector!r}.")

    def decorator(func: _F) -> _F:
        existing = SECTION_REGISTRY.get(detector)
        if existing is not None and existing is not func and not replace:
            raise ValueError(
                f"A report section for {detector!r} is already registered "
                f"({existing.__qualname__}); pass replace=True to override it."
            )
        SECTION_REGISTRY[detector] = func
        return func

    return decorator


def get_section_renderer(detector: str) -> SectionRenderer:
    """The renderer registered for ``detector``, or :func:`generic_section`.

    Examples
    --------
    >>> get_section_renderer("no_such_detector") is generic_section
    True
    """
    return SECTION_REGISTRY.get(detector, generic_section)


def build_section(result: DetectorResult) -> Section:
    """Render the section for ``result``, never raising.

    Failed results get :func:`failed_section`. If the registered renderer raises, the
    error is logged and the generic section is shown with a note, so one broken renderer
    cannot take down the whole report.

    Examples
    --------
    >>> import pandas as pd
    >>> r = DetectorResult("x", pd.DataFrame({"id": [1]}), {"auc": 0.7}, summary="ok")
    >>> build_section(r).status
    'ok'
    """
    if result.status != "ok":
        return failed_section(result)
    renderer = get_section_renderer(result.detector)
    try:
        section = renderer(result)
    except Exception as e:  # a report must survive any renderer bug
        logger.exception(
            "Report section for %r failed; using the generic section.", result.detector
        )
        if renderer is generic_section:
            return _error_section(
                result.detector, f"The report section could not be rendered: {e!r}"
            )
        note = render_fragment(
            '<div class="callout warn"><strong>Specialised view unavailable.</strong> '
            "The {{ name }} section raised {{ err }}; showing the generic view.</div>",
            name=result.detector,
            err=repr(e),
        )
        generic = generic_section(result)
        return Section(
            title=generic.title,
            html_body=note + generic.html_body,
            status=generic.status,
            summary=generic.summary,
        )
    if not section.summary and result.summary:
        section = Section(section.title, section.html_body, section.status, result.summary)
    return section


def _error_section(name: str, message: str) -> Section:
    body = render_fragment(
        '<div class="callout error"><strong>Error.</strong><pre class="error-text">{{ m }}</pre>'
        "</div>",
        m=message,
    )
    return Section(title=name, html_body=body, status="error", summary=message)


# ---------------------------------------------------------------------------------------
# Fragment rendering (the only way HTML is built)
# ---------------------------------------------------------------------------------------
_ENV = Environment(
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


@functools.lru_cache(maxsize=128)
def _compile(source: str) -> Template:
    return _ENV.from_string(source)


def render_fragment(source: str, /, **context: Any) -> Markup:
    """Render a Jinja template string with autoescaping on and return it as Markup.

    Parameters
    ----------
    source : str
        Template source. Values from ``context`` are escaped unless they are already
        :class:`markupsafe.Markup`.
    **context
        Template variables.

    Returns
    -------
    markupsafe.Markup

    Examples
    --------
    >>> str(render_fragment("<p>{{ t }}</p>", t="<b>x</b>"))
    '<p>&lt;b&gt;x&lt;/b&gt;</p>'
    """
    return Markup(_compile(source).render(**context))


# ---------------------------------------------------------------------------------------
# Formatting helpers
# ---------------------------------------------------------------------------------------
def _as_float(value: Any) -> float | None:
    """Finite float or ``None`` (missing, NaN, inf, non-numeric, bool)."""
    if value is None or isinstance(value, bool | np.bool_):
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def format_number(value: Any, kind: str = "auto", digits: int = 3) -> str:
    """Format a metric value for display.

    Parameters
    ----------
    value : number or None
        Missing, NaN and infinite values give ``"—"``.
    kind : {"auto", "float", "percent", "signed", "int"}
        ``percent`` multiplies by 100 and appends ``%``; ``signed`` always shows the sign.
    digits : int
        Decimals for ``float``/``signed`` (``percent`` uses one fewer, at least 1).

    Examples
    --------
    >>> format_number(0.61234), format_number(0.893, "percent"), format_number(0.25, "signed")
    ('0.612', '89.3%', '+0.250')
    >>> format_number(12000), format_number(float("nan"))
    ('12,000', '—')
    """
    f = _as_float(value)
    if f is None:
        return MISSING
    if kind == "percent":
        return f"{100.0 * f:.{max(digits - 2, 1)}f}%"
    if kind == "signed":
        return f"{f:+.{digits}f}"
    if kind == "int" or (
        kind == "auto"
        # Detectors store counts as floats (n_eval=200.0); show those as integers. 0 and 1
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


@dataclass(frozen=True)
class Cell:
    """A table cell with display text and a sort key.

    Attributes
    ----------
    text : str or Markup
        Shown text (escaped unless Markup).
    ci : str
        Confidence interval shown after the value, e.g. ``"[0.58, 0.64]"``.
    sort : str
        ``data-sort`` value for the sortable-table script ("" sorts last).
    numeric : bool
        Right-aligned, tabular digits.
    title : str
        Tooltip (the full text when ``text`` was truncated).
    css : str
        Extra CSS classes.
    """

    text: str | Markup
    ci: str = ""
    sort: str | None = None
    numeric: bool = False
    title: str = ""
    css: str = ""

    @property
    def classes(self) -> str:
        """The ``class`` attribute of the ``<td>``."""
        return " ".join(c for c in ("num" if self.numeric else "", self.css) if c)


def _truncate(text: str, limit: int = MAX_CELL_CHARS) -> tuple[str, str]:
    """``(shown, tooltip)``: the tooltip holds the full text only when it was cut."""
    if len(text) <= limit:
        return text, ""
    return text[: limit - 1].rstrip() + "…", text


def to_cell(value: Any, kind: str = "auto") -> Cell:
    """Convert any value to a :class:`Cell` (numbers formatted, long text truncated).

    Examples
    --------
    >>> to_cell(0.5).text, to_cell("abc").text, to_cell(None).text
    ('0.500', 'abc', '—')
    """
    if isinstance(value, Cell):
        return value
    if isinstance(value, Markup):
        return Cell(text=value)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return Cell(text=MISSING, sort="", numeric=True, css="missing")
    if isinstance(value, bool | np.bool_):
        return Cell(text="yes" if value else "no", sort="1" if value else "0")
    if isinstance(value, numbers.Number):
        f = _as_float(value)
        return Cell(
            text=format_number(value, kind),
            sort="" if f is None else repr(f),
            numeric=True,
            css="" if f is not None else "missing",
        )
    if isinstance(value, dict | list | tuple):
        value = json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
    shown, tooltip = _truncate(str(value))
    # Long free text may wrap anywhere; short values (ids, labels) keep whole words.
    return Cell(
        text=shown,
        title=tooltip,
        sort=None,
        css="text" if len(shown) > 40 else "nowrap" if len(shown) <= 24 else "",
    )


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
    f = _as_float(value)
    low, high = _as_float(metrics.get(f"{name}_ci_low")), _as_float(metrics.get(f"{name}_ci_high"))
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
    title = "bootstrap 95% interval" if ci else ""
    return Cell(
        text=format_number(value, kind),
        ci=ci,
        sort="" if f is None else repr(f),
        numeric=True,
        title=title,
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


def html_table(
    headers: Sequence[str | Markup | tuple[str | Markup, str]],
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

    Returns
    -------
    markupsafe.Markup

    Examples
    --------
    >>> html = html_table(["name", "value"], [["<b>", 1.5]])
    >>> "&lt;b&gt;" in html and "<b>" not in html
    True
    """
    hdrs = [_Header(*h) if isinstance(h, tuple) else _Header(h) for h in headers]
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


def kv_table(
    items: Mapping[str, Any] | Iterable[tuple[str, Any]], *, caption: str | None = None
) -> Markup:
    """Two-column key/value table (nested values shown as compact JSON).

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


def details_block(summary: str, body: Markup, *, open_: bool = False) -> Markup:
    """A collapsible ``<details>`` block (readable without JavaScript).

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


_CI_SUFFIXES = ("_ci_low", "_ci_high")


def metrics_table(metrics: Mapping[str, Any], *, caption: str | None = None) -> Markup:
    """Table of all metrics, each with its ``[ci_low, ci_high]`` interval when present.

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


def _cell_value(value: Any) -> Any:
    """Unwrap numpy scalars so :func:`to_cell` formats them as numbers."""
    if isinstance(value, np.generic):
        return value.item()
    return value


def scores_preview(scores: pd.DataFrame | None, n: int = PREVIEW_ROWS) -> Markup:
    """The first ``n`` rows of a scores frame as an escaped table.

    Examples
    --------
    >>> import pandas as pd
    >>> "<table" in scores_preview(pd.DataFrame({"id": ["a"], "score": [0.3]}))
    True
    """
    if scores is None or scores.empty:
        return render_fragment('<p class="muted">No per-example scores.</p>')
    head = scores.head(n)
    rows = [[_cell_value(v) for v in rec] for rec in head.itertuples(index=False, name=None)]
    caption = f"First {len(head)} of {len(scores):,} rows, {scores.shape[1]} columns."
    return html_table([str(c) for c in head.columns], rows, caption=caption, wide=True)


def provenance_block(result: DetectorResult) -> Markup:
    """Seed, creation time, library version, dataset fingerprints, timings and versions.

    Examples
    --------
    >>> import pandas as pd
    >>> "fingerprint" in provenance_block(DetectorResult("x", pd.DataFrame(), {}))
    True
    """
    prov = result.provenance
    general = {
        "library version": getattr(prov, "library_version", None),
        "seed": getattr(prov, "seed", None),
        "created": getattr(prov, "created", None),
    }
    fps = dict(getattr(prov, "fingerprints", {}) or {})
    timings = {k: _seconds(v) for k, v in (getattr(prov, "timings", {}) or {}).items()}
    versions = dict(getattr(prov, "versions", {}) or {})
    return render_fragment(
        """<div class="prov-grid">
<div>{{ kv(general) }}</div>
<div><h5>Dataset fingerprints</h5>{{ kv(fps) }}</div>
<div><h5>Timings</h5>{{ kv(timings) }}</div>
<div><h5>Versions</h5>{{ kv(versions) }}</div>
</div>""",
        kv=kv_table,
        general={k: ("" if v is None else str(v)) for k, v in general.items()},
        fps=fps,
        timings=timings,
        versions=versions,
    )


def _seconds(value: Any) -> Any:
    f = _as_float(value)
    if f is None:
        return value
    return f"{f:,.2f} s" if f < 600 else f"{f:,.0f} s ({f / 60:.1f} min)"


def _params_and_provenance(
    result: DetectorResult, extra: Mapping[str, Markup] | None = None
) -> Markup:
    parts = [details_block("Parameters", kv_table(result.params or {}))]
    for title, body in (extra or {}).items():
        parts.append(details_block(title, body))
    parts.append(details_block("Provenance", provenance_block(result)))
    return Markup("").join(parts)


# ---------------------------------------------------------------------------------------
# Generic and failed sections
# ---------------------------------------------------------------------------------------
_SUMMARY = '{% if s %}<p class="summary">{{ s }}</p>{% endif %}'


def generic_section(result: DetectorResult) -> Section:
    """Fallback section: summary, metrics, scores preview, details, params, provenance.

    Parameters
    ----------
    result : DetectorResult

    Returns
    -------
    Section

    Examples
    --------
    >>> import pandas as pd
    >>> s = generic_section(DetectorResult("x", pd.DataFrame({"id": [1]}), {"m": 1.0}))
    >>> s.title
    'x'
    """
    details_json = ""
    if result.details:
        details_json = json.dumps(
            result.details, indent=2, sort_keys=True, ensure_ascii=False, default=str
        )
        if len(details_json) > MAX_DETAILS_CHARS:
            details_json = details_json[:MAX_DETAILS_CHARS] + "\n… (truncated)"
    extra = {}
    if details_json:
        extra["Details (JSON)"] = render_fragment('<pre class="json">{{ j }}</pre>', j=details_json)
    body = render_fragment(
        _SUMMARY
        + """<h4>Metrics</h4>{{ metrics }}
<h4>Per-example scores</h4>{{ preview }}
{{ more }}""",
        s=result.summary,
        metrics=metrics_table(result.metrics or {}),
        preview=scores_preview(result.scores),
        more=_params_and_provenance(result, extra),
    )
    return Section(
        title=result.detector, html_body=body, status=result.status, summary=result.summary
    )


def failed_section(result: DetectorResult) -> Section:
    """Section for a failed detector: the error up front, then whatever was recorded.

    Examples
    --------
    >>> import pandas as pd
    >>> r = DetectorResult("x", pd.DataFrame(), {}, status="failed", error="boom")
    >>> s = failed_section(r)
    >>> s.status, "boom" in s.html_body
    ('failed', True)
    """
    error = result.error or "(no error message was recorded)"
    parts = [
        render_fragment(
            '<div class="callout error" role="alert"><strong>This detector failed'
            "{% if status != 'failed' %} (status: {{ status }}){% endif %}.</strong>"
            '<pre class="error-text">{{ e }}</pre></div>' + _SUMMARY,
            e=error,
            status=result.status,
            s=result.summary,
        )
    ]
    if result.metrics:
        parts.append(
            render_fragment(
                "<h4>Metrics recorded before the failure</h4>{{ t }}",
                t=metrics_table(result.metrics),
            )
        )
    if result.scores is not None and not result.scores.empty:
        parts.append(
            render_fragment("<h4>Per-example scores</h4>{{ t }}", t=scores_preview(result.scores))
        )
    parts.append(_params_and_provenance(result))
    first_line = error.strip().splitlines()[0] if error.strip() else error
    return Section(
        title=result.detector,
        html_body=Markup("").join(parts),
        status="failed",
        summary=f"failed: {first_line}",
    )


# ---------------------------------------------------------------------------------------
# partial_input (Saxon et al., Sec. 2.1-2.2 and 3.1)
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Condition:
    key: str
    fields: tuple[str, ...] = ()
    is_partial: bool = True

    @property
    def label(self) -> str:
        return self.key.replace("_", " ")


_PI_PREFIXES = ("accuracy_", "delta_maj_", "recovery_", "nba_", "nbr_")
_PI_NON_CONDITION = {"majority_accuracy", "n_train", "n_eval"}


def _pi_conditions(result: DetectorResult) -> list[_Condition]:
    """Conditions from ``details["conditions"]``, else inferred from metric/score names."""
    out: list[_Condition] = []
    seen: set[str] = set()
    for c in (result.details or {}).get("conditions") or []:
        if not isinstance(c, Mapping) or not c.get("view"):
            continue
        key = str(c["view"])
        if key in seen:
            continue
        seen.add(key)
        raw_fields = c.get("fields") or []
        if isinstance(raw_fields, str):
            raw_fields = [raw_fields]
        fields = tuple(str(f) for f in raw_fields)
        out.append(_Condition(key, fields, bool(c.get("is_partial", key != "full"))))
    if out:
        return out
    # Inference: anything with a delta/recovery metric is partial; accuracy_full is full.
    names: list[str] = []
    for k in result.metrics or {}:
        if k in _PI_NON_CONDITION or k.endswith(_CI_SUFFIXES):
            continue
        for prefix in _PI_PREFIXES:
            if k.startswith(prefix):
                names.append(k[len(prefix) :])
                break
    if result.scores is not None:
        names += [c[len("pred_") :] for c in result.scores.columns if str(c).startswith("pred_")]
    for key in names:
        if key and key not in seen:
            seen.add(key)
            out.append(_Condition(key, (), key != "full"))
    return sorted(out, key=lambda c: (c.is_partial, c.key))


def _flags(values: Any) -> np.ndarray:
    """Boolean flags from a column that may hold bools, 0/1 or missing values."""
    return pd.to_numeric(pd.Series(values), errors="coerce").fillna(0).astype(bool).to_numpy()


def _label_name(value: Any, label_names: Sequence[str]) -> Any:
    """Map an integer class id to its name when the names are known."""
    v = _cell_value(value)
    if (
        isinstance(v, numbers.Integral)
        and not isinstance(v, bool)
        and 0 <= int(v) < len(label_names)
    ):
        return label_names[int(v)]
    if isinstance(v, float) and v.is_integer() and 0 <= int(v) < len(label_names):
        return label_names[int(v)]
    return v


_PI_HEADERS = {
    "acc": (Markup("Accuracy <span class='sub'>A<sub>SSC</sub> / A<sub>PSC</sub></span>"),
            "Accuracy on the evaluation split (Eq. 2-3)"),
    "delta": (Markup("Δ<sub>maj</sub>"), "Accuracy minus majority-class accuracy (Eq. 4)"),
    "recovery": (Markup("%R<sub>R</sub>"), "Partial-input accuracy / full-input accuracy (Eq. 5)"),
    "nba": (Markup("NBA"), "Fraction of examples where partial and full models agree (Eq. 7)"),
    "nbr": (Markup("NBR"), "Of the agreeing examples, fraction both classify correctly (Eq. 8)"),
}  # fmt: skip

_PI_LEGEND = """<p class="legend">
<strong>A<sub>SSC</sub></strong>: accuracy of a model that sees only the partial input;
<strong>A<sub>PSC</sub></strong>: accuracy with the full input.
<strong>Δ<sub>maj</sub></strong> = A<sub>SSC</sub> − majority-class accuracy (Eq. 4);
<strong>%R<sub>R</sub></strong> = A<sub>SSC</sub> / A<sub>PSC</sub> (Eq. 5);
<strong>NBA</strong>: share of examples where the partial- and full-input models agree (Eq. 7);
<strong>NBR</strong>: of those, the share both classify correctly (Eq. 8).
Brackets give the bootstrap 95% interval. High A<sub>SSC</sub>, Δ<sub>maj</sub> and %R<sub>R</sub>
mean the label leaks through the partial input.</p>"""


def _pi_metrics_table(conds: list[_Condition], m: Mapping[str, Any]) -> Markup:
    dash = Cell(text=MISSING, sort="", numeric=True, css="na")
    rows: list[list[Any]] = []
    classes: list[str] = []

    def cond_cell(c: _Condition, note: str | Markup) -> Cell:
        fields = " + ".join(c.fields)
        return Cell(
            text=render_fragment(
                '<span class="cond">{{ n }}</span>'
                '{% if f %}<span class="fields">{{ f }}</span>{% endif %}'
                '<span class="role">{{ note }}</span>',
                n=c.label,
                f=fields,
                note=note,
            ),
            sort=c.key,
        )

    for c in conds:
        if c.is_partial:
            continue
        rows.append(
            [
                cond_cell(c, Markup("full input, A<sub>PSC</sub>")),
                metric_cell(m, f"accuracy_{c.key}"),
                dash,
                dash,
                dash,
                dash,
            ]
        )
        classes.append("full")
    for c in conds:
        if not c.is_partial:
            continue
        k = c.key
        rows.append(
            [
                cond_cell(c, Markup("partial input, A<sub>SSC</sub>")),
                metric_cell(m, f"accuracy_{k}"),
                metric_cell(m, f"delta_maj_{k}", "signed"),
                metric_cell(m, f"recovery_{k}", "percent"),
                metric_cell(m, f"nba_{k}"),
                metric_cell(m, f"nbr_{k}"),
            ]
        )
        classes.append("partial")
    if "majority_accuracy" in m:
        rows.append(
            [
                Cell(
                    text=render_fragment(
                        '<span class="cond">majority baseline</span><span class="role">'
                        "always predict the most frequent training label</span>"
                    ),
                    sort="~majority",
                ),
                metric_cell(m, "majority_accuracy"),
                dash,
                dash,
                dash,
                dash,
            ]
        )
        classes.append("baseline")
    if not rows:
        return render_fragment('<p class="muted">No accuracy metrics recorded.</p>')
    return html_table(
        [
            ("Condition", "input the model saw"),
            *(_PI_HEADERS[k] for k in ("acc", "delta", "recovery", "nba", "nbr")),
        ],
        rows,
        row_classes=classes,
        css="metrics pi-metrics",
    ) + render_fragment(_PI_LEGEND)


def _pi_stats(conds: list[_Condition], m: Mapping[str, Any], scores: pd.DataFrame | None) -> Markup:
    """Headline numbers: full accuracy, majority, worst partial condition, flagged count."""
    stats: list[tuple[str | Markup, Cell, str]] = []
    full = next((c for c in conds if not c.is_partial), None)
    if full is not None and f"accuracy_{full.key}" in m:
        stats.append(
            (
                Markup("Full-input accuracy A<sub>PSC</sub>"),
                metric_cell(m, f"accuracy_{full.key}"),
                "",
            )
        )
    if "majority_accuracy" in m:
        stats.append(("Majority baseline", metric_cell(m, "majority_accuracy"), ""))
    partial = [
        c for c in conds if c.is_partial and _as_float(m.get(f"recovery_{c.key}")) is not None
    ]
    if partial:
        worst = max(partial, key=lambda c: float(m[f"recovery_{c.key}"]))
        stats.append(
            (
                Markup("Highest recovery %R<sub>R</sub>"),
                metric_cell(m, f"recovery_{worst.key}", "percent"),
                worst.label,
            )
        )
    if scores is not None and "is_partial_input_issue" in scores.columns and len(scores):
        flagged = int(_flags(scores["is_partial_input_issue"]).sum())
        stats.append(
            (
                "Flagged examples",
                Cell(text=f"{flagged:,}"),
                f"{flagged / len(scores):.1%} of {len(scores):,}",
            )
        )
    for key, label in (("n_train", "Training examples"), ("n_eval", "Evaluation examples")):
        if key in m:
            stats.append((label, Cell(text=format_number(m[key], "int")), ""))
    if not stats:
        return Markup("")
    return render_fragment(
        """<dl class="stats">{% for label, cell, note in stats %}
<div class="stat"><dt>{{ label }}</dt><dd><span class="stat-value">{{ cell.text }}</span>
{%- if cell.ci %} <span class="ci">{{ cell.ci }}</span>{% endif %}
{%- if note %}<span class="stat-note">{{ note }}</span>{% endif %}</dd></div>
{% endfor %}</dl>""",
        stats=stats,
    )


def _pi_plots(conds: list[_Condition], m: Mapping[str, Any], scores: pd.DataFrame | None) -> Markup:
    figures: list[tuple[str, str, str]] = []
    bars = [
        plots.BarSpec(
            label=c.label,
            value=_as_float(m.get(f"accuracy_{c.key}")),
            low=_as_float(m.get(f"accuracy_{c.key}_ci_low")),
            high=_as_float(m.get(f"accuracy_{c.key}_ci_high")),
            kind="partial" if c.is_partial else "full",
        )
        for c in sorted(conds, key=lambda c: c.is_partial)
    ]
    try:
        uri = plots.accuracy_plot(bars, baseline=_as_float(m.get("majority_accuracy")))
    except Exception:  # a plot is decoration; the tables carry the numbers
        logger.exception("partial_input: accuracy plot failed")
        uri = None
    if uri:
        figures.append(
            (
                uri,
                "Accuracy per input condition with bootstrap 95% error bars; "
                "dashed line: majority baseline.",
                "Accuracy per condition. Error bars: bootstrap 95% interval; "
                "dashed line: majority-class baseline.",
            )
        )
    if scores is not None and "partial_input_score" in scores.columns and len(scores):
        flagged = None
        if "is_partial_input_issue" in scores.columns:
            flagged = _flags(scores["is_partial_input_issue"])
        try:
            uri = plots.score_histogram(
                scores["partial_input_score"].to_numpy(),
                flagged=flagged,
                xlabel="partial-input score (max p(gold) over partial conditions)",
            )
        except Exception:
            logger.exception("partial_input: score histogram failed")
            uri = None
        if uri:
            figures.append(
                (
                    uri,
                    "Histogram of per-example partial-input scores.",
                    "Per-example partial-input score: the highest probability of the gold label "
                    "given by any partial-input model.",
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


def _pi_per_class(conds: list[_Condition], details: Mapping[str, Any]) -> Markup:
    pca = details.get("per_class_accuracy")
    if not isinstance(pca, Mapping) or not pca:
        return Markup("")
    order = [c.key for c in sorted(conds, key=lambda c: c.is_partial) if c.key in pca]
    order += [k for k in pca if k not in order]
    names: list[str] = [str(x) for x in details.get("label_names") or []]
    # Per-class keys may be label names or (JSON-stringified) class ids; show names.
    table: dict[str, dict[str, Any]] = {name: {} for name in names}
    for k in order:
        per_label = pca.get(k)
        for lab, acc in per_label.items() if isinstance(per_label, Mapping) else []:
            lab = str(lab)
            if lab.isdigit() and lab not in table and int(lab) < len(names):
                lab = names[int(lab)]
            table.setdefault(lab, {})[k] = acc
    rows = [[lab, *(_as_float(accs.get(k)) for k in order)] for lab, accs in table.items()]
    return render_fragment(
        "<h4>Accuracy per gold label</h4>{{ t }}",
        t=html_table(["label", *[k.replace("_", " ") for k in order]], rows, css="compact"),
    )


_PI_KNOWN_KEYS = {"id", "label", "partial_input_score", "is_partial_input_issue"}
_PI_KNOWN_PREFIXES = ("pred_", "p_gold_", "correct_")


def _pi_top_examples(
    conds: list[_Condition], details: Mapping[str, Any], scores: pd.DataFrame | None
) -> Markup:
    raw = details.get("top_examples")
    examples = [e for e in raw if isinstance(e, Mapping)] if isinstance(raw, list) else []
    label_names = [str(x) for x in details.get("label_names") or []]
    if not examples and scores is not None and "partial_input_score" in scores.columns:
        # Scores carry no text, but ids and predictions still point at the leakiest rows.
        top = scores.sort_values("partial_input_score", ascending=False, kind="stable").head(20)
        examples = [
            dict(zip(top.columns, map(_cell_value, rec), strict=True))
            for rec in top.itertuples(index=False, name=None)
        ]
    if not examples:
        return Markup("")
    text_fields: list[str] = []
    for c in sorted(conds, key=lambda c: c.is_partial):
        text_fields += [f for f in c.fields if f not in text_fields]
    present = {k for e in examples for k in e}
    text_fields = [f for f in text_fields if f in present]
    # Keys we do not know are still shown: nothing the detector recorded is dropped.
    extra = sorted(
        k
        for k in present
        if k not in _PI_KNOWN_KEYS and not k.startswith(_PI_KNOWN_PREFIXES) and k not in text_fields
    )
    cond_keys = [c.key for c in sorted(conds, key=lambda c: c.is_partial)]
    cond_keys += sorted(
        {k[len("pred_") :] for k in present if k.startswith("pred_")} - set(cond_keys)
    )
    cond_keys = [k for k in cond_keys if f"pred_{k}" in present or f"p_gold_{k}" in present]

    headers: list[Any] = [
        ("#", "rank by partial-input score"),
        "id",
        *text_fields,
        *extra,
        "gold label",
    ]
    headers += [
        (k.replace("_", " "), f"prediction of the {k} model (probability of the gold label)")
        for k in cond_keys
    ]
    headers.append(("score", "partial-input score: max p(gold) over partial conditions"))
    rows = []
    for rank, e in enumerate(examples, start=1):
        gold = _label_name(e.get("label"), label_names)
        row: list[Any] = [rank, e.get("id")]
        row += [e.get(f) for f in text_fields]
        row += [e.get(k) for k in extra]
        row.append(
            Cell(text=str(gold) if gold is not None else MISSING, sort=str(gold), css="label")
        )
        for k in cond_keys:
            pred = _label_name(e.get(f"pred_{k}"), label_names)
            p = _as_float(e.get(f"p_gold_{k}"))
            hit = pred is not None and gold is not None and str(pred) == str(gold)
            text = render_fragment(
                "{{ pred }}{% if p is not none %} "
                '<span class="p">({{ "%.2f"|format(p) }})</span>{% endif %}',
                pred=MISSING if pred is None else str(pred),
                p=p,
            )
            row.append(
                Cell(
                    text=text,
                    sort="" if p is None else repr(p),
                    css="pred hit" if hit else "pred miss",
                )
            )
        row.append(_as_float(e.get("partial_input_score")))
        rows.append(row)
    return render_fragment(
        """<h4>Most leaky examples</h4>
<p class="muted">Evaluation examples whose gold label is easiest to predict from
partial input alone. Predictions that match the gold label are marked
<span class="pred hit">green</span>; the number in parentheses is p(gold).</p>
{{ t }}""",
        t=html_table(headers, rows, css="examples", wide=True),
    )


@register_section("partial_input")
def partial_input_section(result: DetectorResult) -> Section:
    """Section for the partial-input (hypothesis-only / single-sentence) detector.

    Shows A_PSC, A_SSC, Δ_maj, %R_R, NBA and NBR with bootstrap intervals (Saxon et al.,
    Eqs. 2-8), an accuracy-per-condition plot with a majority baseline, a histogram of
    per-example partial-input scores, per-label accuracy and the most leaky examples.
    Missing metrics or details are skipped, so a partially filled result still renders.

    Parameters
    ----------
    result : DetectorResult

    Returns
    -------
    Section

    Examples
    --------
    >>> import pandas as pd
    >>> r = DetectorResult("partial_input", pd.DataFrame({"id": [0]}),
    ...                    {"accuracy_full": 0.8, "accuracy_hypothesis_only": 0.6})
    >>> "0.600" in partial_input_section(r).html_body
    True
    """
    m = result.metrics or {}
    details = result.details or {}
    conds = _pi_conditions(result)
    featurizer = details.get("featurizer")
    extra: dict[str, Markup] = {}
    if isinstance(featurizer, Mapping) and featurizer:
        extra["Featurizer"] = kv_table(featurizer)
    other_metrics = {
        k: v
        for k, v in m.items()
        if not k.startswith(_PI_PREFIXES)
        and not k.startswith("majority_accuracy")
        and k not in ("n_train", "n_eval")
    }
    if other_metrics:
        extra["Other metrics"] = metrics_table(other_metrics)
    extra["All per-example scores (first rows)"] = scores_preview(result.scores)
    body = render_fragment(
        _SUMMARY
        + """{{ stats }}
<h4>Leakage metrics</h4>
{{ table }}
{{ figs }}
{{ per_class }}
{{ examples }}
{{ more }}""",
        s=result.summary,
        stats=_pi_stats(conds, m, result.scores),
        table=_pi_metrics_table(conds, m),
        figs=_pi_plots(conds, m, result.scores),
        per_class=_pi_per_class(conds, details),
        examples=_pi_top_examples(conds, details, result.scores),
        more=_params_and_provenance(result, extra),
    )
    return Section(
        title="partial_input — partial-input baselines", html_body=body, summary=result.summary
    )
