"""AFLite's verdict on real data: predictability vs a shortcut (issue 19 item 1).

Runs AFLite's quick audit profile (MiniLM features, m=16, 3 rounds) on real data from
../shared/data and records the headline (severity, what it rests on) and the evidence:
round 1's share of predictable examples (p >= tau) with the real and with shuffled
labels, for the filtering representation and for each baseline (partial inputs where
the task has them). Settings:

- ``sst2``: a seeded sample of SST-2 train (single sentence: no partial input);
- ``snli``: SNLI dev (9,842 pairs; baselines premise-only and hypothesis-only);
- ``cad_original`` / ``cad_revised``: CAD train, original SNLI sample vs the
  counterfactually revised pairs.

Writes ``bench/results/aflite_verdict.json`` atomically (CPU seconds of this process;
the machine and its load are recorded: wall times compare only at a similar load). Usage::

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python bench/aflite_verdict.py [--only sst2 snli] [--n-sst2 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from spurious import load_dataset
from spurious.detectors import AFLite
from spurious.provenance import cpu_model, dependency_versions
from spurious.utils.io import atomic_write_json

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
#: CAD's original pairs only, a seeded sample of 500 of them (the baselines and the verdict).
SMOKE_ARGS = ["--only", "cad_original", "--max-rows", "500"]


def settings(n_sst2: int):
    cad = DATA / "cad_snli"

    def sst2():
        full = load_dataset(DATA / "sst2/train.tsv", "text", name="sst2-train")
        rows = np.sort(np.random.default_rng(0).choice(len(full), n_sst2, replace=False))
        return full.subset(rows, f"sst2-train[{n_sst2}]")

    return {
        "sst2": sst2,
        "snli": lambda: load_dataset(DATA / "snli/dev.jsonl", "nli", name="snli-dev"),
        "cad_original": lambda: load_dataset(cad / "original/train.tsv", "nli"),
        "cad_revised": lambda: load_dataset(cad / "revised_combined/train.tsv", "nli"),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="+", default=None)
    ap.add_argument("--n-sst2", type=int, default=10000)
    ap.add_argument(
        "--max-rows",
        type=int,
        default=None,
        help="a seeded sample of at most this many rows of each setting (default: all)",
    )
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/aflite_verdict.json")
    args = ap.parse_args()
    if not DATA.exists():
        print(f"needs {DATA}", file=sys.stderr)
        return 1
    out = json.loads(args.out.read_text()) if args.out.exists() else {}
    out.setdefault("runs", {})
    params = dict(AFLite.profiles["quick"])
    for name, make in settings(args.n_sst2).items():
        if args.only and name not in args.only:
            continue
        ds = make()
        if args.max_rows and len(ds) > args.max_rows:
            rng = np.random.default_rng(0)
            rows = np.sort(rng.choice(len(ds), args.max_rows, replace=False))
            ds = ds.subset(rows, f"{ds.name}[{args.max_rows}]")
        cpu, wall = time.process_time(), time.perf_counter()
        res = AFLite(**params).run(ds)
        h, m = res.headline, res.metrics
        ev = res.details["predictability"]
        row = {
            "n": len(ds),
            "params": params,
            "severity": h["severity"],
            "inconclusive": h["inconclusive"],
            "verdict": h["verdict"],
            "text": h["text"],
            "evidence": h["evidence"],
            "predictable": ev["main"],
            "baselines": ev["baselines"],
            "chosen": ev["chosen"],
            "no_baseline_reason": ev["no_baseline_reason"],
            "removed_fraction": m["removed_fraction"],
            "cpu_s": round(time.process_time() - cpu, 1),
            "wall_s": round(time.perf_counter() - wall, 1),
        }
        out["runs"][name] = row
        print(f"{name}: {h['severity']} - {h['text']}", flush=True)
    out["command"] = (
        "python bench/aflite_verdict.py"
        + (" --only " + " ".join(args.only) if args.only else "")
        + (f" --max-rows {args.max_rows}" if args.max_rows else "")
    )
    # Measured: wall times only compare between runs at a similar load.
    out["machine"] = {"cpu": cpu_model(), "cpus": os.cpu_count(), "load_avg": os.getloadavg()}
    out["versions"] = dependency_versions()
    atomic_write_json(args.out, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
