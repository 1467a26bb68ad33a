"""Bias probabilities from a bias-model spec, for every consumer of a debiasing objective.

One recipe shared by the ``debiasing`` analysis and ``spurious train --bias``: a spec
names the bias model (``partial_input``, ``shallow``, ``heuristic:<name>`` or
``file:<path>``), and :func:`bias_probabilities` turns it into class probabilities of
every training row (out-of-fold; for ``partial_input`` trained on its own budget with
early stopping on the out-of-fold NLL and temperature-scaled,
:func:`~spurious.models.debias.bias.fit_bias_model`) and, when the run has an evaluation
split, of every evaluation row, with what describes the bias model (``info``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from spurious.exceptions import AnalysisError, ParameterError
from spurious.models.debias.bias import (
    fit_bias_model,
    heuristic_bias,
    load_bias_file,
    out_of_fold_proba,
    shallow_bias,
)
from spurious.models.debias.calibration import calibration_metrics

if TYPE_CHECKING:
    from spurious.artifacts.protocol import ArtifactContext
    from spurious.data.dataset import Dataset

__all__ = [
    "BIAS_KINDS",
    "BiasProbabilities",
    "bias_probabilities",
    "heuristic_sample_size",
    "parse_bias_spec",
    "partial_view",
    "train_heuristic",
]

#: The kinds of bias model a spec names.
BIAS_KINDS = ("partial_input", "shallow", "heuristic", "file")


@dataclass
class BiasProbabilities:
    """A bias model's class probabilities (:func:`bias_probabilities`).

    Attributes
    ----------
    train : ndarray of shape (n_train, C)
        Probabilities of the training rows (out-of-fold where the model trains).
    eval : ndarray of shape (n_eval, C) or None
        Probabilities of the evaluation rows; None without an evaluation split.
    info : dict
        ``kind``, the spec's argument (``view``, ``heuristic`` or ``file``),
        ``train_accuracy``; for ``partial_input`` also ``temperature``, ``epochs``,
        ``fold_epochs`` and ``metrics`` (temperature, epochs, the out-of-fold accuracy,
        confidence, ECE and NLL before / after temperature scaling, and the evaluation
        rows' figures before calibration as ``<m>_before``).
    """

    train: np.ndarray
    eval: np.ndarray | None
    info: dict[str, Any] = field(default_factory=dict)


def parse_bias_spec(spec: str) -> tuple[str, str]:
    """``(kind, argument)`` of a bias-model spec, or a ParameterError naming the forms.

    Examples
    --------
    >>> parse_bias_spec("heuristic:overlap_rate"), parse_bias_spec("partial_input")
    (('heuristic', 'overlap_rate'), ('partial_input', ''))
    """
    kind, _, arg = str(spec).partition(":")
    if kind not in BIAS_KINDS or (kind in ("heuristic", "file") and not arg):
        raise ParameterError(
            "The 'bias_model' parameter must be 'partial_input', 'shallow', "
            f"'heuristic:<name>' or 'file:<path>'; got {spec!r}."
        )
    return kind, arg


def partial_view(dataset: Dataset) -> str:
    """The default partial input of a two-field task: ``hypothesis_only`` for NLI."""
    fields = dataset.task.text_fields
    if len(fields) < 2:
        raise AnalysisError(
            "bias_model='partial_input' needs a task with two text fields (a partial "
            f"input); task {dataset.task.name!r} has {list(fields)}. Use 'shallow'."
        )
    return "hypothesis_only" if "hypothesis" in fields else f"{fields[-1]}_only"


def train_heuristic(ctx: ArtifactContext, name: str) -> np.ndarray:
    """Values of heuristic ``name`` on the training split (fit on itself)."""
    from spurious.heuristics import compute_heuristics

    values: np.ndarray = compute_heuristics(ctx.train, [name], train=ctx.train)[name].to_numpy(
        dtype=float
    )
    return values


def heuristic_sample_size(attribute: Any) -> int:
    """Bootstrap group size of paper 001's bias: 400 (its default), a tenth of small data.

    App. C wants ``2 * sample_size`` examples on each side of a threshold. A heuristic
    with few values (negation: 0, 1 or 2 negation words) has few thresholds, so its best
    split's smaller side caps the size (187 negated hypotheses of SNLI dev's 9,842 would
    otherwise leave the bias undefined).

    Examples
    --------
    >>> heuristic_sample_size(np.arange(9842.0))
    400
    >>> heuristic_sample_size(np.r_[np.zeros(9655), np.ones(187)])
    93
    >>> heuristic_sample_size(np.repeat([0.0, 1.0, 2.0], [9600, 200, 42]))  # cut: 0 vs 1-2
    121
    """
    from spurious.stats.bias_search import MIN_SAMPLE_SIZE, adapted_sample_size

    a = np.asarray(attribute, dtype=float)
    a = a[np.isfinite(a)]
    size = min(400, max(MIN_SAMPLE_SIZE, a.size // 10))
    # The rule `spurious bias` uses too; no split at all: the smallest size (undefined bias).
    return adapted_sample_size(a, size) or MIN_SAMPLE_SIZE


def bias_probabilities(
    ctx: ArtifactContext,
    spec: str,
    *,
    features: Any = "minilm",
    view: str | None = None,
    epochs: int = 10,
    hidden_size: int = 256,
    max_epochs: int = 30,
    calibrate: bool = True,
    random_state: int = 0,
    score_eval: bool = True,
) -> BiasProbabilities:
    """Bias probabilities of the training (and evaluation) rows of ``ctx`` from ``spec``.

    Parameters
    ----------
    ctx : ArtifactContext
        The run's data; ``ctx.eval`` may be None (no evaluation probabilities).
    spec : str
        ``partial_input`` (an MLP on ``features`` of the partial input ``view``, scored
        out-of-fold, early-stopped on the out-of-fold NLL and temperature-scaled),
        ``shallow`` (few examples, few epochs), ``heuristic:<name>`` (trained on the
        biased segment of the heuristic's split) or ``file:<path>``
        (:func:`~spurious.models.debias.bias.load_bias_file`).
    features : featurizer spec of the bias model (``minilm``, ``bow`` ...)
    view : str, optional
        The partial input of ``partial_input`` (default: :func:`partial_view`).
    epochs, hidden_size : the fast MLP's budget (``shallow``, ``heuristic``)
    max_epochs, calibrate : ``partial_input``'s early-stopping budget and temperature
    random_state : int
    score_eval : bool, default=True
        Score the evaluation rows (when ``ctx`` has them); ``False`` skips them (a bias
        file then needs only the training rows' ids).
    """
    kind, arg = parse_bias_spec(spec)
    y = np.asarray(ctx.train.labels)
    # The evaluation split to score (None: there is none, or ``score_eval`` is off).
    eval_ds = ctx.eval if score_eval else None
    has_eval = eval_ds is not None
    # The fast MLP's budget, passed on as keyword arguments to every bias model.
    opts: dict[str, Any] = {
        "epochs": epochs,
        "hidden_size": hidden_size,
        "n_classes": ctx.train.n_classes,
    }
    seed = int(random_state)
    info: dict[str, Any] = {"kind": kind}

    def full(split: str) -> Any:
        return ctx.features(features, "full", split=split)

    b_eval = None
    if kind == "partial_input":
        view = view or partial_view(ctx.train)
        Xp = ctx.features(features, view, split="train")
        Xp_eval = ctx.features(features, view, split="eval") if has_eval else None
        fit = fit_bias_model(
            Xp, y, Xp_eval, groups=ctx.train.group_keys("auto"), random_state=seed,
            max_epochs=max_epochs, calibrate=calibrate, **opts,
        )  # fmt: skip
        b_train, b_eval = fit.train_probs, fit.eval_probs
        info.update(
            view=view, temperature=fit.temperature, epochs=fit.epochs, fold_epochs=fit.fold_epochs
        )
        before = {}
        # fit_bias_model scores the evaluation rows (eval_probs_before) when given them.
        if eval_ds is not None and fit.eval_probs_before is not None:
            before = calibration_metrics(fit.eval_probs_before, np.asarray(eval_ds.labels))
        info["metrics"] = {
            "temperature": fit.temperature,
            "epochs": float(fit.epochs),
            **{f"{k}_before": v for k, v in before.items()},
            **fit.metrics,
        }
    elif kind == "shallow":
        # The bias model's own budget (2,000 examples x 3 epochs), not the main model's.
        shallow_opts = {k: v for k, v in opts.items() if k != "epochs"}
        b_train, model = shallow_bias(
            full("train"), y, random_state=seed, return_model=True, **shallow_opts
        )
        b_eval = model.predict_proba(full("eval")) if has_eval else None
    elif kind == "heuristic":
        X = full("train")
        reference = out_of_fold_proba(X, y, random_state=seed, **opts).argmax(1) == y
        attr = train_heuristic(ctx, arg)
        b_train, split, model = heuristic_bias(
            X, y, attr, reference_correct=reference.astype(float),
            search_options={"sample_size": heuristic_sample_size(attr)},
            random_state=seed, return_model=True, **opts,
        )  # fmt: skip
        b_eval = model.predict_proba(full("eval")) if has_eval else None
        info.update(heuristic=arg, **split)
    else:
        b_train = load_bias_file(arg, ctx.train)
        b_eval = load_bias_file(arg, eval_ds) if eval_ds is not None else None
        info["file"] = arg
    info["train_accuracy"] = float((b_train.argmax(1) == y).mean())
    return BiasProbabilities(b_train, b_eval, info)
