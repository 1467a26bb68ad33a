"""A reference AFLite filtering round, written the way public AFLite code does it.

One filtering phase of Algorithm 1 (Le Bras et al., 2020, Sec. 2): for each of ``m``
random partitions a *fresh* scikit-learn ``LogisticRegression`` is fitted on ``t`` rows
of the current dataset ``S`` and predicts the rows it did not train on; a row's
predictability score is the fraction of its held-out predictions that are correct.

Two variants, as used in ``bench/bench_aflite_round.py``:

* ``max_iter=100``: scikit-learn's default (``tol=1e-4``), which is what public AFLite
  implementations run (they do not set ``max_iter``); often stops before convergence.
* ``max_iter=10_000, tol=1e-8``: the "converged" reference.

Also holds :func:`make_embeddings`, the synthetic sentence-embedding-like data of the
benchmark (decaying eigen-spectrum, random rotation, anisotropic mean, modest class
means, an artifact subset of easy rows, near-duplicates, label noise).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable

import numpy as np

DEFAULT_MAX_ITER = 100
CONVERGED_MAX_ITER = 10_000
CONVERGED_TOL = 1e-8
#: A helper module (no main, writes nothing): bench_aflite_round.py, bench_aflite_cli.py and
#: bench_aflite_sparse.py import it, and their smoke runs exercise it.
SMOKE_SKIP = (
    "helper module imported by bench_aflite_round.py, bench_aflite_cli.py and "
    "bench_aflite_sparse.py (the reference round, make_embeddings); it has no main and "
    "writes no result: those scripts' smoke runs exercise it"
)


def random_partitions(n: int, m: int, t: int, seed: int = 0) -> np.ndarray:
    """``(m, t)`` training rows: ``m`` independent random subsets of size ``t`` of ``range(n)``."""
    rng = np.random.default_rng(seed)
    return np.stack([np.sort(rng.choice(n, size=t, replace=False)) for _ in range(m)])


def reference_round(
    X: np.ndarray,
    y: np.ndarray,
    train_idx: np.ndarray,
    *,
    C: float = 1.0,
    max_iter: int = DEFAULT_MAX_ITER,
    tol: float = 1e-4,
    partitions: Iterable[int] | None = None,
    on_partition: Callable[[int, float], None] | None = None,
    keep: dict | None = None,
) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Fit one scikit-learn model per partition and collect held-out predictions.

    Parameters
    ----------
    X, y : the current dataset S (features, integer labels).
    train_idx : (m, t) training rows of each partition.
    C, max_iter, tol : passed to ``LogisticRegression`` (solver lbfgs, multinomial).
    partitions : which partitions to run (default all), so a benchmark can time a few
        and extrapolate.
    on_partition : called with ``(j, seconds)`` after each partition.
    keep : if a dict, receives ``pred`` (partitions, N) int16 held-out predictions (-1 on
        training rows) and ``models`` (the fitted estimators), for comparisons.

    Returns
    -------
    correct, counted : (N,) int arrays, how many held-out predictions were right and how
        many were made (predictability ``p = correct / counted``).
    n_iter : lbfgs iterations of each fitted partition.
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    n = X.shape[0]
    correct = np.zeros(n, dtype=np.int64)
    counted = np.zeros(n, dtype=np.int64)
    n_iter = []
    parts = list(range(len(train_idx))) if partitions is None else list(partitions)
    if keep is not None:
        keep["pred"] = np.full((len(parts), n), -1, dtype=np.int16)
        keep["models"] = []
    for slot, j in enumerate(parts):
        t0 = time.perf_counter()
        rows = train_idx[j]
        held_out = np.ones(n, dtype=bool)
        held_out[rows] = False
        clf = LogisticRegression(C=C, max_iter=max_iter, tol=tol)
        with warnings.catch_warnings():
            # The default max_iter often stops early; public AFLite code ignores it too.
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf.fit(X[rows], y[rows])
        pred = clf.predict(X[held_out])
        correct[held_out] += pred == y[held_out]
        counted[held_out] += 1
        n_iter.append(int(np.max(clf.n_iter_)))
        if keep is not None:
            keep["pred"][slot, held_out] = pred
            keep["models"].append(clf)
        if on_partition is not None:
            on_partition(j, time.perf_counter() - t0)
    return correct, counted, n_iter


def objective(X: np.ndarray, y: np.ndarray, coef: np.ndarray, intercept: np.ndarray, C: float):
    """scikit-learn's lbfgs objective (mean loss + ||W||^2 / (2 C n)) and its max-abs
    gradient, in float64, at multinomial weights ``coef`` (k, d) and ``intercept`` (k,)."""
    from sklearn._loss.loss import HalfMultinomialLoss
    from sklearn.linear_model._linear_loss import LinearModelLoss

    k = coef.shape[0]
    loss = LinearModelLoss(HalfMultinomialLoss(n_classes=k), fit_intercept=True)
    w = np.hstack([coef, intercept[:, None]]).astype(np.float64).ravel(order="F")
    value, grad = loss.loss_gradient(
        w, X.astype(np.float64), y.astype(np.float64), None, 1.0 / (C * len(y))
    )
    return float(value), float(np.abs(grad).max())


def predictability(correct: np.ndarray, counted: np.ndarray) -> np.ndarray:
    """``p(i) = correct / counted`` (NaN where a row was never held out)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counted > 0, correct / np.maximum(counted, 1), np.nan)


def scores_from_predictions(
    pred: np.ndarray, y: np.ndarray, train_idx: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(correct, counted)`` from an ``(m, N)`` prediction matrix, held-out rows only."""
    m, n = pred.shape
    held_out = np.ones((m, n), dtype=bool)
    held_out[np.arange(m)[:, None], train_idx] = False
    correct = ((pred == y[None, :]) & held_out).sum(0)
    return correct, held_out.sum(0)


def top_k_filter(p: np.ndarray, k: int, tau: float = 0.75) -> np.ndarray:
    """AFLite's greedy slice: up to ``k`` rows with the highest ``p``, all ``p >= tau``.

    Ties are broken by row index (a stable sort), so the result is deterministic.
    """
    p = np.nan_to_num(p, nan=-1.0)
    order = np.argsort(-p, kind="stable")[:k]
    return np.sort(order[p[order] >= tau])


def make_embeddings(
    n: int,
    d: int,
    n_classes: int = 3,
    *,
    decay: float = 1.0,
    class_sep: float = 1.5,
    artifact_frac: float = 0.15,
    artifact_strength: float = 1.5,
    dup_frac: float = 0.05,
    label_noise: float = 0.05,
    offset: float = 3.0,
    seed: int = 0,
    block: int = 65536,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sentence-embedding-like features with a planted artifact subset.

    Latent coordinates have variances ``i^-decay`` (a power-law spectrum, as measured
    on transformer embeddings); classes differ by modest mean shifts in the leading 64
    latent directions (``class_sep``: typical Mahalanobis distance between two class means);
    an ``artifact_frac`` subset of rows gets a strong class-specific shift along a few
    mid-spectrum directions (the easy, predictable rows AFLite should remove); a
    ``dup_frac`` of rows are near-duplicates of others (same label, tiny noise); a
    ``label_noise`` fraction of labels are resampled. The latent space is rotated by a
    random orthogonal matrix and shifted by a common mean of ``offset`` times the leading
    standard deviation per coordinate (embeddings are anisotropic). Generated in row blocks, float32 throughout.

    Returns
    -------
    X : (n, d) float32, y : (n,) int64, artifact : (n,) bool
    """
    import torch

    rng = np.random.default_rng(seed)
    std = (np.arange(1, d + 1, dtype=np.float64) ** (-decay / 2)).astype(np.float32)
    rot = np.linalg.qr(rng.standard_normal((d, d)))[0].astype(np.float32)
    shift = (rng.standard_normal(d) * offset * std[0]).astype(np.float32)
    lead = min(64, d)
    means = np.zeros((n_classes, d), dtype=np.float32)
    # class_sep is the typical Mahalanobis distance between two class means.
    per_dir = class_sep / np.sqrt(2 * lead)
    means[:, :lead] = rng.standard_normal((n_classes, lead)) * per_dir * std[:lead]
    art_dirs = rng.choice(np.arange(min(8, d - 1), min(64, d)), size=min(4, d), replace=False)
    art_means = np.zeros((n_classes, d), dtype=np.float32)
    art_means[:, art_dirs] = (
        rng.standard_normal((n_classes, len(art_dirs))) * artifact_strength * std[art_dirs]
    )
    y = rng.integers(0, n_classes, size=n)
    artifact = rng.random(n) < artifact_frac
    X = np.empty((n, d), dtype=np.float32)
    rot_t = torch.from_numpy(rot)
    for lo in range(0, n, block):
        hi = min(n, lo + block)
        z = rng.standard_normal((hi - lo, d), dtype=np.float32) * std
        z += means[y[lo:hi]]
        z[artifact[lo:hi]] += art_means[y[lo:hi][artifact[lo:hi]]]
        X[lo:hi] = (torch.from_numpy(z) @ rot_t).numpy() + shift
    # Near-duplicates: copies of other rows (same label) plus a little noise.
    n_dup = int(dup_frac * n)
    if n_dup:
        dst = rng.choice(n, size=n_dup, replace=False)
        src = rng.integers(0, n, size=n_dup)
        noise = rng.standard_normal((n_dup, d), dtype=np.float32) * (0.05 * std[0])
        X[dst] = X[src] + noise
        y[dst] = y[src]
        artifact[dst] = artifact[src]
    flip = rng.random(n) < label_noise
    y[flip] = rng.integers(0, n_classes, size=int(flip.sum()))
    return X, y.astype(np.int64), artifact
