"""Model-free association of heuristics and simple properties with the gold label (issue 20, part 2).

Every registered heuristic of the task (lexical overlap, negation, hypothesis length,
subsequence ...) and three simple properties of every text field (length in words,
punctuation marks, digits) is a 1-D feature x. Without any model, the analysis asks how
much x alone tells about the gold label y:

- **effect** (comparable across features): the out-of-fold accuracy of a *binned
  classifier* (x cut at its quantiles into at most ``n_bins`` bins, each bin predicting the
  majority label of its training fold) minus the out-of-fold accuracy of the majority
  guess; in accuracy points, 0 = no information. Beside it, the plug-in mutual
  information I(bin; y) in bits.
- **p-value**: a permutation test of I(bin; y) (labels permuted, bins fixed),
  ``(1 + #{I_perm >= I}) / (1 + B)``; **Benjamini-Hochberg** over all features.
- **per-label breakdown**: p(y | bin) for every bin, and which label the lowest and the
  highest values point to (the label whose share rises most above its prior).

Gururangan et al. (2018, Sec. 3) report these associations on SNLI as tables of
conditional label shares (negation -> contradiction; long hypotheses -> neutral, short
-> entailment); McCoy et al. (2019) name lexical overlap -> entailment. See
docs/methods/associations.md.
"""

from __future__ import annotations

import dataclasses
import logging
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold

from spurious.analysis import AnalysisOutput, Requirements, VerdictScale, register_analysis
from spurious.context import RunContext
from spurious.data.dataset import Dataset
from spurious.detectors.atlas.stats import adjust_p, wilson_interval
from spurious.detectors.base import Detector
from spurious.exceptions import DetectorError
from spurious.heuristics.base import words
from spurious.utils.validation import Interval, StrOptions

logger = logging.getLogger(__name__)

__all__ = [
    "Associations",
    "BinnedAssociation",
    "bin_feature",
    "binned_association",
    "permuted_tables",
    "text_properties",
]

#: Fewest labelled examples (five folds need a few per label).
MIN_EXAMPLES = 20

_PUNCT = r"[^\w\s]"
_DIGIT = r"\d"


def text_properties(dataset: Dataset, fields: list[str] | None = None) -> pd.DataFrame:
    """Length in words, punctuation marks and digits of every text field.

    Words are those of the heuristics (:func:`spurious.heuristics.base.words`).

    Columns ``<field>_n_words``, ``<field>_n_punct``, ``<field>_n_digits`` (float64).

    Examples
    --------
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> ds = make_nli_artifacts(n=3, random_state=0).dataset
    >>> text_properties(ds, ["hypothesis"]).columns.tolist()
    ['hypothesis_n_words', 'hypothesis_n_punct', 'hypothesis_n_digits']
    """
    out = {}
    for field in fields or list(dataset.task.text_fields):
        s = pd.Series(dataset.texts(field), dtype=object).fillna("").astype(str)
        # The heuristics' tokenizer ("didn't" -> "did", "n't"), so hypothesis_n_words
        # equals hypothesis_length and is tested once.
        out[f"{field}_n_words"] = np.array([len(words(t)) for t in s], dtype=np.float64)
        out[f"{field}_n_punct"] = s.str.count(_PUNCT).astype(np.float64)
        out[f"{field}_n_digits"] = s.str.count(_DIGIT).astype(np.float64)
    return pd.DataFrame(out)


def null_spans(dataset: Dataset, random_state: int | None = 0) -> Dataset:
    """A copy of a QA dataset whose answer is a random span of the same context.

    The span has as many words as the first gold answer and starts at a word drawn
    uniformly among the other positions where it fits; it is the null of the QA
    associations: a heuristic that tells gold answers from such spans is a shortcut a
    model can take without reading the question's meaning. Rows without an answer keep
    none.

    Examples
    --------
    >>> frame = pd.DataFrame({"question": ["Who left?"], "context": ["Ann met Bob. Bob left."],
    ...                       "answers": [["Bob"]], "answer_starts": [[8]]})
    >>> ds = Dataset.from_frame(frame, "qa")
    >>> span = null_spans(ds).frame.iloc[0]
    >>> span["answers"][0] != "Bob" or span["answer_starts"][0] != 8
    True
    """
    from spurious.heuristics.base import word_spans

    rng = np.random.default_rng(random_state)
    frame = dataset.frame.copy()
    spans_of: dict[str, list[tuple[str, int, int]]] = {}
    new_answers, new_starts = [], []
    for context, answers, starts in zip(
        frame["context"],
        frame["answers"],
        frame["answer_starts"] if "answer_starts" in frame else [None] * len(frame),
        strict=True,
    ):
        answers = list(answers) if isinstance(answers, list | tuple | np.ndarray) else []
        starts = list(starts) if isinstance(starts, list | tuple | np.ndarray) else []
        spans = spans_of.setdefault(context, word_spans(context))
        k = max(1, len(words(answers[0]))) if answers else 0
        n_pos = len(spans) - k + 1
        if not answers or n_pos < 1:
            new_answers.append([])
            new_starts.append([])
            continue
        gold = starts[0] if starts else context.find(answers[0])
        options = [j for j in range(n_pos) if spans[j][1] != gold] or list(range(n_pos))
        j = options[int(rng.integers(len(options)))]
        begin, end = spans[j][1], spans[j + k - 1][2]
        new_answers.append([context[begin:end]])
        new_starts.append([begin])
    frame["answers"] = new_answers
    frame["answer_starts"] = new_starts
    return Dataset.from_frame(frame, "qa", name=f"{dataset.name}-null-spans")


def _relative_position(dataset: Dataset) -> np.ndarray:
    """Start of the first gold answer as a share of the context's length (NaN without)."""
    out = np.full(len(dataset), np.nan)
    f = dataset.frame
    for i, (context, starts) in enumerate(zip(f["context"], f["answer_starts"], strict=True)):
        if isinstance(starts, list | tuple | np.ndarray) and len(starts) and len(context):
            out[i] = float(starts[0]) / len(context)
    return out


def bin_feature(x: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Quantile bins of ``x`` (labels are not used); NaN gets a bin of its own (the last).

    A feature with few distinct values gets one bin per value; ties never straddle a bin
    edge. Returns the bin index per row and the inner edges (bin b holds
    ``edges[b-1] <= x < edges[b]``).

    Examples
    --------
    >>> bins, edges = bin_feature(np.array([0, 0, 0, 1, 2, np.nan]), 5)
    >>> bins.tolist(), edges.tolist()
    ([0, 0, 0, 1, 2, 3], [1.0, 2.0])
    """
    x = np.asarray(x, dtype=np.float64)
    ok = np.isfinite(x)
    if not ok.any():
        return np.zeros(len(x), dtype=np.int64), np.array([])
    values = np.unique(x[ok])
    if len(values) <= n_bins:
        edges = values[1:]
    else:
        qs = np.quantile(x[ok], np.linspace(0, 1, n_bins + 1)[1:-1], method="higher")
        edges = np.unique(qs)
        # An edge at the minimum would leave bin 0 empty: cut just above it instead.
        edges = edges[edges > values[0]]
    bins = np.searchsorted(edges, x, side="right").astype(np.int64)
    bins[~ok] = len(edges) + 1
    return bins, edges


class BinnedAssociation:
    """Out-of-fold binned-classifier accuracy of one feature, with its permutation test.

    Attributes
    ----------
    accuracy, majority, effect : float
        Out-of-fold accuracy of the binned classifier, of the majority guess, and the
        difference (the effect).
    effect_interval : (float, float)
        95% Wilson interval of the accuracy minus the majority rate (the majority rate
        held fixed).
    mutual_information : float
        I(bin; y) in bits (plug-in, all rows).
    p_value : float
        Permutation p-value of I(bin; y).
    table : numpy.ndarray, shape (n_bins, C)
        Counts of (bin, label) over all rows.
    correct : numpy.ndarray of bool
        Per example: the out-of-fold binned prediction is the gold label.
    p_gold : numpy.ndarray
        Per example: p(gold | its bin) estimated on the other folds.
    """

    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)


def _oof(codes_by_fold: np.ndarray, n_folds: int, n_bins: int, n_classes: int) -> np.ndarray:
    """Fold tables (B, F, n_bins, C) from flat codes; helper of :func:`binned_association`."""
    size = n_folds * n_bins * n_classes
    b = codes_by_fold.shape[0]
    flat = codes_by_fold + (np.arange(b)[:, None] * size)
    tables = np.bincount(flat.ravel(), minlength=b * size)
    return tables.reshape(b, n_folds, n_bins, n_classes)


def _accuracy_gain(fold_tables: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Out-of-fold correct counts of the binned and majority classifiers; per-bin picks."""
    total = fold_tables.sum(axis=1, keepdims=True)
    train = total - fold_tables  # (B, F, bins, C): everything but the fold
    train_labels = train.sum(axis=2)  # (B, F, C)
    majority = train_labels.argmax(axis=-1)  # (B, F)
    pred = train.argmax(axis=-1)  # (B, F, bins); ties -> lower label id
    unseen = train.sum(axis=-1) == 0
    pred = np.where(unseen, majority[..., None], pred)
    hit = np.take_along_axis(fold_tables, pred[..., None], axis=-1)[..., 0].sum(axis=(1, 2))
    maj_hit = np.take_along_axis(fold_tables.sum(axis=2), majority[..., None], axis=-1)
    return hit, maj_hit[..., 0].sum(axis=1), pred


def binned_association(
    x: np.ndarray,
    y: np.ndarray,
    n_classes: int,
    folds: np.ndarray,
    *,
    n_bins: int = 10,
    n_permutations: int = 1000,
    random_state: int | None = 0,
) -> BinnedAssociation:
    """Effect, mutual information and permutation p-value of one 1-D feature.

    Parameters
    ----------
    x : numpy.ndarray of float, shape (n,)
        The feature (NaN allowed: its own bin).
    y : numpy.ndarray of int, shape (n,)
    n_classes : int
    folds : numpy.ndarray of int, shape (n,)
        Fold of every row (0 .. F-1).
    n_bins : int
        At most this many quantile bins (plus one for NaN).
    n_permutations : int
        Label permutations of the test.
    random_state : int or None
        Seeds the permutation tables (:func:`permuted_tables`).

    Returns
    -------
    BinnedAssociation

    Examples
    --------
    A feature equal to the label is perfectly informative; noise is not.

    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 400); folds = np.arange(400) % 5
    >>> a = binned_association(y.astype(float), y, 2, folds, n_permutations=99)
    >>> round(a.accuracy, 3), a.p_value
    (1.0, 0.01)
    >>> b = binned_association(rng.random(400), y, 2, folds, n_permutations=99)
    >>> abs(b.effect) < 0.05
    True
    """
    y = np.asarray(y, dtype=np.int64)
    n = len(y)
    bins, edges = bin_feature(x, n_bins)
    nb = int(bins.max()) + 1
    n_folds = int(folds.max()) + 1
    base = (folds.astype(np.int64) * nb + bins) * n_classes
    fold_tables = _oof((base + y)[None, :], n_folds, nb, n_classes)
    hit, maj_hit, pred = _accuracy_gain(fold_tables)
    accuracy, majority = float(hit[0]) / n, float(maj_hit[0]) / n
    effect = accuracy - majority
    # Per example: correctness and p(gold | bin) from the other folds.
    train = fold_tables.sum(axis=1, keepdims=True) - fold_tables
    correct = pred[0, folds, bins] == y
    row_train = train[0, folds, bins]  # (n, C)
    tot = row_train.sum(axis=1)
    p_gold = np.where(tot > 0, row_train[np.arange(n), y] / np.maximum(tot, 1), np.nan)
    table = fold_tables[0].sum(axis=0)
    mi = _mutual_information(table)
    # The statistic is I(bin; y) on all rows: it sees any change of the label shares
    # across bins, also one that moves no bin's majority (which the accuracy cannot see;
    # the accuracy stays the effect size). Under a random permutation of the labels with
    # the bins fixed, the bin x label table is a random table with the same margins:
    # drawn bin by bin from the multivariate hypergeometric law, so the cost does not
    # grow with n.
    mi_perm = _mutual_information(
        permuted_tables(table.sum(axis=1), table.sum(axis=0), n_permutations, random_state)
    )
    exceed = int((mi_perm >= mi - 1e-12).sum())
    p_value = (1 + exceed) / (1 + n_permutations)
    lo, hi = wilson_interval(int(hit[0]), n)
    return BinnedAssociation(
        accuracy=accuracy,
        majority=majority,
        effect=effect,
        effect_interval=(lo - majority, hi - majority),
        mutual_information=mi,
        p_value=float(p_value),
        table=table,
        edges=edges,
        has_nan_bin=bool((bins == len(edges) + 1).any()),
        correct=correct,
        p_gold=p_gold,
    )


def permuted_tables(
    bin_sizes: np.ndarray, label_counts: np.ndarray, n_permutations: int, random_state: Any
) -> np.ndarray:
    """Bin x label tables of ``n_permutations`` random permutations of the labels.

    Permuting the labels while the bins stay fixed gives bin b a uniform random subset of
    size ``bin_sizes[b]`` of the labels left by the bins before it: its label counts are
    a multivariate hypergeometric draw. So the tables are drawn directly, in
    O(n_permutations x bins) draws instead of O(n_permutations x n).

    Returns
    -------
    numpy.ndarray of int64, shape (n_permutations, n_bins, n_labels)

    Examples
    --------
    >>> t = permuted_tables(np.array([3, 2]), np.array([4, 1]), 100, 0)
    >>> t.shape, bool((t.sum(axis=2) == [3, 2]).all()), bool((t.sum(axis=1) == [4, 1]).all())
    ((100, 2, 2), True, True)
    """
    rng = np.random.default_rng(random_state)
    sizes = np.asarray(bin_sizes, dtype=np.int64)
    counts = np.asarray(label_counts, dtype=np.int64)
    out = np.zeros((n_permutations, len(sizes), len(counts)), dtype=np.int64)
    for p in range(n_permutations):
        pool = counts.copy()
        for b, size in enumerate(sizes[:-1]):
            draw = rng.multivariate_hypergeometric(pool, int(size), method="marginals")
            out[p, b] = draw
            pool -= draw
        out[p, -1] = pool
    return out


def _mutual_information(table: np.ndarray) -> Any:
    """I(bin; y) in bits of a count table (bins x labels), or of a stack of them."""
    t = np.asarray(table, dtype=np.float64)
    n = t.sum(axis=(-2, -1), keepdims=True)
    pxy = t / np.maximum(n, 1e-300)
    px = pxy.sum(axis=-1, keepdims=True)
    py = pxy.sum(axis=-2, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(pxy > 0, pxy * np.log2(pxy / (px * py)), 0.0)
    mi = terms.sum(axis=(-2, -1))
    return float(mi) if mi.ndim == 0 else mi


def _bin_names(edges: np.ndarray, has_nan: bool, n_bins: int) -> list[str]:
    def fmt(v: float) -> str:
        return f"{v:.3g}"

    names = []
    bounds = [-np.inf, *edges.tolist(), np.inf]
    for b in range(len(edges) + 1):
        lo, hi = bounds[b], bounds[b + 1]
        if np.isinf(lo):
            names.append(f"< {fmt(hi)}" if not np.isinf(hi) else "all")
        elif np.isinf(hi):
            names.append(f">= {fmt(lo)}")
        else:
            names.append(f"[{fmt(lo)}, {fmt(hi)})")
    if has_nan or n_bins > len(names):
        names.append("missing")
    return names[:n_bins]


@register_analysis
class Associations(Detector):
    """Which heuristics and simple properties predict the gold label, without a model.

    Parameters
    ----------
    heuristics : list of str or "auto", default="auto"
        Registered heuristics to test (``"auto"``: every heuristic of the task that needs
        neither a training split nor spaCy).
    properties : bool, default=True
        Also test length in words, punctuation marks and digits of every text field.
    n_bins : int, default=10
        Quantile bins of the binned classifier (a feature with fewer values gets one bin
        per value).
    n_folds : int, default=5
        Folds of the out-of-fold accuracy (stratified by label).
    n_permutations : int, default=1000
        Label permutations of each feature's test (the smallest p-value is 1 / (B + 1)).
    alpha : float, default=0.05
        Level of the Benjamini-Hochberg-adjusted p-values that flag a feature.
    issue_margin : float, default=0.1
        An example is an issue when a flagged feature's bin raises p(gold label) by at
        least this much over the label's prior.
    random_state : int or None, default=0
        Seeds the folds and the permutations.
    """

    name: ClassVar[str] = "associations"
    description: ClassVar[str] = (
        "Heuristics (overlap, negation, length ...) and simple properties against the gold "
        "label: out-of-fold binned accuracy over the majority, permutation p, BH; no model."
    )
    # QA has no class label: there the "label" is gold answer vs a random span (see
    # null_spans), so the analysis needs labels only on classification tasks.
    requires: ClassVar[Requirements] = Requirements()
    # Model-free: right after the atlas.
    audit_order: ClassVar[int] = 11
    fast_params: ClassVar[dict[str, Any]] = {"n_permutations": 99, "n_bins": 5}
    profiles: ClassVar[dict[str, dict[str, Any]]] = {
        "quick": {"n_permutations": 200},
        "full": {},
    }
    verdict_scale: ClassVar[VerdictScale] = VerdictScale(
        0.01,
        0.03,
        0.10,
        {
            "none": "no heuristic or property gives the label away",
            "low": "a simple property predicts the label slightly",
            "moderate": "a simple property predicts the label",
            "high": "a simple property predicts the label strongly",
        },
    )
    metric_docs: ClassVar[dict[str, str]] = {
        "n_features": "Features tested (heuristics + properties per field).",
        "n_significant": "Features with BH-adjusted permutation p <= alpha.",
        "<feature>_effect": "Out-of-fold binned accuracy minus majority accuracy, [-1, 1].",
        "<feature>_mi_bits": "I(bin; label) in bits, >= 0.",
        "<feature>_p_value": "Permutation p-value of I(bin; label), (0, 1].",
        "<feature>_p_bh": "Benjamini-Hochberg-adjusted p-value over all features.",
        "max_effect": "Largest effect among the significant features (0 when none).",
        "max_effect_ci_low / _ci_high": "Its 95% Wilson interval (majority rate fixed).",
        "min_p_bh": "Smallest BH-adjusted p-value.",
        "share_issue": "Share of examples flagged by is_associations_issue.",
    }
    score_columns: ClassVar[dict[str, str]] = {
        "id": "Example id.",
        "associations_feature": "The significant feature whose bin raises p(gold) most ('' "
        "when none).",
        "associations_score": "That rise: p(gold | bin, other folds) - p(gold); in [-1, 1], "
        "larger = the label is more visible in a simple property.",
        "is_associations_issue": "associations_score >= issue_margin.",
    }
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "heuristics": [list, tuple, StrOptions({"auto"})],
        "properties": ["boolean"],
        "n_bins": [Interval(Integral, 2, None, closed="left")],
        "n_folds": [Interval(Integral, 2, None, closed="left")],
        "n_permutations": [Interval(Integral, 1, None, closed="left")],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "issue_margin": [Interval(Real, 0, 1, closed="both")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        heuristics: list[str] | str = "auto",
        properties: bool = True,
        n_bins: int = 10,
        n_folds: int = 5,
        n_permutations: int = 1000,
        alpha: float = 0.05,
        issue_margin: float = 0.1,
        random_state: int | None = 0,
    ) -> None:
        self.heuristics = heuristics
        self.properties = properties
        self.n_bins = n_bins
        self.n_folds = n_folds
        self.n_permutations = n_permutations
        self.alpha = alpha
        self.issue_margin = issue_margin
        self.random_state = random_state

    def _heuristic_names(self, ds: Dataset) -> list[str]:
        from spurious.heuristics import HEURISTICS, get_heuristic, list_heuristics

        task = ds.task.name
        if self.heuristics == "auto":
            return [
                n
                for n in list_heuristics(task)
                if not HEURISTICS[n].needs_train and not HEURISTICS[n].requires_spacy
            ]
        names = list(dict.fromkeys(self.heuristics))
        for n in names:
            get_heuristic(n, task=task)  # unknown -> ParameterError listing the task's
        return names

    def check(self, context: RunContext) -> None:
        self._heuristic_names(context.target)

    def _run(self, ctx: RunContext) -> AnalysisOutput:
        ds = ctx.target
        if not ds.task.has_labels:
            return self._run_qa(ctx)
        if len(ds) < MIN_EXAMPLES:
            raise DetectorError(
                f"Associations needs at least {MIN_EXAMPLES} labelled examples for "
                f"{self.n_folds}-fold accuracies; got {len(ds)}."
            )
        y = ds.labels
        features: dict[str, tuple[str, np.ndarray]] = {}
        heuristic_names = self._heuristic_names(ds)
        if heuristic_names:
            values = ctx.heuristics(heuristic_names)
            for h in heuristic_names:
                features[h] = ("heuristic", values[h].to_numpy(dtype=np.float64))
        duplicates: dict[str, str] = {}
        if self.properties:
            for col, v in text_properties(ds).items():
                x = v.to_numpy()
                # hypothesis_n_words is the hypothesis_length heuristic: test it once.
                same = next(
                    (k for k, (_, u) in features.items() if np.array_equal(u, x, equal_nan=True)),
                    None,
                )
                if same is None:
                    features[col] = ("property", x)
                else:
                    duplicates[col] = f"same values as {same}"
        if not features:
            raise DetectorError(
                f"Associations has nothing to test on task {ds.task.name!r}: no heuristic "
                "applies and properties=False."
            )
        return self._test(ds.ids, y, tuple(ds.label_names), features, duplicates)

    def _run_qa(self, ctx: RunContext) -> AnalysisOutput:
        """QA: every heuristic of the gold answer against the same of a random span."""
        from spurious.heuristics import compute_heuristics

        ds = ctx.target
        if len(ds) < MIN_EXAMPLES // 2:
            raise DetectorError(
                f"Associations needs at least {MIN_EXAMPLES // 2} questions; got {len(ds)}."
            )
        names = self._heuristic_names(ds)
        null_ds = null_spans(ds, random_state=self.random_state)
        gold = ctx.heuristics(names) if names else pd.DataFrame()
        fit_on = ctx.heuristics_train
        if fit_on is None and ctx.eval is not None:
            fit_on = ctx.train
        null = (
            compute_heuristics(null_ds, names, train=fit_on, progress=ctx.progress)
            if names
            else pd.DataFrame()
        )
        features: dict[str, tuple[str, np.ndarray]] = {}
        same: dict[str, str] = {}
        for h in names:
            a, b = gold[h].to_numpy(np.float64), null[h].to_numpy(np.float64)
            if np.array_equal(a, b, equal_nan=True):
                # answer_length, shared_words: equal for a span of the same length.
                same[h] = "not answer-dependent (equal for the random span)"
                continue
            features[h] = ("heuristic", np.concatenate([a, b]))
        if self.properties:
            features["answer_relative_position"] = (
                "property",
                np.concatenate([_relative_position(ds), _relative_position(null_ds)]),
            )
        if not features:
            raise DetectorError(
                "Associations has nothing to test on QA: no answer-dependent heuristic "
                f"among {names} and properties=False."
            )
        n = len(ds)
        y = np.repeat(np.array([1, 0]), n)
        groups = np.tile(np.arange(n), 2)
        scored = np.arange(2 * n) < n
        out = self._test(ds.ids, y, ("random span", "gold answer"), features, same, groups, scored)
        out.details["qa_null"] = (
            "label = gold answer (1) or a random span of the same word length in the same "
            "context (0), one of each per question; folds keep a question's two rows together"
        )
        return out

    def _test(
        self,
        ids: np.ndarray,
        y: np.ndarray,
        names: tuple[str, ...],
        features: dict[str, tuple[str, np.ndarray]],
        duplicates: dict[str, str],
        groups: np.ndarray | None = None,
        scored: np.ndarray | None = None,
    ) -> AnalysisOutput:
        """Test every feature against ``y``; the shared part of both task kinds.

        ``groups`` keeps rows of one group in one fold; ``scored`` (a row mask) selects
        the rows that are the examples of ``ids`` (QA: the gold rows).
        """
        n_classes = len(names)
        rng = np.random.default_rng(self.random_state)
        counts = np.bincount(y, minlength=n_classes)
        n_splits = int(min(self.n_folds, counts[counts > 0].min()))
        if n_splits < 2:
            raise DetectorError(
                "Associations needs at least 2 examples of every label present for its "
                f"folds; the rarest label has {counts[counts > 0].min()}."
            )
        seed = int(rng.integers(2**31 - 1))
        folds = np.empty(len(y), dtype=np.int64)
        if groups is None:
            skf = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
        else:
            skf = StratifiedGroupKFold(n_splits=n_splits, shuffle=True, random_state=seed)
        for f, (_, te) in enumerate(skf.split(np.zeros(len(y)), y, groups)):
            folds[te] = f
        perm_seed = int(rng.integers(2**31 - 1))
        results = {
            name: binned_association(
                x,
                y,
                n_classes,
                folds,
                n_bins=self.n_bins,
                n_permutations=self.n_permutations,
                random_state=perm_seed,
            )
            for name, (_, x) in features.items()
        }
        fnames = list(results)
        _, p_bh = adjust_p(np.array([results[f].p_value for f in fnames]))
        prior = counts / counts.sum()
        metrics: dict[str, float] = {"n_features": len(fnames)}
        table_rows = []
        significant = []
        for f, q in zip(fnames, p_bh, strict=True):
            a = results[f]
            metrics[f"{f}_effect"] = a.effect
            metrics[f"{f}_mi_bits"] = a.mutual_information
            metrics[f"{f}_p_value"] = a.p_value
            metrics[f"{f}_p_bh"] = float(q)
            if q <= self.alpha:
                significant.append(f)
            table_rows.append(self._row(f, features[f][0], a, float(q), names, prior))
        table_rows.sort(key=lambda r: (-r["effect"], r["feature"]))
        # Per example: the significant feature whose bin raises p(gold) the most.
        score = np.full(len(y), -np.inf)
        which = np.full(len(y), "", dtype=object)
        for f in significant:
            lift = results[f].p_gold - prior[y]
            better = np.nan_to_num(lift, nan=-np.inf) > score
            score[better] = lift[better]
            which[better] = f
        score = np.where(np.isfinite(score), score, 0.0)
        if scored is not None:
            score, which = score[scored], which[scored]
        issue = score >= self.issue_margin
        best = max(significant, key=lambda f: results[f].effect, default=None)
        if best is not None:
            lo, hi = results[best].effect_interval
            metrics.update(
                max_effect=results[best].effect, max_effect_ci_low=lo, max_effect_ci_high=hi
            )
        else:
            metrics.update(max_effect=0.0)
        metrics["n_significant"] = len(significant)
        metrics["min_p_bh"] = float(np.min(p_bh)) if len(p_bh) else 1.0
        metrics["share_issue"] = float(issue.mean())
        scores = pd.DataFrame(
            {
                "id": ids,
                "associations_feature": which,
                "associations_score": score,
                "is_associations_issue": issue,
            }
        )
        top = ", ".join(
            f"{r['feature']} {r['effect']:+.3f}"
            + (f" ({r['high_points_to']} high)" if r.get("high_points_to") else "")
            for r in table_rows
            if r["significant"]
        )
        summary = (
            f"{len(significant)}/{len(fnames)} features are associated with the label "
            f"(BH <= {self.alpha})" + (f": {top}" if top else "")
        )
        details = {
            "label_names": list(names),
            "prior": {names[c]: float(p) for c, p in enumerate(prior)},
            "features": table_rows,
            "best": best,
            "not_tested": duplicates,
            "params": {
                "n_bins": self.n_bins,
                "n_folds": n_splits,
                "n_permutations": self.n_permutations,
                "alpha": self.alpha,
            },
        }
        return AnalysisOutput(scores=scores, metrics=metrics, summary=summary, details=details)

    def _row(
        self,
        name: str,
        kind: str,
        a: BinnedAssociation,
        p_bh: float,
        labels: tuple[str, ...],
        prior: np.ndarray,
    ) -> dict[str, Any]:
        table = a.table.astype(np.float64)
        n_bin = table.sum(axis=1)
        share = np.divide(table, n_bin[:, None], out=np.zeros_like(table), where=n_bin[:, None] > 0)
        bin_names = _bin_names(a.edges, a.has_nan_bin, len(table))
        # The lowest and highest non-empty value bins (the NaN bin is not a value).
        value_bins = [b for b in range(len(a.edges) + 1) if b < len(table) and n_bin[b] > 0]

        def points_to(b: int) -> tuple[str | None, float]:
            lift = share[b] - prior
            c = int(np.argmax(lift))
            return labels[c], float(lift[c])

        row: dict[str, Any] = {
            "feature": name,
            "kind": kind,
            "effect": a.effect,
            "effect_ci": list(a.effect_interval),
            "accuracy": a.accuracy,
            "majority": a.majority,
            "mi_bits": a.mutual_information,
            "p_value": a.p_value,
            "p_bh": p_bh,
            "significant": p_bh <= self.alpha,
            "bins": [
                {
                    "bin": bin_names[b] if b < len(bin_names) else str(b),
                    "n": int(n_bin[b]),
                    **{labels[c]: float(share[b, c]) for c in range(len(labels))},
                }
                for b in range(len(table))
                if n_bin[b] > 0
            ],
        }
        if len(value_bins) >= 2:
            row["low_points_to"], row["low_lift"] = points_to(value_bins[0])
            row["high_points_to"], row["high_lift"] = points_to(value_bins[-1])
        return row

    def headline(self, result) -> dict[str, Any]:
        m = result.metrics
        best = (result.details or {}).get("best")
        n_sig = int(m.get("n_significant", 0))
        rows = {r["feature"]: r for r in (result.details or {}).get("features", [])}
        if best:
            r = rows.get(best, {})
            where = f" (high -> {r['high_points_to']})" if r.get("high_points_to") else ""
            text = (
                f"{n_sig} of {int(m.get('n_features', 0))} properties are associated with "
                "the label (BH); "
                f"strongest {best}{where}: +{m['max_effect']:.1%} accuracy over the majority"
            )
            interval = (m.get("max_effect_ci_low"), m.get("max_effect_ci_high"))
        else:
            text = (
                f"none of {int(m.get('n_features', 0))} heuristics and properties is "
                "associated with the label"
            )
            interval = None
        scale = dataclasses.replace(self.verdict_scale, alpha=self.alpha)
        return scale.headline(
            "model-free associations",
            m.get("max_effect"),
            text,
            interval=interval,
            p_value=m.get("min_p_bh"),
            null="shuffled labels (permutation test, BH over features)",
            measured="out-of-fold accuracy of a 1-D binned classifier minus the majority rate",
        )
