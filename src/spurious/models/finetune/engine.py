"""Fine-tuning for sequence classification on ``transformers.Trainer``, with training dynamics.

:func:`fine_tune` trains a Hugging Face model (all-MiniLM-L6-v2 by default) on one view
of a dataset and writes the model, the dynamics of every example and the metrics into an
output folder (layout: :mod:`~spurious.models.finetune.outputs`).

The training loop is ``transformers.Trainer`` (or, on a GPU, the lean loop of
:mod:`~spurious.models.finetune.lean`, which does the same optimisation in one process
without the Trainer's per-step bookkeeping; ``FineTuneConfig.loop``): AdamW with linear warm-up and decay,
mixed precision, gradient accumulation, data parallelism under ``torchrun`` /
``accelerate launch``, checkpoints with optimiser, scheduler and RNG state, resume,
early stopping (``EarlyStoppingCallback`` with ``load_best_model_at_end``). This module
adds what the papers need on top: dynamics for every training and evaluation example
(:mod:`~spurious.models.finetune.recording`), evaluation metrics computed from the same
no-grad pass that records the evaluation split's dynamics (so early stopping costs no
second pass), a progress bar in examples/s (both wired in
:mod:`~spurious.models.finetune.trainer`), and atomic outputs.

Here: :func:`fine_tune` and the steps before training (checking the data, the run's
identity, device and precision, the global RNG, loading the model).
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import shutil
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from spurious._version import __version__
from spurious.data.dataset import Dataset
from spurious.exceptions import ParameterError, SchemaError, missing_dependency
from spurious.models.finetune.config import FineTuneConfig
from spurious.models.finetune.data import encode
from spurious.models.finetune.debias import (
    LOSS_ATTR,
    SideInputs,
    build_loss,
    check_side_inputs,
    detach_loss,
)
from spurious.models.finetune.job import TrainingJob
from spurious.models.finetune.lean import run_lean
from spurious.models.finetune.outputs import (
    CHECKPOINT_DIR,
    DYNAMICS_FILE,
    METRICS_FILE,
    MODEL_DIR,
    RUN_FILE,
    FineTuneResult,
    prepare_output,
    write_model,
)
from spurious.models.finetune.trainer import run_trainer
from spurious.models.runtime import (
    cpu_supports_bf16,
    quiet_transformers,
    resolve_device,
    resolve_model,
)
from spurious.models.runtime.loading import check_max_length
from spurious.utils.io import atomic_write, atomic_write_json
from spurious.views import get_view

logger = logging.getLogger(__name__)

__all__ = [
    "CHECKPOINT_DIR",
    "DYNAMICS_FILE",
    "METRICS_FILE",
    "MODEL_DIR",
    "RUN_FILE",
    "FineTuneResult",
    "fine_tune",
]


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
        Added to the Trainer (e.g. to log elsewhere, or to stop early on a condition);
        with ``config.loop="auto"`` they select the Trainer loop.
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
    if Path(output_dir).exists() and not Path(output_dir).is_dir():
        raise ParameterError(
            f"The 'output_dir' parameter {os.fspath(output_dir)!r} is a file; a "
            "fine-tune writes a folder (model, dynamics, metrics). Choose a folder path."
        )
    check_max_length(cfg.model, cfg.max_length)  # before any file is written
    _check_data(train, eval)
    view = get_view(train.task, cfg.view)
    side = check_side_inputs(cfg.loss, len(train), train.n_classes, bias_probs, teacher_probs)
    out = Path(output_dir)
    ckpt_dir = out / CHECKPOINT_DIR
    run_info = _run_info(train, eval, cfg, side)
    torch, transformers = _import_engine()
    device, precision = _resolve_hardware(cfg)
    loop = resolve_loop(cfg, device, callbacks)
    if loop == "lean":  # absent for the Trainer: its run.json stays as it was
        run_info["loop"] = "lean"
    last = prepare_output(out, run_info, resume=resume, overwrite=overwrite)

    from spurious.utils.progress import default_progress

    show = default_progress() if progress is None else bool(progress)
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
        job = TrainingJob(
            cfg=cfg,
            model=model,
            tokenizer=tokenizer,
            train_enc=train_enc,
            eval_enc=eval_enc,
            side=side,
            loss_module=loss_module,
            device=device,
            precision=precision,
            ckpt_dir=ckpt_dir,
            run_info=run_info,
            resume_from=last,
            progress=show,
            t_start=t_start,
        )
        if loop == "lean":
            dynamics, history, metrics = run_lean(job)
            trained = model
        else:
            dynamics, history, metrics, trained, is_main = run_trainer(transformers, job, callbacks)
            if not is_main:  # process 0 writes; return once its outputs exist
                _wait_for_every_process()
                return FineTuneResult(out, out / MODEL_DIR, dynamics, [], {}, cfg)

    metrics.update(device=device, precision=precision, loop=loop)
    if loss_module is not None:
        metrics.update(loss=cfg.loss, side_inputs=side.digest())
        detach_loss(trained)
    write_model(trained, tokenizer, out / MODEL_DIR, cfg, view.name, run_info, loss_module)
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
    _wait_for_every_process()
    return FineTuneResult(
        out, out / MODEL_DIR, dynamics, history, metrics, cfg, list(train.label_names)
    )


def _wait_for_every_process() -> None:
    """A barrier in a data-parallel run (no-op otherwise): the processes but the first
    wait here for process 0 to write the outputs, so ``fine_tune`` returns in each process
    once the model is on disk (a ConfReg teacher's is read next by every process)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        dist.barrier()


def resolve_loop(cfg: FineTuneConfig, device: str, callbacks: Sequence[Any] = ()) -> str:
    """``"lean"`` or ``"trainer"``: the loop ``cfg.loop`` asks for on ``device``.

    ``"auto"`` is lean on a CUDA device in a single process without Trainer callbacks
    (where the Trainer's per-step bookkeeping, not the GPU, sets the pace), else the
    Trainer. An explicit ``"lean"`` that cannot run is an error, not a silent switch.

    Examples
    --------
    >>> resolve_loop(FineTuneConfig(), "cpu")
    'trainer'
    >>> resolve_loop(FineTuneConfig(loop="lean"), "cpu")
    'lean'
    """
    import torch

    world = int(os.environ.get("WORLD_SIZE", "1") or 1)
    if cfg.compile and cfg.loop == "trainer":
        raise ParameterError(
            "FineTuneConfig(compile=True) compiles the lean loop only; it cannot be "
            "combined with loop='trainer'."
        )
    if cfg.compile and cfg.loss in ("learned_mixin", "learned_mixin_h"):
        raise ParameterError(
            f"FineTuneConfig(compile=True) does not support loss={cfg.loss!r} (its gate "
            "reads the head's input through a hook); fine-tune with compile=False."
        )
    if cfg.loop == "trainer":
        return "trainer"
    if cfg.loop == "lean":
        if callbacks:
            raise ParameterError(
                "The 'callbacks' parameter needs FineTuneConfig(loop='trainer' or 'auto'): "
                "the lean loop does not run transformers callbacks."
            )
        if world > 1:
            raise ParameterError(
                f"FineTuneConfig(loop='lean') runs in one process; this is one of {world} "
                "(WORLD_SIZE). Use loop='trainer' or 'auto' under torchrun / accelerate."
            )
        return "lean"
    on_cuda = torch.device(device).type == "cuda"
    if cfg.compile or (on_cuda and not callbacks and world == 1):
        if callbacks or world > 1:
            raise ParameterError(
                "FineTuneConfig(compile=True) needs the lean loop, which runs in one "
                "process without transformers callbacks."
            )
        return "lean"
    return "trainer"


def _import_engine() -> tuple[Any, Any]:
    """``(torch, transformers)``; a missing one (or accelerate) names the extra."""
    try:
        import torch
        import transformers
    except ImportError as e:
        raise missing_dependency(e.name or "transformers", "encoder", "Fine-tuning") from None
    try:
        import accelerate  # noqa: F401  (transformers.Trainer needs it)
    except ImportError:
        raise missing_dependency("accelerate", "encoder", "Fine-tuning") from None
    return torch, transformers


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


def _resolve_hardware(cfg: FineTuneConfig) -> tuple[str, str]:
    """``(device, precision)``: ``"auto"`` resolved (see FineTuneConfig.precision)."""
    import torch

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
