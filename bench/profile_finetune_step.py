"""Where a fine-tuning step's time goes on a GPU (issue 24 goal 7, the follow-up question).

``bench/bench_finetune_gpu.py`` found the lean loop 1.2-1.5x the plain Trainer on an
H100, far from the 5x goal; this script asks why. On the same SNLI batches (batch 32,
MiniLM-L6, bf16 autocast, AdamW fused, clipping) it times steady-state steps of:

``eager``          the lean loop's step (dynamic padding to a multiple of 8);
``eager_fixed``    the same step padded to a fixed width (``--width``, default 128): the
                   GPU does ~3x the work; if the time per step barely moves, the step is
                   bound by the host (Python and kernel launches), not the GPU;
``graphs``         ``torch.compile(mode="reduce-overhead")`` (CUDA graphs) on the fixed
                   width: what removing the host overhead is worth;

and, for ``eager``, a ``torch.profiler`` summary: host time per step, GPU kernel time per
step and kernels launched per step. Results go to ``--out`` (JSON).

Usage (GPU machine, repository root)::

    PYTHONPATH=src python bench/profile_finetune_step.py --data DIR --model DIR --out F.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
#: The eager step only, 1 warm-up + 3 x 1 timed steps (on the CPU when there is no GPU).
SMOKE_ARGS = ["--variants", "eager", "--warmup-steps", "1", "--steps", "1"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "snli"))
    p.add_argument("--model", default=None)
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "finetune_step.json"))
    p.add_argument("--steps", type=int, default=120)
    p.add_argument(
        "--warmup-steps", type=int, default=20, help="untimed steps first (and compilation)"
    )
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--variants", default="eager,eager_fixed,graphs")
    args = p.parse_args()

    import numpy as np
    import torch
    import transformers

    from bench_finetune_gpu import fp32_copy
    from spurious import load_dataset
    from spurious.models.finetune.data import PadCollator, encode
    from spurious.models.runtime import resolve_model

    dev_name = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(dev_name)
    tmp = Path("/tmp/profile-step")
    model_dir = fp32_copy(args.model, tmp / "minilm") if args.model else resolve_model("minilm")[0]
    train = load_dataset(Path(args.data) / "test_tokenized.jsonl", "nli")
    tok = transformers.AutoTokenizer.from_pretrained(model_dir)
    enc = encode(train, "full", tok, 128)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(enc))
    batches = [order[i : i + 32] for i in range(0, 32 * (args.steps + args.warmup_steps), 32)]
    out: dict[str, Any] = {
        "command": " ".join(["python", *sys.argv]),
        "device": torch.cuda.get_device_name(0) if dev_name == "cuda" else "cpu",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "steps_timed": args.steps,
        "mean_tokens_per_row": float(enc.lengths.mean()),
        "variants": {},
    }

    def build(compile_mode: str | None):
        torch.manual_seed(0)
        model = transformers.AutoModelForSequenceClassification.from_pretrained(
            model_dir, num_labels=3
        ).to(device)
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=2e-5, fused=True)
        fwd = model
        if compile_mode is not None:
            fwd = torch.compile(model, mode=compile_mode, dynamic=False)
        return model, opt, fwd

    def step(model, opt, fwd, batch):
        labels = batch["labels"]
        inputs = {k: v for k, v in batch.items() if k not in ("labels", "idx")}
        with torch.autocast(dev_name, dtype=torch.bfloat16):
            logits = fwd(**inputs).logits
        loss = torch.nn.functional.cross_entropy(logits.float(), labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach()

    def prepared(width: int | None):
        col = PadCollator(enc.pad_id, 8)
        res = []
        for rows in batches:
            b = col([enc[int(r)] for r in rows])
            if width is not None:
                pad = width - b["input_ids"].shape[1]
                for k in ("input_ids", "attention_mask", "token_type_ids"):
                    if k in b and pad > 0:
                        fill = enc.pad_id if k == "input_ids" else 0
                        b[k] = torch.nn.functional.pad(b[k], (0, pad), value=fill)
            res.append({k: v.to(device) for k, v in b.items()})
        return res

    def timed(name: str, compile_mode: str | None, width: int | None) -> None:
        model, opt, fwd = build(compile_mode)
        data = prepared(width)
        t0 = time.perf_counter()
        for b in data[: args.warmup_steps]:  # warm-up (and compilation)
            step(model, opt, fwd, b)
        if dev_name == "cuda":
            torch.cuda.synchronize()
        warm = time.perf_counter() - t0
        times = []
        for rep in range(3):
            t0 = time.perf_counter()
            for b in data[args.warmup_steps : args.warmup_steps + args.steps]:
                step(model, opt, fwd, b)
            if dev_name == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
            del rep
        med = statistics.median(times)
        row: dict[str, Any] = {
            "warmup_seconds_incl_compile": round(warm, 2),
            "seconds": [round(t, 3) for t in times],
            "ms_per_step": round(1000 * med / args.steps, 3),
            "examples_per_s": round(32 * args.steps / med, 1),
            "width": width or "dynamic (multiple of 8)",
        }
        if name == "eager" and dev_name == "cuda":
            from torch.profiler import ProfilerActivity, profile

            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for b in data[args.warmup_steps : args.warmup_steps + 40]:
                    step(model, opt, fwd, b)
                torch.cuda.synchronize()
            events = prof.key_averages()
            kernels = [e for e in events if e.device_type.name == "CUDA"]
            gpu_us = sum(e.self_device_time_total for e in kernels)
            launches = sum(e.count for e in kernels)
            top = sorted(events, key=lambda e: e.self_cpu_time_total, reverse=True)[:12]
            row["profile_40_steps"] = {
                "gpu_kernel_ms_per_step": round(gpu_us / 1000 / 40, 3),
                "kernels_per_step": round(launches / 40, 1),
                "top_host_ops_ms_per_step": {
                    e.key: round(e.self_cpu_time_total / 1000 / 40, 3) for e in top
                },
            }
        out["variants"][name] = row
        print(name, json.dumps(row)[:800], flush=True)
        Path(args.out).write_text(json.dumps(out, indent=1))

    chosen = args.variants.split(",")
    if "eager" in chosen:
        timed("eager", None, None)
    if "eager_fixed" in chosen:
        timed("eager_fixed", None, args.width)
    if "graphs" in chosen:
        timed("graphs", "reduce-overhead", args.width)
    print("done", flush=True)


if __name__ == "__main__":
    main()
