"""One AFLite round on sparse features: the batched logistic regression vs scikit-learn.

A round fits ``m = 64`` logistic regressions, each on ``t`` random rows of the pool, and
predicts every row. On sparse features (bag of words, tf-idf of SNLI pairs) AFLite fits
scikit-learn's ``LogisticRegression`` once per partition; the batched model also takes
CSR input (``spurious.models.batched.sparse``), as configured here (plain L-BFGS from
zero, ``max_iter=1000``). Both run on one thread (torch and
BLAS), interleaved, ``--repeats`` times; the JSON reports the median CPU and wall seconds,
their ratio and how often the two agree on a prediction. The machine was shared with
other jobs: CPU seconds are the figure to compare.

Usage::

    OMP_NUM_THREADS=1 python bench/bench_aflite_sparse.py            # bow and tf-idf
    OMP_NUM_THREADS=1 python bench/bench_aflite_sparse.py --features bow --repeats 1
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "snli" / "test_tokenized.jsonl"
RESULTS = ROOT / "bench" / "results" / "aflite_sparse.json"


def main() -> None:
    import torch

    from spurious import load_dataset
    from spurious.context import RunContext
    from spurious.detectors.aflite import make_partition_model
    from spurious.models.batched import BatchedLogisticRegression
    from spurious.utils.io import atomic_write_text

    ap = argparse.ArgumentParser()
    ap.add_argument("--features", nargs="+", default=["bow", "tfidf"])
    ap.add_argument("--partitions", type=int, default=64)
    ap.add_argument("--train-fraction", type=float, default=0.1)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    ds = load_dataset(DATA, "nli")
    ctx = RunContext(ds, progress=False)
    y = np.array(ds.labels, dtype=np.int64)
    n = len(ds)
    t = round(args.train_fraction * n)
    rng = np.random.default_rng(0)
    idx = np.stack([rng.choice(n, t, replace=False) for _ in range(args.partitions)])
    out: dict = {
        "command": "OMP_NUM_THREADS=1 python bench/bench_aflite_sparse.py --features "
        + " ".join(args.features)
        + f" --partitions {args.partitions} --repeats {args.repeats}",
        "data": {"file": "snli/test_tokenized.jsonl", "n": n, "t": t, "m": args.partitions},
        "threads": 1,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "note": "shared with other jobs",
        },
        "features": {},
    }
    for feats in args.features:
        X = ctx.features(feats, "full")
        models = {
            "batched_sparse": BatchedLogisticRegression(precondition="none", max_iter=1000),
            "sklearn_per_partition": make_partition_model("sklearn-logistic", sparse=True),
        }
        cpu: dict[str, list[float]] = {k: [] for k in models}
        wall: dict[str, list[float]] = {k: [] for k in models}
        preds = {}
        for _ in range(args.repeats):
            for name, model in models.items():
                c0, w0 = time.process_time(), time.perf_counter()
                preds[name] = model.fit_predict(X, y, idx, ds.n_classes)
                cpu[name].append(time.process_time() - c0)
                wall[name].append(time.perf_counter() - w0)
                print(f"{feats} {name}: {cpu[name][-1]:.1f} s CPU", flush=True)
        stats = models["batched_sparse"].stats_
        entry = {
            "shape": list(X.shape),
            "nnz_per_row": round(X.nnz / X.shape[0], 1),
            "cpu_s": {k: round(statistics.median(v), 2) for k, v in cpu.items()},
            "wall_s": {k: round(statistics.median(v), 2) for k, v in wall.items()},
            "cpu_s_all": {k: [round(x, 2) for x in v] for k, v in cpu.items()},
            "batched_iterations": stats["iterations"],
            "batched_status": {
                str(s): int((models["batched_sparse"].status_ == s).sum())
                for s in np.unique(models["batched_sparse"].status_)
            },
            "prediction_agreement": float(
                (preds["batched_sparse"] == preds["sklearn_per_partition"]).mean()
            ),
        }
        entry["speedup_cpu"] = round(
            entry["cpu_s"]["sklearn_per_partition"] / entry["cpu_s"]["batched_sparse"], 2
        )
        out["features"][feats] = entry
        print(feats, json.dumps(entry), flush=True)
        # written after every feature set, so a long run leaves what it measured
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(RESULTS, json.dumps(out, indent=1) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
