"""The ``debiasing`` analysis: what debiasing objectives do to accuracy and prediction bias.

Paper 001 (Sec. 4.4, 5; Fig. 5-7) measures how much debiasing methods remove a shortcut
and finds them inconsistent: only resampling (RESAM) lowered the prediction bias it
targeted every time. This analysis closes that loop inside a run:

1. a **bias model** gives every training example class probabilities (a partial-input
   model scored out-of-fold, trained on its own budget with early stopping on the
   out-of-fold NLL and temperature-scaled; a shallow model, a heuristic split's biased
   segment, or a file; :mod:`spurious.models.debias.bias`), rescaled per method into
   ``<0; x>``; its accuracy, ECE and NLL (before / after calibration) are reported;
2. a model is trained on the training split with each **objective** (plain, product of
   experts, LearnedMixin, LearnedMixin+H, confidence regularization, example
   reweighting; :mod:`spurious.models.debias.losses`) and with **RESAM** data (plain
   loss on the heuristic-balanced rows), over several seeds;
3. each model is **measured** on the evaluation split: accuracy, accuracy on the *hard*
   examples (by default those the bias model gets wrong; ``hard_subset`` gives a subset
   of the user's own), and the prediction bias of paper 001 on
   each heuristic at the threshold the plain model's search found (Alg. 1, fixed across
   methods as in the paper), plus the training cost (wall time and its ratio to plain
   training in ``details["table"]``; epochs to 99% of the best eval accuracy);
4. optionally (``cross_bias=True``) the **cross-bias matrix** of Fig. 6/7: for each
   heuristic as the *targeted* bias (its biased segment trains the bias model; RESAM
   balances it), the change in prediction bias on every *measured* heuristic.

The models are, with ``path="fast"`` (the default), an MLP on frozen features
(:func:`spurious.models.debias.fast.train_fast`); with ``path="finetune"``, transformer
fine-tunes (MiniLM by default) of the full input through the fine-tuning engine with the
same objectives (:func:`spurious.models.finetune.finetune_cached`, cached on disk by
data, config, objective and a digest of the bias / teacher probabilities). The bias
model stays the fast one unless ``bias_model`` names a file; ConfReg's teacher is the
plain model of the same seed scored on the training split. See docs/methods/debiasing.md
for what the fast path changes against the papers' fine-tuned BERT/RoBERTa models.
"""

from __future__ import annotations

import time
from numbers import Integral, Real
from typing import Any, ClassVar

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
    heuristic_sample_size,
    parse_bias_spec,
    partial_view,
    train_heuristic,
)
from spurious.context import RunContext
from spurious.exceptions import DetectorError, ParameterError
from spurious.models.debias.bias import heuristic_bias, out_of_fold_proba, rescale_bias
from spurious.models.debias.calibration import calibration_metrics
from spurious.models.debias.fast import train_fast
from spurious.models.debias.losses import LOSSES, default_entropy_penalty
from spurious.models.debias.subsets import load_hard_subset
from spurious.stats.resample import resample_indices
from spurious.utils.validation import Interval, StrOptions

__all__ = ["DEFAULT_RESCALE", "METHODS", "Debiasing"]

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
        labels=True, eval_split=True, features=True, tasks=("nli", "pair", "text")
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
        if self.hard_subset is None:
            hard = bias_eval.argmax(axis=1) != y_eval
            what = bias_info.get("view", bias_info["kind"]).replace("_", "-")
            hard_definition = (
                f"evaluation rows a {what} bias model of accuracy {bias_acc:.3f} gets wrong"
            )
        else:
            hard, hard_definition = load_hard_subset(self.hard_subset, test)
        methods = self._methods()
        lp = {m: self._loss_params(m, n_classes) for m in methods}

        def train_h(name: str) -> np.ndarray:
            return train_heuristic(ctx, name)

        resam_name = self.resam_heuristic or (names[0] if names else None)
        runs: dict[str, list[dict[str, Any]]] = {m: [] for m in methods}
        thresholds: dict[str, float] = {}
        ft = self._finetune_config()

        def fit(m: str, b: Any, t: Any, rows: Any, rs: int) -> dict[str, Any]:
            if self.path == "finetune":
                return _fit_finetune(ctx, m, b, t, rows, ft, rs, lp.get(m))
            return _fit(X, y, X_eval, y_eval, m, b, t, rows, train_opts, rs, lp.get(m))

        for s in range(self.n_seeds):
            rs = seed + 1000 * s
            plain = fit("plain", None, None, None, rs)
            runs["plain"].append(plain)
            if s == 0:
                thresholds = _thresholds(plain["correct"], h_eval, names, self.n_trials, seed)
            teacher = None
            for m in methods[1:]:
                if m == "resam":
                    rows = _resam_rows(train_h(resam_name), thresholds.get(resam_name), rs)
                    runs[m].append(fit("plain", None, None, rows, rs))
                    continue
                b = rescale_bias(bias_train, self._rescale(m))
                t = None
                if LOSSES.get(m).needs_teacher:
                    teacher = _teacher(ctx, plain, X) if teacher is None else teacher
                    t = teacher
                runs[m].append(fit(m, b, t, None, rs))

        metrics, table = _summarise(
            runs, y_eval, hard, h_eval, names, thresholds, self.n_trials, seed
        )
        metrics["bias_model_accuracy"] = bias_acc
        metrics.update({f"bias_model_{k}": v for k, v in bias_metrics.items()})
        for key, value in calibration_metrics(bias_eval, y_eval).items():
            metrics[f"bias_model_{key}"] = value
        if "learned_mixin_h" in methods:
            metrics["entropy_penalty"] = float(lp["learned_mixin_h"]["entropy_penalty"])
        metrics["n_hard"] = float(hard.sum())
        bias_pred = bias_eval.argmax(axis=1) if self.hard_subset is None else None
        for rs_ in runs.values():
            for r in rs_:
                r["chance"] = _chance_correct(r["pred"], y_eval, hard, n_classes, bias_pred)
        gain = _hard_gain(runs, hard, seed)
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
            details["cross_bias"] = self._cross_bias(
                ctx, X, y, X_eval, y_eval, h_eval, names, thresholds, methods, train_opts, seed,
                metrics, lp,
            )  # fmt: skip

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

    def _cross_bias(
        self,
        ctx,
        X,
        y,
        X_eval,
        y_eval,
        h_eval,
        names,
        thresholds,
        methods,
        opts,
        seed,
        metrics,
        loss_params,
    ) -> dict[str, Any]:
        """Fig. 6/7: rows = targeted heuristic, columns = measured; cells = bias change."""
        reference = out_of_fold_proba(X, y, random_state=seed, **opts).argmax(1) == y
        matrix: dict[str, dict[str, dict[str, float]]] = {}
        for target in names:
            attr = train_heuristic(ctx, target)
            try:
                b_train, _ = heuristic_bias(
                    X, y, attr, reference_correct=reference.astype(float), random_state=seed,
                    search_options={"sample_size": heuristic_sample_size(attr)},
                    **opts,
                )  # fmt: skip
            except ParameterError:
                continue  # no usable split of this heuristic on the training data
            for m in methods[1:]:
                if m == "resam":
                    rows = _resam_rows(attr, thresholds.get(target), seed)
                    run = _fit(X, y, X_eval, y_eval, "plain", None, None, rows, opts, seed)
                else:
                    b = rescale_bias(b_train, self._rescale(m))
                    teacher = None
                    if LOSSES.get(m).needs_teacher:
                        plain = _fit(X, y, X_eval, y_eval, "plain", None, None, None, opts, seed)
                        teacher = plain["model"].predict_proba(X)
                    run = _fit(X, y, X_eval, y_eval, m, b, teacher, None, opts, seed,
                               loss_params.get(m))  # fmt: skip
                row = matrix.setdefault(m, {}).setdefault(target, {})
                for measured in names:
                    value = _bias_at(run["correct"], h_eval[measured], thresholds.get(measured),
                                     self.n_trials, seed)  # fmt: skip
                    row[measured] = value - metrics.get(f"bias_plain_{measured}", np.nan)
        return matrix

    def headline(self, result: Any) -> dict[str, Any]:
        """The hard-subset gain of the best debiasing method, judged by its interval.

        The gain is corrected for chance (:func:`_chance_correct`: answering differently
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


# =======================================================================================
# Helpers
# =======================================================================================
def _resam_rows(attr: np.ndarray, threshold: float | None, seed: int) -> np.ndarray:
    if threshold is None or not np.isfinite(threshold):
        threshold = float(np.nanmedian(attr))  # no usable eval threshold: balance at the median
    rows, _ = resample_indices(attr, threshold, random_state=seed)
    return rows


def _fit(
    X, y, X_eval, y_eval, loss, bias, teacher, rows, opts, seed, loss_params=None
) -> dict[str, Any]:
    """Train one model; eval correctness and the eval-accuracy curve over epochs."""
    start = time.perf_counter()
    model = train_fast(
        X, y, loss=loss, bias_probs=bias, teacher_probs=teacher, sample_weight_rows=rows,
        random_state=seed, eval_data=(X_eval, y_eval), loss_params=loss_params, **opts,
    )  # fmt: skip
    curve = model.eval_accuracy
    pred = model.predict(X_eval)
    return {
        "model": model,
        "pred": pred,
        "correct": (pred == y_eval).astype(float),
        "train_s": time.perf_counter() - start,
        "curve": curve,
    }


def _chance_correct(
    pred: np.ndarray,
    y: np.ndarray,
    hard: np.ndarray,
    n_classes: int,
    bias_pred: np.ndarray | None = None,
) -> np.ndarray:
    """Each row's expected correctness if labels were independent of the inputs.

    The hard subset is usually the bias model's errors, so a model that merely answers
    differently from the bias model gains there by construction (on shuffled labels,
    whatever moves its answers off the bias model's class "helps the hard examples").
    This is what such a label-blind model would get: with ``bias_pred`` (hard = the bias
    model's errors), ``pi(pred) / (1 - pi(b))`` when ``pred != b`` and 0 when it repeats
    the bias model's answer, ``pi`` the evaluation split's label distribution; for a
    given subset, ``pi_H(pred)``, the label distribution within the subset. Rows outside
    ``hard`` get 0.

    Examples
    --------
    Two balanced classes; on a bias error the label is the other class, so answering
    with the other class is right by construction:

    >>> y = np.array([0, 1, 0, 1]); b = np.array([1, 1, 1, 0]); hard = b != y
    >>> _chance_correct(np.array([0, 0, 1, 0]), y, hard, 2, b).tolist()
    [1.0, 0.0, 0.0, 0.0]
    """
    out = np.zeros(len(y))
    if bias_pred is not None:
        pi = np.bincount(y, minlength=n_classes) / max(len(y), 1)
        rest = np.clip(1.0 - pi[bias_pred], 1e-12, None)
        e = np.where(pred != bias_pred, pi[pred] / rest, 0.0)
    else:
        pi_h = np.bincount(y[hard], minlength=n_classes) / max(int(hard.sum()), 1)
        e = pi_h[pred]
    out[hard] = e[hard]
    return out


def _hard_gain(
    runs: dict[str, list[dict[str, Any]]],
    hard: np.ndarray,
    seed: int,
    n_boot: int = 2000,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """The chance-corrected hard-subset gain of the method with the best lower bound.

    Per hard example, a model's score is its correctness minus its chance correctness
    (``run["chance"]``, :func:`_chance_correct`; 0 when absent), averaged over seeds;
    the gain is a method's score minus plain training's (paired: the same examples,
    the same seeds). A percentile bootstrap over the hard examples gives each method's
    interval at level ``1 - alpha / M`` (Bonferroni over the M methods, since the
    headline picks one). Seed-to-seed spread is in ``hard_accuracy_<m>_sd``; with one
    seed the interval reflects the examples only.

    Examples
    --------
    Method ``a`` is right on every hard example plain training gets wrong:

    >>> hard = np.ones(200, dtype=bool)
    >>> half = np.r_[np.ones(100), np.zeros(100)]
    >>> runs = {"plain": [{"correct": half}], "a": [{"correct": np.ones(200)}],
    ...         "b": [{"correct": half}]}
    >>> g = _hard_gain(runs, hard, seed=0)
    >>> g["method"], g["best_hard_gain"], bool(0.35 < g["best_hard_gain_low"] < 0.5)
    ('a', 0.5, True)
    """
    methods = [m for m in runs if m != "plain"]
    if not methods or not hard.any():
        return {"best_hard_gain": 0.0, "method": None}

    def score(rs: list[dict[str, Any]], raw: bool = False) -> np.ndarray:
        return np.mean([r["correct"] - (0.0 if raw else r.get("chance", 0.0)) for r in rs], axis=0)[
            hard
        ]

    plain, plain_raw = score(runs["plain"]), score(runs["plain"], raw=True)
    diffs = {m: score(runs[m]) - plain for m in methods}
    rng = np.random.default_rng(seed)
    n = int(hard.sum())
    idx = rng.integers(0, n, size=(n_boot, n), dtype=np.int32)  # the same for every method
    q = alpha / len(methods) / 2
    best: dict[str, Any] = {}
    for m in methods:
        boot = diffs[m][idx].mean(axis=1)
        lo, hi = np.quantile(boot, [q, 1 - q])
        if not best or lo > best["best_hard_gain_low"]:
            best = {
                "best_hard_gain": float(diffs[m].mean()),
                "best_hard_gain_low": float(lo),
                "best_hard_gain_high": float(hi),
                "best_hard_gain_raw": float((score(runs[m], raw=True) - plain_raw).mean()),
                "method": m,
            }
    best["by_method"] = {m: float(d.mean()) for m, d in diffs.items()}
    return best


def _teacher(ctx: RunContext, plain: dict[str, Any], X: Any) -> np.ndarray:
    """ConfReg's teacher: the plain model of the same seed on the training split."""
    if "model_dir" in plain:
        from spurious.models.finetune import predict_proba

        return predict_proba(plain["model_dir"], ctx.train, "full", progress=False)
    return plain["model"].predict_proba(X)


def _fit_finetune(
    ctx: RunContext,
    loss: str,
    bias: np.ndarray | None,
    teacher: np.ndarray | None,
    rows: np.ndarray | None,
    config: dict[str, Any],
    seed: int,
    loss_params: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Fine-tune one model (cached on disk); its last epoch's eval correctness and the
    eval-accuracy curve over epochs, from the engine's evaluation dynamics."""
    from spurious.models.finetune import finetune_cached

    train = ctx.train
    if rows is not None:  # RESAM: plain loss on the resampled rows (duplicates kept)
        train = ctx.train.subset(np.asarray(rows), f"{ctx.train.name}[resam]")
    res = finetune_cached(
        train, ctx.eval, view="full", progress=ctx.progress, bias_probs=bias,
        teacher_probs=teacher,
        **{**config, "loss": loss, "loss_params": dict(loss_params or {}), "seed": seed},
    )  # fmt: skip
    dyn = res.dynamics
    ev = dyn[dyn["split"] == "eval"]
    if not len(ev):
        raise DetectorError(
            "path='finetune' reads the evaluation predictions from the fine-tune's "
            "dynamics; do not set record_dynamics=False in 'finetune'."
        )
    last = ev[ev["epoch"] == ev["epoch"].max()].set_index("id")
    rows = last.loc[list(ctx.eval.ids)]
    curve = [h["eval_accuracy"] for h in res.history if "eval_accuracy" in h]
    return {
        "model_dir": res.model_dir,
        "pred": rows["pred"].to_numpy(dtype=np.int64),
        "correct": rows["correct"].to_numpy(dtype=float),
        "train_s": float(res.metrics.get("train_seconds") or 0.0),
        "curve": curve,
    }


def _bias_at(correct, attribute, threshold, n_trials, seed) -> float:
    from spurious.stats.bias_search import prediction_bias

    if threshold is None or not np.isfinite(threshold):
        return float("nan")
    res = prediction_bias(
        correct, np.asarray(attribute, dtype=float), threshold=threshold, n_trials=n_trials,
        random_state=seed, sample_size=heuristic_sample_size(attribute),
    )  # fmt: skip
    return float(res.bias)


def _thresholds(correct, h_eval, names, n_trials, seed) -> dict[str, float]:
    """Each heuristic's threshold from the plain model's search (paper 001 App. C)."""
    from spurious.stats.bias_search import threshold_search

    out = {}
    for n in names:
        res = threshold_search(
            correct, h_eval[n].to_numpy(dtype=float), n_trials=n_trials, random_state=seed,
            sample_size=heuristic_sample_size(h_eval[n]),
        )  # fmt: skip
        out[n] = float(res.threshold)
    return out


def _summarise(runs, y_eval, hard, h_eval, names, thresholds, n_trials, seed):
    metrics: dict[str, float] = {}
    table = []
    # Wall times: the median over seeds, so one run slowed by a busy machine (or paused)
    # does not set a method's cost.
    base_time = np.median([r["train_s"] for r in runs["plain"]])
    for m, rs in runs.items():
        acc = np.array([r["correct"].mean() for r in rs])
        hard_acc = np.array([r["correct"][hard].mean() if hard.any() else np.nan for r in rs])
        easy_acc = np.array([r["correct"][~hard].mean() if (~hard).any() else np.nan for r in rs])
        metrics[f"accuracy_{m}"] = float(acc.mean())
        metrics[f"accuracy_{m}_sd"] = float(acc.std(ddof=1)) if len(acc) > 1 else 0.0
        metrics[f"hard_accuracy_{m}"] = float(np.nanmean(hard_acc))
        metrics[f"hard_accuracy_{m}_sd"] = float(hard_acc.std(ddof=1)) if len(acc) > 1 else 0.0
        metrics[f"easy_accuracy_{m}"] = float(np.nanmean(easy_acc))
        # Wall times go to the table (details), not the metrics: metrics are what a seed
        # reproduces exactly.
        t = float(np.median([r["train_s"] for r in rs]))
        curve = np.mean([r["curve"] for r in rs], axis=0)
        if len(curve):
            metrics[f"epochs_to_best_{m}"] = float(np.argmax(curve >= 0.99 * curve.max()) + 1)
        row = {
            "method": m,
            "accuracy": metrics[f"accuracy_{m}"],
            "accuracy_sd": metrics[f"accuracy_{m}_sd"],
            "hard_accuracy": metrics[f"hard_accuracy_{m}"],
            "hard_accuracy_sd": metrics[f"hard_accuracy_{m}_sd"],
            "train_s": t,
            "cost_ratio": t / base_time if base_time else None,
            "epochs_to_best": metrics.get(f"epochs_to_best_{m}"),
        }
        for h in names:
            values = [
                _bias_at(r["correct"], h_eval[h], thresholds.get(h), n_trials, seed) for r in rs
            ]
            finite = [v for v in values if np.isfinite(v)]  # NaN: no usable threshold for h
            metrics[f"bias_{m}_{h}"] = float(np.mean(finite)) if finite else float("nan")
            row[f"bias_{h}"] = metrics[f"bias_{m}_{h}"]
        table.append(row)
    for m in runs:
        for h in names:
            metrics[f"bias_change_{m}_{h}"] = metrics[f"bias_{m}_{h}"] - metrics[f"bias_plain_{h}"]
    return metrics, table
