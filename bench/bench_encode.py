"""Benchmark: sentence-embedding throughput of SentenceEncoder vs sentence-transformers.

Encodes N real SNLI sentences from ``../shared/data/snli/dev.jsonl`` (premises and
hypotheses of the first N/2 dev pairs, so each premise appears ~3 times, as in the
data) with

(a) sentence-transformers ``SentenceTransformer(default_model_path()).encode``,
(b) ``SentenceEncoder(precision="fp32")``,
(c) ``SentenceEncoder()`` (precision "auto": bf16 autocast on CPUs with native bf16),

on two workloads: ``snli`` (the N sentences as they come, duplicates included) and
``unique`` (N distinct sentences, so de-duplication cannot help). Each variant is warmed
up once, then all are timed in ``--repeats`` interleaved rounds; medians are reported with the ratio to
sentence-transformers measured in the same process, and the min / median cosine of
each variant's embeddings to our fp32 embeddings.

Usage::

    .venv/bin/python bench/bench_encode.py [--n 2000] [--repeats 3]

Writes ``bench/results/encode.json``. The machine may be shared: the load average
before and after is recorded so noisy runs can be recognised.
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

import numpy as np

from spurious.provenance import cpu_model

# The real datasets live in shared/data beside the repository.
SNLI_DEV = Path(__file__).resolve().parents[2] / "shared" / "data" / "snli" / "dev.jsonl"
RESULTS = Path(__file__).resolve().parent / "results" / "encode.json"
#: Smoke run: 64 sentences per workload, one round.
SMOKE_ARGS = ["--n", "64", "--repeats", "1"]


def load_sentences(path: Path, n: int) -> tuple[list[str], list[str]]:
    """``(stream, unique)``: N SNLI sentences as they come, and N distinct ones."""
    stream: list[str] = []
    unique: dict[str, None] = {}
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            for s in (row["premise"], row["hypothesis"]):
                if len(stream) < n:
                    stream.append(s)
                if len(unique) < n:
                    unique.setdefault(s, None)
            if len(stream) >= n and len(unique) >= n:
                break
    return stream, list(unique)


def loadavg() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def time_round_robin(
    variants: dict[str, Callable[[list[str]], np.ndarray]], texts: list[str], repeats: int
) -> tuple[dict[str, list[float]], dict[str, np.ndarray], list[float | None]]:
    """Per-variant timings of ``repeats`` rounds (one call of every variant per round).

    Interleaving the variants spreads any background load on a shared machine over all of
    them, so the ratios stay meaningful even when the absolute rates are disturbed.
    """
    for fn in variants.values():
        fn(texts[:256])  # warm-up: lazy init, first-shape kernels
    times: dict[str, list[float]] = {name: [] for name in variants}
    outs: dict[str, np.ndarray] = {}
    loads = []
    for _ in range(repeats):
        for name, fn in variants.items():
            t0 = time.perf_counter()
            outs[name] = np.asarray(fn(texts), dtype=np.float32)
            times[name].append(time.perf_counter() - t0)
        loads.append(loadavg())
    return times, outs, loads


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return (a * b).sum(axis=1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000, help="sentences per workload")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=128, help="our batch size")
    ap.add_argument("--st-batch-size", type=int, default=32, help="sentence-transformers'")
    ap.add_argument("--data", type=Path, default=SNLI_DEV)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)

    if not args.data.is_file():
        print(f"SNLI dev data not found at {args.data}; nothing to benchmark.", file=sys.stderr)
        return 1
    import torch
    import transformers

    from spurious.features.encoder import SentenceEncoder, cpu_supports_bf16, default_model_path

    try:
        import sentence_transformers
        from sentence_transformers import SentenceTransformer
    except ImportError:
        print("sentence-transformers is not installed (pip install 'spurious[bench]').")
        return 1

    stream, unique = load_sentences(args.data, args.n)
    load_before = loadavg()

    t0 = time.perf_counter()
    st = SentenceTransformer(str(default_model_path()), device="cpu")
    st_load = time.perf_counter() - t0
    ours32 = SentenceEncoder(device="cpu", precision="fp32", batch_size=args.batch_size)
    ours = SentenceEncoder(device="cpu", precision="auto", batch_size=args.batch_size)
    t0 = time.perf_counter()
    ours._tokenizer_model()  # the model is shared by both of ours
    our_load = time.perf_counter() - t0

    variants: dict[str, Callable[[list[str]], np.ndarray]] = {
        "sentence-transformers": lambda t: st.encode(
            t, batch_size=args.st_batch_size, show_progress_bar=False, convert_to_numpy=True
        ),
        "ours fp32": ours32.encode,
        f"ours auto ({ours.resolved_precision})": ours.encode,
    }

    workloads: dict[str, dict] = {}
    for wname, texts in (("snli", stream), ("unique", unique)):
        times, outs, loads = time_round_robin(variants, texts, args.repeats)
        rows: dict[str, dict] = {}
        for vname, ts in times.items():
            med = statistics.median(ts)
            rows[vname] = {"median_s": med, "times_s": ts, "sentences_per_s": len(texts) / med}
            print(f"  {wname:7s} {vname:28s} {len(texts) / med:8.0f} sent/s", flush=True)
        ref = outs["ours fp32"]
        st_rate = rows["sentence-transformers"]["sentences_per_s"]
        for vname, row in rows.items():
            cos = cosine_rows(outs[vname], ref)
            row["ratio_vs_sentence_transformers"] = row["sentences_per_s"] / st_rate
            row["cosine_to_fp32_min"] = float(cos.min())
            row["cosine_to_fp32_median"] = float(np.median(cos))
        workloads[wname] = {
            "n_sentences": len(texts),
            "n_distinct": len(set(texts)),
            "mean_tokens": float(np.mean([len(x) for x in st.tokenizer(texts)["input_ids"]])),
            "loadavg_1min_after_each_round": loads,
            "variants": rows,
        }

    result = {
        "benchmark": "sentence encoding throughput (all-MiniLM-L6-v2)",
        "data": str(args.data),
        "command": "python bench/bench_encode.py " + " ".join(argv or sys.argv[1:]),
        "repeats": args.repeats,
        "batch_size": args.batch_size,
        "st_batch_size": args.st_batch_size,
        "model_load_s": {"sentence-transformers": st_load, "ours": our_load},
        "machine": {
            "cpu_count": os.cpu_count(),
            "cpu_model": cpu_model(),
            "cpu_native_bf16": cpu_supports_bf16(),
            "torch_version": torch.__version__,
            "torch_threads": torch.get_num_threads(),
            "transformers_version": transformers.__version__,
            "sentence_transformers_version": sentence_transformers.__version__,
            "python": platform.python_version(),
            "loadavg_1min_before": load_before,
            "loadavg_1min_after": loadavg(),
        },
        "workloads": workloads,
    }
    from spurious.utils.io import atomic_write_json

    atomic_write_json(args.out, result)

    print()
    print(
        f"{'workload':8s} {'variant':28s} {'sent/s':>8s} {'x ST':>6s} "
        f"{'cos min':>9s} {'cos med':>9s}"
    )
    for wname, w in workloads.items():
        for vname, row in w["variants"].items():
            print(
                f"{wname:8s} {vname:28s} {row['sentences_per_s']:8.0f} "
                f"{row['ratio_vs_sentence_transformers']:6.2f} "
                f"{row['cosine_to_fp32_min']:9.6f} {row['cosine_to_fp32_median']:9.6f}"
            )
    print(
        f"\n{os.cpu_count()} CPUs ({cpu_model()}), torch {torch.__version__} with "
        f"{torch.get_num_threads()} threads; load average {load_before} -> {loadavg()}."
    )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
