"""``spurious train``: fine-tune a transformer on a view of DATA, recording training dynamics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from spurious.cli import options

PRECISION_CHOICE = click.Choice(["auto", "bf16", "fp16", "fp32"])
SOURCE_CHOICE = click.Choice(["forward", "pass"])


@click.command("train")
@options.data_argument()
@options.task_option()
@options.eval_option(
    "Held-out split: scored every epoch (dynamics, early stopping, best epoch), never trained on."
)
@options.opt(
    "--view",
    "What the model sees: full (a pair as a text pair), hypothesis_only, premise_only ...",
    default="full",
)
@options.opt(
    "--model",
    "minilm (all-MiniLM-L6-v2, offline) or a local Hugging Face model folder.",
    default="minilm",
)
@options.opt("--epochs", "Training epochs (at most, with early stopping).", type=int, default=3)
@options.opt("--lr", "Peak AdamW learning rate.", type=float, default=2e-5)
@options.opt("--batch-size", "Examples per step (per process).", type=int, default=32)
@options.opt("--grad-accum", "Gradient accumulation steps.", type=int, default=1)
@options.opt("--warmup-ratio", "Share of steps with linear warm-up.", type=float, default=0.06)
@options.opt("--weight-decay", "AdamW weight decay.", type=float, default=0.0)
@options.opt("--max-length", "Tokens per input (longer ones are truncated).", type=int, default=128)
@options.opt(
    "--patience",
    "Early stopping: epochs without a better --eval accuracy (0: off).",
    type=int,
    default=3,
)
@options.opt("--dynamics-per-epoch", "Dynamics snapshots per epoch.", type=int, default=1)
@options.opt(
    "--train-dynamics",
    "Training-split dynamics from the training forward pass (forward, free, as "
    "allenai/cartography) or a separate no-grad pass each snapshot (pass).",
    type=SOURCE_CHOICE,
    default="forward",
)
@options.opt("--no-dynamics", "Do not record dynamics (plain fine-tuning).", is_flag=True)
@options.opt(
    "--precision",
    "Mixed precision: auto (bf16 on GPUs and CPUs that support it), bf16, fp16, fp32.",
    type=PRECISION_CHOICE,
    default="auto",
)
@options.opt("--device", "auto, cpu, cuda, cuda:1 ...", default="auto")
@options.opt(
    "--warmup-fraction",
    "AFLite's warm-up recipe (paper 000 Sec. 4): train on this held-out fraction of DATA "
    "only and write the other rows to OUT/rest.jsonl, to filter with "
    "'spurious aflite OUT/rest.jsonl --features finetuned:OUT'.",
    type=float,
)
@options.opt(
    "--resume", "Continue an interrupted fine-tune in --out from its last checkpoint.", is_flag=True
)
@options.opt("--keep-checkpoints", "Keep the per-epoch checkpoints after success.", is_flag=True)
@options.input_options
@options.seed_option()
@options.out_option("train")
def train(
    data: Path,
    task: str,
    eval_path: Path | None,
    view: str,
    model: str,
    epochs: int,
    lr: float,
    batch_size: int,
    grad_accum: int,
    warmup_ratio: float,
    weight_decay: float,
    max_length: int,
    patience: int,
    dynamics_per_epoch: int,
    train_dynamics: str,
    no_dynamics: bool,
    precision: str,
    device: str,
    warmup_fraction: float | None,
    resume: bool,
    keep_checkpoints: bool,
    field_map: tuple[str, ...],
    fmt: str | None,
    seed: int,
    out: Path | None,
    force: bool,
) -> None:
    """Fine-tune a transformer for sequence classification on a view of DATA.

    Writes OUT/model/ (safetensors weights, config with the label names, tokenizer),
    OUT/dynamics.parquet (per epoch, for every training and --eval example: p(gold),
    prediction, correctness, logits) and OUT/metrics.json (history per epoch, final
    metrics), each atomically. Use the model as features with
    --features finetuned:OUT in 'spurious aflite' and 'spurious leakage'.
    """
    from spurious.models.finetune import FineTuneConfig, fine_tune, warmup_split
    from spurious.runner import load_inputs

    cfg = FineTuneConfig(
        model=model,
        view=view,
        epochs=epochs,
        learning_rate=lr,
        batch_size=batch_size,
        gradient_accumulation_steps=grad_accum,
        warmup_ratio=warmup_ratio,
        weight_decay=weight_decay,
        max_length=max_length,
        seed=seed,
        early_stopping_patience=patience or None,
        precision=precision,
        dynamics_per_epoch=dynamics_per_epoch,
        train_dynamics=train_dynamics,
        record_dynamics=not no_dynamics,
        device=device,
        keep_checkpoints=keep_checkpoints,
    )
    out = out or options.default_out("train")
    inputs = options.run_inputs(data, task, fmt=fmt, field_map=field_map, eval=eval_path)
    ctx = load_inputs(inputs, progress=None)
    train_ds, eval_ds = ctx.train, ctx.eval
    rest = None
    if warmup_fraction is not None:
        train_ds, rest = warmup_split(train_ds, warmup_fraction, seed)
    click.echo(
        f"train: {len(train_ds):,} examples"
        + (f" (warm-up {warmup_fraction:.0%} of {len(ctx.train):,})" if rest is not None else "")
        + (f", eval: {len(eval_ds):,}" if eval_ds is not None else "")
        + f"; view {view}, model {model}, {epochs} epoch(s) -> {out}"
    )
    res = fine_tune(
        train_ds, eval_ds, cfg, out, progress=ctx.progress, resume=resume, overwrite=force
    )
    print_history(res.history)
    m = res.metrics
    click.echo(
        f"{m.get('train_examples_per_s') or 0:,.1f} training examples/s, "
        f"{m['wall_seconds']:.1f}s in all ({m['dynamics_seconds']:.1f}s recording dynamics)"
        + (
            f"; kept epoch {m['kept_epoch']}: eval accuracy {m['eval_accuracy']:.4f}"
            if "eval_accuracy" in m
            else ""
        )
    )
    if rest is not None:
        path = write_rest(rest, Path(out) / "rest.jsonl")
        click.echo(f"rest:     {path} ({len(rest):,} rows to filter)")
    click.echo(f"model:    {res.model_dir}")
    click.echo(f"dynamics: {Path(out) / 'dynamics.parquet'} ({len(res.dynamics):,} rows)")
    click.echo(f"metrics:  {Path(out) / 'metrics.json'}")


def print_history(history: list[dict[str, Any]]) -> None:
    """One line per epoch: losses, accuracies, seconds."""
    click.echo(
        f"{'epoch':>5} {'train loss':>10} {'train acc':>9} {'eval loss':>9} {'eval acc':>8} "
        f"{'train s':>8} {'dyn s':>6}"
    )

    def f(v: Any, spec: str) -> str:
        return format(v, spec) if isinstance(v, int | float) else "-"

    for h in history:
        click.echo(
            f"{h['epoch']:>5} {f(h.get('train_loss'), '.4f'):>10} "
            f"{f(h.get('train_accuracy'), '.4f'):>9} {f(h.get('eval_loss'), '.4f'):>9} "
            f"{f(h.get('eval_accuracy'), '.4f'):>8} {f(h.get('train_seconds'), '.1f'):>8} "
            f"{f(h.get('dynamics_seconds'), '.1f'):>6}"
        )


def write_rest(rest: Any, path: Path) -> Path:
    """The rows left after the warm-up split, as JSONL with canonical fields and ids."""
    from spurious.utils.io import atomic_write

    cols = ["id", *rest.task.text_fields, "label"]
    frame = rest.frame[[c for c in cols if c in rest.frame]]
    return atomic_write(
        path, lambda p: frame.to_json(p, orient="records", lines=True, force_ascii=False)
    )
