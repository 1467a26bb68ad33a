"""AFLite: adversarial filtering of the most predictable examples (paper 000, Alg. 1).

Each round trains ``m`` classifiers of a model family on random training sets of ``t``
examples of the current set S, predicts every other example of S, and scores each
example by its *predictability* p(i): the fraction of the predictions it received
(``E(i)``, one per classifier that held it out) that equal its gold label. The (up to)
``k`` most predictable examples with ``p(i) >= tau`` are removed, and rounds repeat
until fewer than ``k`` examples reach ``tau`` or at most ``n`` examples remain.

With an evaluation split (paper 004, App. A, Alg. 1) the classifiers are trained on the
training set only; in every round they also predict every remaining evaluation example,
and *all* evaluation examples with ``p >= tau`` are removed (no ``k`` limit). The round
each one was removed in is its history H; the three stages of paper 004 Fig. 1 are
"filtered in the first round", "filtered in later rounds" and "AF-selected" (kept).

Parameter names and the papers' symbols::

    AFLite parameter   paper 000 (Alg. 1)   paper 004 (App. A, Alg. 1)
    n_partitions       m                    m
    train_size         t  (|S \\ T_j| = t)   t
    slice_size         k                    k
    tau                tau                  tau
    target_size        n                    n
    model              model family M       M
    features           Phi(X)               (Phi(X_T), Phi(X_V))
    (train dataset)    D = (X, Y), S        D_T, S
    (eval dataset)     -                    D_V, R (remaining), H (history)

Deviations from the papers (also in docs/methods/aflite.md):

- ``train_size``, ``slice_size`` and ``target_size`` given as fractions are fractions of
  the *initial* dataset size, so t and k stay constant over rounds, as in the paper
  (Sec. 2, "Implementation": t "remains unchanged across iterations").
- Algorithm 1 can remove a slice that takes |S| below n; we never remove more than
  ``|S| - n`` in a round, matching the text's "repeat up to floor((|D| - n) / k) times".
  Without ``target_size`` the floor is n = t (every classifier must hold out at least
  one example).
- Ties at the slice boundary are broken at random (seeded), not by row order, because
  data files are often sorted (by label, by source).
- An example that no classifier held out in a round (possible with small m) has no
  score that round; it is not removed in that round.
- With ``group_by``, training sets are drawn by whole groups (all rows sharing a key,
  e.g. one SNLI premise); the one group cut by the size limit t has its remaining rows
  left out of that partition's held-out set, so no group is ever on both sides.
- ``gumbel_slice`` (App. A.1 (C), A.2) samples the slice among the examples with
  ``p >= tau`` (the paper does not say how the threshold combines with sampling).
- In evaluation-set mode the stopping rule is the training set's, exactly as in paper
  004's Algorithm 1 (S shrinks by up to k per round; the evaluation examples of the
  round that triggers the stop are still filtered). The loop also ends when no
  evaluation example remains ("eval_exhausted"); later rounds could not change H or R.
- ``model="logistic"`` on sparse features (bag of words, tf-idf) is the batched
  logistic regression on CSR input (plain L-BFGS from zero, ``max_iter=1000`` like
  ``"sklearn-logistic"``; each classifier on its own rows and columns, see
  ``spurious.models.batched.sparse``), 5-9x faster than scikit-learn per partition
  on SNLI (``bench/bench_aflite_sparse.py``).
- ``max_rounds`` is an extra, user-side budget; a run stopped by it can be resumed
  with a larger budget from its checkpoint.

Speed: a model family that offers a shared start (the batched logistic regression's
pooled starting point and Hessian preconditioner, see :func:`prepare_start`) builds it
once per run on D instead of once per round; the classifiers converge to the same
minimisers (to the solver's ``tol``) from it. With the defaults on SNLI dev (9,842
pairs, MiniLM pair features) a run takes ~15-35 s instead of ~3-5 min on 2 busy cores
(``bench/bench_aflite_default.py``).

Numerical sensitivity: which examples are removed depends on the model family's
predictions only through p, but ties among equal p (in round 1 of SNLI dev, 2,084
examples have p = 1 for k = 197 slots) are broken by random keys assigned in the order
of the eligible examples, so one changed p reshuffles the whole slice and later rounds
diverge. Any change of the solver's arithmetic therefore moves the removed set about as
much as another seed: on SNLI dev (CAD train) the removed sets of this implementation
and of the per-round-start one agree with Jaccard 0.84 (0.73), the old one against
itself with a 10x tighter ``tol`` 0.84 (0.73), and with ``random_state=1`` 0.84 (0.70),
while p in round 1 (same partitions) has Spearman 0.9998 (1.0) against 0.97 (0.96)
between seeds (``bench/results/aflite_default.json``). That is the tolerance of "the
same result" for AFLite runs across code versions, BLAS builds and machines.

Randomness: round ``r`` draws its partitions, tie-breaks and Gumbel noise from
generators seeded by ``(random_state, r, stream)``, so a run resumed from a checkpoint
after round ``r`` gives exactly the result of an uninterrupted run.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import math
from numbers import Integral
from typing import Any, overload

import numpy as np
import scipy.sparse as sp

from spurious.exceptions import AnalysisError, ParameterError
from spurious.execution import Executor
from spurious.models.partition import PartitionModel, SklearnPartitionModel
from spurious.utils.hashing import c_order_chunks
from spurious.utils.validation import Interval, RealNotInt

logger = logging.getLogger(__name__)

__all__ = [
    "SELECTIONS",
    "features_fingerprint",
    "predictability",
    "prepare_start",
    "round_rng",
    "sample_partitions",
    "score_partitions",
    "select_slice",
]

#: Ways to pick the examples removed in a round (paper 000, App. A.1).
SELECTIONS = ("greedy_slice", "greedy_one", "gumbel_slice")
#: Stages of an example in evaluation-set mode (paper 004, Fig. 1).
STAGES = ("filtered_first_round", "filtered_later_round", "af_selected")
#: Bins of the per-round predictability histograms in ``details``.
HIST_BINS = 20

# Independent random streams of one round (the spawn key is (round, stream)).
STREAM_PARTITIONS = 0
STREAM_SELECT = 1
STREAM_EXAMPLES = 2

SIZE_CONSTRAINTS = [
    Interval(Integral, 1, None, closed="left"),
    Interval(RealNotInt, 0, 1, closed="neither"),
]


# ---------------------------------------------------------------------------------------
# Building blocks (public: tested on their own, reused by the baselines)
# ---------------------------------------------------------------------------------------
def round_rng(entropy: int, round_: int, stream: int) -> np.random.Generator:
    """The generator of one random step: seeded by ``(entropy, round_, stream)`` only.

    Examples
    --------
    >>> a = round_rng(0, 3, 0).integers(1000, size=3)
    >>> b = round_rng(0, 3, 0).integers(1000, size=3)
    >>> bool((a == b).all()), bool((a == round_rng(0, 4, 0).integers(1000, size=3)).all())
    (True, False)
    """
    return np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(round_, stream)))


@overload
def resolve_size(value: int | float, n: int, name: str) -> int: ...
@overload
def resolve_size(value: None, n: int, name: str) -> None: ...
@overload
def resolve_size(value: int | float | None, n: int, name: str) -> int | None: ...
def resolve_size(value: int | float | None, n: int, name: str) -> int | None:
    """An absolute size from an int (as is) or a fraction of ``n`` (rounded, at least 1).

    Examples
    --------
    >>> resolve_size(0.1, 1000, "train_size"), resolve_size(30, 1000, "slice_size")
    (100, 30)
    >>> resolve_size(None, 10, "target_size") is None
    True
    """
    if value is None:
        return None
    if isinstance(value, Integral):
        return int(value)
    return max(1, round(float(value) * n))


def sample_partitions(
    codes: np.ndarray, t: int, m: int, rng: np.random.Generator
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Draw ``m`` training sets of ``t`` rows by whole groups.

    Groups are taken in random order until ``t`` rows are reached; the group that
    crosses the limit contributes only the rows needed, and its other rows are
    *excluded* from that partition (neither trained on nor held out), so a group is
    never split between training and held-out rows. With one group per row
    (``codes = arange(n)``) this is a plain uniform sample of ``t`` rows.

    Parameters
    ----------
    codes : ndarray of int, shape (n,)
        Group code of each row, in ``[0, G)``.
    t : int
        Training rows per partition, ``1 <= t < n``.
    m : int
        Number of partitions.
    rng : numpy.random.Generator

    Returns
    -------
    train : ndarray of int64, shape (m, t)
        Row positions of each training set, ascending within a partition.
    excluded : list of ndarray of int64
        Per partition, the rows neither trained on nor held out.

    Examples
    --------
    >>> codes = np.array([0, 0, 1, 1, 2, 2])
    >>> train, excl = sample_partitions(codes, 3, 2, np.random.default_rng(0))
    >>> train.shape, [len(e) for e in excl]
    ((2, 3), [1, 1])
    """
    codes = np.asarray(codes, dtype=np.int64)
    n = len(codes)
    if not 1 <= t < n:
        raise AnalysisError(f"Each partition needs 1 <= t < |S|; got t={t} with |S|={n}.")
    n_groups = int(codes.max()) + 1 if n else 0
    sizes = np.bincount(codes, minlength=n_groups)
    by_group = np.argsort(codes, kind="stable")  # rows of group g: by_group[starts[g]:...]
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    train = np.empty((m, t), dtype=np.int64)
    excluded: list[np.ndarray] = []
    for j in range(m):
        order = rng.permutation(n_groups)
        cum = np.cumsum(sizes[order])
        q = int(np.searchsorted(cum, t, side="left"))  # group order[q] reaches t rows
        full = order[:q]
        lens = sizes[full]
        # Row positions of the complete groups, gathered without a Python loop.
        offsets = np.repeat(starts[full] - (np.cumsum(lens) - lens), lens)
        rows_full = by_group[np.arange(int(lens.sum())) + offsets]
        need = t - (int(cum[q - 1]) if q > 0 else 0)
        g = order[q]
        members = by_group[starts[g] : starts[g] + sizes[g]]
        if need < len(members):
            members = rng.permutation(members)
        train[j] = np.sort(np.concatenate([rows_full, members[:need]]))
        excluded.append(np.sort(members[need:]))
    return train, excluded


def predictability(correct: np.ndarray, held_out: np.ndarray) -> np.ndarray:
    """p(i) = correct predictions / predictions received; NaN where none were received.

    Examples
    --------
    >>> predictability(np.array([3, 0, 0]), np.array([4, 2, 0]))
    array([0.75, 0.  ,  nan])
    """
    correct = np.asarray(correct, dtype=np.float64)
    held_out = np.asarray(held_out, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(held_out > 0, correct / np.where(held_out > 0, held_out, 1), np.nan)


def select_slice(
    p: np.ndarray, k: int, tau: float, selection: str, rng: np.random.Generator
) -> np.ndarray:
    """Positions of the examples removed in one round, in order of priority.

    Parameters
    ----------
    p : ndarray of float
        Predictability of each example (NaN: not scored, never removed).
    k : int
        Slice size (``greedy_one`` always uses 1).
    tau : float
        Only examples with ``p >= tau`` can be removed.
    selection : {"greedy_slice", "greedy_one", "gumbel_slice"}
        ``greedy_*``: the highest p first, ties broken at random. ``gumbel_slice``:
        ``k`` draws without replacement with probability proportional to p, by the
        Gumbel-top-k trick on ``log p`` (paper 000, App. A.2).
    rng : numpy.random.Generator
        Tie-breaks or Gumbel noise.

    Returns
    -------
    ndarray of int64
        At most ``k`` positions into ``p``.

    Examples
    --------
    >>> p = np.array([0.9, 0.5, 1.0, 0.8, np.nan])
    >>> select_slice(p, 2, 0.75, "greedy_slice", np.random.default_rng(0)).tolist()
    [2, 0]
    >>> select_slice(p, 2, 0.75, "greedy_one", np.random.default_rng(0)).tolist()
    [2]
    """
    if selection not in SELECTIONS:
        raise ParameterError(
            f"The 'selection' parameter must be one of {list(SELECTIONS)}. Got {selection!r}."
        )
    if selection == "greedy_one":
        k = 1
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        eligible = np.flatnonzero(p >= tau)
    if len(eligible) == 0 or k <= 0:
        return np.empty(0, dtype=np.int64)
    pe = p[eligible]
    if selection == "gumbel_slice":
        with np.errstate(divide="ignore"):
            keys = np.log(pe) + rng.gumbel(size=len(eligible))
        order = np.argsort(-keys, kind="stable")
    else:
        # lexsort: last key is primary (highest p first), then a random tie-break.
        order = np.lexsort((rng.random(len(eligible)), -pe))
    return eligible[order[:k]].astype(np.int64)


def features_fingerprint(X: Any) -> str:
    """blake2b digest of a dense or CSR feature matrix (shape, dtype and values).

    Examples
    --------
    >>> a = np.ones((2, 2), np.float32)
    >>> features_fingerprint(a) == features_fingerprint(a.copy())
    True
    """
    h = hashlib.blake2b(digest_size=16)
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        h.update(f"csr{X.shape}{X.dtype}".encode())
        for part in (X.data, X.indices, X.indptr):
            h.update(np.ascontiguousarray(part).data)
    else:
        X = np.asarray(X)
        h.update(f"dense{X.shape}{X.dtype}".encode())
        for chunk in c_order_chunks(X):  # a strided view is not copied whole
            h.update(chunk)
    return h.hexdigest()


def _score_chunk(item: dict[str, Any], shared: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Fit one chunk of partitions; count held-out predictions and correct ones.

    Runs on an executor (possibly a Ray worker). The big matrix arrives once, as
    ``shared``; the partitions (positions in the current S, and R) train on their rows
    of it and the counts are kept for S and R only. Only integer counts come back, and
    summing counts over chunks is exact, so chunking cannot change results.
    """
    X, y, model = shared["X"], shared["y"], shared["model"]
    rows, train_idx, excluded = item["rows"], item["train_idx"], item["excluded"]
    if not y.flags.writeable:  # Ray hands out read-only views; torch wants writable labels
        y = y.copy()
    # The partitions index the active rows; the model gets them as rows of the whole X
    # and predicts all of it, of which the active rows' predictions are kept. Taking
    # X[rows] instead copied S each round after the first (3.3 GB at 550k x 1536, the
    # quick audit's peak); the rows no longer active only cost their share of the
    # prediction and gradient products.
    fit_rows = train_idx if rows is None else rows[train_idx]
    start = shared.get("start")
    # Only models that offered a shared start (see prepare_start) are handed one back.
    extra = {} if start is None else {"start": start}
    pred = np.asarray(model.fit_predict(X, y, fit_rows, shared["n_classes"], **extra))
    if pred.shape != (len(train_idx), X.shape[0]):
        raise AnalysisError(
            f"The model family returned predictions of shape {pred.shape}; expected "
            f"{(len(train_idx), X.shape[0])} (partitions, rows)."
        )
    if rows is not None:
        pred, y = pred[:, rows], y[rows]
    n = pred.shape[1]
    correct = np.zeros(n, dtype=np.int64)
    held = np.zeros(n, dtype=np.int64)
    for j in range(len(train_idx)):
        mask = np.ones(n, dtype=bool)
        mask[train_idx[j]] = False
        mask[excluded[j]] = False
        held += mask
        correct += mask & (pred[j] == y)
    return correct, held


def score_partitions(
    executor: Executor,
    shared: Any,
    rows: np.ndarray | None,
    train_idx: np.ndarray,
    excluded: list[np.ndarray],
    chunk_size: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Correct-prediction and held-out counts of the active rows over all partitions.

    Parameters
    ----------
    executor : Executor
    shared : object
        ``{"X", "y", "model", "n_classes"}`` (or what ``executor.put`` made of it).
    rows : ndarray of int or None
        Active rows of ``X`` (S, then R in evaluation-set mode); ``None`` for all rows.
    train_idx : ndarray of shape (m, t)
        Training rows of each partition, as positions into ``rows``.
    excluded : list of ndarray
        Per partition, positions neither trained on nor held out.
    chunk_size : int
        Partitions per executor task.

    Returns
    -------
    correct, held_out : ndarray of int64, one entry per active row
    """
    m = len(train_idx)
    chunks = [
        {
            "rows": rows,
            "train_idx": train_idx[a : a + chunk_size],
            "excluded": excluded[a : a + chunk_size],
        }
        for a in range(0, m, chunk_size)
    ]
    n = len(rows) if rows is not None else None
    results = executor.map(_score_chunk, chunks, shared=shared) if chunks else []
    correct = held = None
    for c, h in results:
        correct = c.astype(np.int64) if correct is None else correct + c
        held = h.astype(np.int64) if held is None else held + h
    if correct is None:
        correct = held = np.zeros(n or 0, dtype=np.int64)
    return correct, held


def chunk_partitions(m: int, chunk_size: int | None, n_workers: int, model: Any) -> int:
    """Partitions per executor task: ``chunk_size`` or m split over the workers, rounded up
    to a multiple of the model's ``group_size`` (where its results are chunk-invariant).

    Examples
    --------
    >>> chunk_partitions(64, None, 3, object()), chunk_partitions(64, 5, 1, object())
    (22, 5)
    """
    chunk = chunk_size or max(1, math.ceil(m / max(1, n_workers)))
    group = int(getattr(model, "group_size", 1) or 1)
    return min(max(m, 1), math.ceil(chunk / group) * group) if group > 1 else chunk


def make_partition_model(
    spec: Any, random_state: int | None = 0, *, sparse: bool = False
) -> PartitionModel:
    """The model family M from a name, a scikit-learn classifier or a PartitionModel.

    ``"logistic"`` is the batched logistic regression (``spurious.models.batched``):
    with its pooled start and preconditioner for dense features, plain L-BFGS from zero
    (``max_iter=1000``) for sparse ones (bag of words, tf-idf); when the batched model
    is not available, scikit-learn's ``LogisticRegression`` fitted per partition.
    ``"sklearn-logistic"``, ``"linear-svm"``, ``"rbf-svm"``, ``"mlp"`` and any
    scikit-learn classifier are fitted once per partition.

    Examples
    --------
    >>> type(make_partition_model("rbf-svm")).__name__
    'SklearnPartitionModel'
    """
    if isinstance(spec, PartitionModel) and not isinstance(spec, str):
        return spec
    if spec == "logistic":
        # The batched model runs on torch, an extra: a core install (no torch) fits
        # scikit-learn's LogisticRegression per partition instead of skipping AFLite.
        if importlib.util.find_spec("torch") is None:
            logger.info("aflite: torch is not installed; fitting sklearn-logistic per partition")
            return SklearnPartitionModel("sklearn-logistic", random_state=random_state)
        try:
            from spurious.models.batched import BatchedLogisticRegression
        except ImportError:
            logger.debug("spurious.models.batched unavailable; using sklearn-logistic per fit")
            return SklearnPartitionModel("sklearn-logistic", random_state=random_state)
        if sparse:
            # No pooled start nor preconditioner on sparse features (sparse.py says
            # why); scikit-learn-logistic's iteration budget.
            return BatchedLogisticRegression(precondition="none", max_iter=1000)
        return BatchedLogisticRegression()
    from spurious.models.sklearn_adapter import PROBES, make_probe

    if isinstance(spec, str) and spec not in PROBES:
        raise ParameterError(
            f"The 'model' parameter must be one of {list(PROBES)}, a scikit-learn classifier "
            f"or a PartitionModel. Got {spec!r} instead."
        )
    try:
        make_probe(spec)
    except ParameterError:
        raise ParameterError(
            f"The 'model' parameter must be one of {list(PROBES)}, a scikit-learn classifier "
            f"or a PartitionModel. Got {type(spec).__name__} instead."
        ) from None
    return SklearnPartitionModel(spec, random_state=random_state)


def prepare_start(
    model: Any,
    X: Any,
    y: np.ndarray,
    n_train: int,
    t: int,
    n_classes: int,
    n_fits: int | None = None,
) -> Any:
    """The model's state shared by every round of a run, or ``None`` if it has none.

    A model family with a ``shared_start(X, y, t, n_classes)`` method (the batched
    logistic regression: pooled starting point and Hessian preconditioner) builds it
    once here, on the initial training set D (the first ``n_train`` rows of ``X``),
    instead of once per round. It depends on
    D, t and the model only, so every round, every executor chunk and a run resumed from
    a checkpoint get the same one, and results stay exact under chunking and resume.
    ``n_fits``, the classifiers it will serve (a planned count, never one that depends on
    how far a run got), lets the batched model choose its kind of start.

    Examples
    --------
    >>> prepare_start(object(), np.zeros((2, 2)), np.zeros(2, int), 2, 1, 2) is None
    True
    """
    build = getattr(model, "shared_start", None)
    if build is None or sp.issparse(X):
        return None
    return build(X[:n_train], y[:n_train], t, n_classes, n_fits=n_fits)


def p_histogram(p: np.ndarray) -> list[int]:
    p = p[np.isfinite(p)]
    return np.histogram(p, bins=HIST_BINS, range=(0.0, 1.0))[0].astype(int).tolist()


def mean_or_none(p: np.ndarray) -> float | None:
    p = p[np.isfinite(p)]
    return float(p.mean()) if len(p) else None
