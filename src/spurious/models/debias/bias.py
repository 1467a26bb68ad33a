"""Bias models: where the per-example bias probabilities of a debiasing objective come from.

Four sources (paper 001 App. B.2.1, paper 002 Sec. 6 / Utama et al. 2020b):

- :func:`partial_input_bias`: a model that sees part of the input only (hypothesis-only
  for NLI), scored out-of-fold so no training example is scored by a model that saw it;
- :func:`heuristic_bias`: a model trained only on the *biased segment* of a heuristic
  split (the side of ``h(x) <= T`` where a reference model does better; paper 001
  Sec. 3 finds it, App. B.2.1 trains the bias model there);
- :func:`shallow_bias`: self-debiasing's shallow model, trained on a few examples for a
  few epochs (Utama et al. 2020b: 2,000 examples x 3 epochs for MNLI);
- :func:`load_bias_file`: probabilities computed elsewhere, keyed by example id.

:func:`fit_bias_model` trains a bias model on its own budget (early stopping on the
out-of-fold NLL) and calibrates it (temperature scaling on the out-of-fold predictions);
:func:`rescale_bias` then squeezes the probabilities (paper 001 App. B.2.3-4).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from spurious.data.dataset import Dataset
from spurious.exceptions import DataFormatError, ParameterError
from spurious.models.debias.calibration import (
    apply_temperature,
    calibration_metrics,
    fit_temperature,
    negative_log_likelihood,
)
from spurious.utils.io import check_input_file, text_lines

__all__ = [
    "BiasModelFit",
    "fit_bias_model",
    "heuristic_bias",
    "load_bias_file",
    "out_of_fold_proba",
    "partial_input_bias",
    "rescale_bias",
    "shallow_bias",
]


def rescale_bias(probs: np.ndarray, x: float | None) -> np.ndarray:
    """Squeeze bias probabilities into about ``<0; x>``: ``x * p + (1 - x) / C``.

    Paper 001 found that trained bias models reach probability 1 on biased examples,
    which makes LearnedMixin and confidence regularization push the main model away from
    the right answer there, and scales the bias probabilities into ``<0; x>`` (App.
    B.2.3: x = 0.8 for LearnedMixin; B.2.4: x = 0.9 for confidence regularization; Sec.
    4.4 says 0.2 and 0.1, we follow the appendix that describes the search). A plain
    multiplication would only shift every log-probability by ``log x``, which a softmax
    ignores, so we mix with the uniform distribution: the result is still a
    distribution, its largest entry is at most ``x + (1 - x) / C`` (``~x`` for QA's
    hundreds of positions, where the paper worked) and its logarithm is finite.

    Parameters
    ----------
    probs : ndarray of shape (n, C)
    x : float in (0, 1], or None (unchanged)

    Examples
    --------
    >>> rescale_bias(np.array([[1.0, 0.0]]), 0.8).round(6).tolist()
    [[0.9, 0.1]]
    """
    p = np.asarray(probs, dtype=np.float64)
    if x is None:
        return p
    if not 0.0 < x <= 1.0:
        raise ParameterError(f"The rescaling bound 'x' must be in (0, 1]; got {x!r}.")
    return x * p + (1.0 - x) / p.shape[1]


def out_of_fold_proba(
    X: Any,
    y: np.ndarray,
    *,
    n_classes: int,
    n_folds: int = 5,
    groups: np.ndarray | None = None,
    random_state: int = 0,
    **train: Any,
) -> np.ndarray:
    """Class probabilities for every row from a fast MLP that did not train on it.

    Stratified (grouped when ``groups`` is given, e.g. by premise) ``n_folds``-fold
    cross-fitting with scikit-learn's splitters; ``train`` goes to
    :func:`~spurious.models.debias.fast.train_fast`.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 3)); y = (X[:, 0] > 0).astype(int)
    >>> p = out_of_fold_proba(X, y, n_classes=2, epochs=5)
    >>> p.shape, bool(((p.argmax(1) == y).mean()) > 0.85)
    ((300, 2), True)
    """
    from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold

    from spurious.models.debias.fast import train_fast

    y = np.asarray(y)
    out = np.zeros((len(y), n_classes))
    if groups is None:
        splitter = StratifiedKFold(n_folds, shuffle=True, random_state=random_state)
        folds = splitter.split(np.zeros(len(y)), y)
    else:
        splitter = StratifiedGroupKFold(n_folds, shuffle=True, random_state=random_state)
        folds = splitter.split(np.zeros(len(y)), y, groups)
    for i, (fit_rows, score_rows) in enumerate(folds):
        model = train_fast(
            X[fit_rows], y[fit_rows], n_classes=n_classes, random_state=random_state + i, **train
        )
        out[score_rows] = model.predict_proba(X[score_rows])
    return out


def _folds(y: np.ndarray, n_folds: int, groups: np.ndarray | None, random_state: int) -> list:
    from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold

    if groups is None:
        splitter = StratifiedKFold(n_folds, shuffle=True, random_state=random_state)
        return list(splitter.split(np.zeros(len(y)), y))
    splitter = StratifiedGroupKFold(n_folds, shuffle=True, random_state=random_state)
    return list(splitter.split(np.zeros(len(y)), y, groups))


@dataclass
class BiasModelFit:
    """A bias model trained on its own budget and calibrated (:func:`fit_bias_model`).

    Attributes
    ----------
    train_probs : ndarray of shape (n_train, C)
        Out-of-fold probabilities of the training rows, temperature-scaled.
    eval_probs : ndarray of shape (n_eval, C) or None
        Probabilities of the evaluation rows from a model trained on every training row
        for ``epochs`` epochs, temperature-scaled.
    eval_probs_before : ndarray of shape (n_eval, C) or None
        The same before temperature scaling.
    temperature : float
        ``T`` fitted on the out-of-fold predictions (1.0 without calibration).
    epochs : int
        Epochs of the model that scores the evaluation rows: the median of the folds'
        best epochs.
    fold_epochs : list of int
        Each fold's epoch of lowest held-out NLL.
    metrics : dict
        ``oof_<m>_before`` / ``oof_<m>`` (accuracy, confidence, ece, nll) on the
        out-of-fold predictions before / after temperature scaling.
    """

    train_probs: np.ndarray
    eval_probs: np.ndarray | None
    eval_probs_before: np.ndarray | None
    temperature: float
    epochs: int
    fold_epochs: list[int] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)


def fit_bias_model(
    X: Any,
    y: np.ndarray,
    X_eval: Any = None,
    *,
    n_classes: int,
    max_epochs: int = 30,
    patience: int = 3,
    calibrate: bool = True,
    n_folds: int = 5,
    groups: np.ndarray | None = None,
    random_state: int = 0,
    **train: Any,
) -> BiasModelFit:
    """Train a bias model on its own budget and calibrate it on out-of-fold predictions.

    The bias model is not the main model: a debiasing objective reads its
    *probabilities*, so it must be calibrated, not only accurate. Trained with the main
    model's budget (10 epochs, no early stopping) a hypothesis-only MLP on SNLI is right
    58% of the time but 75% confident (issue 19). Here:

    1. **early stopping on the out-of-fold NLL**: each of ``n_folds`` (grouped) folds
       trains for up to ``max_epochs`` and keeps its held-out rows' probabilities at
       the epoch of lowest held-out NLL (stopping after ``patience`` epochs without
       improvement);
    2. **temperature scaling** (Guo et al. 2017): one ``T`` minimises the NLL of the
       out-of-fold probabilities (:func:`~spurious.models.debias.calibration.fit_temperature`)
       and is applied to them and to the evaluation rows;
    3. the evaluation rows are scored by a model trained on every training row for the
       median of the folds' best epochs.

    The held-out fold both picks its stopping epoch and is scored at it, a mild
    optimism against nested cross-fitting that costs ``n_folds`` times more; ``T`` is
    fitted on the same predictions and absorbs most of it.

    Parameters
    ----------
    X, y : training features (the bias model's view) and labels
    X_eval : features of the evaluation rows, optional
    n_classes : int
    max_epochs, patience : int
    calibrate : bool, default=True
        Fit ``T``; ``False`` keeps ``T = 1`` (early stopping still applies).
    n_folds, groups, random_state
        As :func:`out_of_fold_proba`.
    **train
        Passed to :func:`~spurious.models.debias.fast.train_fast` (``hidden_size`` ...).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(600, 4)); y = (X[:, 0] + rng.normal(size=600) > 0).astype(int)
    >>> fit = fit_bias_model(X, y, X[:10], n_classes=2, max_epochs=8)
    >>> fit.train_probs.shape, fit.eval_probs.shape, 1 <= fit.epochs <= 8
    ((600, 2), (10, 2), True)
    >>> bool(fit.metrics["oof_nll"] <= fit.metrics["oof_nll_before"] + 1e-9)
    True
    """
    from spurious.models.debias.fast import train_fast

    for name, value in (("max_epochs", max_epochs), ("patience", patience)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise ParameterError(f"The {name!r} argument must be an int >= 1; got {value!r}.")
    train.pop("epochs", None)  # the bias model's budget is max_epochs + early stopping
    y = np.asarray(y)
    oof = np.zeros((len(y), n_classes))
    fold_epochs: list[int] = []
    for i, (fit_rows, score_rows) in enumerate(_folds(y, n_folds, groups, random_state)):
        X_score, y_score = X[score_rows], y[score_rows]
        best = {"nll": np.inf, "epoch": 0, "probs": None}

        def watch(epoch: int, model: Any, X_score=X_score, y_score=y_score, best=best) -> bool:
            probs = model.predict_proba(X_score)
            nll = negative_log_likelihood(probs, y_score)
            if nll < best["nll"] - 1e-6:
                best.update(nll=nll, epoch=epoch, probs=probs)
            return epoch - best["epoch"] >= patience

        train_fast(
            X[fit_rows], y[fit_rows], n_classes=n_classes, epochs=max_epochs,
            epoch_callback=watch, random_state=random_state + i, **train,
        )  # fmt: skip
        oof[score_rows] = best["probs"]
        fold_epochs.append(int(best["epoch"]))
    epochs = max(1, round(float(np.median(fold_epochs))))
    temperature = fit_temperature(oof, y) if calibrate else 1.0
    metrics = {f"oof_{k}_before": v for k, v in calibration_metrics(oof, y).items()}
    train_probs = apply_temperature(oof, temperature)
    metrics.update({f"oof_{k}": v for k, v in calibration_metrics(train_probs, y).items()})
    eval_probs = eval_before = None
    if X_eval is not None:
        model = train_fast(
            X, y, n_classes=n_classes, epochs=epochs, random_state=random_state, **train
        )
        eval_before = model.predict_proba(X_eval)
        eval_probs = apply_temperature(eval_before, temperature)
    return BiasModelFit(
        train_probs, eval_probs, eval_before, temperature, epochs, fold_epochs, metrics
    )


def partial_input_bias(X_partial: Any, y: np.ndarray, **kwargs: Any) -> np.ndarray:
    """A partial-input (e.g. hypothesis-only) bias model's out-of-fold probabilities.

    ``X_partial`` holds the features of the partial view (``ctx.features(spec,
    "hypothesis_only")``); ``kwargs`` as :func:`out_of_fold_proba`. Out-of-fold, because
    a model scoring its own training rows is overconfident exactly where PoE-style losses
    are most sensitive.
    """
    return out_of_fold_proba(X_partial, y, **kwargs)


def shallow_bias(
    X: Any,
    y: np.ndarray,
    *,
    n_classes: int,
    n_examples: int = 2000,
    epochs: int = 3,
    random_state: int = 0,
    return_model: bool = False,
    **train: Any,
) -> Any:
    """Self-debiasing's shallow model: few examples, few epochs (Utama et al. 2020b).

    Trained on a seeded sample of ``n_examples`` training rows (all if fewer) for
    ``epochs``, it learns the easiest, most shortcut-like regularities; its probabilities
    on every training row are returned. Paper 002 footnote 12: 2,000 x 3 for MNLI, 500 x
    4 for QQP.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 3)); y = (X[:, 0] > 0).astype(int)
    >>> shallow_bias(X, y, n_classes=2, n_examples=100).shape
    (500, 2)
    """
    from spurious.models.debias.fast import train_fast

    rng = np.random.default_rng(random_state)
    rows = np.sort(rng.choice(len(y), size=min(n_examples, len(y)), replace=False))
    model = train_fast(
        X[rows], np.asarray(y)[rows], n_classes=n_classes, epochs=epochs,
        random_state=random_state, **train,
    )  # fmt: skip
    probs = model.predict_proba(X)
    return (probs, model) if return_model else probs


def heuristic_bias(
    X: Any,
    y: np.ndarray,
    attribute: np.ndarray,
    *,
    n_classes: int,
    threshold: float | None = None,
    side: str | None = None,
    reference_correct: np.ndarray | None = None,
    search_options: dict[str, Any] | None = None,
    random_state: int = 0,
    return_model: bool = False,
    **train: Any,
) -> Any:
    """A bias model trained on the biased segment of a heuristic split (001 App. B.2.1).

    The split is ``h(x) <= T`` (``low``) against ``h(x) > T`` (``high``). Without
    ``threshold`` and ``side``, a reference model's per-example correctness
    (``reference_correct``, e.g. out-of-fold predictions of a plain model) picks them
    with the threshold search of paper 001 (Alg. 1, App. C): the biased segment is the
    group where the reference does better (``search_options``: ``sample_size``,
    ``n_trials`` ... of :class:`~spurious.stats.bias_search.BootstrapOptions`).
    The bias model is trained on that segment only and scores every row.

    Returns
    -------
    probs : ndarray of shape (n, C)
    split : dict
        ``threshold``, ``side`` (the biased segment), ``n_segment`` and, when searched,
        the reference's ``bias``.
    model : FastModel
        Only with ``return_model=True``: the bias model, to score other splits.
    """
    from spurious.models.debias.fast import train_fast
    from spurious.stats.bias_search import threshold_search

    a = np.asarray(attribute, dtype=float)
    info: dict[str, Any] = {}
    if threshold is None or side is None:
        if reference_correct is None:
            raise ParameterError(
                "heuristic_bias needs 'threshold' and 'side', or 'reference_correct' to find them."
            )
        options = {"n_trials": 100, "random_state": random_state, **(search_options or {})}
        res = threshold_search(np.asarray(reference_correct, dtype=float), a, **options)
        if not np.isfinite(res.threshold):
            raise ParameterError("No threshold splits the attribute into two usable groups.")
        threshold = res.threshold
        side = "high" if res.worse_group == "low" else "low"
        info["reference_bias"] = float(res.bias)
    if side not in ("low", "high"):
        raise ParameterError(f"The 'side' argument must be 'low' or 'high'; got {side!r}.")
    rows = np.flatnonzero(a <= threshold if side == "low" else a > threshold)
    if len(rows) < 2 * n_classes:
        raise ParameterError(
            f"The biased segment ({side} of T={threshold:g}) has {len(rows)} rows; too few."
        )
    model = train_fast(
        X[rows], np.asarray(y)[rows], n_classes=n_classes, random_state=random_state, **train
    )
    info.update(threshold=float(threshold), side=side, n_segment=len(rows))
    if return_model:
        return model.predict_proba(X), info, model
    return model.predict_proba(X), info


def load_bias_file(path: str | Path, dataset: Dataset) -> np.ndarray:
    """Bias probabilities from a file keyed by id, aligned to ``dataset``'s rows.

    JSONL (one object per line: ``{"id": ..., "probs": [p_0, ..., p_C-1]}``, or one key
    per label name), CSV/TSV or Parquet with an ``id`` column and one column per label
    name (or a ``probs`` list column). Every row of ``dataset`` must be covered; rows
    are renormalised to sum to 1.

    Examples
    --------
    >>> import tempfile, os
    >>> ds = Dataset.from_frame(pd.DataFrame({"id": ["a", "b"], "text": ["x", "y"],
    ...                                       "label": ["neg", "pos"]}), "text")
    >>> path = os.path.join(tempfile.mkdtemp(), "bias.jsonl")
    >>> _ = open(path, "w").write('{"id": "b", "pos": 0.9, "neg": 0.1}\\n'
    ...                           '{"id": "a", "probs": [0.5, 0.5]}\\n')
    >>> load_bias_file(path, ds).tolist()
    [[0.5, 0.5], [0.1, 0.9]]
    """
    path = Path(path)
    names = list(dataset.label_names)
    suffix = path.suffix.lower()
    # A regular file of bounded size (a FIFO would block); lines end at \n only.
    check_input_file(path, what="Bias file", kind="predictions")
    try:
        if suffix in (".jsonl", ".json"):
            lines = text_lines(path.read_text(encoding="utf-8"))
            frame = pd.DataFrame([json.loads(line) for _, line in lines if line.strip()])
        elif suffix in (".csv", ".tsv"):
            frame = pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",")
        elif suffix == ".parquet":
            frame = pd.read_parquet(path)
        else:
            raise DataFormatError(
                f"Bias file {str(path)!r}: expected .jsonl, .json, .csv, .tsv or .parquet; "
                f"got {suffix!r}."
            )
    except (OSError, ValueError) as e:
        raise DataFormatError(f"Cannot read bias file {str(path)!r}: {e}") from None
    if "id" not in frame.columns:
        raise DataFormatError(f"Bias file {str(path)!r} has no 'id' column/key.")
    rows = np.zeros((len(frame), len(names)))
    for i, rec in enumerate(frame.to_dict(orient="records")):
        probs = rec.get("probs")
        if isinstance(probs, Sequence | np.ndarray) and not isinstance(probs, str):
            values = list(probs)
        else:
            values = [rec.get(n) for n in names]
        if len(values) != len(names) or any(v is None or pd.isna(v) for v in values):
            raise DataFormatError(
                f"Bias file {str(path)!r}, row {i + 1} (id {rec['id']!r}): expected "
                f"{len(names)} probabilities (labels {names}); got {values!r}."
            )
        rows[i] = values
    if (rows < 0).any():
        raise DataFormatError(f"Bias file {str(path)!r} has negative probabilities.")
    table = pd.DataFrame(rows, index=frame["id"].astype(str))
    ids = [str(i) for i in dataset.ids]
    missing = [i for i in ids if i not in table.index]
    if missing:
        raise DataFormatError(
            f"Bias file {str(path)!r} lacks {len(missing)} of the dataset's ids, e.g. "
            f"{missing[:3]}."
        )
    out = table.loc[ids].to_numpy()
    total = out.sum(axis=1, keepdims=True)
    if (total <= 0).any():
        raise DataFormatError(f"Bias file {str(path)!r} has rows whose probabilities sum to 0.")
    return out / total
