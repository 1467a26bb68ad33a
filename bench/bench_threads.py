"""Thread counts per kernel: 1 vs 2 threads for the main CPU kernels, in one process.

Kernels (the choices in ``spurious.utils.threads.KERNEL_THREADS`` come from here):

* ``dense_small``: one AFLite round of the batched logistic regression at the issue's
  20k x 384 setting (m=64, t=5k; two groups of 32 classifiers, each group's GEMM under
  ``parallel_groups_below``), on sentence-embedding-like data;
* ``dense_gemm``: one round at 100k x 768 (m=32, t=20k: one group whose GEMM is above
  the threshold, so the model puts every thread inside it);
* ``sparse_bow``: one round on SNLI test bag of words (9,824 x 8,939, m=64, t=982);
* ``probe_dense`` / ``probe_bow``: the partial-input probe (``LogisticProbe``, what a
  fold x condition fit of the partial-input analysis runs) on 8k x 384 embeddings and
  on SNLI test hypothesis-only bag of words; two fits, as a detector runs many.

Variants: ``1`` (one thread), ``2_intra`` (two torch intra-op threads inside every
operation), and ``2_parallel`` (two independent units side by side, one thread each:
AFLite's two groups on worker threads, or the two probe fits on two worker threads).
``default`` is what the package does without any setting, on this machine (entries of
an earlier run of a kernel move to ``previous_runs``: the runs before the policy of
``spurious.utils.threads`` was set measured the earlier defaults). The
variants of a kernel are interleaved (A B C A B C ...) ``--repeats`` times; the JSON
has median CPU and wall seconds, every run, and the load average before and after
each kernel. The machine is shared with other jobs, so the load is part of the result.

Usage::

    python bench/bench_threads.py                       # all kernels, 3 repeats
    python bench/bench_threads.py --kernels dense_small probe_dense --repeats 5
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from spurious.provenance import cpu_model

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
DATA = ROOT.parent / "shared" / "data" / "snli" / "test_tokenized.jsonl"
RESULTS = ROOT / "bench" / "results" / "threads.json"
KERNELS = ("dense_small", "dense_gemm", "sparse_bow", "probe_dense", "probe_bow")
#: Smoke run: the two kernels on SNLI test bag of words (the small copy), one repeat.
SMOKE_ARGS = ["--kernels", "sparse_bow", "probe_bow", "--repeats", "1"]


def load() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


def _round(X: Any, y: np.ndarray, idx: np.ndarray, k: int) -> dict[str, Callable[[], Any]]:
    """Variants of one AFLite round of the batched model."""
    from spurious.detectors.aflite import make_partition_model
    from spurious.models.batched import BatchedLogisticRegression

    sparse = not isinstance(X, np.ndarray)

    def run(num_threads: int | None, intra: bool = False) -> Callable[[], Any]:
        def fit() -> Any:
            if sparse:
                model = make_partition_model("logistic", sparse=True)
                model.num_threads = num_threads
            else:
                model = BatchedLogisticRegression(num_threads=num_threads)
            if intra:  # every thread inside each operation, groups one after another
                model.parallel_groups_below = 0.0
            model.fit_predict(X, y, idx, k)
            return model.stats_["timings_s"].get("group_workers")

        return fit

    variants = {"1": run(1), "2_intra": run(2, intra=True), "default": run(None)}
    if idx.shape[0] > 32:  # two groups: side by side, one thread each
        variants["2_parallel"] = run(2)
    return variants


def _probe(X: Any, y: np.ndarray) -> dict[str, Callable[[], Any]]:
    """Variants of two partial-input probe fits (two folds' training rows)."""
    import torch

    from spurious.models.linear import LogisticProbe
    from spurious.models.runtime import thread_map
    from spurious.utils.threads import KERNEL_THREADS, limit_threads

    half = X.shape[0] // 2
    folds = [(X[:half], y[:half]), (X[half:], y[half:])]

    def fit(fold: tuple[Any, np.ndarray]) -> int:
        return LogisticProbe(max_iter=100).fit(*fold).n_iter_

    def serial(n: int) -> Callable[[], Any]:
        def go() -> Any:
            saved = KERNEL_THREADS["probe"]
            KERNEL_THREADS["probe"] = n  # the probe's own setting, for this variant
            try:
                with limit_threads(n):
                    return [fit(f) for f in folds]
            finally:
                KERNEL_THREADS["probe"] = saved

        return go

    def parallel() -> Any:
        return list(thread_map(fit, folds, workers=2, threads_each=1))

    def default() -> Any:  # whatever the package sets (LogisticProbe's own choice)
        return [fit(f) for f in folds]

    torch.set_num_threads(2)  # the starting point of every variant
    return {"1": serial(1), "2_intra": serial(2), "2_parallel": parallel, "default": default}


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    from aflite_reference import make_embeddings
    from spurious import load_dataset
    from spurious.context import RunContext
    from spurious.utils.io import atomic_write_text

    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", nargs="+", default=list(KERNELS), choices=KERNELS)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    out: dict[str, Any] = {
        "command": "python bench/bench_threads.py --kernels "
        + " ".join(args.kernels)
        + f" --repeats {args.repeats}",
        "generated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {
            "cpu": cpu_model(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "torch_default_threads": torch.get_num_threads(),
            "note": "2 cores shared with other jobs (load averages per kernel)",
        },
        "kernels": {},
    }
    if RESULTS.exists():  # kernels not re-run keep their entries; re-run ones move to
        # previous_runs (e.g. the runs before the thread policy changed what "default" is)
        old = json.loads(RESULTS.read_text())
        out["kernels"] = old.get("kernels", {})
        out["previous_runs"] = old.get("previous_runs", {})
        for kernel in args.kernels:
            if kernel in out["kernels"]:
                out["previous_runs"].setdefault(kernel, []).append(out["kernels"].pop(kernel))
    default_threads = torch.get_num_threads()
    rng = np.random.default_rng(0)
    ctx = y_nli = None
    if any(k in args.kernels for k in ("sparse_bow", "probe_bow")):
        ds = load_dataset(DATA, "nli")
        ctx = RunContext(ds, progress=False)
        y_nli = np.array(ds.labels, dtype=np.int64)
    for kernel in args.kernels:
        if kernel == "dense_small":
            X, y, _ = make_embeddings(20_000, 384, seed=0)
            idx = np.stack([rng.choice(20_000, 5_000, replace=False) for _ in range(64)])
            variants, shape = _round(X, y, idx, 3), [20_000, 384, 64, 5_000]
        elif kernel == "dense_gemm":
            X, y, _ = make_embeddings(100_000, 768, seed=0)
            idx = np.stack([rng.choice(100_000, 20_000, replace=False) for _ in range(32)])
            variants, shape = _round(X, y, idx, 3), [100_000, 768, 32, 20_000]
        elif kernel == "sparse_bow":
            X = ctx.features("bow", "full")
            n = X.shape[0]
            idx = np.stack([rng.choice(n, round(0.1 * n), replace=False) for _ in range(64)])
            variants, shape = _round(X, y_nli, idx, 3), [*X.shape, 64, round(0.1 * n)]
        elif kernel == "probe_dense":
            X, y, _ = make_embeddings(8_000, 384, seed=1)
            variants, shape = _probe(X, y), [8_000, 384]
        else:
            X = ctx.features("bow", "hypothesis_only")
            variants, shape = _probe(X, y_nli), list(X.shape)
        cpu: dict[str, list[float]] = {v: [] for v in variants}
        wall: dict[str, list[float]] = {v: [] for v in variants}
        before = load()
        for _ in range(args.repeats):
            for name, fn in variants.items():
                torch.set_num_threads(default_threads)
                c0, w0 = time.process_time(), time.perf_counter()
                fn()
                cpu[name].append(time.process_time() - c0)
                wall[name].append(time.perf_counter() - w0)
                print(
                    f"{kernel} {name}: {cpu[name][-1]:.2f} CPU-s {wall[name][-1]:.2f} s", flush=True
                )
        med_cpu = {k: round(statistics.median(v), 3) for k, v in cpu.items()}
        med_wall = {k: round(statistics.median(v), 3) for k, v in wall.items()}
        out["kernels"][kernel] = {
            "command": out["command"],
            "generated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "shape": shape,
            "cpu_s": med_cpu,
            "wall_s": med_wall,
            "wall_vs_1_thread": {k: round(v / med_wall["1"], 2) for k, v in med_wall.items()},
            "cpu_vs_1_thread": {k: round(v / med_cpu["1"], 2) for k, v in med_cpu.items()},
            "fastest_wall": min(med_wall, key=med_wall.get),
            "cpu_s_all": {k: [round(x, 3) for x in v] for k, v in cpu.items()},
            "wall_s_all": {k: [round(x, 3) for x in v] for k, v in wall.items()},
            "load_avg_before": before,
            "load_avg_after": load(),
        }
        print(kernel, json.dumps(out["kernels"][kernel]), flush=True)
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(RESULTS, json.dumps(out, indent=1) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
