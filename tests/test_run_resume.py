"""An interrupted run continues where it stopped: finished results are kept, not redone.

The same command in the same folder used to recompute every analysis (only AFLite had
checkpoints), so a 78-minute audit killed in its last step started over. Here a run is
cut in its second analysis (in-process by an interrupt, and by ``kill -9`` in a child
process), continued, and compared with a run that was never interrupted.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pandas as pd
import pytest

from spurious.analysis import Analysis
from spurious.data.synthetic import make_nli_artifacts
from spurious.rundir import check_run_dir, interrupted_run, release_out
from spurious.runner import run

ANALYSES = {"atlas": {"min_count": 2}, "associations": {}, "duplicates": {}}


@pytest.fixture()
def data(tmp_path):
    ds = make_nli_artifacts(n=300, random_state=0).dataset
    frame = ds.frame[["id", "premise", "hypothesis"]].copy()
    frame["label"] = [ds.label_names[i] for i in ds.labels]
    path = tmp_path / "data.jsonl"
    frame.to_json(path, orient="records", lines=True)
    return path


def _run(data, out, **kwargs):
    return run(str(data), "nli", analyses=ANALYSES, out=out, progress=False, **kwargs)


class _Calls:
    """Patch ``Analysis.run``: record which analyses compute; interrupt one of them."""

    def __init__(self, monkeypatch, interrupt=None):
        self.names: list[str] = []
        original = Analysis.run

        def patched(analysis, *args, **kwargs):
            if analysis.name == interrupt:
                raise KeyboardInterrupt  # what Ctrl-C in the middle of this analysis does
            self.names.append(analysis.name)
            return original(analysis, *args, **kwargs)

        monkeypatch.setattr(Analysis, "run", patched)


def _same_results(a, b):
    assert list(a.results) == list(b.results)
    for name in a.results:
        ra, rb = a.results[name], b.results[name]
        assert (ra.status, ra.summary, ra.metrics, ra.headline) == (rb.status, rb.summary, rb.metrics, rb.headline)  # fmt: skip
        pd.testing.assert_frame_equal(ra.scores, rb.scores)


def _interrupt(data, out, monkeypatch, at):
    with monkeypatch.context() as m:
        _Calls(m, interrupt=at)
        with pytest.raises(KeyboardInterrupt):
            _run(data, out)
    release_out(out)  # the end of the interrupted process releases its lock


def test_a_continued_run_keeps_finished_results_and_equals_an_uninterrupted_one(
    data, tmp_path, monkeypatch
):
    reference = _run(data, tmp_path / "reference")
    out = tmp_path / "run"
    _interrupt(data, out, monkeypatch, at="associations")
    assert json.loads((out / "manifest.json").read_text())["status"] == "running"
    assert (out / "atlas" / "result.json").exists() and not (out / "associations").exists()
    assert interrupted_run(out, reference.config)
    assert check_run_dir(out)  # says the run did not finish

    calls = _Calls(monkeypatch)
    continued = _run(data, out)
    assert calls.names == ["associations", "duplicates"]  # atlas was not computed again
    assert [n for n, r in continued.results.items() if r.resumed] == ["atlas"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["resumed"] == ["atlas"]
    assert check_run_dir(out) == []
    _same_results(continued, reference)

    # A complete run is re-run from scratch, and --force never reuses anything.
    calls.names.clear()
    again = _run(data, out)
    assert calls.names == list(ANALYSES) and not any(r.resumed for r in again.results.values())
    _interrupt(data, out, monkeypatch, at="duplicates")
    calls = _Calls(monkeypatch)
    _run(data, out, force=True)
    assert calls.names == list(ANALYSES)


def test_results_from_other_data_or_a_failure_are_computed_again(data, tmp_path, monkeypatch):
    out = tmp_path / "run"
    _interrupt(data, out, monkeypatch, at="duplicates")
    # The file changed at the same path: the config is the same, the fingerprint is not.
    rows = data.read_text().splitlines()
    data.write_text("\n".join(rows[:-5]) + "\n")
    calls = _Calls(monkeypatch)
    continued = _run(data, out)
    assert calls.names == list(ANALYSES)
    assert not any(r.resumed for r in continued.results.values())

    # A failed result is tried again (what made it fail may have passed).
    meta = json.loads((out / "atlas" / "result.json").read_text())
    (out / "atlas" / "result.json").write_text(json.dumps({**meta, "status": "failed"}))
    manifest = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps({**manifest, "status": "running"}))
    calls.names.clear()
    continued = _run(data, out)
    assert calls.names == ["atlas"]
    assert [n for n, r in continued.results.items() if r.resumed] == ["associations", "duplicates"]


def test_a_run_killed_with_sigkill_continues(data, tmp_path):
    """The real thing: a child process killed (no handler runs) in its second analysis."""
    out = tmp_path / "run"
    script = textwrap.dedent(f"""
        import time
        from spurious.analysis import Analysis
        from spurious.runner import run
        original = Analysis.run
        def slow(self, *args, **kwargs):
            if self.name == "associations":
                time.sleep(600)  # killed here
            return original(self, *args, **kwargs)
        Analysis.run = slow
        run({str(data)!r}, "nli", analyses={ANALYSES!r}, out={str(out)!r}, progress=False)
    """)
    child = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 120
        while not (out / "atlas" / "result.json").exists():
            assert child.poll() is None and time.monotonic() < deadline, "the child never got going"
            time.sleep(0.1)
        time.sleep(0.5)  # well inside the 600 s sleep of the second analysis
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    continued = _run(data, out)
    assert [n for n, r in continued.results.items() if r.resumed] == ["atlas"]
    _same_results(continued, _run(data, tmp_path / "reference"))


def test_an_analysis_that_reads_a_kept_result_gives_the_same_numbers(data, tmp_path, monkeypatch):
    """pvi reuses partial_input's out-of-fold scores when they are in the run: a kept
    (loaded) partial_input result must serve it exactly as the computed one did."""
    analyses = {"partial_input": {"features": "bow", "n_resamples": 100},
                "pvi": {"features": "bow", "n_resamples": 100}}  # fmt: skip

    def go(out):
        return run(str(data), "nli", analyses=analyses, out=out, progress=False)

    reference = go(tmp_path / "reference")
    out = tmp_path / "run"
    with monkeypatch.context() as m:
        _Calls(m, interrupt="pvi")
        with pytest.raises(KeyboardInterrupt):
            go(out)
    release_out(out)
    calls = _Calls(monkeypatch)
    continued = go(out)
    assert calls.names == ["pvi"] and continued["partial_input"].resumed
    _same_results(continued, reference)
    assert continued["pvi"].details["reused_partial_input"] is True
    assert continued["pvi"].details == reference["pvi"].details


def test_force_on_the_same_run_removes_its_old_results_first(data, tmp_path, monkeypatch):
    """--force starts over: a forced re-run cut in its second analysis shows none of the
    previous run's results (before, the same config kept them until overwritten)."""
    out = tmp_path / "run"
    _run(data, out)
    assert (out / "duplicates" / "result.json").exists() and (out / "report.html").exists()
    with monkeypatch.context() as m:
        _Calls(m, interrupt="associations")
        with pytest.raises(KeyboardInterrupt):
            _run(data, out, force=True)
    release_out(out)
    assert (out / "atlas" / "result.json").exists()
    assert not (out / "duplicates").exists() and not (out / "report.html").exists()


def test_a_run_interrupted_under_other_code_starts_over(data, tmp_path, monkeypatch):
    """Between releases the version stays while the code changes: a run cut under other
    code (another code fingerprint in its manifest) keeps nothing, and its old results
    are gone before the first new one is written."""
    import spurious.rundir as rundir

    out = tmp_path / "run"
    _interrupt(data, out, monkeypatch, at="duplicates")
    assert json.loads((out / "manifest.json").read_text())["code"] == rundir.code_fingerprint()
    monkeypatch.setattr(rundir, "code_fingerprint", lambda: "0123456789abcdef")
    with monkeypatch.context() as m:
        calls = _Calls(m, interrupt="associations")
        with pytest.raises(KeyboardInterrupt):
            _run(data, out)
    release_out(out)
    assert calls.names == ["atlas"] and not (out / "duplicates").exists()
    calls = _Calls(monkeypatch)
    continued = _run(data, out)
    assert calls.names == ["associations", "duplicates"]
    assert [n for n, r in continued.results.items() if r.resumed] == ["atlas"]
