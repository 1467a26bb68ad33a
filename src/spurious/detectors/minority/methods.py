"""The clusterings of one minority run as executor tasks, and their comparison.

The analysis clusters the training set with its method and, with ``compare_methods``,
with the two others on the same features (paper 002 App. C.4.1). Each clustering (the
k-means pre-clustering, the pseudo-labels, Ward) is a chain of steps that depend on one
another, but the clusterings of different methods, and of the analysis' method with
other seeds (``stability_seeds``), are independent: each is one task of an executor
(:mod:`spurious.execution`), :func:`cluster_task`, a pure function of the method, the
seed and the shared inputs, so every executor gives the same clusters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from spurious.detectors.minority.clustering import METHODS, MinorityClusters, find_minority_examples
from spurious.detectors.minority.labels import homogeneity_stats
from spurious.execution import Executor

__all__ = ["cluster_task", "method_comparison", "run_clusterings"]


def cluster_task(task: tuple[str, int | None], shared: dict[str, Any]) -> MinorityClusters:
    """The executor task: :func:`find_minority_examples` with the task's method on the
    shared features, and with its seed when it has one (a stability re-run); the
    evaluation split only for the analysis' own method (``shared["main"]``).

    The clustered representation (``train_embedding``) is left out of the result: the
    analysis does not use it, and it is as big as the features.
    """
    method, seed = task
    main = method == shared["main"]
    options = shared["options"]
    if seed is not None:  # a stability re-run: its bars show like the first run's
        options = {**options, "random_state": seed}
    out = find_minority_examples(
        shared["X_train"],
        shared["y_train"],
        shared["X_eval"] if main else None,
        shared["y_eval"] if main else None,
        n_classes=shared["n_classes"],
        method=method,
        **options,
    )
    out.train_embedding = None
    return out


def run_clusterings(
    executor: Executor,
    main: str,
    compare: bool,
    X_train: Any,
    y_train: np.ndarray,
    X_eval: Any,
    y_eval: np.ndarray | None,
    *,
    n_classes: int,
    options: dict[str, Any],
    seeds: Sequence[int] = (),
) -> tuple[dict[str, MinorityClusters], list[MinorityClusters]]:
    """``{method: clusters}`` for ``main`` (with the evaluation split) and, with
    ``compare``, the other :data:`METHODS` (training split only); and ``main`` again
    with each of ``seeds`` (both splits; :mod:`~spurious.detectors.minority.stability`).
    One executor task each: they are independent.

    Examples
    --------
    >>> from spurious.execution import LocalExecutor
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(c, 0.3, size=(20, 2)) for c in ([0, 0], [9, 0])])
    >>> y = np.repeat([0, 1], 20); y[0] = 1
    >>> out, reseeded = run_clusterings(LocalExecutor(), "ward", True, X, y, None, None,
    ...     n_classes=2, options={"n_clusters": 2, "n_pseudo_labels": 4}, seeds=[1])
    >>> list(out), np.flatnonzero(out["ward"].train_anti_biased).tolist(), len(reseeded)
    (['ward', 'deepcluster', 'kmeans'], [0], 1)
    """
    methods = [main, *(m for m in METHODS if m != main and compare)]
    tasks: list[tuple[str, int | None]] = [(m, None) for m in methods]
    tasks += [(main, int(seed)) for seed in seeds]
    if executor.remote:
        options = {**options, "progress": False}  # a worker's bar would only clutter the log
    shared = {"X_train": X_train, "y_train": y_train, "X_eval": X_eval, "y_eval": y_eval,
              "n_classes": n_classes, "main": main, "options": options}  # fmt: skip
    results = list(executor.map(cluster_task, tasks, shared=executor.put(shared)))
    return dict(zip(methods, results[: len(methods)], strict=True)), results[len(methods) :]


def method_comparison(
    results: dict[str, MinorityClusters],
    main: str,
    labels: Sequence[int] | np.ndarray,
    stats: dict[str, float],
    metrics: dict[str, float],
) -> dict[str, dict[str, float]]:
    """Label homogeneity of each method's clusters (App. C.4.1): ``main``'s from the
    analysis' ``stats`` and ``metrics``, the others' computed here and added to
    ``metrics`` as ``<method>_<stat>``."""
    from sklearn.metrics import homogeneity_score

    comparison: dict[str, dict[str, float]] = {
        main: {
            "mean_minority_share": stats["mean_minority_share"],
            "n_clusters_minority_over_10pct": stats["n_clusters_minority_over_10pct"],
            "homogeneity": metrics["homogeneity"],
            "anti_biased_fraction_train": metrics["anti_biased_fraction_train"],
        }
    }
    for other, alt in results.items():
        if other == main:
            continue
        s = homogeneity_stats(alt.counts)
        comparison[other] = {
            "mean_minority_share": s["mean_minority_share"],
            "n_clusters_minority_over_10pct": s["n_clusters_minority_over_10pct"],
            "homogeneity": float(homogeneity_score(labels, alt.train_clusters)),
            "anti_biased_fraction_train": float(alt.train_anti_biased.mean()),
        }
        for key in ("mean_minority_share", "n_clusters_minority_over_10pct", "homogeneity"):
            metrics[f"{other}_{key}"] = comparison[other][key]
    return comparison
