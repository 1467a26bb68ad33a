"""The adversary x model matrix: accuracy of every evaluated model on every AF-selected set.

(For extractive QA the per-example score is SQuAD F1 or EM instead of 0/1 correctness.)

Accuracy on an adversary's AF-selected set is averaged over its seeds (paper 004 averages
its seeds the same way). Intervals come from one bootstrap over the evaluation examples:
each draw reweights the examples (multinomial counts), and every model x adversary cell
of that draw is recomputed from the same counts, so the draws also serve the ranking
statistics (:mod:`~spurious.evaluate.fairness.ranking`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from spurious.exceptions import ParameterError

__all__ = ["Matrix", "accuracy_matrix", "correctness"]

#: Bootstrap draws computed together (bounds memory: chunk x n_eval floats).
_CHUNK = 100


def correctness(predictions: Sequence[np.ndarray], labels: np.ndarray) -> np.ndarray:
    """Correct (True) / wrong per model and example; a missing prediction (-1) is wrong.

    Parameters
    ----------
    predictions : sequence of int arrays, each of shape (n,)
        Predicted label ids per model.
    labels : int array of shape (n,)
        Gold label ids.

    Returns
    -------
    numpy.ndarray of bool, shape (n_models, n)

    Examples
    --------
    >>> correctness([np.array([0, 1, -1])], np.array([0, 0, 1])).tolist()
    [[True, False, False]]
    """
    labels = np.asarray(labels)
    out = np.zeros((len(predictions), len(labels)), dtype=bool)
    for m, p in enumerate(predictions):
        p = np.asarray(p)
        if p.shape != labels.shape:
            raise ParameterError(
                f"The 'predictions' parameter: model {m} has {p.shape[0]} predictions for "
                f"{labels.shape[0]} examples."
            )
        out[m] = p == labels
    return out


@dataclass
class Matrix:
    """Accuracy of models (rows) on adversaries' AF-selected sets (columns).

    Attributes
    ----------
    models, adversaries : list of str
        Row and column names; ``adversaries[0]`` is ``"none"`` (the full set).
    accuracy : ndarray (n_models, n_adversaries)
        Mean over seeds of the accuracy on the AF-selected set (NaN: a seed selected nothing).
    seed_sd : ndarray (n_models, n_adversaries)
        Standard deviation over seeds (ddof=1; 0 with one seed).
    ci_low, ci_high : ndarray (n_models, n_adversaries)
        Percentile bootstrap interval over the evaluation examples.
    boot : ndarray (n_bootstrap, n_models, n_adversaries)
        The bootstrap draws (for ranking intervals).
    n_selected : ndarray (n_adversaries,)
        Mean AF-selected size over seeds.
    """

    models: list[str]
    adversaries: list[str]
    accuracy: np.ndarray
    seed_sd: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    boot: np.ndarray
    n_selected: np.ndarray


def _seed_mean(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = num / den
    return acc


def accuracy_matrix(
    correct: np.ndarray,
    selected: Mapping[str, np.ndarray],
    *,
    models: Sequence[str] | None = None,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    random_state: int | None = 0,
) -> Matrix:
    """Accuracy of every model on every adversary's selected set, with bootstrap intervals.

    Parameters
    ----------
    correct : bool or float array (n_models, n)
        Per model and example: predicted correctly, or a score in [0, 1] (e.g. SQuAD
        F1); a cell is then the mean score on the selected set.
    selected : mapping adversary -> bool array (n_seeds, n)
        AF-selected examples per seed. The column ``"none"`` (every example) is added first.
    models : sequence of str, optional
        Model names (default ``model0``, ``model1`` ...).
    n_bootstrap : int
        Bootstrap draws over the evaluation examples (0: no intervals).
    confidence : float
        Interval coverage.
    random_state : int, optional
        Seed of the bootstrap.

    Returns
    -------
    Matrix

    Examples
    --------
    >>> correct = np.array([[1, 1, 0, 0], [1, 0, 1, 1]], dtype=bool)
    >>> sel = {"adv": np.array([[0, 0, 1, 1], [0, 1, 1, 1]], dtype=bool)}
    >>> m = accuracy_matrix(correct, sel, models=["a", "b"], n_bootstrap=0)
    >>> m.adversaries, m.accuracy.round(3).tolist()
    (['none', 'adv'], [[0.5, 0.167], [0.75, 0.833]])
    """
    correct = np.asarray(correct)
    # Per-example scores may be 0/1 correctness or a graded score in [0, 1] (SQuAD F1).
    correct = correct.astype(bool) if correct.dtype.kind in "biu" else correct.astype(np.float64)
    if correct.dtype.kind == "f" and not ((correct >= 0) & (correct <= 1)).all():
        raise ParameterError(
            "The 'correct' parameter must hold booleans or scores in [0, 1] (NaN is not "
            f"allowed); got values in [{np.nanmin(correct)}, {np.nanmax(correct)}]."
        )
    if correct.ndim != 2:
        raise ParameterError(
            f"The 'correct' parameter must be 2-d (models x examples); got shape {correct.shape}."
        )
    n_models, n = correct.shape
    if "none" in selected:
        raise ParameterError("The 'selected' parameter may not hold an adversary 'none'.")
    sets = {"none": np.ones((1, n), dtype=bool)}
    for name, s in selected.items():
        s = np.atleast_2d(np.asarray(s, dtype=bool))
        if s.shape[1] != n:
            raise ParameterError(
                f"The 'selected' parameter: adversary {name!r} covers {s.shape[1]} examples, "
                f"the predictions {n}."
            )
        sets[str(name)] = s
    if not 0 < confidence < 1:
        raise ParameterError(f"The 'confidence' parameter must be in (0, 1). Got {confidence}.")
    names = list(models) if models is not None else [f"model{m}" for m in range(n_models)]
    advs = list(sets)
    cf = correct.astype(np.float64)
    acc = np.full((n_models, len(advs)), np.nan)
    sd = np.zeros_like(acc)
    for j, a in enumerate(advs):
        s = sets[a].astype(np.float64)  # (S, n)
        per_seed = _seed_mean(cf @ s.T, s.sum(axis=1)[None, :])  # (M, S)
        acc[:, j] = per_seed.mean(axis=1)
        if per_seed.shape[1] > 1:
            sd[:, j] = per_seed.std(axis=1, ddof=1)
    boot = np.full((n_bootstrap, n_models, len(advs)), np.nan)
    if n_bootstrap > 0 and n > 0:
        rng = np.random.default_rng(random_state)
        for lo in range(0, n_bootstrap, _CHUNK):
            b = min(_CHUNK, n_bootstrap - lo)
            w = rng.multinomial(n, np.full(n, 1.0 / n), size=b).astype(np.float64)  # (b, n)
            for j, a in enumerate(advs):
                s = sets[a].astype(np.float64)
                den = w @ s.T  # (b, S)
                num = np.einsum("bn,mn,sn->bms", w, cf, s, optimize=True)
                boot[lo : lo + b, :, j] = _seed_mean(num, den[:, None, :]).mean(axis=2)
    alpha = (1 - confidence) / 2
    if n_bootstrap > 0:
        with np.errstate(invalid="ignore"):
            lo_q = np.nanquantile(boot, alpha, axis=0) if np.isfinite(boot).any() else acc * np.nan
            hi_q = (
                np.nanquantile(boot, 1 - alpha, axis=0) if np.isfinite(boot).any() else acc * np.nan
            )
    else:
        lo_q = hi_q = np.full_like(acc, np.nan)
    n_sel = np.array([sets[a].sum(axis=1).mean() for a in advs], dtype=float)
    return Matrix(names, advs, acc, sd, lo_q, hi_q, boot, n_sel)
