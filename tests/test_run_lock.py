"""Issue 26 items 5 and 7: one run per folder at a time; an interrupted run continues in place."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import pytest

from spurious.exceptions import ParameterError
from spurious.rundir import LOCK_FILE, check_run_dir, interrupted_run, prepare_out, release_out

CONFIG = {"inputs": {"task": "nli"}, "analyses": {"atlas": {}}, "seed": 0}


def test_a_second_run_into_a_folder_being_written_stops(tmp_path):
    out = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            from spurious.rundir import prepare_out
            prepare_out({str(out)!r}, {CONFIG!r}, command="first")
            print("locked", flush=True)
            time.sleep(60)
        """)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(ParameterError, match=r"is being written by another run \(pid \d+\)"):
            prepare_out(out, CONFIG, command="second")
        with pytest.raises(ParameterError, match="being written by another run"):
            prepare_out(out, {**CONFIG, "seed": 1}, force=True, command="second")
    finally:
        holder.kill()
        holder.wait()
    # Its process gone, the lock is free and the same run continues.
    assert prepare_out(out, CONFIG, command="again") == out
    release_out(out)


def test_the_running_manifest_lets_the_same_command_continue(tmp_path):
    out = tmp_path / "run"
    prepare_out(out, CONFIG, command="spurious audit ...")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "running" and manifest["config"] == CONFIG
    # Killed after one result, mid-way through writing another.
    (out / "atlas").mkdir()
    (out / "atlas" / "result.json").write_text("{}")
    tmp = out / "atlas" / ".metrics.json.123.tmp"
    tmp.write_text("half")
    release_out(out)  # what the end of the killed process does
    assert any("did not finish" in p for p in check_run_dir(out))
    # The same config goes on in place (no --force), and the half-written file is gone.
    assert interrupted_run(out, CONFIG)
    assert prepare_out(out, CONFIG, command="spurious audit ...", resume=True) == out
    assert not tmp.exists() and (out / "atlas" / "result.json").exists()
    release_out(out)
    # Not continued (resume=False: a complete run re-run in place): its results go first.
    assert prepare_out(out, CONFIG, command="spurious audit ...") == out
    assert not (out / "atlas").exists()
    release_out(out)
    # Another config is still refused: two runs are never mixed.
    with pytest.raises(ParameterError, match="already holds a different run"):
        prepare_out(out, {**CONFIG, "seed": 1}, command="other")


def test_a_refused_folder_is_left_as_it_was(tmp_path):
    (tmp_path / "thesis.tex").write_text("x")
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(ParameterError, match="already holds other files"):
        prepare_out(tmp_path, CONFIG, command="x")
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert not (tmp_path / LOCK_FILE).exists()


def test_a_run_releases_its_folder(tmp_path):
    import spurious
    from spurious.data.synthetic import make_nli_artifacts

    ds = make_nli_artifacts(n=120, random_state=0).dataset
    out = tmp_path / "run"
    spurious.run(ds, analyses={"atlas": {}}, out=out, progress=False)
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"
    assert check_run_dir(out) == []
    # Released: another process can take the folder at once.
    code = f"from spurious.rundir import _lock; from pathlib import Path; _lock(Path({str(out)!r}))"
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    assert time.perf_counter() - t0 < 120


def test_train_never_writes_into_another_runs_folder(tmp_path):
    """Issue 26 item 6: `train --out <a run's folder>` is refused before any work."""
    from click.testing import CliRunner

    from spurious.cli import main

    run = tmp_path / "run"
    prepare_out(run, CONFIG, command="spurious audit ...")
    release_out(run)
    before = sorted(p.name for p in run.iterdir())
    data = tmp_path / "d.jsonl"
    data.write_text('{"premise": "a", "hypothesis": "b", "label": "neutral"}\n' * 4)
    for extra in ([], ["--force"]):
        r = CliRunner().invoke(
            main, ["train", str(data), "--task", "nli", "--out", str(run), *extra]
        )
        assert r.exit_code == 2, r.output
        assert "holds a run of the analyses (manifest.json)" in r.output
    assert sorted(p.name for p in run.iterdir()) == before


def test_rerun_from_another_folder_uses_the_same_files_or_refuses(tmp_path, monkeypatch):
    """Issue 26 item 9: relative inputs resolve against the folder the run started in, and
    a re-run whose data differ from the manifest's fingerprints stops before any work."""
    from click.testing import CliRunner

    from spurious.cli import main
    from spurious.data.synthetic import make_nli_artifacts

    work = tmp_path / "work"
    work.mkdir()
    ds = make_nli_artifacts(n=120, random_state=0).dataset
    ds.frame[["id", "premise", "hypothesis", "label"]].to_json(
        work / "d.jsonl", orient="records", lines=True
    )
    monkeypatch.chdir(work)
    r = CliRunner().invoke(
        main, ["audit", "d.jsonl", "--task", "nli", "--only", "atlas", "--out", "run"]
    )
    assert r.exit_code == 0, r.output
    manifest = json.loads((work / "run" / "manifest.json").read_text())
    assert manifest["cwd"] == str(work) and manifest["config"]["inputs"]["data"] == "d.jsonl"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "d.jsonl").write_text((work / "d.jsonl").read_text().splitlines()[0] + "\n")
    monkeypatch.chdir(elsewhere)  # holds another d.jsonl: it must not be used
    cfg = str(work / "run" / "manifest.json")
    r = CliRunner().invoke(main, ["run", "--config", cfg, "--out", "again"])
    assert r.exit_code == 0, r.output
    again = json.loads((elsewhere / "again" / "manifest.json").read_text())
    assert again["datasets"]["train"]["n"] == 120
    # The file changed since: refused, and nothing is written.
    lines = (work / "d.jsonl").read_text().splitlines()
    (work / "d.jsonl").write_text("\n".join(lines[:-10]) + "\n")
    r = CliRunner().invoke(main, ["run", "--config", cfg, "--out", "third"])
    assert r.exit_code == 2 and "are not the data that run used" in r.output, r.output
    assert not (elsewhere / "third").exists()
