"""Report sections: one per analysis result, looked up in a registry by analysis name.

A section renderer is a function ``(Result) -> Section`` (:data:`SectionRenderer`)
registered with :func:`register_section`; it assembles its section with
:func:`result_section`, so every section has the same frame: the result's summary line,
the renderer's own blocks, then the folded parameters, extras and provenance. Analyses
without a renderer get :func:`generic_section`; failed results always get
:func:`failed_section` and skipped ones :func:`skipped_section`, so a failure is never
hidden behind an empty specialised section.

**Adding a section is adding one file** to this package: every module in it is imported
when the package is, so its ``@register_section("name")`` runs. A section module builds
its HTML from :mod:`spurious.report.components` and its plots with
:mod:`spurious.report.plots`, and imports nothing private from other modules.

Safety rule: ``Section.html_body`` must be :class:`markupsafe.Markup` built by the
autoescaping helpers of :mod:`spurious.report.components`; a plain ``str`` is treated as
text and escaped, so dataset text is never trusted as HTML.

Examples
--------
>>> import pandas as pd
>>> from spurious.results import Result
>>> section = build_section(Result("my_analysis", pd.DataFrame({"id": [1]}), {"auc": 0.7}))
>>> section.title, section.status
('my_analysis', 'ok')
"""

from __future__ import annotations

import importlib
import json
import logging
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TypeVar

from markupsafe import Markup, escape

from spurious.report.components import (
    MAX_DETAILS_CHARS,
    callout,
    metrics_table,
    render_fragment,
    scores_preview,
    section_footer,
    summary_line,
)
from spurious.results import Result
from spurious.utils.registry import Registry

logger = logging.getLogger(__name__)

__all__ = [
    "SECTION_REGISTRY",
    "STATUSES",
    "Section",
    "SectionRenderer",
    "build_section",
    "error_section",
    "failed_section",
    "generic_section",
    "get_section_renderer",
    "register_section",
    "result_section",
    "skipped_section",
]

#: Section states: a result's status, or ``"error"`` (could not be loaded or rendered).
STATUSES = ("ok", "failed", "skipped", "error")


@dataclass(frozen=True)
class Section:
    """A rendered report section.

    Attributes
    ----------
    title : str
        Heading (plain text; escaped when rendered).
    html_body : markupsafe.Markup
        Body HTML, built with the helpers of :mod:`spurious.report.components`. A plain
        ``str`` is escaped (treated as text), never trusted as HTML.
    status : {"ok", "failed", "skipped", "error"}
        Drives the badge next to the heading and where the overview lists the analysis.
    summary : str
        One line (plain text) for the overview when the result has no headline.

    Examples
    --------
    >>> Section("t", "<b>text, not HTML</b>").html_body
    Markup('&lt;b&gt;text, not HTML&lt;/b&gt;')
    """

    title: str
    html_body: Markup
    status: str = "ok"
    summary: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.html_body, Markup):
            # Only Markup is trusted; anything else may carry dataset text.
            object.__setattr__(self, "html_body", escape(str(self.html_body)))


SectionRenderer = Callable[[Result], Section]
_F = TypeVar("_F", bound=SectionRenderer)

#: analysis name -> section renderer; filled by :func:`register_section`.
SECTION_REGISTRY: Registry[SectionRenderer] = Registry("report section")


def register_section(name: str, *, replace: bool = False) -> Callable[[_F], _F]:
    """Decorator registering the report section renderer for the analysis ``name``.

    Parameters
    ----------
    name : str
        The analysis' registry name (``Result.name``).
    replace : bool
        Allow replacing an existing renderer (otherwise a second renderer under the
        same name raises ``ValueError``).

    Returns
    -------
    callable
        The decorator; it returns the function unchanged.

    Examples
    --------
    >>> from spurious.report.components import render_fragment
    >>> @register_section("my_analysis", replace=True)
    ... def my_section(result):
    ...     body = render_fragment("<p>{{ s }}</p>", s=result.summary)
    ...     return Section(title="My analysis", html_body=body)
    >>> get_section_renderer("my_analysis") is my_section
    True
    >>> SECTION_REGISTRY.unregister("my_analysis")
    """
    return SECTION_REGISTRY.decorator(name, replace=replace)  # type: ignore[return-value]


def get_section_renderer(name: str, *, strict: bool = False) -> SectionRenderer:
    """The renderer registered for ``name``, or :func:`generic_section`.

    Parameters
    ----------
    name : str
        Analysis name.
    strict : bool
        Raise :class:`~spurious.exceptions.ParameterError` (listing the registered
        names) instead of falling back to the generic section.

    Returns
    -------
    callable

    Examples
    --------
    >>> get_section_renderer("no_such_analysis") is generic_section
    True
    """
    if strict or name in SECTION_REGISTRY:
        return SECTION_REGISTRY.get(name)
    return generic_section


def build_section(result: Result) -> Section:
    """Render the section for ``result``, never raising.

    Failed results get :func:`failed_section` and skipped ones :func:`skipped_section`.
    If the registered renderer raises, the error is logged and the generic section is
    shown with a note, so one broken renderer cannot take down the whole report.

    Examples
    --------
    >>> import pandas as pd
    >>> r = Result("x", pd.DataFrame({"id": [1]}), {"auc": 0.7}, summary="fine")
    >>> build_section(r).status
    'ok'
    >>> build_section(Result("x", pd.DataFrame(), {}, status="skipped", error="no eval")).status
    'skipped'
    """
    if result.status == "skipped":
        return skipped_section(result)
    if result.status != "ok":
        return failed_section(result)
    renderer = get_section_renderer(result.name)
    try:
        section = renderer(result)
    except Exception as e:  # a report must survive any renderer bug
        logger.exception("Report section for %r failed; using the generic section.", result.name)
        if renderer is generic_section:
            return error_section(result.name, f"The report section could not be rendered: {e!r}")
        note = callout(
            render_fragment(
                "The {{ name }} section raised {{ err }}; showing the generic view.",
                name=result.name,
                err=repr(e),
            ),
            title="Specialised view unavailable.",
        )
        generic = generic_section(result)
        return replace(generic, html_body=note + generic.html_body)
    if not section.summary and result.summary:
        section = replace(section, summary=result.summary)
    return section


def result_section(
    result: Result,
    *blocks: Markup,
    title: str | None = None,
    extra: Mapping[str, Markup] | None = None,
    lead: Markup | None = None,
    status: str | None = None,
    summary: str | None = None,
) -> Section:
    """Assemble the section of ``result``: summary line, ``blocks``, then the footer.

    Every section is built here, so each shows its own content in the same frame:
    ``lead``, the result's one-line summary, the blocks in order, then
    :func:`~spurious.report.components.section_footer` (parameters, ``extra``,
    provenance).

    Parameters
    ----------
    result : Result
    *blocks : markupsafe.Markup
        The section's own content, in page order (a plain ``str`` is escaped).
    title : str, optional
        Heading; default the analysis name.
    extra : mapping of str to Markup, optional
        Folded blocks shown between the parameters and the provenance.
    lead : Markup, optional
        Shown above the summary line (the error of a failed analysis).
    status, summary : str, optional
        Default: the result's own.

    Returns
    -------
    Section

    Examples
    --------
    >>> import pandas as pd
    >>> from spurious.report.components import render_fragment
    >>> r = Result("x", pd.DataFrame(), {}, summary="3 flagged", params={"k": 3})
    >>> s = result_section(r, render_fragment("<p>table</p>"), title="X")
    >>> s.title, s.summary, s.html_body.count("<details")
    ('X', '3 flagged', 2)
    """
    parts = [lead or Markup(""), summary_line(result.summary), *blocks]
    parts.append(section_footer(result, extra))
    return Section(
        title=title or result.name,
        html_body=Markup("\n").join(parts),
        status=result.status if status is None else status,
        summary=result.summary if summary is None else summary,
    )


def error_section(name: str, message: str) -> Section:
    """A section that only shows an error (a result that could not be loaded or shown).

    Examples
    --------
    >>> error_section("x", "unreadable").status
    'error'
    """
    body = callout(title="Error.", kind="error", pre=message)
    return Section(title=name, html_body=body, status="error", summary=message)


def _headed(heading: str, body: Markup) -> Markup:
    return render_fragment("<h4>{{ h }}</h4>{{ b }}", h=heading, b=body)


def generic_section(result: Result) -> Section:
    """Fallback :data:`SectionRenderer`: metrics, scores preview, details, params, provenance.

    Examples
    --------
    >>> import pandas as pd
    >>> generic_section(Result("x", pd.DataFrame({"id": [1]}), {"m": 1.0})).title
    'x'
    """
    extra = {}
    if result.details:
        details_json = json.dumps(
            result.details, indent=2, sort_keys=True, ensure_ascii=False, default=str
        )
        if len(details_json) > MAX_DETAILS_CHARS:
            details_json = details_json[:MAX_DETAILS_CHARS] + "\n… (truncated)"
        extra["Details (JSON)"] = render_fragment('<pre class="json">{{ j }}</pre>', j=details_json)
    return result_section(
        result,
        _headed("Metrics", metrics_table(result.metrics or {})),
        _headed("Per-example scores", scores_preview(result.scores)),
        extra=extra,
    )


def failed_section(result: Result) -> Section:
    """:data:`SectionRenderer` of a failed analysis: the error up front, then what was recorded.

    Examples
    --------
    >>> import pandas as pd
    >>> s = failed_section(Result("x", pd.DataFrame(), {}, status="failed", error="boom"))
    >>> s.status, "boom" in s.html_body
    ('failed', True)
    """
    error = result.error or "(no error message was recorded)"
    title = "This analysis failed" + (
        "." if result.status == "failed" else f" (status: {result.status})."
    )
    blocks = []
    if result.metrics:
        blocks.append(_headed("Metrics recorded before the failure", metrics_table(result.metrics)))
    if result.scores is not None and not result.scores.empty:
        blocks.append(_headed("Per-example scores", scores_preview(result.scores)))
    first_line = error.strip().splitlines()[0] if error.strip() else error
    return result_section(
        result,
        *blocks,
        lead=callout(title=title, kind="error", pre=error),
        status="failed",
        summary=f"failed: {first_line}",
    )


def skipped_section(result: Result) -> Section:
    """:data:`SectionRenderer` of a skipped analysis (``result.error`` says why).

    Examples
    --------
    >>> import pandas as pd
    >>> r = Result("x", pd.DataFrame(), {}, status="skipped", error="needs an eval split")
    >>> s = skipped_section(r)
    >>> s.status, "needs an eval split" in s.html_body
    ('skipped', True)
    """
    reason = result.error or "(no reason was recorded)"
    lead = callout(render_fragment("Not run: {{ r }}", r=reason), title="Skipped.", kind="info")
    return result_section(result, lead=lead, status="skipped", summary=f"skipped: {reason}")


def _load_section_modules() -> None:
    """Import every module of this package so that its ``@register_section`` runs."""
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")


_load_section_modules()
