"""Render a run directory, or results in memory, into one self-contained HTML report.

The page opens with the findings (:mod:`spurious.report.overview`), then one section per
analysis (:mod:`spurious.report.sections`), then how the run was made. It embeds its
CSS, its (optional) sorting script and its plots; it loads nothing from the network. A
Content-Security-Policy ``<meta>`` tag enforces that in the browser and allows only the
report's own script (by hash), so even text that slipped past escaping could not
execute.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import logging
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from spurious._version import __version__
from spurious.exceptions import ParameterError, ResultLoadError
from spurious.report.answer import build_answer, render_answer
from spurious.report.canary import canary_block
from spurious.report.components import (
    callout,
    format_number,
    full_table_href,
    render_fragment,
    table_href,
)
from spurious.report.overview import ReportEntry, build_overview, render_overview
from spurious.report.sections import Section, build_section, error_section
from spurious.results import Result
from spurious.utils.io import atomic_write, atomic_write_text, read_json

logger = logging.getLogger(__name__)

__all__ = ["REPORT_FILENAME", "build_report_html", "render", "render_report"]

#: File name of the report inside the run directory.
REPORT_FILENAME = "report.html"

# Progressive enhancement only: without it the tables are still complete and readable.
_SORT_JS = """
(function () {
  "use strict";
  function key(cell) {
    if (!cell) { return ""; }
    var raw = cell.getAttribute("data-sort");
    return raw !== null ? raw : cell.textContent.trim();
  }
  function compare(a, b) {
    var x = Number(a), y = Number(b);
    var xn = a !== "" && isFinite(x), yn = b !== "" && isFinite(y);
    if (xn && yn) { return x - y; }
    if (xn !== yn) { return xn ? -1 : 1; }
    if ((a === "") !== (b === "")) { return a === "" ? 1 : -1; }
    return a.localeCompare(b, undefined, { numeric: true, sensitivity: "base" });
  }
  function sortTable(table, th, index) {
    var body = table.tBodies[0];
    if (!body) { return; }
    var ascending = th.getAttribute("aria-sort") !== "ascending";
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (r1, r2) {
      var d = compare(key(r1.cells[index]), key(r2.cells[index]));
      return ascending ? d : -d;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(th.parentNode.cells, function (other) {
      other.removeAttribute("aria-sort");
    });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }
  function init() {
    var tables = document.querySelectorAll("table.sortable");
    Array.prototype.forEach.call(tables, function (table) {
      if (!table.tHead || !table.tHead.rows.length) { return; }
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
        var button = document.createElement("button");
        button.type = "button";
        button.className = "sort";
        while (th.firstChild) { button.appendChild(th.firstChild); }
        th.appendChild(button);
        button.addEventListener("click", function () { sortTable(table, th, index); });
      });
      table.classList.add("js-sortable");
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
"""


def _csp(script: str) -> str:
    """Content-Security-Policy allowing only inline styles, data: images and our script."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    )


_CSP = _csp(_SORT_JS)

_ENV: Environment | None = None


def _environment() -> Environment:
    """The report's Jinja environment: autoescaping on for every template, always."""
    global _ENV
    if _ENV is None:
        _ENV = Environment(
            loader=PackageLoader("spurious.report", "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
    return _ENV


# ---------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------
def _load_manifest(run_dir: Path, warnings: list[str]) -> dict[str, Any]:
    path = run_dir / "manifest.json"
    if not path.exists():
        warnings.append("No manifest.json in the run directory; run information is incomplete.")
        return {}
    try:
        manifest = read_json(path)
    except (OSError, ValueError) as e:
        logger.warning("Cannot read %s: %s", path, e)
        warnings.append(f"manifest.json could not be read: {e}")
        return {}
    if not isinstance(manifest, dict):
        warnings.append("manifest.json is not a JSON object; ignoring it.")
        return {}
    return manifest


def _manifest_fingerprints(manifest: Mapping[str, Any]) -> dict[str, str]:
    out = {}
    datasets = manifest.get("datasets")
    if isinstance(datasets, Mapping):
        for role, info in datasets.items():
            fp = info.get("fingerprint") if isinstance(info, Mapping) else info
            if isinstance(fp, str) and fp:
                out[str(role)] = fp
    return out


def _entry_for(
    name: str, result: Result, expected: Mapping[str, str], section: Section | None = None
) -> ReportEntry:
    """Render one result's section (or take ``section``, rendered ahead from the same
    folder), with a warning when it was computed on other data."""
    section = build_section(result) if section is None else section
    mismatches = [
        (role, got, expected[role])
        for role, got in (result.provenance.fingerprints or {}).items()
        if role in expected and got != expected[role]
    ]
    if mismatches:
        # A stale result from other data is worth a loud warning, not a refusal to render.
        note = callout(
            render_fragment(
                "This result was computed on different data than the run's manifest "
                "records:<ul>{% for role, got, want in m %}<li>{{ role }}: <code>{{ got }}"
                "</code> (manifest: <code>{{ want }}</code>)</li>{% endfor %}</ul>",
                m=mismatches,
            ),
            title="Dataset mismatch.",
        )
        section = dataclasses.replace(section, html_body=note + section.html_body)
    return ReportEntry(name, section, result=result)


def _load_entry(
    folder: Path, expected: Mapping[str, str], ahead: Mapping[str, Section] | None = None
) -> ReportEntry:
    """Load one result folder; load failures become an error (or failed) section.
    ``ahead``: sections already rendered from these folders, by analysis name."""
    try:
        result = Result.load(folder)
    except (ResultLoadError, OSError, ValueError, KeyError, TypeError) as e:
        logger.warning("Cannot load the result in %s: %s", folder, e)
        return _unloadable_entry(folder, e)
    section = (ahead or {}).get(result.name) if result.name == folder.name else None
    return _entry_for(folder.name, result, expected, section)


def _unloadable_entry(folder: Path, error: Exception) -> ReportEntry:
    """A folder whose result cannot be loaded; a recorded failure is still shown as one."""
    meta: Any = None
    try:
        meta = read_json(folder / "result.json")
    except (OSError, ValueError):
        meta = None
    if isinstance(meta, dict) and meta.get("status") not in (None, "ok"):
        # Failed analyses may not have written scores; show their own error, not ours.
        stub = Result(
            analysis=str(meta.get("analysis") or meta.get("detector") or folder.name),
            scores=pd.DataFrame(),
            metrics={},
            params=meta.get("params") if isinstance(meta.get("params"), dict) else {},
            summary=str(meta.get("summary") or ""),
            status=str(meta.get("status")),
            error=None if meta.get("error") is None else str(meta.get("error")),
        )
        section = build_section(stub)
        note = render_fragment(
            '<p class="muted">(The saved result is incomplete: {{ e }})</p>', e=str(error)
        )
        section = dataclasses.replace(section, html_body=section.html_body + note)
        return ReportEntry(folder.name, section, result=stub)
    name = (meta.get("analysis") or meta.get("detector")) if isinstance(meta, dict) else None
    name = name or folder.name
    section = error_section(str(name), str(error))
    body = callout(title="This result could not be loaded.", kind="error", pre=str(error))
    section = dataclasses.replace(section, html_body=body, summary=f"not loaded: {error}")
    return ReportEntry(folder.name, section)


def _result_folders(run_dir: Path, order: list[str]) -> list[Path]:
    folders = {
        p.name: p
        for p in run_dir.iterdir()
        if p.is_dir() and not p.name.startswith(".") and (p / "result.json").is_file()
    }
    ranked = [name for name in order if name in folders]
    ranked += sorted(name for name in folders if name not in ranked)
    return [folders[name] for name in ranked]


#: Element ids the page itself uses; a section never takes one of them.
_PAGE_IDS = frozenset(
    {"top", "findings", "findings-title", "sections", "canary", "canary-title", "run", "run-title"}
)


def _slug(text: str, used: set[str]) -> str:
    """A unique element id for a section: the analysis name, so ``report.html#aflite`` works."""
    base = re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-").lower() or "section"
    slug, i = base, 2
    # The section's heading takes "<slug>-title", so that must be free as well.
    while slug in used or f"{slug}-title" in used or slug in _PAGE_IDS:
        slug, i = f"{base}-{i}", i + 1
    used.update((slug, f"{slug}-title"))
    return slug


# ---------------------------------------------------------------------------------------
# Run information (shown below the findings)
# ---------------------------------------------------------------------------------------
def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return shlex.join(str(v) for v in value)
    return str(value)


def _plain(value: Any) -> str:
    if isinstance(value, Mapping | list):
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return "" if value is None else str(value)


def _seconds(value: Any) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:,.2f} s"
    return _plain(value)


def _mapping_rows(value: Any, show: Callable[[Any], str] = _plain) -> list[tuple[str, str]]:
    """``(key, shown value)`` rows of a manifest mapping; anything else gives no rows."""
    if not isinstance(value, Mapping):
        return []
    return [(str(k), show(v)) for k, v in value.items()]


def _dataset_rows(value: Any) -> list[dict[str, str]]:
    if not isinstance(value, Mapping):
        return []
    rows = []
    for role, info in value.items():
        info = info if isinstance(info, Mapping) else {"fingerprint": info}
        # Without an evaluation split the data is judged as it is, not trained on: its
        # manifest role "train" would mislabel e.g. a dev file.
        shown = "data" if role == "train" and "eval" not in value else str(role)
        rows.append(
            {
                "role": shown,
                "name": _text(info.get("name")),
                "n": format_number(info.get("n"), "int") if info.get("n") is not None else "",
                "fingerprint": _text(info.get("fingerprint")),
            }
        )
    return rows


def _run_context(
    name: str, manifest: Mapping[str, Any], entries: list[ReportEntry]
) -> dict[str, Any]:
    first = next((e.result for e in entries if e.result is not None), None)
    prov = first.provenance if first is not None else None
    config = manifest.get("config")
    config_json = (
        json.dumps(config, indent=2, sort_keys=True, ensure_ascii=False, default=str)
        if config not in (None, {}, [])
        else ""
    )
    seed = manifest.get("seed", prov.seed if prov is not None else None)
    return {
        "name": name,
        "command": _text(manifest.get("command")),
        "created": _text(manifest.get("created")) or (prov.created if prov is not None else ""),
        "seed": "" if seed is None else str(seed),
        "library_version": _text(manifest.get("library_version"))
        or (prov.library_version if prov is not None else ""),
        "versions": _mapping_rows(manifest.get("versions")),
        "datasets": _dataset_rows(manifest.get("datasets")),
        "timings": _mapping_rows(manifest.get("timings"), _seconds),
        "config_json": config_json,
        "has_manifest": bool(manifest),
    }


# ---------------------------------------------------------------------------------------
# Page
# ---------------------------------------------------------------------------------------
def _page(
    name: str,
    manifest: Mapping[str, Any],
    entries: list[ReportEntry],
    warnings: list[str],
    canary: Markup | None = None,
    run_dir: Path | None = None,
) -> str:
    """The complete HTML document for ``entries`` (in page order); ``canary`` is the
    canary block (:mod:`spurious.report.canary`), shown after the sections."""
    used: set[str] = set()
    for e in entries:
        e.anchor = _slug(e.name, used)
    # A skipped analysis has nothing to show but its reason, which the overview's "not
    # run" list already gives: no section of its own (and no link to one).
    shown = [e for e in entries if e.section.status != "skipped"]
    for e in entries:
        if e.section.status == "skipped":
            e.anchor = ""
    overview = build_overview(entries, manifest)
    # What the run itself warned about (rows dropped, evaluation overlapping the data).
    data_warnings = manifest.get("warnings")
    if isinstance(data_warnings, list):
        warnings = [*map(str, data_warnings), *warnings]
    if not entries and not overview.skipped and not overview.failed:
        warnings.append("No analysis results (folders with result.json) were found.")
    n = len(overview.findings) + len(overview.skipped) + len(overview.failed)
    return (
        _environment()
        .get_template("report.html")
        .render(
            title=f"spurious report: {name}",
            run=_run_context(name, manifest, entries),
            entries=shown,
            overview=render_answer(build_answer(overview, manifest, run_dir or Path(".")))
            + render_overview(overview),
            counts=overview.counts,
            n_analyses=n,
            warnings=warnings,
            canary=canary or Markup(""),
            version=__version__,
            csp=_CSP,
            script=Markup(_SORT_JS),  # our own constant, not data; its hash is in the CSP
        )
    )


def build_report_html(run_dir: str | Path, *, sections: Mapping[str, Section] | None = None) -> str:
    """Render the report for ``run_dir`` and return the HTML without writing it.

    Parameters
    ----------
    run_dir : str or Path
        A run directory (``manifest.json`` plus one folder per analysis).
    sections : mapping, optional
        Sections already rendered from this run's folders, by analysis name
        (:class:`~spurious.report.prefetch.SectionPrefetch`); the others are rendered here.

    Returns
    -------
    str
        The complete, self-contained HTML document.

    Examples
    --------
    >>> import tempfile
    >>> html = build_report_html(tempfile.mkdtemp())
    >>> html.startswith("<!DOCTYPE html>")
    True
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"Run directory {str(run_dir)!r} does not exist.")
    warnings: list[str] = []
    manifest = _load_manifest(run_dir, warnings)
    listed = manifest.get("analyses", manifest.get("detectors"))  # earlier name
    order = [str(d) for d in listed] if isinstance(listed, list) else []
    expected = _manifest_fingerprints(manifest)
    folders = _result_folders(run_dir, order)
    entries = [_load_entry(folder, expected, sections) for folder in folders]
    canary = canary_block(run_dir, manifest)
    return _page(run_dir.resolve().name, manifest, entries, warnings, canary, run_dir)


def render_report(run_dir: str | Path, *, sections: Mapping[str, Section] | None = None) -> Path:
    """Render ``run_dir/report.html`` from the run's manifest and results.

    Reads ``manifest.json`` (optional) and every sub-folder holding a ``result.json``,
    renders one self-contained HTML page (inline CSS, inline SVG plots, no network
    access) and writes it atomically.

    Parameters
    ----------
    run_dir : str or Path
        The run directory.
    sections : mapping, optional
        Sections already rendered from this run's folders (see
        :func:`build_report_html`).

    Returns
    -------
    Path
        Path of the written ``report.html``.

    Raises
    ------
    ParameterError
        ``run_dir`` is not a run directory (no ``manifest.json`` and no
        ``<analysis>/result.json``): a report of nothing is not written into any folder.

    Examples
    --------
    >>> import tempfile
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> from spurious.detectors import PartialInput
    >>> res = PartialInput(features="bow", n_resamples=20).run(
    ...     make_nli_artifacts(n=200, random_state=0).dataset)
    >>> run_dir = tempfile.mkdtemp()
    >>> _ = res.save(f"{run_dir}/partial_input")
    >>> render_report(run_dir).name
    'report.html'
    >>> render_report(tempfile.mkdtemp())
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: The 'run_dir' argument ... is not a run directory ...
    """
    run_dir = Path(run_dir)
    _check_run_dir(run_dir)
    html = build_report_html(run_dir, sections=sections)
    out = atomic_write_text(run_dir / REPORT_FILENAME, html)
    logger.info("Wrote report %s (%.0f kB)", out, len(html.encode("utf-8")) / 1024)
    return out


def _check_run_dir(run_dir: Path) -> None:
    """Refuse a folder that holds no run: ``render_report`` would write an empty report
    into it (the CLI's ``spurious report`` refuses it the same way)."""
    if not run_dir.is_dir() or (run_dir / "manifest.json").is_file():
        return  # a missing folder: build_report_html's FileNotFoundError
    if not any((p / "result.json").is_file() for p in run_dir.iterdir() if p.is_dir()):
        raise ParameterError(
            f"The 'run_dir' argument {str(run_dir)!r} is not a run directory (no manifest.json "
            "and no <analysis>/result.json); render results held in memory with "
            "spurious.report.render(results, path)."
        )


def render(
    results: Sequence[Result] | Mapping[str, Result],
    path: str | Path,
    *,
    manifest: Mapping[str, Any] | None = None,
) -> Path:
    """Render results held in memory into one self-contained HTML file, no run directory.

    Each result's full per-example table is written beside it as Parquet
    (``<analysis>/scores.parquet``, where its section links to it): a section shows at
    most the top rows.

    Parameters
    ----------
    results : sequence of Result or mapping of str to Result
        The results, in page order; a mapping's keys name the sections.
    path : str or Path
        The HTML file to write; an existing directory gets ``report.html`` inside it.
        Parent folders are created.
    manifest : mapping, optional
        Run information shown below the findings (the keys of ``manifest.json``:
        ``command``, ``created``, ``seed``, ``versions``, ``datasets``, ``timings``,
        ``config``, ``statuses``, ``skipped``). Dataset fingerprints in it are checked
        against the results'.

    Returns
    -------
    Path
        The written file.

    Examples
    --------
    >>> import tempfile, pandas as pd
    >>> from spurious.results import Result
    >>> r = Result("token_pmi", pd.DataFrame({"id": [1]}), {"max_pmi": 2.5},
    ...            headline={"label": "token shortcut", "text": "'not' PMI 2.5",
    ...                      "verdict": "strong", "severity": "high"})
    >>> out = render([r], tempfile.mkdtemp() + "/audit.html")
    >>> out.name, "token shortcut" in out.read_text()
    ('audit.html', True)
    """
    if isinstance(results, Result):
        raise TypeError("render() takes a list or dict of Result; wrap a single one: [result].")
    items = (
        [(str(k), r) for k, r in results.items()]
        if isinstance(results, Mapping)
        else [(getattr(r, "name", f"#{i}"), r) for i, r in enumerate(results)]
    )
    for key, r in items:
        if not isinstance(r, Result):
            raise TypeError(
                f"render() needs spurious.results.Result objects; got {type(r).__name__} "
                f"for {key!r}."
            )
    path = Path(path)
    if path.is_dir():
        path = path / REPORT_FILENAME
    manifest = dict(manifest or {})
    expected = _manifest_fingerprints(manifest)
    entries = [_entry_for(str(name), r, expected) for name, r in items]
    name = str(
        manifest.get("name") or (path.parent.name if path.name == REPORT_FILENAME else path.stem)
    )
    html = _page(name or "report", manifest, entries, [], run_dir=path.parent)
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_full_tables([r for _, r in items], path.parent)
    out = atomic_write_text(path, html)
    logger.info("Wrote report %s (%.0f kB)", out, len(html.encode("utf-8")) / 1024)
    return out


def _write_full_tables(results: Sequence[Result], folder: Path) -> None:
    """Each result's per-example table as Parquet where its section links to it.

    A section shows at most the top rows; the full table sits beside the report, at the
    same place as in a run directory (``<analysis>/scores.parquet``). Two results of the
    same analysis would share that place, so neither is written (with a warning).
    """
    names = [r.name for r in results]
    for r in results:
        has_scores = r.scores is not None and not r.scores.empty
        if not has_scores and not r.tables:
            continue
        if names.count(r.name) > 1:
            logger.warning(
                "Two results of %r: their per-example tables are not written beside the "
                "report (they would share %s); save each with Result.save.",
                r.name,
                full_table_href(r),
            )
            continue
        if has_scores:
            atomic_write(
                folder / full_table_href(r), lambda f, r=r: r.scores.to_parquet(f, index=False)
            )
        for name, frame in (r.tables or {}).items():
            path = folder / table_href(r, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, lambda f, t=frame: t.to_parquet(f, index=False))
