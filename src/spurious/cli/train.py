"""``spurious train``: fine-tune a transformer on a view of DATA, recording training dynamics."""

from __future__ import annotations

import contextlib
import functools
import os
from pathlib import Path
from typing import Any

import click

from spurious.cli import options
from spurious.cli.train_flags import api_names_as_flags, check_resumable

PRECISION_CHOICE = click.Choice(["auto", "bf16", "fp16", "fp32"])
SOURCE_CHOICE = click.Choice(["forward", "pass"])
#: ``--loss`` names: ce is the engine's plain cross-entropy; the others its debiasing losses.
LOSS_CHOICE = click.Choice(
    ["ce", "poe", "learned_mixin", "learned_mixin_h", "conf_reg", "reweight"]
)


def main_process() -> bool:
    """Whether this is process 0 of a data-parallel launch (or no launch at all).

    ``torchrun`` and ``accelerate launch`` start ``spurious train`` once per process
    and set ``RANK``; every process trains its share, process 0 alone writes the model,
    dynamics and metrics (:func:`~spurious.models.finetune.fine_tune`) and everything
    the command writes or prints after training.

    Examples
    --------
    >>> main_process()  # no launcher here
    True
    """
    return int(os.environ.get("RANK", "0") or 0) == 0


def _process_zero_reports(command: Any) -> Any:
    """Run ``command`` with its standard output discarded in processes other than 0 (one
    report, not one per process); errors still reach standard error."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if main_process():
            return command(*args, **kwargs)
        with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
            return command(*args, **kwargs)

    return wrapper


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
    "--loop",
    "Training loop: auto (lean on one GPU, else the Trainer), trainer "
    "(transformers.Trainer: torchrun / accelerate launch), lean (one process, no "
    "per-step bookkeeping: 1.2-2.3x the Trainer's examples/s on an H100).",
    type=click.Choice(["auto", "trainer", "lean"]),
    default="auto",
)
@options.opt(
    "--compile",
    "Lean loop: compile the training step into CUDA graphs (~20 s per padded width, "
    "then ~8x the Trainer's examples/s on an H100); for long runs on a GPU.",
    is_flag=True,
)
@options.opt(
    "--warmup-fraction",
    "AFLite's warm-up recipe (paper 000 Sec. 4): train on this held-out fraction of DATA "
    "only and write the other rows to OUT/rest.jsonl, to filter with "
    "'spurious aflite OUT/rest.jsonl --features finetuned:OUT'.",
    type=float,
)
@options.opt(
    "--loss",
    "Training objective: ce (plain cross-entropy), or a debiasing objective against the "
    "--bias model: poe (product of experts), learned_mixin, learned_mixin_h (with an "
    "entropy penalty), conf_reg (confidence regularization; also a --teacher), reweight.",
    type=LOSS_CHOICE,
    default="ce",
)
@options.opt(
    "--bias",
    "The bias model of a debiasing --loss: partial:<view> (e.g. partial:hypothesis_only), "
    "heuristic:<name>, shallow, or file:<path> (probabilities keyed by id). Scored "
    "out-of-fold on the training rows; partial:<view> is early-stopped and calibrated.",
    metavar="SPEC",
)
@options.opt(
    "--bias-features",
    "Features of the --bias model (minilm, bow, tfidf ...; default minilm; unused by file:<path>).",
)
@options.opt(
    "--bias-rescale",
    "Squeeze the bias probabilities into <0; X> (default: 0.8 for learned_mixin(_h), "
    "0.9 for conf_reg, none for the others, as the debiasing analysis).",
    type=float,
)
@options.opt(
    "--entropy-weight",
    "LearnedMixin+H's entropy penalty (default: 0.4 * ln C / ln 384 for C classes).",
    type=float,
)
@options.opt(
    "--teacher",
    "conf_reg's teacher: a 'spurious train' output folder (its model predicts the "
    "training rows) or a probabilities file keyed by id (as file:<path>). Default: a "
    "plain fine-tune with the same settings, trained first into OUT/teacher.",
    type=click.Path(exists=True, path_type=Path),
)
@options.opt(
    "--predictions-out",
    "Also write the kept model's predicted labels on --eval to FILE (JSONL: id, "
    "prediction), the file 'spurious bias' and 'spurious fairness' read with "
    "--predictions (the model is named by the file stem).",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
)
@options.opt(
    "--resume", "Continue an interrupted fine-tune in --out from its last checkpoint.", is_flag=True
)
@options.opt("--keep-checkpoints", "Keep the per-epoch checkpoints after success.", is_flag=True)
@options.input_options
@options.seed_option()
@options.out_option("train")
@api_names_as_flags  # the engine's errors name output_dir, overwrite=True: say --out, --force
@_process_zero_reports
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
    loop: str,
    compile: bool,
    warmup_fraction: float | None,
    resume: bool,
    keep_checkpoints: bool,
    loss: str,
    bias: str | None,
    bias_features: str | None,
    bias_rescale: float | None,
    entropy_weight: float | None,
    teacher: Path | None,
    predictions_out: Path | None,
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

    With a debiasing --loss the model trains against a --bias model's probabilities
    (and, for conf_reg, a --teacher's); OUT/metrics.json then also holds a 'debiasing'
    block: the objective, the bias spec and the bias model's calibration figures.
    """
    from spurious.exceptions import ParameterError
    from spurious.inputs import load_inputs
    from spurious.models.finetune import FineTuneConfig, fine_tune, warmup_split
    from spurious.models.finetune.outputs import check_not_a_run_dir
    from spurious.models.runtime.loading import check_max_length

    check_debiasing(
        loss, bias, bias_rescale, entropy_weight, teacher, warmup_fraction, bias_features
    )
    if predictions_out is not None and eval_path is None:
        raise click.BadParameter(
            "needs --eval (the split to predict).", param_hint="--predictions-out"
        )
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
        loop=loop,
        compile=compile,
    )
    out = out or options.default_out("train")
    if Path(out).exists() and not Path(out).is_dir():
        raise ParameterError(
            f"--out {str(out)!r} is a file; a fine-tune writes a folder (model, dynamics, "
            "metrics). Choose a folder path."
        )
    check_not_a_run_dir(out)  # before any work (the bias model of --loss trains first)
    check_max_length(model, max_length)  # and --model: a folder without a model fails here
    if resume:
        check_resumable(out, force=force)  # else it would silently start from scratch
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
    side: dict[str, Any] = {}
    record: dict[str, Any] | None = None
    if loss != "ce":
        check_bias_spec(bias, train_ds)
        if not force and not resume and (Path(out) / "metrics.json").is_file():
            raise click.UsageError(
                f"--out {str(out)!r} holds a finished fine-tune; pass --force to replace it."
            )
        cfg, side, record = debias_inputs(
            ctx, cfg, out, loss=loss, bias=bias, bias_features=bias_features or "minilm",
            rescale=bias_rescale, entropy_weight=entropy_weight, teacher=teacher,
            force=force, resume=resume,
        )  # fmt: skip
    res = fine_tune(
        train_ds, eval_ds, cfg, out, progress=ctx.progress, resume=resume, overwrite=force,
        **side,
    )  # fmt: skip
    if not main_process():  # torchrun / accelerate launch: process 0 writes the rest
        return
    if record is not None:
        record_debiasing(Path(out) / "metrics.json", record)
        for split, ds in (("train", train_ds), ("eval", eval_ds)):
            probs = record.pop(f"_{split}_probs", None)
            if probs is not None:
                path = write_probs(ds, probs, Path(out) / f"bias_{split}.jsonl")
                click.echo(f"bias:     {path}")
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
    if predictions_out is not None:
        path = write_predictions(res.model_dir, eval_ds, predictions_out, cfg.device)
        click.echo(f"predictions: {path} ({len(eval_ds):,} rows of --eval)")
    click.echo(f"model:    {res.model_dir}")
    click.echo(f"dynamics: {Path(out) / 'dynamics.parquet'} ({len(res.dynamics):,} rows)")
    click.echo(f"metrics:  {Path(out) / 'metrics.json'}")


def check_debiasing(
    loss: str,
    bias: str | None,
    rescale: float | None,
    entropy_weight: float | None,
    teacher: Path | None,
    warmup_fraction: float | None,
    bias_features: str | None = None,
) -> None:
    """Refuse a combination of the debiasing options that does not fit, before any work."""

    def bad(message: str, param: str) -> click.BadParameter:
        return click.BadParameter(message, param_hint=param)

    if loss == "ce":
        for name, value in (
            ("--bias", bias),
            ("--bias-features", bias_features),
            ("--bias-rescale", rescale),
            ("--entropy-weight", entropy_weight),
            ("--teacher", teacher),
        ):
            if value is not None:
                raise bad(f"{name} given with --loss ce; it needs a debiasing --loss.", name)
        return
    if bias is None:
        raise bad(f"--loss {loss} needs --bias (partial:<view>, heuristic:<name>, "
                  "shallow or file:<path>).", "--bias")  # fmt: skip
    kind, _, arg = bias.partition(":")
    if kind not in ("partial", "heuristic", "shallow", "file") or (
        (kind in ("heuristic", "file") and not arg) or (kind == "shallow" and arg)
    ):
        raise bad(
            f"expected partial:<view>, heuristic:<name>, shallow or file:<path>; got {bias!r}.",
            "--bias",
        )
    if kind == "file" and not Path(arg).is_file():
        raise bad(f"the bias file {arg!r} does not exist.", "--bias")
    if rescale is not None and not 0.0 < rescale <= 1.0:
        raise bad(f"expected a number in (0, 1]; got {rescale}.", "--bias-rescale")
    if entropy_weight is not None and loss != "learned_mixin_h":
        raise bad(f"--entropy-weight only with --loss learned_mixin_h; got --loss {loss}.",
                  "--entropy-weight")  # fmt: skip
    if entropy_weight is not None and entropy_weight < 0:
        raise bad(f"expected a number >= 0; got {entropy_weight}.", "--entropy-weight")
    if teacher is not None and loss != "conf_reg":
        raise bad(f"--teacher only with --loss conf_reg; got --loss {loss}.", "--teacher")
    if teacher is not None and teacher.is_dir() and not _teacher_model(teacher):
        raise bad(f"{str(teacher)!r} is neither a 'spurious train' output folder nor a model "
                  "folder.", "--teacher")  # fmt: skip
    if warmup_fraction is not None:
        raise bad(f"--warmup-fraction trains plain models only; got --loss {loss}.",
                  "--warmup-fraction")  # fmt: skip


def check_bias_spec(bias: str | None, train: Any) -> None:
    """The parts of --bias that need the data: the partial view and the heuristic exist."""
    from spurious.exceptions import AnalysisError

    kind, _, arg = (bias or "").partition(":")
    try:
        if kind == "partial" and arg:
            from spurious.views import get_view

            get_view(train.task, arg)
        elif kind == "heuristic":
            from spurious.heuristics import get_heuristic

            get_heuristic(arg, task=train.task.name)
        elif kind == "partial":
            from spurious.artifacts.bias import partial_view

            partial_view(train)
    except (ValueError, LookupError, AnalysisError) as e:
        raise click.BadParameter(str(e), param_hint="--bias") from None


def _teacher_model(path: Path) -> Path | None:
    """The model folder of a teacher: PATH/model of a train output, or PATH itself."""
    for folder in (path / "model", path):
        if (folder / "config.json").is_file():
            return folder
    return None


def debias_inputs(
    ctx: Any,
    cfg: Any,
    out: Path,
    *,
    loss: str,
    bias: str,
    bias_features: str,
    rescale: float | None,
    entropy_weight: float | None,
    teacher: Path | None,
    force: bool,
    resume: bool,
) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """The engine config, the side inputs (bias / teacher probabilities) and the record of
    a debiasing fine-tune: the debiasing analysis' recipe (bias model, rescaling, entropy
    penalty, ConfReg teacher)."""
    import numpy as np

    from spurious.artifacts.bias import bias_probabilities
    from spurious.evaluate.debiasing import DEFAULT_RESCALE
    from spurious.models.debias.bias import load_bias_file, rescale_bias
    from spurious.models.debias.calibration import calibration_metrics
    from spurious.models.debias.losses import default_entropy_penalty
    from spurious.models.finetune import fine_tune, predict_proba

    train = ctx.train
    kind, _, arg = bias.partition(":")
    spec, view = ("partial_input", arg or None) if kind == "partial" else (bias, None)
    click.echo(f"bias model: {bias} ({bias_features} features) ...")
    b = bias_probabilities(
        ctx, spec, features=bias_features, view=view, random_state=cfg.seed,
        score_eval=kind != "file",  # a file needs only the training rows
    )  # fmt: skip
    y = np.asarray(train.labels)
    info = dict(b.info)
    fit_metrics = info.pop("metrics", {})
    calibration: dict[str, Any] = {
        "temperature": info.get("temperature"),
        "train": calibration_metrics(b.train, y),
    }
    if fit_metrics:  # partial input: out-of-fold figures before temperature scaling
        calibration["train_before"] = {
            k[4:-7]: v
            for k, v in fit_metrics.items()
            if k.startswith("oof_") and k.endswith("_before")
        }
    if b.eval is not None:
        y_eval = np.asarray(ctx.eval.labels)
        calibration["eval"] = calibration_metrics(b.eval, y_eval)
        before = {
            k[:-7]: v
            for k, v in fit_metrics.items()
            if k.endswith("_before") and not k.startswith("oof_")
        }
        if before:
            calibration["eval_before"] = before
    engine_loss = loss
    x = DEFAULT_RESCALE.get(loss) if rescale is None else rescale
    params: dict[str, Any] = {}
    if loss == "learned_mixin_h":
        h = default_entropy_penalty(train.n_classes) if entropy_weight is None else entropy_weight
        params["entropy_penalty"] = float(h)
    side: dict[str, Any] = {"bias_probs": rescale_bias(b.train, x)}
    teacher_info: dict[str, Any] | None = None
    if loss == "conf_reg":
        if teacher is None:  # as the analysis: a plain model of the same seed
            folder = Path(out) / "teacher"
            click.echo(f"teacher: plain fine-tune -> {folder}")
            done = (folder / "metrics.json").is_file() and resume
            if not done:
                fine_tune(train, ctx.eval, cfg, folder, progress=ctx.progress, overwrite=True)
            model_dir = folder / "model"
            teacher_info = {"kind": "trained", "path": str(folder)}
        elif teacher.is_dir():
            model_dir = _teacher_model(teacher)
            teacher_info = {"kind": "model", "path": str(teacher)}
        else:
            model_dir = None
            teacher_info = {"kind": "file", "path": str(teacher)}
        if model_dir is not None:
            t = predict_proba(model_dir, train, None, device=cfg.device, progress=False)
        else:
            try:
                t = load_bias_file(teacher, train)
            except ValueError as e:
                raise click.BadParameter(str(e), param_hint="--teacher") from None
        side["teacher_probs"] = t
        teacher_info["train_accuracy"] = float((np.asarray(t).argmax(1) == y).mean())
    cfg = type(cfg).from_dict({**cfg.to_dict(), "loss": engine_loss, "loss_params": params})
    record = {
        "loss": loss,
        "bias": bias,
        "bias_features": None if kind == "file" else bias_features,
        "bias_rescale": x,
        "entropy_weight": params.get("entropy_penalty"),
        "bias_model": info,
        "calibration": calibration,
        "teacher": teacher_info,
        "_train_probs": b.train,  # written to OUT/bias_<split>.jsonl, not to metrics.json
        "_eval_probs": b.eval,
    }
    acc = calibration["train"]["accuracy"]
    ece = calibration["train"]["ece"]
    click.echo(
        f"bias model: train accuracy {acc:.3f}, ECE {ece:.3f}"
        + (f", temperature {calibration['temperature']:.2f}" if calibration["temperature"] else "")
    )
    return cfg, side, record


def record_debiasing(path: Path, record: dict[str, Any]) -> None:
    """Add the 'debiasing' block to a fine-tune's metrics.json (every other key kept)."""
    from spurious.utils.io import atomic_write_json, read_json, to_jsonable

    meta = read_json(path)
    meta["debiasing"] = to_jsonable({k: v for k, v in record.items() if not k.startswith("_")})
    atomic_write_json(path, meta)


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


def write_predictions(model_dir: Path, dataset: Any, path: Path, device: str) -> Path:
    """The model's predicted label names on ``dataset`` as JSONL ``{"id", "prediction"}``."""
    import json

    from spurious.models.finetune import predict_proba
    from spurious.utils.io import atomic_write_text

    names = list(dataset.label_names)
    pred = predict_proba(model_dir, dataset, device=device, progress=False).argmax(1)
    lines = "".join(
        json.dumps({"id": str(i), "prediction": names[int(p)]}) + "\n"
        for i, p in zip(dataset.ids, pred, strict=True)
    )
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_text(path, lines)


def write_probs(dataset: Any, probs: Any, path: Path) -> Path:
    """A bias model's probabilities as JSONL ``{"id": ..., "probs": [...]}``, the format
    of ``--bias file:<path>`` (the training rows' are out-of-fold, before rescaling)."""
    import json

    from spurious.utils.io import atomic_write_text

    lines = "".join(
        json.dumps({"id": str(i), "probs": [round(float(v), 6) for v in row]}) + "\n"
        for i, row in zip(dataset.ids, probs, strict=True)
    )
    return atomic_write_text(path, lines)


def write_rest(rest: Any, path: Path) -> Path:
    """The rows left after the warm-up split, as JSONL with canonical fields and ids."""
    from spurious.utils.io import atomic_write

    cols = ["id", *rest.task.text_fields, "label"]
    frame = rest.frame[[c for c in cols if c in rest.frame]]
    return atomic_write(
        path, lambda p: frame.to_json(p, orient="records", lines=True, force_ascii=False)
    )
