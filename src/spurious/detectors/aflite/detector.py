"""The AFLite analysis: paper 000 Alg. 1 / paper 004 App. A Alg. 1 as a registered analysis.

This module holds the :class:`AFLite` class (its parameters, their validation and the
run); the run is spread over its sibling modules by concept: the building blocks
(partitions, predictability, slice selection) in
:mod:`~spurious.detectors.aflite.algorithm`, the sizes, features and groups a run
filters with in :mod:`~spurious.detectors.aflite.prepare`, the round loop in
:mod:`~spurious.detectors.aflite.rounds`, the checkpoint state in
:mod:`~spurious.detectors.aflite.checkpoint`, the scores, metrics and details in
:mod:`~spurious.detectors.aflite.outputs`, and the verdict (baselines, shuffled-label
null, headline) in :mod:`~spurious.detectors.aflite.verdict`; the size-matched
baselines of paper 000 Sec. 4.2 are in :mod:`~spurious.detectors.aflite.baselines`; on
multiple-choice items (option blocks, a conditional logit, a within-item null) the
differences are in :mod:`~spurious.detectors.aflite.mcq`.
"""

from __future__ import annotations

from numbers import Integral, Real
from pathlib import Path
from typing import Any, ClassVar

import scipy.sparse as sp

from spurious.analysis import AnalysisOutput, Requirements, VerdictScale, register_analysis
from spurious.context import RunContext
from spurious.data.dataset import Dataset
from spurious.detectors.aflite.algorithm import (
    SELECTIONS,
    SIZE_CONSTRAINTS,
    features_fingerprint,
    make_partition_model,
)
from spurious.detectors.aflite.mcq import (
    is_multiple_choice,
    mc_baseline_specs,
    mc_chance,
    mc_check,
    mc_inputs,
    mc_predictability_evidence,
)
from spurious.detectors.aflite.outputs import filter_output, side_scores
from spurious.detectors.aflite.prepare import (
    filter_features,
    group_codes,
    is_array_features,
    resolve_sizes,
    stack_splits,
)
from spurious.detectors.aflite.rounds import filter_rounds, initial_state, run_identity
from spurious.detectors.aflite.verdict import (
    add_evidence,
    aflite_headline,
    baseline_specs,
    predictability_evidence,
)
from spurious.detectors.base import Detector
from spurious.exceptions import FeatureError, ParameterError
from spurious.execution import Executor, make_executor
from spurious.features import PrecomputedFeaturizer, make_featurizer
from spurious.results import Headline
from spurious.utils.limits import MAX_PARTITIONS
from spurious.utils.validation import Interval, StrOptions
from spurious.views import get_view


@register_analysis
class AFLite(Detector):
    """Adversarial filtering: remove the examples a weak model family predicts too easily.

    Parameters
    ----------
    mode : {"train", "eval"}, default="train"
        ``"train"``: filter the data (paper 000). ``"eval"``: filter the evaluation
        split with classifiers trained on the data only (paper 004 App. A); needs an
        evaluation split. An evaluation split given in ``"train"`` mode is not used.
    n_partitions : int, default=64
        m: classifiers (random partitions) per round, at most 10,000. Table 8 uses 64 (128 for the
        synthetic data).
    train_size : int or float, default=0.1
        t: training examples per classifier; a float is a fraction of the *initial*
        dataset size and stays fixed over rounds. Table 8: about 10% (50K of SNLI's
        550K, 40K of MNLI's 393K, 10K of QNLI's 105K).
    slice_size : int or float, default=0.02
        k: most examples removed per round; a float is a fraction of the initial size.
        Table 8: about 2% (10K for SNLI and MNLI, 2K for QNLI).
    tau : float, default=0.75
        Early-stopping threshold: only examples with p >= tau are removed, and
        filtering stops once fewer than k reach it (Table 8: 0.75 everywhere).
    target_size : int, float or None, default=None
        n: filtering stops when at most n examples remain (never fewer are kept).
        ``None`` lets tau alone decide (the paper's NLP settings); the floor is then t.
    selection : {"greedy_slice", "greedy_one", "gumbel_slice"}, default="greedy_slice"
        App. A.1: (B) greedy slicing (AFLite), (A) greedy one at a time (k = 1),
        (C) slice sampling by the Gumbel-top-k trick on log p (App. A.2).
    group_by : "auto", None or str, default="auto"
        Rows sharing a key (the ``group`` column; for NLI the premise) are trained on or
        held out together in every partition. See :meth:`Dataset.group_keys`.
    model : str, estimator or PartitionModel, default="logistic"
        The model family M: ``"logistic"`` (batched logistic regression),
        ``"sklearn-logistic"``, ``"linear-svm"``, ``"rbf-svm"``, ``"mlp"``, any
        scikit-learn classifier, or a :class:`~spurious.models.partition.PartitionModel`.
        On multiple-choice items ``"logistic"`` is the conditional logit over each
        item's options (:mod:`~spurious.detectors.aflite.mcq`).
    features : str, Featurizer, ndarray or (ndarray, ndarray), default="minilm"
        Phi(X): ``"minilm"`` (offline sentence embeddings), ``"tfidf"``, ``"bow"``, a
        local model directory, a :class:`~spurious.features.Featurizer` (e.g.
        :class:`~spurious.features.PrecomputedFeaturizer`), a matrix with one row per
        training example, or ``(X_train, X_eval)`` in evaluation-set mode. On
        multiple-choice items: ``"minilm"`` or ``"lexical"`` option blocks (``"bow"`` and
        ``"tfidf"`` mean ``"lexical"``), a sentence-encoder folder, or option blocks as
        an array (with a PartitionModel as ``model``).
    view : str, default="full"
        Which part of the input the features see (e.g. ``"hypothesis_only"``; on
        multiple-choice items ``"full"``, ``"choices_only"`` or ``"question_only"``).
    max_rounds : int or None, default=None
        Stop after this many rounds in total (a budget; resumable with a larger one).
    chunk_size : int or None, default=None
        Partitions per executor task; ``None``: m split evenly over the executor's
        workers. Results do not depend on it.
    executor : "local", "ray" or Executor, default="local"
        Where the partition fits run (see :mod:`spurious.execution`).
    checkpoint_dir : path or None, default=None
        Write the state after every round; a later run with the same parameters, data
        and features resumes from it.
    checkpoint_mismatch : {"error", "restart"}, default="error"
        What to do when ``checkpoint_dir`` holds a checkpoint of a different run.
    n_examples : int, default=10
        Removed and kept examples (with their text) stored for the report.
    baseline_view : "auto", None or str, default="auto"
        The partial input the verdict compares with. Predictability says that the
        label is learnable from the representation, which alone is no shortcut; the
        verdict calls it one only when an input that should *not* suffice for the task
        predicts examples beyond shuffled labels (see ``docs/methods/aflite.md``).
        ``"auto"``: every one-field view of a task with two or more text fields
        (``premise_only``, ``hypothesis_only``); none for a single-field task, whose card
        then reports predictability only; a partial ``view`` is its own baseline.
        A view name: that view. ``None``: no partial input.
    baseline_features : str, Featurizer or None, default=None
        A representation that should not suffice for the task (e.g. ``"bow"`` for a
        task that needs word order), used for the baseline instead of ``features``;
        with no baseline view it is compared on ``view``. That it should not suffice is
        the user's claim: a bag of words does suffice for sentiment, so it is no
        baseline for SST-2.
    n_shuffles : int, default=1
        Label permutations of the shuffled-label null (AFLite's round 1 partitions,
        one extra set of fits per permutation and representation). ``0`` skips the null
        and the baselines: the card then reports predictability only (``info``), as
        callers that use AFLite's filtering alone do (the fairness analysis).
    random_state : int or None, default=0
        Seed of every random step (partitions, tie-breaks, Gumbel noise).

    Attributes
    ----------
    state_ : FilterState
        Full per-example history after :meth:`run` (both sides in evaluation-set mode).
    train_scores_ : pandas.DataFrame
        Per training example scores (the result's scores in single-dataset mode).
    resumed_from_ : int or None
        The rounds read from ``checkpoint_dir`` when the run resumed a checkpoint, else
        ``None`` (kept out of the result, which is the same either way).

    Examples
    --------
    >>> import pandas as pd
    >>> from spurious.data import Dataset
    >>> from spurious.data.synthetic import make_concentric_circles
    >>> c = make_concentric_circles(n=300, random_state=0)
    >>> ds = Dataset.from_frame(pd.DataFrame({"text": [f"p{i}" for i in range(300)],
    ...                                       "label": c.y}), "text")
    >>> res = AFLite(features=c.X, n_partitions=8, train_size=60, slice_size=30,
    ...              model="linear-svm").run(ds)
    >>> res.details["sizes"][:3]
    [300, 270, 240]
    """

    name: ClassVar[str] = "aflite"
    description: ClassVar[str] = (
        "Adversarial filtering: iteratively remove the examples a weak model family "
        "predicts too easily (AFLite, paper 000 Alg. 1; evaluation-set mode, paper 004)."
    )
    # Multiple-choice items opt in: they are filtered on option blocks with a conditional
    # logit (detectors/aflite/mcq.py), not as a class of the text.
    requires: ClassVar[Requirements] = Requirements(
        labels=True, features=True, tasks=("nli", "pair", "text", "mcq")
    )
    #: Share of examples predictable (p >= tau) from a partial input or a representation
    #: that should not suffice, minus the share with shuffled labels (its 95% interval's
    #: lower bound sets the degree). Without such a baseline the card is "info".
    verdict_scale: ClassVar[VerdictScale] = VerdictScale(
        0.05,
        0.2,
        0.4,
        {
            "none": "no more predictable from the baseline input than with shuffled labels",
            "low": "some examples are predictable from an input that should not suffice",
            "moderate": "many examples are predictable from an input that should not suffice",
            "high": "a large share is predictable from an input that should not suffice",
        },
    )
    fast_params: ClassVar[dict[str, Any]] = {
        "features": "tfidf",
        "n_partitions": 8,
        "train_size": 0.3,
        "slice_size": 0.1,
        "max_rounds": 3,
    }
    # A bounded budget for a first look: the quick audit shows the most predictable
    # examples of a 10k dataset in well under a minute; the full profile runs Alg. 1
    # with the paper's settings until tau stops it.
    profiles: ClassVar[dict[str, dict[str, Any]]] = {
        "quick": {"n_partitions": 16, "max_rounds": 3},
        "full": {},
    }
    metric_docs: ClassVar[dict[str, str]] = {
        "n_initial": "|D|: training examples before filtering.",
        "n_final": "|S| after filtering (training examples kept).",
        "n_removed": "Training examples removed.",
        "removed_fraction": "n_removed / n_initial, [0, 1].",
        "n_rounds": "Filtering rounds run.",
        "train_size": "t, training examples per classifier (resolved).",
        "slice_size": "k, most examples removed per round (resolved; 1 for greedy_one).",
        "target_size": "n, the size filtering stops at (resolved; t when not given).",
        "mean_p_round_<r>": "Mean predictability of S in round r, [0, 1].",
        "mean_p_final": "Mean predictability of the kept examples in the last round.",
        "n_eval": "Evaluation examples (evaluation-set mode).",
        "n_eval_filtered_first_round": "Evaluation examples removed in round 1 (paper 004 Fig. 1).",
        "n_eval_filtered_later_rounds": "Evaluation examples removed after round 1.",
        "n_eval_selected": "AF-selected evaluation examples (kept).",
        "eval_selected_fraction": "n_eval_selected / n_eval, [0, 1].",
        "mean_p_eval_round_<r>": "Mean predictability of the remaining evaluation examples.",
        "predictable_share": "Share of training examples with p >= tau in round 1, [0, 1].",
        "predictable_share_null": "The same with shuffled labels on round 1's partitions.",
        "predictable_beyond_null": "predictable_share - predictable_share_null, with "
        "_ci_low / _ci_high (95% bootstrap over examples): the label is learnable from the "
        "representation (not, by itself, a shortcut).",
        "baseline_share_<b>": "Share with p >= tau from baseline b (a partial input or a "
        "representation that should not suffice), round 1's partitions, [0, 1].",
        "baseline_share_null_<b>": "The same with shuffled labels.",
        "baseline_beyond_null_<b>": "baseline_share_<b> - baseline_share_null_<b>, with "
        "_ci_low / _ci_high.",
        "shortcut_beyond_null": "baseline_beyond_null of the baseline with the highest lower "
        "bound (with _ci_low / _ci_high): the headline's effect.",
        "chance": "Multiple choice only: mean of 1/k over the scored items (k options each), "
        "the predictability of a guess, [0, 1].",
        "chance_kept": "Multiple choice only: the same over the kept (AF-selected) items.",
    }
    score_columns: ClassVar[dict[str, str]] = {
        "id": "Example id (evaluation examples in evaluation-set mode).",
        "label": "Gold label.",
        "aflite_score": "Predictability p in the last round the example was scored, [0, 1]; "
        "higher = easier for the model family. NaN if never held out.",
        "is_aflite_issue": "Removed by AFLite (too predictable).",
        "removed_round": "Round (1-based) the example was removed in; -1 = kept.",
        "stage": "filtered_first_round, filtered_later_round or af_selected (kept).",
        "times_held_out": "Predictions received over all rounds (|E(i)| summed).",
        "times_correct": "Of those, how many were the gold label.",
        "p_round_<r>": "Predictability in round r; NaN once removed (or not held out).",
    }
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "mode": [StrOptions({"train", "eval"})],
        "n_partitions": [Interval(Integral, 1, MAX_PARTITIONS, closed="both")],
        "train_size": list(SIZE_CONSTRAINTS),
        "slice_size": list(SIZE_CONSTRAINTS),
        "tau": [Interval(Real, 0, 1, closed="both")],
        "target_size": [*SIZE_CONSTRAINTS, None],
        "selection": [StrOptions(set(SELECTIONS))],
        "group_by": [str, None],
        "model": [str, object],
        "features": [str, object],
        "view": [str],
        "max_rounds": [Interval(Integral, 1, None, closed="left"), None],
        "chunk_size": [Interval(Integral, 1, None, closed="left"), None],
        "executor": [str, Executor],
        "checkpoint_dir": [str, Path, None],
        "checkpoint_mismatch": [StrOptions({"error", "restart"})],
        "n_examples": [Interval(Integral, 0, None, closed="left")],
        "baseline_view": [str, None],
        "baseline_features": [str, object, None],
        "n_shuffles": [Interval(Integral, 0, None, closed="left")],
        "random_state": [Interval(Integral, 0, None, closed="left"), None],
    }

    def __init__(
        self,
        mode: str = "train",
        n_partitions: int = 64,
        train_size: int | float = 0.1,
        slice_size: int | float = 0.02,
        tau: float = 0.75,
        target_size: int | float | None = None,
        selection: str = "greedy_slice",
        group_by: str | None = "auto",
        model: Any = "logistic",
        features: Any = "minilm",
        view: str = "full",
        max_rounds: int | None = None,
        chunk_size: int | None = None,
        executor: str | Executor = "local",
        checkpoint_dir: str | Path | None = None,
        checkpoint_mismatch: str = "error",
        n_examples: int = 10,
        baseline_view: str | None = "auto",
        baseline_features: Any = None,
        n_shuffles: int = 1,
        random_state: int | None = 0,
    ) -> None:
        self.mode = mode
        self.n_partitions = n_partitions
        self.train_size = train_size
        self.slice_size = slice_size
        self.tau = tau
        self.target_size = target_size
        self.selection = selection
        self.group_by = group_by
        self.model = model
        self.features = features
        self.view = view
        self.max_rounds = max_rounds
        self.chunk_size = chunk_size
        self.executor = executor
        self.checkpoint_dir = checkpoint_dir
        self.checkpoint_mismatch = checkpoint_mismatch
        self.n_examples = n_examples
        self.baseline_view = baseline_view
        self.baseline_features = baseline_features
        self.n_shuffles = n_shuffles
        self.random_state = random_state

    # -- validation -------------------------------------------------------------------
    def validate_params(self) -> None:
        """Check constraints, and that ``model``, ``features`` and ``executor`` resolve."""
        super().validate_params()
        make_partition_model(self.model, self.random_state)
        # "lexical" names the option-level cues of multiple-choice items only; the task
        # is known at check().
        if not self._array_features() and not _is_lexical(self.features):
            make_featurizer(self.features)
        if self.baseline_features is not None and not _is_lexical(self.baseline_features):
            make_featurizer(self.baseline_features)
        if isinstance(self.executor, str):
            make_executor(self.executor)

    def requirements(self) -> Requirements:
        """Evaluation-set mode needs an evaluation split."""
        base = type(self).requires
        if self.mode == "eval":
            return Requirements(labels=True, features=True, eval_split=True, tasks=base.tasks)
        return base

    def check(self, context: RunContext) -> None:
        """The view exists, group_by names a column, the sizes fit the data, and
        precomputed features load (cheap: they are read, then shared with the run)."""
        if is_multiple_choice(context.train):
            mc_check(self, context)
            context.train.group_keys(self.group_by)
            self._sizes(len(context.train), 2)  # a conditional logit needs no row per letter
            return
        for name in ("features", "baseline_features"):
            if _is_lexical(getattr(self, name)):
                raise ParameterError(
                    f"The {name!r} parameter 'lexical' names the option-level cues of "
                    f"multiple-choice items; task {context.train.task.name!r} takes 'bow', "
                    "'tfidf', 'minilm' or a model directory."
                )
        get_view(context.train.task, self.view)
        self._baselines(context.train.task)
        context.train.group_keys(self.group_by)
        self._sizes(len(context.train), context.train.n_classes)
        if isinstance(self.features, PrecomputedFeaturizer):
            eval_mode = self.mode == "eval" and context.eval is not None
            self._features(context, eval_mode)

    def uses_eval(self) -> bool:
        """Only evaluation-set mode uses an evaluation split."""
        return self.mode == "eval"

    def _check_uses_eval(self) -> None:
        if not self.uses_eval():
            raise ParameterError(
                "AFLite(mode='train') filters the training data and does not use an evaluation "
                "split. Pass mode='eval' to filter the evaluation split with classifiers "
                "trained on the data (paper 004), or leave eval_dataset out."
            )

    def scored_dataset(self, context: RunContext) -> Dataset:
        """The training split in ``"train"`` mode, the evaluation split in ``"eval"`` mode."""
        return context.split("eval" if self.mode == "eval" else "train")

    def headline(self, result: Any) -> Headline:
        """Predictability, judged as a shortcut only against a baseline that should not
        suffice (a partial input or a weaker representation) and shuffled labels."""
        return aflite_headline(self, result)

    def _param_to_config(self, name: str, value: Any) -> Any:
        # Precomputed arrays given as files and executors have a plain-data form, so a
        # run using them can be re-run from its manifest.
        if name == "features" and isinstance(value, PrecomputedFeaturizer):
            arrays = dict(value.arrays) if isinstance(value.arrays, dict) else {}
            plain = all(isinstance(v, str | Path) for v in arrays.values())
            if plain and (value.ids is None or isinstance(value.ids, str | Path)):
                return {
                    "precomputed": {k: str(v) for k, v in arrays.items()},
                    "ids": None if value.ids is None else str(value.ids),
                }
        if name == "executor" and isinstance(value, Executor):
            if type(value).__name__ == "LocalExecutor":
                return "local"
            opts = {k: getattr(value, k, None) for k in ("address", "num_cpus")}
            return {"kind": "ray", "options": {k: v for k, v in opts.items() if v is not None}}
        return value

    @classmethod
    def _param_from_config(cls, name: str, value: Any) -> Any:
        if name == "features" and isinstance(value, dict) and "precomputed" in value:
            return PrecomputedFeaturizer(value["precomputed"], ids=value.get("ids"))
        if name == "executor" and isinstance(value, dict):
            return make_executor(value.get("kind", "local"), **value.get("options", {}))
        return value

    def _array_features(self) -> bool:
        return is_array_features(self.features)

    def _baselines(self, task: Any) -> tuple[list[tuple[str, Any, Any]], str | None]:
        """The verdict's baselines (:func:`~.verdict.baseline_specs`; on multiple-choice
        items :func:`~.mcq.mc_baseline_specs`)."""
        if getattr(task, "multiple_choice", False):
            return mc_baseline_specs(self)
        return baseline_specs(self, task)

    def _sizes(self, n0: int, n_classes: int) -> tuple[int, int, int]:
        """(t, k, n) resolved against the initial size ``n0``; clear errors when unusable."""
        return resolve_sizes(
            self.train_size, self.slice_size, self.target_size, self.selection, n0, n_classes
        )

    def _features(self, ctx: RunContext, eval_mode: bool) -> tuple[Any, Any | None, dict[str, Any]]:
        return filter_features(ctx, self.features, self.view, eval_mode)

    # -- the run --------------------------------------------------------------------------
    def _run(self, ctx: RunContext) -> AnalysisOutput:
        eval_mode = self.mode == "eval"
        dataset, progress = ctx.train, ctx.progress
        eval_dataset = ctx.split("eval") if eval_mode else None
        n0 = len(dataset)
        mc = is_multiple_choice(dataset)
        sizes = self._sizes(n0, 2 if mc else dataset.n_classes)  # (t, k, n)
        if mc:
            X_tr, X_ev, feat_config, model = mc_inputs(self, ctx, eval_mode)
        else:
            X_tr, X_ev, feat_config = self._features(ctx, eval_mode)
            model = make_partition_model(self.model, self.random_state, sparse=sp.issparse(X_tr))
        if X_ev is not None and X_ev.shape[1] != X_tr.shape[1]:
            raise FeatureError(
                f"Training features have {X_tr.shape[1]} columns but evaluation features "
                f"{X_ev.shape[1]}; both splits need the same representation."
            )
        fps = {"features_train": features_fingerprint(X_tr)}
        if X_ev is not None:
            fps["features_eval"] = features_fingerprint(X_ev)
        codes = group_codes(dataset, self.group_by)

        identity = run_identity(self, dataset, eval_dataset, model, feat_config, fps, sizes)
        state = initial_state(
            self, identity, n0, None if eval_dataset is None else len(eval_dataset)
        )
        self.resumed_from_ = state.resumed_from
        X, y = stack_splits(X_tr, X_ev, dataset, eval_dataset)
        executor = make_executor(self.executor)
        owns_executor = isinstance(self.executor, str)
        try:
            filter_rounds(self, state, X, y, codes, sizes, model, executor, identity,
                          dataset.n_classes, progress)  # fmt: skip
            if self.n_shuffles == 0:
                evidence = None
            elif mc:
                evidence = mc_predictability_evidence(
                    self, ctx, X_tr, y, codes, sizes[0], state, executor, model
                )
            else:
                evidence = predictability_evidence(
                    self, ctx, X_tr, y, codes, sizes[0], state, executor
                )
        finally:
            if owns_executor:
                executor.close()
        self.state_ = state
        train_scores = side_scores(state.train, dataset)
        self.train_scores_ = train_scores
        out = filter_output(
            self, state, train_scores, dataset, eval_dataset, sizes, feat_config, model, fps
        )
        add_evidence(out, evidence)
        if mc:
            side = state.train if eval_dataset is None else state.eval
            assert side is not None  # eval mode has an eval side
            scored = dataset if eval_dataset is None else eval_dataset
            out.metrics.update(mc_chance(scored, side.removed_round < 0))
        return out


def _is_lexical(spec: Any) -> bool:
    """Whether ``spec`` names the option-level lexical cues (multiple-choice items only)."""
    return isinstance(spec, str) and spec == "lexical"
