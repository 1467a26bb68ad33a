"""A lean single-process training loop: what :func:`fine_tune` runs on a GPU.

``transformers.Trainer`` is built for every case (callbacks, many processes, logging,
every optimiser); on a small model its bookkeeping, not the GPU, sets the pace. This loop
does the same optimisation with nothing around it:

- AdamW with the Trainer's parameter groups (no weight decay on biases and norms),
  fused; linear warm-up and decay (``transformers.get_linear_schedule_with_warmup``,
  the Trainer's warm-up rule ``ceil(ratio * steps)``); gradient clipping; gradient
  accumulation; autocast, with a gradient scaler for fp16;
- length-grouped batches from ``transformers``' own ``LengthGroupedSampler`` (a random
  permutation otherwise), epoch ``e``'s order drawn as the Trainer loop draws it: from
  ``(FineTuneConfig.seed, e)`` (:func:`~spurious.models.finetune.data.epoch_generator`;
  the random permutation from ``seed + e``, accelerate's seedable sampler's rule);
- no host synchronisation inside an epoch: the loss is summed on the device, the
  training logits stay on the device until the epoch ends (the
  :class:`~spurious.models.finetune.recording.DynamicsRecorder` is shared with the
  Trainer path), and each batch is padded on the host and copied ahead of its step;
- the same evaluation snapshots, early stopping (patience on the evaluation accuracy;
  the best epoch's weights are kept) and an atomic checkpoint per epoch (weights,
  optimiser, scheduler, scaler, RNG streams, dynamics), so an interrupted run resumes to
  the same result.

It does not run ``transformers.TrainerCallback`` objects and is single-process; those
cases use the Trainer (``FineTuneConfig.loop``). The two loops draw the same batch
order but different dropout masks from the same seed, so their results agree within seed
noise, not bit for bit (``bench/bench_finetune_gpu.py`` measures both); without dropout
they are the same optimisation (``tests/test_finetune_lean.py``).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Any

from spurious.models.finetune.config import FineTuneConfig
from spurious.models.finetune.data import EncodedSplit, PadCollator, epoch_generator
from spurious.models.finetune.debias import HeadInput
from spurious.models.finetune.job import TrainingJob
from spurious.models.finetune.lean_state import (
    LeanState,
    Optimisation,
    load_checkpoint,
    save_checkpoint,
)
from spurious.models.finetune.outputs import LEAN_STATE, RUN_FILE
from spurious.models.finetune.recording import DynamicsRecorder
from spurious.models.finetune.trainer import epoch_history, summary_metrics
from spurious.models.runtime import amp_context
from spurious.utils.io import atomic_write_json, read_json

logger = logging.getLogger(__name__)


@dataclass
class LeanOutcome:
    """What :func:`train_lean` leaves: the state, and whether the best epoch was kept."""

    state: LeanState
    keep_best: bool

    @property
    def train_loss(self) -> float:
        return self.state.loss_sum / max(self.state.loss_batches, 1)


def decay_parameter_names(model: Any) -> set[str]:
    """Names of the parameters that get weight decay: the Trainer's own rule
    (``Trainer.get_decay_parameter_names``: not inside a LayerNorm, not a bias or a
    norm's weight), through the same ``transformers`` helper."""
    import torch
    from transformers.trainer_pt_utils import get_parameter_names

    patterns = [r"bias", r"layernorm", r"rmsnorm", r"(?:^|\.)norm(?:$|\.)", r"_norm(?:$|\.)"]
    return set(get_parameter_names(model, [torch.nn.LayerNorm], patterns))


def steps_per_epoch(n_train: int, cfg: FineTuneConfig) -> int:
    """Optimiser steps per epoch, the Trainer's count (transformers 5): every
    ``gradient_accumulation_steps`` batches, and one more over a trailing partial group.

    Examples
    --------
    >>> steps_per_epoch(119, FineTuneConfig(batch_size=8, gradient_accumulation_steps=2))
    8
    """
    batches = math.ceil(n_train / cfg.batch_size)
    return max(1, math.ceil(batches / cfg.gradient_accumulation_steps))


def run_lean(job: TrainingJob) -> tuple[Any, list[dict[str, Any]], dict[str, Any]]:
    """:func:`train_lean` with its recorder, run file and summary: ``(dynamics frame,
    history per epoch, final metrics)``, in the shapes the Trainer loop gives."""
    cfg = job.cfg
    recorder = DynamicsRecorder(
        job.train_enc,
        job.eval_enc,
        device=job.device,
        precision=job.precision,
        batch_size=cfg.inference_batch_size,
        record=cfg.record_dynamics,
        progress=job.progress,
    )
    epoch_times: dict[int, dict[str, float]] = {}
    job.ckpt_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(job.ckpt_dir / RUN_FILE, job.run_info)
    if job.resume_from is not None:
        logger.info("resuming from %s", job.resume_from)
    outcome = train_lean(job, recorder, epoch_times)
    wall = time.perf_counter() - job.t_start
    dynamics = recorder.frame()
    history = epoch_history(outcome.state.log_history, dynamics, epoch_times)
    metrics = summary_metrics(
        epochs_done=float(outcome.state.epochs_done),
        global_steps=outcome.state.global_step,
        num_epochs=float(cfg.epochs),
        train_loss=outcome.train_loss,
        keep_best=outcome.keep_best,
        history=history,
        epoch_times=epoch_times,
        n_train=len(job.train_enc),
        eval_enc=job.eval_enc,
        wall=wall,
    )
    return dynamics, history, metrics


def train_lean(
    job: TrainingJob,
    recorder: DynamicsRecorder,
    epoch_times: dict[int, dict[str, float]],
) -> LeanOutcome:
    """Train ``job.model`` in place on ``job.train_enc`` (see the module docstring).

    ``epoch_times`` receives ``{epoch: {"train_seconds", "dynamics_seconds"}}``; the
    ``recorder`` the dynamics. On return the model holds the kept weights (the best
    epoch's with early stopping, else the last).
    """
    import torch

    cfg, model, eval_enc, ckpt_dir = job.cfg, job.model, job.eval_enc, job.ckpt_dir
    model.to(torch.device(job.device))
    model.train()
    spe = steps_per_epoch(len(job.train_enc), cfg)
    opt = _make_optimisation(cfg, model, spe * cfg.epochs, job.precision)
    state = LeanState()
    keep_best = eval_enc is not None and cfg.early_stopping_patience is not None
    best_weights: dict[str, Any] | None = None
    if job.resume_from is not None:
        best_weights = load_checkpoint(job.resume_from, model, opt, recorder, epoch_times)
        state = LeanState(**read_json(job.resume_from / LEAN_STATE))
    run = _Run.build(job)
    train_pass = cfg.record_dynamics and cfg.train_dynamics == "pass"
    bar = _bar(job.progress, len(job.train_enc), cfg.epochs, state.epochs_done)
    try:
        while state.epochs_done < cfg.epochs and not state.stopped_early:
            t0, p0 = time.perf_counter(), recorder.pass_seconds
            epoch_loss = _train_epoch(cfg, run, opt, state, recorder, spe, train_pass, bar)
            state.epochs_done += 1
            state.log_history.append({"epoch": float(state.epochs_done), "loss": epoch_loss})
            if recorder.record:
                recorder.flush_forward(state.epochs_done)
            if eval_enc is not None or train_pass:
                recorder.snapshot(
                    model, float(state.epochs_done), state.global_step, train=train_pass
                )
            if eval_enc is not None:
                found = recorder.eval_metrics[state.global_step]
                state.log_history.append(
                    {
                        "epoch": float(state.epochs_done),
                        "eval_loss": found["loss"],
                        "eval_accuracy": found["accuracy"],
                    }
                )
                if bar is not None:
                    bar.set_postfix(epoch=state.epochs_done, loss=f"{epoch_loss:.4g}",
                                    eval_accuracy=f"{found['accuracy']:.4g}")  # fmt: skip
                if keep_best:
                    best_weights = _early_stopping(cfg, state, model, found, best_weights)
            passes = recorder.pass_seconds - p0
            epoch_times[state.epochs_done] = {
                "train_seconds": round(time.perf_counter() - t0 - passes, 3),
                "dynamics_seconds": round(passes, 3),
            }
            if cfg.save_checkpoints:
                save_checkpoint(ckpt_dir, state, model, opt, recorder, epoch_times, best_weights)
    finally:
        if bar is not None:
            bar.close()
        if run.head_input is not None:
            run.head_input.remove()
    if keep_best and best_weights is not None:
        model.load_state_dict(best_weights)
    return LeanOutcome(state, keep_best)


def _make_optimisation(
    cfg: FineTuneConfig, model: Any, total_steps: int, precision: str
) -> Optimisation:
    import torch
    import transformers

    decay = decay_parameter_names(model)
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    groups = [
        {"params": [p for n, p in named if n in decay], "weight_decay": cfg.weight_decay},
        {"params": [p for n, p in named if n not in decay], "weight_decay": 0.0},
    ]
    # Fused: one kernel per step over all parameters (CUDA and CPU), as the Trainer's
    # default optimiser (adamw_torch_fused).
    optimizer = torch.optim.AdamW(groups, lr=cfg.learning_rate, fused=True)
    return Optimisation(
        optimizer,
        transformers.get_linear_schedule_with_warmup(
            optimizer, math.ceil(cfg.warmup_ratio * total_steps), total_steps
        ),
        torch.amp.GradScaler("cuda") if precision == "fp16" else None,
    )


@dataclass
class _Run:
    """What every training step of a fine-tune reads."""

    model: Any
    forward: Any  # the model, or its compiled step
    buckets: tuple[int, ...]  # padded widths of compiled steps (empty: eager)
    split: EncodedSplit
    collate: PadCollator
    loss_module: Any
    head_input: HeadInput | None
    side: dict[str, Any]  # side inputs on the device, by batch key
    device: str
    precision: str
    batch_size: int
    gas: int
    capture: bool

    @classmethod
    def build(cls, job: TrainingJob) -> _Run:
        import torch

        cfg, model, split, loss_module = job.cfg, job.model, job.train_enc, job.loss_module
        on_cuda = torch.device(job.device).type == "cuda"
        needs_hidden = loss_module is not None and loss_module.needs_hidden
        # compile=True: CUDA graphs (torch.compile mode "reduce-overhead") on a GPU,
        # where a step of a small model is bound by the host launching ~600 kernels, not
        # by the GPU (bench/profile_finetune_step.py). Graphs need fixed shapes: widths
        # are padded up to a few buckets and a short last batch runs eagerly. The
        # compiled module shares the model's parameters; the no-grad passes use the
        # eager model.
        forward: Any = model
        buckets: tuple[int, ...] = ()
        if cfg.compile:
            mode = "reduce-overhead" if on_cuda else None
            forward = torch.compile(model, mode=mode, dynamic=False)
            buckets = width_buckets(cfg.max_length)
        return cls(
            model=model,
            forward=forward,
            buckets=buckets,
            split=split,
            collate=PadCollator(split.pad_id, 8 if on_cuda else None),
            loss_module=loss_module,
            head_input=HeadInput(model) if needs_hidden else None,
            side={k: torch.as_tensor(v, device=job.device) for k, v in job.side.items().items()},
            device=job.device,
            precision=job.precision,
            batch_size=cfg.batch_size,
            gas=cfg.gradient_accumulation_steps,
            capture=cfg.record_dynamics and cfg.train_dynamics == "forward",
        )

    def batch(self, rows: list[int]) -> dict[str, Any]:
        import torch

        return _to_device(self.collate, self.split, rows, torch.device(self.device))

    def loss(self, batch: dict[str, Any], n_rows: int) -> tuple[Any, Any, Any]:
        """``(loss, logits, idx)`` of one batch (forward pass only)."""
        import torch

        idx = batch.pop("idx")
        labels = batch.pop("labels")
        graphed = bool(self.buckets) and n_rows == self.batch_size
        if graphed:
            batch = _pad_width(batch, self.buckets, self.split.pad_id)
            torch.compiler.cudagraph_mark_step_begin()
        with amp_context(self.device, self.precision):
            logits = (self.forward if graphed else self.model)(**batch).logits
        if graphed:  # a graph's outputs are overwritten by its next replay
            logits = logits.clone()
        if self.loss_module is None:
            return torch.nn.functional.cross_entropy(logits.float(), labels), logits, idx
        hidden = self.head_input.pop() if self.head_input is not None else None
        loss = self.loss_module(
            logits.float(),
            labels,
            hidden=None if hidden is None else hidden.float(),
            **{k: v[idx] for k, v in self.side.items()},
        )
        return loss, logits, idx


def _train_epoch(
    cfg: FineTuneConfig,
    run: _Run,
    opt: Optimisation,
    state: LeanState,
    recorder: DynamicsRecorder,
    spe: int,
    train_pass: bool,
    bar: Any,
) -> float:
    """One epoch of steps; returns its mean step loss, the Trainer's logged loss (the
    epoch's one host sync)."""
    import torch

    epoch = state.epochs_done  # 0-based index of the epoch being trained
    order = _epoch_order(run.split, cfg, epoch)
    batches = [order[i : i + cfg.batch_size] for i in range(0, len(order), cfg.batch_size)]
    per_epoch = cfg.dynamics_per_epoch
    targets = {round(j * spe / per_epoch) for j in range(1, per_epoch)} - {0, spe}
    loss_sum = torch.zeros((), device=run.device)
    step_in_epoch = 0
    nxt = run.batch(batches[0])
    # A trailing partial group of batches is one more step, its loss the mean over the
    # batches it has (as the Trainer's current_gradient_accumulation_steps).
    full = len(batches) - len(batches) % run.gas
    for b, rows in enumerate(batches):
        batch = nxt
        if b + 1 < len(batches):  # pad and copy the next batch while this one runs
            nxt = run.batch(batches[b + 1])
        loss, logits, idx = run.loss(batch, len(rows))
        scaled = loss / (run.gas if b < full else len(batches) - full)
        (opt.scaler.scale(scaled) if opt.scaler is not None else scaled).backward()
        loss_sum += scaled.detach()  # a step's sum is its batches' mean loss
        if run.capture:
            recorder.capture(idx, logits)
        if (b + 1) % run.gas == 0 or b + 1 == len(batches):
            _optimizer_step(run.model, opt, cfg.max_grad_norm)
            state.global_step += 1
            step_in_epoch += 1
            if step_in_epoch in targets:
                recorder.snapshot(
                    run.model, epoch + step_in_epoch / spe, state.global_step, train=train_pass
                )
        if bar is not None:
            bar.update(len(rows))
    # The Trainer's logged loss: the mean over the epoch's optimiser steps.
    epoch_loss = float(loss_sum) / step_in_epoch
    state.loss_sum += epoch_loss * step_in_epoch
    state.loss_batches += step_in_epoch  # (steps: the name stays for old checkpoints)
    return epoch_loss


def _epoch_order(split: EncodedSplit, cfg: FineTuneConfig, epoch: int) -> list[int]:
    """The rows of (0-based) epoch ``epoch`` in training order, as the Trainer loop
    draws them (:class:`~spurious.models.finetune.trainer.EpochSeededSampler`; a random
    order as accelerate's ``SeedableRandomSampler``: ``randperm`` seeded ``seed + e``)."""
    import torch

    if cfg.group_by_length:
        from transformers.trainer_pt_utils import LengthGroupedSampler

        sampler = LengthGroupedSampler(
            cfg.batch_size * cfg.gradient_accumulation_steps,
            lengths=split.lengths.tolist(),
            generator=epoch_generator(cfg.seed, epoch),
        )
        return list(sampler)
    generator = torch.Generator().manual_seed(cfg.seed + epoch)
    return torch.randperm(len(split), generator=generator).tolist()


def width_buckets(max_length: int) -> tuple[int, ...]:
    """Padded widths of compiled steps: powers of two from 32, then ``max_length``.

    Examples
    --------
    >>> width_buckets(128)
    (32, 64, 128)
    >>> width_buckets(200)
    (32, 64, 128, 200)
    """
    out = [w for w in (32, 64, 128, 256, 512, 1024, 2048) if w < max_length]
    return (*out, max_length)


def _pad_width(batch: dict[str, Any], buckets: tuple[int, ...], pad_id: int) -> dict:
    import torch

    width = batch["input_ids"].shape[1]
    target = next((b for b in buckets if b >= width), width)
    if target == width:
        return batch
    out = {}
    for k, v in batch.items():
        fill = pad_id if k == "input_ids" else 0
        out[k] = torch.nn.functional.pad(v, (0, target - width), value=fill)
    return out


def _to_device(collate: PadCollator, split: EncodedSplit, rows: list[int], device: Any) -> dict:
    batch = collate([split[r] for r in rows])
    if device.type == "cuda":
        return {k: v.pin_memory().to(device, non_blocking=True) for k, v in batch.items()}
    return batch


def _optimizer_step(model: Any, opt: Optimisation, max_norm: float) -> None:
    import torch

    optimizer, scaler = opt.optimizer, opt.scaler
    if scaler is not None:
        scaler.unscale_(optimizer)
    if max_norm > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm, foreach=True)
    if scaler is not None:
        scaler.step(optimizer)
        scaler.update()
    else:
        optimizer.step()
    opt.scheduler.step()
    optimizer.zero_grad(set_to_none=True)


def _early_stopping(
    cfg: FineTuneConfig,
    state: LeanState,
    model: Any,
    found: dict[str, float],
    best_weights: dict[str, Any] | None,
) -> dict[str, Any] | None:
    """The Trainer's EarlyStoppingCallback rule: strictly better accuracy resets the
    count and keeps these weights; ``patience`` epochs without one stop the run."""
    acc = float(found["accuracy"])
    if state.best_accuracy is None or acc > state.best_accuracy:
        state.best_accuracy = acc
        state.best_epoch = state.epochs_done
        state.bad_epochs = 0
        return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
    state.bad_epochs += 1
    if cfg.early_stopping_patience is not None and state.bad_epochs >= cfg.early_stopping_patience:
        state.stopped_early = state.epochs_done < cfg.epochs
    return best_weights


def _bar(progress: bool, n_train: int, epochs: int, done_epochs: int) -> Any:
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(
        total=n_train * epochs, initial=n_train * done_epochs, desc="fine-tuning", unit="ex"
    )
