"""``spurious audit --canary``: the canary after the audit, its files, its report block."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from spurious.cli import main
from spurious.data.synthetic import make_nli_artifacts
from spurious.report.canary import canary_block


@pytest.fixture(scope="module")
def train(tmp_path_factory):
    d = tmp_path_factory.mktemp("canary-audit")
    data = make_nli_artifacts(n=300, artifact_rate=0.5, random_state=0).dataset
    path = d / "train.jsonl"
    data.frame[["id", "premise", "hypothesis", "label"]].to_json(path, orient="records", lines=True)
    return path


def _audit(train, out, *extra):
    args = ["audit", str(train), "--task", "nli", "--quick", "--only", "atlas", "--out", str(out)]
    return CliRunner().invoke(main, [*args, *extra])


def test_audit_canary_writes_the_canary_and_shows_it_in_the_report(train, tmp_path):
    plain = _audit(train, tmp_path / "plain", "--fail-on", "low")
    res = _audit(train, tmp_path / "run", "--fail-on", "low", "--canary", "--canary-rate", "0.2")
    # The cue in half the data gets flagged: the gate exits 3 with or without the canary.
    assert plain.exit_code == res.exit_code == 3, res.output
    assert "gate: atlas" in res.output

    doc = json.loads((tmp_path / "run" / "canary" / "canary.json").read_text())
    assert doc["config"]["rates"] == [0.2]
    assert doc["config"]["background"] == "shuffled"
    assert doc["config"]["analyses"] == {"atlas": {"random_state": 0}}  # the audit's plan
    assert doc["config"]["run"]["fingerprint"]
    token = {
        t["plant"]: t["min_rate_detected"] for t in doc["thresholds"] if t["analysis"] == "atlas"
    }
    assert token["token@hypothesis"] == 0.2
    detected = {
        s["plant"]: s["detection_rate"]
        for s in doc["summary"]
        if s["analysis"] == "atlas" and s["rate"] == 0.2
    }
    assert detected["token@hypothesis"] == 1.0
    assert (tmp_path / "run" / "canary" / "canary.parquet").exists()

    # the terminal: the audit's summary first, then the canary's table and sentences
    out = res.output
    assert out.index("finding") < out.index("detection_rate") < out.index("atlas detects")
    # the report: the block, its table, its sentences and its plot, after the sections
    html = (tmp_path / "run" / "report.html").read_text()
    assert 'id="canary"' in html and 'href="#canary"' in html
    assert html.index('id="sections"') < html.index('id="canary"') < html.index('id="run"')
    assert "Detected from" in html and "20.0%" in html
    assert "atlas detects token@hypothesis planted in &gt;= 20.0%" in html
    assert "data:image/svg+xml;base64," in html
    assert 'id="canary"' not in (tmp_path / "plain" / "report.html").read_text()


def test_audit_canary_keeps_a_clean_exit_code(train, tmp_path):
    res = _audit(train, tmp_path / "run", "--canary", "--canary-rate", "0.2")
    assert res.exit_code == 0, res.output
    assert (tmp_path / "run" / "canary" / "canary.json").exists()


def test_a_failed_canary_exits_1_and_keeps_the_audit(train, tmp_path, monkeypatch):
    import spurious.canary

    def boom(*args, **kwargs):
        raise ValueError("planted token already occurs")

    monkeypatch.setattr(spurious.canary, "run_canary", boom)
    res = _audit(train, tmp_path / "run", "--canary", "--fail-on", "low")
    # Exit 1 (a failure) takes precedence over the gate's 3, as for a failed analysis.
    assert res.exit_code == 1, res.output
    assert "canary: planted token already occurs" in res.output
    assert (tmp_path / "run" / "atlas" / "result.json").exists()
    assert (tmp_path / "run" / "report.html").exists()
    assert not (tmp_path / "run" / "canary").exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--canary", "--canary-rate", "1.5"], "--canary-rate"),
        (["--canary", "--canary-rate", "0"], "--canary-rate"),
        (["--canary-rate", "0.2"], "needs --canary"),
        (["--canary-background", "own"], "needs --canary"),
    ],
)
def test_bad_canary_options_exit_2_before_anything_runs(train, tmp_path, extra, message):
    out = tmp_path / "never"
    res = _audit(train, out, *extra)
    assert res.exit_code == 2, res.output
    assert message in res.output
    assert not out.exists()


def test_canary_block_escapes_dataset_text_and_warns_about_another_run(tmp_path):
    folder = tmp_path / "canary"
    folder.mkdir()
    evil = "<script>alert(1)</script>"
    doc = {
        "config": {"label": evil, "background": "shuffled", "n_data": 10,
                   "run": {"created": "2020-01-01T00:00:00", "fingerprint": "abc"}},
        "skipped": {"pvi": evil},
        "summary": [{"analysis": "atlas", "plant": evil, "n": 10, "rate": 0.2}],
        "thresholds": [{"analysis": "atlas", "plant": evil, "n": 10, "min_rate_detected": None}],
        "sentences": [evil],
    }  # fmt: skip
    (folder / "canary.json").write_text(json.dumps(doc))
    html = str(canary_block(tmp_path, {"created": "2021-01-01T00:00:00"}))
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "not detected" in html and "another run" in html
    (folder / "canary.json").write_text("[1, 2")
    assert "could not be read" in canary_block(tmp_path, {})
