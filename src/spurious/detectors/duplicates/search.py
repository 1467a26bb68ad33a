"""Exact and near duplicates within one split: normalised keys, TF-IDF neighbours, clusters.

Two rows are *exact* duplicates when every text field is equal after
:func:`normalise_text` (Unicode NFC, case folded, runs of whitespace collapsed): the
same input typed twice. They are *near* duplicates when, field by field, the TF-IDF
cosine of their word uni- and bigrams is at least a threshold. Every field, not the
fields joined: NLI pairs share their premise by design (three hypotheses per premise in
SNLI), and on the joined text a shared premise alone makes two different pairs look
alike. Bigrams make a one-word edit cost two features, so minimal edits ("a man sings" /
"a woman sings"), which often change an NLI label on purpose, stay below the threshold.

Near pairs are searched on one field, the one with the most distinct texts, and kept
when every other field passes too (a pair near in every field is near in that one).
The search is exact but does not compare all pairs: all-pairs prefix filtering
(:func:`candidate_pairs`) lists the pairs that share a rare feature, which every pair
above the threshold does, and their cosines are computed; about a second for SNLI's
9,842 dev pairs, where scikit-learn's brute-force radius search builds the full
n x n distance matrix (0.8 GB there).

Examples
--------
>>> normalise_text("  A  Dog\\tRuns.  ")
'a dog runs.'
>>> exact_codes(normalise_fields({"t": ["a b", "A  b", "c"]})).tolist()
[0, 0, 1]
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.sparse.csgraph import connected_components

__all__ = [
    "candidate_pairs",
    "clusters",
    "exact_codes",
    "near_pairs",
    "normalise_fields",
    "normalise_text",
]

#: Single characters and digits count as words ("a", "2"): short texts need them.
_TOKEN_PATTERN = r"(?u)\b\w+\b"


def normalise_text(text: object) -> str:
    """The text two rows are compared by: NFC, case folded, whitespace collapsed.

    Examples
    --------
    >>> normalise_text("Cafe\\u0301  AU lait") == "caf\\u00e9 au lait"
    True
    """
    return " ".join(unicodedata.normalize("NFC", str(text)).casefold().split())


def normalise_fields(fields: Mapping[str, Sequence[object]]) -> dict[str, list[str]]:
    """Every field's texts through :func:`normalise_text` (done once, used by all below).

    Examples
    --------
    >>> normalise_fields({"t": ["A  B", "c"]})
    {'t': ['a b', 'c']}
    """
    return {name: [normalise_text(t) for t in texts] for name, texts in fields.items()}


def exact_codes(normalised: Mapping[str, Sequence[str]]) -> np.ndarray:
    """One code per row; rows whose normalised texts are equal in every field share it.

    Parameters
    ----------
    normalised : mapping of str to sequence of str
        Field name -> the normalised texts of every row (:func:`normalise_fields`).

    Returns
    -------
    numpy.ndarray of int64
        Codes in order of first appearance.

    Examples
    --------
    >>> exact_codes(normalise_fields({"a": ["x y", "X  y", "x y"], "b": ["1", "1", "2"]})).tolist()
    [0, 0, 1]
    """
    # A separator no normalised text holds keeps ("a b", "c") apart from ("a", "b c").
    keys = ["\x1f".join(parts) for parts in zip(*normalised.values(), strict=True)]
    codes, _ = pd.factorize(pd.Series(keys, dtype=object))
    return np.asarray(codes, dtype=np.int64)


def _tfidf(texts: Sequence[str]) -> sparse.csr_matrix | None:
    """L2-normalised TF-IDF rows of word uni- and bigrams; ``None`` without any word."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    # The texts are normalised already (case folded): no second pass.
    vectorizer = TfidfVectorizer(lowercase=False, token_pattern=_TOKEN_PATTERN, ngram_range=(1, 2))
    try:
        return vectorizer.fit_transform(texts).tocsr()
    except ValueError:  # no text holds a word: nothing can be near anything
        return None


def candidate_pairs(x: sparse.csr_matrix, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of rows of ``x`` (unit rows, non-negative) that can reach a cosine of
    ``threshold``, without comparing all pairs: all-pairs prefix filtering (Bayardo,
    Ma and Srikant 2007, "Scaling up all pairs similarity search", Sec. 4).

    Order the features from the most to the least frequent. A row's *prefix* is its run
    of most frequent features whose norm stays below ``threshold``; the rest is its
    *suffix*. As ``x . y <= ||x_prefix|| + x_suffix . y`` for unit ``y``, a pair with
    ``x . y >= threshold`` has ``x_suffix . y > 0``: it shares one of x's rarer
    features. So the candidates are the non-zeros of the sparse product of the suffixes
    with ``x``, cheap because rare features are held by few rows; their exact cosine is
    checked after.

    Returns
    -------
    i, j : numpy.ndarray
        Candidate pairs, ``i < j`` (a superset of the pairs at or above ``threshold``).

    Examples
    --------
    >>> x = sparse.csr_matrix(np.array([[1.0, 0, 0], [0.8, 0.6, 0], [0, 0, 1.0]]))
    >>> [a.tolist() for a in candidate_pairs(x, 0.7)]
    [[0], [1]]
    """
    x = x.tocsr()
    df = np.bincount(x.indices, minlength=x.shape[1])
    rank = np.empty(x.shape[1], dtype=np.int64)
    rank[np.argsort(-df, kind="stable")] = np.arange(x.shape[1])  # 0 = most frequent
    row = np.repeat(np.arange(x.shape[0]), np.diff(x.indptr))
    order = np.lexsort((rank[x.indices], row))  # each row's features, most frequent first
    squares = x.data[order] ** 2
    cumulative = np.cumsum(squares)
    starts = x.indptr[:-1][row[order]]
    before = np.concatenate([[0.0], cumulative])[starts]  # the row's mass before its start
    in_prefix = (cumulative - before) < threshold**2 - 1e-12
    suffix = sparse.csr_matrix(
        (x.data[order][~in_prefix], (row[order][~in_prefix], x.indices[order][~in_prefix])),
        shape=x.shape,
    )
    hits = (suffix @ x.T).tocoo()
    keep = hits.row < hits.col
    return hits.row[keep].astype(np.int64), hits.col[keep].astype(np.int64)


def near_pairs(
    normalised: Mapping[str, Sequence[str]], threshold: float, codes: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs of rows whose every field has a TF-IDF cosine of at least ``threshold``.

    Parameters
    ----------
    normalised : mapping of str to sequence of str
        Field name -> the normalised texts of every row (:func:`normalise_fields`).
    threshold : float
        Smallest cosine, in (0, 1].
    codes : numpy.ndarray
        :func:`exact_codes` of the rows; exact duplicates are not listed again.

    Returns
    -------
    i, j, similarity : numpy.ndarray
        ``i < j``; ``similarity`` is the smallest cosine over the fields.

    Examples
    --------
    >>> f = normalise_fields({"t": ["the black cat sat on the mat in the sun", "The black "
    ...     "cat sat on the mat in the sun!", "the black cat sat on the mat in the sun today",
    ...     "a dog"]})
    >>> i, j, s = near_pairs(f, 0.8, exact_codes(f))
    >>> i.tolist(), j.tolist(), s.round(2).tolist()
    ([0, 0, 1], [1, 2, 2], [1.0, 0.91, 0.91])
    """
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64))
    # Candidates from the field with the most distinct texts (fewest shared features);
    # a pair near in every field is near in that one.
    key = max(normalised, key=lambda name: len(set(normalised[name])))
    x = _tfidf(normalised[key])
    if x is None:
        return empty
    i, j = candidate_pairs(x, threshold)
    keep = codes[i] != codes[j]
    i, j = i[keep], j[keep]
    sim = np.asarray(x[i].multiply(x[j]).sum(axis=1)).ravel()
    keep = sim >= threshold - 1e-9  # rounding must not drop a pair at the threshold
    i, j, sim = i[keep], j[keep], sim[keep]
    for name, texts in normalised.items():
        if name == key or not len(i):
            continue
        m = _tfidf(texts)
        if m is None:
            return empty
        sim = np.minimum(sim, np.asarray(m[i].multiply(m[j]).sum(axis=1)).ravel())
        keep = sim >= threshold - 1e-9
        i, j, sim = i[keep], j[keep], sim[keep]
    order = np.lexsort((j, i))
    return i[order], j[order], sim[order]


def clusters(codes: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Cluster of each row: exact duplicates and near pairs joined transitively.

    Returns
    -------
    numpy.ndarray of int64
        A cluster number per row (in order of first appearance).

    Examples
    --------
    >>> clusters(np.array([0, 1, 0, 2]), np.array([1]), np.array([3])).tolist()
    [0, 1, 0, 1]
    """
    n = len(codes)
    first = pd.Series(np.arange(n)).groupby(codes).transform("min").to_numpy()
    rows = np.concatenate([np.arange(n), i])
    cols = np.concatenate([first, j])
    graph = sparse.coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    renumbered, _ = pd.factorize(labels)
    return np.asarray(renumbered, dtype=np.int64)
