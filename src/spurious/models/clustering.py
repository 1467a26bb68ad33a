"""Clustering for minority examples (paper 002 Sec. 3 and App. C): Ward, k-means, one
DeepCluster iteration, nearest-neighbour assignment, and a Ward that scales.

Everything here is a thin layer over scikit-learn, SciPy and fastcluster:

- :func:`ward_clustering`: Ward's method (Ward 1963; fastcluster's, as paper 002, App.
  C.2). Below ``exact_max_samples`` points it is *exact*: the condensed Euclidean
  distance matrix is filled block by block with float64 GEMMs over its upper triangle
  (:func:`spurious.utils.matrix.condensed_euclidean`) and handed to fastcluster's
  ``linkage`` (``method="ward"``, the nearest-neighbour chain algorithm; SciPy's
  :func:`~scipy.cluster.hierarchy.linkage` is the same algorithm, slower and on a copy).
  The same tree as :class:`sklearn.cluster.AgglomerativeClustering` (which runs
  SciPy's ``pdist`` first), in O(n^2) memory.
  Above it, the *approximate* route: :class:`~sklearn.cluster.MiniBatchKMeans`
  pre-clusters the points into ``n_preclusters`` centroids (no n x n matrix), and Ward
  merges the centroids **weighted by their counts**. Ward (fastcluster's as SciPy's)
  starts every point at size 1, so a count is given to it the only way its algorithm
  accepts: centroid ``i`` enters ``w_i`` times (``w_i`` = its count scaled to a replica
  budget, at least 1). Copies of one centroid are at distance 0, so Ward merges them
  first (cost 0) into one cluster of size ``w_i`` at the centroid; from then on the tree
  is Ward's on centroids with sizes ``w_i``, the Lance-Williams update with those sizes.
  Every point then takes its centroid's cluster.
- :func:`kmeans_clustering`: k-means (Lloyd, :class:`~sklearn.cluster.KMeans`) below the
  same threshold, :class:`~sklearn.cluster.MiniBatchKMeans` above.
- :class:`MLPEmbedding`: one DeepCluster iteration (Caron et al. 2018; paper 002
  App. C.1) on frozen features: a fresh one-hidden-layer MLP (the fast paths' torch
  MLP and loop, :mod:`spurious.models.torch_loop`) is trained for one epoch to predict
  the pseudo-labels; its hidden layer (the layer before the output, as paper 002 takes
  the layer before last) is the new representation.
- :func:`nearest_neighbor_assign`: each query point takes the cluster of its nearest
  training point (Euclidean, :class:`~sklearn.neighbors.NearestNeighbors`, exact,
  memory bounded by scikit-learn's ``working_memory``).

Method notes, defaults and the measured agreement of the approximate route with exact
Ward: ``docs/methods/minority.md``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import sparse

from spurious.exceptions import ParameterError
from spurious.models.runtime.hardware import check_device, resolve_device
from spurious.models.runtime.threads import import_torch
from spurious.models.torch_loop import RowFeeder, seeded_mlp, train_loop, zscore
from spurious.utils.matrix import all_finite, condensed_euclidean

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_EXACT_MAX_SAMPLES",
    "DEFAULT_N_PRECLUSTERS",
    "ROUTES",
    "Clustering",
    "MLPEmbedding",
    "auto_n_pseudo_labels",
    "kmeans_clustering",
    "nearest_neighbor_assign",
    "ward_clustering",
]

#: Ward routes: ``"auto"`` picks ``"exact"`` up to ``exact_max_samples`` points.
ROUTES = ("auto", "exact", "approximate")
#: Largest n clustered exactly by default: the condensed distance matrix of 20,000 points
#: is 1.6 GB (SciPy's Ward keeps a second copy), 13 s at 10k x 1536 on 2 cores.
DEFAULT_EXACT_MAX_SAMPLES = 20_000
#: Pre-clusters of the approximate route.
DEFAULT_N_PRECLUSTERS = 2_000
#: Paper 002's tuned m = 1500 pseudo-labels came from SST-2's 67,349 training examples:
#: about 45 examples per pseudo-label. :func:`auto_n_pseudo_labels` keeps that ratio.
PAPER_N_PSEUDO_LABELS = 1500
EXAMPLES_PER_PSEUDO_LABEL = 45
#: Rows per block when the MLP scores and embeds (bounds the output matrices).
_BLOCK = 16_384
#: Densify sparse features for Ward only up to this many matrix entries (1 GiB float32).
_MAX_DENSE_ENTRIES = 2**28


@dataclass
class Clustering:
    """Cluster ids of the clustered points and how they were found.

    Attributes
    ----------
    labels : numpy.ndarray of int, shape (n,)
        Cluster ids ``0 .. n_clusters - 1``, numbered by size (largest first; ties by
        the first row in the cluster).
    n_clusters : int
    route : str
        ``"exact"``, ``"approximate"`` (Ward) or ``"lloyd"``, ``"minibatch"`` (k-means).
    info : dict
        Plain data: timings in seconds, pre-cluster and replica counts.
    """

    labels: np.ndarray
    n_clusters: int
    route: str
    info: dict[str, Any] = field(default_factory=dict)


def auto_n_pseudo_labels(n: int, n_clusters: int) -> int:
    """Pseudo-labels m for ``n`` training examples: paper 002's m = 1500 scaled down.

    ``min(1500, max(2 * n_clusters, n // 45))``: paper 002 tuned m = 1500 on SST-2
    (67,349 training examples, ~45 per pseudo-label, App. C.3); smaller data keeps ~45
    examples per pseudo-label, and m stays above the final k (footnote 18: m >> k
    worked better), and at most ``n``.

    Examples
    --------
    >>> auto_n_pseudo_labels(67_349, 10), auto_n_pseudo_labels(9_824, 10)
    (1496, 218)
    >>> auto_n_pseudo_labels(400_000, 10), auto_n_pseudo_labels(210, 10)
    (1500, 20)
    """
    m = min(PAPER_N_PSEUDO_LABELS, max(2 * n_clusters, n // EXAMPLES_PER_PSEUDO_LABEL))
    return int(max(1, min(m, n)))


# =======================================================================================
# Checks
# =======================================================================================
def _check_matrix(X: Any, what: str, *, allow_sparse: bool = True) -> Any:
    if sparse.issparse(X):
        if not allow_sparse:
            X = _densify(X, what)
        else:
            return sparse.csr_matrix(X, dtype=np.float32)
    arr = np.asarray(X, dtype=np.float32)
    if arr.ndim != 2:
        raise ParameterError(f"The {what!r} argument must be a 2-D matrix; got shape {arr.shape}.")
    if not all_finite(arr):
        raise ParameterError(f"The {what!r} argument holds NaN or infinite values.")
    return arr


def _densify(X: Any, what: str) -> np.ndarray:
    n, d = X.shape
    if n * d > _MAX_DENSE_ENTRIES:
        raise ParameterError(
            f"The {what!r} argument is a sparse {n} x {d} matrix; Ward needs it dense, which "
            f"would take {n * d * 4 / 2**30:.1f} GiB. Use dense features (e.g. 'minilm') or "
            "clustering='deepcluster' (whose embedding is dense)."
        )
    return np.asarray(X.toarray(), dtype=np.float32)


def _check_k(n_clusters: Any, n: int, what: str = "n_clusters") -> int:
    if isinstance(n_clusters, bool) or not isinstance(n_clusters, int | np.integer):
        raise ParameterError(f"The {what!r} argument must be an int >= 1; got {n_clusters!r}.")
    if not 1 <= n_clusters <= n:
        raise ParameterError(
            f"The {what!r} argument must be in [1, n_samples={n}]; got {n_clusters}."
        )
    return int(n_clusters)


def _canonical(labels: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Renumber cluster ids by size, largest first; ties by the cluster's first row."""
    uniq, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    size = np.bincount(inverse, weights=weights, minlength=len(uniq))
    order = np.lexsort((first, -size))  # primary: size desc, then first row
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[order] = np.arange(len(uniq))
    return rank[inverse]


# =======================================================================================
# Ward
# =======================================================================================
def _condensed(X: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """Condensed Euclidean distances (SciPy's ``pdist`` layout) of ``X[rows]``.

    ``rows`` (default: every row) may repeat rows: the distances of the distinct rows
    are computed once and gathered.
    """
    from scipy.spatial.distance import squareform

    if rows is None:
        return condensed_euclidean(X)
    D = squareform(condensed_euclidean(X))  # distinct rows only: p x p, zero diagonal
    n = len(rows)
    out = np.empty(n * (n - 1) // 2, dtype=np.float64)
    for g in range(n - 1):
        a = g * n - g * (g + 1) // 2
        out[a : a + n - g - 1] = D[rows[g], rows[g + 1 :]]
    return out


def _cut(Z: np.ndarray, k: int) -> np.ndarray:
    """Flat clusters of a linkage ``Z``: undo its last ``k - 1`` merges."""
    from scipy.cluster.hierarchy import cut_tree, fcluster

    labels = fcluster(Z, t=k, criterion="maxclust")
    if len(np.unique(labels)) != k:  # equal merge heights: fcluster cannot split a tie
        labels = cut_tree(Z, n_clusters=k).ravel()
    return labels


def _ward_exact(X: np.ndarray, k: int, rows: np.ndarray | None = None) -> np.ndarray:
    # fastcluster is what paper 002 ran (App. C.2, "with the default settings"): the same
    # nearest-neighbour chain as SciPy's linkage, 2.2-2.6x faster on one thread, and with
    # preserve_input=False it works in the distance matrix itself instead of a copy
    # (bench/bench_ward_exact.py).
    import fastcluster

    n = X.shape[0] if rows is None else len(rows)
    if k == n:
        return np.arange(n)
    if k == 1:
        return np.zeros(n, dtype=np.int64)
    Z = fastcluster.linkage(_condensed(X, rows), method="ward", preserve_input=False)
    return _cut(Z, k)


def ward_clustering(
    X: Any,
    n_clusters: int,
    *,
    route: str = "auto",
    exact_max_samples: int = DEFAULT_EXACT_MAX_SAMPLES,
    n_preclusters: int = DEFAULT_N_PRECLUSTERS,
    weighting: str = "counts",
    max_replicas: int | None = None,
    random_state: int | None = 0,
) -> Clustering:
    """Ward's hierarchical clustering cut into ``n_clusters``, exact or pre-clustered.

    Parameters
    ----------
    X : array-like, shape (n, d)
        Points (sparse input is densified; refused above 2^28 entries).
    n_clusters : int
    route : {"auto", "exact", "approximate"}, default="auto"
        ``"exact"``: Ward on all points (O(n^2) memory: 0.4 GB at 10k, 1.6 GB at 20k,
        twice that at the peak). ``"approximate"``: MiniBatchKMeans into
        ``n_preclusters`` centroids, Ward on the centroids. ``"auto"``: exact up to
        ``exact_max_samples`` points.
    exact_max_samples : int, default=20000
    n_preclusters : int, default=2000
        Centroids of the approximate route (raised to ``2 * n_clusters`` if smaller).
    weighting : {"counts", "none"}, default="counts"
        Approximate route: Ward on centroids weighted by how many points each holds
        (``"counts"``, see the module notes), or each centroid as one point (``"none"``,
        what :class:`sklearn.cluster.Birch` does with its subclusters).
    max_replicas : int, optional
        Approximate route with counts: the weights are the counts scaled so they sum to
        about this many (each at least 1), since SciPy's Ward takes a weight as copies.
        Default: ``exact_max_samples // 2``, so the weighted Ward costs at most a
        quarter of the largest exact one. With ``n <= max_replicas`` the weights are the
        counts themselves; above, counts are resolved to ``n / max_replicas`` points.
    random_state : int or None, default=0
        Seeds MiniBatchKMeans (the exact route is deterministic).

    Returns
    -------
    Clustering

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(c, 0.1, size=(50, 2)) for c in (0, 5, 10)])
    >>> ward_clustering(X, 3).labels.reshape(3, 50)[:, 0].tolist()
    [0, 1, 2]
    >>> approx = ward_clustering(X, 3, route="approximate", n_preclusters=20)
    >>> approx.route, bool((approx.labels == ward_clustering(X, 3).labels).all())
    ('approximate', True)
    """
    if route not in ROUTES:
        raise ParameterError(f"The 'route' argument must be one of {list(ROUTES)}; got {route!r}.")
    if weighting not in ("counts", "none"):
        raise ParameterError(
            f"The 'weighting' argument must be 'counts' or 'none'; got {weighting!r}."
        )
    X = _check_matrix(X, "X", allow_sparse=False)
    n = X.shape[0]
    k = _check_k(n_clusters, n)
    for name, value in (("exact_max_samples", exact_max_samples), ("n_preclusters", n_preclusters)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise ParameterError(f"The {name!r} argument must be an int >= 1; got {value!r}.")
    start = time.perf_counter()
    if route == "exact" or (route == "auto" and n <= exact_max_samples):
        labels = _canonical(_ward_exact(X, k))
        return Clustering(labels, k, "exact", {"ward_s": round(time.perf_counter() - start, 4)})

    from sklearn.cluster import MiniBatchKMeans

    p = max(int(n_preclusters), 2 * k)
    if p >= n:  # nothing to gain: every point is its own pre-cluster
        labels = _canonical(_ward_exact(X, k))
        return Clustering(labels, k, "exact", {"ward_s": round(time.perf_counter() - start, 4)})
    km = MiniBatchKMeans(
        n_clusters=p, batch_size=max(4096, 2 * p), n_init=1, random_state=random_state
    )
    pre = km.fit_predict(X)
    centers = km.cluster_centers_.astype(np.float32)
    counts = np.bincount(pre, minlength=p)
    used = np.flatnonzero(counts)  # an empty centroid holds no point: leave it out
    centers, counts = centers[used], counts[used]
    pre = np.searchsorted(used, pre)
    k_pre = time.perf_counter() - start
    info: dict[str, Any] = {"n_preclusters": len(used), "kmeans_s": round(k_pre, 4)}
    if len(used) <= k:
        return Clustering(_canonical(pre), len(used), "approximate", info)
    if weighting == "counts":
        budget = int(max_replicas) if max_replicas is not None else max(exact_max_samples // 2, 1)
        if n <= budget:  # the counts themselves fit: exact weights
            weights = counts.astype(np.int64)
        else:
            weights = np.maximum(1, np.rint(counts * budget / n)).astype(np.int64)
        rows = np.repeat(np.arange(len(used)), weights)
        rep_labels = _ward_exact(centers, k, rows)
        first = np.concatenate([[0], np.cumsum(weights)[:-1]])
        center_labels = rep_labels[first]
        # Copies of one centroid merge first (distance 0): all in one cluster.
        if not (
            np.minimum.reduceat(rep_labels, first) == np.maximum.reduceat(rep_labels, first)
        ).all():
            raise RuntimeError("weighted Ward split copies of one centroid")  # pragma: no cover
        info["n_replicas"] = len(rows)
    else:
        center_labels = _ward_exact(centers, k)
    info["ward_s"] = round(time.perf_counter() - start - k_pre, 4)
    labels = _canonical(center_labels[pre])
    return Clustering(labels, k, "approximate", info)


# =======================================================================================
# k-means
# =======================================================================================
def kmeans_clustering(
    X: Any,
    n_clusters: int,
    *,
    exact_max_samples: int = DEFAULT_EXACT_MAX_SAMPLES,
    random_state: int | None = 0,
) -> Clustering:
    """k-means into ``n_clusters``: Lloyd up to ``exact_max_samples`` points, mini-batch above.

    Parameters
    ----------
    X : array-like or sparse matrix, shape (n, d)
    n_clusters : int
    exact_max_samples : int, default=20000
    random_state : int or None, default=0
        Seeds the k-means++ initialisation (one initialisation).

    Returns
    -------
    Clustering

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(c, 0.1, size=(30, 2)) for c in (0, 5)])
    >>> kmeans_clustering(X, 2).labels.reshape(2, 30)[:, 0].tolist()
    [0, 1]
    """
    from sklearn.cluster import KMeans, MiniBatchKMeans

    X = _check_matrix(X, "X")
    n = X.shape[0]
    k = _check_k(n_clusters, n)
    start = time.perf_counter()
    if n <= exact_max_samples:
        model = KMeans(n_clusters=k, n_init=1, random_state=random_state)
        route = "lloyd"
    else:
        model = MiniBatchKMeans(
            n_clusters=k, batch_size=max(4096, 2 * k), n_init=1, random_state=random_state
        )
        route = "minibatch"
    labels = _canonical(model.fit_predict(X))
    return Clustering(labels, k, route, {"kmeans_s": round(time.perf_counter() - start, 4)})


# =======================================================================================
# DeepCluster (one iteration, frozen features)
# =======================================================================================
class MLPEmbedding:
    """The hidden layer of a one-hidden-layer MLP trained on some labels, as a representation.

    Used twice on frozen features (paper 002 App. C.1 with fine-tuning replaced by a
    small head): trained on the *task labels* for a few epochs it stands in for "a model
    fine-tuned on the dataset" whose [CLS] vectors are clustered; trained on the
    *pseudo-labels* for one epoch it is the fresh model of the DeepCluster iteration.
    The MLP (ReLU hidden layer, Adam, cross-entropy) is the one the other fast paths
    train (:func:`spurious.models.torch_loop.seeded_mlp` and
    :func:`~spurious.models.torch_loop.train_loop`, one torch thread: the same bits on
    every machine load), on the features z-scored when dense; the representation is its
    hidden layer, the layer before the output (paper 002 clusters the layer before
    last). Needs torch.

    Parameters
    ----------
    hidden_size : int, default=256
    epochs : int, default=1
        Passes over the data (paper 002's DeepCluster iteration: one).
    batch_size : int, default=32
        Paper 002's fine-tuning batch size (Table 8).
    lr : float, default=1e-3
        Adam learning rate.
    random_state : int or None, default=0
        Seeds the initialisation and the batch order.
    device : str, default="auto"
        Where the MLP trains: the run's device
        (:func:`spurious.models.runtime.use_device`), else CUDA when available, else the
        CPU; on a GPU the batches are built there
        (:class:`~spurious.models.torch_loop.RowFeeder`).

    Attributes
    ----------
    mean_, scale_ : numpy.ndarray or None
        The z-scoring of dense features (``None`` for sparse ones).
    classes_ : numpy.ndarray
        The distinct labels, in the order of the output layer.
    weight_, bias_ : numpy.ndarray
        The hidden layer: ``relu(z(X) @ weight_ + bias_)``, shapes ``(d, hidden_size)``
        and ``(hidden_size,)``.
    train_accuracy_ : float
        Label accuracy on the training points after training.
    fit_seconds_ : float

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 8)); pseudo = (X[:, 0] > 0).astype(int)
    >>> emb = MLPEmbedding(hidden_size=16, epochs=3).fit(X, pseudo)
    >>> emb.transform(X).shape
    (200, 16)
    """

    def __init__(
        self,
        hidden_size: int = 256,
        epochs: int = 1,
        batch_size: int = 32,
        lr: float = 1e-3,
        random_state: int | None = 0,
        device: str = "auto",
    ) -> None:
        self.hidden_size = hidden_size
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.random_state = random_state
        self.device = device

    def fit(
        self, X: Any, pseudo_labels: Any, progress: Callable[[int, int], None] | None = None
    ) -> MLPEmbedding:
        """Train the MLP to predict ``pseudo_labels`` from ``X`` for ``epochs`` epochs.

        ``progress``, if given, is called with ``(rows trained, epochs * n)`` after each
        optimisation step."""
        for name in ("hidden_size", "epochs", "batch_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                raise ParameterError(
                    f"The {name!r} parameter of MLPEmbedding must be an int >= 1; got {value!r}."
                )
        X = _check_matrix(X, "X")
        y = np.asarray(pseudo_labels)
        if y.shape != (X.shape[0],):
            raise ParameterError(
                f"The 'pseudo_labels' argument must hold one label per row ({X.shape[0]}); got "
                f"shape {y.shape}."
            )
        torch = import_torch("The minority MLP (MLPEmbedding)")
        start = time.perf_counter()
        n, d = X.shape
        # Dense features are z-scored (sentence embeddings mix scales); sparse counts are
        # used as they are: dividing by a rare word's tiny std would let rare words
        # dominate the embedding (on planted bag-of-words data the cue's cluster went
        # from 100% pure to mixed). Batches are scaled as they are drawn: no scaled copy
        # of X (3.4 GB at 550k x 1536).
        self.mean_, self.scale_ = None, None
        if not sparse.issparse(X):
            mean, std = zscore(X)
            self.mean_, self.scale_ = mean.astype(np.float32), std.astype(np.float32)
        self.classes_, codes = np.unique(y, return_inverse=True)
        dev = resolve_device(check_device(self.device, "'device' parameter of MLPEmbedding"))
        scaling = None if self.mean_ is None or self.scale_ is None else (self.mean_, self.scale_)
        feed = RowFeeder(X, scaling, dev)
        y_t = feed.labels(codes)
        rng = np.random.default_rng(self.random_state)
        encoder, head = seeded_mlp(rng, d, len(self.classes_), int(self.hidden_size))
        encoder, head = encoder.to(dev), head.to(dev)  # initialised on the CPU: same weights
        loss_fn = torch.nn.CrossEntropyLoss()
        total = int(self.epochs) * n
        done = [0]

        def after_step(epoch: int, step: int, idx: np.ndarray, loss: Any) -> None:
            done[0] += len(idx)
            if progress is not None:
                progress(done[0], total)

        train_loop(
            [*encoder.parameters(), *head.parameters()],
            lambda idx: loss_fn(head(encoder(feed.rows(idx))), y_t[idx]),
            rows=np.arange(n),
            epochs=int(self.epochs),
            batch_size=int(min(self.batch_size, n)),
            rng=rng,
            lr=float(self.lr),
            n_threads=1,
            after_step=after_step,
            device=dev,
        )
        linear = encoder[0]
        self.weight_ = feed.numpy(linear.weight).T.copy()
        self.bias_ = feed.numpy(linear.bias).copy()
        correct = 0
        with torch.no_grad():
            for block in range(0, n, _BLOCK):
                stop = min(n, block + _BLOCK)
                pred = feed.numpy(head(encoder(feed.block(block, stop))).argmax(1))
                correct += int((pred == codes[block:stop]).sum())
        self.train_accuracy_ = correct / n
        self.fit_seconds_ = time.perf_counter() - start
        return self

    def transform(self, X: Any) -> np.ndarray:
        """The hidden layer of the trained MLP: ``relu(z(X) W1 + b1)`` (float32)."""
        if not hasattr(self, "weight_"):
            raise ParameterError("MLPEmbedding.transform needs fit() first.")
        X = _check_matrix(X, "X")
        out = np.empty((X.shape[0], self.weight_.shape[1]), dtype=np.float32)
        for block in range(0, X.shape[0], _BLOCK):
            part = X[block : block + _BLOCK]
            if self.mean_ is not None and self.scale_ is not None:
                part = (np.asarray(part, dtype=np.float32) - self.mean_) / self.scale_
            out[block : block + _BLOCK] = np.maximum(
                np.asarray(part @ self.weight_) + self.bias_, 0
            )
        return out


# =======================================================================================
# Nearest neighbours
# =======================================================================================
def nearest_neighbor_assign(
    X_train: Any, train_labels: Any, X_query: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each query point takes the label of its nearest training point (Euclidean).

    Paper 002 Sec. 3 assigns a test example to the cluster of its nearest training
    neighbour. Exact search (scikit-learn's brute-force or tree index, chosen by
    dimension and sparsity).

    Parameters
    ----------
    X_train : array-like or sparse, shape (n, d)
    train_labels : array-like, shape (n,)
    X_query : array-like or sparse, shape (q, d)

    Returns
    -------
    labels : numpy.ndarray, shape (q,)
    neighbor : numpy.ndarray of int, shape (q,)
        Row of the nearest training point.
    distance : numpy.ndarray of float, shape (q,)

    Examples
    --------
    >>> lab, nn, dist = nearest_neighbor_assign([[0, 0], [10, 0]], [3, 7], [[1, 0], [9, 1]])
    >>> lab.tolist(), nn.tolist()
    ([3, 7], [0, 1])
    """
    from sklearn.neighbors import NearestNeighbors

    Xt = _check_matrix(X_train, "X_train")
    Xq = _check_matrix(X_query, "X_query")
    labels = np.asarray(train_labels)
    if labels.shape != (Xt.shape[0],):
        raise ParameterError(
            f"The 'train_labels' argument must hold one label per row of 'X_train' "
            f"({Xt.shape[0]}); got shape {labels.shape}."
        )
    if Xq.shape[1] != Xt.shape[1]:
        raise ParameterError(
            f"The 'X_query' argument has {Xq.shape[1]} columns; 'X_train' has {Xt.shape[1]}."
        )
    if Xq.shape[0] == 0:
        return labels[:0], np.zeros(0, dtype=np.int64), np.zeros(0)
    nn = NearestNeighbors(n_neighbors=1).fit(Xt)
    dist, idx = nn.kneighbors(Xq)
    idx = idx[:, 0].astype(np.int64)
    return labels[idx], idx, dist[:, 0].astype(np.float64)
