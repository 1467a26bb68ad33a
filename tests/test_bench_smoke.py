"""Every benchmark still runs, on a small copy of the data.

A benchmark that no longer runs leaves its figures in the README with nothing behind
them (``bench/aflite_snli.py`` did, for five days). Each script under ``bench/`` declares
at module level either ``SMOKE_ARGS`` (the command-line arguments of a run that takes
seconds to a minute on 2 cores) or ``SMOKE_SKIP`` (why it has none: a GPU, a browser).
This test reads the declarations without importing the scripts, copies ``bench/`` into a
temporary folder with a small copy of ``../shared/data`` beside it
(``bench/_smoke_data.py``), so that each script's own paths resolve there, and runs every
script: it must exit 0 and write a JSON result into the copy's ``bench/results``.
``SPURIOUS_BENCH_SMOKE=1`` is set; a benchmark may use it to shorten what only a real
run's sizes need. The committed results are never touched.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if not p.name.startswith("_"))
#: Seconds one smoke run may take (a real run's settings would take minutes to hours).
TIMEOUT_S = 420


def _declarations(script: str) -> dict[str, object]:
    """The script's module-level ``SMOKE_ARGS`` / ``SMOKE_SKIP`` literals."""
    tree = ast.parse((BENCH / script).read_text(encoding="utf-8"))
    found = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and target.id in ("SMOKE_ARGS", "SMOKE_SKIP"):
            found[target.id] = ast.literal_eval(node.value)
    return found


DECLARED = {s: _declarations(s) for s in SCRIPTS}
RUNNABLE = [s for s in SCRIPTS if "SMOKE_ARGS" in DECLARED[s]]


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_benchmark_declares_a_smoke_run_or_why_not(script):
    found = DECLARED[script]
    assert len(found) == 1, (
        f"bench/{script} must declare exactly one of SMOKE_ARGS (a list of arguments) or "
        f"SMOKE_SKIP (a reason) at module level; found {sorted(found) or 'neither'}"
    )
    if "SMOKE_ARGS" in found:
        args = found["SMOKE_ARGS"]
        assert isinstance(args, list) and all(isinstance(a, str) for a in args), args
    else:
        assert isinstance(found["SMOKE_SKIP"], str) and len(found["SMOKE_SKIP"]) > 10


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """``<tmp>/repo/bench`` (a copy) beside ``<tmp>/shared/data`` (the small data)."""
    ws = tmp_path_factory.mktemp("bench-smoke")
    shutil.copytree(
        BENCH, ws / "repo" / "bench", ignore=shutil.ignore_patterns("__pycache__", "data")
    )
    spec = importlib.util.spec_from_file_location("_smoke_data", BENCH / "_smoke_data.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.build(ws / "shared" / "data")
    return ws


def _snapshot(folder: Path) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


@pytest.mark.slow
@pytest.mark.parametrize("script", RUNNABLE)
def test_benchmark_runs_on_small_data(script, workspace):
    repo = workspace / "repo"
    results = repo / "bench" / "results"
    committed = _snapshot(BENCH / "results")
    before = _snapshot(results)
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "SPURIOUS_BENCH_SMOKE": "1",
        # one cache for all the runs: each text is encoded once
        "SPURIOUS_CACHE_DIR": str(workspace / "cache"),
        "MPLBACKEND": "Agg",
    }
    cmd = [sys.executable, str(repo / "bench" / script), *DECLARED[script]["SMOKE_ARGS"]]
    proc = subprocess.run(
        cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )
    log = (proc.stdout + proc.stderr)[-4000:]
    assert proc.returncode == 0, f"{' '.join(cmd[1:])} exited {proc.returncode}:\n{log}"
    written = [p for p, t in _snapshot(results).items() if before.get(p) != t]
    assert any(p.suffix == ".json" for p in written), f"no JSON result written:\n{log}"
    for p in written:
        if p.suffix == ".json":
            json.loads(p.read_text(encoding="utf-8"))
    assert _snapshot(BENCH / "results") == committed, "the committed results changed"
