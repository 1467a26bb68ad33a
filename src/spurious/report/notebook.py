"""A run in a notebook: the report's answer line, its headline cards and the key figure.

``Run._repr_html_`` shows this, so a run displayed in Jupyter leads with what the HTML
report's first screen says (:mod:`spurious.report.answer`,
:mod:`spurious.report.overview`), built by the same functions, and with the first figure
of the strongest finding's own report section (for partial-input leakage: accuracy per
input condition). The report's stylesheet is reused for these parts, scoped to the
output's ``<div>`` so it cannot restyle the rest of the notebook. Everything shown is
escaped by the report's autoescaping fragments.

Examples
--------
>>> import pandas as pd
>>> from spurious.results import Result
>>> r = Result("x", pd.DataFrame(), {}, headline={"label": "leakage", "text": "0.61 vs 0.34",
...            "verdict": "strong <leakage>", "severity": "high"})
>>> html = notebook_html([r])
>>> "strong &lt;leakage&gt;" in html and "sev-high" in html
True
"""

from __future__ import annotations

import functools
import importlib.resources
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from markupsafe import Markup

from spurious.report.answer import build_answer, render_answer
from spurious.report.components import render_fragment
from spurious.report.overview import Overview, ReportEntry, build_overview, render_overview
from spurious.report.sections import build_section
from spurious.results import Result

__all__ = ["key_figure", "notebook_html"]

#: Class of the wrapping ``<div>``; every reused CSS rule is scoped under it.
SCOPE = "spurious-nb"

# The report's rules for what the notebook view shows (cards, answer, figures), by the
# start of their selector; page-level rules (body, headings, layout) are left out.
_KEPT_SELECTORS = (
    ":root",
    ".visually-hidden",
    ".muted",
    ".cards",
    ".finding",
    ".sev-",
    ".notrun",
    ".badge",
    ".answer",
    ".next-steps",
    ".glossary",
    ".figures",
    "figure",
    "figcaption",
)
_SEVERITY_RANK = {"high": 3, "moderate": 2, "low": 1}
_FIGURE = re.compile(r"<figure[ >].*?</figure>", re.DOTALL)

_VIEW = """<div class="{{ scope }}">
<style>{{ css }}</style>
{{ answer }}
{{ overview }}
{% if figure %}
<h3>Key figure: {{ figure_of }}</h3>
<div class="figures">{{ figure }}</div>
{% endif %}
{% if report %}<p class="muted">Full report: <code>{{ report }}</code></p>{% endif %}
</div>"""


@functools.lru_cache(maxsize=1)
def _scoped_css() -> Markup:
    """The report stylesheet's card, answer and figure rules, scoped to :data:`SCOPE`."""
    css = importlib.resources.files("spurious.report").joinpath("templates/report.css")
    text = re.sub(r"/\*.*?\*/", "", css.read_text(encoding="utf-8"), flags=re.DOTALL)
    # Media blocks nest rules; the notebook view does without them.
    text = re.sub(r"@media[^{]*\{(?:[^{}]*\{[^{}]*\})*[^{}]*\}", "", text)
    rules = []
    for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", text):
        names = [s.strip() for s in selectors.split(",")]
        if not all(n.startswith(_KEPT_SELECTORS) for n in names):
            continue
        scoped = ", ".join(f".{SCOPE}" if n == ":root" else f".{SCOPE} {n}" for n in names)
        rules.append(f"{scoped} {{{body.strip()}}}")
    # The stylesheet is the package's own file, never data.
    return Markup("\n".join(rules))


def key_figure(entries: Iterable[ReportEntry], overview: Overview) -> tuple[str, Markup] | None:
    """The first figure of the strongest finding's report section that has one.

    Findings are tried from the most severe (high, moderate, low; run order within a
    level), then the others in overview order.

    Parameters
    ----------
    entries : iterable of ReportEntry
        The rendered sections.
    overview : Overview
        Their findings (:func:`~spurious.report.overview.build_overview`).

    Returns
    -------
    (str, markupsafe.Markup) or None
        The analysis' card label and its ``<figure>``; ``None`` when no section of a
        finding draws one.

    Examples
    --------
    >>> key_figure([], Overview()) is None
    True
    """
    sections = {e.name: e.section for e in entries}
    ranked = sorted(overview.findings, key=lambda f: -_SEVERITY_RANK.get(f.severity, 0))
    for finding in ranked:
        section = sections.get(finding.name)
        # Figures come from figure_block, whose alt text and captions are escaped: the
        # first "</figure>" closes the first figure.
        match = _FIGURE.search(str(section.html_body)) if section is not None else None
        if match:
            return finding.label, Markup(match.group(0))
    return None


def notebook_html(
    results: Iterable[Result] | Mapping[str, Result],
    *,
    config: Mapping[str, Any] | None = None,
    out: str | Path | None = None,
    report: str | Path | None = None,
) -> Markup:
    """The notebook view of a run's results: answer line, cards, key figure.

    Parameters
    ----------
    results : iterable of Result, or mapping of name to Result
        In run order.
    config : mapping, optional
        The run's config; its inputs make the next steps' commands.
    out : str or Path, optional
        The run directory (its marks make the ``amplify --from-run`` step).
    report : str or Path, optional
        The HTML report, named at the end.

    Returns
    -------
    markupsafe.Markup

    Examples
    --------
    >>> "No analysis ran to completion" in notebook_html([])
    True
    """
    if isinstance(results, Mapping):
        results = results.values()
    entries = [ReportEntry(r.name, build_section(r), "", r) for r in results]
    overview = build_overview(entries)
    # Without a run directory nothing was written, so there are no marks to build
    # splits from: a path that is not a folder makes next_steps skip that step.
    run_dir = Path(out) if out is not None else Path("<not written>")
    answer = build_answer(overview, {"config": dict(config or {})}, run_dir)
    figure = key_figure(entries, overview)
    return render_fragment(
        _VIEW,
        scope=SCOPE,
        css=_scoped_css(),
        answer=render_answer(answer),
        overview=render_overview(overview),
        figure_of=figure[0] if figure else "",
        figure=figure[1] if figure else "",
        report="" if report is None else str(report),
    )
