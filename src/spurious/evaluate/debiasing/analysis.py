"""The registered ``debiasing`` analysis: parameters, checks, the run's steps, the headline.

:class:`Debiasing` reads the bias model's probabilities
(:func:`spurious.artifacts.bias.bias_probabilities`), trains every method over every
seed (:mod:`~spurious.evaluate.debiasing.training`), measures them on the evaluation
split (:mod:`~spurious.evaluate.debiasing.measures`) and, with ``cross_bias=True``,
builds the cross-bias matrix (:mod:`~spurious.evaluate.debiasing.cross_bias`). The
package docstring of :mod:`spurious.evaluate.debiasing` describes the study.
"""

from __future__ import annotations

from collections.abc import Callable
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd

from spurious.analysis import (
    Analysis,
    AnalysisOutput,
    Requirements,
    VerdictScale,
    register_analysis,
)
from spurious.artifacts.bias import (
    bias_probabilities,
    parse_bias_spec,
    partial_view,
    train_heuristic,
)
from spurious.context import RunContext
from spurious.evaluate.debiasing.cross_bias import cross_bias_matrix
from spurious.evaluate.debiasing.measures import chance_corrected_gain, plain_thresholds, summarise
from spurious.evaluate.debiasing.training import fit_fast, fit_finetune, resam_rows, teacher_probs
from spurious.exceptions import ParameterError
from spurious.models.debias.bias import rescale_bias
from spurious.models.debias.calibration import calibration_metrics
from spurious.models.debias.losses import LOSSES, default_entropy_penalty
from spurious.models.debias.subsets import load_hard_subset
from spurious.results import Headline
from spurious.utils.validation import Interval, StrOptions

if TYPE_CHECKING:  # pragma: no cover
    from spurious.data.dataset import Dataset

__all__ = ["DEFAULT_RESCALE", "METHODS", "NLI_HEURISTICS", "Debiasing"]

#: Methods: every registered loss, and "resam" (plain loss on RESAM-balanced rows).
METHODS = (*LOSSES.names(), "resam")
#: Rescaling bound x per method (paper 001 App. B.2.3-4); others use raw probabilities.
DEFAULT_RESCALE = {"learned_mixin": 0.8, "learned_mixin_h": 0.8, "conf_reg": 0.9}
#: Heuristics measured on NLI data by default (paper 001's NLI-side biases).
NLI_HEURISTICS = (
    "overlap_rate",
    "negation_in_hypothesis",
    "hypothesis_length",
    "max_word_label_pmi",
)


@register_analysis
class Debiasing(Analysis):
    """Train with debiasing objectives and measure accuracy and prediction bias.

    Parameters
    ----------
    features : str, default="minilm"
        Representation of the full input for the trained models (and of the partial
        input for a partial-input bias model).
    methods : list of str, default=all
        Among ``plain`` (always run: the reference), ``poe``, ``learned_mixin``,
        ``learned_mixin_h``, ``conf_reg``, ``reweight`` and ``resam``.
    bias_model : str, default="partial_input"
        ``"partial_input"`` (hypothesis-only for NLI, out-of-fold), ``"shallow"``
        (self-debiasing: 2,000 examples x 3 epochs), ``"heuristic:<name>"`` (trained on
        that heuristic's biased segment) or ``"file:<path>"`` (probabilities by id).
    rescale : float, dict or None, default=None
        Bound x of :func:`~spurious.models.debias.bias.rescale_bias`; ``None`` = the
        paper's per-method values (LearnedMixin 0.8, ConfReg 0.9); a float for every
        method; a dict by method.
    heuristics : list of str or "auto", default="auto"
        Heuristics whose prediction bias is measured (NLI: overlap, negation,
        hypothesis length, word-label PMI); RESAM balances the first one unless
        ``resam_heuristic`` names another.
    resam_heuristic : str or None, default=None
    cross_bias : bool, default=False
        Also train every method with each heuristic as the targeted bias (Fig. 6/7).
    n_seeds : int, default=3
    epochs : int, default=10
        Epochs of every main model (the bias model has its own budget).
    hidden_size : int, default=256
    bias_max_epochs : int, default=30
        Budget of a ``partial_input`` bias model: each out-of-fold model stops at the
        epoch of lowest held-out NLL (patience 3) within it.
    calibrate_bias : bool, default=True
        Temperature-scale a ``partial_input`` bias model on its out-of-fold predictions.
    entropy_penalty : float or "auto", default="auto"
        LearnedMixin+H's ``H``; ``"auto"``: paper 001's 0.4 scaled from QA's 384
        positions to the task's classes, ``0.4 ln K / ln 384`` (0.074 for 3 classes;
        :func:`~spurious.models.debias.losses.default_entropy_penalty`).
    hard_subset : str or None, default=None
        The evaluation rows called *hard*. ``None``: those the bias model gets wrong
        (named in the report with the bias model's accuracy). ``"file:<path>"`` (ids,
        or ids with a 0/1 ``hard`` flag) or ``"marks:<run dir>[#<definition>]"`` (an
        earlier run's anti-biased marks of the evaluation split);
        :func:`~spurious.models.debias.subsets.load_hard_subset`.
    n_trials : int, default=200
        Bootstrap resamples of each prediction-bias estimate.
    random_state : int, default=0
    path : {"fast", "finetune"}, default="fast"
        ``"fast"``: MLPs on frozen ``features``. ``"finetune"``: fine-tunes of the full
        input with the fine-tuning engine (``epochs``/``hidden_size`` then do not apply;
        see ``finetune``). ``cross_bias`` needs the fast path.
    finetune : dict or None, default=None
        :class:`~spurious.models.finetune.FineTuneConfig` fields for ``path="finetune"``
        (``model``, ``epochs``, ``learning_rate`` ...); default: the engine's defaults
        without early stopping (the last epoch's model is measured).

    Examples
    --------
    >>> import spurious  # doctest: +SKIP
    >>> run = spurious.run(train, eval=dev, analyses={"debiasing": {  # doctest: +SKIP
    ...     "path": "finetune", "methods": ["plain", "poe"], "n_seeds": 1,
    ...     "finetune": {"epochs": 1}}})
    """

    name: ClassVar[str] = "debiasing"
    description: ClassVar[str] = (
        "Trains with debiasing objectives (PoE, LearnedMixin(+H), ConfReg, reweighting, "
        "RESAM) and measures accuracy, hard-subset accuracy and prediction bias - paper "
        "001 Sec. 4.4-5."
    )
    requires: ClassVar[Requirements] = Requirements(
        labels=True,
        eval_split=True,
        features=True,
        tasks=("nli", "pair", "text"),
        extras=(("torch", "torch"),),  # both paths train torch models
    )
    #: It trains methods x seeds models: run it on request (--only debiasing).
    in_audit: ClassVar[bool] = False
    #: Headline: best hard-subset accuracy gain of a debiasing method over plain training.
    verdict_scale: ClassVar[VerdictScale] = VerdictScale(
        0.01,
        0.03,
        0.08,
        {
            "none": "no method beats plain training on the hard examples",
            "low": "debiasing helps the hard examples a little",
            "moderate": "debiasing clearly helps the hard examples",
            "high": "debiasing helps the hard examples a lot",
        },
    )
    fast_params: ClassVar[dict[str, Any]] = {
        "features": "bow",
        "methods": ["plain", "poe", "resam"],
        "heuristics": ["hypothesis_length"],
        "n_seeds": 1,
        "epochs": 2,
        "hidden_size": 32,
        "n_trials": 30,
    }
    metric_docs: ClassVar[dict[str, str]] = {
        "accuracy_<m>": "Accuracy on the evaluation split, mean over seeds (_sd: spread).",
        "hard_accuracy_<m>": "Accuracy on the examples the bias model gets wrong.",
        "easy_accuracy_<m>": "Accuracy on the examples the bias model gets right.",
        "bias_<m>_<h>": "Prediction bias (paper 001 Alg. 1) on heuristic <h>, at plain's T.",
        "bias_change_<m>_<h>": "bias_<m>_<h> - bias_plain_<h> (< 0: the bias shrank).",
        "epochs_to_best_<m>": "Epochs until eval accuracy first reaches 99% of its best.",
        "bias_model_accuracy": "The bias model's accuracy on the evaluation split.",
        "n_hard": "Evaluation examples the bias model gets wrong.",
        "hard_gain_<m>": "Gain over plain on hard examples beyond chance: (hard accuracy - "
        "a label-blind model's expected hard accuracy with the same answers), minus plain's.",
        "best_hard_gain": "hard_gain_<m> of the method whose gain has the largest lower 95% "
        "bound (Bonferroni over methods; _low, _high; _raw: without the chance correction).",
        "bias_model_<m>[_before]": "The bias model's accuracy, confidence, ece, nll on the "
        "evaluation split after (before) temperature scaling.",
        "bias_model_oof_<m>[_before]": "The same on the out-of-fold training predictions.",
        "bias_model_temperature": "Temperature T fitted on the out-of-fold predictions.",
        "bias_model_epochs": "Epochs of the bias model (median of the folds' best).",
        "entropy_penalty": "LearnedMixin+H's H.",
    }
    score_columns: ClassVar[dict[str, str]] = {
        "id": "Example id.",
        "label": "Gold label.",
        "bias_p_gold": "The bias model's probability of the gold label.",
        "hard": "The bias model gets it wrong.",
        "correct_<m>": "Fraction of seeds whose <m> model is right.",
        "debiasing_score": "bias_p_gold: how much the shortcut explains the example.",
        "is_debiasing_issue": "Plain training gets it wrong while some debiased model is right.",
    }
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "features": [str, object],
        "methods": [list, tuple, None],
        "bias_model": [str],
        "rescale": [Interval(Real, 0, 1, closed="right"), dict, None],
        "heuristics": [list, tuple, str],
        "resam_heuristic": [str, None],
        "cross_bias": ["boolean"],
        "n_seeds": [Interval(Integral, 1, None, closed="left")],
        "epochs": [Interval(Integral, 1, None, closed="left")],
        "hidden_size": [Interval(Integral, 1, None, closed="left")],
        "n_trials": [Interval(Integral, 10, None, closed="left")],
        "bias_max_epochs": [Interval(Integral, 1, None, closed="left")],
        "calibrate_bias": ["boolean"],
        "entropy_penalty": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "hard_subset": [str, None],
        "random_state": ["random_state"],
        "path": [StrOptions({"fast", "finetune"})],
        "finetune": [dict, None],
    }

    def __init__(
        self,
        features: Any = "minilm",
        methods: list[str] | None = None,
        bias_model: str = "partial_input",
        rescale: float | dict[str, float] | None = None,
        heuristics: Any = "auto",
        resam_heuristic: str | None = None,
        cross_bias: bool = False,
        n_seeds: int = 3,
        epochs: int = 10,
        hidden_size: int = 256,
        n_trials: int = 200,
        random_state: int | None = 0,
        path: str = "fast",
        finetune: dict[str, Any] | None = None,
        bias_max_epochs: int = 30,
        calibrate_bias: bool = True,
        entropy_penalty: float | str = "auto",
        hard_subset: str | None = None,
    ) -> None:
        self.features = features
        self.methods = methods
        self.bias_model = bias_model
        self.rescale = rescale
        self.heuristics = heuristics
        self.resam_heuristic = resam_heuristic
        self.cross_bias = cross_bias
        self.n_seeds = n_seeds
        self.epochs = epochs
        self.hidden_size = hidden_size
        self.n_trials = n_trials
        self.random_state = random_state
        self.path = path
        self.finetune = finetune
        self.bias_max_epochs = bias_max_epochs
        self.calibrate_bias = calibrate_bias
        self.entropy_penalty = entropy_penalty
        self.hard_subset = hard_subset

    # -- parameters -----------------------------------------------------------------
    def _methods(self) -> list[str]:
        methods = list(METHODS) if self.methods is None else list(self.methods)
        unknown = sorted(set(methods) - set(METHODS))
        if unknown:
            raise ParameterError(
                f"The 'methods' parameter of Debiasing has unknown method(s) {unknown}; "
                f"known: {list(METHODS)}."
            )
        return ["plain", *[m for m in dict.fromkeys(methods) if m != "plain"]]

    def _heuristic_names(self, ctx: RunContext) -> list[str]:
        if self.heuristics == "auto":
            return list(NLI_HEURISTICS) if ctx.train.task.name == "nli" else []
        if isinstance(self.heuristics, str):
            raise ParameterError(
                f"The 'heuristics' parameter must be 'auto' or a list of names; got "
                f"{self.heuristics!r}."
            )
        return list(self.heuristics)

    def _rescale(self, method: str) -> float | None:
        if self.rescale is None:
            return DEFAULT_RESCALE.get(method)
        if isinstance(self.rescale, dict):
            return self.rescale.get(method)
        return float(self.rescale)

    def _loss_params(self, method: str, n_classes: int) -> dict[str, float]:
        """Explicit loss parameters (also in a fine-tune's cache identity)."""
        if method != "learned_mixin_h":
            return {}
        h = self.entropy_penalty
        return {"entropy_penalty": default_entropy_penalty(n_classes) if h == "auto" else h}

    def validate_params(self) -> None:
        """Check constraints, the method names and the bias-model spec."""
        super().validate_params()
        self._methods()
        parse_bias_spec(self.bias_model)
        if self.hard_subset is not None and (
            self.hard_subset.partition(":")[0] not in ("file", "marks")
            or ":" not in self.hard_subset
        ):
            raise ParameterError(
                "The 'hard_subset' parameter of Debiasing must be None, 'file:<path>' or "
                f"'marks:<run dir>[#<definition>]'; got {self.hard_subset!r}."
            )
        if self.path == "finetune" and self.cross_bias:
            raise ParameterError(
                "The 'cross_bias' parameter of Debiasing needs path='fast' (it trains "
                "methods x heuristics models); got path='finetune'."
            )
        if self.path == "finetune":
            from spurious.models.finetune import FineTuneConfig

            cfg = self._finetune_config()
            if "loss" in cfg or "view" in cfg:
                raise ParameterError(
                    "The 'finetune' parameter of Debiasing sets engine options; 'loss' and "
                    "'view' are chosen by the analysis. Got " + repr(sorted(cfg)) + "."
                )
            FineTuneConfig.from_dict(cfg)  # unknown or bad fields fail here, before work

    def _finetune_config(self) -> dict[str, Any]:
        return {"early_stopping_patience": None, **(self.finetune or {})}

    def check(self, context: RunContext) -> None:
        """Heuristics exist for the task; a RESAM heuristic is one of them."""
        from spurious.heuristics import get_heuristic

        names = self._heuristic_names(context)
        for n in names:
            get_heuristic(n, task=context.train.task.name)
        if "resam" in self._methods() and not (self.resam_heuristic or names):
            raise ParameterError(
                "Method 'resam' needs a heuristic to balance: set 'heuristics' or "
                "'resam_heuristic'."
            )
        if self.bias_model == "partial_input":
            partial_view(context.train)

    # -- the work -------------------------------------------------------------------
    def _run(self, ctx: RunContext) -> AnalysisOutput:
        train, test = ctx.train, ctx.eval
        assert test is not None
        seed = 0 if self.random_state is None else int(self.random_state)
        n_classes = train.n_classes
        kind = self.bias_model.split(":", 1)[0]
        if self.path == "fast" or kind in ("shallow", "heuristic"):
            X = ctx.features(self.features, "full", split="train")
            X_eval = ctx.features(self.features, "full", split="eval")
        else:  # fine-tunes read text; a partial-input or file bias model needs no X
            X = X_eval = None
        y, y_eval = np.asarray(train.labels), np.asarray(test.labels)
        names = self._heuristic_names(ctx)
        h_eval = ctx.heuristics(names) if names else pd.DataFrame({"id": test.ids})
        train_opts = {
            "epochs": self.epochs,
            "hidden_size": self.hidden_size,
            "n_classes": n_classes,
        }

        bias_train, bias_eval, bias_info = self._bias(ctx, X, y, train_opts, seed)
        bias_metrics = bias_info.pop("metrics", {})
        bias_acc = float((bias_eval.argmax(axis=1) == y_eval).mean())
        hard, hard_definition = self._hard_subset(bias_eval, y_eval, bias_acc, bias_info, test)
        methods = self._methods()
        lp = {m: self._loss_params(m, n_classes) for m in methods}
        resam_name = self.resam_heuristic or (names[0] if names else None)
        ft = self._finetune_config()

        def fit(m: str, b: Any, t: Any, rows: Any, rs: int) -> dict[str, Any]:
            if self.path == "finetune":
                return fit_finetune(ctx, m, b, t, rows, ft, rs, lp.get(m))
            return fit_fast(X, y, X_eval, y_eval, m, b, t, rows, train_opts, rs, lp.get(m))

        runs, thresholds = self._train_methods(
            ctx, fit, methods, bias_train, X, h_eval, names, resam_name, seed
        )
        metrics, table = summarise(runs, hard, h_eval, names, thresholds, self.n_trials, seed)
        metrics["bias_model_accuracy"] = bias_acc
        metrics.update({f"bias_model_{k}": v for k, v in bias_metrics.items()})
        for key, value in calibration_metrics(bias_eval, y_eval).items():
            metrics[f"bias_model_{key}"] = value
        if "learned_mixin_h" in methods:
            metrics["entropy_penalty"] = float(lp["learned_mixin_h"]["entropy_penalty"])
        metrics["n_hard"] = float(hard.sum())
        bias_pred = bias_eval.argmax(axis=1) if self.hard_subset is None else None
        gain = chance_corrected_gain(runs, y_eval, hard, n_classes, bias_pred, seed)
        metrics.update({k: v for k, v in gain.items() if k not in ("method", "by_method")})
        metrics.update({f"hard_gain_{m}": v for m, v in gain.get("by_method", {}).items()})

        details: dict[str, Any] = {
            "methods": methods,
            "table": table,
            "heuristics": names,
            "thresholds": thresholds,
            "bias_model": bias_info,
            "rescale": {m: self._rescale(m) for m in methods},
            "loss_params": {m: p for m, p in lp.items() if p},
            "hard_definition": hard_definition,
            "hard_subset": self.hard_subset,
            "best_hard_method": gain.get("method"),
            "resam_heuristic": resam_name if "resam" in methods else None,
            "path": self.path,
            "finetune": ft if self.path == "finetune" else None,
            "eval_curves": {
                m: np.mean([r["curve"] for r in rs_], axis=0).round(4).tolist()
                for m, rs_ in runs.items()
            },
        }
        if self.cross_bias and names:
            details["cross_bias"] = cross_bias_matrix(
                ctx, X, y, X_eval, y_eval, h_eval=h_eval, names=names, thresholds=thresholds,
                methods=methods, opts=train_opts, seed=seed, metrics=metrics, loss_params=lp,
                rescale=details["rescale"], n_trials=self.n_trials,
            )  # fmt: skip
        scores = _scores(test, runs, methods, bias_eval, y_eval, hard)
        best = gain.get("method") or "plain"
        summary = (
            f"{len(methods)} methods x {self.n_seeds} seeds ({self.path}) on {len(train):,} "
            "examples; plain "
            f"accuracy {metrics['accuracy_plain']:.3f}, hard {metrics['hard_accuracy_plain']:.3f}"
            f" ({int(hard.sum()):,} hard examples: {hard_definition}); best on hard: {best} "
            f"{metrics[f'hard_accuracy_{best}']:.3f}"
        )
        return AnalysisOutput(scores=scores, metrics=metrics, summary=summary, details=details)

    def _bias(
        self, ctx: RunContext, X: Any, y: np.ndarray, opts: dict[str, Any], seed: int
    ) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
        """Bias probabilities of the training rows and of the evaluation rows."""
        b = bias_probabilities(
            ctx, self.bias_model, features=self.features, epochs=opts["epochs"],
            hidden_size=opts["hidden_size"], max_epochs=self.bias_max_epochs,
            calibrate=self.calibrate_bias, random_state=seed,
        )  # fmt: skip
        return b.train, b.eval, b.info

    def _hard_subset(
        self,
        bias_eval: np.ndarray,
        y_eval: np.ndarray,
        bias_acc: float,
        bias_info: dict[str, Any],
        test: Dataset,
    ) -> tuple[np.ndarray, str]:
        """The evaluation rows called hard, and the report's words for them."""
        if self.hard_subset is not None:
            return load_hard_subset(self.hard_subset, test)
        what = bias_info.get("view", bias_info["kind"]).replace("_", "-")
        return (
            bias_eval.argmax(axis=1) != y_eval,
            f"evaluation rows a {what} bias model of accuracy {bias_acc:.3f} gets wrong",
        )

    def _train_methods(
        self,
        ctx: RunContext,
        fit: Callable[..., dict[str, Any]],
        methods: list[str],
        bias_train: np.ndarray,
        X: Any,
        h_eval: pd.DataFrame,
        names: list[str],
        resam_name: str | None,
        seed: int,
    ) -> tuple[dict[str, list[dict[str, Any]]], dict[str, float]]:
        """Every method over every seed, and the thresholds of the first plain model.

        Each seed trains plain first: its first model's search sets the thresholds every
        method is measured at (and RESAM balances at), and each seed's plain model is
        ConfReg's teacher for that seed.
        """
        runs: dict[str, list[dict[str, Any]]] = {m: [] for m in methods}
        thresholds: dict[str, float] = {}
        for s in range(self.n_seeds):
            rs = seed + 1000 * s
            plain = fit("plain", None, None, None, rs)
            runs["plain"].append(plain)
            if s == 0:
                thresholds = plain_thresholds(plain["correct"], h_eval, names, self.n_trials, seed)
            teacher = None
            for m in methods[1:]:
                if m == "resam":
                    attr = train_heuristic(ctx, resam_name)
                    rows = resam_rows(attr, thresholds.get(resam_name), rs)
                    runs[m].append(fit("plain", None, None, rows, rs))
                    continue
                b = rescale_bias(bias_train, self._rescale(m))
                t = None
                if LOSSES.get(m).needs_teacher:
                    teacher = teacher_probs(ctx, plain, X) if teacher is None else teacher
                    t = teacher
                runs[m].append(fit(m, b, t, None, rs))
        return runs, thresholds

    def headline(self, result: Any) -> Headline:
        """The hard-subset gain of the best debiasing method, judged by its interval.

        The gain is corrected for chance
        (:func:`~spurious.evaluate.debiasing.measures.chance_correct`: answering differently
        from the bias model gains on its errors by construction). The method is the one
        whose gain over plain training has the largest lower bound of a paired bootstrap
        interval over the hard examples (Bonferroni-corrected for the number of methods,
        so picking the best of several does not make noise look like a gain); that lower
        bound sets the severity.
        """
        m = result.metrics
        d = result.details or {}
        gain = m.get("best_hard_gain")
        if gain is None:
            return self.verdict_scale.headline("debiasing", None, "no result", severity="info")
        lo, hi = m.get("best_hard_gain_low"), m.get("best_hard_gain_high")
        method = d.get("best_hard_method") or "best method"
        text = (
            f"plain {m.get('accuracy_plain', float('nan')):.3f} overall, "
            f"{m.get('hard_accuracy_plain', float('nan')):.3f} on hard examples; "
            f"{method} gains {gain:+.3f} on them beyond chance"
        )
        if lo is not None and hi is not None:
            text += f" (95% interval [{lo:+.3f}, {hi:+.3f}])"
        raw = m.get("best_hard_gain_raw")
        if raw is not None:
            text += f"; {raw:+.3f} in raw accuracy"
        measured = (
            "hard-subset accuracy gain over plain training, beyond what a label-blind model "
            "with the same answers gets; hard = "
            f"{d.get('hard_definition', 'the examples the bias model gets wrong')}"
        )
        return self.verdict_scale.headline(
            "debiasing on hard examples", gain, text,
            interval=None if lo is None or hi is None else (lo, hi),
            measured=measured,
        )  # fmt: skip


def _scores(
    test: Dataset,
    runs: dict[str, list[dict[str, Any]]],
    methods: list[str],
    bias_eval: np.ndarray,
    y_eval: np.ndarray,
    hard: np.ndarray,
) -> pd.DataFrame:
    """Per evaluation example: the bias model's view of it and each method's correctness."""
    correct = {m: np.mean([r["correct"] for r in rs_], axis=0) for m, rs_ in runs.items()}
    label_names = np.asarray(test.label_names, dtype=object)
    scores = pd.DataFrame({"id": test.ids, "label": label_names[y_eval]})
    scores["bias_p_gold"] = bias_eval[np.arange(len(y_eval)), y_eval]
    scores["hard"] = hard
    for m in methods:
        scores[f"correct_{m}"] = correct[m]
    scores["debiasing_score"] = scores["bias_p_gold"]
    others = [correct[m] for m in methods[1:]]
    helped = np.max(others, axis=0) > 0.5 if others else np.zeros(len(y_eval), bool)
    scores["is_debiasing_issue"] = (correct["plain"] < 0.5) & helped
    return scores
