"""Exact Ward (the minority analysis' route up to ``exact_max_samples`` points), before and now.

``spurious.models.clustering.ward_clustering`` gives Ward's ``linkage`` the condensed
Euclidean distance matrix. Before 2026-11-28 that matrix was filled from
scikit-learn's ``pairwise_distances_chunked`` (every pair twice, float32 input upcast in
chunks) and handed to SciPy's ``linkage``, which works on a copy. Now it is filled by
:func:`spurious.utils.matrix.condensed_euclidean` (float64 GEMMs over the upper
triangle) and handed to fastcluster's ``linkage`` with ``preserve_input=False`` (the
implementation paper 002 used, App. C.2; no copy). This script times each step of both
paths, interleaved in one process with one BLAS thread (the analysis clusters with
``n_threads=1``), records how far each fill is from SciPy's exact float64 ``pdist``
(timed once) and whether the two paths cut the same 10 clusters.

The matrix: ``n`` points in 256 dimensions (the width of the minority analysis' MLP
representation), non-negative like ReLU outputs; synthetic, since only shapes and
magnitudes matter for the time.

Usage::

    python bench/bench_ward_exact.py                       # n = 10k and 20k, 3 repeats
    python bench/bench_ward_exact.py --sizes 5000 --repeats 1

Writes ``bench/results/ward_exact.json``.
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
RESULTS = HERE / "results" / "ward_exact.json"
#: Smoke run: 1,000 points, one repeat.
SMOKE_ARGS = ["--sizes", "1000", "--repeats", "1"]


def sklearn_fill(X: np.ndarray) -> np.ndarray:
    """The previous fill: scikit-learn's chunked distances, scattered row by row."""
    from sklearn.metrics import pairwise_distances_chunked

    n = X.shape[0]
    out = np.empty(n * (n - 1) // 2, dtype=np.float64)
    g = 0
    for block in pairwise_distances_chunked(X, metric="euclidean"):
        for row in block:
            a = g * n - g * (g + 1) // 2
            out[a : a + n - g - 1] = row[g + 1 :]
            g += 1
    return out


def scipy_ward(D: np.ndarray) -> np.ndarray:
    from scipy.cluster.hierarchy import linkage

    return linkage(D, method="ward")


def fastcluster_ward(D: np.ndarray) -> np.ndarray:
    import fastcluster

    return fastcluster.linkage(D, method="ward", preserve_input=False)


def representation(n: int, d: int = 256, seed: int = 0) -> np.ndarray:
    """ReLU-like float32 features with some cluster structure."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(20, d)).astype(np.float32) * 2
    X = centres[rng.integers(0, 20, n)] + rng.normal(size=(n, d)).astype(np.float32)
    return np.maximum(X, 0, out=X)


def run_size(n: int, repeats: int) -> dict[str, Any]:
    from scipy.spatial.distance import pdist
    from sklearn.metrics import adjusted_rand_score

    from spurious.models.clustering import _cut
    from spurious.utils.matrix import condensed_euclidean

    X = representation(n)
    paths = {
        "before": (sklearn_fill, scipy_ward),
        "now": (condensed_euclidean, fastcluster_ward),
    }
    times: dict[str, dict[str, list[float]]] = {
        p: {"fill": [], "linkage": [], "total": []} for p in paths
    }
    start = time.perf_counter()
    exact = pdist(X.astype(np.float64))
    pdist_s = time.perf_counter() - start
    error, labels = {}, {}
    for rep in range(repeats):
        # Alternate which path goes first: the machine is shared.
        for name in list(paths) if rep % 2 == 0 else list(paths)[::-1]:
            fill, ward = paths[name]
            t0 = time.perf_counter()
            D = fill(X)
            t1 = time.perf_counter()
            error[name] = float(np.abs(D - exact).max())
            t2 = time.perf_counter()
            Z = ward(D)
            t3 = time.perf_counter()
            labels[name] = _cut(Z, 10)
            times[name]["fill"].append(t1 - t0)
            times[name]["linkage"].append(t3 - t2)
            times[name]["total"].append(t1 - t0 + t3 - t2)
            del D, Z
    median = {p: {k: statistics.median(v) for k, v in t.items()} for p, t in times.items()}
    return {
        "n": n,
        "d": X.shape[1],
        "seconds": times,
        "median_s": median,
        "speedup": {
            k: round(median["before"][k] / median["now"][k], 2)
            for k in ("fill", "linkage", "total")
        },
        "pdist_s": round(pdist_s, 3),
        "max_abs_distance_error_vs_pdist": error,
        "ari_of_the_10_clusters": float(adjusted_rand_score(labels["before"], labels["now"])),
        "distance_matrix_copies_in_linkage": {"before": 1, "now": 0},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 20_000])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    import torch
    from threadpoolctl import threadpool_limits

    from bench_aflite_round import machine_info
    from spurious.provenance import dependency_versions, now_iso
    from spurious.utils.io import atomic_write_json

    rows = []
    with threadpool_limits(1):
        for n in args.sizes:
            row = run_size(n, args.repeats)
            print(
                f"n={n}: before {row['median_s']['before']}, now {row['median_s']['now']}, "
                f"speedup {row['speedup']}, ARI {row['ari_of_the_10_clusters']:.4f}",
                flush=True,
            )
            rows.append(row)
    atomic_write_json(
        RESULTS,
        {
            "generated": now_iso(),
            "command": "python bench/bench_ward_exact.py " + " ".join(sys.argv[1:]),
            "blas_threads": 1,
            "machine": machine_info(torch),
            "load_avg_end": os.getloadavg(),
            "versions": dependency_versions(),
            "sizes": rows,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
