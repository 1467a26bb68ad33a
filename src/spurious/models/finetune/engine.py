"""Fine-tuning for sequence classification on ``transformers.Trainer``, with training dynamics.

:func:`fine_tune` trains a Hugging Face model (all-MiniLM-L6-v2 by default) on one view
of a dataset and writes::

    output_dir/
      model/              config.json (label names), model.safetensors, tokenizer files,
                          spurious_finetune.json (view, max length, data fingerprints)
      dynamics.parquet    one row per example and snapshot (recording.DYNAMICS_COLUMNS)
      metrics.json        config, per-epoch history, final metrics (written last)
      checkpoints/        one per epoch while training (removed after success unless
                          keep_checkpoints); a rerun with resume=True continues from them

The training loop is ``transformers.Trainer``: AdamW with linear warm-up and decay,
mixed precision, gradient accumulation, data parallelism under ``torchrun`` /
``accelerate launch``, checkpoints with optimiser, scheduler and RNG state, resume,
early stopping (``EarlyStoppingCallback`` with ``load_best_model_at_end``). This module
adds what the papers need on top: dynamics for every training and evaluation example
(:mod:`~spurious.models.finetune.recording`), evaluation metrics computed from the same
no-grad pass that records the evaluation split's dynamics (so early stopping costs no
second pass), a progress bar in examples/s, and atomic outputs.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
import random
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from spurious._version import __version__
from spurious.data.dataset import Dataset
from spurious.exceptions import ParameterError, SchemaError, missing_dependency
from spurious.models.finetune.config import FineTuneConfig
from spurious.models.finetune.data import EncodedSplit, PadCollator, encode
from spurious.models.finetune.debias import (
    LOSS_ATTR,
    SIDE_KEYS,
    HeadInput,
    SideInputs,
    SideInputSplit,
    build_loss,
    check_side_inputs,
    detach_loss,
    save_loss,
)
from spurious.models.finetune.inference import MODEL_META, quiet_transformers
from spurious.models.finetune.recording import (
    DynamicsRecorder,
    empty_frame,
    make_callback,
    read_dynamics,
)
from spurious.utils.io import atomic_write, atomic_write_json, read_json, to_jsonable
from spurious.views import get_view

logger = logging.getLogger(__name__)

MODEL_DIR = "model"
DYNAMICS_FILE = "dynamics.parquet"
METRICS_FILE = "metrics.json"
CHECKPOINT_DIR = "checkpoints"
#: Written into checkpoints/ when a fine-tune starts: a resume must match it.
RUN_FILE = "run.json"


@dataclass
class FineTuneResult:
    """What :func:`fine_tune` produced.

    Attributes
    ----------
    output_dir : Path
    model_dir : Path
        The trained model (``output_dir/model``): safetensors weights, config with the
        label names, tokenizer.
    dynamics : pandas.DataFrame
        Columns ``id, split, epoch, p_gold, pred, correct, logits`` (see
        :mod:`~spurious.models.finetune.recording`); empty without recording.
    history : list of dict
        Per epoch: ``epoch, train_loss, train_accuracy, train_mean_p_gold, eval_loss,
        eval_accuracy, train_seconds, dynamics_seconds``.
    metrics : dict
        Final metrics (evaluation accuracy of the kept weights, best epoch, examples/s,
        wall time ...).
    config : FineTuneConfig
    label_names : list of str
    """

    output_dir: Path
    model_dir: Path
    dynamics: pd.DataFrame
    history: list[dict[str, Any]]
    metrics: dict[str, Any]
    config: FineTuneConfig
    label_names: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, output_dir: str | os.PathLike[str]) -> FineTuneResult:
        """Read a finished fine-tune's outputs.

        Examples
        --------
        >>> FineTuneResult.load("runs/train")  # doctest: +SKIP
        """
        out = Path(output_dir)
        meta_path = out / METRICS_FILE
        if not meta_path.is_file():
            raise ParameterError(
                f"The 'output_dir' parameter must be the folder of a finished fine-tune; "
                f"{str(out)!r} has no {METRICS_FILE}."
            )
        meta = read_json(meta_path)
        dyn_path = out / DYNAMICS_FILE
        return cls(
            output_dir=out,
            model_dir=out / MODEL_DIR,
            dynamics=read_dynamics(dyn_path) if dyn_path.is_file() else empty_frame(),
            history=meta.get("history", []),
            metrics=meta.get("metrics", {}),
            config=FineTuneConfig.from_dict(meta.get("config", {})),
            label_names=list(meta.get("label_names", [])),
        )

    def training_dynamics(self) -> Any:
        """The dynamics as :class:`spurious.models.dynamics.TrainingDynamics`."""
        from spurious.models.dynamics import TrainingDynamics

        return TrainingDynamics(
            frame=self.dynamics,
            label_names=list(self.label_names),
            meta={"source": "finetune", "config": self.config.to_dict(), **self.metrics},
        )


# ---------------------------------------------------------------------------------------
# The engine
# ---------------------------------------------------------------------------------------
def fine_tune(
    train: Dataset,
    eval: Dataset | None = None,
    config: FineTuneConfig | None = None,
    output_dir: str | os.PathLike[str] | None = None,
    *,
    progress: bool | None = None,
    resume: bool = False,
    overwrite: bool = False,
    callbacks: Sequence[Any] = (),
    bias_probs: Any = None,
    teacher_probs: Any = None,
) -> FineTuneResult:
    """Fine-tune a transformer for sequence classification on one view of ``train``.

    Parameters
    ----------
    train : Dataset
        Training data (a labelled task: ``nli``, ``pair``, ``text``).
    eval : Dataset, optional
        Held-out split: scored every epoch (dynamics, early stopping, best epoch), never
        trained on. Its label names must equal ``train``'s.
    config : FineTuneConfig, optional
        Hyperparameters (default: :class:`FineTuneConfig()`).
    output_dir : path
        Where the model, dynamics and metrics go (see the module docstring).
    progress : bool, optional
        A progress bar in examples/s (``None``: when stderr is a terminal or a notebook).
    resume : bool, default=False
        Continue an interrupted fine-tune from the last checkpoint in
        ``output_dir/checkpoints`` (same data and config, checked); the final model and
        dynamics equal those of an uninterrupted run (on CPU, bit for bit).
    overwrite : bool, default=False
        Replace a finished fine-tune (or interrupted checkpoints) in ``output_dir``.
    callbacks : sequence of transformers.TrainerCallback
        Added to the Trainer (e.g. to log elsewhere, or to stop early on a condition).
    bias_probs : array of shape (len(train), n_classes), optional
        A bias model's class probabilities for every training example, in ``train``'s
        row order (its ids); read by every ``config.loss`` but ``"plain"``. Each item
        carries its row through the batch collator.
    teacher_probs : array of shape (len(train), n_classes), optional
        A teacher's class probabilities on the training examples (``loss="conf_reg"``).

    Returns
    -------
    FineTuneResult

    Examples
    --------
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> train, dev = make_nli_artifacts(n=300, random_state=0).dataset.split(0.3)
    >>> res = fine_tune(train, dev, FineTuneConfig(epochs=1), "runs/ft")  # doctest: +SKIP
    >>> res.history[0]["eval_accuracy"]  # doctest: +SKIP
    0.71
    >>> res.dynamics.groupby("split").epoch.max().to_dict()  # doctest: +SKIP
    {'eval': 1.0, 'train': 1.0}

    A debiasing objective with a bias model's probabilities of the training rows:

    >>> cfg = FineTuneConfig(epochs=1, loss="poe")
    >>> res = fine_tune(train, dev, cfg, "runs/ft-poe", bias_probs=b_train)  # doctest: +SKIP
    """
    cfg = config if config is not None else FineTuneConfig()
    if not isinstance(cfg, FineTuneConfig):
        raise ParameterError(
            f"The 'config' parameter must be a FineTuneConfig. Got {type(cfg).__name__} instead."
        )
    if output_dir is None:
        raise ParameterError("The 'output_dir' parameter is required (a folder to write to).")
    _check_data(train, eval)
    view = get_view(train.task, cfg.view)
    side = check_side_inputs(cfg.loss, len(train), train.n_classes, bias_probs, teacher_probs)
    out = Path(output_dir)
    ckpt_dir = out / CHECKPOINT_DIR
    run_info = _run_info(train, eval, cfg, side)
    try:
        import torch
        import transformers
    except ImportError as e:
        raise missing_dependency(e.name or "transformers", "encoder", "Fine-tuning") from None
    try:
        import accelerate  # noqa: F401  (transformers.Trainer needs it)
    except ImportError:
        raise missing_dependency("accelerate", "encoder", "Fine-tuning") from None
    last = _prepare_output(out, run_info, resume=resume, overwrite=overwrite)

    from spurious.utils.progress import default_progress

    show = default_progress() if progress is None else bool(progress)
    device, precision = _resolve_hardware(cfg)
    t_start = time.perf_counter()
    with _restored_global_rng():
        # The head's initialisation draws from the global RNG: seed it first.
        transformers.set_seed(cfg.seed)
        tokenizer, model = _load_model(cfg, train.label_names)
        loss_module = None
        if cfg.loss != "plain":
            # A submodule of the model: the optimiser, scheduler and checkpoints include
            # LearnedMixin's gate; detached again before the model is written.
            loss_module = build_loss(cfg.loss, cfg.loss_params, model, cfg.seed)
            setattr(model, LOSS_ATTR, loss_module)
        train_enc = encode(train, view, tokenizer, cfg.max_length)
        eval_enc = None if eval is None else encode(eval, view, tokenizer, cfg.max_length)
        args = _training_args(cfg, ckpt_dir, device, precision, has_eval=eval is not None)
        train_data = SideInputSplit(train_enc, side) if side.items() else train_enc
        trainer = _make_trainer(
            transformers, model, args, tokenizer, train_data, eval_enc, device, cfg, callbacks
        )
        if loss_module is not None:
            trainer.debias_loss = loss_module
            if loss_module.needs_hidden:
                trainer.head_input = HeadInput(model)
            if hasattr(trainer, "loss_is_scaled_for_ga"):
                # Our objectives are batch means: let the Trainer divide by the
                # accumulation steps (it would not for a model that takes loss kwargs).
                trainer.loss_is_scaled_for_ga = False
        recorder = DynamicsRecorder(
            train_enc,
            eval_enc,
            device=device,
            precision=precision,
            batch_size=cfg.inference_batch_size,
            record=cfg.record_dynamics,
            rank=trainer.args.process_index,
            world_size=trainer.args.world_size,
            gather=_gather_fn(trainer),
            progress=show and trainer.is_world_process_zero(),
        )
        trainer.recorder = recorder
        trainer.capture = cfg.record_dynamics and cfg.train_dynamics == "forward"
        trainer.add_callback(
            make_callback(recorder, cfg.dynamics_per_epoch, train_pass=_train_pass(cfg))
        )
        timer = _EpochTimer(recorder)
        trainer.add_callback(timer.callback())
        if show and trainer.is_world_process_zero():
            trainer.add_callback(_progress_callback(trainer, len(train_enc), cfg.epochs))
        if trainer.is_world_process_zero():
            ckpt_dir.mkdir(parents=True, exist_ok=True)
            atomic_write_json(ckpt_dir / RUN_FILE, run_info)
        if last is not None:
            recorder.load(last)
            timer.load(last)
            logger.info("resuming from %s", last)
        # The Trainer's own notes (checkpoint file-system hints, shard-writing bars) are
        # noise around our progress bar; errors still raise.
        with quiet_transformers():
            train_out = trainer.train(resume_from_checkpoint=str(last) if last else None)
    wall = time.perf_counter() - t_start

    if not trainer.is_world_process_zero():
        return FineTuneResult(out, out / MODEL_DIR, recorder.frame(), [], {}, cfg)
    dynamics = recorder.frame()
    history = _history(trainer.state.log_history, dynamics, timer)
    metrics = _final_metrics(trainer, train_out, history, timer, len(train_enc), eval_enc, wall)
    metrics.update(device=device, precision=precision)
    if loss_module is not None:
        metrics.update(loss=cfg.loss, side_inputs=side.digest())
        detach_loss(trainer.model)
        if trainer.head_input is not None:
            trainer.head_input.remove()
    _write_model(trainer, tokenizer, out / MODEL_DIR, cfg, view.name, run_info, loss_module)
    atomic_write(out / DYNAMICS_FILE, lambda p: dynamics.to_parquet(p, index=False))
    atomic_write_json(
        out / METRICS_FILE,
        {
            "config": cfg.to_dict(),
            "view": view.to_dict(),
            "label_names": list(train.label_names),
            "data": run_info["data"],
            "history": history,
            "metrics": metrics,
            "versions": {
                "spurious": __version__,
                "torch": torch.__version__,
                "transformers": transformers.__version__,
            },
        },
    )
    if not cfg.keep_checkpoints:
        shutil.rmtree(ckpt_dir, ignore_errors=True)
    return FineTuneResult(
        out, out / MODEL_DIR, dynamics, history, metrics, cfg, list(train.label_names)
    )


# ---------------------------------------------------------------------------------------
# Pieces of fine_tune
# ---------------------------------------------------------------------------------------
def _check_data(train: Dataset, eval: Dataset | None) -> None:
    for what, ds in (("train", train), ("eval", eval)):
        if ds is not None and not isinstance(ds, Dataset):
            raise ParameterError(
                f"The '{what}' parameter must be a spurious Dataset (spurious.load_dataset). "
                f"Got {type(ds).__name__} instead."
            )
    if not train.task.has_labels:
        raise SchemaError(
            f"Fine-tuning for sequence classification needs class labels; task "
            f"{train.task.name!r} has none."
        )
    if train.n_classes < 2:
        raise SchemaError(
            f"The 'train' dataset must have at least 2 labels; it has {list(train.label_names)}."
        )
    if eval is not None:
        if eval.task.name != train.task.name:
            raise SchemaError(
                f"The 'eval' dataset has task {eval.task.name!r} but 'train' has "
                f"{train.task.name!r}."
            )
        if eval.label_names != train.label_names:
            raise SchemaError(
                f"The 'eval' dataset's label names {list(eval.label_names)} differ from "
                f"'train''s {list(train.label_names)}; load it with "
                "label_names=train.label_names."
            )


def _run_info(
    train: Dataset, eval: Dataset | None, cfg: FineTuneConfig, side: SideInputs | None = None
) -> dict[str, Any]:
    from spurious.features.encoder import resolve_model

    info: dict[str, Any] = {
        "config": cfg.identity(),
        "model": resolve_model(cfg.model)[2],
        "data": {
            "train": train.fingerprint,
            "eval": None if eval is None else eval.fingerprint,
            "n_train": len(train),
            "n_eval": 0 if eval is None else len(eval),
        },
    }
    digest = None if side is None else side.digest()
    if digest is not None:  # absent for plain training: its run.json stays as it was
        info["side_inputs"] = digest
    return info


def _prepare_output(
    out: Path, run_info: dict[str, Any], *, resume: bool, overwrite: bool
) -> Path | None:
    """Check ``out`` before any work; return the checkpoint to resume from, if any."""
    from transformers.trainer_utils import get_last_checkpoint

    ckpt_dir = out / CHECKPOINT_DIR
    finished = (out / METRICS_FILE).is_file()
    last = get_last_checkpoint(str(ckpt_dir)) if ckpt_dir.is_dir() else None
    if overwrite:
        for name in (MODEL_DIR, CHECKPOINT_DIR):
            shutil.rmtree(out / name, ignore_errors=True)
        for name in (DYNAMICS_FILE, METRICS_FILE):
            (out / name).unlink(missing_ok=True)
        return None
    if finished:
        raise ParameterError(
            f"The 'output_dir' {str(out)!r} holds a finished fine-tune; pass overwrite=True "
            "(--force) to replace it, or load it with FineTuneResult.load."
        )
    if last is not None and not resume:
        raise ParameterError(
            f"The 'output_dir' {str(out)!r} holds checkpoints of an interrupted fine-tune; "
            "pass resume=True (--resume) to continue it or overwrite=True (--force) to "
            "start over."
        )
    if last is not None:
        previous = read_json(ckpt_dir / RUN_FILE) if (ckpt_dir / RUN_FILE).is_file() else None
        if previous != to_jsonable(run_info):
            raise ParameterError(
                f"Cannot resume in {str(out)!r}: its checkpoints come from a different "
                "fine-tune (data or config differ). Pass overwrite=True (--force) to start over."
            )
        return Path(last)
    return None


def _resolve_hardware(cfg: FineTuneConfig) -> tuple[str, str]:
    """``(device, precision)``: ``"auto"`` resolved (see FineTuneConfig.precision)."""
    import torch

    from spurious.features.encoder import cpu_supports_bf16, resolve_device

    device = resolve_device(cfg.device)
    on_cuda = torch.device(device).type == "cuda"
    precision = cfg.precision
    if precision == "auto":
        if on_cuda:
            precision = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
        else:
            precision = "bf16" if cpu_supports_bf16() else "fp32"
    if precision == "fp16" and not on_cuda:
        raise ParameterError(
            "The 'precision' parameter 'fp16' needs a CUDA device; use 'bf16' or 'fp32'."
        )
    return device, precision


@contextlib.contextmanager
def _restored_global_rng() -> Iterator[None]:
    """``transformers.Trainer`` seeds the global RNGs (random, numpy, torch); put back the
    caller's state afterwards so a fine-tune does not change a user's random streams."""
    import torch

    py, npy, th = random.getstate(), np.random.get_state(), torch.get_rng_state()  # noqa: NPY002
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    try:
        yield
    finally:
        random.setstate(py)
        np.random.set_state(npy)  # noqa: NPY002  (restoring, not drawing)
        torch.set_rng_state(th)
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)


def _load_model(cfg: FineTuneConfig, label_names: Sequence[str]) -> tuple[Any, Any]:
    import transformers

    from spurious.features.encoder import resolve_model

    path, is_local, _ = resolve_model(cfg.model)
    kwargs: dict[str, Any] = {"local_files_only": True} if is_local else {}
    labels = list(label_names)
    try:
        with quiet_transformers():
            tokenizer = transformers.AutoTokenizer.from_pretrained(path, **kwargs)
            model = transformers.AutoModelForSequenceClassification.from_pretrained(
                path,
                num_labels=len(labels),
                id2label=dict(enumerate(labels)),
                label2id={name: i for i, name in enumerate(labels)},
                # A folder that already has a head for another label count gets a new one.
                ignore_mismatched_sizes=True,
                **kwargs,
            )
    except OSError as e:
        raise ParameterError(f"Could not load the model {cfg.model!r} ({path}): {e}") from e
    logger.info("fine-tuning %s with a new %d-way head", path, len(labels))
    return tokenizer, model


def _training_args(
    cfg: FineTuneConfig,
    ckpt_dir: Path,
    device: str,
    precision: str,
    *,
    has_eval: bool,
) -> Any:
    """``TrainingArguments`` for ``cfg`` on the installed transformers (4.40 ... 5.x)."""
    import torch
    from transformers import TrainingArguments

    params = set(inspect.signature(TrainingArguments).parameters)
    evaluate = has_eval
    save = cfg.save_checkpoints
    best = evaluate and save and cfg.early_stopping_patience is not None
    kw: dict[str, Any] = {
        "output_dir": str(ckpt_dir),
        "num_train_epochs": cfg.epochs,
        "learning_rate": cfg.learning_rate,
        "per_device_train_batch_size": cfg.batch_size,
        "per_device_eval_batch_size": cfg.inference_batch_size,
        "gradient_accumulation_steps": cfg.gradient_accumulation_steps,
        "weight_decay": cfg.weight_decay,
        "max_grad_norm": cfg.max_grad_norm,
        "lr_scheduler_type": "linear",
        "seed": cfg.seed,
        "data_seed": cfg.seed,
        "logging_strategy": "epoch",
        "save_strategy": "epoch" if save else "no",
        "save_total_limit": 1 if save else None,
        "load_best_model_at_end": best,
        "metric_for_best_model": "accuracy" if evaluate else None,
        "greater_is_better": True if evaluate else None,
        "report_to": "none",
        "disable_tqdm": True,  # our own bar counts examples/s (see _progress_callback)
        "dataloader_num_workers": 0,
        "remove_unused_columns": False,  # keep "idx": it names the example of each row
        "bf16": precision == "bf16",
        "fp16": precision == "fp16",
    }
    # Names that changed across transformers releases.
    kw["eval_strategy" if "eval_strategy" in params else "evaluation_strategy"] = (
        "epoch" if evaluate else "no"
    )
    if "train_sampling_strategy" in params:  # transformers >= 5
        kw["train_sampling_strategy"] = "group_by_length" if cfg.group_by_length else "random"
    else:
        kw["group_by_length"] = cfg.group_by_length
    if "warmup_ratio" in params:
        kw["warmup_ratio"] = cfg.warmup_ratio
    else:  # transformers >= 5: a float < 1 is a ratio of the steps
        kw["warmup_steps"] = cfg.warmup_ratio
    if torch.device(device).type == "cpu":
        kw["use_cpu" if "use_cpu" in params else "no_cuda"] = True
    return TrainingArguments(**{k: v for k, v in kw.items() if k in params and v is not None})


def _train_pass(cfg: FineTuneConfig) -> bool:
    return cfg.record_dynamics and cfg.train_dynamics == "pass"


def _make_trainer(
    transformers: Any,
    model: Any,
    args: Any,
    tokenizer: Any,
    train_enc: EncodedSplit | SideInputSplit,
    eval_enc: EncodedSplit | None,
    device: str,
    cfg: FineTuneConfig,
    callbacks: Sequence[Any],
) -> Any:
    import torch

    cls = _trainer_class(transformers.Trainer)
    pad8 = 8 if torch.device(device).type == "cuda" else None  # tensor-core friendly widths
    kw: dict[str, Any] = {
        "model": model,
        "args": args,
        "data_collator": PadCollator(train_enc.pad_id, pad8),
        "train_dataset": train_enc,
        "eval_dataset": eval_enc,
        "callbacks": list(callbacks),
    }
    params = inspect.signature(transformers.Trainer).parameters
    kw["processing_class" if "processing_class" in params else "tokenizer"] = tokenizer
    trainer = cls(**kw)
    # Our bar replaces the library's; its printer would print every log dict.
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    trainer.remove_callback(ProgressCallback)
    trainer.remove_callback(PrinterCallback)
    if eval_enc is not None and cfg.early_stopping_patience is not None:
        trainer.add_callback(
            transformers.EarlyStoppingCallback(early_stopping_patience=cfg.early_stopping_patience)
        )
    return trainer


_TRAINER_CLASSES: dict[type, type] = {}


def _trainer_class(base: type) -> type:
    """``transformers.Trainer`` with the training logits captured and evaluation taken from
    the dynamics pass (built once, lazily, so importing this module needs no torch)."""
    if base in _TRAINER_CLASSES:
        return _TRAINER_CLASSES[base]

    class DynamicsTrainer(base):  # type: ignore[misc, valid-type]
        recorder: DynamicsRecorder | None = None
        capture: bool = False
        examples_seen: int = 0
        #: A debiasing objective (``FineTuneConfig.loss`` other than plain) and, for
        #: LearnedMixin, the capture of the head's input.
        debias_loss: Any = None
        head_input: HeadInput | None = None

        def compute_loss(
            self, model: Any, inputs: dict[str, Any], return_outputs: bool = False, **kw: Any
        ):
            idx = inputs.pop("idx", None)
            side = {k: inputs.pop(k) for k in SIDE_KEYS if k in inputs}
            if self.debias_loss is not None and model.training:
                loss, outputs = self._debiased_loss(model, inputs, side)
            else:  # plain training: the Trainer's own path, unchanged
                loss, outputs = super().compute_loss(model, inputs, return_outputs=True, **kw)
            if idx is not None and model.training:
                self.examples_seen += int(idx.shape[0])
                if self.capture and self.recorder is not None:
                    logits = outputs["logits"] if isinstance(outputs, dict) else outputs[1]
                    self.recorder.capture(idx, logits)
            return (loss, outputs) if return_outputs else loss

        def _debiased_loss(
            self, model: Any, inputs: dict[str, Any], side: dict[str, Any]
        ) -> tuple[Any, Any]:
            labels = inputs.pop("labels")
            outputs = model(**inputs)
            logits = outputs["logits"]
            hidden = self.head_input.pop() if self.head_input is not None else None
            loss = self.debias_loss(
                logits.float(),
                labels,
                hidden=None if hidden is None else hidden.float(),
                **side,
            )
            return loss, outputs

        def evaluate(
            self,
            eval_dataset: Any = None,
            ignore_keys: list[str] | None = None,
            metric_key_prefix: str = "eval",
        ) -> dict[str, float]:
            if eval_dataset is not None or self.recorder is None or self.recorder.eval is None:
                return super().evaluate(eval_dataset, ignore_keys, metric_key_prefix)
            step = self.state.global_step
            found = self.recorder.eval_metrics.get(step)
            if found is None:  # not at a snapshot (e.g. called by hand): score, keep nothing
                found = self.recorder.snapshot(
                    self.model, float(self.state.epoch or 0.0), step, train=False, record=False
                )
            metrics = {f"{metric_key_prefix}_{k}": v for k, v in found.items()}
            metrics["epoch"] = self.state.epoch
            self.log(metrics)
            self.control = self.callback_handler.on_evaluate(
                self.args, self.state, self.control, metrics
            )
            return metrics

    _TRAINER_CLASSES[base] = DynamicsTrainer
    return DynamicsTrainer


def _gather_fn(trainer: Any) -> Any:
    if trainer.args.world_size <= 1:
        return lambda x: x
    from accelerate.utils import gather_object

    return gather_object


class _EpochTimer:
    """Seconds per epoch, split into training and dynamics passes (for the history)."""

    def __init__(self, recorder: DynamicsRecorder) -> None:
        self.recorder = recorder
        self.epochs: dict[int, dict[str, float]] = {}
        self._t0 = 0.0
        self._p0 = 0.0

    def load(self, folder: Path) -> None:
        path = folder / "spurious_timing.json"
        if path.is_file():
            self.epochs = {int(k): v for k, v in read_json(path).items()}

    def callback(self) -> Any:
        from transformers import TrainerCallback

        timer = self

        class EpochTimer(TrainerCallback):
            def on_epoch_begin(self, args: Any, state: Any, control: Any, **kw: Any):
                timer._t0 = time.perf_counter()
                timer._p0 = timer.recorder.pass_seconds

            def on_epoch_end(self, args: Any, state: Any, control: Any, **kw: Any):
                # Runs after the dynamics callback (added earlier), so its pass is included.
                total = time.perf_counter() - timer._t0
                passes = timer.recorder.pass_seconds - timer._p0
                timer.epochs[round(state.epoch)] = {
                    "train_seconds": round(total - passes, 3),
                    "dynamics_seconds": round(passes, 3),
                }

            def on_save(self, args: Any, state: Any, control: Any, **kw: Any):
                folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
                if state.is_world_process_zero and folder.is_dir():
                    atomic_write_json(folder / "spurious_timing.json", timer.epochs)

        return EpochTimer()


def _progress_callback(trainer: Any, n_train: int, epochs: int) -> Any:
    from tqdm.auto import tqdm
    from transformers import TrainerCallback

    class ExamplesProgress(TrainerCallback):
        """One bar over every training example of every epoch, in examples/s."""

        bar: Any = None
        seen: int = 0

        def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any):
            done = min(n_train * epochs, round((state.epoch or 0.0) * n_train))
            self.bar = tqdm(total=n_train * epochs, initial=done, desc="fine-tuning", unit="ex")
            self.seen = trainer.examples_seen

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any):
            if self.bar is not None:
                self.bar.update(trainer.examples_seen - self.seen)
                self.seen = trainer.examples_seen

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any):
            if self.bar is not None and logs:
                shown = {k: f"{v:.4g}" for k, v in logs.items() if k in ("loss", "eval_accuracy")}
                if shown:
                    self.bar.set_postfix(epoch=f"{state.epoch:.2f}", **shown)

        def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any):
            if self.bar is not None:
                self.bar.close()
                self.bar = None

    return ExamplesProgress()


def _history(
    log_history: list[dict[str, Any]],
    dynamics: pd.DataFrame,
    timer: _EpochTimer,
) -> list[dict[str, Any]]:
    """One row per completed epoch: losses from the Trainer's log, accuracies from the
    dynamics and the evaluation passes, seconds from the timer."""
    rows: dict[int, dict[str, Any]] = {}
    for entry in log_history:
        if "epoch" not in entry:
            continue
        e = entry["epoch"]
        if abs(e - round(e)) > 1e-6:
            continue  # sub-epoch entries (several snapshots per epoch) stay in the dynamics
        row = rows.setdefault(round(e), {"epoch": round(e)})
        if "loss" in entry:
            row["train_loss"] = entry["loss"]
        for k in ("eval_loss", "eval_accuracy"):
            if k in entry:
                row[k] = entry[k]
    for e, t in timer.epochs.items():
        rows.setdefault(e, {"epoch": e}).update(t)
    if len(dynamics):
        tr = dynamics[dynamics["split"] == "train"]
        for e, grp in tr.groupby(tr["epoch"].round().astype(int)):
            last = grp[grp["epoch"] == grp["epoch"].max()]
            row = rows.setdefault(int(e), {"epoch": int(e)})
            row["train_accuracy"] = float(last["correct"].mean())
            row["train_mean_p_gold"] = float(last["p_gold"].mean())
    return [rows[e] for e in sorted(rows)]


def _final_metrics(
    trainer: Any,
    train_out: Any,
    history: list[dict[str, Any]],
    timer: _EpochTimer,
    n_train: int,
    eval_enc: EncodedSplit | None,
    wall: float,
) -> dict[str, Any]:
    state = trainer.state
    epochs_done = round(float(state.epoch or 0.0), 6)
    train_seconds = sum(t["train_seconds"] for t in timer.epochs.values())
    pass_seconds = sum(t["dynamics_seconds"] for t in timer.epochs.values())
    metrics: dict[str, Any] = {
        "epochs_trained": epochs_done,
        "global_steps": int(state.global_step),
        "n_train": n_train,
        "n_eval": 0 if eval_enc is None else len(eval_enc),
        "train_loss": train_out.training_loss,
        "train_seconds": round(train_seconds, 3),
        "dynamics_seconds": round(pass_seconds, 3),
        "wall_seconds": round(wall, 3),
        "train_examples_per_s": (
            round(n_train * epochs_done / train_seconds, 2) if train_seconds > 0 else None
        ),
        "stopped_early": epochs_done + 1e-9 < float(trainer.args.num_train_epochs),
    }
    evals = [h for h in history if "eval_accuracy" in h]
    if evals:
        best = max(evals, key=lambda h: h["eval_accuracy"])
        kept = best if trainer.args.load_best_model_at_end else evals[-1]
        metrics.update(
            eval_accuracy=kept["eval_accuracy"],
            eval_loss=kept.get("eval_loss"),
            best_epoch=best["epoch"],
            kept_epoch=kept["epoch"],
        )
    return metrics


def _write_model(
    trainer: Any,
    tokenizer: Any,
    path: Path,
    cfg: FineTuneConfig,
    view: str,
    run_info: dict,
    loss_module: Any = None,
) -> None:
    """Save the kept weights (safetensors), config and tokenizer into ``path`` atomically:
    written to a temporary sibling folder, then swapped in."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        with quiet_transformers():
            trainer.model.save_pretrained(str(tmp), safe_serialization=True)
        tokenizer.save_pretrained(str(tmp))
        if loss_module is not None:  # LearnedMixin's gate (not part of the classifier)
            save_loss(loss_module, tmp)
        atomic_write_json(
            tmp / MODEL_META,
            {
                "view": view,
                "max_length": cfg.max_length,
                "config": cfg.to_dict(),
                "base_model": run_info["model"],
                "data": run_info["data"],
                "spurious": __version__,
            },
        )
        old = None
        if path.exists():
            old = path.with_name(f".{path.name}.old-{os.getpid()}")
            os.replace(path, old)
        os.replace(tmp, path)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
