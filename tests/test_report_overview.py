"""The report's first screen (findings, skipped, failed) and ``render`` from memory."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from spurious.report import REPORT_FILENAME, build_report_html, render
from spurious.report.overview import SEVERITIES, ReportEntry, build_overview
from spurious.report.plots import contrast_ratio
from spurious.report.sections import build_section
from spurious.results import Result
from spurious.utils.io import atomic_write_json
from tests.test_report import XSS_IMG, XSS_SCRIPT, partial_input_result

CSS = Path(__file__).resolve().parents[1] / "src/spurious/report/templates/report.css"


def headline(label: str, text: str, verdict: str, severity: str, value: float | None = None):
    return {"label": label, "value": value, "text": text, "verdict": verdict, "severity": severity}


def results() -> dict[str, Result]:
    """Results in run order: high, none, an old one without headline, skipped, failed."""
    pi = partial_input_result()
    pi.headline = headline(
        "partial-input leakage",
        "hypothesis-only accuracy 0.61 vs 0.34 majority",
        "strong leakage",
        "high",
        0.27,
    )
    clean = Result(
        "aflite",
        pd.DataFrame({"id": ["a"]}),
        {"removed_fraction": 0.01},
        summary="removed 1%",
        headline=headline(
            "adversarial filtering", "1% removed", "few predictable examples", "none"
        ),
    )
    old = Result("token_pmi", pd.DataFrame({"id": ["a"]}), {"max_pmi": 2.5}, summary="old summary")
    skipped = Result(
        "prediction_bias",
        pd.DataFrame({"id": pd.Series([], dtype=str)}),
        {},
        status="skipped",
        error="needs model predictions (--predictions)",
        summary="skipped: needs model predictions (--predictions)",
    )
    failed = Result(
        "encoder_probe",
        pd.DataFrame(),
        {},
        status="failed",
        error="RuntimeError: CUDA out of memory\nTraceback line 2",
    )
    return {r.name: r for r in (pi, clean, old, skipped, failed)}


def write_run(run_dir: Path, manifest_extra: dict | None = None) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    res = results()
    for name, r in res.items():
        r.save(run_dir / name)
    manifest = {
        "command": "spurious audit data.jsonl --task nli",
        "analyses": [*res, "cartography"],
        "statuses": {**{k: r.status for k, r in res.items()}, "cartography": "skipped"},
        "skipped": {"prediction_bias": "needs model predictions (--predictions)",
                    "cartography": "needs training dynamics"},
        "datasets": {"train": {"name": "snli-train", "n": 5000, "fingerprint": "fp"}},
    }  # fmt: skip
    manifest.update(manifest_extra or {})
    atomic_write_json(run_dir / "manifest.json", manifest)
    return run_dir


@pytest.fixture(scope="module")
def html(tmp_path_factory: pytest.TempPathFactory) -> str:
    return build_report_html(write_run(tmp_path_factory.mktemp("run")))


def overview_part(html: str) -> str:
    return html[html.index('id="findings"') : html.index('id="sections"')]


def test_cards_come_first_in_run_order(html: str) -> None:
    findings = html.index('id="findings"')
    assert findings < html.index('id="sections"') < html.index('id="run"')
    # Run metadata (command, versions) is below the findings and the sections.
    assert html.index("spurious audit data.jsonl") > html.index('id="sections"')
    cards = re.findall(r'<li class="finding sev-(\w+)">.*?href="#([\w-]+)"', html, re.S)
    assert cards == [
        ("high", "partial_input"),
        ("none", "aflite"),
        ("info", "token_pmi"),
    ]
    # Each card links to a section further down, in the same order.
    positions = [html.index(f'id="{anchor}"') for _, anchor in cards]
    assert positions == sorted(positions) and positions[0] > findings


def test_card_shows_label_text_verdict_and_a_non_colour_cue(html: str) -> None:
    part = overview_part(html)
    card = part[part.index("sev-high") : part.index("sev-none")]
    assert "partial-input leakage" in card and "strong leakage" in card
    assert "hypothesis-only accuracy 0.61 vs 0.34 majority" in card
    # The severity is also a word (and a decorative icon), not colour alone.
    assert "severity: </span>high" in card and 'aria-hidden="true">▲' in card
    assert "none found" in part


def test_result_without_headline_falls_back_to_summary(html: str) -> None:
    part = overview_part(html)
    assert "token_pmi" in part and "old summary" in part


def test_skipped_and_failed_are_listed_with_reasons(html: str) -> None:
    part = overview_part(html)
    skipped = part[part.index("Skipped (2)") : part.index("Failed (1)")]
    assert "prediction_bias" in skipped and 'href="#prediction_bias"' not in skipped
    assert "needs model predictions (--predictions)" in skipped
    # Only the manifest knows this one: no folder, still listed with its reason.
    assert "cartography" in skipped and "needs training dynamics" in skipped
    failed = part[part.index("Failed (1)") :]
    assert 'href="#encoder_probe"' in failed
    assert "RuntimeError: CUDA out of memory" in failed
    assert "Traceback line 2" not in failed  # first line only; the section has it all
    header = html[: html.index('id="findings"')]
    assert "3 ran" in header and "2 skipped" in header and "1 failed" in header


def test_skipped_result_gets_no_section_of_its_own(html: str) -> None:
    # Its reason is in the overview's "not run" list; a section would only repeat it.
    assert 'id="prediction_bias"' not in html
    assert html.count("needs model predictions (--predictions)") == 1


def test_manifest_failure_without_folder_and_missing_result() -> None:
    overview = build_overview([], {"detectors": ["a", "b"], "statuses": {"a": "failed", "b": "ok"}})
    assert [(n.name, n.status) for n in overview.failed] == [("a", "failed"), ("b", "missing")]
    assert overview.findings == [] and overview.skipped == []


def test_hostile_text_is_escaped_everywhere(tmp_path: Path) -> None:
    hostile = Result(
        "token_pmi",
        pd.DataFrame({"id": [XSS_IMG], "text": [XSS_SCRIPT]}),
        {"m": 1.0},
        summary=f"summary {XSS_SCRIPT}",
        headline=headline(XSS_IMG, f"text {XSS_SCRIPT}", f"verdict {XSS_IMG}", '" onclick="x'),
    )
    no_headline = Result("other", pd.DataFrame({"id": [1]}), {}, summary=f"old {XSS_IMG}")
    failed = Result("boom", pd.DataFrame(), {}, status="failed", error=f"ValueError: {XSS_SCRIPT}")
    skipped = Result("skip", pd.DataFrame(), {}, status="skipped", error=f"needs {XSS_IMG}")
    aflite = Result(
        "aflite",
        pd.DataFrame({"id": ["r0"], "aflite_score": [0.9]}),
        {"n_initial": 2.0, "n_final": 1.0},
        details={
            "text_fields": ["premise"],
            "removed_examples": [
                {"id": "r0", "premise": XSS_SCRIPT, "label": XSS_IMG, "aflite_score": 0.9,
                 "removed_round": 1}
            ],
        },
    )  # fmt: skip
    out = render(
        [hostile, no_headline, failed, skipped, aflite],
        tmp_path / "r.html",
        manifest={"skipped": {XSS_SCRIPT: XSS_IMG}, "command": XSS_SCRIPT},
    )
    page = out.read_text(encoding="utf-8")
    assert XSS_SCRIPT not in page and "<img src=x" not in page
    assert page.count("<script") == 1  # our own sorting script only
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in overview_part(page)
    assert "&lt;img src=x onerror=" in overview_part(page)
    # An unknown severity never reaches the class attribute.
    assert 'class="finding sev-info"' in page and "onclick" not in page


def test_render_from_memory(tmp_path: Path) -> None:
    res = results()
    out = render(list(res.values()), tmp_path / "sub" / "audit.html")
    assert out == tmp_path / "sub" / "audit.html" and out.is_file()
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "spurious report: audit" in page
    assert "No manifest.json" not in page  # no run directory is expected
    assert page.index('id="findings"') < page.index('id="partial_input"')
    assert "0.613" in page  # the partial-input section rendered its metrics
    # A mapping names the sections; a directory gets report.html.
    out = render({"first": res["aflite"]}, tmp_path, manifest={"seed": 7})
    assert out == tmp_path / REPORT_FILENAME
    page = out.read_text(encoding="utf-8")
    assert 'id="first"' in page and "adversarial filtering" in page


def test_render_checks_fingerprints_and_types(tmp_path: Path) -> None:
    res = partial_input_result()
    page = render(
        [res], tmp_path / "x.html", manifest={"datasets": {"train": {"fingerprint": "other"}}}
    ).read_text(encoding="utf-8")
    assert "Dataset mismatch" in page
    with pytest.raises(TypeError, match="Result"):
        render([{"not": "a result"}], tmp_path / "y.html")  # type: ignore[list-item]
    with pytest.raises(TypeError, match="list or dict"):
        render(res, tmp_path / "z.html")  # type: ignore[arg-type]


def test_render_matches_run_directory(tmp_path: Path) -> None:
    """The in-memory path and the run-directory path give the same findings."""
    run_dir = write_run(
        tmp_path / "run", {"analyses": list(results()), "statuses": {}, "skipped": {}}
    )
    from_dir = overview_part(build_report_html(run_dir))
    from_memory = overview_part(
        render(results(), tmp_path / "run2" / REPORT_FILENAME).read_text(encoding="utf-8")
    )
    assert from_dir == from_memory


def test_unknown_severity_is_info() -> None:
    r = Result("x", pd.DataFrame(), {}, headline={"severity": "catastrophic", "text": "t"})
    overview = build_overview([ReportEntry("x", build_section(r), "x", r)])
    assert overview.findings[0].severity == "info"


def _css_rule(selector: str) -> str:
    match = re.search(re.escape(selector) + r"\s*\{([^}]*)\}", CSS.read_text())
    assert match, selector
    return match.group(1)


@pytest.mark.parametrize("severity", SEVERITIES)
def test_severity_badges_have_readable_contrast(severity: str) -> None:
    rule = _css_rule(f".sev-{severity}")
    colours = dict(re.findall(r"--([\w-]+):\s*(#[0-9a-f]{6})", rule))
    assert contrast_ratio(colours["sev-badge-bg"], colours["sev-badge-fg"]) >= 4.5


def test_section_ids_never_clash_with_the_page(tmp_path: Path) -> None:
    r = Result("x", pd.DataFrame({"id": [1]}), {"m": 1.0})
    page = render({"findings": r, "run": r, "a b": r, "a-b": r}, tmp_path / "x.html").read_text()
    ids = re.findall(r'\sid="([^"]+)"', page)
    assert len(ids) == len(set(ids))
    assert 'href="#findings-2"' in page and 'href="#run-2"' in page
    assert 'href="#a-b"' in page and 'href="#a-b-2"' in page
