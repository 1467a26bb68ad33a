"""What the encoder's fixed length buckets cost, by workload size and token budget.

A text's MiniLM vector must not depend on the texts it is encoded with (the per-text
cache shares vectors between datasets, and bf16 results change with a batch's shape), so
every batch of one token length has the same number of rows,
``min(batch_size, CPU_TOKENS_PER_BATCH // length)``, and the last batch of each length
is filled up with copies (``spurious.models.runtime.batches.length_buckets``). This
benchmark encodes distinct SNLI sentences of several workload sizes with
``CPU_TOKENS_PER_BATCH`` set to each budget in turn and records the *fill* (rows run /
real rows) and the throughput (bf16 where the CPU has it, 2 worker threads, the best of
``--repeats``; interleaved by budget within each workload). No feature cache is involved:
``SentenceEncoder.encode`` always runs the model.

Writes ``bench/results/encode_fill.json``. Usage::

    python bench/bench_encode_fill.py [--budgets 1024 512 256] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]
SNLI = ROOT.parent / "shared" / "data" / "snli"
OUT = ROOT / "bench" / "results" / "encode_fill.json"
#: Two budgets, one repeat, on the small copy's sentences.
SMOKE_ARGS = ["--budgets", "1024", "256", "--repeats", "1"]


def workloads() -> dict[str, list[str]]:
    """Distinct sentences: 2,000 of SNLI dev, its premises, its hypotheses, and the
    hypotheses of SNLI test and dev together."""
    dev = [json.loads(line) for line in (SNLI / "dev.jsonl").open(encoding="utf-8")]
    test = [json.loads(line) for line in (SNLI / "test_tokenized.jsonl").open(encoding="utf-8")]
    premises = list(dict.fromkeys(r["premise"] for r in dev))
    hypotheses = list(dict.fromkeys(r["hypothesis"] for r in dev))
    both = list(dict.fromkeys([r["hypothesis"] for r in test] + hypotheses))
    return {
        "distinct_2000": list(dict.fromkeys(premises + hypotheses))[:2000],
        "dev_premises": premises,
        "dev_hypotheses": hypotheses,
        "test_dev_hypotheses": both,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--budgets", type=int, nargs="+", default=[1024, 512, 256])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()

    import numpy as np
    import torch

    import spurious.models.runtime.batches as batches
    from spurious.features.encoder import SentenceEncoder
    from spurious.provenance import cpu_model, dependency_versions
    from spurious.utils.io import atomic_write_json

    default = batches.CPU_TOKENS_PER_BATCH
    enc = SentenceEncoder(device="cpu", precision="auto", batch_size=128)
    tokenizer = enc._tokenizer_model()[0]
    results: dict[str, dict] = {}
    try:
        for name, texts in workloads().items():
            enc.encode(texts[:200])  # warm the model and the kernels
            lengths = np.array([len(ids) for ids in tokenizer(texts)["input_ids"]])
            row: dict[str, dict] = {}
            for budget in args.budgets:
                batches.CPU_TOKENS_PER_BATCH = budget
                times = []
                for _ in range(args.repeats):
                    t0 = time.perf_counter()
                    enc.encode(texts)
                    times.append(time.perf_counter() - t0)
                plan = batches.length_buckets(lengths, enc.batch_size, on_cpu=True)
                best = min(times)
                row[str(budget)] = {
                    "fill": round(sum(size for _, size in plan) / len(texts), 3),
                    "best_s": round(best, 3),
                    "times_s": [round(t, 3) for t in times],
                    "sentences_per_s": round(len(texts) / best, 1),
                }
                print(name, len(texts), budget, row[str(budget)], flush=True)
            results[name] = {"n": len(texts), "n_lengths": len(set(lengths)), "by_budget": row}
    finally:
        batches.CPU_TOKENS_PER_BATCH = default
    atomic_write_json(
        args.out,
        {
            "benchmark": "encoder fill (fixed length buckets) and throughput by token budget",
            "command": "python bench/bench_encode_fill.py --budgets "
            + " ".join(map(str, args.budgets))
            + f" --repeats {args.repeats}",
            "default_budget": default,
            "precision": enc.resolved_precision,
            "machine": {"cpu": cpu_model(), "cpus": os.cpu_count(), "load_avg": os.getloadavg()},
            "torch_threads": torch.get_num_threads(),
            "workloads": results,
            "versions": dependency_versions(),
        },
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
