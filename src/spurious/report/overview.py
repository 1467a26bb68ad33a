"""The report's first screen: what each analysis found, then what did not run.

One card per analysis that ran, from its result's ``headline`` (label, the figure in
words, a verdict, a severity), linking to its section; then the analyses that were
skipped (with the reason) and those that failed (with the error). A result without a
headline (runs older than headlines) falls back to its summary. Analyses the manifest
lists without a saved result are shown from the manifest's ``statuses`` / ``skipped``.

Severity is shown by colour *and* by an icon and a word, so it does not rely on colour.

Examples
--------
>>> import pandas as pd
>>> from spurious.results import Result
>>> from spurious.report.sections import build_section
>>> r = Result("x", pd.DataFrame(), {}, headline={"label": "leakage", "text": "0.61 vs 0.34",
...            "verdict": "strong leakage", "severity": "high"})
>>> overview = build_overview([ReportEntry("x", build_section(r), "x", r)])
>>> [(f.label, f.severity) for f in overview.findings]
[('leakage', 'high')]
>>> "sev-high" in render_overview(overview)
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup

from spurious.report.components import finite, render_fragment
from spurious.report.sections import Section
from spurious.results import Result

__all__ = [
    "SEVERITIES",
    "Finding",
    "NotRun",
    "Overview",
    "ReportEntry",
    "build_overview",
    "finding_for",
    "render_overview",
]

#: Severity levels of a headline, most to least severe; anything else is shown as "info".
SEVERITIES = ("high", "moderate", "low", "none", "info")

# Icon (decorative, hidden from screen readers) and word for each level: the word carries
# the meaning, the colour and icon repeat it.
_SEVERITY_CUES = {
    "high": ("▲", "high"),
    "moderate": ("◆", "moderate"),
    "low": ("●", "low"),
    "none": ("✓", "none found"),
    "info": ("ℹ", "info"),
}

#: Longest error or reason shown in the overview; the section has the full text.
MAX_REASON_CHARS = 300


@dataclass
class ReportEntry:
    """One analysis on the page: its name, rendered section, anchor and result.

    Attributes
    ----------
    name : str
        Analysis name (or the folder name of a result that could not be loaded).
    section : Section
    anchor : str
        The section's ``id``; set by the page.
    result : Result or None
        ``None`` when the result could not be loaded.
    """

    name: str
    section: Section
    anchor: str = ""
    result: Result | None = None


@dataclass(frozen=True)
class Finding:
    """One overview card.

    Attributes
    ----------
    name : str
        Analysis name.
    anchor : str
        Section id the card links to.
    label : str
        What was measured.
    text : str
        The figure in words.
    verdict : str
        A judgement in words ("strong leakage"); may be empty.
    severity : str
        One of :data:`SEVERITIES`.
    value : float or None
        The headline number.
    evidence : str
        What the severity rests on, in words (an interval, a test against a null).
    inconclusive : bool
        The interval spans more than one severity at this size.
    """

    name: str
    anchor: str
    label: str
    text: str
    verdict: str = ""
    severity: str = "info"
    value: float | None = None
    evidence: str = ""
    inconclusive: bool = False

    @property
    def icon(self) -> str:
        """Decorative symbol of the severity."""
        return _SEVERITY_CUES[self.severity][0]

    @property
    def severity_text(self) -> str:
        """The severity in words."""
        return _SEVERITY_CUES[self.severity][1]


@dataclass(frozen=True)
class NotRun:
    """An analysis that produced no finding: skipped, failed, unloadable or missing.

    Attributes
    ----------
    name : str
    anchor : str
        Section id, or ``""`` when there is no section (only the manifest knows it).
    status : {"skipped", "failed", "error", "missing"}
    reason : str
        Why it was skipped, or the error.
    """

    name: str
    anchor: str
    status: str
    reason: str


@dataclass
class Overview:
    """Everything the first screen shows.

    Attributes
    ----------
    findings : list of Finding
        One per analysis that ran, in run order.
    skipped, failed : list of NotRun
        ``failed`` also holds unloadable results and results the manifest lists but
        the run directory lacks.
    """

    findings: list[Finding] = field(default_factory=list)
    skipped: list[NotRun] = field(default_factory=list)
    failed: list[NotRun] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        """``{"ok": n, "skipped": n, "failed": n}``."""
        return {"ok": len(self.findings), "skipped": len(self.skipped), "failed": len(self.failed)}


def _clip(text: str, limit: int = MAX_REASON_CHARS) -> str:
    text = " ".join(text.strip().splitlines()[:1]) if text.strip() else ""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def finding_for(entry: ReportEntry) -> Finding:
    """The overview card of one analysis that ran, from its headline or its summary.

    Examples
    --------
    >>> import pandas as pd
    >>> from spurious.results import Result
    >>> from spurious.report.sections import build_section
    >>> old = Result("x", pd.DataFrame(), {}, summary="3 flagged")  # no headline
    >>> f = finding_for(ReportEntry("x", build_section(old), "x", old))
    >>> f.label, f.text, f.severity
    ('x', '3 flagged', 'info')
    """
    result = entry.result
    head: Mapping[str, Any] = {}
    if result is not None and isinstance(result.headline, Mapping):
        head = result.headline
    summary = (result.summary if result is not None else "") or entry.section.summary

    def text(key: str) -> str:
        value = head.get(key)
        return "" if value is None else str(value)

    severity = text("severity")
    return Finding(
        name=entry.name,
        anchor=entry.anchor,
        label=text("label") or entry.section.title or entry.name,
        text=text("text") or summary,
        verdict=text("verdict"),
        severity=severity if severity in SEVERITIES else "info",
        value=finite(head.get("value")),
        evidence=evidence_text(head.get("evidence")),
        inconclusive=bool(head.get("inconclusive")),
    )


def evidence_text(evidence: Any) -> str:
    """What a verdict rests on, in words (empty for results that predate evidence).

    Examples
    --------
    >>> evidence_text({"basis": "interval+null_test", "interval": [0.1, 0.3],
    ...                "p_value": 0.001, "null": "shuffled labels", "measured": "x"})
    'evidence: 95% interval [0.1, 0.3]; p=0.001 against shuffled labels'
    >>> evidence_text({"basis": "point", "interval": None, "p_value": None})
    'evidence: a point estimate only (not judged)'
    """
    if not isinstance(evidence, Mapping):
        return ""
    parts = []
    interval = evidence.get("interval")
    if isinstance(interval, list | tuple) and len(interval) == 2:
        lo, hi = (finite(v) for v in interval)
        if lo is not None and hi is not None:
            parts.append(f"95% interval [{lo:.3g}, {hi:.3g}]")
    p = finite(evidence.get("p_value"))
    if p is not None:
        null = evidence.get("null") or "the null"
        parts.append(f"p={p:.3g} against {null}")
    if not parts and evidence.get("basis") == "point":
        return "evidence: a point estimate only (not judged)"
    return "evidence: " + "; ".join(parts) if parts else ""


def build_overview(
    entries: Sequence[ReportEntry], manifest: Mapping[str, Any] | None = None
) -> Overview:
    """Sort the page's analyses into findings, skipped and failed.

    Parameters
    ----------
    entries : sequence of ReportEntry
        In page order.
    manifest : mapping, optional
        The run's manifest; analyses it lists (``detectors``, ``statuses``,
        ``skipped``) that have no entry are reported from it.

    Returns
    -------
    Overview

    Examples
    --------
    >>> o = build_overview([], {"analyses": ["aflite"], "skipped": {"aflite": "no eval"}})
    >>> o.skipped
    [NotRun(name='aflite', anchor='', status='skipped', reason='no eval')]
    """
    out = Overview()
    for e in entries:
        status = e.section.status
        result = e.result
        if status == "ok":
            out.findings.append(finding_for(e))
            continue
        why = (result.error if result is not None else None) or e.section.summary or ""
        if status == "skipped":
            out.skipped.append(
                NotRun(e.name, e.anchor, "skipped", _clip(why) or "no reason recorded")
            )
        else:
            out.failed.append(NotRun(e.name, e.anchor, status, _clip(why) or "no error recorded"))
    manifest = manifest or {}
    present = {e.name for e in entries}
    present |= {e.result.name for e in entries if e.result is not None}
    statuses = manifest.get("statuses")
    statuses = statuses if isinstance(statuses, Mapping) else {}
    reasons = manifest.get("skipped")
    reasons = reasons if isinstance(reasons, Mapping) else {}
    # "detectors": the key's earlier name, in runs written before "analyses".
    listed = manifest.get("analyses", manifest.get("detectors"))
    names = [str(n) for n in listed] if isinstance(listed, list) else []
    names += [str(n) for n in [*statuses, *reasons] if str(n) not in names]
    for name in names:
        if name in present:
            continue
        status = str(statuses.get(name, ""))
        if status == "skipped" or name in reasons:
            reason = reasons.get(name)
            out.skipped.append(
                NotRun(name, "", "skipped", _clip(str(reason)) if reason else "no reason recorded")
            )
        elif status == "failed":
            out.failed.append(NotRun(name, "", "failed", "failed; no result was saved"))
        else:
            out.failed.append(
                NotRun(name, "", "missing", "listed in manifest.json, but no result was saved")
            )
    # The first screen leads with what needs no model (atlas, associations): those
    # findings are there in seconds for any dataset; the rest keep their run order.
    out.findings.sort(key=lambda f: not is_model_free(f.name))
    return out


def is_model_free(name: str) -> bool:
    """Whether the registered analysis ``name`` needs no representation, trained model,
    training dynamics or predictions (an unknown name: ``False``).

    Examples
    --------
    >>> is_model_free("atlas"), is_model_free("aflite"), is_model_free("no_such_analysis")
    (True, False, False)
    """
    from spurious.analysis import get_analysis  # the report must not load analyses on import
    from spurious.exceptions import ParameterError

    try:
        req = get_analysis(name).requires
    except ParameterError:  # not registered here (a plugin's result): not known to be model-free
        return False
    return not (req.features or req.trained_model or req.training_dynamics or req.predictions)


_OVERVIEW = """
<section id="findings" class="overview" aria-labelledby="findings-title">
<h2 id="findings-title">Findings</h2>
{% if overview.findings %}
<ol class="cards">
{% for f in overview.findings %}
<li class="finding sev-{{ f.severity }}">
<div class="finding-head">
<h3 class="finding-label">{% if f.anchor %}<a href="#{{ f.anchor }}">{{ f.label }}</a>{% else %}{{ f.label }}{% endif %}</h3>
<span class="sev-badge"><span aria-hidden="true">{{ f.icon }}</span> <span class="visually-hidden">severity: </span>{{ f.severity_text }}</span>
</div>
{% if f.verdict %}<p class="finding-verdict">{{ f.verdict }}</p>{% endif %}
{% if f.text %}<p class="finding-text">{{ f.text }}</p>{% endif %}
{% if f.evidence %}<p class="finding-evidence muted">{{ f.evidence }}{% if f.inconclusive %} &middot; inconclusive at this size{% endif %}</p>{% endif %}
<p class="finding-more">{{ f.name }}{% if f.anchor %} &middot; <a href="#{{ f.anchor }}">details</a>{% endif %}</p>
</li>
{% endfor %}
</ol>
{% elif not overview.skipped and not overview.failed %}
<p class="muted">No analysis results found.</p>
{% else %}
<p class="muted">No analysis ran to completion.</p>
{% endif %}
{% if overview.skipped or overview.failed %}
<div class="notrun">
{% if overview.skipped %}
<div class="notrun-group">
<h3>Skipped ({{ overview.skipped|length }})</h3>
<ul class="notrun-list">
{% for n in overview.skipped %}
<li><span class="badge status-skipped">skipped</span> {% if n.anchor %}<a href="#{{ n.anchor }}">{{ n.name }}</a>{% else %}<strong>{{ n.name }}</strong>{% endif %}: <span class="reason">{{ n.reason }}</span></li>
{% endfor %}
</ul>
</div>
{% endif %}
{% if overview.failed %}
<div class="notrun-group">
<h3>Failed ({{ overview.failed|length }})</h3>
<ul class="notrun-list">
{% for n in overview.failed %}
<li><span class="badge status-{{ n.status }}">{{ n.status }}</span> {% if n.anchor %}<a href="#{{ n.anchor }}">{{ n.name }}</a>{% else %}<strong>{{ n.name }}</strong>{% endif %}: <code class="reason">{{ n.reason }}</code></li>
{% endfor %}
</ul>
</div>
{% endif %}
</div>
{% endif %}
</section>
"""


def render_overview(overview: Overview) -> Markup:
    """The overview as HTML (cards, then the skipped and failed lists).

    Examples
    --------
    >>> "No analysis results" in render_overview(Overview())
    True
    """
    return render_fragment(_OVERVIEW, overview=overview)
