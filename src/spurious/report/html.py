"""Render a run directory into one self-contained, offline HTML report.

The page embeds its CSS, its (optional) sorting script and its plots; it loads nothing
from the network. A Content-Security-Policy ``<meta>`` tag enforces that in the browser
and allows only the report's own script (by hash), so even text that slipped past
escaping could not execute.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import logging
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from spurious._version import __version__
from spurious.exceptions import ResultLoadError
from spurious.report.sections import (
    Section,
    build_section,
    failed_section,
    format_number,
    render_fragment,
)
from spurious.results import DetectorResult
from spurious.utils.io import atomic_write_text, read_json

logger = logging.getLogger(__name__)

__all__ = ["REPORT_FILENAME", "build_report_html", "render_report"]

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
@dataclass
class _Entry:
    """One detector folder of the run directory and its rendered section."""

    folder: str
    section: Section
    anchor: str = ""
    result: DetectorResult | None = None


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


def _load_entry(folder: Path, expected: Mapping[str, str]) -> _Entry:
    """Load one detector folder; load failures become an error (or failed) section."""
    try:
        result = DetectorResult.load(folder)
    except (ResultLoadError, OSError, ValueError, KeyError, TypeError) as e:
        logger.warning("Cannot load detector result in %s: %s", folder, e)
        return _Entry(folder.name, _unloadable_section(folder, e))
    section = build_section(result)
    mismatches = [
        (role, got, expected[role])
        for role, got in (result.provenance.fingerprints or {}).items()
        if role in expected and got != expected[role]
    ]
    if mismatches:
        # A stale result from other data is worth a loud warning, not a refusal to render.
        note = render_fragment(
            '<div class="callout warn"><strong>Dataset mismatch.</strong> This result was '
            "computed on different data than the run's manifest records:<ul>"
            "{% for role, got, want in m %}<li>{{ role }}: <code>{{ got }}</code> "
            "(manifest: <code>{{ want }}</code>)</li>{% endfor %}</ul></div>",
            m=mismatches,
        )
        section = dataclasses.replace(section, html_body=note + section.html_body)
    return _Entry(folder.name, section, result=result)


def _unloadable_section(folder: Path, error: Exception) -> Section:
    """A folder whose result cannot be loaded; a recorded failure is still shown as one."""
    meta: Any = None
    try:
        meta = read_json(folder / "result.json")
    except (OSError, ValueError):
        meta = None
    if isinstance(meta, dict) and meta.get("status") not in (None, "ok"):
        # Failed detectors may not have written scores; show their own error, not ours.
        stub = DetectorResult(
            detector=str(meta.get("detector") or folder.name),
            scores=pd.DataFrame(),
            metrics={},
            summary=str(meta.get("summary") or ""),
            status=str(meta.get("status")),
            error=None if meta.get("error") is None else str(meta.get("error")),
        )
        stub.params = meta.get("params") if isinstance(meta.get("params"), dict) else {}
        section = failed_section(stub)
        note = render_fragment(
            '<p class="muted">(The saved result is incomplete: {{ e }})</p>', e=str(error)
        )
        return dataclasses.replace(section, html_body=section.html_body + note)
    body = render_fragment(
        '<div class="callout error" role="alert"><strong>This result could not be loaded.'
        '</strong><pre class="error-text">{{ e }}</pre></div>',
        e=str(error),
    )
    name = meta.get("detector") if isinstance(meta, dict) and meta.get("detector") else folder.name
    return Section(title=str(name), html_body=body, status="error", summary=f"not loaded: {error}")


def _detector_folders(run_dir: Path, order: list[str]) -> list[Path]:
    folders = {
        p.name: p
        for p in run_dir.iterdir()
        if p.is_dir() and not p.name.startswith(".") and (p / "result.json").is_file()
    }
    ranked = [name for name in order if name in folders]
    ranked += sorted(name for name in folders if name not in ranked)
    return [folders[name] for name in ranked]


def _slug(text: str, used: set[str]) -> str:
    base = "det-" + (re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-").lower() or "section")
    slug, i = base, 2
    while slug in used:
        slug, i = f"{base}-{i}", i + 1
    used.add(slug)
    return slug


# ---------------------------------------------------------------------------------------
# Context
# ---------------------------------------------------------------------------------------
def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return shlex.join(str(v) for v in value)
    return str(value)


def _mapping_rows(value: Any) -> list[tuple[str, str]]:
    if not isinstance(value, Mapping):
        return []
    rows = []
    for k, v in value.items():
        if isinstance(v, Mapping | list):
            v = json.dumps(v, sort_keys=True, ensure_ascii=False, default=str)
        rows.append((str(k), "" if v is None else str(v)))
    return rows


def _timing_rows(value: Any) -> list[tuple[str, str]]:
    if not isinstance(value, Mapping):
        return []
    rows = []
    for k, v in value.items():
        if isinstance(v, int | float) and not isinstance(v, bool):
            rows.append((str(k), f"{v:,.2f} s"))
        else:
            rows.append(
                (str(k), json.dumps(v, default=str) if isinstance(v, Mapping | list) else str(v))
            )
    return rows


def _dataset_rows(value: Any) -> list[dict[str, str]]:
    if not isinstance(value, Mapping):
        return []
    rows = []
    for role, info in value.items():
        info = info if isinstance(info, Mapping) else {"fingerprint": info}
        rows.append(
            {
                "role": str(role),
                "name": _text(info.get("name")),
                "n": format_number(info.get("n"), "int") if info.get("n") is not None else "",
                "fingerprint": _text(info.get("fingerprint")),
            }
        )
    return rows


def _run_context(
    run_dir: Path, manifest: Mapping[str, Any], entries: list[_Entry]
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
        "name": run_dir.resolve().name,
        "command": _text(manifest.get("command")),
        "created": _text(manifest.get("created")) or (prov.created if prov is not None else ""),
        "seed": "" if seed is None else str(seed),
        "library_version": _text(manifest.get("library_version"))
        or (prov.library_version if prov is not None else ""),
        "versions": _mapping_rows(manifest.get("versions")),
        "datasets": _dataset_rows(manifest.get("datasets")),
        "timings": _timing_rows(manifest.get("timings")),
        "config_json": config_json,
        "has_manifest": bool(manifest),
    }


def build_report_html(run_dir: str | Path) -> str:
    """Render the report for ``run_dir`` and return the HTML without writing it.

    Parameters
    ----------
    run_dir : str or Path
        A run directory (``manifest.json`` plus one folder per detector).

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
    listed = manifest.get("detectors")
    order = [str(d) for d in listed] if isinstance(listed, list) else []
    expected = _manifest_fingerprints(manifest)
    entries = [_load_entry(folder, expected) for folder in _detector_folders(run_dir, order)]
    present = {e.folder for e in entries}
    missing = [d for d in order if d not in present]
    for name in missing:
        warnings.append(f"Detector {name!r} is listed in manifest.json but has no saved result.")
    used: set[str] = set()
    for e in entries:
        e.anchor = _slug(e.folder, used)
    if not entries:
        warnings.append("No detector results (folders with result.json) were found.")
    counts = {
        "ok": sum(e.section.status == "ok" for e in entries),
        "failed": sum(e.section.status != "ok" for e in entries),
    }
    html = (
        _environment()
        .get_template("report.html")
        .render(
            title=f"spurious report: {run_dir.resolve().name}",
            run=_run_context(run_dir, manifest, entries),
            entries=entries,
            missing=missing,
            warnings=warnings,
            counts=counts,
            version=__version__,
            csp=_CSP,
            script=Markup(_SORT_JS),  # our own constant, not data; its hash is in the CSP
        )
    )
    return html


def render_report(run_dir: str | Path) -> Path:
    """Render ``run_dir/report.html`` from the run's manifest and detector results.

    Reads ``manifest.json`` (optional) and every sub-folder holding a ``result.json``,
    renders one self-contained HTML page (inline CSS, inline SVG plots, no network
    access) and writes it atomically.

    Parameters
    ----------
    run_dir : str or Path
        The run directory.

    Returns
    -------
    Path
        Path of the written ``report.html``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = render_report(tempfile.mkdtemp())
    >>> path.name
    'report.html'
    """
    run_dir = Path(run_dir)
    html = build_report_html(run_dir)
    out = atomic_write_text(run_dir / REPORT_FILENAME, html)
    logger.info("Wrote report %s (%.0f kB)", out, len(html.encode("utf-8")) / 1024)
    return out
