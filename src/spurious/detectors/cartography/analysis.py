"""The registered ``cartography`` analysis: data maps of a run's splits, one per view.

The :class:`Cartography` class gets training dynamics through the run context (fast
path, fine-tuning or loaded), maps the scored split (and, with an evaluation split, the
training split's marks) with :mod:`~spurious.detectors.cartography.maps`, and compares
the full-input map with the partial-input one
(:mod:`~spurious.detectors.cartography.stats`), permuting labels for the null; the
headline, summary and notes are written by
:mod:`~spurious.detectors.cartography.verdict`.
"""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from spurious.analysis import AnalysisOutput, Requirements, VerdictScale, register_analysis
from spurious.context import RunContext
from spurious.data.dataset import Dataset
from spurious.data.tasks import Task
from spurious.detectors.base import Detector
from spurious.detectors.cartography import mcq
from spurious.detectors.cartography.maps import (
    VIEW_COLUMNS,
    anti_biased_by_label,
    check_dynamics_dir,
    learning_curves,
    map_view,
    plain_meta,
    region_crosstab,
    region_examples,
    region_marks,
)
from spurious.detectors.cartography.nulls import null_spearmans
from spurious.detectors.cartography.stats import (
    excess_over_null,
    spearman_interval,
    spearman_or_none,
    view_metrics,
)
from spurious.detectors.cartography.verdict import (
    cartography_headline,
    cartography_summary,
    map_notes,
)
from spurious.exceptions import AnalysisError, ParameterError
from spurious.execution import Executor, executor_config, make_executor
from spurious.models.dynamics import FAST_OPTIONS, PATHS, TrainingDynamics
from spurious.results import Headline
from spurious.utils.validation import Interval, StrOptions
from spurious.views import get_view

#: Fewest training examples the analysis runs on (ranks and quantiles need a few).
MIN_TRAIN_EXAMPLES = 10
#: Provider options that are parameters of the analysis itself.
_RESERVED_OPTIONS = ("path", "view", "features", "epochs", "model", "random_state", "source")


def default_partial_view(task: Task) -> str | None:
    """The partial input paper 002 maps (Sec. 4.1): hypothesis-only for NLI, the first
    text of other pairs (the first question for QQP), the options alone for multiple
    choice; ``None`` for single-text tasks.

    Examples
    --------
    >>> from spurious.data.tasks import get_task
    >>> default_partial_view(get_task("nli")), default_partial_view(get_task("mcq"))
    ('hypothesis_only', 'choices_only')
    >>> default_partial_view(get_task("text")) is None
    True
    """
    if task.multiple_choice:
        return mcq.MC_PARTIAL_VIEW
    if len(task.text_fields) < 2:
        return None
    field = task.elicited_field or task.text_fields[0]
    return f"{field}_only"


@register_analysis
class Cartography(Detector):
    """Data maps from training dynamics, anti-biased examples, partial-input cartography.

    Parameters
    ----------
    path : {"fast", "finetune", "load"}, default="fast"
        Where the dynamics come from: ``"fast"``, a probe trained for ``epochs`` epochs
        on frozen ``features`` (seconds); ``"finetune"``, the fine-tuning engine
        (``spurious.models.finetune``); ``"load"``, dynamics saved earlier in
        ``dynamics_dir`` (:meth:`TrainingDynamics.save` or allenai/cartography files) for
        the full view, the partial view then taking the fast path.
    features : str, default="minilm"
        Featurizer spec of the fast path (``"bow"``, ``"tfidf"``, ``"minilm"``, a model
        folder); the matrices are shared with the other analyses of the run. On
        multiple-choice items (task ``mcq``) the spec of the option blocks an option
        scorer reads: ``"lexical"`` (option cues) or a sentence encoder.
    view : str, default="full"
        The input the mapped model sees (multiple choice: ``full``, ``choices_only``,
        ``question_only``).
    partial_view : str or None, default="auto"
        The partial input mapped beside it (partial-input cartography, paper 002 Sec. 3):
        ``"auto"`` = hypothesis-only for NLI, the first text for other pairs, the options
        alone (``choices_only``) for multiple choice, none for single texts; ``None`` =
        no partial-input map. Multiple-choice maps rank by confidence above the item's
        chance ``1/k`` (see :mod:`~spurious.detectors.cartography.mcq`).
    epochs : int, optional
        Training epochs; default 10 on the fast path (paper 002 Table 8: at most 10 for
        base models), the engine's default (3) when fine-tuning.
    model : str, optional
        Fast path: ``"mlp"`` (default) or ``"linear"``; fine-tune path: the model to
        fine-tune (default: the engine's).
    train_options : dict, optional
        More training settings passed to the dynamics maker (fast path: ``lr``,
        ``batch_size``, ``hidden_size``, ``weight_decay``, ``records_per_epoch``,
        ``standardize``, ``device``; ``record_logits``, off by default: the maps read
        ``p_gold`` only).
    dynamics_dir : str, optional
        Folder read when ``path="load"``, and only then (refused with another path).
    anti_biased_fraction : float, default=0.21
        q / 100: the share of the scored split marked anti-biased (its most hard-to-learn
        examples). Paper 002 picks q per dataset so that the biased training set keeps
        79% of MultiNLI, 82% of QQP and ANLI and 87% of WANLI (Sec. 4.1, Table 7: 2,070
        anti-biased of 9,815 MultiNLI test examples); the default is MultiNLI's 21%.
    ambiguous_fraction, hard_fraction, easy_fraction : float, default=0.33
        Region sizes by rank (see
        :func:`~spurious.detectors.cartography.regions.assign_regions`), Swayamdipta et al.'s 33%.
    n_examples : int, default=10
        Examples per region kept for the report.
    held_out_folds : int, optional
        Without an evaluation split, on the fast path: map each training example with a
        probe trained on the other folds (cross-fitted dynamics,
        :func:`~spurious.models.dynamics.crossfit_dynamics`), e.g. 2. ``None`` (default):
        in-sample dynamics, Swayamdipta et al.'s definition, where a probe that
        memorises its training data makes late epochs "easy" for every example.
    null_permutations : int, default=5
        Fast path with a partial-input map: map both views again this many times with
        the labels permuted (seeded) and report the agreement of the two maps beyond
        what permuted labels give (the headline's null); 0 skips it. A full-input and a
        partial-input probe agree even on permuted labels (both see the partial input
        and the label base rates), and that agreement varies between permutations (sd
        ~0.05 on a few hundred examples), so one draw is not enough.
    executor : "local", "ray" or Executor, default="local"
        Where those null trainings run, one task per (draw, view) (see
        :mod:`spurious.execution`); every executor gives the same result.
    random_state : int, default=0

    Examples
    --------
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> from spurious.detectors.cartography import REGIONS, top_k_count
    >>> train, test = make_nli_artifacts(n=400, random_state=0).dataset.split(0.3)
    >>> res = Cartography(features="bow", epochs=3).run(train, test)
    >>> sorted(set(res.scores["region"])) <= sorted(REGIONS)
    True
    >>> int(res.scores["anti_biased"].sum()) == top_k_count(0.21, len(test))
    True
    """

    name: ClassVar[str] = "cartography"
    description: ClassVar[str] = (
        "Data maps from training dynamics (confidence, variability), easy / ambiguous / "
        "hard-to-learn regions, anti-biased examples and partial-input cartography - "
        "paper 002 Sec. 3 after Swayamdipta et al. 2020."
    )
    requires: ClassVar[Requirements] = Requirements(
        labels=True, features=True, training_dynamics=True, tasks=("nli", "pair", "text", "mcq")
    )

    def requirements(self) -> Requirements:
        """Training a model (``path`` fast or finetune) needs torch; loading dynamics does
        not."""
        if self.path == "load":
            return type(self).requires
        return replace(type(self).requires, extras=(("torch", "torch"),))

    #: Spearman correlation of full-input and partial-input confidence beyond the same
    #: correlation with permuted labels: how far what the full model finds easy is what the
    #: partial input alone makes easy. The null already sits high (0.68-0.84 on synthetic
    #: NLI), so the excess lives on a compressed scale: 0.05 / 0.15 / 0.3.
    verdict_scale: ClassVar[VerdictScale] = VerdictScale(
        0.05,
        0.15,
        0.3,
        {
            "none": "easy examples are not the ones the partial input gives away",
            "low": "weak agreement with the partial-input map",
            "moderate": "easy examples are partly those the partial input gives away",
            "high": "what is easy to learn is largely what the partial input gives away",
        },
    )
    fast_params: ClassVar[dict[str, Any]] = {"features": "bow", "epochs": 3}
    profiles: ClassVar[dict[str, dict[str, Any]]] = {
        "quick": {"epochs": 5, "null_permutations": 3},
        "full": {},
    }
    metric_docs: ClassVar[dict[str, str]] = {
        "share_<region>": "Fraction of scored examples in the region "
        "(easy_to_learn, ambiguous, hard_to_learn, other), [0, 1].",
        "mean_confidence": "Mean over examples of the mean gold-label probability, [0, 1].",
        "mean_variability": "Mean over examples of the std of the gold-label probability.",
        "mean_correctness": "Mean fraction of epochs an example was predicted correctly.",
        "mean_forgetting": "Mean number of correct -> incorrect transitions per example.",
        "n_anti_biased": "Scored examples marked anti-biased (the q% hardest).",
        "anti_biased_fraction": "n_anti_biased / n_scored.",
        "n_anti_biased_train": "With an evaluation split: training examples marked the same way.",
        "hard_confidence_cut": "Highest confidence among the anti-biased examples.",
        "final_accuracy": "Accuracy on the scored split at the last recording, [0, 1].",
        "partial_<metric>": "The same for the partial-input map.",
        "spearman_confidence": "Spearman rho of full vs partial-input confidence, [-1, 1].",
        "spearman_confidence_ci_low": "Lower end of its 95% Fisher-z interval (se "
        "sqrt(1.06 / (n - 3)), Fieller et al. 1957).",
        "spearman_confidence_ci_high": "Upper end of that interval.",
        "spearman_confidence_null": "Mean of the same rho over null_permutations pairs of "
        "maps made with the labels permuted (fast path), [-1, 1].",
        "spearman_confidence_null_sd": "Standard deviation of that rho over the permutations.",
        "spearman_excess": "spearman_confidence - spearman_confidence_null: the agreement due "
        "to the labels (the headline effect).",
        "spearman_excess_ci_low": "Lower end of its 95% normal interval; se^2 = the delta-"
        "method variance of rho, (1 - rho^2)^2 * 1.06 / (n - 3), plus null_sd^2 * (1 + 1/B).",
        "spearman_excess_ci_high": "Upper end of that interval.",
        "spearman_excess_p_value": "One-sided p-value of spearman_excess > 0 (normal, same se).",
        "anti_biased_jaccard": "Jaccard overlap of the full and partial anti-biased sets.",
        "n_scored": "Examples scored.",
        "n_train": "Examples the mapping model trained on.",
        "n_recordings": "Recordings (epochs) per example.",
    }
    score_columns: ClassVar[dict[str, str]] = {
        "id": "Example id.",
        "label": "Gold label.",
        "confidence": "Mean gold-label probability over epochs, [0, 1].",
        "variability": "Population std of the gold-label probability over epochs, [0, 0.5].",
        "correctness": "Fraction of epochs the prediction was the gold label, [0, 1].",
        "forgetting": "Correct -> incorrect transitions between consecutive epochs, >= 0.",
        "region": "easy_to_learn, ambiguous, hard_to_learn or other (see assign_regions).",
        "anti_biased": "Among the q% lowest-confidence (most hard-to-learn) examples.",
        "cartography_score": "1 - confidence, [0, 1]; higher = harder to learn (multiple "
        "choice: (1 - confidence) / (1 - 1/k), 1 = at chance).",
        "n_options": "Multiple-choice items: options k of the item (chance = 1/k).",
        "is_cartography_issue": "Same as anti_biased.",
        "partial_<column>": "The same columns from the partial-input model.",
    }
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "path": [StrOptions(set(PATHS))],
        "features": [str],
        "view": [str],
        "partial_view": [str, None],
        "epochs": [Interval(Integral, 2, None, closed="left"), None],
        "model": [str, None],
        "train_options": [dict, None],
        "dynamics_dir": [str, None],
        "anti_biased_fraction": [Interval(Real, 0, 1, closed="both")],
        "ambiguous_fraction": [Interval(Real, 0, 1, closed="both")],
        "hard_fraction": [Interval(Real, 0, 1, closed="both")],
        "easy_fraction": [Interval(Real, 0, 1, closed="both")],
        "n_examples": [Interval(Integral, 0, None, closed="left")],
        "held_out_folds": [Interval(Integral, 2, None, closed="left"), None],
        "null_permutations": [Interval(Integral, 0, None, closed="left")],
        "executor": [str, Executor],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        path: str = "fast",
        features: str = "minilm",
        view: str = "full",
        partial_view: str | None = "auto",
        epochs: int | None = None,
        model: str | None = None,
        train_options: dict[str, Any] | None = None,
        dynamics_dir: str | None = None,
        anti_biased_fraction: float = 0.21,
        ambiguous_fraction: float = 0.33,
        hard_fraction: float = 0.33,
        easy_fraction: float = 0.33,
        n_examples: int = 10,
        held_out_folds: int | None = None,
        null_permutations: int = 5,
        executor: str | Executor = "local",
        random_state: int | None = 0,
    ) -> None:
        self.path = path
        self.features = features
        self.view = view
        self.partial_view = partial_view
        self.epochs = epochs
        self.model = model
        self.train_options = train_options
        self.dynamics_dir = dynamics_dir
        self.anti_biased_fraction = anti_biased_fraction
        self.ambiguous_fraction = ambiguous_fraction
        self.hard_fraction = hard_fraction
        self.easy_fraction = easy_fraction
        self.n_examples = n_examples
        self.held_out_folds = held_out_folds
        self.null_permutations = null_permutations
        self.executor = executor
        self.random_state = random_state

    # -- validation -----------------------------------------------------------------
    def validate_params(self) -> None:
        """Constraints, plus: region fractions that fit, a folder for ``path="load"``."""
        super().validate_params()
        if self.hard_fraction + self.easy_fraction > 1.0:
            raise ParameterError(
                "The 'hard_fraction' and 'easy_fraction' parameters of Cartography must sum to "
                f"at most 1; got {self.hard_fraction} + {self.easy_fraction}."
            )
        if self.held_out_folds is not None and self.path != "fast":
            raise ParameterError(
                "The 'held_out_folds' parameter of Cartography applies to path='fast'; got "
                f"path={self.path!r}."
            )
        if (self.path == "load") != bool(self.dynamics_dir):  # only path='load' reads it
            raise ParameterError(
                "The 'dynamics_dir' parameter of Cartography is the folder path='load' reads: "
                f"needed with it, ignored otherwise. Got dynamics_dir={self.dynamics_dir!r} "
                f"with path={self.path!r}."
            )
        if self.path == "fast" and self.model not in (None, "mlp", "linear"):
            raise ParameterError(
                "The 'model' parameter of Cartography must be 'mlp' or 'linear' on the fast "
                f"path; got {self.model!r}."
            )
        reserved = sorted(set(self.train_options or {}) & set(_RESERVED_OPTIONS))
        if reserved:
            raise ParameterError(
                f"The 'train_options' parameter of Cartography must not set {reserved}; they "
                "are parameters of their own."
            )
        if self.path == "fast":
            unknown = sorted(set(self.train_options or {}) - set(FAST_OPTIONS))
            if unknown:
                raise ParameterError(
                    f"The 'train_options' parameter of Cartography has unknown fast-path "
                    f"option(s) {unknown}; valid: {list(FAST_OPTIONS)}."
                )
            from spurious.features import make_featurizer

            if self.features != "lexical":  # the option cues of multiple-choice items
                make_featurizer(self.features)
        make_executor(self.executor)  # an unknown name, or Ray missing, fails here

    def _param_to_config(self, name: str, value: Any) -> Any:
        return executor_config(value) if name == "executor" else value

    @classmethod
    def _param_from_config(cls, name: str, value: Any) -> Any:
        return make_executor(value) if name == "executor" and isinstance(value, dict) else value

    def check(self, context: RunContext) -> None:
        """Views exist for the task; the fine-tuning engine is installed for that path;
        held-out folds only without an evaluation split, and no more than examples."""
        self._views(context.train.task)
        mcq.check_task_features(self, context)
        if self.held_out_folds is not None and context.eval is not None:
            raise ParameterError(
                "The 'held_out_folds' parameter of Cartography applies without an "
                "evaluation split (evaluation examples are already mapped by a model that "
                f"never trained on them); got held_out_folds={self.held_out_folds} with "
                "an evaluation split."
            )
        if (self.held_out_folds or 0) > len(context.train):
            raise ParameterError(
                f"The 'held_out_folds' parameter of Cartography ({self.held_out_folds}) "
                f"exceeds the number of training examples ({len(context.train)})."
            )
        check_dynamics_dir(self.path, self.dynamics_dir)  # before any work, as the others
        if self.path == "finetune" and importlib.util.find_spec("spurious.models.finetune") is None:
            raise AnalysisError(
                "Cartography with path='finetune' needs the fine-tuning engine "
                "(spurious.models.finetune, issue 8 parts 1-2), which this installation does "
                "not have; use path='fast'."
            )

    def mark_definitions(self, task: Task) -> list[str]:
        """``cartography``, and ``partial_input_cartography`` when a partial input is mapped."""
        partial = self._views(task)[1]
        return ["cartography", *(["partial_input_cartography"] if partial is not None else [])]

    def _views(self, task: Task) -> tuple[str, str | None]:
        if task.multiple_choice:
            return mcq.option_views(self)
        full = get_view(task, self.view).name
        auto = self.partial_view == "auto"
        partial = default_partial_view(task) if auto else self.partial_view
        if partial is not None:
            partial = get_view(task, partial).name
            if partial == full:
                partial = None  # mapping the same input twice says nothing new
        return full, partial

    def _dynamics(self, ctx: RunContext, view: str, *, partial: bool) -> TrainingDynamics:
        path = self.path
        if path == "load" and partial:
            path = "fast"  # loaded dynamics describe one model; the partial map is ours
        config: dict[str, Any] = {
            "path": path,
            "view": view,
            "random_state": self.random_state,
            **(self.train_options or {}),
        }
        if self.epochs is not None:
            config["epochs"] = self.epochs
        if path == "fast":
            config["features"] = self.features
            # The maps read p_gold and correctness only. Per-row logit lists cost time and
            # most of the frame (100k rows x 5 epochs: 4.8 s and 70 MiB with them, 4.0 s and
            # 28 MiB without; bench/bench_fast_path_recording.py); train_options may ask.
            config.setdefault("record_logits", False)
            if self.held_out_folds is not None:
                config["held_out_folds"] = self.held_out_folds
        if path == "load":
            config["source"] = str(self.dynamics_dir)
        if self.model is not None and not (partial and self.path == "load"):
            config["model"] = self.model
        return ctx.artifact("training_dynamics", **config)

    # -- the work -------------------------------------------------------------------
    def _map(self, dyn: TrainingDynamics, split: str, dataset: Dataset) -> pd.DataFrame:
        """The per-view columns for ``dataset``'s examples, in its row order."""
        return map_view(
            dyn,
            split,
            dataset,
            ambiguous_fraction=self.ambiguous_fraction,
            hard_fraction=self.hard_fraction,
            easy_fraction=self.easy_fraction,
            anti_biased_fraction=self.anti_biased_fraction,
            chance=mcq.item_chance(dataset),
        )

    def _run(self, ctx: RunContext) -> AnalysisOutput:
        scored = self.scored_dataset(ctx)
        split = "eval" if ctx.eval is not None else "train"
        if len(ctx.train) < MIN_TRAIN_EXAMPLES:
            raise AnalysisError(
                f"Cartography needs at least {MIN_TRAIN_EXAMPLES} training examples to rank "
                f"them; got {len(ctx.train)}."
            )
        full_view, partial_view = self._views(ctx.train.task)
        dyn = self._dynamics(ctx, full_view, partial=False)
        table = self._map(dyn, split, scored)
        names = np.asarray(scored.label_names, dtype=object)
        scores = pd.DataFrame({"id": scored.ids, "label": names[scored.labels]})
        if scored.task.multiple_choice:
            scores["n_options"] = mcq.n_options(scored)
        for col in VIEW_COLUMNS:
            scores[col] = table[col].to_numpy()
        scores["is_cartography_issue"] = table["anti_biased"].to_numpy()

        metrics = view_metrics(table, dyn, split, "")
        metrics["n_scored"] = float(len(scored))
        metrics["n_train"] = float(len(ctx.train))
        metrics["n_recordings"] = float(table.attrs["n_recordings"])
        marks = [region_marks(table, scored, split, "cartography")]
        if ctx.eval is not None:
            train_table = self._map(dyn, "train", ctx.train)
            metrics["n_anti_biased_train"] = float(train_table["anti_biased"].sum())
            marks.append(region_marks(train_table, ctx.train, "train", "cartography"))

        details: dict[str, Any] = {
            "views": {"full": full_view, "partial": partial_view},
            "scored_split": split,
            "label_names": list(scored.label_names),
            "region_rule": {
                "ambiguous_fraction": self.ambiguous_fraction,
                "hard_fraction": self.hard_fraction,
                "easy_fraction": self.easy_fraction,
                "anti_biased_fraction": self.anti_biased_fraction,
                "text": (
                    "easy_to_learn: highest confidence; hard_to_learn: lowest confidence; "
                    "ambiguous: highest variability among the rest (each by rank over the "
                    "scored split); other: the rest. anti-biased: lowest confidence."
                ),
            },
            "learning_curves": {"full": learning_curves(dyn)},
            "dynamics": {"full": plain_meta(dyn.meta)},
            "anti_biased_by_label": {"full": anti_biased_by_label(table, scored)},
            **(mcq.mc_details(scored) if scored.task.multiple_choice else {}),
        }

        partial_table = None
        if partial_view is not None:
            partial_table = self._partial_map(
                ctx, (full_view, partial_view), split, scored, table, scores, metrics, details,
                marks,
            )  # fmt: skip

        details["notes"] = map_notes(self, ctx)
        details["examples"] = {
            "full": region_examples(table, partial_table, scored, "partial_", self.n_examples),
        }
        if partial_table is not None:
            details["examples"]["partial"] = region_examples(
                partial_table, table, scored, "full_", self.n_examples
            )
        return AnalysisOutput(
            scores=scores,
            metrics=metrics,
            summary=cartography_summary(self, metrics, len(scored), split, partial_view),
            details=details,
            marks=pd.concat(marks, ignore_index=True),
        )

    def _partial_map(
        self,
        ctx: RunContext,
        views: tuple[str, str],
        split: str,
        scored: Dataset,
        table: pd.DataFrame,
        scores: pd.DataFrame,
        metrics: dict[str, float],
        details: dict[str, Any],
        marks: list[pd.DataFrame],
    ) -> pd.DataFrame:
        """Partial-input cartography: map ``views[1]`` too, and compare it with the full
        map ``table`` (Spearman of the confidences, against permuted labels on the fast
        path). Adds its columns, metrics, details and marks in place; returns its map."""
        partial_view = views[1]
        pdyn = self._dynamics(ctx, partial_view, partial=True)
        partial_table = self._map(pdyn, split, scored)
        marks.append(region_marks(partial_table, scored, split, "partial_input_cartography"))
        if ctx.eval is not None:
            marks.append(
                region_marks(
                    self._map(pdyn, "train", ctx.train),
                    ctx.train,
                    "train",
                    "partial_input_cartography",
                )
            )
        for col in VIEW_COLUMNS:
            scores[f"partial_{col}"] = partial_table[col].to_numpy()
        metrics.update(view_metrics(partial_table, pdyn, split, "partial_"))
        rho = spearman_or_none(table["rank_confidence"], partial_table["rank_confidence"])
        if rho is not None:
            metrics["spearman_confidence"] = rho
            lo, hi = spearman_interval(rho, len(scored))
            metrics["spearman_confidence_ci_low"] = lo
            metrics["spearman_confidence_ci_high"] = hi
            if self.path == "fast" and self.null_permutations:
                executor = make_executor(self.executor)
                try:
                    nulls = null_spearmans(self, ctx, views, split, scored, executor)
                finally:
                    if isinstance(self.executor, str):  # made here
                        executor.close()
                if nulls:
                    metrics.update(excess_over_null(rho, nulls, len(scored)))
        a, b = table["anti_biased"].to_numpy(), partial_table["anti_biased"].to_numpy()
        if (a | b).any():
            metrics["anti_biased_jaccard"] = float((a & b).sum() / (a | b).sum())
        details["learning_curves"]["partial"] = learning_curves(pdyn)
        details["dynamics"]["partial"] = plain_meta(pdyn.meta)
        details["anti_biased_by_label"]["partial"] = anti_biased_by_label(partial_table, scored)
        details["region_crosstab"] = region_crosstab(table, partial_table)
        return partial_table

    def headline(self, result: Any) -> Headline:
        """Agreement of the full and partial-input maps beyond permuted labels (see
        :func:`~spurious.detectors.cartography.verdict.cartography_headline`)."""
        return cartography_headline(self, result)
