"""The ``debiasing`` analysis: what debiasing objectives do to accuracy and prediction bias.

Paper 001 (Sec. 4.4, 5; Fig. 5-7) measures how much debiasing methods remove a shortcut
and finds them inconsistent: only resampling (RESAM) lowered the prediction bias it
targeted every time. This analysis closes that loop inside a run:

1. a **bias model** gives every training example class probabilities (a partial-input
   model scored out-of-fold, a shallow model, a heuristic split's biased segment, or a
   file; :mod:`spurious.models.debias.bias`), rescaled per method into ``<0; x>``;
2. a model is trained on the training split with each **objective** (plain, product of
   experts, LearnedMixin, LearnedMixin+H, confidence regularization, example
   reweighting; :mod:`spurious.models.debias.losses`) and with **RESAM** data (plain
   loss on the heuristic-balanced rows), over several seeds;
3. each model is **measured** on the evaluation split: accuracy, accuracy on the *hard*
   examples (those the bias model gets wrong), and the prediction bias of paper 001 on
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

from spurious.actions.resample import resample_indices
from spurious.analysis import (
    Analysis,
    AnalysisOutput,
    Requirements,
    VerdictScale,
    register_analysis,
)
from spurious.context import RunContext
from spurious.exceptions import DetectorError, ParameterError
from spurious.models.debias.bias import (
    heuristic_bias,
    load_bias_file,
    out_of_fold_proba,
    partial_input_bias,
    rescale_bias,
    shallow_bias,
)
from spurious.models.debias.fast import train_fast
from spurious.models.debias.losses import LOSSES
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


def _partial_view(ctx: RunContext) -> str:
    fields = ctx.train.task.text_fields
    if len(fields) < 2:
        raise DetectorError(
            "bias_model='partial_input' needs a task with two text fields (a partial "
            f"input); task {ctx.train.task.name!r} has {list(fields)}. Use 'shallow'."
        )
    return "hypothesis_only" if "hypothesis" in fields else f"{fields[-1]}_only"


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
    hidden_size : int, default=256
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
        "best_hard_gain": "Largest hard_accuracy_<m> - hard_accuracy_plain.",
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

    def validate_params(self) -> None:
        """Check constraints, the method names and the bias-model spec."""
        super().validate_params()
        self._methods()
        kind = self.bias_model.split(":", 1)[0]
        if kind not in ("partial_input", "shallow", "heuristic", "file") or (
            kind in ("heuristic", "file") and ":" not in self.bias_model
        ):
            raise ParameterError(
                "The 'bias_model' parameter must be 'partial_input', 'shallow', "
                f"'heuristic:<name>' or 'file:<path>'; got {self.bias_model!r}."
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
            _partial_view(context)

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
        hard = bias_eval.argmax(axis=1) != y_eval
        methods = self._methods()

        def train_h(name: str) -> np.ndarray:
            return _train_heuristic(ctx, name)

        resam_name = self.resam_heuristic or (names[0] if names else None)
        runs: dict[str, list[dict[str, Any]]] = {m: [] for m in methods}
        thresholds: dict[str, float] = {}
        ft = self._finetune_config()

        def fit(m: str, b: Any, t: Any, rows: Any, rs: int) -> dict[str, Any]:
            if self.path == "finetune":
                return _fit_finetune(ctx, m, b, t, rows, ft, rs)
            return _fit(X, y, X_eval, y_eval, m, b, t, rows, train_opts, rs)

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
        metrics["bias_model_accuracy"] = float((~hard).mean())
        metrics["n_hard"] = float(hard.sum())
        gains = [
            metrics[f"hard_accuracy_{m}"] - metrics["hard_accuracy_plain"] for m in methods[1:]
        ]
        metrics["best_hard_gain"] = float(max(gains)) if gains else 0.0

        details: dict[str, Any] = {
            "methods": methods,
            "table": table,
            "heuristics": names,
            "thresholds": thresholds,
            "bias_model": bias_info,
            "rescale": {m: self._rescale(m) for m in methods},
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
                metrics,
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
        best = max(methods[1:], key=lambda m: metrics[f"hard_accuracy_{m}"], default="plain")
        summary = (
            f"{len(methods)} methods x {self.n_seeds} seeds ({self.path}) on {len(train):,} "
            "examples; plain "
            f"accuracy {metrics['accuracy_plain']:.3f}, hard {metrics['hard_accuracy_plain']:.3f}"
            f" ({int(hard.sum()):,} hard examples); best on hard: {best} "
            f"{metrics[f'hard_accuracy_{best}']:.3f}"
        )
        return AnalysisOutput(scores=scores, metrics=metrics, summary=summary, details=details)

    def _bias(
        self, ctx: RunContext, X: Any, y: np.ndarray, opts: dict[str, Any], seed: int
    ) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
        """Bias probabilities of the training rows and of the evaluation rows."""
        kind, _, arg = self.bias_model.partition(":")
        info: dict[str, Any] = {"kind": kind}
        if kind == "partial_input":
            view = _partial_view(ctx)
            Xp = ctx.features(self.features, view, split="train")
            Xp_eval = ctx.features(self.features, view, split="eval")
            groups = ctx.train.group_keys("auto")
            b_train = partial_input_bias(Xp, y, groups=groups, random_state=seed, **opts)
            b_eval = train_fast(Xp, y, random_state=seed, **opts).predict_proba(Xp_eval)
            info["view"] = view
        elif kind == "shallow":
            # The bias model's own budget (2,000 examples x 3 epochs), not the main model's.
            shallow_opts = {k: v for k, v in opts.items() if k != "epochs"}
            b_train, model = shallow_bias(
                X, y, random_state=seed, return_model=True, **shallow_opts
            )
            b_eval = model.predict_proba(ctx.features(self.features, "full", split="eval"))
        elif kind == "heuristic":
            reference = out_of_fold_proba(X, y, random_state=seed, **opts).argmax(1) == y
            attr = _train_heuristic(ctx, arg)
            b_train, split, model = heuristic_bias(
                X, y, attr, reference_correct=reference.astype(float),
                search_options={"sample_size": _sample_size(attr)},
                random_state=seed, return_model=True, **opts,
            )  # fmt: skip
            b_eval = model.predict_proba(ctx.features(self.features, "full", split="eval"))
            info.update(heuristic=arg, **split)
        else:
            b_train = load_bias_file(arg, ctx.train)
            b_eval = load_bias_file(arg, ctx.eval)
            info["file"] = arg
        info["train_accuracy"] = float((b_train.argmax(1) == y).mean())
        return b_train, b_eval, info

    def _cross_bias(
        self, ctx, X, y, X_eval, y_eval, h_eval, names, thresholds, methods, opts, seed, metrics
    ) -> dict[str, Any]:
        """Fig. 6/7: rows = targeted heuristic, columns = measured; cells = bias change."""
        reference = out_of_fold_proba(X, y, random_state=seed, **opts).argmax(1) == y
        matrix: dict[str, dict[str, dict[str, float]]] = {}
        for target in names:
            attr = _train_heuristic(ctx, target)
            try:
                b_train, _ = heuristic_bias(
                    X, y, attr, reference_correct=reference.astype(float), random_state=seed,
                    search_options={"sample_size": _sample_size(attr)},
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
                    run = _fit(X, y, X_eval, y_eval, m, b, teacher, None, opts, seed)
                row = matrix.setdefault(m, {}).setdefault(target, {})
                for measured in names:
                    value = _bias_at(run["correct"], h_eval[measured], thresholds.get(measured),
                                     self.n_trials, seed)  # fmt: skip
                    row[measured] = value - metrics.get(f"bias_plain_{measured}", np.nan)
        return matrix

    def headline(self, result: Any) -> dict[str, Any]:
        """Largest hard-subset gain of a debiasing method over plain training."""
        m = result.metrics
        gain = m.get("best_hard_gain")
        if gain is None:
            return self.verdict_scale.headline("debiasing", None, "no result", severity="info")
        text = (
            f"plain {m.get('accuracy_plain', float('nan')):.3f} overall, "
            f"{m.get('hard_accuracy_plain', float('nan')):.3f} on hard examples; best "
            f"debiasing gain on hard examples {gain:+.3f}"
        )
        return self.verdict_scale.headline("debiasing on hard examples", gain, text)


# =======================================================================================
# Helpers
# =======================================================================================
def _train_heuristic(ctx: RunContext, name: str) -> np.ndarray:
    """Values of heuristic ``name`` on the training split (fit on itself)."""
    from spurious.heuristics import compute_heuristics

    return compute_heuristics(ctx.train, [name], train=ctx.train)[name].to_numpy(dtype=float)


def _resam_rows(attr: np.ndarray, threshold: float | None, seed: int) -> np.ndarray:
    if threshold is None or not np.isfinite(threshold):
        threshold = float(np.nanmedian(attr))  # no usable eval threshold: balance at the median
    rows, _ = resample_indices(attr, threshold, random_state=seed)
    return rows


def _fit(X, y, X_eval, y_eval, loss, bias, teacher, rows, opts, seed) -> dict[str, Any]:
    """Train one model; eval correctness and the eval-accuracy curve over epochs."""
    start = time.perf_counter()
    model = train_fast(
        X, y, loss=loss, bias_probs=bias, teacher_probs=teacher, sample_weight_rows=rows,
        random_state=seed, eval_data=(X_eval, y_eval), **opts,
    )  # fmt: skip
    curve = model.eval_accuracy
    correct = model.predict(X_eval) == y_eval
    return {
        "model": model,
        "correct": correct.astype(float),
        "train_s": time.perf_counter() - start,
        "curve": curve,
    }


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
) -> dict[str, Any]:
    """Fine-tune one model (cached on disk); its last epoch's eval correctness and the
    eval-accuracy curve over epochs, from the engine's evaluation dynamics."""
    from spurious.models.finetune import finetune_cached

    train = None
    if rows is not None:  # RESAM: plain loss on the resampled rows (duplicates kept)
        train = ctx.train.subset(np.asarray(rows), f"{ctx.train.name}[resam]")
    res = finetune_cached(
        ctx, view="full", train=train, bias_probs=bias, teacher_probs=teacher,
        **{**config, "loss": loss, "seed": seed},
    )  # fmt: skip
    dyn = res.dynamics
    ev = dyn[dyn["split"] == "eval"]
    if not len(ev):
        raise DetectorError(
            "path='finetune' reads the evaluation predictions from the fine-tune's "
            "dynamics; do not set record_dynamics=False in 'finetune'."
        )
    last = ev[ev["epoch"] == ev["epoch"].max()].set_index("id")
    correct = last.loc[list(ctx.eval.ids), "correct"].to_numpy(dtype=float)
    curve = [h["eval_accuracy"] for h in res.history if "eval_accuracy" in h]
    return {
        "model_dir": res.model_dir,
        "correct": correct,
        "train_s": float(res.metrics.get("train_seconds") or 0.0),
        "curve": curve,
    }


def _sample_size(attribute: Any) -> int:
    """Bootstrap group size of paper 001's bias: 400 (its default), a tenth of small data.

    App. C wants ``2 * sample_size`` examples on each side of a threshold. A heuristic
    with few values (negation: 0, 1 or 2 negation words) has few thresholds, so its best
    split's smaller side caps the size (187 negated hypotheses of SNLI dev's 9,842 would
    otherwise leave the bias undefined).

    Examples
    --------
    >>> _sample_size(np.arange(9842.0)), _sample_size(np.r_[np.zeros(9655), np.ones(187)])
    (400, 93)
    >>> _sample_size(np.repeat([0.0, 1.0, 2.0], [9600, 200, 42]))  # best cut: 0 vs 1-2
    121
    """
    a = np.asarray(attribute, dtype=float)
    a = a[np.isfinite(a)]
    size = min(400, max(10, a.size // 10))
    _, counts = np.unique(a, return_counts=True)
    below = np.cumsum(counts)[:-1]  # examples at or below each candidate cut
    if below.size:
        best = int(np.max(np.minimum(below, a.size - below)))
        size = min(size, max(10, best // 2))
    return size


def _bias_at(correct, attribute, threshold, n_trials, seed) -> float:
    from spurious.evaluate.prediction_bias.search import prediction_bias

    if threshold is None or not np.isfinite(threshold):
        return float("nan")
    res = prediction_bias(
        correct, np.asarray(attribute, dtype=float), threshold=threshold, n_trials=n_trials,
        random_state=seed, sample_size=_sample_size(attribute),
    )  # fmt: skip
    return float(res.bias)


def _thresholds(correct, h_eval, names, n_trials, seed) -> dict[str, float]:
    """Each heuristic's threshold from the plain model's search (paper 001 App. C)."""
    from spurious.evaluate.prediction_bias.search import threshold_search

    out = {}
    for n in names:
        res = threshold_search(
            correct, h_eval[n].to_numpy(dtype=float), n_trials=n_trials, random_state=seed,
            sample_size=_sample_size(h_eval[n]),
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
