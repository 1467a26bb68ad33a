"""The null of partial-input cartography: both maps again with the labels permuted.

Every (permutation draw, view) pair is an independent training of the fast path on the
run's feature matrices, so the ``2 * null_permutations`` trainings are one map over an
executor (:mod:`spurious.execution`): :func:`null_confidence` is the task, a pure
function of the draw, the view and the shared inputs, so every executor gives the same
numbers. Multiple-choice items keep their own null
(:func:`~spurious.detectors.cartography.mcq.mc_null_spearman`), one draw after another.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from spurious.detectors.cartography import mcq
from spurious.detectors.cartography.stats import spearman_or_none
from spurious.execution import Executor
from spurious.models.dynamics import (
    TrainingDynamics,
    cartography_stats,
    crossfit_dynamics,
    probe_dynamics,
)

if TYPE_CHECKING:  # pragma: no cover
    from spurious.context import RunContext
    from spurious.data.dataset import Dataset
    from spurious.detectors.cartography.settings import CartographySettings

__all__ = ["null_confidence", "null_spearmans", "permuted_labels"]


def permuted_labels(
    seed: int, draw: int, y_train: np.ndarray, y_eval: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray | None]:
    """The labels of null draw ``draw``: both splits permuted by one generator seeded with
    ``(seed, 7, draw)``, the same for every view of the draw.

    Examples
    --------
    >>> a, _ = permuted_labels(0, 1, np.arange(5), None)
    >>> sorted(a.tolist()), a.tolist() == permuted_labels(0, 1, np.arange(5), None)[0].tolist()
    ([0, 1, 2, 3, 4], True)
    """
    rng = np.random.default_rng([seed, 7, draw])
    y_tr = rng.permutation(y_train)
    return y_tr, None if y_eval is None else rng.permutation(y_eval)


def null_confidence(item: tuple[int, str], shared: dict[str, Any]) -> np.ndarray:
    """The executor task: confidence of the scored examples in the map of ``view`` when the
    probe learns the labels of draw ``draw`` (``item = (draw, view)``).

    ``shared`` holds the feature matrices by view (``X``), the labels and ids of both
    splits, the scored split and ids, the probe's options (a progress bar's label gets
    ``draw + 1`` of ``n_draws`` and the view), ``held_out_folds`` and ``n_draws``.
    """
    draw, view = item
    X_train, X_eval = shared["X"][view]
    y_train, y_eval = permuted_labels(shared["seed"], draw, shared["y_train"], shared["y_eval"])
    options = shared["options"]
    if options.get("progress"):  # which of the trainings this bar counts
        n = shared.get("n_draws")
        options = {**options, "progress": f"{options['progress']} {draw + 1}/{n} ({view})"}
    if shared["held_out_folds"] is not None:
        frame = crossfit_dynamics(
            X_train,
            y_train,
            n_folds=shared["held_out_folds"],
            ids=shared["train_ids"],
            executor="local",  # already one task of an executor
            **options,
        )
    else:
        frame = probe_dynamics(
            X_train,
            y_train,
            X_eval,
            y_eval,
            train_ids=shared["train_ids"],
            eval_ids=shared["eval_ids"],
            **options,
        )
    dyn = TrainingDynamics(frame, shared["label_names"])
    stats = cartography_stats(dyn, shared["split"]).set_index("id")
    return stats.loc[shared["scored_ids"], "confidence"].to_numpy(dtype=np.float64)


def null_spearmans(
    analysis: CartographySettings,
    ctx: RunContext,
    views: tuple[str, str],
    split: str,
    scored: Dataset,
    executor: Executor,
) -> list[float]:
    """Spearman of the full and partial maps' confidence for each of the analysis'
    ``null_permutations`` draws (undefined ones left out), the trainings run on
    ``executor``."""
    draws = range(analysis.null_permutations)
    if ctx.train.task.multiple_choice:
        nulls = [mcq.mc_null_spearman(analysis, ctx, views, split, scored, b) for b in draws]
        return [r for r in nulls if r is not None]
    held_out = analysis.held_out_folds
    with_eval = ctx.eval is not None and held_out is None
    X = {
        view: (
            ctx.features(analysis.features, view, split="train"),
            ctx.features(analysis.features, view, split="eval") if with_eval else None,
        )
        for view in views
    }
    shown = ctx.progress and not executor.remote
    shared = {
        "X": X,
        "y_train": ctx.train.labels,
        "y_eval": None if ctx.eval is None else ctx.eval.labels,
        "train_ids": ctx.train.ids,
        "eval_ids": None if ctx.eval is None else ctx.eval.ids,
        "label_names": list(ctx.train.label_names),
        "split": split,
        "scored_ids": [str(i) for i in scored.ids],
        "seed": 0 if analysis.random_state is None else analysis.random_state,
        "held_out_folds": held_out,
        "n_draws": analysis.null_permutations,
        "options": {
            "model": analysis.model or "mlp",
            "epochs": 10 if analysis.epochs is None else analysis.epochs,
            "n_classes": ctx.train.n_classes,
            "random_state": analysis.random_state,
            "progress": "cartography: null map" if shown else None,
            **(analysis.train_options or {}),
            "record_logits": False,  # the null reads confidence only
        },
    }
    items = [(b, view) for b in draws for view in views]
    # Each training is a 1-thread fit on the shared matrices, seeded by its draw: on a
    # local executor they run side by side, one per core (the same numbers as one after
    # another: tests/test_cartography.py).
    confidence = executor.map(
        null_confidence, items, shared=executor.put(shared), side_by_side=True
    )
    pairs = zip(confidence[0::2], confidence[1::2], strict=True)
    return [r for a, b in pairs if (r := spearman_or_none(a, b)) is not None]
