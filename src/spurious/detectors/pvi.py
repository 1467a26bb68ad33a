"""Pointwise V-information (PVI): Ethayarajh, Choi and Swayamdipta, ICML 2022.

"Understanding Dataset Difficulty with V-Usable Information" measures how much usable
information an input ``x`` carries about its label ``y`` for a model family V:

    PVI(x -> y) = -log2 g_null[y] + log2 g_x[y]

where ``g_x`` is a model of V trained on the inputs and ``g_null`` one trained on empty
inputs; the dataset's V-information is the mean PVI. Evaluated on a partial input (the
hypothesis alone), PVI measures an annotation artifact: how much the hypothesis by itself
gives the label away. A low or negative PVI of the full input marks an example that is
hard for V or possibly mislabelled (the paper's Sec. 4).

Here ``g_x`` is the partial-input analysis' model of each condition (its machinery, and
its result when it ran with the same settings in the same run, so nothing is fitted
twice): a probe on frozen features scored out of fold (seconds), or train -> eval with an
evaluation split, or a fine-tuned transformer (``model="finetune"``). ``g_null`` is the
label prior of the rows ``g_x`` was trained on (each training fold's when cross-fitting):
the cross-entropy optimum of a model that sees only empty inputs, which is what the
paper's null model learns. See docs/methods/pvi.md for the deviations.
"""

from __future__ import annotations

import logging
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from spurious.analysis import AnalysisOutput, Requirements, VerdictScale, register_analysis
from spurious.context import RunContext
from spurious.detectors.base import Detector
from spurious.detectors.partial_input import PartialInput
from spurious.detectors.partial_input.finetuned import fine_tuned_probabilities
from spurious.execution import Executor
from spurious.results import Headline
from spurious.stats.bootstrap import bootstrap_interval
from spurious.utils.limits import MAX_RESAMPLES
from spurious.utils.validation import Interval, StrOptions

logger = logging.getLogger(__name__)

__all__ = ["PVI", "null_probabilities", "pointwise_v_information"]

#: Probabilities are clipped here before the log, so a class missing from a training fold
#: gives a large but finite PVI (-40 bits) instead of -inf.
_EPS = 1e-12

#: Parameters shared with :class:`~spurious.detectors.partial_input.PartialInput`: when
#: that analysis ran earlier in the run with the same values, its probabilities are reused.
_SHARED = (
    "features",
    "probe",
    "conditions",
    "n_folds",
    "group_by",
    "random_state",
    "model",
    "finetune",
)


def pointwise_v_information(p_gold: np.ndarray, p_null_gold: np.ndarray) -> np.ndarray:
    """PVI(x -> y) = log2 g_x[y] - log2 g_null[y], in bits, per example.

    Parameters
    ----------
    p_gold : ndarray of float
        ``g_x[y]``: the probability the input's model gives the gold label.
    p_null_gold : ndarray of float
        ``g_null[y]``: the probability the empty-input model gives the gold label.

    Returns
    -------
    ndarray of float
        PVI in bits; 0 when the input adds nothing to the prior, ``log2(1 / g_null[y])``
        at most (``g_x[y] = 1``), negative when the input misleads the model.

    Examples
    --------
    >>> pointwise_v_information(np.array([1.0, 0.5, 0.125]), np.array([0.5, 0.5, 0.25]))
    array([ 1.,  0., -1.])
    """
    p = np.clip(np.asarray(p_gold, dtype=float), _EPS, 1.0)
    q = np.clip(np.asarray(p_null_gold, dtype=float), _EPS, 1.0)
    return np.log2(p) - np.log2(q)


def null_probabilities(
    y_train: np.ndarray, n_classes: int, y_eval: np.ndarray, fold_of: np.ndarray | None = None
) -> np.ndarray:
    """``g_null[y]`` of every evaluated example: the label prior of ``g_x``'s training rows.

    Parameters
    ----------
    y_train : ndarray of int
        Labels of the training rows.
    n_classes : int
    y_eval : ndarray of int
        Gold labels of the evaluated rows.
    fold_of : ndarray of int, optional
        Cross-fitting: ``y_train`` and ``y_eval`` are the same rows and row ``i`` is scored
        by the model trained on the rows outside its fold, so its prior is theirs.

    Examples
    --------
    >>> y = np.array([0, 0, 1, 1, 1, 1])
    >>> null_probabilities(y, 2, np.array([0, 1])).tolist()
    [0.3333333333333333, 0.6666666666666666]
    >>> null_probabilities(y, 2, y, fold_of=np.array([0, 1, 0, 1, 0, 1])).round(3).tolist()
    [0.333, 0.333, 0.667, 0.667, 0.667, 0.667]
    """
    y_eval = np.asarray(y_eval)
    if fold_of is None:
        prior = np.bincount(y_train, minlength=n_classes) / len(y_train)
        return prior[y_eval]
    out = np.empty(len(y_eval))
    total = np.bincount(y_train, minlength=n_classes)
    for k in np.unique(fold_of):
        held = fold_of == k
        rest = total - np.bincount(y_train[held], minlength=n_classes)
        out[held] = rest[y_eval[held]] / rest.sum()
    return out


def _entropy_bits(p: np.ndarray) -> float:
    p = p[p > 0]
    return float(-(p * np.log2(p)).sum())


def _mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return x.mean(axis=axis)


@register_analysis
class PVI(Detector):
    """Pointwise V-information per example and V-information per condition (in bits).

    Parameters
    ----------
    features : str or Featurizer, default="tfidf"
        Representation of the probes (as for ``partial_input``).
    probe : str or estimator, default="logistic"
        See :func:`spurious.models.make_probe`.
    conditions : list of str, optional
        Partial views besides the full input (default: every single-field view).
    n_folds : int, default=5
        Without an evaluation split, PVI is out of fold from this many folds.
    group_by : "auto", None or str, default="auto"
        Rows sharing a key stay in one fold (see ``partial_input``).
    model : {"probe", "finetune"}, default="probe"
        ``"finetune"``: ``g_x`` is a transformer fine-tuned per condition with the
        training engine (needs an evaluation split, as ``partial_input`` does).
    finetune : dict, optional
        :class:`~spurious.models.finetune.FineTuneConfig` fields for ``model="finetune"``.
    n_resamples : int, default=1000
        Bootstrap resamples of the V-information intervals (10 to 100,000).
    confidence : float, default=0.95
    issue_bits : float, default=1.0
        ``is_pvi_issue``: a partial input's PVI is at least this many bits (1 bit: the
        partial input doubles the gold label's probability over the prior).
    n_top_examples : int, default=15
        Lowest- and highest-PVI examples kept per condition for the report.
    random_state : int, default=0
    executor : "local", "ray" or Executor, default="local"

    Examples
    --------
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> data = make_nli_artifacts(n=600, artifact_rate=0.9, random_state=0).dataset
    >>> res = PVI(n_resamples=100).run(data)
    >>> res.metrics["v_info_hypothesis_only"] > 0.1
    True
    """

    name: ClassVar[str] = "pvi"
    description: ClassVar[str] = (
        "Pointwise V-information of the full and each partial input (bits): how much "
        "usable information about the label each input carries - Ethayarajh et al. 2022."
    )
    requires: ClassVar[Requirements] = Requirements(labels=True, features=True)
    #: Reuses partial_input's out-of-fold g_x when both run (else fits its own).
    after: ClassVar[tuple[str, ...]] = ("partial_input",)
    #: V-information of the leakiest partial input as a share of H(Y), judged by the lower
    #: bound of its bootstrap interval: any information (the interval above 0, as
    #: partial_input claims leakage) is low; 5% of H(Y) moderate, 15% high.
    verdict_scale: ClassVar[VerdictScale] = VerdictScale(
        0.0,
        0.05,
        0.15,
        {
            "none": "no usable information in any partial input",
            "low": "a partial input carries a little usable information",
            "moderate": "a partial input carries usable information (an artifact)",
            "high": "a partial input carries much usable information (a strong artifact)",
        },
    )
    # After partial_input, whose out-of-fold probabilities it reuses.
    audit_order: ClassVar[int] = 21
    fast_params: ClassVar[dict[str, Any]] = {"n_resamples": 50}
    profiles: ClassVar[dict[str, dict[str, Any]]] = {"quick": {"n_resamples": 500}, "full": {}}
    metric_docs: ClassVar[dict[str, str]] = {
        "v_info_<cond>": "V-information of <cond> (Eq. 1): mean PVI in bits; 0 = nothing "
        "beyond the label prior; at most H(Y).",
        "v_info_<cond>_ci_low / _ci_high": "Percentile bootstrap interval over examples.",
        "v_info_share_<cond>": "v_info_<cond> / H(Y), the share of the label entropy usable "
        "from <cond>, (-inf, 1].",
        "share_negative_<cond>": "Share of examples with PVI < 0 (<cond> misleads the model).",
        "label_entropy": "H(Y) of the training labels, bits.",
        "max_partial_v_info": "Largest V-information over the partial conditions (bits).",
        "n_eval": "Examples scored.",
        "n_issues": "Examples flagged is_pvi_issue.",
        "spearman_partial_input": "Spearman correlation of the leakiest partial input's PVI "
        "with partial_input_score, when partial_input ran in the same run.",
    }
    score_columns: ClassVar[dict[str, str]] = {
        "id": "Example id.",
        "label": "Gold label.",
        "pvi_<cond>": "PVI(x -> y) of the input seen through <cond>, bits; higher = easier.",
        "pvi_score": "PVI of the leakiest partial input (highest V-information); of the "
        "full input on one-field tasks. Bits, higher = label more given away.",
        "is_pvi_issue": "A partial input's PVI >= issue_bits (its label is given away by "
        "part of the input); always False on one-field tasks.",
        "is_negative_pvi": "PVI of the full input < 0: hard for the model or possibly "
        "mislabelled (the paper's reading).",
    }
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "features": [str, object],
        "probe": [str, object],
        "conditions": [list, tuple, None],
        "n_folds": [Interval(Integral, 2, None, closed="left")],
        "group_by": [str, None],
        "model": [StrOptions({"probe", "finetune"})],
        "finetune": [dict, None],
        "n_resamples": [Interval(Integral, 10, MAX_RESAMPLES, closed="both")],
        "confidence": [Interval(Real, 0, 1, closed="neither")],
        "issue_bits": [Interval(Real, None, None, closed="neither")],
        "n_top_examples": [Interval(Integral, 0, None, closed="left")],
        "random_state": ["random_state"],
        "executor": [str, Executor],
    }

    def __init__(
        self,
        features: Any = "tfidf",
        probe: Any = "logistic",
        conditions: list[str] | None = None,
        n_folds: int = 5,
        group_by: str | None = "auto",
        model: str = "probe",
        finetune: dict[str, Any] | None = None,
        n_resamples: int = 1000,
        confidence: float = 0.95,
        issue_bits: float = 1.0,
        n_top_examples: int = 15,
        random_state: int | None = 0,
        executor: str | Executor = "local",
    ) -> None:
        self.features = features
        self.probe = probe
        self.conditions = conditions
        self.n_folds = n_folds
        self.group_by = group_by
        self.model = model
        self.finetune = finetune
        self.n_resamples = n_resamples
        self.confidence = confidence
        self.issue_bits = issue_bits
        self.n_top_examples = n_top_examples
        self.random_state = random_state
        self.executor = executor

    # -- the partial-input machinery -------------------------------------------------------
    def _models(self) -> PartialInput:
        """The partial-input analysis that builds ``g_x`` of every condition."""
        return PartialInput(
            features=self.features,
            probe=self.probe,
            conditions=self.conditions,
            n_folds=self.n_folds,
            group_by=self.group_by,
            random_state=self.random_state,
            executor=self.executor,
            model=self.model,
            finetune=self.finetune,
        )

    def validate_params(self) -> None:
        """Check constraints, and the parameters the partial-input models take."""
        super().validate_params()
        self._models().validate_params()

    def requirements(self) -> Requirements:
        """Fine-tuned models need an evaluation split and the training engine."""
        if self.model == "finetune":
            return Requirements(labels=True, eval_split=True, trained_model=True)
        return type(self).requires

    def unmet(self, context: RunContext) -> list[str]:
        """Why PVI cannot run here; multiple choice gets its own reason."""
        if context.train.task.multiple_choice:
            return [
                "PVI compares a model of p(label | input) with the label prior of empty "
                "inputs, here the partial-input analysis' classifiers; a multiple-choice "
                "item's gold letter is a position among its own options, not a class of its "
                "text, and the prior would be only the letters' base rates - choices-only "
                "leakage is measured by mc_leakage, how hard each item is for an option "
                "scorer by cartography"
            ]
        return super().unmet(context)

    def check(self, context: RunContext) -> None:
        """Conditions name partial views; fine-tuning needs an evaluation split."""
        self._models().check(context)

    def _param_to_config(self, name: str, value: Any) -> Any:
        return self._models()._param_to_config(name, value)

    @classmethod
    def _param_from_config(cls, name: str, value: Any) -> Any:
        return PartialInput._param_from_config(name, value)

    def _reusable(self, ctx: RunContext) -> pd.DataFrame | None:
        """partial_input's scores when it ran in this run with the same models."""
        prev = ctx.results.get("partial_input")
        if prev is None or prev.status != "ok":
            return None
        try:
            mine = self.to_config()
        except Exception:  # an object parameter: nothing to compare, fit our own
            return None
        theirs = prev.params or {}
        if any(mine.get(k) != theirs.get(k) for k in _SHARED):
            return None
        ids = ctx.target.ids
        if len(prev.scores) != len(ids) or not (prev.scores["id"].to_numpy() == ids).all():
            return None
        return prev.scores

    def _p_gold(self, ctx: RunContext) -> tuple[dict[str, np.ndarray], np.ndarray | None, bool]:
        """``g_x[y]`` per condition, the folds (cross-fitting) and whether they were reused."""
        models = self._models()
        views = models._views(ctx.train)
        names = [v.name for v in views]
        y = ctx.target.labels
        fold_of = models._folds(ctx) if ctx.eval is None and self.model == "probe" else None
        reused = self._reusable(ctx)
        if reused is not None and all(f"p_gold_{c}" in reused for c in names):
            logger.info("pvi: reusing partial_input's probabilities of %s", names)
            return {c: reused[f"p_gold_{c}"].to_numpy(float) for c in names}, fold_of, True
        if self.model == "finetune":
            probas, _ = fine_tuned_probabilities(models, ctx, views)
        elif ctx.eval is None:
            probas = models._cross_fit(ctx, views)
        else:
            probas = {v.name: models._predict(ctx, v) for v in views}
        rows = np.arange(len(y))
        return {c: p[rows, y] for c, p in probas.items()}, fold_of, False

    # -- the analysis ----------------------------------------------------------------------
    def _run(self, ctx: RunContext) -> AnalysisOutput:
        train, target = ctx.train, ctx.target
        y_train, y = train.labels, target.labels
        k = train.n_classes
        counts = np.bincount(y_train, minlength=k)  # n_folds fits them: checked by check()
        p_gold, fold_of, reused = self._p_gold(ctx)
        p_null = null_probabilities(y_train, k, y, fold_of=fold_of)
        conditions = list(p_gold)
        partial = conditions[1:]
        pvi = {c: pointwise_v_information(p_gold[c], p_null) for c in conditions}
        h_y = _entropy_bits(counts / counts.sum())

        metrics: dict[str, float] = {"label_entropy": h_y}
        for i, c in enumerate(conditions):
            est, lo, hi = bootstrap_interval(
                _mean,
                [pvi[c]],
                n_resamples=self.n_resamples,
                confidence=self.confidence,
                random_state=None if self.random_state is None else int(self.random_state) + i,
            )
            metrics[f"v_info_{c}"] = est
            metrics[f"v_info_{c}_ci_low"], metrics[f"v_info_{c}_ci_high"] = lo, hi
            metrics[f"v_info_share_{c}"] = est / h_y if h_y > 0 else float("nan")
            metrics[f"share_negative_{c}"] = float((pvi[c] < 0).mean())

        names = np.asarray(train.label_names, dtype=object)
        scores = pd.DataFrame({"id": target.ids, "label": names[y]})
        for c in conditions:
            scores[f"pvi_{c}"] = pvi[c]
        if partial:
            worst = max(partial, key=lambda c: metrics[f"v_info_{c}"])
            metrics["max_partial_v_info"] = metrics[f"v_info_{worst}"]
            score = pvi[worst]
            flagged = np.zeros(len(y), dtype=bool)
            for c in partial:
                flagged |= pvi[c] >= self.issue_bits
        else:
            worst = conditions[0]
            score = pvi[worst]
            flagged = np.zeros(len(y), dtype=bool)
        scores["pvi_score"] = score
        scores["is_pvi_issue"] = flagged
        scores["is_negative_pvi"] = pvi[conditions[0]] < 0
        metrics["n_eval"] = float(len(y))
        metrics["n_issues"] = float(flagged.sum())

        prev = ctx.results.get("partial_input")
        if partial and prev is not None and prev.status == "ok":
            from scipy.stats import spearmanr

            other = prev.scores.set_index("id")["partial_input_score"]
            aligned = other.reindex(target.ids).to_numpy(float)
            ok = ~np.isnan(aligned)
            if ok.sum() > 2:
                metrics["spearman_partial_input"] = float(spearmanr(score[ok], aligned[ok])[0])

        details = {
            "conditions": conditions,
            "partial_conditions": partial,
            "headline_condition": worst,
            "label_names": list(train.label_names),
            "per_label": _per_label(pvi, y, names),
            "histograms": _histograms(pvi, y, names),
            "examples": self._examples(pvi, target, names, y, p_gold),
            "mode": "eval_split" if ctx.eval is not None else f"{self.n_folds}-fold",
            "model": self.model,
            "null_model": "label prior of g_x's training rows (per fold when cross-fitting)",
            "reused_partial_input": reused,
        }
        v = metrics[f"v_info_{worst}"]
        summary = (
            "V-information (bits): "
            + ", ".join(f"{c} {metrics[f'v_info_{c}']:.3f}" for c in conditions)
            + f" of H(Y) = {h_y:.3f}; {int(flagged.sum())} example(s) with partial-input "
            f"PVI >= {self.issue_bits:g}; {int((pvi[conditions[0]] < 0).sum())} with "
            "negative full-input PVI"
        )
        logger.info("pvi: %s V-information %.3f bits", worst, v)
        return AnalysisOutput(scores=scores, metrics=metrics, summary=summary, details=details)

    def _examples(
        self,
        pvi: dict[str, np.ndarray],
        target: Any,
        names: np.ndarray,
        y: np.ndarray,
        p_gold: dict[str, np.ndarray],
    ) -> dict[str, dict[str, list[dict[str, Any]]]]:
        """The lowest- and highest-PVI examples of every condition, with their texts."""
        fields = list(target.task.text_fields)
        out: dict[str, dict[str, list[dict[str, Any]]]] = {}
        n = self.n_top_examples
        for c, values in pvi.items():
            order = np.argsort(values, kind="stable")
            picks = {"lowest": order[:n], "highest": order[::-1][:n]}
            out[c] = {}
            for which, rows in picks.items():
                out[c][which] = [
                    {
                        "id": str(target.ids[i]),
                        "label": str(names[y[i]]),
                        **{f: str(target.frame[f].iloc[i]) for f in fields},
                        "pvi": float(values[i]),
                        "p_gold": float(p_gold[c][i]),
                    }
                    for i in rows
                ]
        return out

    def headline(self, result: Any) -> Headline:
        """The leakiest partial input's V-information, judged by its interval's lower bound
        as a share of H(Y); one-field tasks: the full input's, not judged."""
        m, d = result.metrics, result.details
        worst = d.get("headline_condition")
        h_y = m.get("label_entropy", float("nan"))
        if not worst or f"v_info_{worst}" not in m:
            return super().headline(result)
        v = m[f"v_info_{worst}"]
        lo, hi = m[f"v_info_{worst}_ci_low"], m[f"v_info_{worst}_ci_high"]
        label = worst.replace("_only", "-only").replace("_", " ")
        text = (
            f"{label} V-information {v:.3f} bits of H(Y) = {h_y:.3f} (95% CI [{lo:.3f}, {hi:.3f}])"
        )
        if not d.get("partial_conditions"):
            # The full input's usable information is the task itself, not a shortcut.
            return self.verdict_scale.headline(
                "V-information", v, text, severity="info", measured="mean PVI, bits"
            )
        share = (lo / h_y, hi / h_y) if h_y > 0 else None
        return self.verdict_scale.headline(
            "partial-input V-information",
            v,
            text,
            effect=v / h_y if h_y > 0 else None,
            interval=share,
            null="the label prior (V-information 0)",
            measured=f"{label} V-information as a share of H(Y)",
        )


def _per_label(
    pvi: dict[str, np.ndarray], y: np.ndarray, names: np.ndarray
) -> dict[str, dict[str, dict[str, float]]]:
    """PVI's distribution per condition and gold label (mean, quantiles, share < 0)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for c, values in pvi.items():
        out[c] = {}
        for k, name in enumerate(names):
            v = values[y == k]
            if not len(v):
                continue
            q = np.quantile(v, [0.05, 0.25, 0.5, 0.75, 0.95])
            out[c][str(name)] = {
                "n": float(len(v)),
                "mean": float(v.mean()),
                "q05": float(q[0]),
                "q25": float(q[1]),
                "median": float(q[2]),
                "q75": float(q[3]),
                "q95": float(q[4]),
                "share_negative": float((v < 0).mean()),
            }
    return out


def _histograms(
    pvi: dict[str, np.ndarray], y: np.ndarray, names: np.ndarray, bins: int = 30
) -> dict[str, dict[str, Any]]:
    """Counts per label on shared bin edges per condition (the report's distribution plot)."""
    out: dict[str, dict[str, Any]] = {}
    for c, values in pvi.items():
        lo, hi = float(np.min(values)), float(np.max(values))
        if hi <= lo:
            hi = lo + 1.0
        edges = np.linspace(lo, hi, bins + 1)
        out[c] = {
            "edges": edges.tolist(),
            "counts": {
                str(name): np.histogram(values[y == k], edges)[0].tolist()
                for k, name in enumerate(names)
            },
        }
    return out
