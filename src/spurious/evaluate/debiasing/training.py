"""One trained model of the ``debiasing`` analysis: a method, a seed, a path.

Every method is trained by the same two functions, whatever its objective: with
``path="fast"`` :func:`fit_fast` trains an MLP on frozen features
(:func:`spurious.models.debias.fast.train_fast`); with ``path="finetune"``
:func:`fit_finetune` fine-tunes a transformer through the cached fine-tuning engine.
Both return the same record (the evaluation predictions and correctness, the training
time and the eval-accuracy curve over epochs), so the measurements do not depend on the
path. :func:`teacher_probs` gives ConfReg its teacher and :func:`resam_rows` gives RESAM
its balanced rows.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from spurious.context import RunContext
from spurious.exceptions import AnalysisError
from spurious.models.debias.fast import train_fast
from spurious.stats.resample import resample_indices

__all__ = ["fit_fast", "fit_finetune", "resam_rows", "teacher_probs"]


def resam_rows(attr: np.ndarray, threshold: float | None, seed: int) -> np.ndarray:
    """RESAM's training rows: :func:`~spurious.stats.resample.resample_indices` at ``threshold``."""
    if threshold is None or not np.isfinite(threshold):
        threshold = float(np.nanmedian(attr))  # no usable eval threshold: balance at the median
    rows, _ = resample_indices(attr, threshold, random_state=seed)
    return rows


def fit_fast(
    X, y, X_eval, y_eval, loss, bias, teacher, rows, opts, seed, loss_params=None
) -> dict[str, Any]:
    """Train one model; eval correctness and the eval-accuracy curve over epochs."""
    start = time.perf_counter()
    model = train_fast(
        X, y, loss=loss, bias_probs=bias, teacher_probs=teacher, sample_weight_rows=rows,
        random_state=seed, eval_data=(X_eval, y_eval), loss_params=loss_params, **opts,
    )  # fmt: skip
    curve = model.eval_accuracy
    pred = model.predict(X_eval)
    return {
        "model": model,
        "pred": pred,
        "correct": (pred == y_eval).astype(float),
        "train_s": time.perf_counter() - start,
        "curve": curve,
    }


def teacher_probs(ctx: RunContext, plain: dict[str, Any], X: Any) -> np.ndarray:
    """ConfReg's teacher: the plain model of the same seed on the training split."""
    if "model_dir" in plain:
        from spurious.models.finetune import predict_proba

        return predict_proba(plain["model_dir"], ctx.train, "full", progress=False)
    return plain["model"].predict_proba(X)


def fit_finetune(
    ctx: RunContext,
    loss: str,
    bias: np.ndarray | None,
    teacher: np.ndarray | None,
    rows: np.ndarray | None,
    config: dict[str, Any],
    seed: int,
    loss_params: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Fine-tune one model (cached on disk); its last epoch's eval correctness and the
    eval-accuracy curve over epochs, from the engine's evaluation dynamics."""
    from spurious.models.finetune import finetune_cached

    train = ctx.train
    if rows is not None:  # RESAM: plain loss on the resampled rows (duplicates kept)
        train = ctx.train.subset(np.asarray(rows), f"{ctx.train.name}[resam]")
    res = finetune_cached(
        train, ctx.eval, view="full", progress=ctx.progress, bias_probs=bias,
        teacher_probs=teacher,
        **{**config, "loss": loss, "loss_params": dict(loss_params or {}), "seed": seed},
    )  # fmt: skip
    dyn = res.dynamics
    ev = dyn[dyn["split"] == "eval"]
    if not len(ev):
        raise AnalysisError(
            "path='finetune' reads the evaluation predictions from the fine-tune's "
            "dynamics; do not set record_dynamics=False in 'finetune'."
        )
    last = ev[ev["epoch"] == ev["epoch"].max()].set_index("id")
    rows = last.loc[list(ctx.eval.ids)]
    curve = [h["eval_accuracy"] for h in res.history if "eval_accuracy" in h]
    return {
        "model_dir": res.model_dir,
        "pred": rows["pred"].to_numpy(dtype=np.int64),
        "correct": rows["correct"].to_numpy(dtype=float),
        "train_s": float(res.metrics.get("train_seconds") or 0.0),
        "curve": curve,
    }
