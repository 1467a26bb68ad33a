"""Start-up time of the CLI (issue 24 goal 3: `spurious --help` and `spurious analyses`
under 0.5 s, `import spurious` under 0.3 s on a 2-core machine).

Each command runs ``--repeats`` times in a fresh process, interleaved; the baseline is the
listing from the registry (what `spurious analyses` did before it read the shipped
catalog), timed in the same loop. Writes ``bench/results/startup.json``. Usage::

    python bench/bench_startup.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = str(Path(sys.executable).parent / "spurious")
COMMANDS = {
    "import spurious": [sys.executable, "-c", "import spurious"],
    "spurious --help": [CLI, "--help"],
    "spurious analyses": [CLI, "analyses"],
    "baseline: analyses from the registry": [
        sys.executable,
        "-c",
        "import click; from spurious.cli.info import _list_from_registry; "
        "click.command()(_list_from_registry)(standalone_mode=False)",
    ],
}
#: Smoke run: each command once.
SMOKE_ARGS = ["--repeats", "1"]


def _machine() -> dict[str, object]:
    from spurious.provenance import cpu_model

    return {"cpu": cpu_model(), "cpus": os.cpu_count()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    times: dict[str, list[float]] = {k: [] for k in COMMANDS}
    for _ in range(args.repeats):
        for name, cmd in COMMANDS.items():  # interleaved: load changes hit every command
            t0 = time.perf_counter()
            subprocess.run(cmd, env=env, capture_output=True, check=True)
            times[name].append(time.perf_counter() - t0)
    medians = {k: round(statistics.median(v), 3) for k, v in times.items()}
    base = medians["baseline: analyses from the registry"]
    out = {
        "command": f"python bench/bench_startup.py --repeats {args.repeats}",
        "median_wall_s": medians,
        "speedup_analyses_vs_registry": round(base / medians["spurious analyses"], 1),
        "goal": "--help and analyses < 0.5 s, import < 0.3 s",
        "runs_s": {k: [round(x, 3) for x in v] for k, v in times.items()},
        "load_average_at_end": os.getloadavg(),
        # Imported after the timed runs (they are fresh processes; this one's imports
        # do not touch them).
        "machine": _machine(),
    }
    path = ROOT / "bench" / "results" / "startup.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(out, indent=2))
    tmp.replace(path)
    print(json.dumps(out["median_wall_s"], indent=2), out["speedup_analyses_vs_registry"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
