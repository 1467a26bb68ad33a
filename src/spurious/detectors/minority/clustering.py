"""The pipeline on matrices: cluster the training set, assign evaluation examples, mark.

:func:`find_minority_examples` takes feature matrices and label ids (no
:class:`~spurious.data.dataset.Dataset`): optional task MLP, one DeepCluster iteration
(or plain Ward / k-means), the cluster-by-label counts of
:mod:`~spurious.detectors.minority.labels`, then nearest-training-neighbour assignment
of the evaluation examples.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np

from spurious.detectors.minority.labels import (
    AUTO_SWITCH_SHARE,
    choose_rule,
    label_counts,
    minority_labels,
)
from spurious.exceptions import ParameterError
from spurious.models.clustering import (
    DEFAULT_EXACT_MAX_SAMPLES,
    DEFAULT_N_PRECLUSTERS,
    ROUTES,
    MLPEmbedding,
    auto_n_pseudo_labels,
    kmeans_clustering,
    nearest_neighbor_assign,
    ward_clustering,
)
from spurious.utils.progress import step_bar, ticking

__all__ = ["METHODS", "EvalAssignment", "MinorityClusters", "find_minority_examples"]

#: Clusterings: one DeepCluster iteration + Ward (paper 002), or plain Ward / k-means.
METHODS = ("deepcluster", "ward", "kmeans")


@dataclass(frozen=True)
class EvalAssignment:
    """The evaluation side of a :class:`MinorityClusters`, every array present.

    Attributes
    ----------
    clusters : numpy.ndarray of int
        Cluster of each evaluation example's nearest training example.
    anti_biased : numpy.ndarray of bool
        Minority (anti-biased) evaluation examples.
    neighbor : numpy.ndarray of int
        Row of that nearest training example.
    distance : numpy.ndarray of float
        Distance to it.
    """

    clusters: np.ndarray
    anti_biased: np.ndarray
    neighbor: np.ndarray
    distance: np.ndarray


@dataclass
class MinorityClusters:
    """Output of :func:`find_minority_examples`.

    Attributes
    ----------
    train_clusters : numpy.ndarray of int
        Cluster of each training example (``0 .. n_clusters - 1``, largest first).
    train_anti_biased : numpy.ndarray of bool
        Minority (anti-biased) training examples.
    counts : numpy.ndarray of int, shape (n_clusters, n_classes)
        Training examples per cluster and label.
    minority : numpy.ndarray of bool, shape (n_clusters, n_classes)
        The minority labels of each cluster (:func:`minority_labels`).
    eval_clusters, eval_anti_biased, eval_neighbor, eval_distance : numpy.ndarray or None
        For evaluation examples: the cluster of the nearest training example, the mark,
        that neighbour's training row and the distance to it.
    train_embedding : numpy.ndarray
        The representation that was clustered (DeepCluster's hidden layer, or the input).
    info : dict
        Plain data: method, m, routes, timings, pseudo-label accuracy.
    """

    train_clusters: np.ndarray
    train_anti_biased: np.ndarray
    counts: np.ndarray
    minority: np.ndarray
    eval_clusters: np.ndarray | None = None
    eval_anti_biased: np.ndarray | None = None
    eval_neighbor: np.ndarray | None = None
    eval_distance: np.ndarray | None = None
    train_embedding: Any = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def majority(self) -> np.ndarray:
        """Majority label id of each cluster (ties: the lower id)."""
        return self.counts.argmax(axis=1)

    def evaluation(self) -> EvalAssignment:
        """The evaluation side, for a result computed with evaluation examples.

        Returns
        -------
        EvalAssignment

        Raises
        ------
        ValueError
            When there were no evaluation examples: :func:`find_minority_examples` sets
            the four ``eval_*`` arrays together or not at all.
        """
        cl, anti = self.eval_clusters, self.eval_anti_biased
        nb, dist = self.eval_neighbor, self.eval_distance
        if cl is None or anti is None or nb is None or dist is None:
            raise ValueError(
                "this clustering has no evaluation side: find_minority_examples ran "
                "without X_eval / y_eval"
            )
        return EvalAssignment(clusters=cl, anti_biased=anti, neighbor=nb, distance=dist)


class _ClusterOptions(TypedDict):
    """The keyword arguments of :func:`_cluster` that the pseudo-label clustering and the
    final one share."""

    route: str
    exact_max_samples: int
    n_preclusters: int
    random_state: int | None


def _cluster(
    X: Any,
    method: str,
    k: int,
    *,
    route: str,
    exact_max_samples: int,
    n_preclusters: int,
    random_state: int | None,
) -> tuple[np.ndarray, dict[str, Any]]:
    if method == "kmeans":
        res = kmeans_clustering(
            X, k, exact_max_samples=exact_max_samples, random_state=random_state
        )
    else:
        res = ward_clustering(
            X,
            k,
            route=route,
            exact_max_samples=exact_max_samples,
            n_preclusters=n_preclusters,
            random_state=random_state,
        )
    return res.labels, {"route": res.route, **res.info}


def find_minority_examples(
    X_train: Any,
    y_train: Any,
    X_eval: Any = None,
    y_eval: Any = None,
    *,
    n_classes: int | None = None,
    method: str = "deepcluster",
    n_clusters: int = 10,
    n_pseudo_labels: int | str = "auto",
    pseudo_clustering: str = "kmeans",
    minority_rule: str = "not_majority",
    auto_switch_share: float = AUTO_SWITCH_SHARE,
    task_epochs: int = 0,
    hidden_size: int = 256,
    epochs: int = 1,
    batch_size: int = 32,
    lr: float = 1e-3,
    ward_route: str = "auto",
    exact_max_samples: int = DEFAULT_EXACT_MAX_SAMPLES,
    n_preclusters: int = DEFAULT_N_PRECLUSTERS,
    n_threads: int | None = 1,
    random_state: int | None = 0,
    progress: bool = False,
) -> MinorityClusters:
    """Cluster the training set and mark minority examples of both splits (paper 002 Sec. 3).

    Parameters
    ----------
    X_train : array-like or sparse matrix, shape (n, d)
        The representation of the training examples.
    y_train : array-like of int, shape (n,)
        Label ids.
    X_eval, y_eval : optional
        Evaluation examples: each takes the cluster of its nearest training example.
    n_classes : int, optional
        Number of labels (default: largest id + 1).
    method : {"deepcluster", "ward", "kmeans"}, default="deepcluster"
        ``"deepcluster"``: pseudo-labels, a fresh MLP trained on them for ``epochs``
        epoch(s), Ward on its hidden layer (App. C.1). ``"ward"`` / ``"kmeans"``: the
        standard clusterings on ``X_train`` itself (App. C.4.1).
    n_clusters : int, default=10
        k (paper 002 used 10 for every dataset).
    n_pseudo_labels : int or "auto", default="auto"
        m; ``"auto"`` = :func:`~spurious.models.clustering.auto_n_pseudo_labels`.
    pseudo_clustering : {"kmeans", "ward"}, default="kmeans"
        How the pseudo-labels are found (App. C.2 used Ward).
    minority_rule : {"not_majority", "least_frequent", "auto"}, default="not_majority"
        See :func:`minority_labels`; ``"auto"`` switches to ``"least_frequent"`` when
        ``"not_majority"`` would mark more than ``auto_switch_share`` of the training
        examples (paper 002 footnote 10; :func:`choose_rule`). ``info["minority_rule"]``
        records the rule used and the share that decided it.
    auto_switch_share : float, default=0.40
        The threshold of ``"auto"``.
    task_epochs : int, default=0
        Above 0: first train an MLP on the *task labels* for this many epochs and
        cluster its hidden layer (the stand-in for paper 002's model fine-tuned on the
        dataset, whose [CLS] is clustered); the DeepCluster model still takes
        ``X_train`` as input. 0: cluster ``X_train`` as it is (a fine-tuned model's
        features, or a test).
    hidden_size, epochs, batch_size, lr
        The DeepCluster MLP (:class:`~spurious.models.clustering.MLPEmbedding`).
    ward_route, exact_max_samples, n_preclusters
        See :func:`~spurious.models.clustering.ward_clustering`.
    n_threads : int or None, default=1
        BLAS / OpenMP threads while clustering (``None``: leave as is). On a shared
        machine one thread avoids spin-waiting: k-means++ with 500 centres on 8k x 384
        took 5.6 s with 1 thread and 62 s with 2 on 2 busy cores.
    random_state : int or None, default=0
    progress : bool, default=False
        A progress bar over the stages.

    Returns
    -------
    MinorityClusters

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> centers = np.array([[0, 0], [10, 0], [0, 10]])
    >>> X = np.concatenate([rng.normal(c, 0.3, size=(20, 2)) for c in centers])
    >>> y = np.repeat([0, 1, 2], 20); y[[0, 1, 25]] = [1, 2, 0]  # three planted minorities
    >>> out = find_minority_examples(X, y, method="ward", n_clusters=3)
    >>> np.flatnonzero(out.train_anti_biased).tolist()
    [0, 1, 25]
    """
    from threadpoolctl import threadpool_limits
    from tqdm.auto import tqdm

    y, n, has_eval, k_classes, m = _check_arguments(
        X_train,
        y_train,
        X_eval,
        y_eval,
        n_classes=n_classes,
        method=method,
        n_clusters=n_clusters,
        n_pseudo_labels=n_pseudo_labels,
        pseudo_clustering=pseudo_clustering,
        task_epochs=task_epochs,
        ward_route=ward_route,
    )
    info: dict[str, Any] = {"method": method, "n_clusters": int(n_clusters), "n_train": n}
    stages = (3 if method == "deepcluster" else 1) + int(has_eval) + int(task_epochs > 0)
    bar = tqdm(total=stages, desc="minority", disable=not progress, unit="stage", leave=False)
    limits = threadpool_limits(int(n_threads)) if n_threads is not None else nullcontext()
    # The clock runs through one-call stages (k-means; SciPy's Ward linkage holds the GIL,
    # so its stage shows its name only); the MLPs count rows.
    common: _ClusterOptions = {
        "route": ward_route,
        "exact_max_samples": exact_max_samples,
        "n_preclusters": n_preclusters,
        "random_state": random_state,
    }
    mlp = {"hidden_size": hidden_size, "lr": lr, "random_state": random_state}
    try:
        with limits, ticking(bar):
            X_rep: Any = X_train
            task_model = None
            if task_epochs > 0:
                task_model, X_rep = _task_model(X_train, y, task_epochs, mlp, info, bar)
            emb_train: Any = X_rep
            model = None
            if method == "deepcluster":
                model, emb_train = _deepcluster_model(
                    X_train, X_rep, int(m), pseudo_clustering, epochs, batch_size, mlp, common,
                    info, bar,
                )  # fmt: skip
            final = "ward" if method == "deepcluster" else method
            bar.set_description(f"minority: {final} into {n_clusters} clusters")
            start = time.perf_counter()
            clusters, cinfo = _cluster(emb_train, final, int(n_clusters), **common)
            info["clustering"] = {
                "algorithm": final,
                "seconds": round(time.perf_counter() - start, 4),
                **cinfo,
            }
            bar.update()
            counts = label_counts(clusters, y, int(n_clusters), k_classes)
            used, share = choose_rule(counts, minority_rule, auto_switch_share)
            info["minority_rule"] = {
                "requested": minority_rule,
                "used": used,
                "not_majority_share_train": share,
                "auto_switch_share": float(auto_switch_share),
                "switched": minority_rule == "auto" and used != "not_majority",
            }
            minority = minority_labels(counts, used)
            out = MinorityClusters(
                train_clusters=clusters,
                train_anti_biased=minority[clusters, y],
                counts=counts,
                minority=minority,
                train_embedding=emb_train,
                info=info,
            )
            if has_eval:
                bar.set_description("minority: nearest training neighbours")
                start = time.perf_counter()
                # Evaluation examples go through the model whose hidden layer was clustered.
                embedder = model if model is not None else task_model
                emb_eval = embedder.transform(X_eval) if embedder is not None else X_eval
                ye = np.asarray(y_eval, dtype=np.int64)
                cl, nb, dist = nearest_neighbor_assign(emb_train, clusters, emb_eval)
                out.eval_clusters = cl
                out.eval_neighbor = nb
                out.eval_distance = dist
                out.eval_anti_biased = minority[cl, ye]
                info["assign_seconds"] = round(time.perf_counter() - start, 4)
                bar.update()
    finally:
        bar.close()
    return out


def _check_arguments(
    X_train: Any,
    y_train: Any,
    X_eval: Any,
    y_eval: Any,
    *,
    n_classes: int | None,
    method: str,
    n_clusters: int,
    n_pseudo_labels: int | str,
    pseudo_clustering: str,
    task_epochs: int,
    ward_route: str,
) -> tuple[np.ndarray, int, bool, int, Any]:
    """Errors a caller can act on; ``(y, n_train, has_eval, n_classes, m)`` otherwise
    (``m`` is the number of pseudo-labels, ``None`` unless ``method="deepcluster"``)."""
    if method not in METHODS:
        raise ParameterError(
            f"The 'method' argument must be one of {list(METHODS)}; got {method!r}."
        )
    if pseudo_clustering not in ("kmeans", "ward"):
        raise ParameterError(
            "The 'pseudo_clustering' argument must be 'kmeans' or 'ward'; got "
            f"{pseudo_clustering!r}."
        )
    if ward_route not in ROUTES:
        raise ParameterError(
            f"The 'ward_route' argument must be one of {list(ROUTES)}; got {ward_route!r}."
        )
    y = np.asarray(y_train)
    n = X_train.shape[0]
    if y.shape != (n,):
        raise ParameterError(
            f"The 'y_train' argument must hold one label id per row of 'X_train' ({n}); got "
            f"shape {y.shape}."
        )
    if isinstance(n_clusters, bool) or not isinstance(n_clusters, int | np.integer):
        raise ParameterError(f"The 'n_clusters' argument must be an int; got {n_clusters!r}.")
    if not 2 <= n_clusters <= n:
        raise ParameterError(
            f"The 'n_clusters' argument must be in [2, n_train={n}]; got {n_clusters}."
        )
    has_eval = X_eval is not None
    if has_eval != (y_eval is not None):
        raise ParameterError("Pass both 'X_eval' and 'y_eval', or neither.")
    k_classes = int(n_classes) if n_classes is not None else int(y.max()) + 1
    if has_eval and len(y_eval):
        k_classes = max(k_classes, int(np.max(y_eval)) + 1)
    m = None
    if method == "deepcluster":
        m = auto_n_pseudo_labels(n, n_clusters) if n_pseudo_labels == "auto" else n_pseudo_labels
        if isinstance(m, bool) or not isinstance(m, int | np.integer) or not 2 <= m <= n:
            raise ParameterError(
                f"The 'n_pseudo_labels' argument must be 'auto' or an int in [2, n_train={n}]; "
                f"got {n_pseudo_labels!r}."
            )
    if (
        isinstance(task_epochs, bool)
        or not isinstance(task_epochs, int | np.integer)
        or task_epochs < 0
    ):
        raise ParameterError(
            f"The 'task_epochs' argument must be an int >= 0; got {task_epochs!r}."
        )
    return y, n, has_eval, k_classes, m


def _rows_bar(stages: Any, what: str, total: int) -> Any:
    """A bar below the stage bar ``stages`` (on when it is) over an MLP's training rows."""
    return step_bar(f"minority: {what}", total, enabled=not stages.disable, unit="ex",
                    unit_scale=True)  # fmt: skip


def _task_model(
    X_train: Any,
    y: np.ndarray,
    task_epochs: int,
    mlp: dict[str, Any],
    info: dict[str, Any],
    bar: Any,
) -> tuple[MLPEmbedding, Any]:
    """An MLP trained on the task labels (the stand-in for paper 002's fine-tuned model)
    and its hidden layer of ``X_train``, which is clustered; recorded in
    ``info["task_model"]``."""
    n = X_train.shape[0]
    bar.set_description(f"minority: task model ({task_epochs} epochs)")
    with _rows_bar(bar, "task model", task_epochs * n) as rows:
        task_model = MLPEmbedding(
            hidden_size=mlp["hidden_size"],
            epochs=task_epochs,
            batch_size=min(128, max(8, n // 32)),
            lr=mlp["lr"],
            random_state=mlp["random_state"],
        ).fit(X_train, y, progress=lambda done, total: rows.update(done - rows.n))
    X_rep = task_model.transform(X_train)
    info["task_model"] = {
        "epochs": int(task_epochs),
        "hidden_size": int(mlp["hidden_size"]),
        "batch_size": int(min(128, max(8, n // 32))),
        "train_accuracy": round(task_model.train_accuracy_, 6),
        "seconds": round(task_model.fit_seconds_, 4),
    }
    bar.update()
    return task_model, X_rep


def _deepcluster_model(
    X_train: Any,
    X_rep: Any,
    m: int,
    pseudo_clustering: str,
    epochs: int,
    batch_size: int,
    mlp: dict[str, Any],
    common: _ClusterOptions,
    info: dict[str, Any],
    bar: Any,
) -> tuple[MLPEmbedding, Any]:
    """One DeepCluster iteration (App. C.1): ``m`` pseudo-labels of ``X_rep``, then a fresh
    MLP trained on them, and its hidden layer of ``X_train`` (what Ward clusters)."""
    bar.set_description(f"minority: {m} pseudo-labels ({pseudo_clustering})")
    start = time.perf_counter()
    pseudo, pinfo = _cluster(X_rep, pseudo_clustering, m, **common)
    info["pseudo_labels"] = {
        "n": m,
        "clustering": pseudo_clustering,
        "seconds": round(time.perf_counter() - start, 4),
        **pinfo,
    }
    bar.update()
    bar.set_description("minority: DeepCluster epoch")
    # The fresh model sees the input features, never the task labels.
    with _rows_bar(bar, "DeepCluster MLP", epochs * X_train.shape[0]) as rows:
        model = MLPEmbedding(
            hidden_size=mlp["hidden_size"],
            epochs=epochs,
            batch_size=batch_size,
            lr=mlp["lr"],
            random_state=mlp["random_state"],
        ).fit(X_train, pseudo, progress=lambda done, total: rows.update(done - rows.n))
    emb_train = model.transform(X_train)
    info["deepcluster"] = {
        "hidden_size": int(mlp["hidden_size"]),
        "epochs": int(epochs),
        "batch_size": int(batch_size),
        "lr": float(mlp["lr"]),
        "pseudo_label_accuracy": round(model.train_accuracy_, 6),
        "seconds": round(model.fit_seconds_, 4),
    }
    bar.update()
    return model, emb_train
