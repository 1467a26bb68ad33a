"""Cartography of multiple-choice items: views, checks, chance per item and the null.

A multiple-choice item's gold is one of its own options, so its dynamics come from an
option scorer (:func:`spurious.models.dynamics.option_dynamics`, routed by the
``training_dynamics`` provider) and its map differs from a classifier's in three places,
all here:

- **views**: ``full`` (question and options), ``choices_only`` (the options alone: the
  partial input of multiple choice, Balepur et al. 2024, mapped beside the full one by
  default) and ``question_only``;
- **chance is per item**: a uniform guess gives the gold ``1 / k`` on an item of ``k``
  options, so raw confidence ranks 2-option items above 5-option ones for no reason.
  Regions, anti-biased marks and the maps' agreement rank by confidence above chance,
  ``(confidence - 1/k) / (1 - 1/k)``, and the score is ``(1 - confidence) / (1 - 1/k)``
  (1 = at chance). With one ``k`` for every item this ranks exactly as confidence does;
- **the null** permutes gold positions among items with the same number of options
  (:func:`~spurious.models.dynamics.permute_gold_within_counts`), so every permuted gold
  is a real option.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from spurious.artifacts.dynamics import MC_LEXICAL, option_feature_spec
from spurious.context import RunContext
from spurious.data.dataset import Dataset
from spurious.detectors.cartography.stats import spearman_or_none
from spurious.exceptions import AnalysisError, ParameterError
from spurious.features.mcq import MC_VIEWS
from spurious.models.dynamics import (
    TrainingDynamics,
    cartography_stats,
    crossfit_dynamics,
    option_dynamics,
    permute_gold_within_counts,
)

if TYPE_CHECKING:  # the protocol the analysis passing itself satisfies
    from spurious.detectors.cartography.settings import CartographySettings

#: The partial input mapped beside the full one on multiple-choice items.
MC_PARTIAL_VIEW = "choices_only"
#: Why the fast path's map of multiple-choice items is a proxy (shown in the report).
MC_FAST_PATH_NOTE = (
    "The fast path is a proxy: an option scorer ({model}, shared weights over each item's "
    "option blocks, softmax over its own options) trained {epochs} epochs on frozen "
    "{features} option features, not a fine-tuned model. It learns the cues the blocks carry "
    "(length, overlap, position, embeddings), so its easy-to-learn items are those such "
    "cues decide."
)
#: How regions are ranked on multiple-choice items (the report's region rule).
MC_CHANCE_RULE = (
    "Multiple-choice items: ranks use confidence above chance, (confidence - 1/k) / "
    "(1 - 1/k) for an item of k options, so an item is not easy for having few options; "
    "cartography_score = (1 - confidence) / (1 - 1/k), 1 at chance."
)


def n_options(dataset: Dataset) -> np.ndarray:
    """Options per item.

    Examples
    --------
    >>> from spurious.data.synthetic_mcq import make_mcq_artifacts
    >>> n_options(make_mcq_artifacts(n=3, n_options=4).dataset).tolist()
    [4, 4, 4]
    """
    return dataset.frame["options"].map(len).to_numpy(dtype=np.int64)


def item_chance(dataset: Dataset) -> np.ndarray | None:
    """``1 / k`` per multiple-choice item; ``None`` for other tasks (no per-item chance).

    Examples
    --------
    >>> from spurious.data.synthetic_mcq import make_mcq_artifacts
    >>> item_chance(make_mcq_artifacts(n=2, n_options=4).dataset).tolist()
    [0.25, 0.25]
    """
    if not dataset.task.multiple_choice:
        return None
    return 1.0 / n_options(dataset)


def above_chance(confidence: Any, chance: Any) -> np.ndarray:
    """``(confidence - chance) / (1 - chance)``: 0 at chance, 1 when always certain.

    Examples
    --------
    >>> above_chance([0.5, 0.625, 1.0], [0.5, 0.25, 0.2]).tolist()
    [0.0, 0.5, 1.0]
    """
    c = np.asarray(chance, dtype=float)
    return (np.asarray(confidence, dtype=float) - c) / (1.0 - c)


def option_views(analysis: CartographySettings) -> tuple[str, str | None]:
    """``(full, partial)`` views of a multiple-choice map (``partial_view="auto"``:
    ``choices_only``; the same view twice: no partial map)."""
    for name, value in (("view", analysis.view), ("partial_view", analysis.partial_view)):
        if value not in (*MC_VIEWS, *(("auto", None) if name == "partial_view" else ())):
            raise ParameterError(
                f"The {name!r} parameter of Cartography must be one of {list(MC_VIEWS)} on "
                f"multiple-choice items (task 'mcq'); got {value!r}."
            )
    partial = MC_PARTIAL_VIEW if analysis.partial_view == "auto" else analysis.partial_view
    return analysis.view, None if partial == analysis.view else partial


def check_task_features(analysis: CartographySettings, ctx: RunContext) -> None:
    """The path and features fit the task: option features and no fine-tuning on
    multiple-choice items, and ``"lexical"`` (option cues) only there."""
    if not ctx.train.task.multiple_choice:
        if analysis.features == MC_LEXICAL and analysis.path == "fast":
            raise ParameterError(
                f"The 'features' parameter of Cartography is {MC_LEXICAL!r}, the option cues "
                f"of multiple-choice items; task {ctx.train.task.name!r} takes 'bow', 'tfidf', "
                "'minilm' or a model folder."
            )
        return
    if analysis.path == "finetune":
        raise AnalysisError(
            "Cartography with path='finetune' trains a classifier of the text, which does not "
            "score the options of multiple-choice items (task 'mcq'); use path='fast' (an "
            "option scorer) or path='load'."
        )
    if analysis.path == "fast" or analysis.partial_view is not None:
        try:
            option_feature_spec(analysis.features)
        except ParameterError as e:
            raise ParameterError(f"Cartography: {e}") from None


def mc_null_spearman(
    analysis: CartographySettings,
    ctx: RunContext,
    views: tuple[str, str],
    split: str,
    scored: Dataset,
    draw: int,
) -> float | None:
    """Spearman of the two maps' confidence above chance when both option scorers learn
    gold positions permuted among items with the same number of options (draw ``draw``)."""
    seed = 0 if analysis.random_state is None else analysis.random_state
    rng = np.random.default_rng([seed, 7, draw])
    y_train = permute_gold_within_counts(ctx.train.labels, n_options(ctx.train), rng)
    y_eval = (
        None
        if ctx.eval is None
        else permute_gold_within_counts(ctx.eval.labels, n_options(ctx.eval), rng)
    )
    spec = option_feature_spec(analysis.features)
    options: dict[str, Any] = {
        "model": analysis.model or "mlp",
        "epochs": 10 if analysis.epochs is None else analysis.epochs,
        "random_state": analysis.random_state,
        **(analysis.train_options or {}),
    }
    ids = [str(i) for i in scored.ids]
    chance = item_chance(scored)
    confidence = []
    for view in views:
        train = ctx.artifact(
            "option_blocks", features=spec, view=view, split="train", n_components=32
        )
        options["n_features"] = train.n_features
        if ctx.progress:  # which of the 2 x null_permutations trainings runs
            n = analysis.null_permutations
            options["progress"] = f"cartography: null map {draw + 1}/{n} ({view})"
        if analysis.held_out_folds is not None:
            frame = crossfit_dynamics(
                train.X,
                y_train,
                n_folds=analysis.held_out_folds,
                ids=ctx.train.ids,
                maker=option_dynamics,
                **options,
            )
        else:
            held = None
            if ctx.eval is not None:
                held = ctx.artifact(
                    "option_blocks", features=spec, view=view, split="eval", n_components=32
                ).X
            frame = option_dynamics(
                train.X,
                y_train,
                held,
                y_eval,
                train_ids=ctx.train.ids,
                eval_ids=None if ctx.eval is None else ctx.eval.ids,
                **options,
            )
        dyn = TrainingDynamics(frame, list(ctx.train.label_names))
        stats = cartography_stats(dyn, split).set_index("id")
        confidence.append(above_chance(stats.loc[ids, "confidence"].to_numpy(), chance))
    return spearman_or_none(*confidence)


def mc_details(dataset: Dataset) -> dict[str, Any]:
    """What the report says of a multiple-choice map: items per option count, the rule."""
    counts = np.bincount(n_options(dataset))
    return {
        "multiple_choice": {
            "items_per_option_count": {str(k): int(c) for k, c in enumerate(counts) if c},
            "mean_chance": float(item_chance(dataset).mean()),  # type: ignore[union-attr]
            "rule": MC_CHANCE_RULE,
        }
    }
