"""Self-contained HTML reports of a run directory.

Use :func:`render_report` to write ``RUN/report.html``. Detector-specific views are
registered with :func:`register_section`; detectors without one get a generic section.

Examples
--------
>>> import tempfile
>>> from spurious.report import render_report
>>> render_report(tempfile.mkdtemp()).name
'report.html'
"""

from spurious.report.html import REPORT_FILENAME, build_report_html, render_report
from spurious.report.sections import (
    SECTION_REGISTRY,
    Section,
    build_section,
    generic_section,
    get_section_renderer,
    register_section,
    render_fragment,
)

# Importing a section module registers its section.
from spurious.report import sections_aflite, sections_bias  # noqa: F401  isort: skip

__all__ = [
    "REPORT_FILENAME",
    "SECTION_REGISTRY",
    "Section",
    "build_report_html",
    "build_section",
    "generic_section",
    "get_section_renderer",
    "register_section",
    "render_fragment",
    "render_report",
]
