"""Partial-input cross-fitting: every fold's probe in one L-BFGS run vs fold by fold.

On SNLI dev (9,842 pairs; no SNLI training split offline) MiniLM features of the three
conditions (full: 1,536-d pair features; hypothesis-only and premise-only: 384-d), and
the same rows resampled ``--scale`` times with N(0, 0.01) noise (a ~100k-row problem
with SNLI's geometry), 5 folds (random, fixed seed: the kernel does not depend on how
folds are drawn). Variants, interleaved per repeat on one thread each:

* ``by_fold``: what the analysis did before (and still does for other probes): for
  every fold a copy of the training rows and one ``LogisticProbe`` fit;
* ``joint``: :func:`spurious.models.linear.cross_fit_proba`, what it does now.

Writes medians of wall time, their ratio, L-BFGS iterations, and the largest difference
of the out-of-fold probabilities (both runs stop at the same max-abs gradient, 1e-7;
the difference is how far apart two tolerance-converged solutions are) to
``bench/results/partial_input_joint.json``. Usage::

    python bench/bench_partial_input_joint.py                 # scales 1 and 10, 2 repeats
    python bench/bench_partial_input_joint.py --scales 1 --repeats 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "snli" / "dev.jsonl"
RESULTS = ROOT / "bench" / "results" / "partial_input_joint.json"
VIEWS = ("full", "hypothesis_only", "premise_only")
#: Smoke run: SNLI dev (the small copy) at scale 1, one repeat.
SMOKE_ARGS = ["--scales", "1", "--repeats", "1"]


def by_fold(X, y, fold_of, k):
    from spurious.models.linear import LogisticProbe

    out, iters = np.zeros((len(y), k)), []
    for f in np.unique(fold_of):
        train, test = fold_of != f, fold_of == f
        probe = LogisticProbe().fit(X[train], y[train])
        out[test] = probe.predict_proba(X[test])
        iters.append(probe.n_iter_)
    return out, iters


def main() -> int:
    from spurious import load_dataset
    from spurious.features import make_featurizer
    from spurious.models.linear import cross_fit_proba
    from spurious.provenance import dependency_versions
    from spurious.utils.io import atomic_write_json

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scales", type=int, nargs="+", default=[1, 10])
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    ds = load_dataset(DATA, "nli")
    feat = make_featurizer("minilm")
    matrices = {v: feat.fit_transform(ds, v) for v in VIEWS}
    rng = np.random.default_rng(0)
    cases = {}
    for scale in args.scales:
        rows = np.arange(len(ds)) if scale == 1 else rng.integers(0, len(ds), scale * len(ds))
        y = ds.labels[rows]
        fold_of = rng.integers(0, 5, len(rows))
        for view in VIEWS:
            X = matrices[view][rows]
            if scale > 1:
                X = X + rng.normal(0, 0.01, X.shape).astype(np.float32)
            runs = {"by_fold": [], "joint": []}
            for _ in range(args.repeats):
                t = time.perf_counter()
                ref, iters = by_fold(X, y, fold_of, ds.n_classes)
                runs["by_fold"].append(time.perf_counter() - t)
                t = time.perf_counter()
                got = cross_fit_proba(X, y, fold_of, ds.n_classes)
                runs["joint"].append(time.perf_counter() - t)
            med = {k: statistics.median(v) for k, v in runs.items()}
            name = f"{view}_x{scale}"
            cases[name] = {
                "n": len(rows),
                "d": X.shape[1],
                "median_wall_s": {k: round(v, 2) for k, v in med.items()},
                "runs_wall_s": {k: [round(x, 2) for x in v] for k, v in runs.items()},
                "ratio_by_fold_over_joint": round(med["by_fold"] / med["joint"], 2),
                "by_fold_iterations": iters,
                "max_abs_proba_difference": float(np.abs(got - ref).max()),
                "accuracy": {
                    "by_fold": float((ref.argmax(1) == y).mean()),
                    "joint": float((got.argmax(1) == y).mean()),
                },
                "load_avg_after": [round(v, 2) for v in os.getloadavg()],
            }
            print(name, cases[name], flush=True)
    atomic_write_json(
        RESULTS,
        {
            "command": "python bench/bench_partial_input_joint.py " + " ".join(sys.argv[1:]),
            "machine": {"cpus": os.cpu_count()},
            "versions": dependency_versions(),
            "cases": cases,
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
