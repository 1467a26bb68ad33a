"""The AFLite detector: the filtering loop of paper 000 Alg. 1 / paper 004 App. A Alg. 1.

The building blocks (partitions, predictability, slice selection) are in
:mod:`spurious.detectors.aflite.algorithm`, the checkpoint state in
:mod:`~spurious.detectors.aflite.checkpoint`, the size-matched baselines in
:mod:`~spurious.detectors.aflite.baselines`.
"""

from __future__ import annotations

import logging
import math
from numbers import Integral, Real
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import scipy.sparse as sp
from tqdm.auto import tqdm

from spurious.analysis import AnalysisOutput, Requirements, VerdictScale, register_analysis
from spurious.context import RunContext
from spurious.data.dataset import Dataset
from spurious.detectors.aflite.algorithm import (
    HIST_BINS,
    SELECTIONS,
    SIZE_CONSTRAINTS,
    STAGES,
    STREAM_EXAMPLES,
    STREAM_PARTITIONS,
    STREAM_SELECT,
    chunk_partitions,
    features_fingerprint,
    make_partition_model,
    mean_or_none,
    p_histogram,
    predictability,
    prepare_start,
    resolve_size,
    round_rng,
    sample_partitions,
    score_partitions,
    select_slice,
)
from spurious.detectors.aflite.baselines import predictability_beyond_null
from spurious.detectors.aflite.checkpoint import (
    FilterState,
    SideState,
    clear_checkpoint,
    load_checkpoint,
    read_identity,
    save_checkpoint,
)
from spurious.detectors.base import Detector
from spurious.exceptions import DetectorError, FeatureError, ParameterError
from spurious.execution import Executor, make_executor
from spurious.features import PrecomputedFeaturizer, check_features, make_featurizer
from spurious.models.partition import PartitionModel
from spurious.utils.io import to_jsonable
from spurious.utils.validation import Interval, StrOptions
from spurious.views import get_view, standard_views

logger = logging.getLogger(__name__)


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
        m: classifiers (random partitions) per round. Table 8 uses 64 (128 for the
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
    features : str, Featurizer, ndarray or (ndarray, ndarray), default="minilm"
        Phi(X): ``"minilm"`` (offline sentence embeddings), ``"tfidf"``, ``"bow"``, a
        local model directory, a :class:`~spurious.features.Featurizer` (e.g.
        :class:`~spurious.features.PrecomputedFeaturizer`), a matrix with one row per
        training example, or ``(X_train, X_eval)`` in evaluation-set mode.
    view : str, default="full"
        Which part of the input the features see (e.g. ``"hypothesis_only"``).
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
    requires: ClassVar[Requirements] = Requirements(labels=True, features=True)
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
        "n_partitions": [Interval(Integral, 1, None, closed="left")],
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
        if not self._array_features():
            make_featurizer(self.features)
        if self.baseline_features is not None:
            make_featurizer(self.baseline_features)
        if isinstance(self.executor, str):
            make_executor(self.executor)

    def requirements(self) -> Requirements:
        """Evaluation-set mode needs an evaluation split."""
        base = type(self).requires
        if self.mode == "eval":
            return Requirements(labels=True, features=True, eval_split=True)
        return base

    def check(self, context: RunContext) -> None:
        """The view exists, group_by names a column, the sizes fit the data, and
        precomputed features load (cheap: they are read, then shared with the run)."""
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

    def headline(self, result: Any) -> dict[str, Any]:
        """Predictability, judged as a shortcut only against a baseline that should not
        suffice (a partial input or a weaker representation) and shuffled labels."""
        m, d = result.metrics, result.details
        if self.mode == "eval" and "n_eval" in m:
            share = 1.0 - m["eval_selected_fraction"]
            what = (
                f"{share:.1%} of the {int(m['n_eval']):,} evaluation examples filtered as "
                f"predictable; {int(m['n_eval_selected']):,} AF-selected"
            )
        else:
            rounds = d.get("rounds") or [{}]
            n0 = int(m.get("n_initial", 0))
            share = rounds[0].get("n_above_tau", 0) / n0 if n0 else float("nan")
            what = (
                f"{m.get('removed_fraction', float('nan')):.1%} removed in "
                f"{int(m.get('n_rounds', 0))} round(s) (stop: {d.get('stop_reason_text', '')})"
            )
        evidence = d.get("predictability") or {}
        # The evidence is measured on the training split (what the classifiers learn from).
        unit = "training examples" if self.mode == "eval" else "examples"
        full = (
            f"{m['predictable_share']:.0%} of {unit} predictable (p >= {self.tau}) from the "
            f"{_view_words(self.view)} (shuffled labels: {m['predictable_share_null']:.0%})"
            if "predictable_share" in m
            else f"{share:.0%} of {unit} predictable; not compared with shuffled labels"
        )
        chosen = evidence.get("chosen")
        label = "adversarial filtering (AFLite)"
        if not chosen:
            why = evidence.get("no_baseline_reason") or "no baseline was run"
            text = (
                f"{full}: the label is learnable from this representation, which alone is "
                f"not a shortcut ({why}); {what}"
            )
            return self.verdict_scale.headline(
                label,
                m.get("predictable_share", share),
                text,
                measured="share of examples the model family predicts (predictability)",
                severity="info",
            )
        b = next(x for x in evidence["baselines"] if x["key"] == chosen)
        text = (
            f"{b['share']:.0%} of {unit} predictable from {b['description']} (shuffled "
            f"labels: {b['share_null']:.0%}); {full}; {what}"
        )
        return self.verdict_scale.headline(
            label,
            b["effect"],
            text,
            interval=(b["ci_low"], b["ci_high"]),
            null="shuffled labels",
            measured=f"share of examples predictable (p >= {self.tau}) from {b['description']}, "
            "an input that should not suffice for the task, minus the share with shuffled "
            "labels (95% bootstrap interval over examples)",
        )

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
        f = self.features
        return isinstance(f, np.ndarray) or sp.issparse(f) or isinstance(f, tuple)

    # -- the verdict's baselines (issue 19 item 1) ----------------------------------------
    def _baselines(self, task: Any) -> tuple[list[tuple[str, Any, Any]], str | None]:
        """``([(key, view, features or None for the main ones)], why none)``.

        ``key == "main"``: the main representation is itself a partial input.
        """
        main = get_view(task, self.view)
        own = self.baseline_features
        if self.baseline_view == "auto":
            if main.is_partial and own is None:
                return [("main", main, None)], None
            views = (
                [v for v in standard_views(task).values() if v.is_partial]
                if len(task.text_fields) > 1 and not main.is_partial
                else []
            )
            if not views and own is None:
                return [], (
                    f"task {task.name!r} has one text field, so no partial input; pass "
                    "baseline_features= a representation that should not suffice"
                )
        elif self.baseline_view is None:
            views = []
            if own is None:
                return [], "baseline_view=None and no baseline_features"
        else:
            views = [get_view(task, self.baseline_view)]
        views = views or [main]
        if own is None and self._array_features():
            if self.baseline_view == "auto":
                return [], (
                    "the features are a matrix, which has no partial-input view; pass "
                    "baseline_features="
                )
            raise ParameterError(
                f"The 'baseline_view' parameter {self.baseline_view!r} needs features of that "
                "view, but 'features' is a matrix; pass baseline_features= as well."
            )
        if own is None and isinstance(self.features, PrecomputedFeaturizer):
            return [], "precomputed features have no partial-input view"
        out = []
        for v in views:
            if v == main and own is None:
                raise ParameterError(
                    f"The baseline (view {v.name!r}, the same features) is the representation "
                    "AFLite filters with; name another view or baseline_features."
                )
            key = v.name if own is None else f"{v.name}_{_spec_name(own)}"
            out.append((key, v, own))
        return out, None

    def _predictability_evidence(
        self,
        ctx: RunContext,
        X_tr: Any,
        y: np.ndarray,
        codes: np.ndarray,
        t: int,
        state: FilterState,
        executor: Executor,
    ) -> dict[str, Any]:
        """Round 1's predictability against shuffled labels, for the representation and
        for each baseline, on round 1's own partitions (a paired comparison)."""
        task = ctx.train.task
        specs, why = self._baselines(task)
        n = len(ctx.train)  # y holds the evaluation labels after the training ones
        train_idx, excluded = sample_partitions(
            pd.factorize(codes)[0],
            t,
            self.n_partitions,
            round_rng(state.entropy, 1, STREAM_PARTITIONS),
        )
        common = dict(
            n_classes=ctx.train.n_classes,
            tau=self.tau,
            n_shuffles=self.n_shuffles,
            random_state=state.entropy % (2**32),
            executor=executor,
            chunk_size=chunk_partitions(self.n_partitions, self.chunk_size, executor.n_workers,
                                        make_partition_model(self.model, self.random_state)),
        )  # fmt: skip
        p1 = state.train.p_rounds[0] if state.train.p_rounds else None
        main = predictability_beyond_null(
            X_tr, y[:n], train_idx, excluded, model=self.model, p_real=p1, **common
        )
        out: dict[str, Any] = {"main": _evidence_row(main), "baselines": []}
        for key, view, feats in specs:
            if key == "main":
                row = _evidence_row(main)
            else:
                X_b = ctx.features(feats if feats is not None else self.features, view.name)
                row = _evidence_row(
                    predictability_beyond_null(X_b, y[:n], train_idx, excluded, model=self.model,
                                               **common)
                )  # fmt: skip
            row.update(key=key, view=view.name, description=_baseline_words(view, feats))
            out["baselines"].append(row)
        lows = [(b["ci_low"] if b["ci_low"] == b["ci_low"] else -np.inf) for b in out["baselines"]]
        out["chosen"] = out["baselines"][int(np.argmax(lows))]["key"] if lows else None
        out["no_baseline_reason"] = why
        out.update(tau=self.tau, n_shuffles=self.n_shuffles)
        return out

    # -- sizes --------------------------------------------------------------------------
    def _sizes(self, n0: int, n_classes: int) -> tuple[int, int, int]:
        """(t, k, n) resolved against the initial size ``n0``; clear errors when unusable."""
        t = resolve_size(self.train_size, n0, "train_size")
        k = 1 if self.selection == "greedy_one" else resolve_size(self.slice_size, n0, "slice")
        n = resolve_size(self.target_size, n0, "target_size")
        if t < max(n_classes, 2):
            raise DetectorError(
                f"train_size resolves to t={t} training examples per classifier for a dataset "
                f"of {n0}; at least {max(n_classes, 2)} (one per class) are needed. Pass a "
                "larger train_size (an int is an absolute count)."
            )
        if n0 - t < 1:
            raise DetectorError(
                f"train_size t={t} leaves no held-out examples in a dataset of {n0} "
                f"(|S| - t = {n0 - t}); AFLite needs t < |D|."
            )
        if n is None:
            n = t
        elif n <= t:
            raise DetectorError(
                f"target_size n={n} must be larger than train_size t={t} (Algorithm 1 needs "
                "t < n: every classifier must hold out at least one example)."
            )
        return t, k, n

    # -- features -----------------------------------------------------------------------
    def _features(self, ctx: RunContext, eval_mode: bool) -> tuple[Any, Any | None, dict[str, Any]]:
        train = ctx.train
        eval_dataset = ctx.eval if eval_mode else None
        view = get_view(train.task, self.view)
        f = self.features
        if isinstance(f, tuple):
            if eval_dataset is None or len(f) != 2:
                raise ParameterError(
                    "The 'features' parameter as a tuple must be (X_train, X_eval) and needs "
                    f"mode='eval' with an evaluation split. Got a tuple of {len(f)} with "
                    f"{'an' if eval_dataset is not None else 'no'} evaluation split."
                )
            X_tr = check_features(f[0], len(train), "features[0] (training split)")
            X_ev = check_features(f[1], len(eval_dataset), "features[1] (evaluation split)")
            return X_tr, X_ev, {"featurizer": "arrays"}
        if isinstance(f, np.ndarray) or sp.issparse(f):
            if eval_dataset is not None:
                raise ParameterError(
                    "With an evaluation split, pass features=(X_train, X_eval) or a "
                    "PrecomputedFeaturizer with ids; a single matrix covers one split."
                )
            return check_features(f, len(train), "features"), None, {"featurizer": "array"}
        # Through the run context: a representation another analysis of the run already
        # built (same featurizer and view) is reused, not recomputed.
        X_tr = ctx.features(f, view.name, split="train")
        X_ev = None if eval_dataset is None else ctx.features(f, view.name, split="eval")
        return X_tr, X_ev, make_featurizer(f).config()

    # -- the run --------------------------------------------------------------------------
    def _run(self, ctx: RunContext) -> AnalysisOutput:
        eval_mode = self.mode == "eval"
        dataset, progress = ctx.train, ctx.progress
        eval_dataset = ctx.split("eval") if eval_mode else None
        n0 = len(dataset)
        t, k, n_target = self._sizes(n0, dataset.n_classes)
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
        groups = dataset.group_keys(self.group_by)
        codes = (
            pd.factorize(pd.Series(groups, dtype=object))[0].astype(np.int64)
            if groups is not None
            else np.arange(n0, dtype=np.int64)
        )

        identity = self._identity(dataset, eval_dataset, model, feat_config, fps, (t, k, n_target))
        state = self._initial_state(
            identity, n0, None if eval_dataset is None else len(eval_dataset)
        )

        if X_ev is not None:
            X = (
                sp.vstack([X_tr, X_ev], format="csr")
                if sp.issparse(X_tr)
                else np.vstack([X_tr, X_ev])
            )
            y = np.concatenate([dataset.labels, eval_dataset.labels])
        else:
            # A writable copy: some model families (torch) refuse read-only label arrays.
            X, y = X_tr, np.array(dataset.labels, dtype=np.int64)
        executor = make_executor(self.executor)
        owns_executor = isinstance(self.executor, str)
        try:
            self._filter(
                state, X, y, n0, codes, t, k, n_target, model, executor, dataset, identity, progress
            )
            evidence = (
                self._predictability_evidence(ctx, X_tr, y, codes, t, state, executor)
                if self.n_shuffles > 0
                else None
            )
        finally:
            if owns_executor:
                executor.close()
        self.state_ = state
        out = self._output(state, dataset, eval_dataset, (t, k, n_target), feat_config, model, fps)
        _add_evidence(out, evidence)
        return out

    def _identity(
        self,
        dataset: Dataset,
        eval_dataset: Dataset | None,
        model: PartitionModel,
        feat_config: dict[str, Any],
        fps: dict[str, str],
        sizes: tuple[int, int, int],
    ) -> dict[str, Any]:
        """What a checkpoint must match to be resumed (not the run budget or executor)."""
        skip = {"checkpoint_dir", "checkpoint_mismatch", "executor", "chunk_size", "max_rounds",
                "features", "model", "n_examples"}  # fmt: skip
        params = {k: v for k, v in self.params_for_json().items() if k not in skip}
        return {
            "params": params,
            "sizes": list(sizes),
            "model": _jsonable_config(model),
            "featurizer": feat_config,
            "dataset": dataset.fingerprint,
            "eval_dataset": None if eval_dataset is None else eval_dataset.fingerprint,
            **fps,
        }

    def _initial_state(
        self, identity: dict[str, Any], n_train: int, n_eval: int | None
    ) -> FilterState:
        fresh = FilterState(
            entropy=(
                int(self.random_state)
                if self.random_state is not None
                else int(np.random.SeedSequence().entropy)
            ),
            train=SideState.empty(n_train),
            eval=None if n_eval is None else SideState.empty(n_eval),
        )
        if self.checkpoint_dir is None:
            return fresh
        directory = Path(self.checkpoint_dir)
        stored = read_identity(directory)
        if stored is None:
            return fresh
        current = to_jsonable(identity)
        if stored != current:
            diff = sorted(
                key for key in set(stored) | set(current) if stored.get(key) != current.get(key)
            )
            if self.checkpoint_mismatch == "restart":
                logger.warning(
                    "AFLite checkpoint in %s is from a different run (%s differ); starting over",
                    directory,
                    diff,
                )
                clear_checkpoint(directory)
                return fresh
            raise DetectorError(
                f"The AFLite checkpoint in {str(directory)!r} belongs to a different run: "
                f"{', '.join(diff)} differ ({_describe_diff(stored, current, diff)}). Use another "
                "checkpoint_dir, or pass checkpoint_mismatch='restart' to discard it."
            )
        state = load_checkpoint(directory)
        logger.info("resuming AFLite from %s after round %d", directory, state.rounds_done)
        return state

    def _filter(
        self,
        state: FilterState,
        X: Any,
        y: np.ndarray,
        n_train: int,
        codes: np.ndarray,
        t: int,
        k: int,
        n_target: int,
        model: PartitionModel,
        executor: Executor,
        dataset: Dataset,
        identity: dict[str, Any],
        progress: bool,
    ) -> None:
        """Run rounds on ``state`` in place until a stop rule (or the round budget) hits."""
        if state.stop_reason is not None:
            return
        shared = None
        m = self.n_partitions
        chunk = chunk_partitions(m, self.chunk_size, executor.n_workers, model)
        bound = (
            state.rounds_done
            + max(0, (int((state.train.removed_round < 0).sum()) - n_target)) // max(k, 1)
            + 1
        )
        total = min(bound, self.max_rounds) if self.max_rounds else bound
        bar = tqdm(
            total=total, initial=state.rounds_done, desc="aflite: rounds", disable=not progress
        )
        try:
            while True:
                S = state.train.remaining
                R = state.eval.remaining + n_train if state.eval is not None else None
                if len(S) <= n_target:
                    state.stop_reason = "target_size"
                    break
                if R is not None and len(R) == 0:
                    state.stop_reason = "eval_exhausted"
                    break
                if self.max_rounds is not None and state.rounds_done >= self.max_rounds:
                    logger.info(
                        "aflite: stopping at the round budget max_rounds=%d", self.max_rounds
                    )
                    break
                r = state.rounds_done + 1
                if shared is None:
                    # The model's shared start (pooled fit + preconditioner of the
                    # batched model) is built once per run on D, not once per round.
                    start = prepare_start(model, X, y, n_train, t, dataset.n_classes)
                    shared = executor.put(
                        {"X": X, "y": y, "model": model, "n_classes": dataset.n_classes,
                         "start": start}
                    )  # fmt: skip
                self._round(state, r, S, R, codes, (t, k, n_target), executor, shared, chunk)
                if self.checkpoint_dir is not None:
                    save_checkpoint(self.checkpoint_dir, identity, state)
                bar.update(1)
                bar.set_postfix(size=len(state.train.remaining))
                if state.stop_reason is not None:
                    break
        finally:
            bar.close()
        if self.checkpoint_dir is not None and state.stop_reason is not None:
            save_checkpoint(self.checkpoint_dir, identity, state)

    def _round(
        self,
        state: FilterState,
        r: int,
        S: np.ndarray,
        R: np.ndarray | None,
        codes: np.ndarray,
        sizes: tuple[int, int, int],
        executor: Executor,
        shared: Any,
        chunk: int,
    ) -> None:
        """One filtering phase of Algorithm 1 (plus the evaluation lines of paper 004)."""
        t, k, n_target = sizes
        n_train = len(state.train.removed_round)
        n_total = n_train + (0 if state.eval is None else len(state.eval.removed_round))
        # Re-code the groups of S densely so sample_partitions sees codes in [0, G).
        codes_S = pd.factorize(codes[S])[0]
        pos_train, pos_excl = sample_partitions(
            codes_S, t, self.n_partitions, round_rng(state.entropy, r, STREAM_PARTITIONS)
        )
        # Active rows: S, then R. Partitions index S's positions, which come first.
        rows = S if R is None else np.concatenate([S, R])
        correct, held = score_partitions(
            executor,
            shared,
            None if len(rows) == n_total else rows,  # nothing removed yet: no copy
            pos_train,
            pos_excl,
            chunk,
        )
        p_all = predictability(correct, held)
        p_S = p_all[: len(S)]

        chosen = select_slice(
            p_S, k, self.tau, self.selection, round_rng(state.entropy, r, STREAM_SELECT)
        )
        with np.errstate(invalid="ignore"):
            n_above = int((p_S >= self.tau).sum())
        chosen = chosen[: max(0, len(S) - n_target)]  # never below n
        self._record(state.train, S, correct[: len(S)], held[: len(S)], p_S, S[chosen], r, n_train)
        entry: dict[str, Any] = {
            "round": r,
            "n_before": len(S),
            "n_scored": int(np.isfinite(p_S).sum()),
            "n_above_tau": n_above,
            "n_removed": len(chosen),
            "n_after": int(len(S) - len(chosen)),
            "mean_p": mean_or_none(p_S),
            "p_hist": p_histogram(p_S),
            "n_excluded_by_groups": int(sum(len(e) for e in pos_excl)),
        }
        if R is not None:
            p_R = p_all[len(S) :]
            with np.errstate(invalid="ignore"):
                drop = R[p_R >= self.tau] - n_train
            self._record(
                state.eval,
                R - n_train,
                correct[len(S) :],
                held[len(S) :],
                p_R,
                drop,
                r,
                len(state.eval.removed_round),
            )
            entry.update(
                n_eval_before=len(R),
                n_eval_removed=len(drop),
                n_eval_after=int(len(R) - len(drop)),
                mean_p_eval=mean_or_none(p_R),
                p_eval_hist=p_histogram(p_R),
            )
        state.history.append(entry)
        state.rounds_done = r
        n_left = len(S) - len(chosen)
        if n_left <= n_target:
            state.stop_reason = "target_size"
        elif len(chosen) < k:
            state.stop_reason = "tau"
        logger.info(
            "aflite round %d: |S| %d -> %d (%d with p >= %.2f)%s",
            r,
            len(S),
            n_left,
            n_above,
            self.tau,
            "" if R is None else f"; eval {len(R)} -> {entry['n_eval_after']}",
        )

    @staticmethod
    def _record(
        side: SideState,
        rows: np.ndarray,
        correct: np.ndarray,
        held: np.ndarray,
        p: np.ndarray,
        removed: np.ndarray,
        r: int,
        n: int,
    ) -> None:
        side.times_held_out[rows] += held
        side.times_correct[rows] += correct
        scored = np.isfinite(p)
        side.last_p[rows[scored]] = p[scored]
        p_round = np.full(n, np.nan, dtype=np.float32)
        p_round[rows] = p
        side.p_rounds.append(p_round)
        side.removed_round[removed] = r

    # -- output -----------------------------------------------------------------------
    def _scores(self, side: SideState, ds: Dataset) -> pd.DataFrame:
        names = np.asarray(ds.label_names, dtype=object)
        rr = side.removed_round
        stage = np.where(rr < 0, STAGES[2], np.where(rr == 1, STAGES[0], STAGES[1]))
        cols: dict[str, Any] = {
            "id": ds.ids,
            "label": names[ds.labels],
            "aflite_score": side.last_p,
            "is_aflite_issue": rr >= 0,
            "removed_round": rr.astype(np.int64),
            "stage": stage.astype(object),
            "times_held_out": side.times_held_out,
            "times_correct": side.times_correct,
        }
        for r, p in enumerate(side.p_rounds, start=1):
            cols[f"p_round_{r}"] = p.astype(np.float64)
        return pd.DataFrame(cols)

    def _examples(self, scores: pd.DataFrame, ds: Dataset, entropy: int) -> dict[str, list]:
        """A few removed (earliest, most predictable first) and kept (random) examples."""
        fields = list(ds.task.text_fields)
        removed = scores.index[scores["is_aflite_issue"]].to_numpy()
        order = np.lexsort(
            (
                -scores["aflite_score"].to_numpy()[removed],
                scores["removed_round"].to_numpy()[removed],
            )
        )
        removed = removed[order[: self.n_examples]]
        kept = scores.index[~scores["is_aflite_issue"]].to_numpy()
        rng = round_rng(entropy, 0, STREAM_EXAMPLES)
        kept = np.sort(kept[rng.permutation(len(kept))[: self.n_examples]])

        def rows(idx: np.ndarray) -> list[dict[str, Any]]:
            out = []
            for i in idx:
                ex = {"id": str(scores["id"].iloc[i]), "label": str(scores["label"].iloc[i])}
                ex.update({f: ds.frame[f].iloc[i] for f in fields})
                ex["aflite_score"] = float(scores["aflite_score"].iloc[i])
                ex["removed_round"] = int(scores["removed_round"].iloc[i])
                out.append(ex)
            return out

        return {"removed_examples": rows(removed), "kept_examples": rows(kept)}

    def _output(
        self,
        state: FilterState,
        dataset: Dataset,
        eval_dataset: Dataset | None,
        sizes: tuple[int, int, int],
        feat_config: dict[str, Any],
        model: PartitionModel,
        fps: dict[str, str],
    ) -> AnalysisOutput:
        t, k, n_target = sizes
        train_scores = self._scores(state.train, dataset)
        self.train_scores_ = train_scores
        n0 = len(dataset)
        n_final = int((state.train.removed_round < 0).sum())
        metrics: dict[str, float] = {
            "n_initial": n0,
            "n_final": n_final,
            "n_removed": n0 - n_final,
            "removed_fraction": (n0 - n_final) / n0,
            "n_rounds": state.rounds_done,
            "train_size": t,
            "slice_size": k,
            "target_size": n_target,
        }
        for h in state.history:
            metrics[f"mean_p_round_{h['round']}"] = _nan(h["mean_p"])
        if state.train.p_rounds:
            last = state.train.p_rounds[-1][state.train.removed_round < 0]
            metrics["mean_p_final"] = _nan(mean_or_none(last.astype(np.float64)))
        stop = state.stop_reason or "max_rounds"
        details: dict[str, Any] = {
            "mode": "train" if eval_dataset is None else "eval",
            "stop_reason": stop,
            "stop_reason_text": _STOP_TEXT[stop].format(k=k, tau=self.tau, n=n_target),
            "n_partitions": self.n_partitions,
            "train_size": t,
            "slice_size": k,
            "target_size": n_target,
            "tau": self.tau,
            "selection": self.selection,
            "entropy": str(state.entropy),
            "rounds": state.history,
            "hist_edges": np.linspace(0.0, 1.0, HIST_BINS + 1).round(4).tolist(),
            "sizes": [n0] + [h["n_after"] for h in state.history],
            "featurizer": feat_config,
            "model": _jsonable_config(model),
            "label_names": list(dataset.label_names),
            "text_fields": list(dataset.task.text_fields),
            "group_by": self.group_by,
        }
        if eval_dataset is None:
            scores = train_scores
            details.update(self._examples(scores, dataset, state.entropy))
            details["baselines"] = _baselines(n_final, n0, "training set")
            summary = (
                f"kept {n_final:,} of {n0:,} examples (removed {(n0 - n_final) / n0:.1%}) "
                f"in {state.rounds_done} round(s); stop: {details['stop_reason_text']}"
            )
        else:
            scores = self._scores(state.eval, eval_dataset)
            rr = state.eval.removed_round
            n_eval = len(eval_dataset)
            first, later, kept = int((rr == 1).sum()), int((rr > 1).sum()), int((rr < 0).sum())
            metrics.update(
                n_eval=n_eval,
                n_eval_filtered_first_round=first,
                n_eval_filtered_later_rounds=later,
                n_eval_selected=kept,
                eval_selected_fraction=kept / n_eval,
            )
            for h in state.history:
                metrics[f"mean_p_eval_round_{h['round']}"] = _nan(h.get("mean_p_eval"))
            details["stages"] = {STAGES[0]: first, STAGES[1]: later, STAGES[2]: kept}
            details["eval_sizes"] = [n_eval] + [h["n_eval_after"] for h in state.history]
            details.update(self._examples(scores, eval_dataset, state.entropy))
            details["baselines"] = _baselines(kept, n_eval, "evaluation set")
            summary = (
                f"AF-selected {kept:,} of {n_eval:,} evaluation examples ({kept / n_eval:.1%}); "
                f"{first:,} filtered in round 1, {later:,} in later rounds; "
                f"{state.rounds_done} round(s) on {n0:,} training examples "
                f"(kept {n_final:,}); stop: {details['stop_reason_text']}"
            )
        return AnalysisOutput(
            scores=scores, metrics=metrics, summary=summary, details=details, fingerprints=fps
        )


_STOP_TEXT = {
    "tau": "fewer than k={k} examples reached p >= {tau}",
    "target_size": "at most n={n} examples remain",
    "eval_exhausted": "every evaluation example was filtered",
    "max_rounds": "round budget (max_rounds) reached",
}


def _nan(v: float | None) -> float:
    return math.nan if v is None else float(v)


def _jsonable_config(model: Any) -> dict[str, Any]:
    cfg = model.config() if hasattr(model, "config") else {"model": type(model).__name__}
    return to_jsonable(dict(cfg))


def _baselines(size: int, n: int, what: str) -> dict[str, Any]:
    """Size-matched baselines of paper 000 Sec. 4.2 (computed by the experiment scripts)."""
    return {
        "random_subset": {
            "size": size,
            "of": n,
            "how": f"a uniform random subset of the {what} of the same size "
            "(spurious.detectors.aflite.baselines.random_subset_baseline)",
        },
        "one_shot_filter": {
            "size": size,
            "of": n,
            "how": "one classifier, one round: the most predictable examples removed down to "
            "the same size (spurious.detectors.aflite.baselines.one_shot_filter_baseline)",
        },
    }


def _describe_diff(stored: dict[str, Any], current: dict[str, Any], keys: list[str]) -> str:
    parts = []
    for key in keys[:3]:
        a, b = stored.get(key), current.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            sub = sorted(x for x in set(a) | set(b) if a.get(x) != b.get(x))
            parts.append(
                f"{key}: " + ", ".join(f"{x} {a.get(x)!r} -> {b.get(x)!r}" for x in sub[:3])
            )
        else:
            parts.append(f"{key}: {a!r} -> {b!r}")
    return "; ".join(parts)


def _spec_name(spec: Any) -> str:
    name = spec if isinstance(spec, str) else type(spec).__name__
    return "".join(c if c.isalnum() else "_" for c in str(name).lower()).strip("_") or "custom"


def _view_words(view: Any) -> str:
    name = getattr(view, "name", view)
    if name == "full":
        return "full input"
    return str(name).replace("_only", "-only input").replace("_", " ")


def _baseline_words(view: Any, feats: Any) -> str:
    words = f"the {_view_words(view)}"
    return words if feats is None else f"{words} as {_spec_name(feats)} features"


def _evidence_row(res: dict[str, Any]) -> dict[str, float]:
    return {k: float(res[k]) for k in ("share", "share_null", "effect", "ci_low", "ci_high")}


def _add_evidence(out: AnalysisOutput, evidence: dict[str, Any] | None) -> None:
    """Metrics and details of the verdict's evidence (see ``_predictability_evidence``)."""
    if evidence is None:  # n_shuffles=0: no null, no baselines
        out.details["predictability"] = {"no_baseline_reason": "n_shuffles=0: no null was run"}
        return
    m = out.metrics
    main = evidence["main"]
    m["predictable_share"], m["predictable_share_null"] = main["share"], main["share_null"]
    m["predictable_beyond_null"] = main["effect"]
    m["predictable_beyond_null_ci_low"] = main["ci_low"]
    m["predictable_beyond_null_ci_high"] = main["ci_high"]
    for b in evidence["baselines"]:
        key = b["key"]
        m[f"baseline_share_{key}"], m[f"baseline_share_null_{key}"] = b["share"], b["share_null"]
        m[f"baseline_beyond_null_{key}"] = b["effect"]
        m[f"baseline_beyond_null_{key}_ci_low"] = b["ci_low"]
        m[f"baseline_beyond_null_{key}_ci_high"] = b["ci_high"]
        if key == evidence["chosen"]:
            m["shortcut_beyond_null"] = b["effect"]
            m["shortcut_beyond_null_ci_low"] = b["ci_low"]
            m["shortcut_beyond_null_ci_high"] = b["ci_high"]
    out.details["predictability"] = evidence
