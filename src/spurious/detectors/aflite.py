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
- ``model="logistic"`` on sparse features (tf-idf) fits scikit-learn's logistic
  regression per partition instead of the batched one, which needs dense input.
- ``max_rounds`` is an extra, user-side budget; a run stopped by it can be resumed
  with a larger budget from its checkpoint.

Randomness: round ``r`` draws its partitions, tie-breaks and Gumbel noise from
generators seeded by ``(random_state, r, stream)``, so a run resumed from a checkpoint
after round ``r`` gives exactly the result of an uninterrupted run.
"""

from __future__ import annotations

import hashlib
import logging
import math
from numbers import Integral, Real
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.utils._param_validation import RealNotInt
from tqdm.auto import tqdm

from spurious.data.dataset import Dataset
from spurious.detectors.aflite_checkpoint import (
    FilterState,
    SideState,
    clear_checkpoint,
    load_checkpoint,
    read_identity,
    save_checkpoint,
)
from spurious.detectors.base import Detector, DetectorOutput, register_detector
from spurious.exceptions import DetectorError, FeatureError, ParameterError
from spurious.execution import Executor, make_executor
from spurious.features import Featurizer, PrecomputedFeaturizer, check_features, make_featurizer
from spurious.models.partition import PartitionModel, SklearnPartitionModel
from spurious.utils.io import to_jsonable
from spurious.utils.validation import Interval, StrOptions
from spurious.views import get_view

logger = logging.getLogger(__name__)

__all__ = [
    "SELECTIONS",
    "AFLite",
    "features_fingerprint",
    "predictability",
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
_STREAM_PARTITIONS = 0
_STREAM_SELECT = 1
_STREAM_EXAMPLES = 2

_SIZE = [Interval(Integral, 1, None, closed="left"), Interval(RealNotInt, 0, 1, closed="neither")]


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
        raise DetectorError(f"Each partition needs 1 <= t < |S|; got t={t} with |S|={n}.")
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
        X = np.ascontiguousarray(X)
        h.update(f"dense{X.shape}{X.dtype}".encode())
        h.update(X.data)
    return h.hexdigest()


def _score_chunk(item: dict[str, Any], shared: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Fit one chunk of partitions; count held-out predictions and correct ones.

    Runs on an executor (possibly a Ray worker). The big matrix arrives once, as
    ``shared``; each task takes the active rows itself, so the model family trains and
    predicts on the current S (and R) only. Only integer counts come back, and summing
    counts over chunks is exact, so chunking cannot change results.
    """
    X, y, model = shared["X"], shared["y"], shared["model"]
    rows, train_idx, excluded = item["rows"], item["train_idx"], item["excluded"]
    if rows is not None:
        X, y = X[rows], y[rows]
    elif not y.flags.writeable:  # Ray hands out read-only views; torch wants writable labels
        y = y.copy()
    pred = np.asarray(model.fit_predict(X, y, train_idx, shared["n_classes"]))
    n = X.shape[0]
    if pred.shape != (len(train_idx), n):
        raise DetectorError(
            f"The model family returned predictions of shape {pred.shape}; expected "
            f"{(len(train_idx), n)} (partitions, rows)."
        )
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


def _make_model(spec: Any, random_state: int | None = 0, *, sparse: bool = False) -> PartitionModel:
    """The model family M from a name, a scikit-learn classifier or a PartitionModel.

    ``"logistic"`` is the batched logistic regression (``spurious.models.batched``) for
    dense features; for sparse features (tf-idf), or when the batched model is not
    available, scikit-learn's ``LogisticRegression`` fitted per partition.
    ``"sklearn-logistic"``, ``"linear-svm"``, ``"rbf-svm"``, ``"mlp"`` and any
    scikit-learn classifier are fitted once per partition.

    Examples
    --------
    >>> type(_make_model("rbf-svm")).__name__
    'SklearnPartitionModel'
    """
    if isinstance(spec, PartitionModel) and not isinstance(spec, str):
        return spec
    if spec == "logistic":
        if sparse:
            logger.info("model='logistic' on sparse features: sklearn-logistic per partition")
            return SklearnPartitionModel("sklearn-logistic", random_state=random_state)
        try:
            from spurious.models.batched import BatchedLogisticRegression
        except ImportError:
            logger.debug("spurious.models.batched unavailable; using sklearn-logistic per fit")
            return SklearnPartitionModel("sklearn-logistic", random_state=random_state)
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


def _hist(p: np.ndarray) -> list[int]:
    p = p[np.isfinite(p)]
    return np.histogram(p, bins=HIST_BINS, range=(0.0, 1.0))[0].astype(int).tolist()


def _mean(p: np.ndarray) -> float | None:
    p = p[np.isfinite(p)]
    return float(p.mean()) if len(p) else None


# ---------------------------------------------------------------------------------------
# The detector
# ---------------------------------------------------------------------------------------
@register_detector
class AFLite(Detector):
    """Adversarial filtering: remove the examples a weak model family predicts too easily.

    Parameters
    ----------
    n_partitions : int, default=64
        m: classifiers (random partitions) per round. Table 8 uses 64 (128 for the
        synthetic data).
    train_size : int or float, default=0.1
        t: training examples per classifier; a float is a fraction of the *initial*
        dataset size and stays fixed over rounds. Table 8: about 10% (50K of SNLI's
        550K, 40K of MNLI's 393K, 10K of QNLI's 105K).
    slice_size : int or float, default=0.02
        k: most examples removed per round; a float is a fraction of the initial size.
        Table 8: about 2% (10K for SNLI and MNLI, 2K for QNLI).
    tau : float, default=0.75
        Early-stopping threshold: only examples with p >= tau are removed, and
        filtering stops once fewer than k reach it (Table 8: 0.75 everywhere).
    target_size : int, float or None, default=None
        n: filtering stops when at most n examples remain (never fewer are kept).
        ``None`` lets tau alone decide (the paper's NLP settings); the floor is then t.
    selection : {"greedy_slice", "greedy_one", "gumbel_slice"}, default="greedy_slice"
        App. A.1: (B) greedy slicing (AFLite), (A) greedy one at a time (k = 1),
        (C) slice sampling by the Gumbel-top-k trick on log p (App. A.2).
    group_by : "auto", None or str, default="auto"
        Rows sharing a key (the ``group`` column; for NLI the premise) are trained on or
        held out together in every partition. See :meth:`Dataset.group_keys`.
    model : str, estimator or PartitionModel, default="logistic"
        The model family M: ``"logistic"`` (batched logistic regression),
        ``"sklearn-logistic"``, ``"linear-svm"``, ``"rbf-svm"``, ``"mlp"``, any
        scikit-learn classifier, or a :class:`~spurious.models.partition.PartitionModel`.
    features : str, Featurizer, ndarray or (ndarray, ndarray), default="minilm"
        Phi(X): ``"minilm"`` (offline sentence embeddings), ``"tfidf"``, ``"bow"``, a
        local model directory, a :class:`~spurious.features.Featurizer` (e.g.
        :class:`~spurious.features.PrecomputedFeaturizer`), a matrix with one row per
        training example, or ``(X_train, X_eval)`` in evaluation-set mode.
    view : str, default="full"
        Which part of the input the features see (e.g. ``"hypothesis_only"``).
    max_rounds : int or None, default=None
        Stop after this many rounds in total (a budget; resumable with a larger one).
    chunk_size : int or None, default=None
        Partitions per executor task; ``None``: m split evenly over the executor's
        workers. Results do not depend on it.
    executor : "local", "ray" or Executor, default="local"
        Where the partition fits run (see :mod:`spurious.execution`).
    checkpoint_dir : path or None, default=None
        Write the state after every round; a later run with the same parameters, data
        and features resumes from it.
    checkpoint_mismatch : {"error", "restart"}, default="error"
        What to do when ``checkpoint_dir`` holds a checkpoint of a different run.
    n_examples : int, default=10
        Removed and kept examples (with their text) stored for the report.
    random_state : int or None, default=0
        Seed of every random step (partitions, tie-breaks, Gumbel noise).

    Attributes
    ----------
    state_ : FilterState
        Full per-example history after :meth:`run` (both sides in evaluation-set mode).
    train_scores_ : pandas.DataFrame
        Per training example scores (the result's scores in single-dataset mode).

    Examples
    --------
    >>> import pandas as pd
    >>> from spurious.data import Dataset
    >>> from spurious.data.synthetic import make_concentric_circles
    >>> c = make_concentric_circles(n=300, random_state=0)
    >>> ds = Dataset.from_frame(pd.DataFrame({"text": [f"p{i}" for i in range(300)],
    ...                                       "label": c.y}), "text")
    >>> res = AFLite(features=c.X, n_partitions=8, train_size=60, slice_size=30,
    ...              model="linear-svm").run(ds)
    >>> res.details["sizes"][:3]
    [300, 270, 240]
    """

    name: ClassVar[str] = "aflite"
    description: ClassVar[str] = (
        "Adversarial filtering: iteratively remove the examples a weak model family "
        "predicts too easily (AFLite, paper 000 Alg. 1; evaluation-set mode, paper 004)."
    )
    requires: ClassVar[tuple[str, ...]] = ("labels",)
    metric_docs: ClassVar[dict[str, str]] = {
        "n_initial": "|D|: training examples before filtering.",
        "n_final": "|S| after filtering (training examples kept).",
        "n_removed": "Training examples removed.",
        "removed_fraction": "n_removed / n_initial, [0, 1].",
        "n_rounds": "Filtering rounds run.",
        "train_size": "t, training examples per classifier (resolved).",
        "slice_size": "k, most examples removed per round (resolved; 1 for greedy_one).",
        "target_size": "n, the size filtering stops at (resolved; t when not given).",
        "mean_p_round_<r>": "Mean predictability of S in round r, [0, 1].",
        "mean_p_final": "Mean predictability of the kept examples in the last round.",
        "n_eval": "Evaluation examples (evaluation-set mode).",
        "n_eval_filtered_first_round": "Evaluation examples removed in round 1 (paper 004 Fig. 1).",
        "n_eval_filtered_later_rounds": "Evaluation examples removed after round 1.",
        "n_eval_selected": "AF-selected evaluation examples (kept).",
        "eval_selected_fraction": "n_eval_selected / n_eval, [0, 1].",
        "mean_p_eval_round_<r>": "Mean predictability of the remaining evaluation examples.",
    }
    score_columns: ClassVar[dict[str, str]] = {
        "id": "Example id (evaluation examples in evaluation-set mode).",
        "label": "Gold label.",
        "aflite_score": "Predictability p in the last round the example was scored, [0, 1]; "
        "higher = easier for the model family. NaN if never held out.",
        "is_aflite_issue": "Removed by AFLite (too predictable).",
        "removed_round": "Round (1-based) the example was removed in; -1 = kept.",
        "stage": "filtered_first_round, filtered_later_round or af_selected (kept).",
        "times_held_out": "Predictions received over all rounds (|E(i)| summed).",
        "times_correct": "Of those, how many were the gold label.",
        "p_round_<r>": "Predictability in round r; NaN once removed (or not held out).",
    }
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "n_partitions": [Interval(Integral, 1, None, closed="left")],
        "train_size": list(_SIZE),
        "slice_size": list(_SIZE),
        "tau": [Interval(Real, 0, 1, closed="both")],
        "target_size": [*_SIZE, None],
        "selection": [StrOptions(set(SELECTIONS))],
        "group_by": [str, None],
        "model": [str, object],
        "features": [str, object],
        "view": [str],
        "max_rounds": [Interval(Integral, 1, None, closed="left"), None],
        "chunk_size": [Interval(Integral, 1, None, closed="left"), None],
        "executor": [str, Executor],
        "checkpoint_dir": [str, Path, None],
        "checkpoint_mismatch": [StrOptions({"error", "restart"})],
        "n_examples": [Interval(Integral, 0, None, closed="left")],
        "random_state": [Interval(Integral, 0, None, closed="left"), None],
    }

    def __init__(
        self,
        n_partitions: int = 64,
        train_size: int | float = 0.1,
        slice_size: int | float = 0.02,
        tau: float = 0.75,
        target_size: int | float | None = None,
        selection: str = "greedy_slice",
        group_by: str | None = "auto",
        model: Any = "logistic",
        features: Any = "minilm",
        view: str = "full",
        max_rounds: int | None = None,
        chunk_size: int | None = None,
        executor: str | Executor = "local",
        checkpoint_dir: str | Path | None = None,
        checkpoint_mismatch: str = "error",
        n_examples: int = 10,
        random_state: int | None = 0,
    ) -> None:
        self.n_partitions = n_partitions
        self.train_size = train_size
        self.slice_size = slice_size
        self.tau = tau
        self.target_size = target_size
        self.selection = selection
        self.group_by = group_by
        self.model = model
        self.features = features
        self.view = view
        self.max_rounds = max_rounds
        self.chunk_size = chunk_size
        self.executor = executor
        self.checkpoint_dir = checkpoint_dir
        self.checkpoint_mismatch = checkpoint_mismatch
        self.n_examples = n_examples
        self.random_state = random_state

    # -- validation -------------------------------------------------------------------
    def validate_params(self) -> None:
        """Check constraints, and that ``model``, ``features`` and ``executor`` resolve."""
        super().validate_params()
        _make_model(self.model, self.random_state)
        if not self._array_features():
            make_featurizer(self.features)
        if isinstance(self.executor, str):
            make_executor(self.executor)

    def _array_features(self) -> bool:
        f = self.features
        return isinstance(f, np.ndarray) or sp.issparse(f) or isinstance(f, tuple)

    # -- sizes --------------------------------------------------------------------------
    def _sizes(self, n0: int, n_classes: int) -> tuple[int, int, int]:
        """(t, k, n) resolved against the initial size ``n0``; clear errors when unusable."""
        t = resolve_size(self.train_size, n0, "train_size")
        k = 1 if self.selection == "greedy_one" else resolve_size(self.slice_size, n0, "slice")
        n = resolve_size(self.target_size, n0, "target_size")
        if t < max(n_classes, 2):
            raise DetectorError(
                f"train_size resolves to t={t} training examples per classifier for a dataset "
                f"of {n0}; at least {max(n_classes, 2)} (one per class) are needed. Pass a "
                "larger train_size (an int is an absolute count)."
            )
        if n0 - t < 1:
            raise DetectorError(
                f"train_size t={t} leaves no held-out examples in a dataset of {n0} "
                f"(|S| - t = {n0 - t}); AFLite needs t < |D|."
            )
        if n is None:
            n = t
        elif n <= t:
            raise DetectorError(
                f"target_size n={n} must be larger than train_size t={t} (Algorithm 1 needs "
                "t < n: every classifier must hold out at least one example)."
            )
        return t, k, n

    # -- features -----------------------------------------------------------------------
    def _features(
        self, train: Dataset, eval_dataset: Dataset | None, progress: bool
    ) -> tuple[Any, Any | None, dict[str, Any]]:
        view = get_view(train.task, self.view)
        f = self.features
        if isinstance(f, tuple):
            if eval_dataset is None or len(f) != 2:
                raise ParameterError(
                    "The 'features' parameter as a tuple must be (X_train, X_eval) and needs an "
                    f"evaluation split. Got a tuple of {len(f)} with "
                    f"{'an' if eval_dataset is not None else 'no'} evaluation split."
                )
            X_tr = check_features(f[0], len(train), "features[0] (training split)")
            X_ev = check_features(f[1], len(eval_dataset), "features[1] (evaluation split)")
            return X_tr, X_ev, {"featurizer": "arrays"}
        if isinstance(f, np.ndarray) or sp.issparse(f):
            if eval_dataset is not None:
                raise ParameterError(
                    "With an evaluation split, pass features=(X_train, X_eval) or a "
                    "PrecomputedFeaturizer with ids; a single matrix covers one split."
                )
            return check_features(f, len(train), "features"), None, {"featurizer": "array"}
        featurizer: Featurizer = make_featurizer(f)
        if isinstance(featurizer, PrecomputedFeaturizer) or featurizer.stateless:
            feat = featurizer  # no fit: avoid deep-copying user arrays with clone()
        else:
            feat = clone(featurizer)
        X_tr = feat.fit_transform(train, view, progress=progress)
        X_ev = (
            None if eval_dataset is None else feat.transform(eval_dataset, view, progress=progress)
        )
        return X_tr, X_ev, feat.config()

    # -- the run --------------------------------------------------------------------------
    def _run(
        self, dataset: Dataset, eval_dataset: Dataset | None, *, progress: bool
    ) -> DetectorOutput:
        n0 = len(dataset)
        t, k, n_target = self._sizes(n0, dataset.n_classes)
        X_tr, X_ev, feat_config = self._features(dataset, eval_dataset, progress)
        model = _make_model(self.model, self.random_state, sparse=sp.issparse(X_tr))
        if X_ev is not None and X_ev.shape[1] != X_tr.shape[1]:
            raise FeatureError(
                f"Training features have {X_tr.shape[1]} columns but evaluation features "
                f"{X_ev.shape[1]}; both splits need the same representation."
            )
        fps = {"features_train": features_fingerprint(X_tr)}
        if X_ev is not None:
            fps["features_eval"] = features_fingerprint(X_ev)
        groups = dataset.group_keys(self.group_by)
        codes = (
            pd.factorize(pd.Series(groups, dtype=object))[0].astype(np.int64)
            if groups is not None
            else np.arange(n0, dtype=np.int64)
        )

        identity = self._identity(dataset, eval_dataset, model, feat_config, fps, (t, k, n_target))
        state = self._initial_state(
            identity, n0, None if eval_dataset is None else len(eval_dataset)
        )

        if X_ev is not None:
            X = (
                sp.vstack([X_tr, X_ev], format="csr")
                if sp.issparse(X_tr)
                else np.vstack([X_tr, X_ev])
            )
            y = np.concatenate([dataset.labels, eval_dataset.labels])
        else:
            # A writable copy: some model families (torch) refuse read-only label arrays.
            X, y = X_tr, np.array(dataset.labels, dtype=np.int64)
        executor = make_executor(self.executor)
        owns_executor = isinstance(self.executor, str)
        try:
            self._filter(
                state, X, y, n0, codes, t, k, n_target, model, executor, dataset, identity, progress
            )
        finally:
            if owns_executor:
                executor.close()
        self.state_ = state
        return self._output(state, dataset, eval_dataset, (t, k, n_target), feat_config, model, fps)

    def _identity(
        self,
        dataset: Dataset,
        eval_dataset: Dataset | None,
        model: PartitionModel,
        feat_config: dict[str, Any],
        fps: dict[str, str],
        sizes: tuple[int, int, int],
    ) -> dict[str, Any]:
        """What a checkpoint must match to be resumed (not the run budget or executor)."""
        skip = {"checkpoint_dir", "checkpoint_mismatch", "executor", "chunk_size", "max_rounds",
                "features", "model", "n_examples"}  # fmt: skip
        params = {k: v for k, v in self.params_for_json().items() if k not in skip}
        return {
            "params": params,
            "sizes": list(sizes),
            "model": _jsonable_config(model),
            "featurizer": feat_config,
            "dataset": dataset.fingerprint,
            "eval_dataset": None if eval_dataset is None else eval_dataset.fingerprint,
            **fps,
        }

    def _initial_state(
        self, identity: dict[str, Any], n_train: int, n_eval: int | None
    ) -> FilterState:
        fresh = FilterState(
            entropy=(
                int(self.random_state)
                if self.random_state is not None
                else int(np.random.SeedSequence().entropy)
            ),
            train=SideState.empty(n_train),
            eval=None if n_eval is None else SideState.empty(n_eval),
        )
        if self.checkpoint_dir is None:
            return fresh
        directory = Path(self.checkpoint_dir)
        stored = read_identity(directory)
        if stored is None:
            return fresh
        current = to_jsonable(identity)
        if stored != current:
            diff = sorted(
                key for key in set(stored) | set(current) if stored.get(key) != current.get(key)
            )
            if self.checkpoint_mismatch == "restart":
                logger.warning(
                    "AFLite checkpoint in %s is from a different run (%s differ); starting over",
                    directory,
                    diff,
                )
                clear_checkpoint(directory)
                return fresh
            raise DetectorError(
                f"The AFLite checkpoint in {str(directory)!r} belongs to a different run: "
                f"{', '.join(diff)} differ ({_describe_diff(stored, current, diff)}). Use another "
                "checkpoint_dir, or pass checkpoint_mismatch='restart' to discard it."
            )
        state = load_checkpoint(directory)
        logger.info("resuming AFLite from %s after round %d", directory, state.rounds_done)
        return state

    def _filter(
        self,
        state: FilterState,
        X: Any,
        y: np.ndarray,
        n_train: int,
        codes: np.ndarray,
        t: int,
        k: int,
        n_target: int,
        model: PartitionModel,
        executor: Executor,
        dataset: Dataset,
        identity: dict[str, Any],
        progress: bool,
    ) -> None:
        """Run rounds on ``state`` in place until a stop rule (or the round budget) hits."""
        if state.stop_reason is not None:
            return
        shared = executor.put({"X": X, "y": y, "model": model, "n_classes": dataset.n_classes})
        m = self.n_partitions
        chunk = chunk_partitions(m, self.chunk_size, executor.n_workers, model)
        bound = (
            state.rounds_done
            + max(0, (int((state.train.removed_round < 0).sum()) - n_target)) // max(k, 1)
            + 1
        )
        total = min(bound, self.max_rounds) if self.max_rounds else bound
        bar = tqdm(
            total=total, initial=state.rounds_done, desc="aflite: rounds", disable=not progress
        )
        try:
            while True:
                S = state.train.remaining
                R = state.eval.remaining + n_train if state.eval is not None else None
                if len(S) <= n_target:
                    state.stop_reason = "target_size"
                    break
                if R is not None and len(R) == 0:
                    state.stop_reason = "eval_exhausted"
                    break
                if self.max_rounds is not None and state.rounds_done >= self.max_rounds:
                    logger.info(
                        "aflite: stopping at the round budget max_rounds=%d", self.max_rounds
                    )
                    break
                r = state.rounds_done + 1
                self._round(state, r, S, R, codes, (t, k, n_target), executor, shared, chunk)
                if self.checkpoint_dir is not None:
                    save_checkpoint(self.checkpoint_dir, identity, state)
                bar.update(1)
                bar.set_postfix(size=len(state.train.remaining))
                if state.stop_reason is not None:
                    break
        finally:
            bar.close()
        if self.checkpoint_dir is not None and state.stop_reason is not None:
            save_checkpoint(self.checkpoint_dir, identity, state)

    def _round(
        self,
        state: FilterState,
        r: int,
        S: np.ndarray,
        R: np.ndarray | None,
        codes: np.ndarray,
        sizes: tuple[int, int, int],
        executor: Executor,
        shared: Any,
        chunk: int,
    ) -> None:
        """One filtering phase of Algorithm 1 (plus the evaluation lines of paper 004)."""
        t, k, n_target = sizes
        n_train = len(state.train.removed_round)
        n_total = n_train + (0 if state.eval is None else len(state.eval.removed_round))
        # Re-code the groups of S densely so sample_partitions sees codes in [0, G).
        codes_S = pd.factorize(codes[S])[0]
        pos_train, pos_excl = sample_partitions(
            codes_S, t, self.n_partitions, round_rng(state.entropy, r, _STREAM_PARTITIONS)
        )
        # Active rows: S, then R. Partitions index S's positions, which come first.
        rows = S if R is None else np.concatenate([S, R])
        correct, held = score_partitions(
            executor,
            shared,
            None if len(rows) == n_total else rows,  # nothing removed yet: no copy
            pos_train,
            pos_excl,
            chunk,
        )
        p_all = predictability(correct, held)
        p_S = p_all[: len(S)]

        chosen = select_slice(
            p_S, k, self.tau, self.selection, round_rng(state.entropy, r, _STREAM_SELECT)
        )
        with np.errstate(invalid="ignore"):
            n_above = int((p_S >= self.tau).sum())
        chosen = chosen[: max(0, len(S) - n_target)]  # never below n
        self._record(state.train, S, correct[: len(S)], held[: len(S)], p_S, S[chosen], r, n_train)
        entry: dict[str, Any] = {
            "round": r,
            "n_before": len(S),
            "n_scored": int(np.isfinite(p_S).sum()),
            "n_above_tau": n_above,
            "n_removed": len(chosen),
            "n_after": int(len(S) - len(chosen)),
            "mean_p": _mean(p_S),
            "p_hist": _hist(p_S),
            "n_excluded_by_groups": int(sum(len(e) for e in pos_excl)),
        }
        if R is not None:
            p_R = p_all[len(S) :]
            with np.errstate(invalid="ignore"):
                drop = R[p_R >= self.tau] - n_train
            self._record(
                state.eval,
                R - n_train,
                correct[len(S) :],
                held[len(S) :],
                p_R,
                drop,
                r,
                len(state.eval.removed_round),
            )
            entry.update(
                n_eval_before=len(R),
                n_eval_removed=len(drop),
                n_eval_after=int(len(R) - len(drop)),
                mean_p_eval=_mean(p_R),
                p_eval_hist=_hist(p_R),
            )
        state.history.append(entry)
        state.rounds_done = r
        n_left = len(S) - len(chosen)
        if n_left <= n_target:
            state.stop_reason = "target_size"
        elif len(chosen) < k:
            state.stop_reason = "tau"
        logger.info(
            "aflite round %d: |S| %d -> %d (%d with p >= %.2f)%s",
            r,
            len(S),
            n_left,
            n_above,
            self.tau,
            "" if R is None else f"; eval {len(R)} -> {entry['n_eval_after']}",
        )

    @staticmethod
    def _record(
        side: SideState,
        rows: np.ndarray,
        correct: np.ndarray,
        held: np.ndarray,
        p: np.ndarray,
        removed: np.ndarray,
        r: int,
        n: int,
    ) -> None:
        side.times_held_out[rows] += held
        side.times_correct[rows] += correct
        scored = np.isfinite(p)
        side.last_p[rows[scored]] = p[scored]
        p_round = np.full(n, np.nan, dtype=np.float32)
        p_round[rows] = p
        side.p_rounds.append(p_round)
        side.removed_round[removed] = r

    # -- output -----------------------------------------------------------------------
    def _scores(self, side: SideState, ds: Dataset) -> pd.DataFrame:
        names = np.asarray(ds.label_names, dtype=object)
        rr = side.removed_round
        stage = np.where(rr < 0, STAGES[2], np.where(rr == 1, STAGES[0], STAGES[1]))
        cols: dict[str, Any] = {
            "id": ds.ids,
            "label": names[ds.labels],
            "aflite_score": side.last_p,
            "is_aflite_issue": rr >= 0,
            "removed_round": rr.astype(np.int64),
            "stage": stage.astype(object),
            "times_held_out": side.times_held_out,
            "times_correct": side.times_correct,
        }
        for r, p in enumerate(side.p_rounds, start=1):
            cols[f"p_round_{r}"] = p.astype(np.float64)
        return pd.DataFrame(cols)

    def _examples(self, scores: pd.DataFrame, ds: Dataset, entropy: int) -> dict[str, list]:
        """A few removed (earliest, most predictable first) and kept (random) examples."""
        fields = list(ds.task.text_fields)
        removed = scores.index[scores["is_aflite_issue"]].to_numpy()
        order = np.lexsort(
            (
                -scores["aflite_score"].to_numpy()[removed],
                scores["removed_round"].to_numpy()[removed],
            )
        )
        removed = removed[order[: self.n_examples]]
        kept = scores.index[~scores["is_aflite_issue"]].to_numpy()
        rng = round_rng(entropy, 0, _STREAM_EXAMPLES)
        kept = np.sort(kept[rng.permutation(len(kept))[: self.n_examples]])

        def rows(idx: np.ndarray) -> list[dict[str, Any]]:
            out = []
            for i in idx:
                ex = {"id": str(scores["id"].iloc[i]), "label": str(scores["label"].iloc[i])}
                ex.update({f: ds.frame[f].iloc[i] for f in fields})
                ex["aflite_score"] = float(scores["aflite_score"].iloc[i])
                ex["removed_round"] = int(scores["removed_round"].iloc[i])
                out.append(ex)
            return out

        return {"removed_examples": rows(removed), "kept_examples": rows(kept)}

    def _output(
        self,
        state: FilterState,
        dataset: Dataset,
        eval_dataset: Dataset | None,
        sizes: tuple[int, int, int],
        feat_config: dict[str, Any],
        model: PartitionModel,
        fps: dict[str, str],
    ) -> DetectorOutput:
        t, k, n_target = sizes
        train_scores = self._scores(state.train, dataset)
        self.train_scores_ = train_scores
        n0 = len(dataset)
        n_final = int((state.train.removed_round < 0).sum())
        metrics: dict[str, float] = {
            "n_initial": n0,
            "n_final": n_final,
            "n_removed": n0 - n_final,
            "removed_fraction": (n0 - n_final) / n0,
            "n_rounds": state.rounds_done,
            "train_size": t,
            "slice_size": k,
            "target_size": n_target,
        }
        for h in state.history:
            metrics[f"mean_p_round_{h['round']}"] = _nan(h["mean_p"])
        if state.train.p_rounds:
            last = state.train.p_rounds[-1][state.train.removed_round < 0]
            metrics["mean_p_final"] = _nan(_mean(last.astype(np.float64)))
        stop = state.stop_reason or "max_rounds"
        details: dict[str, Any] = {
            "mode": "train" if eval_dataset is None else "eval",
            "stop_reason": stop,
            "stop_reason_text": _STOP_TEXT[stop].format(k=k, tau=self.tau, n=n_target),
            "n_partitions": self.n_partitions,
            "train_size": t,
            "slice_size": k,
            "target_size": n_target,
            "tau": self.tau,
            "selection": self.selection,
            "entropy": str(state.entropy),
            "rounds": state.history,
            "hist_edges": np.linspace(0.0, 1.0, HIST_BINS + 1).round(4).tolist(),
            "sizes": [n0] + [h["n_after"] for h in state.history],
            "featurizer": feat_config,
            "model": _jsonable_config(model),
            "label_names": list(dataset.label_names),
            "text_fields": list(dataset.task.text_fields),
            "group_by": self.group_by,
        }
        if eval_dataset is None:
            scores = train_scores
            details.update(self._examples(scores, dataset, state.entropy))
            details["baselines"] = _baselines(n_final, n0, "training set")
            summary = (
                f"kept {n_final:,} of {n0:,} examples (removed {(n0 - n_final) / n0:.1%}) "
                f"in {state.rounds_done} round(s); stop: {details['stop_reason_text']}"
            )
        else:
            scores = self._scores(state.eval, eval_dataset)
            rr = state.eval.removed_round
            n_eval = len(eval_dataset)
            first, later, kept = int((rr == 1).sum()), int((rr > 1).sum()), int((rr < 0).sum())
            metrics.update(
                n_eval=n_eval,
                n_eval_filtered_first_round=first,
                n_eval_filtered_later_rounds=later,
                n_eval_selected=kept,
                eval_selected_fraction=kept / n_eval,
            )
            for h in state.history:
                metrics[f"mean_p_eval_round_{h['round']}"] = _nan(h.get("mean_p_eval"))
            details["stages"] = {STAGES[0]: first, STAGES[1]: later, STAGES[2]: kept}
            details["eval_sizes"] = [n_eval] + [h["n_eval_after"] for h in state.history]
            details.update(self._examples(scores, eval_dataset, state.entropy))
            details["baselines"] = _baselines(kept, n_eval, "evaluation set")
            summary = (
                f"AF-selected {kept:,} of {n_eval:,} evaluation examples ({kept / n_eval:.1%}); "
                f"{first:,} filtered in round 1, {later:,} in later rounds; "
                f"{state.rounds_done} round(s) on {n0:,} training examples "
                f"(kept {n_final:,}); stop: {details['stop_reason_text']}"
            )
        return DetectorOutput(
            scores=scores, metrics=metrics, summary=summary, details=details, fingerprints=fps
        )


_STOP_TEXT = {
    "tau": "fewer than k={k} examples reached p >= {tau}",
    "target_size": "at most n={n} examples remain",
    "eval_exhausted": "every evaluation example was filtered",
    "max_rounds": "round budget (max_rounds) reached",
}


def _nan(v: float | None) -> float:
    return math.nan if v is None else float(v)


def _jsonable_config(model: Any) -> dict[str, Any]:
    cfg = model.config() if hasattr(model, "config") else {"model": type(model).__name__}
    return to_jsonable(dict(cfg))


def _baselines(size: int, n: int, what: str) -> dict[str, Any]:
    """Size-matched baselines of paper 000 Sec. 4.2 (computed by the experiment scripts)."""
    return {
        "random_subset": {
            "size": size,
            "of": n,
            "how": f"a uniform random subset of the {what} of the same size "
            "(spurious.detectors.aflite_baselines.random_subset_baseline)",
        },
        "one_shot_filter": {
            "size": size,
            "of": n,
            "how": "one classifier, one round: the most predictable examples removed down to "
            "the same size (spurious.detectors.aflite_baselines.one_shot_filter_baseline)",
        },
    }


def _describe_diff(stored: dict[str, Any], current: dict[str, Any], keys: list[str]) -> str:
    parts = []
    for key in keys[:3]:
        a, b = stored.get(key), current.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            sub = sorted(x for x in set(a) | set(b) if a.get(x) != b.get(x))
            parts.append(
                f"{key}: " + ", ".join(f"{x} {a.get(x)!r} -> {b.get(x)!r}" for x in sub[:3])
            )
        else:
            parts.append(f"{key}: {a!r} -> {b!r}")
    return "; ".join(parts)
