"""One text field's atlas: token x label statistics, the per-example cue, report details.

:func:`field_atlas` (from texts) and :func:`atlas_from_counts` (from a token count
matrix, so one tokenisation serves the real and the shuffled labels) compute Gardner et
al.'s z, both corrections and Gururangan et al.'s PMI of every tested token into a
:class:`FieldAtlas`; :func:`gold_cue` finds each example's strongest flagged token for
its own label; :func:`token_table` is the full long table and :func:`field_details` what
the report shows. The statistics themselves are in :mod:`~spurious.detectors.atlas.stats`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from spurious.detectors.atlas.stats import (
    adjust_p,
    count_tokens,
    gardner_z,
    smoothed_pmi,
    token_label_counts,
)


@dataclasses.dataclass
class FieldAtlas:
    """Token statistics of one text field (the tested tokens only).

    Attributes
    ----------
    field : str
    vocabulary : numpy.ndarray of str, shape (V,)
    n : numpy.ndarray, shape (V,)
        Examples holding each token.
    n_by_label, p_hat, z, p_value, p_bonferroni, p_bh, pmi : numpy.ndarray, shape (V, C)
        NaN in the columns of labels absent from the data.
    flagged : numpy.ndarray of bool, shape (V, C)
        Significant under the chosen correction (adjusted p <= alpha).
    presence : scipy.sparse.csr_matrix, shape (n_examples, V)
        1 where an example holds a token.
    p0 : numpy.ndarray, shape (C,)
    """

    field: str
    vocabulary: np.ndarray
    n: np.ndarray
    n_by_label: np.ndarray
    p_hat: np.ndarray
    z: np.ndarray
    p_value: np.ndarray
    p_bonferroni: np.ndarray
    p_bh: np.ndarray
    pmi: np.ndarray
    flagged: np.ndarray
    presence: sp.csr_matrix
    p0: np.ndarray

    @property
    def n_tests(self) -> int:
        """Number of (token, label) tests of the field's family."""
        return int(np.isfinite(self.p_value).sum())


def field_atlas(
    texts: list[str],
    labels: np.ndarray,
    n_classes: int,
    *,
    field: str = "text",
    p0: str = "prior",
    alpha: float = 0.01,
    correction: str = "bonferroni",
    min_count: int = 5,
    bigrams: bool = False,
    lowercase: bool = True,
    stop_words: str | None = None,
    pmi_smoothing: float = 100.0,
) -> FieldAtlas:
    """Gardner's z, both corrections and Gururangan's PMI for every token of one field.

    Parameters are those of :class:`Atlas`.

    Examples
    --------
    >>> texts = ["no dog", "no cat", "a dog", "a cat"] * 10
    >>> fa = field_atlas(texts, np.array([1, 1, 0, 0] * 10), 2, min_count=1)
    >>> fa.vocabulary.tolist(), fa.flagged.tolist()
    (['a', 'cat', 'dog', 'no'], [[True, False], [False, False], [False, False], [False, True]])
    """
    counts, vocab = count_tokens(
        texts,
        ngram_range=(1, 2) if bigrams else (1, 1),
        lowercase=lowercase,
        stop_words=stop_words,
    )
    return atlas_from_counts(
        counts,
        vocab,
        labels,
        n_classes,
        field=field,
        p0=p0,
        alpha=alpha,
        correction=correction,
        min_count=min_count,
        pmi_smoothing=pmi_smoothing,
    )


def atlas_from_counts(
    counts: sp.csr_matrix,
    vocab: np.ndarray,
    labels: np.ndarray,
    n_classes: int,
    *,
    field: str = "text",
    p0: str = "prior",
    alpha: float = 0.01,
    correction: str = "bonferroni",
    min_count: int = 5,
    pmi_smoothing: float = 100.0,
) -> FieldAtlas:
    """:func:`field_atlas` from a count matrix (:func:`~.stats.count_tokens`), so one
    tokenisation serves the real labels and the shuffled-label control."""
    y = np.asarray(labels, dtype=np.int64)
    n_all, n_by_label_all = token_label_counts(counts, y, n_classes)
    keep = np.flatnonzero(n_all >= min_count)
    counts = counts[:, keep].tocsr()
    vocab, n, n_by_label = vocab[keep], n_all[keep], n_by_label_all[keep]
    prior = np.bincount(y, minlength=n_classes) / max(len(y), 1)
    seen = prior > 0
    null = np.where(seen, prior, np.nan) if p0 == "prior" else np.where(seen, 1.0 / n_classes, 0)
    null = np.where(seen, null, np.nan)
    shape = (len(vocab), n_classes)
    p_hat = np.full(shape, np.nan)
    z = np.full(shape, np.nan)
    p_value = np.full(shape, np.nan)
    p_bonf = np.full(shape, np.nan)
    p_bh = np.full(shape, np.nan)
    if len(vocab) and seen.sum() >= 2:
        ph, zz, pv = gardner_z(n, n_by_label[:, seen], null[seen])
        p_hat[:, seen], z[:, seen], p_value[:, seen] = ph, zz, pv
        bonf, bh = adjust_p(pv)
        p_bonf[:, seen], p_bh[:, seen] = bonf, bh
    adjusted = p_bonf if correction == "bonferroni" else p_bh
    flagged = np.nan_to_num(adjusted, nan=1.0) <= alpha
    # PMI counts word occurrences (Gururangan et al.), the z test counts examples.
    occ = np.asarray((counts.T @ _onehot(y, n_classes)).todense(), dtype=np.float64)
    pmi = smoothed_pmi(occ, pmi_smoothing) if len(vocab) else np.full(shape, np.nan)
    presence = counts.copy()
    presence.data = np.ones_like(presence.data)
    return FieldAtlas(
        field=field,
        vocabulary=vocab,
        n=n,
        n_by_label=n_by_label,
        p_hat=p_hat,
        z=z,
        p_value=p_value,
        p_bonferroni=p_bonf,
        p_bh=p_bh,
        pmi=pmi,
        flagged=flagged,
        presence=presence,
        p0=null,
    )


def _onehot(y: np.ndarray, n_classes: int) -> sp.csr_matrix:
    return sp.csr_matrix(
        (np.ones(len(y), dtype=np.int64), (np.arange(len(y)), y)), shape=(len(y), n_classes)
    )


def gold_cue(fa: FieldAtlas, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per example: the largest z of a flagged (token, gold label) pair it holds, and the token.

    0 and -1 where the example holds no token flagged for its own label.
    """
    score = np.zeros(len(y))
    token = np.full(len(y), -1, dtype=np.int64)
    weight = np.where(fa.flagged, np.nan_to_num(fa.z, nan=0.0), 0.0)
    for c in range(weight.shape[1]):
        rows = np.flatnonzero(y == c)
        if not len(rows) or not fa.flagged[:, c].any():
            continue
        m = fa.presence[rows].multiply(weight[:, c][None, :]).tocsr()
        best = np.asarray(m.max(axis=1).todense()).ravel()
        arg = np.asarray(m.argmax(axis=1)).ravel()
        score[rows] = best
        token[rows] = np.where(best > 0, arg, -1)
    return score, token


def token_table(fa: FieldAtlas, label_names: Sequence[str]) -> pd.DataFrame:
    """Every tested (token, label) of one field, long format: the atlas' full table.

    Columns as :func:`_record`'s keys (``field``, ``token``, ``label``, ``n``,
    ``n_label``, ``p_hat``, ``z``, ``p_value``, ``p_bonferroni``, ``p_bh``, ``pmi``,
    ``flagged``); labels absent from the data are left out. Saved by the analysis as
    ``tables/tokens.parquet``.

    Examples
    --------
    >>> texts = ["no dog", "no cat", "a dog", "a cat"] * 10
    >>> fa = field_atlas(texts, np.array([1, 1, 0, 0] * 10), 2, min_count=1)
    >>> t = token_table(fa, ["pos", "neg"])
    >>> t.loc[t.flagged, ["token", "label"]].values.tolist()
    [['a', 'pos'], ['no', 'neg']]
    """
    n_tokens, n_labels = fa.z.shape
    j = np.repeat(np.arange(n_tokens), n_labels)
    c = np.tile(np.arange(n_labels), n_tokens)
    present = np.isfinite(fa.p0)[c]
    j, c = j[present], c[present]
    return pd.DataFrame(
        {
            "field": pd.Series([fa.field] * len(j), dtype="string"),
            "token": pd.Series(fa.vocabulary[j].astype(str), dtype="string"),
            "label": pd.Categorical.from_codes(c, categories=list(label_names)),
            "n": fa.n[j].astype(np.int64),
            "n_label": fa.n_by_label[j, c].astype(np.int64),
            "p_hat": fa.p_hat[j, c],
            "z": fa.z[j, c],
            "p_value": fa.p_value[j, c],
            "p_bonferroni": fa.p_bonferroni[j, c],
            "p_bh": fa.p_bh[j, c],
            "pmi": fa.pmi[j, c],
            "flagged": fa.flagged[j, c],
        }
    )


def _record(fa: FieldAtlas, j: int, c: int, label_names: tuple[str, ...]) -> dict[str, Any]:
    return {
        "field": fa.field,
        "token": str(fa.vocabulary[j]),
        "label": label_names[c],
        "n": int(fa.n[j]),
        "n_label": int(fa.n_by_label[j, c]),
        "p_hat": float(fa.p_hat[j, c]),
        "z": float(fa.z[j, c]),
        "p_value": float(fa.p_value[j, c]),
        "p_bonferroni": float(fa.p_bonferroni[j, c]),
        "p_bh": float(fa.p_bh[j, c]),
        "pmi": float(fa.pmi[j, c]),
        "flagged": bool(fa.flagged[j, c]),
    }


def field_details(
    fa: FieldAtlas,
    texts: list[str],
    ids: Any,
    y: np.ndarray,
    names: tuple[str, ...],
    *,
    n_examples: int,
    top_k: int,
    max_table_tokens: int,
    max_plot_tokens: int,
) -> dict[str, Any]:
    """What the report shows of one field: top tokens per label by z (with examples) and
    by PMI, the flagged (token, label) pairs, and the points of the token plot."""
    csc = fa.presence.tocsc()

    def examples(j: int, c: int) -> list[dict[str, str]]:
        if not n_examples:
            return []
        rows = csc.indices[csc.indptr[j] : csc.indptr[j + 1]]
        rows = np.sort(rows[y[rows] == c])[:n_examples]
        return [{"id": str(ids[r]), "text": texts[r]} for r in rows]

    top: dict[str, list[dict[str, Any]]] = {}
    top_pmi: dict[str, list[dict[str, Any]]] = {}
    for c, label in enumerate(names):
        if not np.isfinite(fa.z[:, c]).any():
            continue
        # Ties in z (same n and count) are broken by the token, so the list is stable.
        order = np.lexsort((fa.vocabulary, -np.nan_to_num(fa.z[:, c], nan=-np.inf)))
        top[label] = [
            {**_record(fa, j, c, names), "examples": examples(j, c)} for j in order[:top_k]
        ]
        order = np.lexsort((fa.vocabulary, -np.nan_to_num(fa.pmi[:, c], nan=-np.inf)))
        top_pmi[label] = [_record(fa, j, c, names) for j in order[:top_k]]
    rows, cols = np.nonzero(fa.flagged)
    order = np.argsort(-fa.z[rows, cols], kind="stable")[:max_table_tokens]
    flagged = [_record(fa, int(rows[i]), int(cols[i]), names) for i in order]
    # The plot shows each token once, at its strongest label.
    best = np.nanargmax(np.nan_to_num(fa.z, nan=-np.inf), axis=1) if fa.z.size else []
    shown = np.argsort(-fa.n, kind="stable")[:max_plot_tokens]
    plot = {
        "n": fa.n[shown].astype(int).tolist(),
        "p_hat": [float(fa.p_hat[j, best[j]]) for j in shown],
        "z": [float(fa.z[j, best[j]]) for j in shown],
        "label": [names[best[j]] for j in shown],
        "token": [str(fa.vocabulary[j]) for j in shown],
        "flagged": [bool(fa.flagged[j, best[j]]) for j in shown],
    }
    return {
        "n_tested": len(fa.vocabulary),
        "n_tests": fa.n_tests,
        "p0": {names[c]: float(v) for c, v in enumerate(fa.p0) if np.isfinite(v)},
        "top": top,
        "top_pmi": top_pmi,
        "flagged": flagged,
        "plot": plot,
    }
