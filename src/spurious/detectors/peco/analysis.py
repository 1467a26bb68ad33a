"""The ``peco`` analysis: single-sentence label leakage as cluster outliers (paper 003 Sec. 3.2).

Pipeline (Fig. 4): embed the *elicited* sentence of every scored example (the hypothesis
of NLI data, a parameter for FEVER-like data), reduce it to ``|PC|`` principal
components, cluster it with k-means, compare each cluster's label distribution with the
global one (Eq. 11: L2; and KL), and integrate the fraction of clusters above each
divergence threshold (Eq. 12). Around that one number:

- **uncertainty**: the score is the mean over several k-means seeds (their spread is
  reported), and the *shuffled baseline*: the same clusters with the labels permuted,
  which is what small clusters score by chance. ``peco_<d>_excess`` = score - baseline
  mean, with a permutation p-value and a 95% interval that covers both the k-means seeds
  and sampling (each seed's excess over its own null, spread by the bootstrap); the
  headline's severity rests on that interval and p-value, never on the point estimate;
- **biased regions** (Fig. 1): clusters flagged by the authors' rule (a sum of squared
  deviations from the global label distribution above 0.25), Eq. 11 above a threshold,
  or a per-cluster permutation test at the cluster's size; with how many clusters the
  same rule flags under shuffled labels, their sizes, dominant labels and example
  sentences, and a 2-D t-SNE map;
- **the sweep** of App. C / Table 5 (k x |PC| x divergence), when asked;
- **PECO vs cartography** (Sec. 6.1, Fig. 8): when the same run has a ``cartography``
  result for the same examples, the confidence of examples in biased vs other clusters.

Deviations (docs/methods/peco.md): the default representation is frozen MiniLM, not the
hidden layer of a RoBERTa fine-tuned on full pairs (``features="finetuned:<dir>"`` of a
model trained with ``spurious train`` is the paper's representation); the area is Eq. 12
computed exactly; the authors' public code (their divergences and 20-step curve) is
``integral="reference"`` and is reported beside it (``peco_<d>_reference``, Table 5's
scale). PECO needs a pair: on single-text tasks it is skipped (clusters of a whole input
that differ in label only say that the label is learnable).
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np

from spurious.analysis import AnalysisOutput, Requirements, VerdictScale, register_analysis
from spurious.context import RunContext
from spurious.data.tasks import Task
from spurious.detectors.base import Detector
from spurious.detectors.peco.clusters import too_few_points
from spurious.detectors.peco.details import (  # the constants: importable here as before
    CONFIDENCE_BINS,  # noqa: F401
    EXAMPLES_PER_REGION,  # noqa: F401
    cartography_comparison,
    cluster_table,
    example_scores,
    projection,
    region_examples,
)
from spurious.detectors.peco.regions import REGION_RULES, biased_regions
from spurious.detectors.peco.score import (
    DIVERGENCES,
    INTEGRALS,
    NullDistribution,
    PecoFit,
    auto_n_clusters,
    bootstrap_scores,
    fit_peco,
    peco_from_counts,
    permutation_scores,
    reduce_dimensions,
    seed_bootstrap_interval,
    sweep,
)
from spurious.exceptions import AnalysisError, ParameterError
from spurious.results import Headline
from spurious.utils.progress import Phases
from spurious.utils.validation import Interval, StrOptions
from spurious.views import get_view

__all__ = ["Peco", "default_elicited_view"]


def default_elicited_view(task: Task) -> str:
    """The sentence whose leakage PECO measures: the hypothesis for NLI, else the last field.

    Annotators write the hypothesis of NLI data given the premise, and the claim of
    FEVER-like data is the *first* field there (pass ``view="premise_only"``). A
    single-text task has no elicited sentence (``"full"``), and :class:`Peco` skips it.

    Examples
    --------
    >>> from spurious.data.tasks import get_task
    >>> default_elicited_view(get_task("nli")), default_elicited_view(get_task("text"))
    ('hypothesis_only', 'full')
    """
    fields = task.text_fields
    if len(fields) == 1:
        return "full"
    if "hypothesis" in fields:
        return "hypothesis_only"
    return f"{fields[-1]}_only"


@register_analysis
class Peco(Detector):
    """PECO: how unevenly labels spread over clusters of the elicited sentences.

    Parameters
    ----------
    features : str or Featurizer, default="minilm"
        Representation of the elicited sentence (``"minilm"``, ``"tfidf"``, ``"bow"``, a
        model folder, or ``"finetuned:<dir>"``: a model fine-tuned on full pairs with
        ``spurious train``, fed the single sentence, as the paper does). ``"psc"``: that
        representation built inside the run: MiniLM fine-tuned on the training split's
        full pairs (the ``trained_model`` artifact, cached; ``psc_epochs`` epochs), its
        pooled last layer fed the elicited sentence of the evaluation split.
    psc_epochs : int, default=3
        Epochs of the ``"psc"`` fine-tune.
    view : str, default="auto"
        The elicited sentence: ``"auto"`` = hypothesis for NLI (see
        :func:`default_elicited_view`); ``"premise_only"`` for FEVER-like claims.
    n_clusters : int or "auto", default=50
        k of k-means (Sec. 3.2). ``"auto"``: about 200 examples per cluster, 10-100
        (App. C: k should grow with the evaluation set).
    n_components : int or None, default=30
        |PC| of the PCA before clustering (Sec. 3.2); ``None`` = no PCA.
    divergence : {"l2", "kl"}, default="l2"
        The headline divergence; both are always reported.
    integral : {"eq12", "reference"}, default="eq12"
        Eq. 12 exactly, or the authors' computation (their divergences and 20-step curve,
        Table 5's scale). The verdict thresholds are on Eq. 12's scale, so with
        ``"reference"`` the headline rests on the permutation test alone (at most "low").
    region_rule : {"authors", "eq11", "null"}, default="authors"
        When a cluster is a *biased region*. ``"authors"``: the sum of squared deviations
        of its label distribution from the global one exceeds ``region_threshold``
        (default 0.25, the authors' public code and Fig. 8's "PECO_L2 > 0.25"; Eq. 11 above
        0.25 / C, 0.0833 for 3 labels). ``"eq11"``: Eq. 11 above ``region_threshold``
        (default ``0.2**2 / C``: Fig. 1's 0.2 read as a Euclidean distance, 0.0133 for 3
        labels; the rule of earlier versions). ``"null"``: its Eq. 11 divergence is
        larger than shuffled labels give a cluster of its size (permutation p-value at most
        ``region_alpha``). Every rule also reports how many clusters it flags with the
        labels shuffled (``n_biased_clusters_null``).
    region_threshold : float or None, default=None
        The threshold of the ``"authors"`` (sum of squares) or ``"eq11"`` rule.
    region_alpha : float, default=0.05
        Level of the ``"null"`` rule's per-cluster test.
    n_seeds : int, default=5
        k-means seeds (``random_state``, ``random_state + 1``, ...). The scores are means
        over the seeds; clusters, regions and per-example columns are the first seed's.
        The sweep uses the same seeds in every cell.
    n_bootstrap : int, default=200
        Bootstrap replicates of the intervals (0 = none; the headline then rests on the
        permutation test alone).
    n_permutations : int, default=100
        Label shuffles of the baseline.
    confidence : float, default=0.95
    run_sweep : bool, default=False
        Also compute the App. C sweep (k in {10, 25, 50, 100} x |PC| in {none, 50, 100}).
    projection : {"tsne", "pca", "none"}, default="tsne"
        The 2-D map of Fig. 1 (scikit-learn t-SNE on a sample).
    projection_sample : int, default=2000
        Points in the map (a seeded sample; t-SNE is quadratic-ish).
    random_state : int, default=0

    Examples
    --------
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> train, test = make_nli_artifacts(n=1200, random_state=0).dataset.split(0.5)
    >>> res = Peco(features="bow", n_clusters=10, projection="none").run(train, test)
    >>> res.metrics["peco_l2"] > res.metrics["peco_l2_baseline"]
    True
    >>> res.metrics["peco_l2_excess_ci_low"] > 0
    True
    """

    name: ClassVar[str] = "peco"
    description: ClassVar[str] = (
        "PECO (paper 003 Sec. 3.2): label divergence of k-means clusters of the hypothesis "
        "alone, with a shuffled-label baseline, biased regions and the App. C sweep."
    )
    requires: ClassVar[Requirements] = Requirements(labels=True, features=True, multi_field=True)
    #: Reads cartography's confidence (biased regions vs easy-to-learn) when both run.
    after: ClassVar[tuple[str, ...]] = ("cartography",)
    #: The headline effect is PECO minus the shuffled baseline (points of Eq. 12 x 100).
    verdict_scale: ClassVar[VerdictScale] = VerdictScale(
        0.1,
        0.5,
        1.5,
        {
            "none": "labels spread over the clusters as shuffled labels do",
            "low": "slight single-sentence label leakage",
            "moderate": "clear single-sentence label leakage",
            "high": "strong single-sentence label leakage",
        },
    )
    fast_params: ClassVar[dict[str, Any]] = {
        "features": "bow",
        "n_clusters": 8,
        "n_components": 10,
        "n_seeds": 2,
        "n_bootstrap": 20,
        "n_permutations": 20,
        "projection": "pca",
    }
    profiles: ClassVar[dict[str, dict[str, Any]]] = {
        "quick": {"n_seeds": 3, "n_bootstrap": 100, "projection_sample": 1000},
        "full": {"run_sweep": True},
    }
    metric_docs: ClassVar[dict[str, str]] = {
        "peco_<d>": "PECO with divergence <d> (l2 = Eq. 11, kl), Eq. 12 x 100, mean over seeds.",
        "peco_<d>_ci_low / _ci_high": "95% interval of one k-means run's score (seeds and "
        "bootstrap over examples; docs/methods/peco.md).",
        "peco_<d>_seed_sd / _seed_min / _seed_max": "Spread over the k-means seeds.",
        "peco_<d>_baseline": "Mean PECO with the labels shuffled (same clusters).",
        "peco_<d>_baseline_q95": "95th percentile of the shuffled scores.",
        "peco_<d>_excess": "peco_<d> - peco_<d>_baseline: leakage beyond cluster noise.",
        "peco_<d>_excess_ci_low / _excess_ci_high": "95% interval of the excess: each seed's "
        "excess over its own shuffled null, spread by the bootstrap (the headline's basis).",
        "peco_<d>_p_value": "Permutation p-value of peco_<d> against the shuffled labels.",
        "peco_<d>_reference": "The authors' computation on the same clusters (Table 5's "
        "scale: L2 as a sum of squares x 100, KL(p_G || p_i) in bits as a fraction).",
        "n_clusters / n_components": "k and |PC| used (n_components = -1: no PCA).",
        "n_scored": "Examples clustered (the evaluation split, else the data).",
        "n_biased_clusters": "Clusters the region rule flags (region_rule).",
        "share_in_biased_regions": "Fraction of examples in those clusters.",
        "n_biased_clusters_null / share_in_biased_regions_null": "The same with the labels "
        "shuffled (mean over permutations): what the rule flags by chance.",
        "region_threshold": "The rule's threshold on Eq. 11's scale (threshold rules only).",
        "confidence_biased / confidence_other": "Mean cartography confidence (Sec. 6.1).",
        "confidence_mwu_p": "Mann-Whitney p-value of the two confidence distributions.",
    }
    score_columns: ClassVar[dict[str, str]] = {
        "id": "Example id.",
        "label": "Gold label.",
        "cluster": "k-means cluster of the elicited sentence.",
        "cluster_size": "Examples in that cluster.",
        "cluster_majority_label": "Most frequent label of the cluster.",
        "p_label_in_cluster": "Share of the example's gold label in its cluster.",
        "divergence_l2 / divergence_kl": "The cluster's divergence (Eq. 11 / KL).",
        "in_biased_region": "The cluster is a biased region (region_rule).",
        "peco_score": "The cluster's L2 divergence; higher = more leaky neighbourhood.",
        "is_peco_issue": "In a biased region and labelled with its dominant label.",
    }
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "features": [str, object],
        "psc_epochs": [Interval(Integral, 1, None, closed="left")],
        "view": [str, list, tuple],
        "n_clusters": [Interval(Integral, 2, None, closed="left"), StrOptions({"auto"})],
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
        "divergence": [StrOptions(set(DIVERGENCES))],
        "integral": [StrOptions(set(INTEGRALS))],
        "region_rule": [StrOptions(set(REGION_RULES))],
        "region_threshold": [Interval(Real, 0, None, closed="left"), None],
        "region_alpha": [Interval(Real, 0, 1, closed="neither")],
        "n_seeds": [Interval(Integral, 1, None, closed="left")],
        "n_bootstrap": [Interval(Integral, 0, None, closed="left")],
        "n_permutations": [Interval(Integral, 1, None, closed="left")],
        "confidence": [Interval(Real, 0, 1, closed="neither")],
        "run_sweep": ["boolean"],
        "projection": [StrOptions({"tsne", "pca", "none"})],
        "projection_sample": [Interval(Integral, 10, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        features: Any = "minilm",
        psc_epochs: int = 3,
        view: Any = "auto",
        n_clusters: int | str = 50,
        n_components: int | None = 30,
        divergence: str = "l2",
        integral: str = "eq12",
        region_rule: str = "authors",
        region_threshold: float | None = None,
        region_alpha: float = 0.05,
        n_seeds: int = 5,
        n_bootstrap: int = 200,
        n_permutations: int = 100,
        confidence: float = 0.95,
        run_sweep: bool = False,
        projection: str = "tsne",
        projection_sample: int = 2000,
        random_state: int | None = 0,
    ) -> None:
        self.features = features
        self.psc_epochs = psc_epochs
        self.view = view
        self.n_clusters = n_clusters
        self.n_components = n_components
        self.divergence = divergence
        self.integral = integral
        self.region_rule = region_rule
        self.region_threshold = region_threshold
        self.region_alpha = region_alpha
        self.n_seeds = n_seeds
        self.n_bootstrap = n_bootstrap
        self.n_permutations = n_permutations
        self.confidence = confidence
        self.run_sweep = run_sweep
        self.projection = projection
        self.projection_sample = projection_sample
        self.random_state = random_state

    def validate_params(self) -> None:
        """Check constraints, and that ``features`` resolves to a featurizer."""
        super().validate_params()
        from spurious.features import make_featurizer

        if self.features != "psc":
            make_featurizer(self.features)

    def unmet(self, context: RunContext) -> list[str]:
        """Why PECO cannot run here; a single-text task or multiple choice gets PECO's own
        reason."""
        why = super().unmet(context)
        task = context.train.task
        if task.multiple_choice:
            return [
                "PECO compares label-conditioned distributions of one elicited sentence's "
                "embeddings; a multiple-choice item's gold letter is not a class of any one "
                "sentence, and an item's gold and distractors are not independent samples - "
                "choices-only leakage is measured by mc_leakage"
            ]
        if len(task.text_fields) < 2:
            why = [w for w in why if not w.startswith("needs two or more text fields")]
            why.append(
                "PECO measures the label leakage of the elicited sentence of a pair (paper "
                f"003: the hypothesis of NLI); task {task.name!r} has one text field "
                f"({task.text_fields[0]!r}), where label clusters of the whole input only "
                "show that the label is learnable"
            )
        return why

    def check(self, context: RunContext) -> None:
        """The view is a partial input; k leaves at least two examples per cluster."""
        task = context.train.task
        view = get_view(task, default_elicited_view(task) if self.view == "auto" else self.view)
        if len(task.text_fields) > 1 and set(view.fields) == set(task.text_fields):
            raise ParameterError(
                f"The 'view' parameter of Peco must name a partial input (the elicited "
                f"sentence, e.g. 'hypothesis_only'); got {self.view!r}, which shows every "
                f"field {list(task.text_fields)}: clusters of the whole input measure "
                "learnability, not single-sentence leakage."
            )
        if self.features == "psc" and context.eval is None:
            raise ParameterError(
                "features='psc' fine-tunes a paired-input model on the training split and "
                "scores the evaluation split: pass an evaluation split (--eval), or give a "
                "model trained elsewhere as features='finetuned:<dir>'."
            )
        scored = self.scored_dataset(context)
        n = len(scored)
        k = self._k(n)
        if n < 2 * k:
            raise ParameterError(
                f"The 'n_clusters' parameter of Peco ({k}) needs at least {2 * k} examples "
                f"(two per cluster); the scored split has {n}. Use n_clusters='auto' or a "
                "smaller k."
            )
        if (distinct := len(scored.frame[list(view.fields)].drop_duplicates())) < k:
            raise ParameterError(too_few_points(k, f"{distinct} distinct {view.name} text(s)"))

    def _view(self, task: Task) -> str:
        view = default_elicited_view(task) if self.view == "auto" else self.view
        return get_view(task, view).name

    def _k(self, n: int) -> int:
        return auto_n_clusters(n) if self.n_clusters == "auto" else int(self.n_clusters)

    # -- the work -------------------------------------------------------------------
    def _embed(self, ctx: RunContext, view: str, split: str) -> Any:
        """The elicited sentences' representation of the scored split."""
        if self.features == "psc":  # paper 003 App. B: PSC-trained, fed the single sentence
            return ctx.artifact(
                "hidden_states", view=view, split=split, model_view="full", epochs=self.psc_epochs
            )
        return ctx.features(self.features, view, split=split)

    def _uncertainty(
        self, clusterings: list[np.ndarray], y: np.ndarray, k: int, n_classes: int, seed: int,
        phases: Phases,
    ) -> tuple[NullDistribution, dict[str, np.ndarray] | None]:  # fmt: skip
        """The shuffled-label null and the bootstrap over examples of every clustering
        (each a step of ``phases``, counted in replicates)."""
        phases.start("shuffled-label null")
        null = permutation_scores(
            clusterings, y, k, n_classes, n_permutations=self.n_permutations,
            random_state=seed, integral=self.integral,
            progress=lambda done, total: phases.advance(done, total, "perm"),
        )  # fmt: skip
        if not self.n_bootstrap:
            return null, None
        phases.start("bootstrap")
        boot = bootstrap_scores(
            clusterings, y, k, n_classes, n_bootstrap=self.n_bootstrap, random_state=seed,
            integral=self.integral,
            progress=lambda done, total: phases.advance(done, total, "resample"),
        )  # fmt: skip
        return null, boot

    def _run(self, ctx: RunContext) -> AnalysisOutput:
        scored = self.scored_dataset(ctx)
        split = "eval" if ctx.eval is not None else "train"
        view = self._view(scored.task)
        seed = 0 if self.random_state is None else int(self.random_state)
        n, n_classes = len(scored), scored.n_classes
        k = self._k(n)

        X = self._embed(ctx, view, split)
        # A canonical row order (by id) makes the clustering, and so the score, independent
        # of the order of the examples in the file.
        order = np.argsort(np.asarray(scored.ids, dtype=str), kind="stable")
        inverse = np.empty_like(order)
        inverse[order] = np.arange(n)
        X_sorted = X[order]
        y = np.asarray(scored.labels)[order]

        seeds = [seed + i for i in range(self.n_seeds)]
        steps = [f"k-means, seed {i + 1}/{len(seeds)}" for i in range(len(seeds))]
        steps += ["shuffled-label null", *(["bootstrap"] if self.n_bootstrap else [])]
        steps += ["biased regions"]
        # t-SNE of a few thousand points is one call of tens of seconds: its own step
        proj = f"{self.projection} map of {min(n, self.projection_sample):,} points"
        steps += [proj] if self.projection != "none" else []
        steps += ["App. C sweep"] if self.run_sweep else []
        with Phases("peco", steps, enabled=ctx.progress) as phases:  # closed on errors too
            Z = reduce_dimensions(X_sorted, self.n_components, seed)
            fits = []
            for step, s in zip(steps, seeds, strict=False):
                phases.start(step)
                fits.append(fit_peco(Z, y, k, n_classes, integral=self.integral, random_state=s))
            main = fits[0]
            used = min(int((f.counts.sum(axis=1) > 0).sum()) for f in fits)
            if used < k:  # distinct texts whose embeddings coincide (bag of words of a reordering)
                raise AnalysisError(too_few_points(k, f"embeddings with {used} distinct point(s)"))
            clusterings = [f.clusters for f in fits]
            null, boot = self._uncertainty(clusterings, y, k, n_classes, seed, phases)
            metrics = _divergence_metrics(fits, null, boot, self.confidence)
            phases.start("biased regions")

            regions = biased_regions(
                main,
                y,
                k,
                n_classes,
                seed,
                rule=self.region_rule,
                region_threshold=self.region_threshold,
                alpha=self.region_alpha,
                n_permutations=self.n_permutations,
            )
            biased_clusters = regions.pop("biased")
            majority = main.counts.argmax(axis=1)
            clusters = main.clusters[inverse]  # back to the dataset's row order
            names = np.asarray(scored.label_names, dtype=object)
            in_region = biased_clusters[clusters]
            scores = example_scores(scored, main, clusters, in_region)
            cluster_p = regions.pop("cluster_p_values")
            metrics.update(
                {
                    "n_clusters": float(k),
                    "n_components": float(-1 if self.n_components is None else Z.shape[1]),
                    "n_scored": float(n),
                    "n_biased_clusters": float(biased_clusters.sum()),
                    "share_in_biased_regions": float(in_region.mean()),
                    **regions,
                }
            )

            details: dict[str, Any] = {
                "view": view,
                "scored_split": split,
                "label_names": list(scored.label_names),
                "headline_divergence": self.divergence,
                "integral": self.integral,
                "region_rule": self.region_rule,
                "clusters": cluster_table(main, names, biased_clusters, cluster_p),
                "null_sorted_divergences": {d: v.tolist() for d, v in null.mean_sorted.items()},
                "seed_scores": {d: [f.scores[d] for f in fits] for d in DIVERGENCES},
                "seeds": seeds,
                "regions": region_examples(
                    scored, clusters, biased_clusters, majority, names, seed
                ),
            }
            cartography = cartography_comparison(ctx, scored, in_region)
            if cartography is not None:
                details["cartography"] = cartography.pop("details")
                metrics.update(cartography)
            if self.projection != "none":
                phases.start(proj)
                details["projection"] = projection(
                    Z, y, main.clusters, biased_clusters, self.projection,
                    self.projection_sample, seed,
                )  # fmt: skip
            if self.run_sweep:
                phases.start("App. C sweep")
                table = sweep(
                    X_sorted,
                    y,
                    n_classes,
                    integral=self.integral,
                    random_state=seed,
                    n_seeds=self.n_seeds,
                    n_permutations=20,
                    progress=lambda done, total: phases.advance(done, total, "cell"),
                )
                details["sweep"] = table.to_dict(orient="records")
        summary = self._summary(metrics, k, n, view, biased_clusters, in_region)
        return AnalysisOutput(scores=scores, metrics=metrics, summary=summary, details=details)

    def _summary(
        self,
        metrics: dict[str, float],
        k: int,
        n: int,
        view: str,
        biased_clusters: np.ndarray,
        in_region: np.ndarray,
    ) -> str:
        """The result's one-line summary: the score, its baseline, the biased regions."""
        d = self.divergence
        return (
            f"PECO_{d.upper()} {metrics[f'peco_{d}']:.2f} (shuffled labels "
            f"{metrics[f'peco_{d}_baseline']:.2f}, p={metrics[f'peco_{d}_p_value']:.3f}) over "
            f"k={k} clusters of {n:,} {view} embeddings; {int(biased_clusters.sum())} biased "
            f"regions ({self.region_rule} rule; shuffled labels "
            f"{metrics['n_biased_clusters_null']:.1f}) hold {in_region.mean():.0%} of the examples"
        )

    def headline(self, result: Any) -> Headline:
        """PECO beyond the shuffled baseline: its interval and permutation test set the severity."""
        m = result.metrics
        details = result.details or {}
        d = details.get("headline_divergence", self.divergence)
        score, excess = m.get(f"peco_{d}"), m.get(f"peco_{d}_excess")
        p = m.get(f"peco_{d}_p_value")
        if score is None or excess is None:
            return self.verdict_scale.headline("PECO", None, "no score", severity="info")
        lo, hi = m.get(f"peco_{d}_excess_ci_low"), m.get(f"peco_{d}_excess_ci_high")
        # The thresholds are on Eq. 12's scale; the reference curve's excess is not.
        on_scale = details.get("integral", self.integral) == "eq12"
        interval = (lo, hi) if on_scale and lo is not None and hi is not None else None
        ci = f" [{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None else ""
        n_b, n_null = m.get("n_biased_clusters"), m.get("n_biased_clusters_null")
        regions = ""
        if n_b is not None:
            regions = (
                f"; {int(n_b)} biased regions ({m.get('share_in_biased_regions', 0):.0%} of "
                "examples)"
            )
            if n_null is not None:
                regions += f", {n_null:.1f} with shuffled labels"
        text = (
            f"PECO_{d.upper()} {score:.2f}, {excess:+.2f}{ci} above shuffled labels "
            f"(p={p:.3f}){regions}"
        )
        return self.verdict_scale.headline(
            "single-sentence leakage (PECO)",
            score,
            text,
            effect=excess,
            interval=interval,
            p_value=p,
            null="shuffled labels",
            measured=f"PECO_{d.upper()} of the elicited sentence minus its shuffled-label "
            "baseline (95% interval over k-means seeds and bootstrap)",
        )


def _divergence_metrics(
    fits: list[PecoFit],
    null: NullDistribution,
    boot: dict[str, np.ndarray] | None,
    confidence: float,
) -> dict[str, float]:
    """``peco_<d>`` per divergence: the mean over seeds, its spread, the shuffled
    baseline, the excess with its interval and p-value, and the reference score."""
    metrics: dict[str, float] = {}
    for d in DIVERGENCES:
        per_seed = np.array([f.scores[d] for f in fits])
        # Each seed against its own null: the seed spread then enters the interval.
        seed_excess = per_seed - null.per_clustering[d].mean(axis=0)
        score = float(per_seed.mean())
        base = null.scores[d]
        metrics[f"peco_{d}"] = score
        if boot is not None:
            lo, hi = seed_bootstrap_interval(per_seed, boot[d], confidence)
            # A divergence area is never negative; the excess below may be.
            metrics[f"peco_{d}_ci_low"], metrics[f"peco_{d}_ci_high"] = max(lo, 0.0), hi
        metrics[f"peco_{d}_seed_sd"] = float(per_seed.std(ddof=1)) if len(fits) > 1 else 0.0
        metrics[f"peco_{d}_seed_min"] = float(per_seed.min())
        metrics[f"peco_{d}_seed_max"] = float(per_seed.max())
        metrics[f"peco_{d}_baseline"] = float(base.mean())
        metrics[f"peco_{d}_baseline_q95"] = float(np.quantile(base, 0.95))
        metrics[f"peco_{d}_excess"] = float(seed_excess.mean())
        if boot is not None:
            lo, hi = seed_bootstrap_interval(seed_excess, boot[d], confidence)
            metrics[f"peco_{d}_excess_ci_low"], metrics[f"peco_{d}_excess_ci_high"] = lo, hi
        metrics[f"peco_{d}_p_value"] = float((1 + (base >= score).sum()) / (1 + len(base)))
        metrics[f"peco_{d}_reference"] = float(
            np.mean([peco_from_counts(f.counts, d, "reference") for f in fits])
        )
    return metrics
