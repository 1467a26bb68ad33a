"""``transformers.Trainer`` underneath :func:`~spurious.models.finetune.fine_tune`.

:func:`build_trainer` puts together what the engine trains with: the
``TrainingArguments`` of a :class:`~spurious.models.finetune.FineTuneConfig` on the
installed transformers (:func:`_training_args`), a ``Trainer`` subclass that captures the
training logits, computes a debiasing objective and takes its evaluation metrics from the
dynamics pass (:func:`_trainer_class`), the dynamics recorder and its callback, the
per-epoch timer and the examples/s progress bar. :func:`epoch_history` and
:func:`final_metrics` read the per-epoch history and the final metrics back from the
trainer's state. transformers is imported only when a function runs.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from spurious.models.finetune.config import FineTuneConfig
from spurious.models.finetune.data import EncodedSplit, PadCollator, epoch_generator
from spurious.models.finetune.debias import SIDE_KEYS, HeadInput, SideInputs, SideInputSplit
from spurious.models.finetune.job import TrainingJob
from spurious.models.finetune.outputs import RUN_FILE
from spurious.models.finetune.recording import DynamicsRecorder, make_callback
from spurious.models.runtime import quiet_transformers
from spurious.utils.io import atomic_write_json, read_json

logger = logging.getLogger(__name__)


def run_trainer(
    transformers: Any, job: TrainingJob, callbacks: Sequence[Any]
) -> tuple[pd.DataFrame, list[dict[str, Any]], dict[str, Any], Any, bool]:
    """Train on the Trainer loop: ``(dynamics, history, metrics, trained model,
    is_main)``; in the processes other than the first of a data-parallel run the
    history and metrics are empty (only the first one writes)."""
    trainer, recorder, timer = build_trainer(
        transformers,
        job.cfg,
        job.model,
        job.tokenizer,
        job.train_enc,
        job.eval_enc,
        side=job.side,
        loss_module=job.loss_module,
        device=job.device,
        precision=job.precision,
        ckpt_dir=job.ckpt_dir,
        callbacks=callbacks,
        progress=job.progress,
    )
    if trainer.is_world_process_zero():
        job.ckpt_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_json(job.ckpt_dir / RUN_FILE, job.run_info)
    last = job.resume_from
    if last is not None:
        recorder.load(last)
        timer.load(last)
        logger.info("resuming from %s", last)
    # The Trainer's own notes (checkpoint file-system hints, shard-writing bars) are noise
    # around our progress bar; errors still raise.
    with quiet_transformers():
        train_out = trainer.train(resume_from_checkpoint=str(last) if last else None)
    wall = time.perf_counter() - job.t_start
    if trainer.head_input is not None:
        trainer.head_input.remove()
    if not trainer.is_world_process_zero():
        return recorder.frame(), [], {}, trainer.model, False
    dynamics = recorder.frame()
    history = epoch_history(trainer.state.log_history, dynamics, timer.epochs)
    n_train = len(job.train_enc)
    metrics = final_metrics(trainer, train_out, history, timer, n_train, job.eval_enc, wall)
    return dynamics, history, metrics, trainer.model, True


def build_trainer(
    transformers: Any,
    cfg: FineTuneConfig,
    model: Any,
    tokenizer: Any,
    train_enc: EncodedSplit,
    eval_enc: EncodedSplit | None,
    *,
    side: SideInputs,
    loss_module: Any,
    device: str,
    precision: str,
    ckpt_dir: Path,
    callbacks: Sequence[Any],
    progress: bool,
) -> tuple[Any, DynamicsRecorder, _EpochTimer]:
    """``(trainer, recorder, timer)``: the Trainer of a fine-tune with its dynamics
    recorder, epoch timer and (with ``progress``) progress bar attached."""
    args = _training_args(cfg, ckpt_dir, device, precision, has_eval=eval_enc is not None)
    train_data = SideInputSplit(train_enc, side) if side.items() else train_enc
    trainer = _make_trainer(
        transformers, model, args, tokenizer, train_data, eval_enc, device, cfg, callbacks
    )
    # Every objective here is a batch mean (the model's own cross-entropy ignores
    # ``num_items_in_batch``; a debiasing loss is ours): the Trainer must divide it by the
    # accumulation steps and not multiply it by the process count, which it does for a
    # model whose forward takes loss kwargs (BERT's does, and drops them). Unset, the
    # loss and its gradients came out gradient_accumulation_steps x processes too large.
    # (The Trainer derives its loss_is_scaled_for_ga from this: False.)
    trainer.model_accepts_loss_kwargs = False
    if loss_module is not None:
        trainer.debias_loss = loss_module
        if loss_module.needs_hidden:
            trainer.head_input = HeadInput(model)
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
        progress=progress and trainer.is_world_process_zero(),
    )
    trainer.recorder = recorder
    trainer.capture = cfg.record_dynamics and cfg.train_dynamics == "forward"
    trainer.add_callback(
        make_callback(recorder, cfg.dynamics_per_epoch, train_pass=_train_pass(cfg))
    )
    timer = _EpochTimer(recorder)
    trainer.add_callback(timer.callback())
    if progress and trainer.is_world_process_zero():
        trainer.add_callback(_progress_callback(trainer, len(train_enc), cfg.epochs))
    return trainer, recorder, timer


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
        # Data-parallel runs: every parameter takes part in every step, LearnedMixin's
        # gate too, but outside the model's forward, where DDP's search for unused
        # parameters marks it unused and then fails when its gradient arrives ("marked
        # ready twice"); the search also costs a graph traversal per step.
        "ddp_find_unused_parameters": False,
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

        def _get_train_sampler(self, *args: Any, **kw: Any) -> Any:
            sampler = super()._get_train_sampler(*args, **kw)
            from transformers.trainer_pt_utils import LengthGroupedSampler

            if isinstance(sampler, LengthGroupedSampler):
                seed = self.args.data_seed
                return EpochSeededSampler(sampler, self.args.seed if seed is None else seed)
            return sampler

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


class EpochSeededSampler:
    """The Trainer's length-grouped sampler, its shuffle drawn per epoch from ``(seed,
    epoch)``.

    transformers builds ``LengthGroupedSampler`` without a generator, so it shuffles with
    the global torch RNG, which dropout advances differently in each process of a
    data-parallel run: from the second epoch on the processes drew different orders and
    their shards overlapped (measured: 181 and 164 of 225 rows trained in epochs 2 and 3,
    some twice). Here every process draws epoch ``e``'s order from the same seed
    (:func:`~spurious.models.finetune.data.epoch_generator`, as the lean loop does), and
    a resumed epoch redraws the order it was interrupted in. The Trainer (through
    accelerate's data loader) calls :meth:`set_epoch` before each epoch.

    Examples
    --------
    >>> class Base:  # stands in for LengthGroupedSampler: a shuffle from `generator`
    ...     generator = None
    ...     def __iter__(self):
    ...         import torch
    ...         return iter(torch.randperm(5, generator=self.generator).tolist())
    ...     def __len__(self):
    ...         return 5
    >>> a, b = EpochSeededSampler(Base(), seed=0), EpochSeededSampler(Base(), seed=0)
    >>> a.set_epoch(1); b.set_epoch(1)
    >>> list(a) == list(b), sorted(a)
    (True, [0, 1, 2, 3, 4])
    """

    def __init__(self, sampler: Any, seed: int) -> None:
        self.sampler = sampler
        self.seed = int(seed)
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Draw the next iteration's order for ``epoch``."""
        self.epoch = int(epoch)

    def __iter__(self) -> Any:
        self.sampler.generator = epoch_generator(self.seed, self.epoch)
        return iter(self.sampler)

    def __len__(self) -> int:
        return len(self.sampler)


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
                # This process' examples; in a data-parallel run each of the world's
                # processes trains as many (the bar counts the whole run's).
                new = (trainer.examples_seen - self.seen) * max(1, args.world_size)
                self.bar.update(min(new, self.bar.total - self.bar.n))
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


def epoch_history(
    log_history: list[dict[str, Any]],
    dynamics: pd.DataFrame,
    epoch_times: dict[int, dict[str, float]],
) -> list[dict[str, Any]]:
    """One row per completed epoch: losses from the training log (the Trainer's, or the
    lean loop's in the same shape), accuracies from the dynamics and the evaluation
    passes, seconds from ``epoch_times`` (``{epoch: {"train_seconds", ...}}``)."""
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
    for e, t in epoch_times.items():
        rows.setdefault(e, {"epoch": e}).update(t)
    if len(dynamics):
        tr = dynamics[dynamics["split"] == "train"]
        for e, grp in tr.groupby(tr["epoch"].round().astype(int)):
            last = grp[grp["epoch"] == grp["epoch"].max()]
            row = rows.setdefault(int(e), {"epoch": int(e)})
            row["train_accuracy"] = float(last["correct"].mean())
            row["train_mean_p_gold"] = float(last["p_gold"].mean())
    return [rows[e] for e in sorted(rows)]


def final_metrics(
    trainer: Any,
    train_out: Any,
    history: list[dict[str, Any]],
    timer: _EpochTimer,
    n_train: int,
    eval_enc: EncodedSplit | None,
    wall: float,
) -> dict[str, Any]:
    """:func:`summary_metrics` of a Trainer run."""
    state = trainer.state
    return summary_metrics(
        epochs_done=float(state.epoch or 0.0),
        global_steps=int(state.global_step),
        num_epochs=float(trainer.args.num_train_epochs),
        train_loss=train_out.training_loss,
        keep_best=bool(trainer.args.load_best_model_at_end),
        history=history,
        epoch_times=timer.epochs,
        n_train=n_train,
        eval_enc=eval_enc,
        wall=wall,
    )


def summary_metrics(
    *,
    epochs_done: float,
    global_steps: int,
    num_epochs: float,
    train_loss: float,
    keep_best: bool,
    history: list[dict[str, Any]],
    epoch_times: dict[int, dict[str, float]],
    n_train: int,
    eval_enc: EncodedSplit | None,
    wall: float,
) -> dict[str, Any]:
    """The final metrics of a fine-tune (either loop): epochs, steps, seconds,
    examples/s, and the kept epoch's evaluation accuracy."""
    epochs_done = round(epochs_done, 6)
    train_seconds = sum(t["train_seconds"] for t in epoch_times.values())
    pass_seconds = sum(t["dynamics_seconds"] for t in epoch_times.values())
    metrics: dict[str, Any] = {
        "epochs_trained": epochs_done,
        "global_steps": global_steps,
        "n_train": n_train,
        "n_eval": 0 if eval_enc is None else len(eval_enc),
        "train_loss": train_loss,
        "train_seconds": round(train_seconds, 3),
        "dynamics_seconds": round(pass_seconds, 3),
        "wall_seconds": round(wall, 3),
        "train_examples_per_s": (
            round(n_train * epochs_done / train_seconds, 2) if train_seconds > 0 else None
        ),
        "stopped_early": epochs_done + 1e-9 < num_epochs,
    }
    evals = [h for h in history if "eval_accuracy" in h]
    if evals:
        best = max(evals, key=lambda h: h["eval_accuracy"])
        kept = best if keep_best else evals[-1]
        metrics.update(
            eval_accuracy=kept["eval_accuracy"],
            eval_loss=kept.get("eval_loss"),
            best_epoch=best["epoch"],
            kept_epoch=kept["epoch"],
        )
    return metrics
