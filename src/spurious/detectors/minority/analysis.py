"""The registered ``minority`` analysis: features in, scores, metrics and marks out.

:class:`MinorityExamples` gets the representation from the run context, calls
:func:`~spurious.detectors.minority.clustering.find_minority_examples` and turns its
output into dataset metrics (here) and per-example scores, report details and
anti-biased marks (:mod:`~spurious.detectors.minority.details`).
"""

from __future__ import annotations

import time
from dataclasses import replace
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from spurious.analysis import AnalysisOutput, Requirements, VerdictScale, register_analysis
from spurious.context import RunContext
from spurious.data.dataset import Dataset
from spurious.detectors.base import Detector
from spurious.detectors.minority.clustering import METHODS, MinorityClusters
from spurious.detectors.minority.details import (
    cluster_examples,
    cluster_table,
    example_scores,
    minority_marks,
    split_verdict,
)
from spurious.detectors.minority.labels import (
    AUTO_SWITCH_SHARE,
    RULES,
    homogeneity_stats,
    purity_null,
)
from spurious.detectors.minority.methods import method_comparison, run_clusterings
from spurious.detectors.minority.stability import (
    CONSENSUS,
    STABILITY_METRIC_DOCS,
    STABILITY_SCORE_COLUMNS,
    consensus_marks,
    marking_stability,
    scored_marks,
    stability_note,
    stability_seeds_of,
)
from spurious.exceptions import AnalysisError, ParameterError
from spurious.execution import Executor, executor_config, make_executor
from spurious.models.clustering import DEFAULT_EXACT_MAX_SAMPLES, DEFAULT_N_PRECLUSTERS, ROUTES
from spurious.results import Headline
from spurious.utils.validation import Interval, StrOptions
from spurious.views import get_view

__all__ = ["PURITY_WARN_GAIN", "MinorityExamples"]

#: Clusters whose purity beats the label base rate by less than this (5 points) say
#: little about the labels: the marks are then close to a random draw of each label.
PURITY_WARN_GAIN = 0.05


@register_analysis
class MinorityExamples(Detector):
    """Minority examples by clustering (paper 002 Sec. 3, App. C): the anti-biased marks.

    Parameters
    ----------
    features : str, default="minilm"
        Featurizer spec of the representation (``"minilm"``, ``"bow"``, ``"tfidf"``, a
        model folder, ``"finetuned:<dir>"`` for a fine-tuned model's [CLS]); the matrices
        are shared with the other analyses of the run.
    view : str, default="full"
        The input the representation sees.
    layer : int, optional
        With ``features="finetuned:<dir>"``: the hidden layer (default -2, the layer
        before last, paper 002 App. C.3's best). Must be unset for other featurizers.
    clustering : {"deepcluster", "ward", "kmeans"}, default="deepcluster"
        One DeepCluster iteration then Ward (the paper), or a standard clustering.
    n_clusters : int, default=10
        k, the final clusters (paper 002: 10 for every dataset).
    n_pseudo_labels : int or "auto", default="auto"
        m, DeepCluster's pseudo-labels; ``"auto"`` = ``min(1500, max(2k, n // 45))``,
        paper 002's m = 1500 on SST-2 (67k examples) at the same examples per
        pseudo-label.
    pseudo_clustering : {"kmeans", "ward"}, default="kmeans"
        How the pseudo-labels are found (DeepCluster: k-means; paper 002 App. C.2: Ward).
    minority_rule : {"auto", "not_majority", "least_frequent"}, default="auto"
        Minority labels of a cluster: every label but the majority (Sec. 3), or only the
        least frequent (footnote 10, ANLI / WANLI). ``"auto"`` applies footnote 10's
        rule: "not_majority" unless it marks more than ``auto_switch_share`` of the
        training set, then "least_frequent"; the report says which was used and why.
    auto_switch_share : float, default=0.40
        Footnote 10's threshold for ``minority_rule="auto"``.
    n_permutations : int, default=200
        Label permutations over the fixed clusters for the purity test (how far the
        clusters' majority labels beat the base rate beyond chance); 0 skips it.
    task_epochs : int, optional
        The representation clustered is that of a model trained on the task (paper 002
        clusters a fine-tuned model's [CLS]). On frozen features an MLP is trained on
        the task labels for this many epochs and its hidden layer clustered; default
        10 (paper 002 Table 8: at most 10 epochs for base models), and 0 for
        ``features="finetuned:<dir>"`` (already fine-tuned). 0 clusters the features
        as they are (label-agnostic: on SNLI every cluster is then label-balanced).
    hidden_size, epochs, batch_size, lr : default 256, 1, 32, 1e-3
        The DeepCluster MLP (one epoch and batch size 32 as the paper).
    ward_route : {"auto", "exact", "approximate"}, default="auto"
        Exact Ward up to ``exact_max_samples`` training examples, Ward on
        ``n_preclusters`` count-weighted mini-batch k-means centroids above.
    exact_max_samples : int, default=20000
    n_preclusters : int, default=2000
    compare_methods : bool, default=False
        Also cluster the input with plain k-means and plain Ward and report their label
        homogeneity (App. C.4.1, Fig. 5).
    n_examples : int, default=3
        Minority and biased examples per cluster kept for the report.
    n_threads : int or None, default=1
        BLAS / OpenMP threads while clustering.
    stability_seeds : int, default=0
        Cluster this many more times, with the seeds after ``random_state``, and report
        how much the marked sets overlap (``marking_jaccard_mean`` against its chance
        level) and how often each example is marked (``marked_frequency``); the marks
        stay this seed's. Each seed costs one more clustering (an extension: the paper
        clusters once; see ``docs/methods/minority.md``).
    executor : "local", "ray" or Executor, default="local"
        Where the clusterings run: this method's and, with ``compare_methods``, each
        other's is one task, as is each stability seed's (see :mod:`spurious.execution`);
        same clusters on every one.
    random_state : int, default=0

    Examples
    --------
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> train, test = make_nli_artifacts(n=300, random_state=0).dataset.split(0.3)
    >>> res = MinorityExamples(features="bow", n_clusters=5).run(train, test)
    >>> sorted(set(res.marks["split"])), len(res.scores) == len(test)
    (['eval', 'train'], True)
    """

    name: ClassVar[str] = "minority"
    description: ClassVar[str] = (
        "Minority examples: cluster the training set (one DeepCluster iteration + Ward), "
        "mark each cluster's non-majority-label examples anti-biased, assign evaluation "
        "examples by nearest training neighbour - paper 002 Sec. 3, App. C."
    )
    requires: ClassVar[Requirements] = Requirements(labels=True, features=True)
    #: The minority share is induced by the clustering (footnote 7): reported, not judged.
    verdict_scale: ClassVar[VerdictScale] = VerdictScale(0, 0, 0)
    fast_params: ClassVar[dict[str, Any]] = {"features": "bow", "n_clusters": 5}
    profiles: ClassVar[dict[str, dict[str, Any]]] = {
        "quick": {"n_preclusters": 500, "exact_max_samples": 10_000},
        "full": {"compare_methods": True},
    }
    metric_docs: ClassVar[dict[str, str]] = {
        "n_train": "Training examples clustered.",
        "n_scored": "Examples scored (the evaluation split when given, else the training split).",
        "n_clusters": "Non-empty clusters.",
        "n_pseudo_labels": "DeepCluster pseudo-labels m (deepcluster only).",
        "task_model_accuracy": "Training accuracy of the task MLP whose hidden layer is "
        "clustered (frozen features only), [0, 1].",
        "pseudo_label_accuracy": "Accuracy of the DeepCluster MLP on its pseudo-labels after "
        "training, [0, 1].",
        "n_anti_biased": "Scored examples marked anti-biased (minority examples).",
        "anti_biased_fraction": "n_anti_biased / n_scored, [0, 1].",
        "n_anti_biased_train": "Training examples marked anti-biased.",
        "anti_biased_fraction_train": "n_anti_biased_train / n_train, [0, 1].",
        "n_anti_biased_eval": "With an evaluation split: its examples marked anti-biased.",
        "anti_biased_fraction_eval": "n_anti_biased_eval / n_eval, [0, 1].",
        "mean_majority_share": "Mean over clusters of the majority label's share of the "
        "cluster's training examples (paper 002 App. C.4.1, Fig. 5), [0, 1].",
        "mean_minority_share": "1 - mean_majority_share.",
        "n_clusters_minority_over_10pct": "Clusters where more than 10% of the training "
        "examples are not of the majority label (App. C.4.1).",
        "weighted_majority_share": "Fraction of training examples in their cluster's "
        "majority label, [0, 1].",
        "base_majority_share": "Fraction of training examples in the most common label.",
        "purity_gain": "weighted_majority_share - base_majority_share: how much the "
        "clusters know about the label beyond its base rate, [0, 1).",
        "purity_null_mean": "Mean purity (weighted_majority_share) with the labels permuted "
        "over the same clusters (n_permutations draws), [0, 1].",
        "purity_excess": "weighted_majority_share - purity_null_mean.",
        "purity_p_value": "Permutation p-value of the purity: (1 + #null >= observed) / (1 + B).",
        "not_majority_share_train": "Share of training examples 'all but the majority' marks; "
        "above auto_switch_share, minority_rule='auto' uses the least frequent label "
        "(paper 002 footnote 10), [0, 1].",
        "least_frequent_rule": "1 when the least-frequent-label rule was applied, else 0.",
        "homogeneity": "Homogeneity of the clusters w.r.t. the labels (scikit-learn; 1 = "
        "every cluster one label, 0 = clusters say nothing about the label), [0, 1].",
        "mean_nn_distance": "With an evaluation split: mean Euclidean distance to the "
        "nearest training example in the clustered representation.",
        "<method>_<stat>": "With compare_methods: mean_minority_share, "
        "n_clusters_minority_over_10pct and homogeneity of plain kmeans / ward on the input.",
        **STABILITY_METRIC_DOCS,
    }
    score_columns: ClassVar[dict[str, str]] = {
        "id": "Example id.",
        "label": "Gold label.",
        "cluster": "Cluster id (0 = largest training cluster); for evaluation examples the "
        "cluster of the nearest training example.",
        "cluster_majority": "The cluster's majority label (most training examples).",
        "cluster_majority_share": "Share of the cluster's training examples in its majority "
        "label, [0, 1].",
        "label_share": "Share of the cluster's training examples with this example's label, "
        "[0, 1].",
        "anti_biased": "Minority example: its label is a minority label of its cluster.",
        "minority_score": "1 - label_share, [0, 1]; higher = rarer label in its cluster.",
        "is_minority_issue": "Same as anti_biased.",
        "nn_distance": "Evaluation examples: distance to the nearest training example.",
        "neighbor_id": "Evaluation examples: id of that training example.",
        **STABILITY_SCORE_COLUMNS,
    }
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "features": [str],
        "view": [str],
        "layer": [Interval(Integral, None, None, closed="neither"), None],
        "clustering": [StrOptions(set(METHODS))],
        "n_clusters": [Interval(Integral, 2, None, closed="left")],
        "n_pseudo_labels": [Interval(Integral, 2, None, closed="left"), StrOptions({"auto"})],
        "pseudo_clustering": [StrOptions({"kmeans", "ward"})],
        "minority_rule": [StrOptions(set(RULES))],
        "auto_switch_share": [Interval(Real, 0, 1, closed="both")],
        "n_permutations": [Interval(Integral, 0, None, closed="left")],
        "task_epochs": [Interval(Integral, 0, None, closed="left"), None],
        "hidden_size": [Interval(Integral, 1, None, closed="left")],
        "epochs": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "lr": [Interval(Real, 0, None, closed="neither")],
        "ward_route": [StrOptions(set(ROUTES))],
        "exact_max_samples": [Interval(Integral, 2, None, closed="left")],
        "n_preclusters": [Interval(Integral, 2, None, closed="left")],
        "compare_methods": ["boolean"],
        "stability_seeds": [Interval(Integral, 0, None, closed="left")],
        "n_examples": [Interval(Integral, 0, None, closed="left")],
        "n_threads": [Interval(Integral, 1, None, closed="left"), None],
        "executor": [str, Executor],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        features: str = "minilm",
        view: str = "full",
        layer: int | None = None,
        clustering: str = "deepcluster",
        n_clusters: int = 10,
        n_pseudo_labels: int | str = "auto",
        pseudo_clustering: str = "kmeans",
        minority_rule: str = "auto",
        auto_switch_share: float = AUTO_SWITCH_SHARE,
        n_permutations: int = 200,
        task_epochs: int | None = None,
        hidden_size: int = 256,
        epochs: int = 1,
        batch_size: int = 32,
        lr: float = 1e-3,
        ward_route: str = "auto",
        exact_max_samples: int = DEFAULT_EXACT_MAX_SAMPLES,
        n_preclusters: int = DEFAULT_N_PRECLUSTERS,
        compare_methods: bool = False,
        n_examples: int = 3,
        n_threads: int | None = 1,
        stability_seeds: int = 0,
        executor: str | Executor = "local",
        random_state: int | None = 0,
    ) -> None:
        self.features = features
        self.view = view
        self.layer = layer
        self.clustering = clustering
        self.n_clusters = n_clusters
        self.n_pseudo_labels = n_pseudo_labels
        self.pseudo_clustering = pseudo_clustering
        self.minority_rule = minority_rule
        self.auto_switch_share = auto_switch_share
        self.n_permutations = n_permutations
        self.task_epochs = task_epochs
        self.hidden_size = hidden_size
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.ward_route = ward_route
        self.exact_max_samples = exact_max_samples
        self.n_preclusters = n_preclusters
        self.compare_methods = compare_methods
        self.n_examples = n_examples
        self.n_threads = n_threads
        self.stability_seeds = stability_seeds
        self.executor = executor
        self.random_state = random_state

    # -- validation -----------------------------------------------------------------
    def validate_params(self) -> None:
        """Constraints, plus: ``layer`` only with a fine-tuned model; a known featurizer."""
        super().validate_params()
        finetuned = self.features.startswith("finetuned:")
        if self.layer is not None and not finetuned:
            raise ParameterError(
                "The 'layer' parameter of MinorityExamples applies to features='finetuned:<dir>' "
                f"only; got layer={self.layer!r} with features={self.features!r}."
            )
        self._featurizer()
        make_executor(self.executor)  # an unknown name, or Ray missing, fails here

    def _param_to_config(self, name: str, value: Any) -> Any:
        return executor_config(value) if name == "executor" else value

    @classmethod
    def _param_from_config(cls, name: str, value: Any) -> Any:
        return make_executor(value) if name == "executor" and isinstance(value, dict) else value

    def _featurizer(self) -> Any:
        from spurious.features import make_featurizer

        if self.features.startswith("finetuned:"):
            # Paper 002 App. C.3: the layer before last clustered best.
            return make_featurizer(self.features, layer=-2 if self.layer is None else self.layer)
        return make_featurizer(self.features)

    def _task_epochs(self) -> int:
        if self.task_epochs is not None:
            return int(self.task_epochs)
        return 0 if self.features.startswith("finetuned:") else 10

    def requirements(self) -> Requirements:
        """Training an MLP (DeepCluster, or the task model on frozen features) needs torch;
        plain Ward or k-means on the features as they are does not."""
        deepcluster = self.clustering == "deepcluster" or self.compare_methods
        if not deepcluster and self._task_epochs() == 0:
            return type(self).requires
        return replace(type(self).requires, extras=(("torch", "torch"),))

    def unmet(self, context: RunContext) -> list[str]:
        """Why the analysis cannot run here; multiple choice gets its own reason."""
        if context.train.task.multiple_choice:
            return [
                "minority examples are those whose gold label is not their cluster's majority "
                "label; a multiple-choice item's gold letter is its answer's position among "
                "its own options (reordering them changes it), not a class the items of a "
                "cluster share - anti-biased items come from cartography (hard-to-learn for "
                "an option scorer), option cues from mc_cues"
            ]
        return super().unmet(context)

    def check(self, context: RunContext) -> None:
        """The view exists for the task; the cluster counts fit the training split."""
        get_view(context.train.task, self.view)
        n = len(context.train)
        if self.n_clusters > n:
            raise AnalysisError(
                f"Minority clustering into n_clusters={self.n_clusters} needs at least that "
                f"many training examples; {context.train.name!r} has {n}. Pass n_clusters <= "
                f"{n} (--set minority.n_clusters=...)."
            )
        m = self.n_pseudo_labels
        if self.clustering == "deepcluster" and isinstance(m, Integral) and m > n:
            raise AnalysisError(
                f"DeepCluster with n_pseudo_labels={m} needs at least that many training "
                f"examples; {context.train.name!r} has {n}. Pass 'auto' or at most {n} "
                "(--set minority.n_pseudo_labels=...)."
            )

    def mark_definitions(self, task: Any) -> list[str]:
        """The minority examples; with ``stability_seeds``, also those most seeds mark."""
        return ["minority", *([CONSENSUS] if self.stability_seeds else [])]

    # -- the work -------------------------------------------------------------------
    def _cluster_options(self, ctx: RunContext) -> dict[str, Any]:
        """Keyword arguments of :func:`find_minority_examples` set by the parameters."""
        return {
            "n_clusters": self.n_clusters,
            "n_pseudo_labels": self.n_pseudo_labels,
            "pseudo_clustering": self.pseudo_clustering,
            "minority_rule": self.minority_rule,
            "auto_switch_share": self.auto_switch_share,
            "task_epochs": self._task_epochs(),
            "hidden_size": self.hidden_size,
            "epochs": self.epochs,
            "batch_size": self.batch_size,
            "lr": self.lr,
            "ward_route": self.ward_route,
            "exact_max_samples": self.exact_max_samples,
            "n_preclusters": self.n_preclusters,
            "n_threads": self.n_threads,
            "random_state": self.random_state,
            "progress": ctx.progress,
        }

    def _features(self, ctx: RunContext, view: str) -> tuple[Any, Any, float]:
        """The representation of both splits (through the run context) and its seconds."""
        feat = self._featurizer()
        spec = self.features if not self.features.startswith("finetuned:") else feat
        start = time.perf_counter()
        X_train = ctx.features(spec, view, split="train")
        X_eval = ctx.features(spec, view, split="eval") if ctx.eval is not None else None
        return X_train, X_eval, time.perf_counter() - start

    def _run(self, ctx: RunContext) -> AnalysisOutput:
        train, evald = ctx.train, ctx.eval
        view = get_view(train.task, self.view).name
        X_train, X_eval, feature_s = self._features(ctx, view)
        executor = make_executor(self.executor)
        y_eval = None if evald is None else evald.labels
        try:
            runs, reseeded = run_clusterings(
                executor, self.clustering, self.compare_methods, X_train, train.labels,
                X_eval, y_eval, n_classes=train.n_classes, options=self._cluster_options(ctx),
                seeds=stability_seeds_of(self.random_state, self.stability_seeds),
            )  # fmt: skip
        finally:
            if isinstance(self.executor, str):  # made here
                executor.close()
        res = runs[self.clustering]
        res.info["feature_s"] = round(feature_s, 4)
        names = np.asarray(train.label_names, dtype=object)

        scored = evald if evald is not None else train
        split = "eval" if evald is not None else "train"
        # run_clusterings was given the evaluation split exactly when there is one.
        ev = res.evaluation() if evald is not None else None
        clusters = ev.clusters if ev is not None else res.train_clusters
        anti = ev.anti_biased if ev is not None else res.train_anti_biased
        scores = example_scores(res, train, evald, clusters, anti, names)

        stats = homogeneity_stats(res.counts)
        metrics = self._metrics(res, train, evald, anti, stats)
        rule = res.info["minority_rule"]
        marks = [minority_marks(train, "train", res.train_anti_biased)]
        if ev is not None:  # ``scored`` is the evaluation split
            marks.append(minority_marks(scored, "eval", ev.anti_biased))
        if reseeded:
            stability, scores["marked_frequency"] = marking_stability(
                [r.train_anti_biased for r in (res, *reseeded)],
                scored_marks([res, *reseeded], has_eval=evald is not None),
            )
            metrics.update(stability)
            marks += consensus_marks([res, *reseeded], train, evald, metrics)
        notes = self._notes(metrics, rule)
        notes += [n for n in [stability_note(metrics)] if n]
        if "task_model" in res.info:
            metrics["task_model_accuracy"] = float(res.info["task_model"]["train_accuracy"])
        if self.clustering == "deepcluster":
            metrics["n_pseudo_labels"] = float(res.info["pseudo_labels"]["n"])
            metrics["pseudo_label_accuracy"] = float(
                res.info["deepcluster"]["pseudo_label_accuracy"]
            )
        if ev is not None:
            metrics["n_anti_biased_eval"] = float(ev.anti_biased.sum())
            metrics["anti_biased_fraction_eval"] = float(ev.anti_biased.mean())
            metrics["mean_nn_distance"] = float(ev.distance.mean())
        comparison = method_comparison(runs, self.clustering, train.labels, stats, metrics)

        details: dict[str, Any] = {
            "scored_split": split,
            "label_names": list(train.label_names),
            "view": view,
            "features": self.features,
            "method": res.info,
            "minority_rule": rule,
            "notes": notes,
            "clusters": cluster_table(res, names, evald),
            "comparison": comparison,
            "examples": cluster_examples(
                res, scored, clusters, anti, names, self.n_examples, self.random_state
            ),
        }
        return AnalysisOutput(
            scores=scores,
            metrics=metrics,
            summary=self._summary(metrics, stats, rule, len(train), evald is not None),
            details=details,
            marks=pd.concat(marks, ignore_index=True),
        )

    def _metrics(
        self,
        res: MinorityClusters,
        train: Dataset,
        evald: Dataset | None,
        anti: np.ndarray,
        stats: dict[str, float],
    ) -> dict[str, float]:
        """Sizes, purity and homogeneity of the clusters, the marks' shares, the rule, and
        the purity's permutation test."""
        from sklearn.metrics import homogeneity_score

        scored = evald if evald is not None else train
        metrics: dict[str, float] = {
            "n_train": float(len(train)),
            "n_scored": float(len(scored)),
            **stats,
            "purity_gain": stats["weighted_majority_share"] - stats["base_majority_share"],
            "homogeneity": float(homogeneity_score(train.labels, res.train_clusters)),
            "n_anti_biased": float(anti.sum()),
            "anti_biased_fraction": float(anti.mean()) if len(anti) else 0.0,
            "n_anti_biased_train": float(res.train_anti_biased.sum()),
            "anti_biased_fraction_train": float(res.train_anti_biased.mean()),
        }
        rule = res.info["minority_rule"]
        metrics["not_majority_share_train"] = float(rule["not_majority_share_train"])
        metrics["least_frequent_rule"] = float(rule["used"] == "least_frequent")
        if self.n_permutations:
            null = purity_null(
                res.train_clusters,
                train.labels,
                res.counts.shape[0],
                train.n_classes,
                n_permutations=self.n_permutations,
                random_state=self.random_state,
            )
            for key in ("purity_null_mean", "purity_excess", "purity_p_value"):
                metrics[key] = null[key]
        return metrics

    def _summary(
        self,
        metrics: dict[str, float],
        stats: dict[str, float],
        rule: dict[str, Any],
        n_train: int,
        has_eval: bool,
    ) -> str:
        """The result's one-line summary: clusters, minority shares, the rule."""
        which = "evaluation" if has_eval else "training"
        summary = (
            f"{n_train:,} training examples in {int(stats['n_clusters'])} clusters "
            f"({self.clustering}); {metrics['anti_biased_fraction_train']:.1%} of training"
        )
        if has_eval:
            summary += f" and {metrics['anti_biased_fraction_eval']:.1%} of {which}"
        summary += (
            f" examples are minority examples ({rule['used'].replace('_', '-')} rule); "
            f"clusters' mean minority share {stats['mean_minority_share']:.1%}"
        )
        return summary

    def _notes(self, metrics: dict[str, float], rule: dict[str, Any]) -> list[str]:
        """What a reader must know before using the marks: the rule switch, weak purity."""
        notes = []
        if rule["switched"]:
            notes.append(
                f"'All but the majority label' would mark {rule['not_majority_share_train']:.1%} "
                f"of the training set (> {rule['auto_switch_share']:.0%}), so only each "
                "cluster's least frequent label is minority (paper 002 footnote 10, as for "
                "ANLI and WANLI); set minority_rule='not_majority' to keep Sec. 3's rule."
            )
        gain = metrics["purity_gain"]
        p = metrics.get("purity_p_value")
        if gain < PURITY_WARN_GAIN or (p is not None and p > 0.05):
            # A large gain with a high p (tiny clusters are pure by chance) is no better.
            beats = "barely beats" if gain < PURITY_WARN_GAIN else "beats no more than chance"
            notes.append(
                f"Cluster purity {metrics['weighted_majority_share']:.1%} {beats} the label "
                f"base rate {metrics['base_majority_share']:.1%} (gain {gain:+.1%}"
                + ("" if p is None else f", permutation p = {p:.3g}")
                + "): the clusters say little about the labels, so the minority examples are "
                "close to a random draw of the non-majority labels."
            )
        return notes

    def headline(self, result: Any) -> Headline:
        """Share of minority (anti-biased) examples; purity against its permutation null.

        The severity stays ``"info"``: the minority share is induced by the clustering
        (paper 002 footnote 7) and is not a shortcut measure. The evidence records the
        permutation test of the clusters' purity over the label base rate.
        """
        m = result.metrics
        details = result.details or {}
        rule = (details.get("minority_rule") or {}).get("used", "not_majority")
        train = m.get("anti_biased_fraction_train", float("nan"))
        text = f"{train:.1%} of training examples are minority examples of their cluster"
        if "anti_biased_fraction_eval" in m:
            text += f" ({m['anti_biased_fraction_eval']:.1%} of evaluation examples)"
        text += (
            f" by the {rule.replace('_', '-')} rule; cluster purity "
            f"{m.get('weighted_majority_share', float('nan')):.1%} vs label base rate "
            f"{m.get('base_majority_share', float('nan')):.1%}"
        )
        verdict = split_verdict(m)
        if details.get("notes"):
            verdict += "; " + " ".join(details["notes"])
        head = self.verdict_scale.headline(
            "minority examples",
            train,
            text,
            p_value=m.get("purity_p_value"),
            null="labels permuted over the same clusters",
            measured="cluster purity (share of examples in their cluster's majority label) "
            "against the label base rate",
            severity="info",
        )
        head["verdict"] = verdict
        return head
