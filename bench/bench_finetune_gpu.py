"""Issue 24 goal 7: the fine-tune with dynamics and TRA on a GPU, against ``transformers.Trainer``.

One script, one process, one GPU, in this order (each part writes its numbers into the
JSON at once, so a run cut short keeps what it measured):

``warmup``   CUDA context, cuBLAS handles, first kernels (not timed).
``speed``    interleaved rounds of (a) plain ``transformers.Trainer`` (the same model,
             data, batch 32, bf16, length-grouped batches, our fast collator; no
             evaluation, no dynamics: the Trainer at its fastest), and (b) our engine's
             lean loop recording dynamics from the training forward pass and scoring
             SNLI dev every epoch. examples/s = training examples seen / seconds of
             ``Trainer.train()`` (b: training plus the dynamics passes, and training
             alone); peak GPU memory of each.
``trainer_engine``  our engine on the Trainer loop (``loop="trainer"``), dynamics and
             evaluation: what a GPU ran before the lean loop.
``seeds``    final SNLI dev accuracy of both loops (engine, dynamics on) over seeds, to
             check the results agree within seed noise.
``tra``      the hypothesis-only fine-tune on the lean loop, then token relevance
             agreement (paper 003 Eq. 9-10) of the full-input and hypothesis-only
             models on all of SNLI dev, on the GPU.
``compiled`` the lean loop with ``compile=True``: first epoch (with compilation) and the
             steady-state examples/s of the last.

Data: SNLI test (9,824 pairs) as training split, SNLI dev (9,842) for evaluation; no SNLI
training split exists offline (the papers fine-tune on 550k). Model: all-MiniLM-L6-v2.
On the lent GPU machine the weights travel as float16 (the 64 MiB transfer limit) and
are cast back to float32 before anything runs, for both loops alike.

Usage (on the GPU machine, from the repository root)::

    PYTHONPATH=src python bench/bench_finetune_gpu.py --data DIR --model DIR --out F.json

``--data`` holds ``test_tokenized.jsonl`` and ``dev.jsonl`` of SNLI (default:
``../shared/data/snli``); ``--model`` a Hugging Face folder (default: the bundled
MiniLM).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
#: Smoke run: --smoke (200 rows per split, CPU allowed), 1 epoch, every part but compiled.
SMOKE_ARGS = ["--smoke", "--epochs", "1", "--rounds", "1", "--seeds", "1",
              "--parts", "speed,trainer_engine,seeds,tra"]  # fmt: skip


def fp32_copy(model_dir: str, dest: Path) -> str:
    """The model folder with float32 weights (the carried copy is float16)."""
    import torch
    import transformers

    model = transformers.AutoModel.from_pretrained(model_dir, dtype=torch.float32)
    model.save_pretrained(dest)
    tok = transformers.AutoTokenizer.from_pretrained(model_dir)
    tok.save_pretrained(dest)
    return str(dest)


class Results:
    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        self.path = path
        self.data: dict[str, Any] = {**header, "parts": {}}
        self.write()

    def put(self, part: str, payload: dict[str, Any]) -> None:
        self.data["parts"][part] = payload
        self.write()
        print(f"[{part}] {json.dumps(payload)[:1500]}", flush=True)

    def write(self) -> None:
        from spurious.utils.io import atomic_write_json

        atomic_write_json(self.path, self.data)


def gpu_peak_gib() -> float | None:
    import torch

    if not torch.cuda.is_available():
        return None
    return round(torch.cuda.max_memory_allocated() / 2**30, 3)


def reset_peak() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "snli"))
    p.add_argument("--model", default=None)
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "finetune_gpu.json"))
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--rounds", type=int, default=2, help="interleaved speed rounds")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--parts", default="speed,trainer_engine,seeds,tra,compiled")
    p.add_argument("--smoke", action="store_true", help="200 rows per split, CPU allowed")
    args = p.parse_args()

    import numpy as np
    import torch
    import transformers

    from spurious import load_dataset
    from spurious.models.finetune import FineTuneConfig, fine_tune
    from spurious.models.finetune.data import encode
    from spurious.utils.memory import peak_rss_gib

    if not torch.cuda.is_available() and not args.smoke:
        raise SystemExit("this benchmark needs a CUDA device (--smoke: a tiny CPU check)")
    tmp = Path(tempfile.mkdtemp(prefix="ftgpu-"))
    atexit.register(shutil.rmtree, tmp, True)  # the fine-tunes' folders (~100 MiB each)
    model = fp32_copy(args.model, tmp / "minilm") if args.model else "minilm"
    data = Path(args.data)
    train = load_dataset(data / "test_tokenized.jsonl", "nli")
    dev = load_dataset(data / "dev.jsonl", "nli", label_names=train.label_names)
    if args.smoke:
        train = train.subset(np.arange(200), "smoke-train")
        dev = dev.subset(np.arange(200), "smoke-dev")
    res = Results(
        Path(args.out),
        {
            "command": " ".join(["python", *sys.argv]),
            "when": time.strftime("%Y-%m-%d %H:%M"),
            "machine": {
                "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
                "python": platform.python_version(),
                "torch": torch.__version__,
                "transformers": transformers.__version__,
                "cpu_count": os.cpu_count(),
            },
            "n_train": len(train),
            "n_eval": len(dev),
            "epochs": args.epochs,
            "batch_size": 32,
            "note": "SNLI test -> dev (no SNLI training split offline); MiniLM-L6 fp32 "
            "weights, bf16 autocast; examples/s = training examples / seconds.",
        },
    )
    base = {
        "model": model,
        "epochs": args.epochs,
        "early_stopping_patience": None,  # fixed epochs: the loops train the same amount
        "save_checkpoints": False,
    }
    n_seen = len(train) * args.epochs
    parts = args.parts.split(",")

    def engine(
        loop: str, seed: int, view: str = "full", out: Path | None = None, compile: bool = False
    ):
        cfg = FineTuneConfig(**base, loop=loop, seed=seed, view=view, compile=compile)
        reset_peak()
        r = fine_tune(
            train, dev, cfg, out or tmp / f"{loop}-{seed}-{view}", overwrite=True, progress=False
        )
        m = r.metrics
        return r, {
            "seed": seed,
            "loop": m["loop"],
            "train_seconds": m["train_seconds"],
            "dynamics_seconds": m["dynamics_seconds"],
            "examples_per_s_training": round(n_seen / m["train_seconds"], 1),
            "examples_per_s_with_dynamics": round(
                n_seen / (m["train_seconds"] + m["dynamics_seconds"]), 1
            ),
            "eval_accuracy": round(m["eval_accuracy"], 4),
            "gpu_peak_gib": gpu_peak_gib(),
            "epoch_train_seconds": [h["train_seconds"] for h in r.history],
        }

    # Warm-up, not timed: both loops once on a slice.
    small = train.subset(np.arange(min(2000, len(train))), "warm")
    for loop in ("lean", "trainer"):
        fine_tune(
            small,
            None,
            FineTuneConfig(**{**base, "epochs": 1}, loop=loop),
            tmp / f"warm-{loop}",
            overwrite=True,
            progress=False,
        )

    if "speed" in parts:
        from bench_finetune import _plain_trainer_run
        from spurious.models.runtime import resolve_model

        tok = transformers.AutoTokenizer.from_pretrained(resolve_model(model)[0])
        cfg = FineTuneConfig(**base)
        train_enc = encode(train, "full", tok, cfg.max_length)
        rounds: dict[str, list[dict[str, Any]]] = {"trainer_plain": [], "lean_engine": []}
        for r in range(args.rounds):
            reset_peak()
            s = _plain_trainer_run(train_enc, None, cfg, False, tmp / f"plain-{r}")
            rounds["trainer_plain"].append(
                {
                    "seconds": round(s, 3),
                    "examples_per_s": round(n_seen / s, 1),
                    "gpu_peak_gib": gpu_peak_gib(),
                }
            )
            _, row = engine("lean", 0, out=tmp / f"lean-speed-{r}")
            rounds["lean_engine"].append(row)
            print(f"round {r}: plain {n_seen / s:.0f} ex/s; lean {row}", flush=True)
        plain = statistics.median(x["examples_per_s"] for x in rounds["trainer_plain"])
        lean_train = statistics.median(x["examples_per_s_training"] for x in rounds["lean_engine"])
        lean_all = statistics.median(
            x["examples_per_s_with_dynamics"] for x in rounds["lean_engine"]
        )
        res.put(
            "speed",
            {
                "rounds": rounds,
                "median_examples_per_s": {
                    "trainer_plain": plain,
                    "lean_training": lean_train,
                    "lean_training_plus_dynamics_and_eval_passes": lean_all,
                },
                "ratio_lean_over_trainer_plain": {
                    "training": round(lean_train / plain, 2),
                    "with_dynamics_and_eval": round(lean_all / plain, 2),
                },
            },
        )

    if "trainer_engine" in parts:
        _, row = engine("trainer", 0)
        res.put("trainer_engine", row)

    if "seeds" in parts:
        rows: dict[str, list[dict[str, Any]]] = {"lean": [], "trainer": []}
        # Seed 0 of both loops ran above (the speed rounds and trainer_engine).
        if "speed" in parts:
            rows["lean"].append(rounds["lean_engine"][0])
        if "trainer_engine" in parts:
            rows["trainer"].append(res.data["parts"]["trainer_engine"])
        for seed in range(args.seeds):
            for loop in ("lean", "trainer"):
                if seed == 0 and rows[loop]:
                    continue
                _, row = engine(loop, seed)
                rows[loop].append(row)
        acc = {k: [r["eval_accuracy"] for r in v] for k, v in rows.items()}
        res.put(
            "seeds",
            {
                "runs": rows,
                "eval_accuracy": acc,
                "mean": {k: round(float(np.mean(v)), 4) for k, v in acc.items()},
                "sd": {
                    k: round(float(np.std(v, ddof=1)), 4) if len(v) > 1 else None
                    for k, v in acc.items()
                },
            },
        )

    if "tra" in parts:
        from spurious.models.finetune.attribution import relevance_agreement, token_relevance

        full_res, full_row = engine("lean", 0, "full", tmp / "tra-full")
        hyp_res, hyp_row = engine("lean", 0, "hypothesis_only", tmp / "tra-hyp")
        reset_peak()
        t0 = time.perf_counter()
        full = token_relevance(full_res.output_dir, dev, "full")
        t_full = time.perf_counter() - t0
        t0 = time.perf_counter()
        hyp = token_relevance(hyp_res.output_dir, dev, "hypothesis_only")
        t_hyp = time.perf_counter() - t0
        tra = relevance_agreement(full, hyp)
        res.put(
            "tra",
            {
                "full_finetune": full_row,
                "hypothesis_only_finetune": hyp_row,
                "tra_mean": round(float(np.nanmean(tra)), 4),
                "tra_median": round(float(np.nanmedian(tra)), 4),
                "n_nan": int(np.isnan(tra).sum()),
                "relevance_seconds": {"full": round(t_full, 2), "hypothesis_only": round(t_hyp, 2)},
                "relevance_examples_per_s": {
                    "full": round(len(dev) / t_full, 1),
                    "hypothesis_only": round(len(dev) / t_hyp, 1),
                },
                "gpu_peak_gib_relevance": gpu_peak_gib(),
                "note": "paper 003 Table 4: SNLI hypothesis-only TRA 63.9 (RoBERTa-large, "
                "550k training pairs); here MiniLM-L6 on 9,824 pairs, 2 epochs.",
            },
        )
    if "compiled" in parts:
        _, row = engine("lean", 0, out=tmp / "compiled", compile=True)
        n = len(train)
        steady = row["epoch_train_seconds"][-1]
        res.put(
            "compiled",
            {
                **row,
                "first_epoch_seconds_incl_compilation": row["epoch_train_seconds"][0],
                "last_epoch_examples_per_s": round(n / steady, 1),
                "note": "torch.compile(mode=reduce-overhead: CUDA graphs, widths padded to "
                "32/64/128) of the training step; the "
                "first epoch includes compilation, the last is steady state.",
            },
        )
    res.data["process_peak_rss_gib"] = peak_rss_gib()
    res.write()
    print("done", flush=True)


if __name__ == "__main__":
    main()
