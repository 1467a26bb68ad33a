"""PECO's representation and clustering (scikit-learn): PCA, k-means and the choice of k.

:func:`reduce_dimensions` reduces the elicited-sentence embeddings (PCA; truncated SVD
for sparse input), :func:`kmeans_clusters` clusters them (seeded k-means++) and
:func:`auto_n_clusters` picks k from the number of examples.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import sparse

from spurious.exceptions import ParameterError

#: Examples per cluster the ``"auto"`` rule aims at (paper: SNLI's ~10k test, k = 50).
EXAMPLES_PER_CLUSTER = 200


def reduce_dimensions(X: Any, n_components: int | None, random_state: int = 0) -> np.ndarray:
    """PCA to ``n_components`` (``None``: keep every dimension), as a dense float array.

    Sparse input (tf-idf, bag of words) goes through ``TruncatedSVD``, which is PCA
    without centring (centring would densify the matrix). ``n_components`` above what
    the data supports is capped.

    Examples
    --------
    >>> X = np.random.default_rng(0).normal(size=(50, 8))
    >>> reduce_dimensions(X, 3).shape, reduce_dimensions(X, None).shape
    ((50, 3), (50, 8))
    """
    from sklearn.decomposition import PCA, TruncatedSVD

    is_sparse = sparse.issparse(X)
    n, d = X.shape
    if n_components is None:
        if is_sparse:
            return np.asarray(X.toarray(), dtype=np.float32) if d <= 4096 else X
        return np.asarray(X, dtype=np.float32)
    if is_sparse:
        k = min(n_components, d - 1, n - 1)
        if k < 1:
            return np.asarray(X.toarray(), dtype=np.float32)
        svd = TruncatedSVD(n_components=k, random_state=random_state)
        return svd.fit_transform(X).astype(np.float32)
    k = min(n_components, d, n)
    if k >= d:
        return np.asarray(X, dtype=np.float32)
    return PCA(n_components=k, random_state=random_state).fit_transform(X).astype(np.float32)


def kmeans_clusters(Z: Any, n_clusters: int, random_state: int = 0) -> np.ndarray:
    """k-means cluster of every row (scikit-learn ``KMeans``, k-means++, seeded).

    Examples
    --------
    >>> Z = np.r_[np.zeros((5, 2)), np.ones((5, 2)) * 10]
    >>> c = kmeans_clusters(Z, 2)
    >>> len(set(c[:5])), len(set(c[5:])), bool(c[0] != c[5])
    (1, 1, True)
    """
    from sklearn.cluster import KMeans

    n = Z.shape[0]
    if not 1 <= n_clusters <= n:
        raise ParameterError(
            f"The 'n_clusters' parameter must be between 1 and the number of examples ({n}); "
            f"got {n_clusters}."
        )
    km = KMeans(n_clusters=n_clusters, n_init=1, random_state=random_state)
    return km.fit_predict(Z).astype(np.int64)


def auto_n_clusters(n: int) -> int:
    """k for ``n`` examples: about 200 per cluster, between 10 and 100 (App. C advice).

    The paper used k = 50 on SNLI's ~10k test examples and saw small test sets (ANLI
    rounds, OCNLI: 1-3k) swing at high k; 200 examples per cluster keeps the shuffled
    baseline of Eq. 11 near ``(C-1)/(C * 200)`` per class whatever the data size.

    Examples
    --------
    >>> auto_n_clusters(9824), auto_n_clusters(1000), auto_n_clusters(200_000)
    (49, 10, 100)
    """
    return int(np.clip(round(n / EXAMPLES_PER_CLUSTER), 10, 100))


def too_few_points(k: int, what: str) -> str:
    """The message for a k above the distinct points of the scored split (``what``).

    k-means cannot make more clusters than distinct points: repeated sentences would
    leave clusters empty and PECO's per-cluster tables misaligned.

    Examples
    --------
    >>> too_few_points(50, "1 distinct hypothesis_only text(s)")[:44]
    "The 'n_clusters' parameter of Peco (50) exce"
    """
    return (
        f"The 'n_clusters' parameter of Peco ({k}) exceeds what the scored split can form: "
        f"its elicited sentences have {what} (repeated sentences), and k-means cannot make "
        "more clusters than distinct points. Use a smaller n_clusters, or data whose "
        "elicited sentences vary."
    )
