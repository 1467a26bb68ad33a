"""The option-scoring probe of ``mc_leakage``: out-of-sample option probabilities per view.

Every view's option blocks (:class:`~spurious.features.mcq.OptionBlocks`) go to a
:class:`~spurious.models.conditional_logit.ConditionalLogit` (one weight vector shared by
the options, a softmax over each item's options). Without an evaluation split, items are
cross-fitted (:func:`item_folds`: shuffled with the seed, not stratified and not
grouped: a group is an MMLU subject, and a model must see every subject to learn a
subject's cue); with one, the probe is fitted on the training split and scores the
evaluation split. :func:`option_probabilities` runs those fits; :func:`shuffled_gold_null`
runs the same fits on gold positions re-drawn uniformly within each item (the null of the
permutation test). The fits are independent, deterministic Newton solves, so they run
side by side on threads with one BLAS thread each, and the result does not depend on
the number of threads.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from spurious.exceptions import ParameterError
from spurious.models.conditional_logit import ConditionalLogit

__all__ = [
    "ProbeInputs",
    "item_folds",
    "option_probabilities",
    "redraw_gold",
    "shuffled_gold_null",
]


@dataclass(frozen=True)
class ProbeInputs:
    """One view's option blocks: the training split's, and the evaluation split's if any.

    Attributes
    ----------
    X : ndarray of shape (n, K * d)
        Blocks of the training split (the data).
    n_features : int
        ``d``, the indicator column included.
    X_eval : ndarray of shape (n_eval, K * d) or None
        Blocks of the evaluation split (the same ``K``), or ``None`` to cross-fit.
    """

    X: np.ndarray
    n_features: int
    X_eval: np.ndarray | None = None


def item_folds(n: int, n_folds: int, seed: int | None) -> np.ndarray:
    """The test fold of each of ``n`` items: a seeded shuffle dealt into ``n_folds`` folds.

    Examples
    --------
    >>> f = item_folds(10, 5, 0)
    >>> sorted(np.bincount(f).tolist())
    [2, 2, 2, 2, 2]
    """
    if n < n_folds:
        raise ParameterError(
            f"The 'n_folds' parameter must not exceed the number of items ({n}). Got {n_folds}."
        )
    return np.random.default_rng(seed).permutation(n) % n_folds


def redraw_gold(n_options: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A gold position per item drawn uniformly from its own options (the null's labels).

    Examples
    --------
    >>> g = redraw_gold(np.array([2, 4, 10]), np.random.default_rng(0))
    >>> bool(((g >= 0) & (g < [2, 4, 10])).all())
    True
    """
    k = np.asarray(n_options, dtype=np.int64)
    return np.minimum((rng.random(len(k)) * k).astype(np.int64), k - 1)


# One fit: (inputs, gold of the training split, training rows, rows to score or None for
# the evaluation split, whether probabilities are wanted).
_Task = tuple[ProbeInputs, np.ndarray, np.ndarray, np.ndarray | None, bool]


def _fit(task: _Task, l2: float) -> np.ndarray:
    inputs, y, train, score, proba = task
    X_pred = inputs.X_eval if score is None else inputs.X[score]
    model = ConditionalLogit(inputs.n_features, l2=l2)
    if proba:
        return model.fit_predict_proba(inputs.X, y, train[None], X_pred)[0]
    return model.fit_predict(inputs.X, y, train[None], 0, X_pred)[0]


def _run_tasks(
    tasks: Sequence[_Task], l2: float, n_threads: int | None, desc: str, progress: bool
) -> list[np.ndarray]:
    """Every fit, in order, on ``n_threads`` threads (``None``: the cores, at most 8)."""
    from threadpoolctl import threadpool_limits

    workers = min(n_threads or min(os.cpu_count() or 1, 8), max(len(tasks), 1))
    fit: Callable[[_Task], np.ndarray] = lambda t: _fit(t, l2)  # noqa: E731
    bar = tqdm(total=len(tasks), desc=desc, disable=not progress)
    out: list[np.ndarray] = []
    # Many mid-sized Newton solves: several BLAS threads per solve only add
    # synchronisation (several times slower on a busy 2-core machine), so each solve
    # gets one and the solves run side by side (numpy releases the GIL in them).
    with threadpool_limits(limits=1, user_api="blas"):
        if workers <= 1:
            for t in tasks:
                out.append(fit(t))
                bar.update()
        else:
            with ThreadPoolExecutor(workers, thread_name_prefix="mc_leakage") as pool:
                for r in pool.map(fit, tasks):
                    out.append(r)
                    bar.update()
    bar.close()
    return out


def _tasks(
    inputs: ProbeInputs, y: np.ndarray, fold_of: np.ndarray | None, proba: bool
) -> list[_Task]:
    if inputs.X_eval is not None or fold_of is None:
        return [(inputs, y, np.arange(len(y)), None, proba)]
    n_folds = int(fold_of.max()) + 1
    return [
        (inputs, y, np.flatnonzero(fold_of != f), np.flatnonzero(fold_of == f), proba)
        for f in range(n_folds)
    ]


def _assemble(
    tasks: list[_Task], results: list[np.ndarray], n_scored: int, shape: tuple[int, ...]
) -> np.ndarray:
    out = np.zeros((n_scored, *shape))
    for (_, _, _, score, _), r in zip(tasks, results, strict=True):
        if score is None:
            out[:] = r
        else:
            out[score] = r
    return out


def option_probabilities(
    views: dict[str, ProbeInputs],
    y: np.ndarray,
    *,
    fold_of: np.ndarray | None,
    l2: float = 1.0,
    n_threads: int | None = None,
    progress: bool = False,
    label: str = "mc_leakage",
) -> dict[str, np.ndarray]:
    """Out-of-sample option probabilities of every scored item, per view.

    Parameters
    ----------
    views : dict of str to ProbeInputs
        Each view's blocks (all with or all without an evaluation split).
    y : ndarray of int
        Gold positions of the training split (the data).
    fold_of : ndarray of int or None
        Each training item's test fold (:func:`item_folds`) when cross-fitting; ignored
        with an evaluation split.
    l2 : float, default=1.0
        The probe's ridge penalty.
    n_threads : int, optional
        Fits side by side (``None``: the cores, at most 8); the result is the same.
    progress : bool, default=False
    label : str, default="mc_leakage"
        The analysis named on the progress bar.

    Returns
    -------
    dict of str to ndarray of shape (n_scored, K)
        Zero on padding options; rows sum to 1.

    Examples
    --------
    >>> from spurious.data.synthetic_mcq import make_mcq_artifacts
    >>> from spurious.features.mcq import OptionFeaturizer
    >>> ds = make_mcq_artifacts(n=200, artifact_rate=1.0, random_state=0).dataset
    >>> b = OptionFeaturizer("lexical").fit(ds).transform(ds, "choices_only")
    >>> p = option_probabilities({"choices_only": ProbeInputs(b.X, b.n_features)}, ds.labels,
    ...                          fold_of=item_folds(len(ds), 5, 0))["choices_only"]
    >>> bool((p.argmax(axis=1) == ds.labels).mean() > 0.9)
    True
    """
    names = list(views)
    per_view = [_tasks(views[v], y, fold_of, True) for v in names]
    flat = [t for ts in per_view for t in ts]
    results = _run_tasks(flat, l2, n_threads, f"{label}: views x folds", progress)
    out: dict[str, np.ndarray] = {}
    start = 0
    for v, ts in zip(names, per_view, strict=True):
        inputs = views[v]
        n_scored = len(inputs.X_eval) if inputs.X_eval is not None else len(y)
        K = inputs.X.shape[1] // inputs.n_features
        out[v] = _assemble(ts, results[start : start + len(ts)], n_scored, (K,))
        start += len(ts)
    return out


def shuffled_gold_null(
    inputs: ProbeInputs,
    n_options: np.ndarray,
    n_options_eval: np.ndarray | None,
    *,
    fold_of: np.ndarray | None,
    n_permutations: int,
    random_state: Any = 0,
    l2: float = 1.0,
    n_threads: int | None = None,
    progress: bool = False,
    label: str = "mc_leakage",
) -> np.ndarray:
    """Whether the probe is right on each scored item, refitted on re-drawn gold positions.

    Each permutation draws every item's gold uniformly from its own options (the
    training split's and, with one, the evaluation split's), then runs the same fits as
    :func:`option_probabilities` (the same folds) and scores them against the re-drawn
    gold: the accuracy a probe reaches when nothing about an item, its letters included,
    says which option is gold. The features are unsupervised, so refitting the probe
    is refitting the whole pipeline.

    Returns
    -------
    ndarray of bool, shape (n_permutations, n_scored)

    Examples
    --------
    >>> from spurious.data.synthetic_mcq import make_mcq_artifacts
    >>> from spurious.features.mcq import OptionFeaturizer
    >>> ds = make_mcq_artifacts(n=200, artifact_rate=1.0, random_state=0).dataset
    >>> b = OptionFeaturizer("lexical").fit(ds).transform(ds, "choices_only")
    >>> k = ds.frame["options"].map(len).to_numpy()
    >>> null = shuffled_gold_null(ProbeInputs(b.X, b.n_features), k, None,
    ...                           fold_of=item_folds(200, 5, 0), n_permutations=3)
    >>> null.shape, bool(null.mean() < 0.4)
    ((3, 200), True)
    """
    rng = np.random.default_rng(random_state)
    tasks: list[_Task] = []
    gold_scored = []
    for _ in range(n_permutations):
        y = redraw_gold(n_options, rng)
        tasks += _tasks(inputs, y, fold_of, False)
        gold_scored.append(y if n_options_eval is None else redraw_gold(n_options_eval, rng))
    results = _run_tasks(tasks, l2, n_threads, f"{label}: shuffled-gold null", progress)
    per = len(tasks) // max(n_permutations, 1)
    n_scored = len(gold_scored[0]) if gold_scored else 0
    out = np.zeros((n_permutations, n_scored), dtype=bool)
    for b in range(n_permutations):
        chunk = slice(b * per, (b + 1) * per)
        pred = _assemble(tasks[chunk], results[chunk], n_scored, ())
        out[b] = pred.astype(np.int64) == gold_scored[b]
    return out
