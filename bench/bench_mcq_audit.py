"""The whole ``spurious audit`` of a multiple-choice benchmark (issue 22: MMLU test --quick
in under 2 minutes on a 2-core machine with a cold cache).

Each repeat runs the CLI in a fresh process, as a user would::

    spurious audit ../shared/data/mcq/mmlu/test --task mcq --quick --out DIR --force

with ``SPURIOUS_CACHE_DIR`` pointing at an empty folder (``cold``: every option and
question is encoded) or at the folder the cold run filled (``warm``), and records the wall
time, the CPU time of the child (user + system), its peak RSS, the exit status, and the
per-analysis and per-artifact timings the run writes into ``manifest.json``. The median
over repeats is the figure to quote; the machine is shared, so CPU seconds are the steadier
number.

Writes ``bench/results/mcq_audit.json``. Usage::

    python bench/bench_mcq_audit.py [--data PATH] [--profile quick|full] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "mcq" / "mmlu" / "test"
OUT = ROOT / "bench" / "results" / "mcq_audit.json"
#: Smoke run: one cold and one warm quick audit of the small MMLU copy (4 subjects).
SMOKE_ARGS = ["--repeats", "1"]


def run_once(data: Path, profile: str, cache: Path, out: Path) -> dict[str, Any]:
    """One audit in a child process; its wall / CPU time, peak RSS and manifest timings."""
    # The console script a user runs, in this interpreter's environment.
    cmd = [str(Path(sys.executable).parent / "spurious"), "audit", str(data), "--task", "mcq"]
    cmd += ["--quick"] if profile == "quick" else []
    cmd += ["--out", str(out), "--force"]
    env = {**os.environ, "SPURIOUS_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    return {
        "exit_status": proc.returncode,
        "wall_s": round(wall, 2),
        "cpu_s": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 2),
        # ru_maxrss of RUSAGE_CHILDREN is the largest child so far (KiB on Linux).
        "peak_rss_gib_max_child": round(after.ru_maxrss / 2**20, 3),
        "timings": manifest.get("timings", {}),
        "statuses": manifest.get("statuses", {}),  # {analysis: ok / skipped / failed}
        "stderr_tail": proc.stderr[-2000:] if proc.returncode else "",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--profile", choices=["quick", "full"], default="quick")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    runs: dict[str, list[dict[str, Any]]] = {"cold": [], "warm": []}
    with tempfile.TemporaryDirectory(prefix="mcq-audit-") as tmp:
        for rep in range(args.repeats):
            cache = Path(tmp) / f"cache{rep}"
            for state in ("cold", "warm"):  # warm reuses the cache the cold run filled
                out = Path(tmp) / f"run-{state}-{rep}"
                res = run_once(args.data, args.profile, cache, out)
                runs[state].append(res)
                print(f"{state} #{rep}: {res['wall_s']} s wall, {res['cpu_s']} CPU-s, "
                      f"exit {res['exit_status']}", flush=True)  # fmt: skip
            shutil.rmtree(cache, ignore_errors=True)
    summary = {
        state: {
            "median_wall_s": statistics.median(r["wall_s"] for r in rs),
            "median_cpu_s": statistics.median(r["cpu_s"] for r in rs),
            "all_exit_0": all(r["exit_status"] == 0 for r in rs),
        }
        for state, rs in runs.items()
    }
    from spurious.provenance import dependency_versions

    result = {
        "command": f"python bench/bench_mcq_audit.py --data {args.data} --profile "
        f"{args.profile} --repeats {args.repeats}",
        "data": str(args.data),
        "profile": args.profile,
        "goal": "MMLU test (14,042 items) --quick under 120 s wall, cold cache, 2 cores",
        "cpu_count": os.cpu_count(),
        "load_average_at_end": os.getloadavg(),
        "summary": summary,
        "runs": runs,
        "versions": dependency_versions(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = args.out.with_suffix(".json.tmp")
    tmp_out.write_text(json.dumps(result, indent=2, default=str))
    tmp_out.replace(args.out)  # atomic
    print(json.dumps(summary, indent=2))
    return 0 if all(s["all_exit_0"] for s in summary.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
