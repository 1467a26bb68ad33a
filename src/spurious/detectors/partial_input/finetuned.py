"""Fine-tuned conditions of ``partial_input`` (``model="finetune"``): models, TRA, summary.

:func:`fine_tuned_probabilities` fine-tunes one model per condition (the run's
``trained_model`` artifacts) and predicts the evaluation split;
:func:`token_relevance_agreement` compares the full-input model's token relevance with
each one-field partial-input model's (paper 003 Sec. 3.1, Eq. 9-10);
:func:`model_summary` is what the report shows of each model.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from spurious.context import RunContext
from spurious.stats.bootstrap import bootstrap_interval
from spurious.views import View

if TYPE_CHECKING:  # the protocol the analysis passing itself satisfies
    from spurious.detectors.partial_input.settings import PartialInputSettings

logger = logging.getLogger(__name__)


def fine_tuned_probabilities(
    analysis: PartialInputSettings, ctx: RunContext, views: list[View]
) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """One fine-tuned model per view (the run's ``trained_model`` artifacts) and its
    class probabilities on the evaluation split."""
    from spurious.models.finetune import predict_proba

    probas: dict[str, np.ndarray] = {}
    trained: dict[str, Any] = {}
    for view in views:
        res = ctx.artifact("trained_model", view=view.name, **analysis.finetune_config(view.name))
        trained[view.name] = res
        probas[view.name] = predict_proba(
            res.model_dir, ctx.split("eval"), view, progress=ctx.progress
        )
        logger.info(
            "partial_input: fine-tuned %s model, evaluation accuracy %.3f",
            view.name,
            float((probas[view.name].argmax(1) == ctx.split("eval").labels).mean()),
        )
    return probas, trained


def token_relevance_agreement(
    analysis: PartialInputSettings,
    ctx: RunContext,
    views: list[View],
    trained: dict[str, Any],
    scores: pd.DataFrame,
    metrics: dict[str, float],
) -> dict[str, Any]:
    """Token relevance agreement (Eq. 9-10) of the full-input model with each one-field
    partial-input model, on all or a seeded sample of the evaluation examples."""
    from spurious.models.finetune.attribution import relevance_agreement, token_relevance

    evaluate = ctx.split("eval")
    full_view = views[0]
    n = len(evaluate)
    rows = np.arange(n)
    if analysis.tra_examples is not None and analysis.tra_examples < n:
        seed = analysis.finetune_config("full")["seed"]
        rows = np.sort(np.random.default_rng(seed).choice(n, analysis.tra_examples, replace=False))
    comparable = [
        v
        for v in views[1:]
        if len(full_view.fields) <= 2 and len(v.fields) == 1 and v.fields[0] in full_view.fields
    ]
    if not comparable:
        return {}
    start = time.perf_counter()
    kw: dict[str, Any] = dict(rows=rows, progress=ctx.progress, mode=analysis.tra_mode)
    full = token_relevance(trained[full_view.name].model_dir, evaluate, full_view, **kw)
    out: dict[str, Any] = {
        "n_scored": len(rows),
        "alignment": analysis.tra_alignment,
        "mode": analysis.tra_mode,
    }
    for view in comparable:
        part = token_relevance(trained[view.name].model_dir, evaluate, view, **kw)
        tra = relevance_agreement(full, part, alignment=analysis.tra_alignment)
        column = np.full(n, np.nan)
        column[rows] = tra
        scores[f"tra_{view.name}"] = column
        ok = tra[~np.isnan(tra)]
        if len(ok):
            est, lo, hi = bootstrap_interval(
                lambda x, axis=-1: x.mean(axis=axis),
                [ok],
                n_resamples=analysis.n_resamples,
                confidence=analysis.confidence,
                random_state=analysis.random_state,
            )
        else:
            est = lo = hi = float("nan")
        key = f"tra_{view.name}"
        metrics[key], metrics[f"{key}_ci_low"], metrics[f"{key}_ci_high"] = est, lo, hi
    metrics["n_tra"] = float(len(rows))
    out["seconds"] = round(time.perf_counter() - start, 2)
    return out


def model_summary(result: Any) -> dict[str, Any]:
    """What the report shows of one fine-tuned condition model."""
    m = result.metrics
    return {
        "model": result.config.model,
        "epochs_trained": m.get("epochs_trained"),
        "train_seconds": m.get("train_seconds"),
        "folder": str(result.output_dir),
    }
