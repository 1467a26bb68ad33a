"""Self-contained HTML reports: findings first, one section per analysis, then the run.

Use :func:`render_report` to write ``RUN/report.html`` from a run directory, or
:func:`render` to write a report from results held in memory. Analysis-specific views
are registered with :func:`register_section` (one module per analysis in
:mod:`spurious.report.sections`); analyses without one get a generic section.

Modules: :mod:`~spurious.report.components` (escaped HTML building blocks, one import
point for :mod:`~spurious.report.fragments`, :mod:`~spurious.report.formatting`,
:mod:`~spurious.report.cells`, :mod:`~spurious.report.tables` and
:mod:`~spurious.report.blocks`), :mod:`~spurious.report.plots` (plot helpers),
:mod:`~spurious.report.sections` (registry and sections), :mod:`~spurious.report.overview`
(the first screen) and :mod:`~spurious.report.html` (the page).

Examples
--------
>>> import tempfile
>>> from spurious.data.synthetic import make_nli_artifacts
>>> from spurious.detectors import PartialInput
>>> from spurious.report import render_report
>>> res = PartialInput(features="bow", n_resamples=20).run(
...     make_nli_artifacts(n=200, random_state=0).dataset)
>>> run_dir = tempfile.mkdtemp()
>>> _ = res.save(f"{run_dir}/partial_input")
>>> render_report(run_dir).name
'report.html'
"""

from spurious.report.components import render_fragment
from spurious.report.html import REPORT_FILENAME, build_report_html, render, render_report
from spurious.report.sections import (
    SECTION_REGISTRY,
    Section,
    build_section,
    generic_section,
    get_section_renderer,
    register_section,
)

__all__ = [
    "REPORT_FILENAME",
    "SECTION_REGISTRY",
    "Section",
    "build_report_html",
    "build_section",
    "generic_section",
    "get_section_renderer",
    "register_section",
    "render",
    "render_fragment",
    "render_report",
]
