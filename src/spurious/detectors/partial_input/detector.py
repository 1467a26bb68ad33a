"""The registered ``partial_input`` detector: conditions in, scores, metrics and details out.

:class:`PartialInput` gets class probabilities per condition (a probe fitted on the
training split, out-of-fold probabilities from :mod:`~spurious.detectors.partial_input.crossfit`,
or fine-tuned models from :mod:`~spurious.detectors.partial_input.finetuned`), scores
them with :func:`~spurious.detectors.partial_input.metrics.leakage_metrics`, adds TRA
for fine-tuned models, and writes its scores, examples and summary with
:mod:`~spurious.detectors.partial_input.outputs`.
"""

from __future__ import annotations

import logging
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from tqdm.auto import tqdm

from spurious.analysis import AnalysisOutput, Requirements, VerdictScale, register_analysis
from spurious.context import RunContext
from spurious.data.dataset import Dataset
from spurious.data.folds import check_fold_groups
from spurious.detectors.base import Detector
from spurious.detectors.partial_input.crossfit import (
    _CrossFitInputs,
    _fit_predict,
    assign_folds,
    fit_by_condition,
    fit_by_fold,
    joint,
)
from spurious.detectors.partial_input.finetuned import (
    fine_tuned_probabilities,
    model_summary,
    token_relevance_agreement,
)
from spurious.detectors.partial_input.metrics import leakage_metrics
from spurious.detectors.partial_input.outputs import (
    leakage_scores,
    leakage_summary,
    per_class_accuracy,
    top_examples,
)
from spurious.exceptions import AnalysisError, ParameterError
from spurious.execution import Executor, make_executor
from spurious.features import LexicalFeaturizer, make_featurizer
from spurious.models.sklearn_adapter import make_probe
from spurious.results import Headline
from spurious.utils.limits import MAX_RESAMPLES
from spurious.utils.validation import Interval, StrOptions
from spurious.views import View, get_view, standard_views

logger = logging.getLogger(__name__)


__all__ = ["PartialInput"]


@register_analysis
class PartialInput(Detector):
    """Partial-input (single-sentence) label leakage with bootstrap intervals.

    Parameters
    ----------
    features : str or Featurizer, default="tfidf"
        ``"bow"``, ``"tfidf"``, ``"minilm"`` (offline all-MiniLM-L6-v2 sentence
        embeddings; two-field views get ``[u, v, |u-v|, u*v]``), a local model directory,
        or a :class:`~spurious.features.Featurizer`.
    probe : str or estimator, default="logistic"
        See :func:`spurious.models.make_probe`.
    conditions : list of str, optional
        Partial views to test (default: every single-field view of the task, e.g.
        ``premise_only`` and ``hypothesis_only``).
    n_folds : int, default=5
        Without an evaluation split, out-of-fold predictions from this many folds
        score every example.
    group_by : "auto", None or str, default="auto"
        Rows sharing a key never sit on both sides of a fold (see
        :meth:`spurious.data.Dataset.group_keys`: the ``group`` column, else the NLI
        premise).
    n_resamples : int, default=1000
        Bootstrap resamples for the intervals (10 to 100,000).
    confidence : float, default=0.95
    issue_threshold : float, default=0.9
        An example is flagged (``is_partial_input_issue``) when the probe of a leaking
        partial input (its Delta_maj interval lies above 0) predicts its gold label with
        probability at least this.
    n_top_examples : int, default=20
        Most leaky examples kept for the report.
    random_state : int, default=0
    executor : "local", "ray" or Executor, default="local"
        Where the fold x condition fits of cross-fitting run (see
        :mod:`spurious.execution`); every executor gives the same result.
    model : {"probe", "finetune"}, default="probe"
        ``"probe"``: ``probe`` on ``features`` (seconds). ``"finetune"``: a transformer
        fine-tuned per condition on the training split with the training engine (the
        ``trained_model`` artifact, cached on disk; paper 003 Sec. 2.4), applied to the
        evaluation split, which this needs (it is never used to pick weights); adds
        token relevance agreement (``tra_<cond>``). ``features`` and ``probe`` are then
        unused.
    finetune : dict, optional
        :class:`~spurious.models.finetune.FineTuneConfig` fields for ``model="finetune"``
        (``model``, ``epochs``, ``learning_rate`` ...; ``view`` is set per condition,
        ``seed`` from ``random_state``). Default: the engine's defaults (MiniLM, 3
        epochs) with ``early_stopping_patience=None`` (every epoch trained, the last
        weights kept, so no weights are chosen on the evaluation split) and ``seed`` =
        ``random_state`` when that is an int, else 0.
    tra_examples : int or None, default=None
        ``model="finetune"``: evaluation examples scored for TRA (a seeded sample);
        ``None``: all; ``0``: no TRA.
    tra_alignment : {"tokens", "pad"}, default="tokens"
        How a partial input's token relevance is zero-padded to the full input's length
        (see :func:`spurious.models.finetune.attribution.align_to_full`).
    tra_mode : {"gold_posterior", "authors"}, default="gold_posterior"
        What Eq. 9 differentiates (see :mod:`spurious.models.finetune.attribution`):
        ``"gold_posterior"``, the gold label's posterior w.r.t. the word embeddings,
        special tokens kept (the paper's text); ``"authors"``, the summed logits w.r.t.
        the embedding layer's output with the first token dropped (the authors' public
        code; with ``tra_alignment="pad"`` their computation). The TRA in the summary and
        metrics is the one of this mode.

    Examples
    --------
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> data = make_nli_artifacts(n=600, artifact_rate=0.9, random_state=0).dataset
    >>> train, test = data.split(0.3, random_state=0)
    >>> res = PartialInput(n_resamples=200).run(train, test)
    >>> res.metrics["delta_maj_hypothesis_only"] > 0.1
    True
    """

    name: ClassVar[str] = "partial_input"
    description: ClassVar[str] = (
        "How much of the label a model can predict from part of the input "
        "(hypothesis-only, premise-only, question-only) - PECO paper Sec. 2-3.1."
    )
    requires: ClassVar[Requirements] = Requirements(labels=True, multi_field=True, features=True)
    #: Delta_maj of the leakiest partial input, judged by its 95% interval's lower bound:
    #: leakage only when that lies above 0 (the "low" threshold is the smallest positive
    #: step, so a bound of exactly 0 reads "none").
    verdict_scale: ClassVar[VerdictScale] = VerdictScale(
        1e-12,
        0.05,
        0.15,
        {
            "none": "no leakage detectable (the interval includes 0)",
            "low": "weak leakage",
            "moderate": "moderate leakage",
            "high": "strong leakage",
        },
    )
    # Cheap probes and the decisive partial-input verdict: before the slower analyses.
    audit_order: ClassVar[int] = 20
    fast_params: ClassVar[dict[str, Any]] = {"n_resamples": 50}
    profiles: ClassVar[dict[str, dict[str, Any]]] = {"quick": {"n_resamples": 500}, "full": {}}
    metric_docs: ClassVar[dict[str, str]] = {
        "accuracy_full": "A_PSC (Eq. 2): accuracy of the full-input probe, [0, 1].",
        "accuracy_<cond>": "A_SSC (Eq. 3): accuracy of the probe seeing only <cond>, [0, 1].",
        "majority_accuracy": "Accuracy of always guessing the training split's majority label.",
        "delta_maj_<cond>": "Delta_maj (Eq. 4) = A_SSC - majority accuracy; > 0 means leakage.",
        "recovery_<cond>": "%R_R (Eq. 5) = A_SSC / A_PSC as a fraction (x100 for percent).",
        "nba_<cond>": "NBA (Eq. 7): fraction of examples where SSC and PSC probes agree.",
        "nbr_<cond>": "NBR (Eq. 8): of the examples where they agree, fraction both correct.",
        "<metric>_ci_low / _ci_high": "Percentile bootstrap interval over evaluation examples.",
        "max_delta_maj": "Largest Delta_maj over the partial conditions.",
        "n_train": "Examples the probes were trained on (per fold when cross-fitting).",
        "n_eval": "Examples scored.",
        "n_issues": "Examples flagged is_partial_input_issue.",
        "n_leaky_conditions": "Partial conditions whose Delta_maj 95% interval lies above 0 "
        "(the ones partial_input_score combines).",
        "tra_<cond>": "TRA (Eq. 10, model='finetune'): mean cosine similarity of the full- "
        "and partial-input models' token relevance (Eq. 9 as tra_mode says), [0, 1]; higher "
        "= they rely on the same tokens.",
        "n_tra": "Evaluation examples scored for TRA.",
    }
    score_columns: ClassVar[dict[str, str]] = {
        "id": "Example id.",
        "label": "Gold label.",
        "pred_<cond>": "Label predicted by the probe seeing <cond> (full = PSC).",
        "correct_<cond>": "Whether that prediction is the gold label.",
        "p_gold_<cond>": "Probability that probe gives the gold label, [0, 1].",
        "partial_input_score": "Max p_gold over the leaking partial conditions (those whose "
        "Delta_maj 95% interval lies above 0; none leaks: the leakiest condition's p_gold), "
        "[0, 1]; higher = more leaky.",
        "is_partial_input_issue": "A leaking partial condition's probe gives the gold label "
        "with p >= issue_threshold (never set when no condition leaks).",
        "tra_<cond>": "model='finetune': token relevance agreement of the full-input and "
        "<cond> models on this example (Eq. 10), [0, 1]; NaN when not sampled.",
    }
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "features": [str, object],
        "probe": [str, object],
        "conditions": [list, tuple, None],
        "n_folds": [Interval(Integral, 2, None, closed="left")],
        "group_by": [str, None],
        "n_resamples": [Interval(Integral, 10, MAX_RESAMPLES, closed="both")],
        "confidence": [Interval(Real, 0, 1, closed="neither")],
        "issue_threshold": [Interval(Real, 0, 1, closed="both")],
        "n_top_examples": [Interval(Integral, 0, None, closed="left")],
        "random_state": ["random_state"],
        "executor": [str, Executor],
        "model": [StrOptions({"probe", "finetune"})],
        "finetune": [dict, None],
        "tra_examples": [Interval(Integral, 0, None, closed="left"), None],
        "tra_alignment": [StrOptions({"tokens", "pad"})],
        "tra_mode": [StrOptions({"gold_posterior", "authors"})],
    }

    def __init__(
        self,
        features: Any = "tfidf",
        probe: Any = "logistic",
        conditions: list[str] | None = None,
        n_folds: int = 5,
        group_by: str | None = "auto",
        n_resamples: int = 1000,
        confidence: float = 0.95,
        issue_threshold: float = 0.9,
        n_top_examples: int = 20,
        random_state: int | None = 0,
        executor: str | Executor = "local",
        model: str = "probe",
        finetune: dict[str, Any] | None = None,
        tra_examples: int | None = None,
        tra_alignment: str = "tokens",
        tra_mode: str = "gold_posterior",
    ) -> None:
        self.features = features
        self.probe = probe
        self.conditions = conditions
        self.n_folds = n_folds
        self.group_by = group_by
        self.n_resamples = n_resamples
        self.confidence = confidence
        self.issue_threshold = issue_threshold
        self.n_top_examples = n_top_examples
        self.random_state = random_state
        self.executor = executor
        self.model = model
        self.finetune = finetune
        self.tra_examples = tra_examples
        self.tra_alignment = tra_alignment
        self.tra_mode = tra_mode

    def validate_params(self) -> None:
        """Check constraints, and that ``features``, ``probe``, ``executor`` and
        ``finetune`` resolve."""
        super().validate_params()
        make_featurizer(self.features)
        make_probe(self.probe)
        if isinstance(self.executor, str):
            make_executor(self.executor)
        if self.model == "finetune":
            self.finetune_config("full")

    def requirements(self) -> Requirements:
        """Fine-tuned models need an evaluation split (one fine-tune per condition, not
        per fold and condition) and the training engine."""
        if self.model == "finetune":
            return Requirements(labels=True, multi_field=True, eval_split=True, trained_model=True)
        return type(self).requires

    def finetune_config(self, view: str) -> dict[str, Any]:
        """The plain-data FineTuneConfig fields of the ``trained_model`` of ``view``."""
        from spurious.models.finetune import FineTuneConfig

        given = dict(self.finetune or {})
        if "view" in given:
            raise ParameterError(
                "The 'finetune' parameter must not set 'view': each condition's model is "
                "fine-tuned on its own view."
            )
        # A fine-tune's seed must be plain data (it is part of the artifact's key): an int
        # random_state is used as is; None or a RandomState object give seed 0.
        rs = self.random_state
        seed = int(rs) if isinstance(rs, Integral) else 0
        config = {"early_stopping_patience": None, "seed": seed, **given}
        FineTuneConfig.from_dict({**config, "view": view})  # validated now, names the field
        return config

    def _param_to_config(self, name: str, value: Any) -> Any:
        # An executor has a plain-data form, so a run using one can be re-run from its
        # manifest (the result does not depend on it).
        if name == "executor" and isinstance(value, Executor):
            if value.name == "local":
                return "local"
            opts = {k: getattr(value, k, None) for k in ("address", "num_cpus")}
            return {"kind": value.name, "options": {k: v for k, v in opts.items() if v is not None}}
        return value

    @classmethod
    def _param_from_config(cls, name: str, value: Any) -> Any:
        if name == "executor" and isinstance(value, dict):
            return make_executor(value.get("kind", "local"), **value.get("options", {}))
        return value

    # ------------------------------------------------------------------------------
    def check(self, context: RunContext) -> None:
        """Conditions name partial views of the task; ``group_by`` names a column."""
        self._views(context.train)
        if self.model == "finetune" and context.eval is None:
            raise AnalysisError(
                "partial_input with model='finetune' needs an evaluation split (--eval): "
                "it fine-tunes one model per condition on the data and scores the "
                "evaluation split (cross-fitting would fine-tune one per fold and "
                "condition); use model='probe' to cross-fit."
            )
        if context.eval is None:
            context.train.group_keys(self.group_by)
            if self.model == "probe":
                self._check_folds(context.train)
                check_fold_groups(context.train, self.n_folds, self.group_by)

    def _check_folds(self, dataset: Dataset) -> None:
        """Cross-fitting puts every label in every fold: each needs ``n_folds`` examples."""
        counts = np.bincount(dataset.labels, minlength=dataset.n_classes)
        smallest = int(counts[counts > 0].min()) if counts.any() else 0
        if smallest < self.n_folds:
            fix = (
                f"lower n_folds (--folds) to at most {smallest}"
                if smallest >= 2
                else "drop the label with a single example"
            )
            raise AnalysisError(
                f"Cross-fitting with n_folds={self.n_folds} (--folds) needs at least "
                f"{self.n_folds} examples of every label of {dataset.name!r}; the rarest has "
                f"{smallest}. Pass an evaluation split (--eval) or {fix}."
            )

    def _views(self, dataset: Dataset) -> list[View]:
        full = standard_views(dataset.task)["full"]
        if self.conditions is None:
            partial = [v for v in standard_views(dataset.task).values() if v.is_partial]
        else:
            partial = [get_view(dataset.task, c) for c in self.conditions]
            if any(not v.is_partial for v in partial):
                raise AnalysisError(
                    "The 'conditions' parameter lists partial views only; 'full' is always run."
                )
        return [full, *partial]

    def _predict(self, ctx: RunContext, view: View) -> np.ndarray:
        """Probe fitted on the training split; class probabilities for the evaluation split."""
        X_train = ctx.features(self.features, view.name, split="train")
        X_eval = ctx.features(self.features, view.name, split="eval")
        return self._fit_predict(X_train, ctx.train.labels, X_eval, ctx.train.n_classes)

    def _fit_predict(
        self, X_train: Any, y_train: np.ndarray, X_eval: Any, n_classes: int
    ) -> np.ndarray:
        return _fit_predict(self.probe, self.random_state, X_train, y_train, X_eval, n_classes)

    def _folds(self, ctx: RunContext) -> np.ndarray:
        """The test fold of every row, the same for every condition of the run."""
        if self.random_state is None or isinstance(self.random_state, Integral):
            seed = None if self.random_state is None else int(self.random_state)
            return ctx.artifact(
                "cv_folds", n_folds=self.n_folds, group_by=self.group_by, random_state=seed
            )
        # A RandomState object has no plain-data form for the memo key.
        return assign_folds(ctx.train, self.n_folds, self.group_by, self.random_state)

    def _cross_fit(self, ctx: RunContext, views: list[View]) -> dict[str, np.ndarray]:
        """Out-of-fold class probabilities of every row, per view.

        The default probe on a stateless matrix: one executor task per view, every
        fold's probe fitted together (:func:`fit_by_condition`). Otherwise every (fold,
        view) pair is one task (:func:`fit_by_fold`): it builds its fold's features from
        the shared inputs, fits the probe on the training folds and predicts the
        held-out fold.
        """
        dataset, progress = ctx.train, ctx.progress
        fold_of = self._folds(ctx)
        featurizer = make_featurizer(self.features)
        features: dict[str, Any] = {}
        if type(featurizer) is LexicalFeaturizer:
            # Tokenised once per block for the run (full and premise_only share the
            # premise block); each task builds its fold's vocabulary from the counts.
            needed = dict.fromkeys(b for v in views for b in featurizer.block_names(v))
            features["blocks"] = {
                b: ctx.artifact(
                    "lexical_counts",
                    ngram_max=int(featurizer.ngram_max),
                    lowercase=bool(featurizer.lowercase),
                    block=b,
                )
                for b in needed
            }
        elif featurizer.stateless:
            # Learns nothing: every row gets the same vector whatever the fold.
            features["matrices"] = {v.name: ctx.features(self.features, v.name) for v in views}
        else:
            # Any other featurizer is refitted on each fold's training rows.
            features["dataset"] = dataset
        inputs = _CrossFitInputs(
            featurizer=featurizer,
            y=dataset.labels,
            fold_of=fold_of,
            n_classes=dataset.n_classes,
            probe=self.probe,
            random_state=self.random_state,
            **features,
        )

        executor = make_executor(self.executor)
        owns_executor = isinstance(self.executor, str)
        try:
            fit = fit_by_condition if joint(inputs) else fit_by_fold
            return fit(executor, inputs, views, self.n_folds, progress)
        finally:
            if owns_executor:
                executor.close()

    def _probabilities(
        self, ctx: RunContext, views: list[View]
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Class probabilities of the scored examples per condition, and the fine-tuned
        models (empty unless ``model="finetune"``)."""
        if self.model == "finetune":
            return fine_tuned_probabilities(self, ctx, views)
        if ctx.eval is None:
            return self._cross_fit(ctx, views), {}
        probas = {}
        for view in tqdm(views, desc="partial_input: conditions", disable=not ctx.progress):
            probas[view.name] = self._predict(ctx, view)
        return probas, {}

    def _run(self, ctx: RunContext) -> AnalysisOutput:
        dataset, eval_dataset = ctx.train, ctx.eval
        views = self._views(dataset)
        counts = np.bincount(dataset.labels, minlength=dataset.n_classes)
        evaluate = eval_dataset if eval_dataset is not None else dataset
        y = evaluate.labels
        names = np.asarray(dataset.label_names, dtype=object)

        probas, trained = self._probabilities(ctx, views)
        preds = {c: p.argmax(axis=1) for c, p in probas.items()}
        correct = {c: preds[c] == y for c in preds}
        majority = int(np.argmax(counts))
        partial = [v.name for v in views[1:]]
        metrics = leakage_metrics(
            y,
            preds,
            majority,
            n_resamples=self.n_resamples,
            confidence=self.confidence,
            random_state=self.random_state,
        )
        deltas = {c: metrics[f"delta_maj_{c}"] for c in partial}
        worst = max(deltas, key=deltas.get)
        # Only a partial input that leaks (its Delta_maj interval lies above 0) says which
        # examples leak: a premise-only probe's confident guesses are the label prior and
        # group effects, and a max over it dilutes the score (issue 19 item 5). Without a
        # leaking condition the score ranks by the leakiest one and flags nothing.
        leaky = [c for c in partial if metrics[f"delta_maj_{c}_ci_low"] > 0]
        scored_by = leaky or [worst]
        scores, leak, flagged = leakage_scores(
            evaluate, names, probas, preds, correct, scored_by, leaky, self.issue_threshold
        )
        tra_details: dict[str, Any] = {}
        if trained and self.tra_examples != 0:
            tra_details = token_relevance_agreement(self, ctx, views, trained, scores, metrics)

        metrics["n_leaky_conditions"] = float(len(leaky))
        metrics["n_eval"] = float(len(evaluate))
        per_fold = len(dataset) * (self.n_folds - 1) // self.n_folds
        metrics["n_train"] = float(len(dataset) if eval_dataset is not None else per_fold)
        metrics["n_issues"] = float(flagged.sum())

        if trained:
            representation = {"model": "finetune", **self.finetune_config("full")}
        else:
            representation = make_featurizer(self.features).config()
        return AnalysisOutput(
            scores=scores,
            metrics=metrics,
            summary=leakage_summary(metrics, worst, int(flagged.sum())),
            details={
                "conditions": [
                    {"view": v.name, "fields": list(v.fields), "is_partial": v.is_partial}
                    for v in views
                ],
                "label_names": list(dataset.label_names),
                "majority_label": str(names[majority]),
                "leakiest_condition": worst,
                "leaky_conditions": leaky,
                "score_conditions": scored_by,
                "per_class_accuracy": per_class_accuracy(y, correct, names, dataset.n_classes),
                "top_examples": top_examples(
                    evaluate, names, probas, preds, leak, self.n_top_examples
                ),
                "featurizer": representation,
                "mode": "eval_split" if eval_dataset is not None else f"{self.n_folds}-fold",
                "model": self.model,
                **(
                    {"fine_tuned_models": {v: model_summary(r) for v, r in trained.items()}}
                    if trained
                    else {}
                ),
                **({"tra": tra_details} if tra_details else {}),
            },
        )

    def headline(self, result: Any) -> Headline:
        """Leakiest partial input against the majority guess, judged by Delta_maj and its CI."""
        m = result.metrics
        worst = result.details.get("leakiest_condition")
        if not worst or f"delta_maj_{worst}" not in m:
            return super().headline(result)
        delta, low = m[f"delta_maj_{worst}"], m.get(f"delta_maj_{worst}_ci_low", float("nan"))
        label = worst.replace("_only", "-only").replace("_", " ")
        high = m.get(f"delta_maj_{worst}_ci_high", float("nan"))
        text = (
            f"{label} accuracy {m[f'accuracy_{worst}']:.2f} vs {m['majority_accuracy']:.2f} "
            f"majority (Delta_maj {delta:+.3f}, 95% CI [{low:+.3f}, {high:+.3f}])"
        )
        # Leakage is claimed only when the interval lies above 0; its lower bound sets
        # the degree.
        return self.verdict_scale.headline(
            "partial-input leakage",
            delta,
            text,
            interval=(low, high),
            null="the majority guess",
            measured=f"Delta_maj of the {label} probe: its accuracy minus always guessing the "
            "majority label, with a 95% bootstrap interval over the scored examples",
        )
