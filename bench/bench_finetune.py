"""Fine-tuning engine measurements (issue 8 parts 1, 2, 4): accuracy, speed, recording cost.

Parts (run one or several; each merges its numbers into bench/results/finetune.json):

``snli``      fine-tune MiniLM on SNLI test (9,824 pairs), evaluate on SNLI dev (9,842):
              accuracy per epoch, training examples/s, wall time.
``hyp``       the same on the hypothesis-only view (compare with the frozen-feature probe).
``overhead``  training examples/s of plain ``transformers.Trainer`` (no evaluation; and
              with its own per-epoch evaluation) against our engine recording dynamics
              (training forward pass + evaluation pass; and with a separate training
              pass), on the same model, data and settings, interleaved rounds.
``features``  examples/s of ``hidden_states`` (the ``finetuned:`` featurizer) against the
              sentence encoder (``minilm`` features) on the same SNLI pairs.

Usage::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/bench_finetune.py snli --epochs 1
    HF_HUB_OFFLINE=1 .venv/bin/python bench/bench_finetune.py overhead --n-train 800
    HF_HUB_OFFLINE=1 .venv/bin/python bench/bench_finetune.py features --model-dir runs/ft-snli
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data" / "snli"
RESULTS = Path(os.environ.get("BENCH_RESULTS", ROOT / "bench" / "results" / "finetune.json"))


def load_snli(n_train: int | None, n_eval: int | None, seed: int = 0):
    from spurious import load_dataset

    train = load_dataset(SHARED / "test_tokenized.jsonl", "nli")
    dev = load_dataset(SHARED / "dev.jsonl", "nli", label_names=train.label_names)
    return _subset(train, n_train, seed), _subset(dev, n_eval, seed)


def _subset(ds, n, seed):
    import numpy as np

    if n is None or n >= len(ds):
        return ds
    rows = np.sort(np.random.default_rng(seed).choice(len(ds), n, replace=False))
    return ds.subset(rows, f"{ds.name}[{n}]")


def machine() -> dict[str, Any]:
    import torch

    from spurious.features.encoder import cpu_supports_bf16

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpu_threads": torch.get_num_threads(),
        "cpu_native_bf16": cpu_supports_bf16(),
        "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "load_average_at_start": os.getloadavg()[0],
    }


def save(part: str, payload: dict[str, Any]) -> None:
    from spurious.utils.io import atomic_write_json, read_json

    data = read_json(RESULTS) if RESULTS.is_file() else {}
    data[part] = {**payload, "machine": machine(), "when": time.strftime("%Y-%m-%d %H:%M")}
    atomic_write_json(RESULTS, data)
    print(f"wrote {RESULTS} [{part}]", flush=True)


# -- fine-tunes on SNLI -----------------------------------------------------------------
def part_finetune(args: argparse.Namespace, view: str) -> None:
    from spurious.models.finetune import FineTuneConfig, fine_tune

    train, dev = load_snli(args.n_train, args.n_eval)
    cfg = FineTuneConfig(view=view, epochs=args.epochs, seed=args.seed)
    out = Path(args.out or f"runs/bench-finetune-{view}")
    t0 = time.perf_counter()
    res = fine_tune(train, dev, cfg, out, progress=True, overwrite=True)
    wall = time.perf_counter() - t0
    m = res.metrics
    payload = {
        "command": " ".join(["python", *sys.argv]),
        "view": view,
        "n_train": len(train),
        "n_eval": len(dev),
        "config": cfg.to_dict(),
        "history": res.history,
        "metrics": m,
        "wall_seconds_incl_loading": round(wall, 1),
        "recording_overhead_in_run": (
            round(m["dynamics_seconds"] / m["train_seconds"], 4) if m["train_seconds"] else None
        ),
        "model_dir": str(res.model_dir),
    }
    subset = "" if args.n_train is None else f"_train{len(train)}"
    save(f"snli_{view}{subset}_{args.epochs}ep", payload)
    for h in res.history:
        print(h)
    print({k: m[k] for k in ("eval_accuracy", "train_examples_per_s", "wall_seconds")})


# -- recording overhead ---------------------------------------------------------------------
def _plain_trainer_run(train_enc, eval_enc, cfg, evaluate: bool, workdir: Path) -> float:
    """Seconds of ``transformers.Trainer.train()`` with the library's own loop only."""
    import transformers

    from spurious.models.finetune.data import PadCollator
    from spurious.models.finetune.engine import (
        _load_model,
        _resolve_hardware,
        _restored_global_rng,
        _training_args,
    )

    class DropIdx(PadCollator):  # the plain Trainer's model must not see our example index
        def __call__(self, items):
            batch = super().__call__(items)
            batch.pop("idx", None)
            return batch

    device, precision = _resolve_hardware(cfg)
    with _restored_global_rng():
        transformers.set_seed(cfg.seed)
        tok, model = _load_model(cfg, ["entailment", "neutral", "contradiction"])
        targs = _training_args(cfg, workdir, device, precision, has_eval=evaluate)
        trainer = transformers.Trainer(
            model=model,
            args=targs,
            data_collator=DropIdx(train_enc.pad_id),
            train_dataset=train_enc,
            eval_dataset=eval_enc if evaluate else None,
            processing_class=tok,
            # Accuracy is what early stopping reads; computing it needs the logits, as ours.
            compute_metrics=lambda p: {
                "accuracy": float((p.predictions.argmax(-1) == p.label_ids).mean())
            },
        )
        from transformers.trainer_callback import PrinterCallback, ProgressCallback

        trainer.remove_callback(ProgressCallback)
        trainer.remove_callback(PrinterCallback)
        t0 = time.perf_counter()
        trainer.train()
        return time.perf_counter() - t0


def _engine_run(train, dev, cfg, workdir: Path) -> tuple[float, dict[str, Any]]:
    from spurious.models.finetune import fine_tune

    res = fine_tune(train, dev, cfg, workdir, progress=False, overwrite=True)
    m = res.metrics
    # Trainer.train() time: training plus the dynamics passes (what the plain runs time).
    return m["train_seconds"] + m["dynamics_seconds"], m


def part_overhead(args: argparse.Namespace) -> None:
    import tempfile

    from spurious.features.encoder import default_model_path
    from spurious.models.finetune import FineTuneConfig
    from spurious.models.finetune.data import encode

    train, dev = load_snli(args.n_train, args.n_eval)
    base = {
        "epochs": args.epochs,
        "seed": args.seed,
        "save_checkpoints": False,  # the same for every variant: no checkpoint I/O timed
        "early_stopping_patience": None,
    }
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(default_model_path())
    cfg = FineTuneConfig(**base)
    train_enc = encode(train, "full", tok, cfg.max_length)
    dev_enc = encode(dev, "full", tok, cfg.max_length)
    in_run: dict[str, list[float]] = {}

    def engine(name: str, dev_split, cfg_v, d: Path) -> float:
        seconds, m = _engine_run(train, dev_split, cfg_v, d)
        # The recording cost measured inside one run, under the same machine load:
        # seconds of the no-grad passes / seconds of training proper.
        in_run.setdefault(name, []).append(round(m["dynamics_seconds"] / m["train_seconds"], 4))
        return seconds

    variants = {
        "trainer_plain": lambda d: _plain_trainer_run(train_enc, dev_enc, cfg, False, d),
        "trainer_with_eval": lambda d: _plain_trainer_run(train_enc, dev_enc, cfg, True, d),
        "engine_no_dynamics_no_eval": lambda d: engine(
            "engine_no_dynamics_no_eval", None, FineTuneConfig(**base, record_dynamics=False), d
        ),
        "engine_dynamics_forward": lambda d: engine("engine_dynamics_forward", dev, cfg, d),
        "engine_dynamics_pass": lambda d: engine(
            "engine_dynamics_pass", dev, FineTuneConfig(**base, train_dynamics="pass"), d
        ),
    }
    chosen = args.variants.split(",") if args.variants else list(variants)
    times: dict[str, list[float]] = {k: [] for k in chosen}
    with tempfile.TemporaryDirectory() as tmp:
        # Warm-up, not timed: imports, oneDNN kernel creation, first-touch allocations.
        _engine_run(_subset(train, 64, 1), None, FineTuneConfig(**base), Path(tmp) / "warm")
        for r in range(args.repeats):
            for name in chosen:  # interleaved, so machine load hits every variant alike
                s = variants[name](Path(tmp) / f"{name}-{r}")
                times[name].append(round(s, 3))
                print(f"round {r} {name}: {s:.1f}s ({len(train) * args.epochs / s:.1f} ex/s)")
    med = {k: statistics.median(v) for k, v in times.items()}
    n = len(train) * args.epochs
    ratios = {}
    for ref in ("trainer_plain", "trainer_with_eval"):
        if ref in med:
            ratios[ref] = {k: round(v / med[ref], 4) for k, v in med.items()}
    save(
        "overhead",
        {
            "command": " ".join(["python", *sys.argv]),
            "n_train": len(train),
            "n_eval": len(dev),
            "epochs": args.epochs,
            "repeats": args.repeats,
            "seconds": times,
            "median_seconds": med,
            "train_examples_per_s": {k: round(n / v, 2) for k, v in med.items()},
            "time_ratio_vs": ratios,
            "in_run_pass_over_train_seconds": in_run,
            "note": "Seconds of Trainer.train() (our engine: training + dynamics passes); "
            "ratios > 1 are overhead. 'trainer_with_eval' is the fair reference when an "
            "evaluation split is scored every epoch anyway (early stopping); "
            "'trainer_plain' counts the evaluation pass as recording cost.",
        },
    )
    print(ratios)


# -- representations ---------------------------------------------------------------------
def part_features(args: argparse.Namespace) -> None:
    from spurious.features.encoder import EncoderFeaturizer
    from spurious.models.finetune import hidden_states

    _, dev = load_snli(None, args.n_eval)
    model_dir = args.model_dir or "runs/bench-finetune-full"
    # Warm both models up first (loading is not throughput).
    hidden_states(model_dir, dev.subset(range(64)), "full")
    enc = EncoderFeaturizer(cache_dir=False)
    enc.transform(dev.subset(range(64)), "full")
    rows: dict[str, list[float]] = {"finetuned_hidden_states": [], "encoder_minilm": []}
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        H = hidden_states(model_dir, dev, "full")
        rows["finetuned_hidden_states"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        X = enc.transform(dev, "full")
        rows["encoder_minilm"].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in rows.items()}
    save(
        "features",
        {
            "command": " ".join(["python", *sys.argv]),
            "n_pairs": len(dev),
            "seconds": rows,
            "examples_per_s": {k: round(len(dev) / v, 1) for k, v in med.items()},
            "shapes": {"finetuned_hidden_states": list(H.shape), "encoder_minilm": list(X.shape)},
            "note": "The fine-tuned model reads each pair once as a text pair; the encoder "
            "embeds each distinct sentence once (premises repeat ~3x in SNLI) and combines "
            "[u, v, |u-v|, u*v]. Both bf16 autocast where the CPU has native bf16.",
        },
    )
    print(med)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("parts", nargs="+", choices=["snli", "hyp", "overhead", "features"])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--n-train", type=int, default=None, help="random subset of SNLI test")
    p.add_argument("--n-eval", type=int, default=None, help="random subset of SNLI dev")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--variants", default=None, help="comma-separated overhead variants")
    p.add_argument("--model-dir", default=None, help="fine-tuned model for 'features'")
    p.add_argument("--out", default=None)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    for part in args.parts:
        if part == "snli":
            part_finetune(args, "full")
        elif part == "hyp":
            part_finetune(args, "hypothesis_only")
        elif part == "overhead":
            part_overhead(args)
        else:
            part_features(args)


if __name__ == "__main__":
    main()
