"""AFLite on multiple-choice items (task ``mcq``): option blocks and a conditional logit.

A multiple-choice item is not a text with a class: its gold is one of its *own* options,
and items have 2-10 options. AFLite therefore filters MC items as SWAG, HellaSwag and
WinoGrande were filtered, with a model that scores every option of an item and picks
one:

- the representation Phi(x) is the item's **option blocks**
  (:class:`~spurious.features.mcq.OptionFeaturizer`, shared by the run as the
  ``option_blocks`` artifact): ``K`` blocks of ``d`` columns, one per option, padding
  blocks marked by a 0 in their first column. ``features`` is ``"minilm"`` (option and
  question embeddings plus the lexical cues), ``"lexical"`` (length, overlap, position,
  numeric and "all of the above" cues only), or a sentence-encoder folder; ``"bow"`` and
  ``"tfidf"``, the lexical representations of the other tasks, mean ``"lexical"`` here.
  ``view`` is ``"full"`` (the default: AFLite's point is the whole item),
  ``"choices_only"`` or ``"question_only"``;
- the model family is :class:`~spurious.models.conditional_logit.ConditionalLogit` with
  the block width (``model="logistic"``, the default, is its multiple-choice form: a
  multinomial logit over the item's options), or any PartitionModel given as ``model``;
- the shuffled-label null re-draws every item's gold position uniformly among its own
  options, never a permutation of the labels across items (which could point at an
  option the item does not have);
- chance is per item, ``1/k``: the metrics ``chance`` and ``chance_kept`` are its mean
  over the scored and the kept items (what a guess would reach as predictability);
- the verdict's baselines (``baseline_view="auto"`` with the full view) are the
  choices-only and question-only views, the partial inputs of multiple choice.
"""

from __future__ import annotations

import copy
import os
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from spurious.context import RunContext
from spurious.data.dataset import Dataset
from spurious.data.mcq import option_counts
from spurious.detectors.aflite.algorithm import (
    STREAM_PARTITIONS,
    chunk_partitions,
    round_rng,
    sample_partitions,
)
from spurious.detectors.aflite.baselines import predictability_beyond_null
from spurious.detectors.aflite.checkpoint import FilterState
from spurious.detectors.aflite.prepare import filter_features, is_array_features
from spurious.detectors.aflite.verdict import (
    baseline_words,
    evidence_bar,
    evidence_row,
    spec_name,
)
from spurious.exceptions import ParameterError
from spurious.execution import Executor
from spurious.features.mcq import MC_VIEWS
from spurious.models.conditional_logit import ConditionalLogit
from spurious.models.partition import PartitionModel

if TYPE_CHECKING:  # the protocol the analysis passing itself satisfies
    from spurious.detectors.aflite.settings import AFLiteSettings

__all__ = [
    "MC_FEATURES",
    "is_multiple_choice",
    "mc_baseline_specs",
    "mc_chance",
    "mc_check",
    "mc_features_spec",
    "mc_inputs",
    "mc_model",
    "mc_predictability_evidence",
    "option_choice_accuracy",
]

#: Option-level representations by name (a sentence-encoder folder works too).
MC_FEATURES = ("minilm", "lexical")
#: The other tasks' lexical representations, which mean the lexical option cues on MC.
LEXICAL_ALIASES = ("bow", "tfidf")
#: PCA dimensions of the option blocks' embedding parts (the artifact's default, passed
#: explicitly so the artifact key is the one other analyses of the run use).
N_COMPONENTS = 32


def is_multiple_choice(dataset: Dataset) -> bool:
    """Whether ``dataset`` holds multiple-choice items (task ``mcq``)."""
    return bool(getattr(dataset.task, "multiple_choice", False))


def mc_features_spec(features: Any, name: str = "features") -> str:
    """The option-level representation a ``features`` value names on MC items.

    Examples
    --------
    >>> mc_features_spec("tfidf"), mc_features_spec("minilm")
    ('lexical', 'minilm')
    """
    if isinstance(features, str):
        if features in LEXICAL_ALIASES:
            return "lexical"
        if features in MC_FEATURES or os.path.isdir(features):
            return features
    raise ParameterError(
        f"The {name!r} parameter on multiple-choice items must be one of "
        f"{list(MC_FEATURES)} ('bow' and 'tfidf' mean 'lexical' there) or a "
        "sentence-encoder folder; precomputed option blocks are passed as an array (or "
        f"a (train, eval) pair) with model=ConditionalLogit(n_features=d). Got {features!r}."
    )


def mc_model(model: Any, n_features: int | None) -> PartitionModel:
    """The model family on option blocks of width ``n_features``.

    ``"logistic"`` is the conditional logit (a multinomial logit over an item's options);
    a PartitionModel is used as given.

    Examples
    --------
    >>> mc_model("logistic", 25).config()["n_features"]
    25
    """
    if isinstance(model, PartitionModel) and not isinstance(model, str):
        return model
    if model == "logistic" and n_features is not None:
        return ConditionalLogit(int(n_features))
    if model == "logistic":
        raise ParameterError(
            "The 'model' parameter must be a PartitionModel such as "
            "ConditionalLogit(n_features=d) when the features of multiple-choice items are "
            "given as an array (the block width d is not known). Got 'logistic'."
        )
    raise ParameterError(
        "The 'model' parameter on multiple-choice items must be 'logistic' (a conditional "
        "logit over each item's options) or a PartitionModel such as "
        f"ConditionalLogit(n_features=d). Got {model!r} instead."
    )


def _model_for_width(model: PartitionModel, n_features: int) -> PartitionModel:
    """``model`` refitted to another block width (a baseline's view) where it has one."""
    if getattr(model, "n_features", n_features) == n_features:
        return model
    other = copy.copy(model)
    setattr(other, "n_features", int(n_features))  # noqa: B010 -- not every PartitionModel has it
    return other


def mc_check(af: AFLiteSettings, ctx: RunContext) -> None:
    """The view, representation, model and baselines make sense for MC items."""
    if af.view not in MC_VIEWS:
        raise ParameterError(
            f"The 'view' parameter on multiple-choice items must be one of {list(MC_VIEWS)}. "
            f"Got {af.view!r} instead."
        )
    arrays = is_array_features(af.features)
    if not arrays:
        mc_features_spec(af.features)
    # With option blocks given as an array the block width is unknown: a model is needed.
    mc_model(af.model, None if arrays else 2)
    mc_baseline_specs(af)


def mc_inputs(
    af: AFLiteSettings, ctx: RunContext, eval_mode: bool
) -> tuple[np.ndarray, np.ndarray | None, dict[str, Any], PartitionModel]:
    """``(X_train, X_eval or None, featurizer config, model family)`` of MC items."""
    if is_array_features(af.features):
        # The array branch of filter_features checks the shapes; "full" exists for mcq.
        X_tr, X_ev, config = filter_features(ctx, af.features, "full", eval_mode)
        return X_tr, X_ev, config, mc_model(af.model, None)
    spec = mc_features_spec(af.features)
    blocks = _blocks(ctx, spec, af.view, "train")
    X_ev = _blocks(ctx, spec, af.view, "eval").X if eval_mode else None
    config = {
        "featurizer": "mcq_options",
        "features": spec,
        "view": af.view,
        "n_components": N_COMPONENTS,
        "n_features": int(blocks.n_features),
        "n_blocks": int(blocks.n_blocks),
    }
    if spec != af.features:
        config["requested"] = str(af.features)
    return blocks.X, X_ev, config, mc_model(af.model, blocks.n_features)


def _blocks(ctx: RunContext, spec: str, view: str, split: str) -> Any:
    return ctx.artifact(
        "option_blocks", features=spec, view=view, split=split, n_components=N_COMPONENTS
    )


def mc_baseline_specs(af: AFLiteSettings) -> tuple[list[tuple[str, str, Any]], str | None]:
    """``([(key, view name, features or None for the main ones)], why none)`` on MC items.

    With the full view, ``baseline_view="auto"`` compares with the choices-only and the
    question-only views (inputs that should not suffice to answer); a partial ``view``
    is its own baseline (key ``"main"``).
    """
    main, own = af.view, af.baseline_features
    if own is not None:
        mc_features_spec(own, "baseline_features")
    if af.baseline_view == "auto":
        if main != "full" and own is None:
            return [("main", main, None)], None
        views = [v for v in MC_VIEWS if v != "full"] if main == "full" else []
    elif af.baseline_view is None:
        views = []
        if own is None:
            return [], "baseline_view=None and no baseline_features"
    elif af.baseline_view not in MC_VIEWS:
        raise ParameterError(
            f"The 'baseline_view' parameter on multiple-choice items must be 'auto', None or "
            f"one of {list(MC_VIEWS)}. Got {af.baseline_view!r} instead."
        )
    else:
        views = [af.baseline_view]
    views = views or [main]
    if own is None and is_array_features(af.features):
        if af.baseline_view == "auto":
            return [], "the features are an array, which has no partial-input view"
        raise ParameterError(
            f"The 'baseline_view' parameter {af.baseline_view!r} needs option blocks of that "
            "view, but 'features' is an array; pass baseline_features= as well."
        )
    out = []
    for v in views:
        if v == main and own is None:
            raise ParameterError(
                f"The baseline (view {v!r}, the same features) is the representation AFLite "
                "filters with; name another view or baseline_features."
            )
        out.append((v if own is None else f"{v}_{spec_name(own)}", v, own))
    return out, None


def mc_predictability_evidence(
    af: AFLiteSettings,
    ctx: RunContext,
    X_tr: np.ndarray,
    y: np.ndarray,
    codes: np.ndarray,
    t: int,
    state: FilterState,
    executor: Executor,
    model: PartitionModel,
) -> dict[str, Any]:
    """Round 1's predictability against re-drawn gold positions, for the representation
    and each baseline view, on round 1's own partitions (a paired comparison).

    The null draws each item's gold uniformly among its own ``k`` options: a model
    family that learned nothing then agrees with it at chance, ``1/k`` per prediction.
    """
    specs, why = mc_baseline_specs(af)
    n = len(ctx.train)  # y holds the evaluation labels after the training ones
    train_idx, excluded = sample_partitions(
        pd.factorize(codes)[0], t, af.n_partitions, round_rng(state.entropy, 1, STREAM_PARTITIONS)
    )
    common: dict[str, Any] = dict(
        n_classes=ctx.train.n_classes,
        tau=af.tau,
        n_shuffles=af.n_shuffles,
        random_state=state.entropy % (2**32),
        executor=executor,
        chunk_size=chunk_partitions(af.n_partitions, af.chunk_size, executor.n_workers, model),
        n_options=option_counts(ctx.train.frame),
    )
    train = state.train
    assert train is not None  # filtering ran before the evidence is measured
    p1 = train.p_rounds[0] if train.p_rounds else None
    bar = evidence_bar(af, ctx, specs, p1 is None)
    common["progress"] = lambda done, total: bar.update(1)
    bar.set_postfix_str(f"{af.view} input")  # the filter's own representation first
    main = predictability_beyond_null(
        X_tr, y[:n], train_idx, excluded, model=model, p_real=p1, **common
    )
    out: dict[str, Any] = {"main": evidence_row(main), "baselines": []}
    for key, view, feats in specs:
        bar.set_postfix_str(f"{view} input")  # the baseline being fitted
        if key == "main":
            row: dict[str, Any] = evidence_row(main)
        else:
            spec = mc_features_spec(feats if feats is not None else af.features)
            blocks = _blocks(ctx, spec, view, "train")
            row = evidence_row(
                predictability_beyond_null(
                    blocks.X,
                    y[:n],
                    train_idx,
                    excluded,
                    model=_model_for_width(model, blocks.n_features),
                    **common,
                )
            )
        row.update(key=key, view=view, description=baseline_words(view, feats))
        out["baselines"].append(row)
    lows = [(b["ci_low"] if b["ci_low"] == b["ci_low"] else -np.inf) for b in out["baselines"]]
    out["chosen"] = out["baselines"][int(np.argmax(lows))]["key"] if lows else None
    out["no_baseline_reason"] = why
    bar.close()
    out.update(tau=af.tau, n_shuffles=af.n_shuffles, null="gold position re-drawn within items")
    return out


def mc_chance(scored: Dataset, kept: np.ndarray) -> dict[str, float]:
    """Mean per-item chance ``1/k`` over the scored items and over the kept ones.

    Examples
    --------
    >>> from spurious.data.synthetic_mcq import make_mcq_artifacts
    >>> ds = make_mcq_artifacts(n=10, n_options=4, random_state=0).dataset
    >>> mc_chance(ds, np.ones(10, dtype=bool))
    {'chance': 0.25, 'chance_kept': 0.25}
    """
    inv = 1.0 / option_counts(scored.frame)
    kept = np.asarray(kept, dtype=bool)
    return {
        "chance": float(inv.mean()),
        "chance_kept": float(inv[kept].mean()) if kept.any() else float("nan"),
    }


def option_choice_accuracy(
    dataset: Dataset,
    view: str = "choices_only",
    features: str = "lexical",
    *,
    n_folds: int = 5,
    random_state: int = 0,
) -> dict[str, float]:
    """Cross-fitted accuracy of a conditional logit on ``dataset``'s option blocks.

    The check after filtering (paper 000 Sec. 4): does a partial input still answer the
    kept items? Items are split into ``n_folds`` folds at random; each fold is predicted
    by a model trained on the others. ``accuracy - chance`` (chance = mean ``1/k``) is
    the share answered beyond guessing.

    Parameters
    ----------
    dataset : Dataset
        Multiple-choice items (e.g. the kept ones: ``dataset.subset(kept)``).
    view : {"full", "choices_only", "question_only"}, default="choices_only"
    features : {"lexical", "minilm"} or a sentence-encoder folder, default="lexical"
    n_folds : int, default=5
    random_state : int, default=0

    Returns
    -------
    dict
        ``accuracy``, ``chance``, ``beyond_chance`` (= accuracy - chance), ``n``.

    Examples
    --------
    >>> from spurious.data.synthetic_mcq import make_mcq_artifacts
    >>> s = make_mcq_artifacts(n=200, artifact="length", artifact_rate=1.0, random_state=0)
    >>> option_choice_accuracy(s.dataset)["accuracy"] > 0.9
    True
    """
    from spurious.features.mcq import OptionFeaturizer

    if not isinstance(n_folds, int) or not 2 <= n_folds <= len(dataset):
        raise ParameterError(
            f"The 'n_folds' parameter must be an int in [2, {len(dataset)}] (the items). "
            f"Got {n_folds!r} instead."
        )
    spec = mc_features_spec(features)
    blocks = OptionFeaturizer(spec, n_components=N_COMPONENTS).fit(dataset).transform(dataset, view)
    y = dataset.labels
    fold = np.random.default_rng(random_state).permutation(len(dataset)) % n_folds
    correct = np.zeros(len(dataset), dtype=bool)
    model = ConditionalLogit(blocks.n_features)
    for f in range(n_folds):
        test = np.flatnonzero(fold == f)
        train = np.flatnonzero(fold != f)
        pred = model.fit_predict(blocks.X, y, train[None, :], 0, X_predict=blocks.X[test])[0]
        correct[test] = pred == y[test]
    chance = float((1.0 / option_counts(dataset.frame)).mean())
    acc = float(correct.mean())
    return {"accuracy": acc, "chance": chance, "beyond_chance": acc - chance, "n": len(dataset)}
