"""The logistic probe's preconditioned L-BFGS against the plain one (issue 24, goal 1).

``partial_input`` and ``pvi`` cross-fit a logistic probe per condition
(:func:`spurious.models.linear.cross_fit_proba`, 5 folds in one L-BFGS run). On MiniLM
sentence embeddings the plain iteration never met its stopping rule: the features share
a large mean and their variances span orders of magnitude. The probe now runs on centred
features in the coordinates where ``Cov(X) / k + lam I`` is the identity (same objective,
same minimiser; :func:`spurious.models.linear._preconditioner`).

Data: SNLI-like pairs (real SNLI dev + test sentences resampled into new premise groups,
``bench_leakage_scale.snli_like``; no SNLI training split exists offline, the papers used
the real 550k), MiniLM features of the ``full`` (1,536-d pair features) and
``hypothesis_only`` (384-d) views, the audit's 5 grouped folds. For each view, in one
process and one thread, interleaved per repeat:

* ``plain``: the old path (no preconditioner: ``PRECONDITION_MAX_DIM = 0``);
* ``preconditioned``: the default;

and once, the ``minimiser``: the preconditioned fit with ``tol=1e-10, max_iter=3000``.
Reported per variant: median seconds, L-BFGS iterations, held-out accuracy, and the
distance of the out-of-fold probabilities to the minimiser's (mean and max |p_gold|
difference, share of rows with the same argmax).

Usage::

    python bench/bench_probe_precondition.py                  # 100k rows, 2 repeats
    python bench/bench_probe_precondition.py --n 10000 --repeats 3

Writes ``bench/results/probe_precondition.json``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import bench_leakage_scale  # noqa: E402  (snli_like: the same SNLI-like rows)

RESULTS = ROOT / "bench" / "results" / "probe_precondition.json"
VIEWS = ("hypothesis_only", "full")
#: Smoke run: 1,000 SNLI-like pairs, one repeat.
SMOKE_ARGS = ["--n", "1000", "--repeats", "1"]


def _fit(X, y, fold_of, k, *, plain: bool, **kw: Any) -> tuple[np.ndarray, float, int]:
    from spurious.models import linear

    iters: list[int] = []
    fit = linear._fit_softmax

    def counted(*a: Any, **k: Any) -> Any:
        out = fit(*a, **k)
        iters.append(out[2])
        return out

    saved = linear.PRECONDITION_MAX_DIM
    linear._fit_softmax, linear.PRECONDITION_MAX_DIM = counted, (0 if plain else saved)
    try:
        start = time.perf_counter()
        proba = linear.cross_fit_proba(X, y, fold_of, k, **kw)
        return proba, time.perf_counter() - start, iters[0]
    finally:
        linear._fit_softmax, linear.PRECONDITION_MAX_DIM = fit, saved


def _distance(p: np.ndarray, ref: np.ndarray, y: np.ndarray) -> dict[str, float]:
    rows = np.arange(len(y))
    gap = np.abs(p[rows, y] - ref[rows, y])
    return {
        "accuracy": float((p.argmax(1) == y).mean()),
        "mean_abs_p_gold_vs_minimiser": float(gap.mean()),
        "max_abs_p_gold_vs_minimiser": float(gap.max()),
        "same_argmax_as_minimiser": float((p.argmax(1) == ref.argmax(1)).mean()),
    }


def main() -> int:
    from spurious.data.folds import assign_folds
    from spurious.features import make_featurizer
    from spurious.provenance import dependency_versions
    from spurious.utils.io import atomic_write_json

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    ds = bench_leakage_scale.snli_like(args.n, random_state=0)
    feat = make_featurizer("minilm")
    y, k = ds.labels, ds.n_classes
    fold_of = assign_folds(ds, 5, "auto", 0)  # the audit's folds (the cv_folds artifact)
    views: dict[str, Any] = {}
    for view in VIEWS:
        X = feat.fit_transform(ds, view)
        ref, ref_s, ref_iters = _fit(X, y, fold_of, k, plain=False, tol=1e-10, max_iter=3000)
        runs: dict[str, list[tuple[np.ndarray, float, int]]] = {"plain": [], "preconditioned": []}
        for _ in range(args.repeats):
            for name in runs:
                runs[name].append(_fit(X, y, fold_of, k, plain=name == "plain"))
        row: dict[str, Any] = {
            "shape": list(X.shape),
            "minimiser": {"seconds": round(ref_s, 2), "iterations": ref_iters},
        }
        for name, got in runs.items():
            row[name] = {
                "median_s": round(statistics.median(s for _, s, _ in got), 2),
                "seconds": [round(s, 2) for _, s, _ in got],
                "iterations": got[0][2],
                **_distance(got[0][0], ref, y),
            }
        row["speedup"] = round(row["plain"]["median_s"] / row["preconditioned"]["median_s"], 2)
        views[view] = row
        print(view, {n: row[n]["median_s"] for n in runs}, "speedup", row["speedup"], flush=True)
    atomic_write_json(
        RESULTS,
        {
            "command": "python bench/bench_probe_precondition.py " + " ".join(sys.argv[1:]),
            "data": f"{args.n} SNLI-like pairs (SNLI dev + test sentences resampled; no SNLI "
            "training split offline), MiniLM features, 5 grouped folds",
            "views": views,
            "machine": {"cpus": os.cpu_count(), "load_avg_end": os.getloadavg()},
            "versions": dependency_versions(),
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
