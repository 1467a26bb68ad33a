"""PECO runtime: the default analysis and the App. C sweep at ~10k and 200k rows.

Embeddings are given (a :class:`~spurious.features.PrecomputedFeaturizer` array), so the
timings are the analysis itself: PCA, k-means over 5 seeds, 100 label shuffles, 200
bootstrap replicates, the 2-D map (t-SNE on 2,000 points) and, separately, the 12-cell
sweep (5 k-means seeds per cell). The 10k rows are SNLI dev's cached MiniLM hypothesis embeddings (when the data
and the encoder cache are there); the 200k rows are synthetic: 384-d Gaussian blobs
around 400 centres, each centre with its own label distribution (a third of them
skewed), so PECO has something to find. Goal (issue 9): the default analysis under 10 s
on 10k rows given cached embeddings.

Writes ``bench/results/peco_scale.json``. Usage::

    python bench/bench_peco_scale.py [--sizes 10000 200000] [--repeats 3]
    python bench/bench_peco_scale.py --sizes --repeats 1   # SNLI dev only

Wall times (median of ``--repeats``) and CPU seconds of this process (``cpu_s``: what a
loaded machine still measures fairly). Settings not re-run are kept from the previous
JSON, marked ``"stale": true``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from spurious.context import RunContext
from spurious.data import Dataset
from spurious.detectors.peco import Peco
from spurious.features.precomputed import PrecomputedFeaturizer
from spurious.provenance import cpu_model, dependency_versions
from spurious.utils.io import atomic_write_json

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
#: Smoke run: SNLI dev (the small copy) and 600 synthetic rows, one repeat.
SMOKE_ARGS = ["--sizes", "600", "--repeats", "1"]


def synthetic(n: int, d: int = 384, centres: int = 400, seed: int = 0):
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=(centres, d)).astype(np.float32)
    alpha = np.where(rng.random(centres) < 1 / 3, 0.3, 20.0)  # skewed vs near-uniform
    probs = np.stack([rng.dirichlet([a] * 3) for a in alpha])
    c = rng.integers(0, centres, size=n)
    X = mu[c] + rng.normal(scale=1.5, size=(n, d)).astype(np.float32)
    u = rng.random(n)[:, None]
    y = (u > probs[c].cumsum(axis=1)).sum(axis=1)
    names = np.array(["entailment", "neutral", "contradiction"])
    # A distinct hypothesis per row (the embeddings are given; PECO refuses fewer
    # distinct elicited texts than clusters since c971ff9).
    frame = pd.DataFrame(
        {"id": [f"s{i}" for i in range(n)], "premise": "p",
         "hypothesis": [f"h{i}" for i in range(n)], "label": names[y]}
    )  # fmt: skip
    return Dataset.from_frame(frame, "nli", name=f"synthetic-{n}"), X


def snli_dev():
    from spurious import load_dataset

    ds = load_dataset(DATA / "snli/dev.jsonl", "nli")
    ctx = RunContext(ds, progress=False)
    return ds, np.asarray(ctx.features("minilm", "hypothesis_only"), dtype=np.float32)


def timed(ds: Dataset, X: np.ndarray, repeats: int, **params) -> dict:
    walls, cpus = [], []
    for _ in range(repeats):
        feat = PrecomputedFeaturizer({"hypothesis_only": X})
        t0, c0 = time.perf_counter(), time.process_time()
        res = Peco(features=feat, **params).run(ds, progress=False)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return {
        "median_s": round(statistics.median(walls), 3),
        "runs_s": [round(w, 3) for w in walls],
        "cpu_s": round(statistics.median(cpus), 3),
        "peco_l2": res.metrics["peco_l2"],
        "peco_l2_baseline": res.metrics["peco_l2_baseline"],
        "n_clusters": res.metrics["n_clusters"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[200_000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/peco_scale.json")
    args = ap.parse_args()
    settings = {}
    if (DATA / "snli/dev.jsonl").exists():
        settings["snli_dev_minilm"] = snli_dev
    for n in args.sizes:
        settings[f"synthetic_{n}"] = lambda n=n: synthetic(n)
    results: dict = {"settings": {}}
    for name, make in settings.items():
        ds, X = make()
        row: dict = {"n": len(ds), "dim": int(X.shape[1])}
        row["default"] = timed(ds, X, args.repeats)
        row["default_no_map"] = timed(ds, X, args.repeats, projection="none")
        # The sweep runs the analysis' k-means seeds in every cell (5 by default).
        sweep_only = {"projection": "none", "n_bootstrap": 0, "n_permutations": 1}
        base = timed(ds, X, 1, **sweep_only)
        full = timed(ds, X, 1, **sweep_only, run_sweep=True)
        row["sweep_s"] = round(full["median_s"] - base["median_s"], 3)
        row["sweep_cpu_s"] = round(full["cpu_s"] - base["cpu_s"], 3)
        results["settings"][name] = row
        print(f"{name:18s} n={len(ds):7,d} default {row['default']['median_s']:.2f}s "
              f"(no map {row['default_no_map']['median_s']:.2f}s) sweep {row['sweep_s']:.1f}s "
              f"PECO_L2 {row['default']['peco_l2']:.3f} (shuffled "
              f"{row['default']['peco_l2_baseline']:.3f})", flush=True)  # fmt: skip
    if args.out.exists():  # keep what was not re-run, marked as such
        old = json.loads(args.out.read_text()).get("settings", {})
        for name, row in old.items():
            results["settings"].setdefault(name, {**row, "stale": True})
    results["versions"] = dependency_versions()
    results["machine"] = {"cpu": cpu_model(), "cpus": os.cpu_count(), "load_avg": os.getloadavg()}
    results["timing"] = "medians of --repeats runs"
    atomic_write_json(args.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
