"""Minority clustering at scale: cost curve and agreement of the scalable Ward with exact Ward.

Paper 002 (App. C.2) could not run Ward on the 320k+ examples of MultiNLI / QQP and
clustered a 50% sample instead. Here every point is clustered: above
``exact_max_samples`` Ward runs on count-weighted mini-batch k-means pre-clusters
(``spurious.models.clustering.ward_clustering``), never an n x n matrix.

Two parts, each point in its own subprocess (so peak RSS is that point's alone):

- ``curve``: the full minority pipeline of the analysis (``find_minority_examples``:
  task MLP 10 epochs, k-means pseudo-labels m = auto (1500 at 100k+), one DeepCluster
  epoch, Ward into 10, nearest-neighbour assignment of 10,000 evaluation points) on
  **synthetic clustered embeddings** (float32, 384 dims: 200 Gaussian centres with
  Dirichlet weights, labels correlated with the centre), at 10k, 100k and 400k training
  points. Wall time and peak RSS (``ru_maxrss``). The timing needs only the shapes, not
  real text; the synthetic data is named as such in the output.
- ``agreement_snli`` (``--real``): the same comparison on a real representation, SNLI
  test_tokenized through MiniLM and the analysis' task MLP.
- Both also run paper 002's own route (App. C.2: exact Ward on a random 50%, nearest
  neighbour for the rest) against exact Ward on all points, for scale.
- ``agreement``: exact Ward against the approximate route (count-weighted, and unweighted
  as Birch would) on the same points at 10k and 20k: adjusted Rand index of the two
  clusterings and Jaccard overlap of the minority (anti-biased) sets they imply.

Usage (the machine is shared: the 400k point runs once)::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/bench_minority_scale.py            # everything
    HF_HUB_OFFLINE=1 .venv/bin/python bench/bench_minority_scale.py --sizes --agreement --real
    HF_HUB_OFFLINE=1 .venv/bin/python bench/bench_minority_scale.py --sizes 10000 100000

Writes ``bench/results/minority_scale.json`` (merged with earlier points of the file).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "minority_scale.json"
#: Smoke run: one curve point and one agreement point at 1,000 synthetic rows.
SMOKE_ARGS = ["--sizes", "1000", "--agreement", "1000"]
DIM = 384
N_EVAL = 10_000
N_CENTERS = 200


def synthetic(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Clustered float32 embeddings and 3-class labels that depend on the centre (70%)."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(N_CENTERS, DIM)).astype(np.float32)
    weights = rng.dirichlet(np.full(N_CENTERS, 0.7))
    center_label = rng.integers(0, 3, N_CENTERS)
    which = rng.choice(N_CENTERS, size=n, p=weights)
    X = centers[which]
    X += np.float32(0.8) * rng.standard_normal(size=(n, DIM), dtype=np.float32)
    y = np.where(rng.random(n) < 0.7, center_label[which], rng.integers(0, 3, n))
    return X, y.astype(np.int64)


def paper_half_sample(E: np.ndarray, k: int, seed: int) -> np.ndarray:
    """Paper 002 App. C.2's route: exact Ward on a random 50%, nearest neighbour for the rest."""
    from spurious.models.clustering import nearest_neighbor_assign, ward_clustering

    n = E.shape[0]
    idx = np.sort(np.random.default_rng(seed).permutation(n)[: n // 2])
    rest = np.setdiff1d(np.arange(n), idx)
    labels = np.empty(n, dtype=np.int64)
    labels[idx] = ward_clustering(E[idx], k, route="exact").labels
    labels[rest] = nearest_neighbor_assign(E[idx], labels[idx], E[rest])[0]
    return labels


def compare(exact: np.ndarray, other: np.ndarray, anti, seconds: float, info: dict) -> dict:
    """ARI of two clusterings and Jaccard of the minority sets they imply."""
    from sklearn.metrics import adjusted_rand_score

    ref, a = anti(exact), anti(other)
    return {
        "seconds": round(seconds, 2),
        "ari": round(float(adjusted_rand_score(exact, other)), 4),
        "minority_jaccard": round(float((a & ref).sum() / max((a | ref).sum(), 1)), 4),
        "anti_biased_fraction": round(float(a.mean()), 4),
        "info": info,
    }


def run_curve_point(n: int) -> dict:
    from spurious.detectors.minority import find_minority_examples

    X, y = synthetic(n + N_EVAL, seed=n)
    Xt, yt, Xe, ye = X[:n], y[:n], X[n:], y[n:]
    start = time.perf_counter()
    out = find_minority_examples(
        Xt, yt, Xe, ye, method="deepcluster", task_epochs=10, n_classes=3, random_state=0
    )
    wall = time.perf_counter() - start
    return {
        "n_train": n,
        "n_eval": N_EVAL,
        "dim": DIM,
        "data": f"synthetic clustered embeddings ({N_CENTERS} Gaussian centres), float32",
        "wall_s": round(wall, 2),
        "peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3),
        "stages": out.info,
        "anti_biased_fraction_train": round(float(out.train_anti_biased.mean()), 4),
        "anti_biased_fraction_eval": round(float(out.eval_anti_biased.mean()), 4),
    }


def run_agreement_point(n: int) -> dict:
    from sklearn.metrics import adjusted_rand_score

    from spurious.detectors.minority import label_counts, minority_labels
    from spurious.models.clustering import ward_clustering

    X, y = synthetic(n, seed=1000 + n)
    row: dict = {"n": n, "dim": DIM, "data": "synthetic clustered embeddings, float32"}
    start = time.perf_counter()
    exact = ward_clustering(X, 10, route="exact")
    row["exact_s"] = round(time.perf_counter() - start, 2)

    def anti(labels: np.ndarray) -> np.ndarray:
        counts = label_counts(labels, y, 10, 3)
        return minority_labels(counts)[labels, y]

    ref = anti(exact.labels)
    for weighting in ("counts", "none"):
        for p in (500, 2000):
            start = time.perf_counter()
            approx = ward_clustering(
                X, 10, route="approximate", n_preclusters=p, weighting=weighting
            )
            a = anti(approx.labels)
            row[f"approx_{weighting}_{p}"] = {
                "seconds": round(time.perf_counter() - start, 2),
                "ari": round(float(adjusted_rand_score(exact.labels, approx.labels)), 4),
                "minority_jaccard": round(float((a & ref).sum() / max((a | ref).sum(), 1)), 4),
                "anti_biased_fraction": round(float(a.mean()), 4),
                "info": approx.info,
            }
    start = time.perf_counter()
    half = paper_half_sample(X, 10, 0)
    row["paper_half_sample_seed0"] = compare(
        exact.labels, half, anti, time.perf_counter() - start, {"sample": 0.5, "seed": 0}
    )
    row["exact_anti_biased_fraction"] = round(float(ref.mean()), 4)
    row["peak_rss_gib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3)
    return row


def run_real_agreement() -> dict:
    """Exact vs approximate Ward on a real representation: SNLI test_tokenized (9,824
    pairs), MiniLM pair features through the analysis' task MLP (10 epochs)."""
    from sklearn.metrics import adjusted_rand_score

    from spurious import load_dataset
    from spurious.context import RunContext
    from spurious.detectors.minority import label_counts, minority_labels
    from spurious.models.clustering import MLPEmbedding, ward_clustering

    data = ROOT.parent / "shared" / "data" / "snli" / "test_tokenized.jsonl"
    train = load_dataset(data, "nli", name="snli-test")
    X = RunContext(train, progress=False).features("minilm", "full", split="train")
    y = train.labels
    n = len(y)
    task = MLPEmbedding(epochs=10, batch_size=min(128, max(8, n // 32))).fit(X, y)
    E = task.transform(X)
    row: dict = {
        "n": n,
        "data": "SNLI test_tokenized, MiniLM pair features -> task MLP hidden layer (256)",
    }
    start = time.perf_counter()
    exact = ward_clustering(E, 10, route="exact")
    row["exact_s"] = round(time.perf_counter() - start, 2)

    def anti(labels: np.ndarray) -> np.ndarray:
        return minority_labels(label_counts(labels, y, 10, 3))[labels, y]

    ref = anti(exact.labels)
    row["exact_anti_biased_fraction"] = round(float(ref.mean()), 4)
    for name, kw in (
        ("approx_counts_2000", {"n_preclusters": 2000}),
        ("approx_counts_500", {"n_preclusters": 500}),
        ("approx_counts_2000_replicas_4000", {"n_preclusters": 2000, "max_replicas": 4000}),
        ("approx_none_2000", {"n_preclusters": 2000, "weighting": "none"}),
    ):
        start = time.perf_counter()
        approx = ward_clustering(E, 10, route="approximate", **kw)
        a = anti(approx.labels)
        row[name] = {
            "seconds": round(time.perf_counter() - start, 2),
            "ari": round(float(adjusted_rand_score(exact.labels, approx.labels)), 4),
            "minority_jaccard": round(float((a & ref).sum() / max((a | ref).sum(), 1)), 4),
            "anti_biased_fraction": round(float(a.mean()), 4),
            "info": approx.info,
        }
    for seed in (0, 1):
        start = time.perf_counter()
        half = paper_half_sample(E, 10, seed)
        row[f"paper_half_sample_seed{seed}"] = compare(
            exact.labels, half, anti, time.perf_counter() - start, {"sample": 0.5, "seed": seed}
        )
    return row


def subprocess_point(kind: str, n: int) -> dict:
    cmd = [sys.executable, __file__, "--point", kind, str(n)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        return {"n": n, "error": done.stderr[-2000:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000, 400_000])
    ap.add_argument("--agreement", type=int, nargs="*", default=[10_000, 20_000])
    ap.add_argument(
        "--real", action="store_true", help="exact vs approximate Ward on SNLI (MiniLM + task MLP)"
    )
    ap.add_argument("--point", nargs=2, metavar=("KIND", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.point:
        kind, n = args.point[0], int(args.point[1])
        from threadpoolctl import threadpool_limits

        # One BLAS / OpenMP thread, as the analysis runs (n_threads=1): on 2 shared cores
        # spinning threads cost up to 10x.
        with threadpool_limits(1):
            if kind == "real":
                row = run_real_agreement()
            elif kind == "curve":
                row = run_curve_point(n)
            else:
                row = run_agreement_point(n)
        print(json.dumps(row))
        return
    results = json.loads(OUT.read_text()) if OUT.exists() else {}
    results.setdefault("curve", {})
    results.setdefault("agreement", {})
    for n in args.sizes:
        print(f"curve n={n} ...", flush=True)
        results["curve"][str(n)] = row = subprocess_point("curve", n)
        print(json.dumps({k: row.get(k) for k in ("wall_s", "peak_rss_gib", "error")}), flush=True)
        _write(results)
    if args.real:
        print("agreement on SNLI ...", flush=True)
        results["agreement_snli"] = row = subprocess_point("real", 0)
        print(json.dumps(row)[:600], flush=True)
        _write(results)
    for n in args.agreement:
        print(f"agreement n={n} ...", flush=True)
        results["agreement"][str(n)] = row = subprocess_point("agreement", n)
        print(json.dumps(row)[:600], flush=True)
        _write(results)
    failed = [str(r["n"]) for r in _this_run(results, args) if "error" in r]
    if failed:  # recorded in the JSON too (each point's stderr tail)
        sys.exit(f"points failed at n = {', '.join(failed)}")


def _this_run(results: dict, args: argparse.Namespace) -> list[dict]:
    """The points this invocation ran."""
    rows = [results["curve"][str(n)] for n in args.sizes]
    rows += [results["agreement"][str(n)] for n in args.agreement]
    return rows + ([results["agreement_snli"]] if args.real else [])


def _write(results: dict) -> None:
    from spurious.provenance import cpu_model, dependency_versions
    from spurious.utils.io import atomic_write_json

    results["machine"] = {
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "load_avg_at_write": [round(x, 2) for x in os.getloadavg()],
        "note": "clustering runs with 1 BLAS thread; other work may share the cores",
    }
    results["versions"] = dependency_versions()
    atomic_write_json(OUT, results)


if __name__ == "__main__":
    main()
