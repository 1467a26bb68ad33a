"""Blocks of a section: callouts, folded details, headline numbers, figures, footer.

A section reads: summary line, :func:`stat_block` of headline figures,
:func:`figure_block`, tables (:mod:`spurious.report.tables`), then the folded
:func:`section_footer` (parameters, extra blocks, provenance).

Examples
--------
>>> from spurious.report.blocks import stat_block, Stat
>>> "stat-value" in stat_block([Stat("Examples", 1200)])
True
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from spurious.report.cells import Cell, to_cell
from spurious.report.formatting import format_seconds
from spurious.report.fragments import render_fragment
from spurious.report.plots import image_css_size
from spurious.report.tables import full_table_block, kv_table
from spurious.results import Result

# The logger keeps the name it had before the blocks left components.py, so logging
# configuration that targets it (and the CLI's "%(name)s" prefix) is unchanged.
logger = logging.getLogger("spurious.report.components")

__all__ = [
    "MAX_DETAILS_CHARS",
    "Plot",
    "Stat",
    "callout",
    "details_block",
    "figure_block",
    "provenance_block",
    "section_footer",
    "stat_block",
    "summary_line",
]

#: Characters of ``details`` JSON shown by the generic section.
MAX_DETAILS_CHARS = 20_000


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
    """Figures (inline images with captions), each at its own size, side by side when
    they fit.

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
        shown.append((p, image_css_size(p.uri)))
    if not shown:
        return Markup("")
    # Each plot at most at its own size (see image_css_size), never stretched to the
    # column's width (which would scale its text with it, or leave a small plot in a
    # large box); it may shrink by a fifth to share a row with its neighbour.
    return render_fragment(
        """<div class="figures">{% for p, size in plots %}
<figure{% if size %} style="flex: 1 1 {{ (size[0] * 0.8 + 22) | round | int }}px; \
max-width: min(100%, {{ size[0] + 22 }}px)"{% endif %}><img src="{{ p.uri }}" alt="{{ p.alt }}"
{%- if size %} width="{{ size[0] }}" height="{{ size[1] }}"{% endif %}>
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
