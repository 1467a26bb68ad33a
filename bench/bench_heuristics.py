"""The NLI heuristics (``compute_heuristics``, no cache): this checkout against a baseline.

Issue 24: at 550k SNLI-like pairs the heuristics artifact took 98 s and the associations
analysis' text properties most of its own time, nearly all of it tokenising the same
texts again for every heuristic. Each variant runs in a fresh process (``PYTHONPATH``
set to its ``src``), alternating ``--repeats`` times, on SNLI dev (9,842 pairs: real
texts, premises repeat about 3 times) and on 100k SNLI-like pairs (real SNLI sentences
resampled into new premise groups, as ``bench/bench_leakage_scale.py`` makes them; about
20k distinct texts). Reports median wall seconds of ``compute_heuristics`` and of
``text_properties`` per variant and their ratio; the values must be equal. Writes
``bench/results/heuristics.json``. Usage::

    python bench/bench_heuristics.py --baseline-src <checkout of a2b0adc>/src
    python bench/bench_heuristics.py --cases dev    # this checkout alone: times, no ratios
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "heuristics.json"
DEV = ROOT.parent / "shared" / "data" / "snli" / "dev.jsonl"
#: Smoke run: this checkout alone (no baseline), SNLI dev only, one repeat.
SMOKE_ARGS = ["--cases", "dev", "--repeats", "1"]

CHILD = r"""
import hashlib, json, sys, time
import numpy as np
sys.path.insert(0, sys.argv[3])
from spurious import load_dataset
from spurious.heuristics import compute_heuristics
from spurious.detectors.associations.properties import text_properties
if sys.argv[1] == "dev":
    ds = load_dataset(sys.argv[2], "nli")
else:
    from bench_leakage_scale import snli_like
    ds = snli_like(int(sys.argv[1]), random_state=0)
t = time.perf_counter(); h = compute_heuristics(ds, cache_dir=False); th = time.perf_counter() - t
t = time.perf_counter(); p = text_properties(ds); tp = time.perf_counter() - t
digest = hashlib.sha256(h.drop(columns="id").to_numpy().tobytes() + p.to_numpy().tobytes()).hexdigest()
print(json.dumps({"heuristics_s": th, "properties_s": tp, "n": len(ds), "digest": digest}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--baseline-src",
        default=None,
        help="src folder of the baseline checkout (without it: this checkout alone, no ratios)",
    )
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--cases", nargs="+", default=["dev", "100000"])
    args = ap.parse_args()
    variants = {"new": str(ROOT / "src")}
    if args.baseline_src:
        variants = {"baseline": str(Path(args.baseline_src).resolve()), **variants}
    out = {}
    for case in args.cases:
        runs: dict[str, list[dict]] = {k: [] for k in variants}
        for _ in range(args.repeats):
            for name, src in variants.items():
                env = {**os.environ, "PYTHONPATH": src, "HF_HUB_OFFLINE": "1"}
                res = subprocess.run(
                    [sys.executable, "-c", CHILD, case, str(DEV), str(ROOT / "bench")],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                runs[name].append(json.loads(res.stdout.strip().splitlines()[-1]))
        med = {
            k: {m: statistics.median(r[m] for r in v) for m in ("heuristics_s", "properties_s")}
            for k, v in runs.items()
        }
        base = med.get("baseline")
        out[case] = {
            "n": runs["new"][0]["n"],
            "median_s": med,
            "runs": runs,
            "ratio_heuristics": base and base["heuristics_s"] / med["new"]["heuristics_s"],
            "ratio_properties": base and base["properties_s"] / med["new"]["properties_s"],
            "same_values": len({r["digest"] for v in runs.values() for r in v}) == 1,
        }
        print(case, json.dumps({k: v for k, v in out[case].items() if k != "runs"}), flush=True)
    from spurious.utils.io import atomic_write_json

    atomic_write_json(
        RESULTS,
        {
            "command": "python bench/bench_heuristics.py " + " ".join(sys.argv[1:]),
            "machine": {"cpus": os.cpu_count()},
            "cases": out,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
