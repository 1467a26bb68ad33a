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

This module holds the registered :class:`Atlas`; one field's statistics and details are
computed in :mod:`~spurious.detectors.atlas.fields` (whose names are importable from
here too).
"""

from __future__ import annotations

import dataclasses
from numbers import Integral, Real
from typing import Any, ClassVar, TypedDict

import numpy as np
import pandas as pd

from spurious.analysis import AnalysisOutput, Requirements, VerdictScale, register_analysis
from spurious.context import RunContext
from spurious.data.dataset import Dataset
from spurious.detectors.atlas.fields import (
    FieldAtlas,
    atlas_from_counts,
    field_atlas,
    field_details,
    gold_cue,
    token_table,
)
from spurious.detectors.atlas.stats import count_tokens, wilson_interval
from spurious.detectors.base import Detector
from spurious.exceptions import AnalysisError, ParameterError
from spurious.results import Headline
from spurious.utils.validation import Interval, StrOptions

#: Fewest examples the atlas runs on (below it no token can pass a corrected z test).
MIN_EXAMPLES = 10

__all__ = ["Atlas", "FieldAtlas", "atlas_from_counts", "field_atlas", "token_table"]


class _CountOptions(TypedDict):
    """The keyword arguments of :func:`atlas_from_counts` that one field's real-label and
    shuffled-label atlases share."""

    field: str
    p0: str
    alpha: float
    correction: str
    min_count: int
    pmi_smoothing: float


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
            raise AnalysisError(
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
            fa, null = self._atlases(texts, field, y, y_null, ds.n_classes)
            if null is not None:
                n_shuffled = int(null.flagged.any(axis=1).sum())
                metrics[f"{field}_n_flagged_shuffled"] = n_shuffled
                n_null += n_shuffled
            # numpy's stubs type any(axis=1) as scalar or array; on 2-d flags it is an array,
            # which asarray returns as it is.
            flag_tok = np.asarray(fa.flagged.any(axis=1))
            n_flag_ex = np.asarray(fa.presence @ flag_tok.astype(np.int64)).ravel()
            scores[f"{field}_n_flagged"] = n_flag_ex.astype(np.int64)
            any_flag |= n_flag_ex > 0
            cue, tok = gold_cue(fa, y)
            better = cue > best_score
            best_score = np.where(better, cue, best_score)
            best_token[better] = [f"{field}:{fa.vocabulary[t]}" for t in tok[better]]
            adjusted = fa.p_bonferroni if self.correction == "bonferroni" else fa.p_bh
            if np.isfinite(adjusted).any():
                global_p = min(global_p, float(np.nanmin(adjusted)))
            metrics.update(self._field_metrics(fa, flag_tok, n_flag_ex, cue, len(ds)))
            details["per_field"][field] = field_details(
                fa,
                texts,
                ds.ids,
                y,
                names,
                n_examples=self.n_examples,
                top_k=self.top_k,
                max_table_tokens=self.max_table_tokens,
                max_plot_tokens=self.max_plot_tokens,
            )
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

    def _atlases(
        self, texts: list[str], field: str, y: np.ndarray, y_null: np.ndarray, n_classes: int
    ) -> tuple[FieldAtlas, FieldAtlas | None]:
        """The field's atlas, and the same on the shuffled labels (``shuffled_control``)."""
        counts, vocab = count_tokens(
            texts,
            ngram_range=(1, 2) if self.bigrams else (1, 1),
            lowercase=self.lowercase,
            stop_words=self.stop_words,
        )
        kw: _CountOptions = {
            "field": field,
            "p0": self.p0,
            "alpha": self.alpha,
            "correction": self.correction,
            "min_count": self.min_count,
            "pmi_smoothing": self.pmi_smoothing,
        }
        fa = atlas_from_counts(counts, vocab, y, n_classes, **kw)
        if not self.shuffled_control:
            return fa, None
        return fa, atlas_from_counts(counts, vocab, y_null, n_classes, **kw)

    def _field_metrics(
        self,
        fa: FieldAtlas,
        flag_tok: np.ndarray,
        n_flag_ex: np.ndarray,
        cue: np.ndarray,
        n: int,
    ) -> dict[str, float]:
        """``<field>_*`` metrics: tokens tested, significant by each correction, flagged,
        and the shares of examples holding a flagged token / a cue for their label."""
        field = fa.field
        return {
            f"{field}_n_tested": len(fa.vocabulary),
            f"{field}_n_significant_bonferroni": int(
                (np.nan_to_num(fa.p_bonferroni, nan=1.0) <= self.alpha).any(axis=1).sum()
            ),
            f"{field}_n_significant_bh": int(
                (np.nan_to_num(fa.p_bh, nan=1.0) <= self.alpha).any(axis=1).sum()
            ),
            f"{field}_n_flagged": int(flag_tok.sum()),
            f"{field}_share_flagged": float((n_flag_ex > 0).mean()) if n else 0.0,
            f"{field}_share_gold_cue": float((cue > 0).mean()) if n else 0.0,
        }

    def headline(self, result) -> Headline:
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
