"""Token-label statistics of the artifact atlas: counts, Gardner's z, corrections, PMI.

Everything here works on sparse count matrices (examples x tokens) and integer labels, so
a million examples cost a few sparse products, not a Python loop over tokens.

- :func:`count_tokens`: scikit-learn's ``CountVectorizer`` over the unique texts of one
  field (NLI premises repeat three times), returned as the per-example count matrix.
- :func:`token_label_counts`: ``n(token)`` (examples containing it) and ``n(token, y)``.
- :func:`gardner_z`: Gardner et al. (2021) Sec. 3-4, ``z = (p_hat - p0) / sqrt(p0 (1 - p0)
  / n)`` with ``p_hat = n(token, y) / n(token)``, and its one-sided p-value.
- :func:`adjust_p`: Bonferroni and Benjamini-Hochberg over the tested (token, label) pairs.
- :func:`smoothed_pmi`: Gururangan et al. (2018) Sec. 3.1, PMI of word counts with add-k
  smoothing (they use k = 100).
- :func:`wilson_interval`: the 95% Wilson score interval of a share.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.special import ndtr, ndtri
from scipy.stats import false_discovery_control
from sklearn.feature_extraction.text import CountVectorizer

from spurious.exceptions import ParameterError

__all__ = [
    "TOKEN_PATTERN",
    "adjust_p",
    "count_tokens",
    "gardner_z",
    "significance_curve",
    "smoothed_pmi",
    "token_label_counts",
    "wilson_interval",
]

#: Word runs with the clitic "n't" split off (Penn-Treebank style: "didn't" -> "did",
#: "n't"), the tokenisation of the NLI heuristics and of Gururangan et al.'s tokenised
#: SNLI, so "n't" stays one (negation) token; other punctuation is dropped.
TOKEN_PATTERN = r"(?u)n't\b|\w+?(?=n't\b)|\w+"


def count_tokens(
    texts: Sequence[str],
    *,
    ngram_range: tuple[int, int] = (1, 1),
    lowercase: bool = True,
    stop_words: str | list[str] | None = None,
) -> tuple[sp.csr_matrix, np.ndarray]:
    """Per-example token counts of ``texts`` with scikit-learn's ``CountVectorizer``.

    The vocabulary is fitted on the unique texts only and each row is then looked up, so
    repeated texts (a premise with three hypotheses) are tokenised once.

    Parameters
    ----------
    texts : sequence of str
    ngram_range : (int, int), default=(1, 1)
        ``(1, 2)`` adds bigrams.
    lowercase : bool, default=True
    stop_words : {"english"}, list of str or None, default=None
        Kept by default (``None``): "no", "not" and "nobody" are stop words of most lists
        and the strongest contradiction cues of SNLI.

    Returns
    -------
    counts : scipy.sparse.csr_matrix of int64, shape (len(texts), n_tokens)
    vocabulary : numpy.ndarray of str
        Column names, sorted.

    Examples
    --------
    >>> X, vocab = count_tokens(["A dog didn't bark.", "a dog", "a dog"])
    >>> vocab.tolist()
    ['a', 'bark', 'did', 'dog', "n't"]
    >>> X.toarray().tolist()
    [[1, 1, 1, 1, 1], [1, 0, 0, 1, 0], [1, 0, 0, 1, 0]]
    """
    codes, uniques = pd.factorize(pd.Series(list(texts), dtype=object), sort=False)
    # Curly apostrophes count as straight ones ("didn’t" is a negation too).
    uniques = [str(u).replace("\u2019", "'") for u in uniques]
    vectorizer = CountVectorizer(
        lowercase=lowercase,
        stop_words=stop_words,
        token_pattern=TOKEN_PATTERN,
        ngram_range=tuple(ngram_range),
        dtype=np.int64,
    )
    try:
        unique_counts = vectorizer.fit_transform(uniques)
    except ValueError:  # no token at all (every text empty or stop words only)
        return sp.csr_matrix((len(codes), 0), dtype=np.int64), np.array([], dtype=object)
    vocab = vectorizer.get_feature_names_out().astype(object)
    if codes.min(initial=0) < 0:  # NaN texts: an empty row
        raise ParameterError("count_tokens got a missing text (None/NaN); expected strings.")
    counts = unique_counts[codes] if len(uniques) < len(codes) else unique_counts
    return sp.csr_matrix(counts), vocab


def token_label_counts(
    counts: sp.spmatrix, labels: np.ndarray, n_classes: int
) -> tuple[np.ndarray, np.ndarray]:
    """Examples containing each token, overall and per label.

    Parameters
    ----------
    counts : sparse matrix, shape (n_examples, n_tokens)
        Per-example counts (only presence matters).
    labels : numpy.ndarray of int, shape (n_examples,)
    n_classes : int

    Returns
    -------
    n : numpy.ndarray of int64, shape (n_tokens,)
        Number of examples that contain the token (Gardner et al.'s n).
    n_by_label : numpy.ndarray of int64, shape (n_tokens, n_classes)

    Examples
    --------
    >>> X = sp.csr_matrix([[2, 1], [1, 0], [0, 1]])
    >>> n, nl = token_label_counts(X, np.array([0, 1, 1]), 2)
    >>> n.tolist(), nl.tolist()
    ([2, 2], [[1, 1], [1, 1]])
    """
    present = sp.csr_matrix(counts, copy=True)
    present.data = np.ones_like(present.data)
    y = np.asarray(labels, dtype=np.int64)
    onehot = sp.csr_matrix(
        (np.ones(len(y), dtype=np.int64), (np.arange(len(y)), y)), shape=(len(y), n_classes)
    )
    n_by_label = np.asarray((present.T @ onehot).todense(), dtype=np.int64)
    return n_by_label.sum(axis=1), n_by_label


def gardner_z(
    n: np.ndarray, n_by_label: np.ndarray, p0: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gardner et al. (2021) Sec. 3-4: z of ``p_hat(y | token)`` against ``p0`` per label.

    ``p_hat = n(token, y) / n(token)``; ``z = (p_hat - p0_y) / sqrt(p0_y (1 - p0_y) /
    n(token))``; the p-value is one-sided, ``P(Z >= z)`` for a standard normal Z (a
    token is an artifact of the label it points *to*).

    Parameters
    ----------
    n : numpy.ndarray, shape (n_tokens,)
        Examples containing each token (> 0).
    n_by_label : numpy.ndarray, shape (n_tokens, n_classes)
    p0 : numpy.ndarray, shape (n_classes,)
        The null probability of each label (the prior, or 1 / C as in the paper).

    Returns
    -------
    p_hat, z, p_value : numpy.ndarray, shape (n_tokens, n_classes)

    Examples
    --------
    A token seen in 100 examples, 60 of them of label 0, with p0 = 1/2: z = 0.1 / 0.05 = 2.

    >>> p_hat, z, p = gardner_z(np.array([100]), np.array([[60, 40]]), np.array([0.5, 0.5]))
    >>> z.round(3).tolist(), p.round(4).tolist()
    ([[2.0, -2.0]], [[0.0228, 0.9772]])
    """
    n = np.asarray(n, dtype=np.float64)[:, None]
    p0 = np.asarray(p0, dtype=np.float64)[None, :]
    if np.any(n <= 0):
        raise ParameterError("gardner_z needs n > 0 for every token; drop unseen tokens first.")
    if np.any((p0 <= 0) | (p0 >= 1)):
        raise ParameterError(f"The 'p0' argument must lie in (0, 1); got {p0.ravel().tolist()}.")
    p_hat = np.asarray(n_by_label, dtype=np.float64) / n
    z = (p_hat - p0) / np.sqrt(p0 * (1.0 - p0) / n)
    return p_hat, z, ndtr(-z)


def adjust_p(p_values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bonferroni and Benjamini-Hochberg adjusted p-values over all entries of ``p_values``.

    An entry is significant at level alpha when its adjusted p-value is <= alpha.
    Bonferroni controls the family-wise error (the chance of *any* false flag), BH the
    expected share of false flags among the flagged (scipy's
    ``false_discovery_control(method="bh")``).

    Examples
    --------
    >>> bonf, bh = adjust_p(np.array([0.01, 0.02, 0.03, 0.5]))
    >>> bonf.tolist(), bh.round(3).tolist()
    ([0.04, 0.08, 0.12, 1.0], [0.04, 0.04, 0.04, 0.5])
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.size == 0:
        return p.copy(), p.copy()
    flat = p.ravel()
    bonf = np.minimum(flat * flat.size, 1.0)
    bh = false_discovery_control(flat, method="bh")
    return bonf.reshape(p.shape), np.asarray(bh).reshape(p.shape)


def significance_curve(n: np.ndarray, p0: float, alpha: float, n_tests: int) -> np.ndarray:
    """The smallest significant ``p_hat`` at each ``n`` under Bonferroni (Gardner's Fig. 1).

    ``p0 + z* sqrt(p0 (1 - p0) / n)`` with ``z* = Phi^-1(1 - alpha / n_tests)``.

    Examples
    --------
    >>> significance_curve(np.array([100.0]), 0.5, 0.05, 1).round(4).tolist()
    [0.5822]
    """
    z_star = -ndtri(alpha / max(int(n_tests), 1))
    return p0 + z_star * np.sqrt(p0 * (1.0 - p0) / np.asarray(n, dtype=np.float64))


def smoothed_pmi(word_label_counts: np.ndarray, smoothing: float = 100.0) -> np.ndarray:
    """Gururangan et al. (2018) Sec. 3.1: PMI(word, label) of counts with add-k smoothing.

    With ``c(w, y)`` the counts (word *occurrences* in the examples of label y), ``V``
    words, ``Y`` labels, ``k = smoothing`` and ``Z = sum c + k |V| |Y|``::

        p(w, y) = (c(w, y) + k) / Z,  p(w) = (c(w) + k |Y|) / Z,  p(y) = (c(y) + k |V|) / Z
        PMI(w, y) = log p(w, y) - log p(w) - log p(y)       (natural log)

    A label with no count at all has no statistics: its column is NaN.

    Parameters
    ----------
    word_label_counts : numpy.ndarray, shape (n_words, n_labels)
    smoothing : float, default=100
        Gururangan et al. use add-100 smoothing, which favours frequent words.

    Examples
    --------
    >>> c = np.array([[2, 0], [0, 2]])
    >>> smoothed_pmi(c, 0).round(3).tolist()
    [[0.693, -inf], [-inf, 0.693]]
    >>> smoothed_pmi(c, 100).round(4).tolist()
    [[0.0099, -0.01], [-0.01, 0.0099]]
    """
    c = np.asarray(word_label_counts, dtype=np.float64)
    out = np.full(c.shape, np.nan)
    if c.size == 0:
        return out
    present = c.sum(axis=0) > 0
    table = c[:, present]
    k = float(smoothing)
    n_words, n_labels = table.shape
    z = table.sum() + k * n_words * n_labels
    with np.errstate(divide="ignore"):  # log(0) = -inf: an unseen pair when k = 0
        log_wy = np.log(table + k)
        log_w = np.log(table.sum(axis=1, keepdims=True) + k * n_labels)
        log_y = np.log(table.sum(axis=0, keepdims=True) + k * n_words)
    out[:, present] = log_wy - log_w - log_y + np.log(z)
    return out


def wilson_interval(k: Any, n: Any, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of the share ``k / n``.

    Examples
    --------
    >>> [round(v, 4) for v in wilson_interval(0, 100)]
    [0.0, 0.037]
    >>> [round(v, 4) for v in wilson_interval(50, 100)]
    [0.4038, 0.5962]
    """
    k, n = float(k), float(n)
    if n <= 0:
        return float("nan"), float("nan")
    z = -ndtri((1.0 - level) / 2.0)
    p = k / n
    den = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return float(max(0.0, centre - half)), float(min(1.0, centre + half))
