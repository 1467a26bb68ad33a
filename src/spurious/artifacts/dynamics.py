"""The ``"training_dynamics"`` artifact provider of the run context.

Every analysis of a run shares one record per configuration, made on one of
:data:`PATHS`: the fast path (:func:`~spurious.models.dynamics.probe_dynamics` on the
run's shared feature matrices), the fine-tuning engine
(:func:`spurious.artifacts.finetune.finetune_dynamics`, imported only when asked for) or
dynamics saved earlier (:func:`~spurious.models.dynamics.load_dynamics`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import pandas as pd

from spurious.exceptions import AnalysisError, ParameterError
from spurious.models.dynamics.crossfit import crossfit_dynamics
from spurious.models.dynamics.options import option_dynamics
from spurious.models.dynamics.probe import FAST_OPTIONS, probe_dynamics
from spurious.models.dynamics.record import PATHS, TrainingDynamics, load_dynamics

if TYPE_CHECKING:  # pragma: no cover
    from spurious.artifacts.protocol import ArtifactContext

__all__ = ["MC_LEXICAL", "option_feature_spec", "option_view", "training_dynamics"]

#: The ``features`` spec of the option blocks' lexical cues (length, overlap, position,
#: numbers) on multiple-choice items; any other spec but the bag-of-words ones names a
#: sentence encoder (see :class:`spurious.features.mcq.OptionFeaturizer`).
MC_LEXICAL = "lexical"
#: Bag-of-words specs, which describe a text, not the options of an item.
_BAG_OF_WORDS = ("bow", "tfidf")


def training_dynamics(
    ctx: ArtifactContext,
    *,
    path: str = "fast",
    view: str = "full",
    features: str = "minilm",
    model: str | None = None,
    epochs: int | None = None,
    random_state: int | None = 0,
    source: str | None = None,
    held_out_folds: int | None = None,
    **options: Any,
) -> TrainingDynamics:
    """Provider of ``ctx.artifact("training_dynamics", ...)``: dynamics of ``ctx.train``
    (and of ``ctx.eval`` when present, from the model trained on ``ctx.train`` only).

    Multiple-choice items (task ``mcq``) take the option path on ``path="fast"``:
    :func:`~spurious.models.dynamics.option_dynamics` on the run's shared option blocks
    (``ctx.artifact("option_blocks", ...)``), views ``full``, ``choices_only`` or
    ``question_only``, ``features`` ``"lexical"`` or a sentence encoder; ``p_gold`` is
    the gold option's probability among the item's own options.

    Parameters
    ----------
    ctx : ArtifactContext
    path : {"fast", "finetune", "load"}, default="fast"
        ``"fast"``: :func:`probe_dynamics` on ``ctx.features(features, view)`` (the
        matrices are shared with every other analysis of the run); ``"finetune"``:
        :func:`spurious.artifacts.finetune.finetune_dynamics` (the fine-tuning engine);
        ``"load"``: :func:`load_dynamics` of the folder ``source``.
    view : str, default="full"
        A view name of the task (``"hypothesis_only"`` for partial-input cartography;
        ``"choices_only"`` for multiple-choice items).
    features : str, default="minilm"
        Featurizer spec of the fast path (on multiple-choice items, of the option blocks:
        ``"lexical"`` or a sentence encoder).
    model : str, optional
        ``"mlp"`` or ``"linear"`` on the fast path (default ``"mlp"``); the model the
        fine-tuning engine trains on the fine-tune path (default: the engine's).
    epochs : int, optional
        Default: 10 on the fast path (paper 002 Table 8: at most 10 epochs for base
        models), the engine's default when fine-tuning.
    random_state : int or None, default=0
        The seed (the fine-tuning engine's ``seed``).
    source : str, optional
        Folder read by ``path="load"``.
    held_out_folds : int, optional
        Fast path without an evaluation split: record each training example with a probe
        trained on the other ``held_out_folds - 1`` stratified folds
        (:func:`~spurious.models.dynamics.crossfit.crossfit_dynamics`), so no example is
        mapped by a model that trained on it. ``None``: in-sample dynamics (Swayamdipta
        et al.'s definition).
    **options
        Passed on: :func:`probe_dynamics` keywords (``lr``, ``batch_size``,
        ``hidden_size``, ``weight_decay``, ``records_per_epoch``, ``standardize``) or the
        fine-tuning engine's.

    Examples
    --------
    >>> from spurious.context import RunContext
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> train, test = make_nli_artifacts(n=200, random_state=0).dataset.split(0.3)
    >>> ctx = RunContext(train, test, progress=False)
    >>> dyn = ctx.artifact("training_dynamics", features="bow", epochs=2)
    >>> dyn.splits(), len(dyn.ids("eval")) == len(test)
    (['train', 'eval'], True)
    """
    from spurious.views import get_view

    if path not in PATHS:
        raise ParameterError(
            f"The 'path' option of training dynamics must be one of {list(PATHS)}; got {path!r}."
        )
    mc = ctx.train.task.multiple_choice
    view_name = option_view(view) if mc else get_view(ctx.train.task, view).name
    if held_out_folds is not None:
        if path != "fast":
            raise ParameterError(
                f"The 'held_out_folds' option of training dynamics applies to path='fast'; "
                f"got path={path!r}."
            )
        if ctx.eval is not None:
            raise ParameterError(
                "The 'held_out_folds' option of training dynamics applies without an evaluation "
                "split (its examples are already recorded by a model that never saw them); got "
                f"held_out_folds={held_out_folds!r} with an evaluation split."
            )
    if path == "load":
        if not source:
            raise ParameterError("path='load' needs 'source', the folder of saved dynamics.")
        dyn = load_dynamics(source, ctx.train, ctx.eval)
        _check_covers(dyn, ctx)
        return dyn
    if path == "finetune":
        if mc:
            raise AnalysisError(
                "path='finetune' trains a classifier of the text, which does not score the "
                "options of multiple-choice items (task 'mcq'); use path='fast' (an option "
                "scorer on option blocks) or path='load'."
            )
        return _finetune_dynamics(ctx, view_name, model, epochs, random_state, options)
    if not isinstance(features, str):
        raise ParameterError(
            "The 'features' option of training dynamics must be a featurizer spec (str); got "
            f"{type(features).__name__}."
        )
    if mc:
        return _option_dynamics(
            ctx, view_name, features, model, epochs, random_state, held_out_folds, options
        )
    start = time.perf_counter()
    X_train = ctx.features(features, view_name, split="train")
    X_eval = ctx.features(features, view_name, split="eval") if ctx.eval is not None else None
    feature_s = time.perf_counter() - start
    unknown = sorted(set(options) - set(FAST_OPTIONS))
    if unknown:
        raise ParameterError(
            f"Unknown fast-path training option(s) {unknown}; valid: {list(FAST_OPTIONS)}."
        )
    model = model or "mlp"
    epochs = 10 if epochs is None else epochs
    start = time.perf_counter()
    if held_out_folds is not None:
        frame = crossfit_dynamics(
            X_train,
            ctx.train.labels,
            n_folds=held_out_folds,
            ids=ctx.train.ids,
            model=model,
            epochs=epochs,
            n_classes=ctx.train.n_classes,
            random_state=random_state,
            progress=f"training dynamics ({view})" if ctx.progress else None,
            **options,
        )
    else:
        frame = probe_dynamics(
            X_train,
            ctx.train.labels,
            X_eval,
            None if ctx.eval is None else ctx.eval.labels,
            model=model,
            epochs=epochs,
            n_classes=ctx.train.n_classes,
            train_ids=ctx.train.ids,
            eval_ids=None if ctx.eval is None else ctx.eval.ids,
            random_state=random_state,
            progress=f"training dynamics ({view})" if ctx.progress else None,
            **options,
        )
    meta = {
        "path": "fast",
        "view": view_name,
        "features": features,
        "model": model,
        "epochs": epochs,
        "random_state": random_state,
        "options": dict(options),
        "held_out_folds": held_out_folds,
        "n_train": len(ctx.train),
        "n_eval": 0 if ctx.eval is None else len(ctx.eval),
        "n_features": int(X_train.shape[1]),
        "feature_s": round(feature_s, 4),
        "train_s": round(time.perf_counter() - start, 4),
    }
    return TrainingDynamics(frame, list(ctx.train.label_names), meta)


def option_view(view: str) -> str:
    """``view`` checked as a view of multiple-choice items (``MC_VIEWS``).

    Examples
    --------
    >>> option_view("choices_only")
    'choices_only'
    """
    from spurious.features.mcq import MC_VIEWS

    if view not in MC_VIEWS:
        raise ParameterError(
            f"The 'view' option of training dynamics must be one of {list(MC_VIEWS)} for "
            f"multiple-choice items; got {view!r}."
        )
    return view


def option_feature_spec(features: str) -> str:
    """``features`` checked as a spec of option blocks: ``"lexical"`` or a sentence encoder.

    The bag-of-words specs describe one text, and an item's options are scored one by
    one, so they are refused with what to use instead.

    Examples
    --------
    >>> option_feature_spec("lexical"), option_feature_spec("minilm")
    ('lexical', 'minilm')
    """
    if features in _BAG_OF_WORDS:
        raise ParameterError(
            f"The 'features' option must be {MC_LEXICAL!r} (the option cues: length, overlap, "
            "position, numbers) or a sentence encoder ('minilm', a model folder) on "
            f"multiple-choice items; got {features!r}, a bag of words of one text."
        )
    return features


def _option_dynamics(
    ctx: ArtifactContext,
    view: str,
    features: str,
    model: str | None,
    epochs: int | None,
    random_state: int | None,
    held_out_folds: int | None,
    options: dict[str, Any],
) -> TrainingDynamics:
    """The fast path of multiple-choice items: an option scorer on the run's option blocks."""
    unknown = sorted(set(options) - set(FAST_OPTIONS))
    if unknown:
        raise ParameterError(
            f"Unknown fast-path training option(s) {unknown}; valid: {list(FAST_OPTIONS)}."
        )
    spec = option_feature_spec(features)
    start = time.perf_counter()
    blocks = {
        split: ctx.artifact("option_blocks", features=spec, view=view, split=split, n_components=32)
        for split in ("train", *(("eval",) if ctx.eval is not None else ()))
    }
    feature_s = time.perf_counter() - start
    model = model or "mlp"
    epochs = 10 if epochs is None else epochs
    common = {"n_features": blocks["train"].n_features, "model": model, "epochs": epochs,
              "progress": f"training dynamics ({view})" if ctx.progress else None}  # fmt: skip
    start = time.perf_counter()
    if held_out_folds is not None:
        frame = crossfit_dynamics(
            blocks["train"].X,
            ctx.train.labels,
            n_folds=held_out_folds,
            ids=ctx.train.ids,
            random_state=random_state,
            maker=option_dynamics,
            **common,
            **options,
        )
    else:
        frame = option_dynamics(
            blocks["train"].X,
            ctx.train.labels,
            None if ctx.eval is None else blocks["eval"].X,
            None if ctx.eval is None else ctx.eval.labels,
            train_ids=ctx.train.ids,
            eval_ids=None if ctx.eval is None else ctx.eval.ids,
            random_state=random_state,
            **common,
            **options,
        )
    meta = {
        "path": "fast",
        "task": "mcq",
        "view": view,
        "features": spec,
        "model": model,
        "epochs": epochs,
        "random_state": random_state,
        "options": dict(options),
        "held_out_folds": held_out_folds,
        "n_train": len(ctx.train),
        "n_eval": 0 if ctx.eval is None else len(ctx.eval),
        "n_features": int(blocks["train"].n_features),
        "n_blocks": int(blocks["train"].n_blocks),
        "feature_s": round(feature_s, 4),
        "train_s": round(time.perf_counter() - start, 4),
    }
    return TrainingDynamics(frame, list(ctx.train.label_names), meta)


def _finetune_dynamics(
    ctx: ArtifactContext,
    view: str,
    model: str | None,
    epochs: int | None,
    random_state: int | None,
    options: dict[str, Any],
) -> TrainingDynamics:
    """Dynamics from the fine-tuning engine (imported only when asked for)."""
    from spurious.artifacts import finetune

    config = dict(options)
    if model is not None:
        config["model"] = model
    if epochs is not None:
        config["epochs"] = epochs
    if random_state is not None:
        config["seed"] = random_state
    try:
        out = finetune.finetune_dynamics(ctx, view=view, **config)
    except ModuleNotFoundError as e:
        missing = e.name or ""
        if missing.split(".")[0] not in ("torch", "transformers", "accelerate") and not (
            missing.startswith("spurious.models.finetune")
        ):
            raise  # a bug, not a missing optional dependency
        raise AnalysisError(
            "path='finetune' needs the fine-tuning engine (spurious.models.finetune), which "
            f"cannot be imported here (missing {missing!r}; pip install 'spurious[hf]'); use "
            "path='fast'."
        ) from None
    if isinstance(out, pd.DataFrame):
        out = TrainingDynamics(out, list(ctx.train.label_names), {"path": "finetune"})
    if not isinstance(out, TrainingDynamics):
        raise AnalysisError(
            "finetune_dynamics must return TrainingDynamics or its frame; got "
            f"{type(out).__name__}."
        )
    out.meta.setdefault("path", "finetune")
    out.meta.setdefault("view", view)
    _check_covers(out, ctx)
    return out


def _check_covers(dyn: TrainingDynamics, ctx: ArtifactContext) -> None:
    """Dynamics from outside must describe every example of the run's splits."""
    for split, ds in (("train", ctx.train), ("eval", ctx.eval)):
        if ds is None:
            continue
        if split not in dyn.splits():
            if split == "eval":
                raise AnalysisError(
                    "The training dynamics hold no 'eval' split, but this run has an evaluation "
                    "split (for allenai/cartography files, put its files in an eval/ subfolder)."
                )
            continue
        missing = set(map(str, ds.ids)) - set(dyn.ids(split))
        if missing:
            raise AnalysisError(
                f"The training dynamics lack {len(missing)} example(s) of the {split!r} split "
                f"(e.g. id {sorted(missing)[0]!r})."
            )
    if list(dyn.label_names) != list(ctx.train.label_names):
        raise AnalysisError(
            f"The training dynamics use labels {dyn.label_names}; the data has "
            f"{list(ctx.train.label_names)}."
        )
