"""The artifact atlas: which words give the label away, per text field (issue 20, part 1).

For every text field (premise, hypothesis, sentence ...) and every token (optionally
bigram) of it, Gardner et al. (2021, "Competency Problems", Sec. 3-4) test whether the
label distribution of the examples holding the token departs from the null:
``z = (p_hat(y | token) - p0) / sqrt(p0 (1 - p0) / n)``, ``n`` the number of examples
holding the token. Beside z the atlas shows Gururangan et al.'s (2018, Sec. 3.1) smoothed
PMI of the same (token, label) pair and the examples behind it.

Deviations from the papers (docs/methods/atlas.md):

- ``p0`` is the label's prior in the data by default; Gardner et al. use the uniform
  ``1 / C`` (``p0="uniform"``), which on unbalanced data flags every frequent token of the
  majority label.
- p-values are one-sided (a token points *to* a label) from the normal approximation,
  exactly the paper's z; tokens held by fewer than ``min_count`` examples are not tested.
- Both Bonferroni (the paper) and Benjamini-Hochberg are computed over the tested
  (token, label) pairs of each field; ``correction`` says which one flags.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import scipy.sparse as sp

from spurious.analysis import AnalysisOutput, Requirements, VerdictScale, register_analysis
from spurious.context import RunContext
from spurious.data.dataset import Dataset
from spurious.detectors.atlas.stats import (
    adjust_p,
    count_tokens,
    gardner_z,
    smoothed_pmi,
    token_label_counts,
    wilson_interval,
)
from spurious.detectors.base import Detector
from spurious.exceptions import DetectorError, ParameterError
from spurious.utils.validation import Interval, StrOptions

#: Fewest examples the atlas runs on (below it no token can pass a corrected z test).
MIN_EXAMPLES = 10

__all__ = ["Atlas", "FieldAtlas", "atlas_from_counts", "field_atlas", "token_table"]


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


def _gold_cue(fa: FieldAtlas, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


@register_analysis
class Atlas(Detector):
    """Which tokens of which field give the label away (Gardner et al. 2021; Gururangan et al. 2018).

    Parameters
    ----------
    fields : list of str, str or None, default=None
        Text fields to map (``None``: every text field of the task; a string: one).
    p0 : {"prior", "uniform"}, default="prior"
        The null ``p(y | token)``: the label's share in the data, or ``1 / C`` as in
        Gardner et al. (equal on balanced data).
    alpha : float, default=0.01
        Significance level after correction (Gardner et al. use 0.01).
    correction : {"bonferroni", "bh"}, default="bonferroni"
        Which adjusted p-value flags a token: Bonferroni (family-wise error, the paper)
        or Benjamini-Hochberg (false discovery rate). Both are always reported.
    min_count : int, default=5
        Tokens held by fewer examples are not tested (they cannot reach significance
        after correction and would only enlarge the family).
    bigrams : bool, default=False
        Also test word bigrams.
    lowercase : bool, default=True
    stop_words : {"english"} or None, default=None
        Stop words are kept by default: "no", "not", "nobody" are in most stop lists.
    pmi_smoothing : float, default=100
        k of Gururangan et al.'s add-k smoothed PMI.
    top_k : int, default=10
        Tokens listed per (field, label).
    n_examples : int, default=2
        Example texts shown per listed token.
    max_table_tokens : int, default=500
        Flagged (token, label) pairs kept in the details per field (highest z first).
    max_plot_tokens : int, default=3000
        Tokens drawn in the z-vs-n plot per field (the most frequent ones).
    shuffled_control : bool, default=True
        Also run the tests once with the labels permuted (a control that should flag
        about nothing; reported beside the real counts).
    random_state : int or None, default=0
        Seeds the permutation of the shuffled-label control.
    """

    name: ClassVar[str] = "atlas"
    description: ClassVar[str] = (
        "Tokens that give the label away, per text field: Gardner et al.'s z test with "
        "Bonferroni and BH, Gururangan et al.'s smoothed PMI; no model."
    )
    requires: ClassVar[Requirements] = Requirements(labels=True)
    # Model-free and seconds long: its findings lead the audit and the report.
    audit_order: ClassVar[int] = 10
    fast_params: ClassVar[dict[str, Any]] = {"min_count": 3}
    profiles: ClassVar[dict[str, dict[str, Any]]] = {"quick": {}, "full": {}}
    verdict_scale: ClassVar[VerdictScale] = VerdictScale(
        0.01,
        0.05,
        0.25,
        {
            "none": "no token gives the label away",
            "low": "a few examples hold a label-revealing token",
            "moderate": "label-revealing tokens in many examples",
            "high": "label-revealing tokens in a large share of the examples",
        },
    )
    metric_docs: ClassVar[dict[str, str]] = {
        "<field>_n_tested": "Tokens of the field held by >= min_count examples (tested).",
        "<field>_n_significant_bonferroni": "Tokens significant for >= 1 label, Bonferroni.",
        "<field>_n_significant_bh": "Tokens significant for >= 1 label, Benjamini-Hochberg.",
        "<field>_n_flagged": "Tokens flagged for >= 1 label under the chosen correction.",
        "<field>_share_flagged": "Share of examples holding >= 1 flagged token of the field.",
        "<field>_share_gold_cue": "Share of examples holding a token flagged for their label.",
        "share_flagged": "Share of examples holding >= 1 flagged token (any field), [0, 1].",
        "share_flagged_ci_low / _ci_high": "95% Wilson interval of share_flagged.",
        "share_gold_cue": "Share of examples holding a token flagged for their own label.",
        "n_flagged_tokens": "Flagged tokens summed over fields.",
        "<field>_n_flagged_shuffled": "Tokens flagged with the labels shuffled once (control).",
        "n_flagged_tokens_shuffled": "Flagged tokens over fields with shuffled labels; ~0 "
        "when the corrections hold (control).",
        "global_p_value": "Smallest adjusted p-value over the fields' families, times the "
        "number of fields (a test that some token departs from the null), [0, 1].",
    }
    score_columns: ClassVar[dict[str, str]] = {
        "id": "Example id.",
        "<field>_n_flagged": "Flagged tokens (any label) the example holds in the field.",
        "atlas_token": "field:token of the strongest flagged token for the example's own "
        "label ('' when none).",
        "atlas_score": "z of that token for the example's label (0 when none); larger = "
        "the label is more visible in one word.",
        "is_atlas_issue": "The example holds a token flagged for its own label.",
    }
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "fields": [list, tuple, str, None],
        "p0": [StrOptions({"prior", "uniform"})],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "correction": [StrOptions({"bonferroni", "bh"})],
        "min_count": [Interval(Integral, 1, None, closed="left")],
        "bigrams": ["boolean"],
        "lowercase": ["boolean"],
        "stop_words": [StrOptions({"english"}), None],
        "pmi_smoothing": [Interval(Real, 0, None, closed="left")],
        "top_k": [Interval(Integral, 1, None, closed="left")],
        "n_examples": [Interval(Integral, 0, None, closed="left")],
        "max_table_tokens": [Interval(Integral, 0, None, closed="left")],
        "max_plot_tokens": [Interval(Integral, 0, None, closed="left")],
        "shuffled_control": ["boolean"],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        fields: list[str] | None = None,
        p0: str = "prior",
        alpha: float = 0.01,
        correction: str = "bonferroni",
        min_count: int = 5,
        bigrams: bool = False,
        lowercase: bool = True,
        stop_words: str | None = None,
        pmi_smoothing: float = 100.0,
        top_k: int = 10,
        n_examples: int = 2,
        max_table_tokens: int = 500,
        max_plot_tokens: int = 3000,
        shuffled_control: bool = True,
        random_state: int | None = 0,
    ) -> None:
        self.fields = fields
        self.p0 = p0
        self.alpha = alpha
        self.correction = correction
        self.min_count = min_count
        self.bigrams = bigrams
        self.lowercase = lowercase
        self.stop_words = stop_words
        self.pmi_smoothing = pmi_smoothing
        self.top_k = top_k
        self.n_examples = n_examples
        self.max_table_tokens = max_table_tokens
        self.max_plot_tokens = max_plot_tokens
        self.shuffled_control = shuffled_control
        self.random_state = random_state

    def uses_eval(self) -> bool:
        return True  # the atlas maps the judged split (the evaluation split when given)

    def _fields(self, ds: Dataset) -> list[str]:
        known = list(ds.task.text_fields)
        if self.fields is None:
            return known
        # One name is one field (``--set atlas.fields=hypothesis`` gives a string).
        fields = [self.fields] if isinstance(self.fields, str) else list(self.fields)
        bad = [f for f in fields if f not in known]
        if bad or not fields:
            raise ParameterError(
                f"The 'fields' parameter of Atlas must be a non-empty list of text fields of "
                f"task {ds.task.name!r} ({known}). Got {fields!r} instead."
            )
        return list(dict.fromkeys(fields))

    def check(self, context: RunContext) -> None:
        self._fields(context.target)

    def _run(self, ctx: RunContext) -> AnalysisOutput:
        ds = ctx.target
        if len(ds) < MIN_EXAMPLES:
            raise DetectorError(
                f"The atlas needs at least {MIN_EXAMPLES} labelled examples for its z tests "
                f"(a normal approximation); got {len(ds)}."
            )
        y = ds.labels
        names = tuple(ds.label_names)
        fields = self._fields(ds)
        scores = pd.DataFrame({"id": ds.ids})
        metrics: dict[str, float] = {}
        details: dict[str, Any] = {
            "fields": fields,
            "label_names": list(names),
            "params": {
                "p0": self.p0,
                "alpha": self.alpha,
                "correction": self.correction,
                "min_count": self.min_count,
                "tokenizer": "scikit-learn CountVectorizer, lowercase="
                f"{self.lowercase}, stop words {'removed' if self.stop_words else 'kept'}, "
                f"{'uni+bigrams' if self.bigrams else 'unigrams'}, n't split off",
            },
            "per_field": {},
        }
        any_flag = np.zeros(len(ds), dtype=bool)
        best_score = np.zeros(len(ds))
        best_token = np.full(len(ds), "", dtype=object)
        global_p = 1.0
        # The shuffled-label control: the same tests on one permutation of the labels
        # (the same permutation for every field). It should flag ~nothing.
        y_null = np.random.default_rng(self.random_state).permutation(y)
        n_null = 0
        token_tables: list[pd.DataFrame] = []
        for field in fields:
            texts = ds.texts(field)
            counts, vocab = count_tokens(
                texts,
                ngram_range=(1, 2) if self.bigrams else (1, 1),
                lowercase=self.lowercase,
                stop_words=self.stop_words,
            )
            kw = {
                "field": field,
                "p0": self.p0,
                "alpha": self.alpha,
                "correction": self.correction,
                "min_count": self.min_count,
                "pmi_smoothing": self.pmi_smoothing,
            }
            fa = atlas_from_counts(counts, vocab, y, ds.n_classes, **kw)
            if self.shuffled_control:
                null = atlas_from_counts(counts, vocab, y_null, ds.n_classes, **kw)
                metrics[f"{field}_n_flagged_shuffled"] = int(null.flagged.any(axis=1).sum())
                n_null += metrics[f"{field}_n_flagged_shuffled"]
            flag_tok = fa.flagged.any(axis=1)
            n_flag_ex = np.asarray(fa.presence @ flag_tok.astype(np.int64)).ravel()
            scores[f"{field}_n_flagged"] = n_flag_ex.astype(np.int64)
            any_flag |= n_flag_ex > 0
            cue, tok = _gold_cue(fa, y)
            better = cue > best_score
            best_score = np.where(better, cue, best_score)
            best_token[better] = [f"{field}:{fa.vocabulary[t]}" for t in tok[better]]
            adjusted = fa.p_bonferroni if self.correction == "bonferroni" else fa.p_bh
            if np.isfinite(adjusted).any():
                global_p = min(global_p, float(np.nanmin(adjusted)))
            metrics[f"{field}_n_tested"] = len(fa.vocabulary)
            metrics[f"{field}_n_significant_bonferroni"] = int(
                (np.nan_to_num(fa.p_bonferroni, nan=1.0) <= self.alpha).any(axis=1).sum()
            )
            metrics[f"{field}_n_significant_bh"] = int(
                (np.nan_to_num(fa.p_bh, nan=1.0) <= self.alpha).any(axis=1).sum()
            )
            metrics[f"{field}_n_flagged"] = int(flag_tok.sum())
            metrics[f"{field}_share_flagged"] = float((n_flag_ex > 0).mean()) if len(ds) else 0.0
            metrics[f"{field}_share_gold_cue"] = float((cue > 0).mean()) if len(ds) else 0.0
            details["per_field"][field] = self._field_details(fa, texts, ds, y, names)
            token_tables.append(token_table(fa, names))
        n = len(ds)
        share = float(any_flag.mean()) if n else 0.0
        lo, hi = wilson_interval(int(any_flag.sum()), n)
        metrics.update(
            share_flagged=share,
            share_flagged_ci_low=lo,
            share_flagged_ci_high=hi,
            share_gold_cue=float((best_score > 0).mean()) if n else 0.0,
            n_flagged_tokens=sum(metrics[f"{f}_n_flagged"] for f in fields),
            global_p_value=min(1.0, global_p * len(fields)),
        )
        if self.shuffled_control:
            metrics["n_flagged_tokens_shuffled"] = n_null
        scores["atlas_token"] = best_token
        scores["atlas_score"] = best_score
        scores["is_atlas_issue"] = best_score > 0
        tables = {"tokens": pd.concat(token_tables, ignore_index=True)} if token_tables else {}
        per_field = ", ".join(
            f"{f} {metrics[f'{f}_n_flagged']}/{metrics[f'{f}_n_tested']}" for f in fields
        )
        summary = (
            f"flagged tokens ({self.correction}, alpha={self.alpha}): {per_field}; "
            f"{share:.1%} of examples hold one"
            + (f"; {n_null} with shuffled labels" if self.shuffled_control else "")
        )
        return AnalysisOutput(
            scores=scores, metrics=metrics, summary=summary, details=details, tables=tables
        )

    def _field_details(
        self,
        fa: FieldAtlas,
        texts: list[str],
        ds: Dataset,
        y: np.ndarray,
        names: tuple[str, ...],
    ) -> dict[str, Any]:
        csc = fa.presence.tocsc()
        ids = ds.ids

        def examples(j: int, c: int) -> list[dict[str, str]]:
            if not self.n_examples:
                return []
            rows = csc.indices[csc.indptr[j] : csc.indptr[j + 1]]
            rows = np.sort(rows[y[rows] == c])[: self.n_examples]
            return [{"id": str(ids[r]), "text": texts[r]} for r in rows]

        top: dict[str, list[dict[str, Any]]] = {}
        top_pmi: dict[str, list[dict[str, Any]]] = {}
        for c, label in enumerate(names):
            if not np.isfinite(fa.z[:, c]).any():
                continue
            # Ties in z (same n and count) are broken by the token, so the list is stable.
            order = np.lexsort((fa.vocabulary, -np.nan_to_num(fa.z[:, c], nan=-np.inf)))
            top[label] = [
                {**_record(fa, j, c, names), "examples": examples(j, c)}
                for j in order[: self.top_k]
            ]
            order = np.lexsort((fa.vocabulary, -np.nan_to_num(fa.pmi[:, c], nan=-np.inf)))
            top_pmi[label] = [_record(fa, j, c, names) for j in order[: self.top_k]]
        rows, cols = np.nonzero(fa.flagged)
        order = np.argsort(-fa.z[rows, cols], kind="stable")[: self.max_table_tokens]
        flagged = [_record(fa, int(rows[i]), int(cols[i]), names) for i in order]
        # The plot shows each token once, at its strongest label.
        best = np.nanargmax(np.nan_to_num(fa.z, nan=-np.inf), axis=1) if fa.z.size else []
        shown = np.argsort(-fa.n, kind="stable")[: self.max_plot_tokens]
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

    def headline(self, result) -> dict[str, Any]:
        m = result.metrics
        share = m.get("share_flagged", float("nan"))
        scale = dataclasses.replace(self.verdict_scale, alpha=self.alpha)
        fields = (result.details or {}).get("fields") or []
        most = max(fields, key=lambda f: m.get(f"{f}_n_flagged", 0), default=None)
        text = f"{share:.1%} of examples hold a label-revealing token" + (
            f"; most in the {most} ({int(m.get(f'{most}_n_flagged', 0))} tokens)" if most else ""
        )
        return scale.headline(
            "token artifacts",
            share,
            text,
            interval=(m.get("share_flagged_ci_low"), m.get("share_flagged_ci_high")),
            p_value=m.get("global_p_value"),
            null="every token's label distribution equals the prior (corrected)",
            measured="share of examples holding a token flagged by Gardner et al.'s z test",
        )
