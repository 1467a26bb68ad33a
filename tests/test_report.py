"""Tests of the HTML report: content, escaping, self-containment, and a real browser."""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from markupsafe import Markup

from spurious._version import __version__
from spurious.exceptions import ParameterError
from spurious.provenance import Provenance
from spurious.report import (
    SECTION_REGISTRY,
    Section,
    build_report_html,
    register_section,
    render_fragment,
    render_report,
)
from spurious.results import DetectorResult
from spurious.utils.io import atomic_write_json

logger = logging.getLogger(__name__)

XSS_SCRIPT = "<script>window.__xss=1</script>"
XSS_IMG = '<img src=x onerror="window.__xss=2">'
LABELS = ["entailment", "neutral", "contradiction"]
FINGERPRINTS = {"train": "fp-train-0123456789abcdef", "eval": "fp-eval-fedcba9876543210"}

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"


# ---------------------------------------------------------------------------------------
# Synthetic run directories
# ---------------------------------------------------------------------------------------
def _with_ci(name: str, value: float, low: float, high: float) -> dict[str, float]:
    return {name: value, f"{name}_ci_low": low, f"{name}_ci_high": high}


def _provenance() -> Provenance:
    return Provenance(
        seed=13,
        fingerprints=dict(FINGERPRINTS),
        timings={"total_s": 1.25},
        versions={"python": "3.11.7", "numpy": "2.0.0"},
        created="2026-01-02T03:04:05+00:00",
    )


def partial_input_result(n: int = 200) -> DetectorResult:
    """A complete partial_input result with dataset text that tries to inject HTML."""
    rng = np.random.default_rng(0)
    label = rng.integers(0, 3, n)
    scores = pd.DataFrame({"id": [f"ex-{i}" for i in range(n)], "label": label})
    for cond, acc in (("full", 0.81), ("hypothesis_only", 0.61), ("premise_only", 0.35)):
        correct = rng.random(n) < acc
        scores[f"pred_{cond}"] = np.where(correct, label, (label + 1) % 3)
        scores[f"correct_{cond}"] = correct
        scores[f"p_gold_{cond}"] = np.clip(rng.normal(0.3 + 0.5 * correct, 0.15), 0, 1)
    scores["partial_input_score"] = scores[["p_gold_hypothesis_only", "p_gold_premise_only"]].max(
        axis=1
    )
    scores["is_partial_input_issue"] = scores["partial_input_score"] > 0.8
    metrics: dict[str, float] = {"n_train": 5000, "n_eval": n}
    metrics |= _with_ci("accuracy_full", 0.8123, 0.7801, 0.8432)
    metrics |= _with_ci("accuracy_hypothesis_only", 0.6125, 0.5810, 0.6402)
    metrics |= _with_ci("accuracy_premise_only", 0.3510, 0.3205, 0.3850)
    metrics |= _with_ci("majority_accuracy", 0.3400, 0.3101, 0.3702)
    metrics |= _with_ci("delta_maj_hypothesis_only", 0.2731, 0.2405, 0.3050)
    metrics |= _with_ci("delta_maj_premise_only", 0.0110, -0.0200, 0.0400)
    metrics |= _with_ci("recovery_hypothesis_only", 0.7540, 0.7120, 0.7950)
    metrics |= _with_ci("recovery_premise_only", 0.4321, 0.3950, 0.4700)
    metrics |= _with_ci("nba_hypothesis_only", 0.6634, 0.6300, 0.6950)
    metrics |= _with_ci("nba_premise_only", 0.4102, 0.3800, 0.4400)
    metrics |= _with_ci("nbr_hypothesis_only", 0.8120, 0.7800, 0.8400)
    metrics |= _with_ci("nbr_premise_only", 0.7001, 0.6600, 0.7400)
    top = []
    for i in range(5):
        top.append(
            {
                "id": f"leak-{i}",
                "premise": f"A man is playing a guitar on stage {XSS_IMG}"
                if i == 0
                else "A dog runs.",
                "hypothesis": f"Nobody is sleeping {XSS_SCRIPT}" if i == 0 else "A cat sleeps.",
                "label": "contradiction" if i % 2 == 0 else 1,
                "pred_full": "contradiction",
                "pred_hypothesis_only": "contradiction",
                "pred_premise_only": 0,
                "p_gold_full": 0.97,
                "p_gold_hypothesis_only": 0.95 - 0.01 * i,
                "p_gold_premise_only": 0.31,
                "partial_input_score": 0.95 - 0.01 * i,
            }
        )
    details = {
        "conditions": [
            {"view": "full", "fields": ["premise", "hypothesis"], "is_partial": False},
            {"view": "hypothesis_only", "fields": ["hypothesis"], "is_partial": True},
            {"view": "premise_only", "fields": ["premise"], "is_partial": True},
        ],
        "label_names": LABELS,
        "per_class_accuracy": {
            "full": {"entailment": 0.85, "neutral": 0.74, "contradiction": 0.83},
            "hypothesis_only": {"entailment": 0.58, "neutral": 0.49, "contradiction": 0.77},
            "premise_only": {"entailment": 0.36, "neutral": 0.33, "contradiction": 0.35},
        },
        "top_examples": top,
        "featurizer": {"name": "tfidf", "ngram_range": [1, 2], "max_features": 50000},
    }
    return DetectorResult(
        analysis="partial_input",
        scores=scores,
        metrics=metrics,
        params={"model": "logistic_regression", "n_bootstrap": 1000, "random_state": 13},
        provenance=_provenance(),
        summary="Hypothesis-only model recovers 75.4% of full-input accuracy.",
        details=details,
    )


def generic_result() -> DetectorResult:
    """A detector without a registered section (uses the generic fallback)."""
    scores = pd.DataFrame(
        {
            "id": ["a", "b", "c"],
            "text": ["plain", XSS_SCRIPT, "x" * 1000],
            "pmi_score": [0.1, 2.5, np.nan],
        }
    )
    return DetectorResult(
        analysis="token_pmi",
        scores=scores,
        metrics=_with_ci("max_pmi", 2.5, 2.1, 2.9) | {"n_tokens": 12345},
        params={"min_count": 5, "note": XSS_IMG},
        provenance=_provenance(),
        summary=f"Top token 'not' is {XSS_SCRIPT} predictive.",
        details={"top_tokens": [{"token": "not", "pmi": 2.5}]},
    )


def failed_result() -> DetectorResult:
    return DetectorResult(
        analysis="encoder_probe",
        scores=pd.DataFrame(),
        metrics={},
        params={"model": "minilm"},
        provenance=_provenance(),
        status="failed",
        error=f"RuntimeError: CUDA out of memory while encoding {XSS_SCRIPT}",
    )


def write_manifest(run_dir: Path, **overrides: object) -> None:
    manifest = {
        "command": ["spurious", "detect", "--task", "nli", f"--data={XSS_IMG}"],
        "created": "2026-01-02T03:04:00+00:00",
        "seed": 13,
        "library_version": __version__,
        "versions": {"python": "3.11.7", "numpy": "2.0.0", "pandas": "2.2.0"},
        "datasets": {
            "train": {"name": "snli-train", "n": 5000, "fingerprint": FINGERPRINTS["train"]},
            "eval": {
                "name": f"snli-dev {XSS_SCRIPT}",
                "n": 200,
                "fingerprint": FINGERPRINTS["eval"],
            },
        },
        "timings": {"partial_input": 1.25, "total": 3.5},
        "detectors": ["partial_input", "token_pmi", "encoder_probe"],
        "config": {"task": "nli", "detectors": {"partial_input": {"n_bootstrap": 1000}}},
    }
    manifest.update(overrides)
    atomic_write_json(run_dir / "manifest.json", manifest)


def make_run(run_dir: Path) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    write_manifest(run_dir)
    partial_input_result().save(run_dir / "partial_input")
    generic_result().save(run_dir / "token_pmi")
    failed_result().save(run_dir / "encoder_probe")
    return run_dir


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    run_dir = make_run(tmp_path_factory.mktemp("run"))
    path = render_report(run_dir)
    return path, path.read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------
# Content
# ---------------------------------------------------------------------------------------
def test_writes_report_into_run_dir(report: tuple[Path, str]) -> None:
    path, html = report
    assert path.name == "report.html" and path.is_file()
    assert html.startswith("<!DOCTYPE html>")
    # The atomic write leaves no temporary files behind.
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_header_has_run_info(report: tuple[Path, str]) -> None:
    _, html = report
    assert "2026-01-02T03:04:00+00:00" in html
    assert "spurious detect --task nli" in html
    assert "snli-train" in html and "5,000" in html
    assert FINGERPRINTS["train"] in html and FINGERPRINTS["eval"] in html
    assert "pandas" in html and "2.2.0" in html
    assert f"Generated by spurious {__version__}" in html


def test_toc_links_every_section(report: tuple[Path, str]) -> None:
    _, html = report
    for anchor in ("partial_input", "token_pmi", "encoder_probe"):
        assert f'href="#{anchor}"' in html
        assert f'id="{anchor}"' in html
    # Manifest order is kept.
    assert html.index('id="partial_input"') < html.index('id="token_pmi"')
    assert html.index('id="token_pmi"') < html.index('id="encoder_probe"')


def test_partial_input_metrics_with_intervals(report: tuple[Path, str]) -> None:
    _, html = report
    assert '0.613 <span class="ci">[0.581, 0.640]</span>' in html  # A_SSC
    assert '0.812 <span class="ci">[0.780, 0.843]</span>' in html  # A_PSC
    assert "0.340" in html  # majority
    assert "+0.273" in html  # Δ_maj, signed
    assert "75.4%" in html and "[71.2, 79.5]" in html  # %R_R as a percentage
    assert "0.663" in html and "0.812" in html  # NBA, NBR
    assert "Δ<sub>maj</sub>" in html and "%R<sub>R</sub>" in html
    assert "Accuracy per gold label" in html
    assert "Most leaky examples" in html
    assert "tfidf" in html  # featurizer


def test_plots_are_inline_images(report: tuple[Path, str]) -> None:
    _, html = report
    srcs = re.findall(r'<img[^>]*\ssrc="([^"]*)"', html)
    assert len(srcs) == 2  # accuracy per condition + score histogram
    assert all(s.startswith("data:image/svg+xml;base64,") for s in srcs)


def test_self_contained(report: tuple[Path, str]) -> None:
    _, html = report
    external = re.findall(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", html, re.IGNORECASE)
    assert external == []
    assert "<link" not in html
    assert "@import" not in html
    assert not re.search(r"url\(\s*['\"]?(?:https?:)?//", html)
    assert "Content-Security-Policy" in html


def test_generic_section_fallback(report: tuple[Path, str]) -> None:
    _, html = report
    assert "max_pmi" in html and "2.500" in html and "[2.100, 2.900]" in html
    assert "12,345" in html
    assert "First 3 of 3 rows" in html
    assert "top_tokens" in html  # details JSON
    assert "min_count" in html  # params


def test_failed_detector_shows_error(report: tuple[Path, str]) -> None:
    _, html = report
    section = html[html.index('id="encoder_probe"') :]
    assert "This analysis failed" in section
    assert "RuntimeError: CUDA out of memory" in section
    assert 'badge status-failed">failed<' in html
    assert "1 failed" in html


def test_dataset_text_is_escaped(report: tuple[Path, str]) -> None:
    _, html = report
    assert XSS_SCRIPT not in html
    assert "<img src=x" not in html
    assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=" in html
    # Our own sorting script is the only one on the page.
    assert html.count("<script") == 1


def test_render_is_deterministic(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path / "run")
    assert build_report_html(run_dir) == build_report_html(run_dir)


# ---------------------------------------------------------------------------------------
# Robustness
# ---------------------------------------------------------------------------------------
def test_partial_result_without_details_or_manifest(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    DetectorResult(
        analysis="partial_input",
        scores=pd.DataFrame({"id": [1, 2]}),
        metrics={
            "accuracy_full": 0.7,
            "accuracy_hypothesis_only": 0.55,
            "recovery_hypothesis_only": 0.5,
        },
    ).save(run_dir / "partial_input")
    html = render_report(run_dir).read_text(encoding="utf-8")
    assert "No manifest.json" in html
    assert "0.550" in html and "50.0%" in html
    assert "hypothesis only" in html  # condition inferred from metric names
    assert "specialised view unavailable" not in html.lower()


def test_empty_run_dir(tmp_path: Path) -> None:
    # issue 26 item 14: a folder without a run gets no report of nothing, and no file.
    with pytest.raises(ParameterError, match="is not a run directory"):
        render_report(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_missing_run_dir_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        render_report(tmp_path / "nope")


def test_unloadable_and_failed_without_scores(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    newer = run_dir / "from_the_future"
    newer.mkdir(parents=True)
    (newer / "result.json").write_text(json.dumps({"format_version": 99, "detector": "future"}))
    crashed = run_dir / "crashed"
    crashed.mkdir()
    # A detector that died before writing scores.parquet still shows its own error.
    (crashed / "result.json").write_text(
        json.dumps({"detector": "crashed", "status": "failed", "error": "ValueError: bad <input>"})
    )
    html = render_report(run_dir).read_text(encoding="utf-8")
    assert "could not be loaded" in html and "newer spurious" in html
    assert "This analysis failed" in html and "ValueError: bad &lt;input&gt;" in html


def test_manifest_mismatch_and_missing_detector(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    write_manifest(
        run_dir,
        datasets={"train": {"name": "other", "n": 1, "fingerprint": "something-else"}},
        detectors=["partial_input", "ghost"],
    )
    partial_input_result().save(run_dir / "partial_input")
    html = render_report(run_dir).read_text(encoding="utf-8")
    assert "Dataset mismatch" in html and "something-else" in html
    ghost = html[html.index('id="findings"') : html.index('id="sections"')]
    assert "ghost" in ghost and "listed in manifest.json, but no result was saved" in ghost


def test_registered_section_is_used_and_broken_one_falls_back(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    DetectorResult("custom_det", pd.DataFrame({"id": [1]}), {"m": 1.0}).save(run_dir / "custom_det")
    DetectorResult("broken_det", pd.DataFrame({"id": [1]}), {"m": 2.5}).save(run_dir / "broken_det")

    @register_section("custom_det")
    def _custom(result: DetectorResult) -> Section:
        return Section("Custom view", render_fragment("<p class='x'>{{ v }}</p>", v="<hi>"))

    @register_section("broken_det")
    def _broken(result: DetectorResult) -> Section:
        raise RuntimeError("renderer bug")

    try:
        with pytest.raises(ValueError, match="already registered"):
            register_section("custom_det")(lambda r: _custom(r))
        html = render_report(run_dir).read_text(encoding="utf-8")
    finally:
        SECTION_REGISTRY.unregister("custom_det")
        SECTION_REGISTRY.unregister("broken_det")
    assert "Custom view" in html and "<p class='x'>&lt;hi&gt;</p>" in html
    assert "Specialised view unavailable" in html and "renderer bug" in html
    assert "2.500" in html  # the generic view of the broken detector


def test_plain_str_body_is_escaped() -> None:
    section = Section("t", "<b>not trusted</b>")  # type: ignore[arg-type]
    assert isinstance(section.html_body, Markup)
    assert str(section.html_body) == "&lt;b&gt;not trusted&lt;/b&gt;"


def test_does_not_import_pyplot(tmp_path: Path) -> None:
    """Rendering must not pick a process-wide matplotlib backend (pyplot)."""
    run_dir = make_run(tmp_path / "run")
    code = (
        "import sys; from spurious.report import render_report; "
        f"render_report({str(run_dir)!r}); "
        "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot was imported'"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


# ---------------------------------------------------------------------------------------
# Browser
# ---------------------------------------------------------------------------------------
@pytest.mark.browser
@pytest.mark.skipif(
    not CHROMIUM.exists() or not CHROMEDRIVER.exists(),
    reason="needs /usr/bin/chromium and /usr/bin/chromedriver "
    "(apt-get install chromium chromium-driver; see .ci/apt-packages.txt)",
)
def test_report_in_headless_chromium(
    report: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    webdriver = pytest.importorskip("selenium.webdriver", reason="needs the selenium package")
    from selenium.webdriver.chrome.service import Service

    # Belt and braces: Selenium Manager is skipped when a driver path is given, and
    # offline mode stops it downloading anything should that ever change.
    monkeypatch.setenv("SE_OFFLINE", "true")
    path, _ = report
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'chrome-profile'}",
        "--window-size=1366,900",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    try:
        driver.get(path.resolve().as_uri())
        assert driver.execute_script("return document.readyState") == "complete"
        assert driver.execute_script("return typeof window.__xss") == "undefined"
        assert "spurious report" in driver.title
        severe = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        assert severe == [], severe
        # The findings are on the first screen (900 px high), run metadata is not.
        box = "return document.getElementById(arguments[0]).getBoundingClientRect().top"
        assert driver.execute_script(box, "findings") < 450
        assert driver.execute_script(box, "run") > 900

        # Full-page screenshot: grow the window to the document height, from the top.
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(1366, min(int(height) + 40, 16000))
        driver.execute_script("window.scrollTo(0, 0)")
        shot = tmp_path / "report.png"
        assert driver.save_screenshot(str(shot))
        assert shot.stat().st_size > 10_000
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, ARTIFACTS / "report.png")
        logger.info("Saved screenshot to %s", ARTIFACTS / "report.png")

        # Example tables start folded (issue 23 item 8); a click on the summary opens one.
        examples = driver.find_element("css selector", "details.examples-block")
        assert examples.get_attribute("open") is None
        examples.find_element("css selector", "summary").click()
        assert examples.find_element("css selector", "table.examples").is_displayed()

        # The optional sorting script ran (it wraps headers in buttons) and sorts numbers.
        first_score = (
            "return document.querySelector('table.examples tbody tr').lastElementChild.textContent"
        )
        assert driver.execute_script(first_score).strip() == "0.950"
        score_header = driver.find_elements("css selector", "table.examples th button.sort")[-1]
        score_header.click()  # ascending
        assert driver.execute_script(first_score).strip() == "0.910"
        score_header.click()  # descending
        assert driver.execute_script(first_score).strip() == "0.950"
        assert driver.execute_script("return typeof window.__xss") == "undefined"
        severe = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        assert severe == [], severe
    finally:
        driver.quit()
