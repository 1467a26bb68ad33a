"""Sentence-pair (NLI) heuristics: lexical overlap, subsequence, negation, length, PMI cues.

They read the two text fields of ``nli`` (premise, hypothesis) or ``pair`` (text_a,
text_b) datasets; "premise"/"hypothesis" below mean the first/second field. Words come
from :func:`spurious.heuristics.base.words` (lower-cased ``\\w+`` runs, punctuation
dropped, "n't" split off as its own word); stopwords are kept everywhere, since
function words ("a", "not", "nobody") are exactly the cues these heuristics look at.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from numbers import Integral, Real
from typing import ClassVar

import numpy as np

from spurious.data.dataset import Dataset
from spurious.exceptions import ParameterError
from spurious.heuristics.base import Heuristic, register_heuristic, words_of
from spurious.utils.validation import Interval

logger = logging.getLogger(__name__)

_TASKS: tuple[str, ...] = ("nli", "pair")
_FIELDS = {"nli": ("premise", "hypothesis"), "pair": ("text_a", "text_b")}
_EMPTY = "hypothesis has no word"

MCCOY = "McCoy, Pavlick and Linzen (2019), Right for the Wrong Reasons (HANS), Sec. 2"
GURURANGAN = "Gururangan et al. (2018), Annotation Artifacts in NLI Data, Sec. 3"


def _pairs(dataset: Dataset) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """(premise words, hypothesis words) per row; each distinct text tokenised once (once
    for all heuristics inside :func:`~spurious.heuristics.base.compute_heuristics`)."""
    first, second = _FIELDS[dataset.task.name]
    return list(zip(words_of(dataset.texts(first)), words_of(dataset.texts(second)), strict=True))


def _per_pair(
    dataset: Dataset, value: Callable[[tuple[str, ...], tuple[str, ...]], float]
) -> tuple[np.ndarray, list[str]]:
    """``value(premise_words, hypothesis_words)`` per row; NaN (with its reason) when the
    hypothesis has no word."""
    values = np.full(len(dataset), np.nan)
    reasons = []
    for i, (p, h) in enumerate(_pairs(dataset)):
        if not h:
            reasons.append(_EMPTY)
            continue
        values[i] = value(p, h)
    return values, reasons


def _nli(premises: list[str], hypotheses: list[str], labels: list[str] | None = None) -> Dataset:
    """A small NLI dataset (for the examples)."""
    import pandas as pd

    # Two classes at least (a Dataset refuses a single one): alternate when not given.
    labels = labels or [("entailment", "neutral")[i % 2] for i in range(len(premises))]
    frame = pd.DataFrame({"premise": premises, "hypothesis": hypotheses, "label": labels})
    return Dataset.from_frame(frame, "nli")


@register_heuristic
class OverlapRate(Heuristic):
    """Fraction of the hypothesis words that occur in the premise.

    Definition: ``#{i : h_i in set(premise)} / len(h)`` over the hypothesis word
    *tokens* ``h`` (a repeated word counts each time). Range [0, 1]; NaN for a
    hypothesis without words. The graded form of HANS's lexical-overlap heuristic
    (McCoy et al., 2019) used by Naik et al. (2018) and Clark et al. (2019b).

    Examples
    --------
    >>> OverlapRate().compute(_nli(["A dog runs.", "A dog"], ["A cat runs.", "dog"])).round(4)
    array([0.6667, 1.    ])
    """

    name: ClassVar[str] = "overlap_rate"
    tasks: ClassVar[tuple[str, ...]] = _TASKS
    description: ClassVar[str] = (
        "Fraction of hypothesis word tokens that occur in the premise; in [0, 1]."
    )
    source: ClassVar[str] = f"{MCCOY} (lexical overlap); Naik et al. (2018)"

    def _compute(self, dataset, *, train, nlp, progress):
        def overlap(p: tuple[str, ...], h: tuple[str, ...]) -> float:
            ps = set(p)
            return sum(w in ps for w in h) / len(h)

        return _per_pair(dataset, overlap)


@register_heuristic
class AllWordsInPremise(Heuristic):
    """1.0 when every hypothesis word occurs in the premise (HANS lexical overlap), else 0.0.

    McCoy et al. (2019): "Lexical overlap heuristic: assume that a premise entails all
    hypotheses constructed from words in the premise." Words are lower-cased and
    punctuation is ignored. NaN for a hypothesis without words.

    Examples
    --------
    >>> AllWordsInPremise().compute(_nli(["The doctor saw the lawyer.", "A dog"],
    ...                                  ["The lawyer saw the doctor.", "A cat"]))
    array([1., 0.])
    """

    name: ClassVar[str] = "all_words_in_premise"
    tasks: ClassVar[tuple[str, ...]] = _TASKS
    description: ClassVar[str] = "1 if every hypothesis word occurs in the premise, else 0."
    source: ClassVar[str] = f"{MCCOY} (lexical overlap heuristic)"

    def _compute(self, dataset, *, train, nlp, progress):
        return _per_pair(dataset, lambda p, h: float(set(h) <= set(p)))


@register_heuristic
class IsSubsequence(Heuristic):
    """1.0 when the hypothesis is a contiguous subsequence of the premise, else 0.0.

    McCoy et al. (2019): "Subsequence heuristic: assume that a premise entails all of its
    contiguous subsequences." Compared on lower-cased word sequences (punctuation
    ignored). NaN for a hypothesis without words.

    Examples
    --------
    >>> IsSubsequence().compute(_nli(["The doctor near the actor danced.", "A dog runs"],
    ...                              ["The actor danced.", "dog A"]))
    array([1., 0.])
    """

    name: ClassVar[str] = "is_subsequence"
    tasks: ClassVar[tuple[str, ...]] = _TASKS
    description: ClassVar[str] = (
        "1 if the hypothesis words form a contiguous run of the premise words, else 0."
    )
    source: ClassVar[str] = f"{MCCOY} (subsequence heuristic)"

    def _compute(self, dataset, *, train, nlp, progress):
        def contiguous(p: tuple[str, ...], h: tuple[str, ...]) -> float:
            n = len(h)
            return float(any(p[j : j + n] == h for j in range(len(p) - n + 1)))

        return _per_pair(dataset, contiguous)


#: Negation words (after the tokenizer: "didn't" -> "did", "n't"). Gururangan et al.
#: (2018) find "no", "never", "nobody", "nothing" among the top contradiction cues; the
#: apostrophe-less spellings ("dont") are common in crowd-sourced hypotheses.
NEGATION_WORDS: frozenset[str] = frozenset(
    """
    not no never nobody nothing none nowhere neither nor n't cannot noone
    dont didnt doesnt isnt arent wasnt werent cant wont couldnt shouldnt wouldnt hasnt
    havent hadnt aint
    """.split()  # noqa: SIM905  (a word list reads best as one string)
)


@register_heuristic
class NegationInHypothesis(Heuristic):
    """Number of negation words in the hypothesis.

    Gururangan et al. (2018), Sec. 3: negation words ("no", "never", "nobody", "nothing")
    are strong cues for *contradiction* in SNLI/MNLI hypotheses. Definition: the count
    of hypothesis word tokens in :data:`NEGATION_WORDS` ("n't" counts once per
    contraction). Range: integers >= 0; never NaN.

    Examples
    --------
    >>> NegationInHypothesis().compute(_nli(["A man sleeps.", "x"],
    ...                                     ["Nobody isn't sleeping.", "A man sleeps."]))
    array([2., 0.])
    """

    name: ClassVar[str] = "negation_in_hypothesis"
    tasks: ClassVar[tuple[str, ...]] = _TASKS
    description: ClassVar[str] = "Number of negation words in the hypothesis; integer >= 0."
    source: ClassVar[str] = f"{GURURANGAN}.1 (lexical choice: negation)"

    def _compute(self, dataset, *, train, nlp, progress):
        values = np.array(
            [sum(w in NEGATION_WORDS for w in h) for _, h in _pairs(dataset)], dtype=np.float64
        )
        return values, []


@register_heuristic
class HypothesisLength(Heuristic):
    """Number of words of the hypothesis.

    Gururangan et al. (2018), Sec. 3.2: entailed hypotheses tend to be shorter and
    neutral ones longer. Range: integers >= 0; never NaN.

    Examples
    --------
    >>> HypothesisLength().compute(_nli(["x", "y"], ["A man isn't here.", ""]))
    array([5., 0.])
    """

    name: ClassVar[str] = "hypothesis_length"
    tasks: ClassVar[tuple[str, ...]] = _TASKS
    description: ClassVar[str] = "Number of words of the hypothesis; integer >= 0."
    source: ClassVar[str] = f"{GURURANGAN}.2 (sentence length)"

    def _compute(self, dataset, *, train, nlp, progress):
        return np.array([len(h) for _, h in _pairs(dataset)], dtype=np.float64), []


def word_label_pmi(
    train: Dataset, *, smoothing: float = 100.0, min_count: int = 5
) -> tuple[list[str], np.ndarray]:
    """Smoothed PMI of every (hypothesis word, label) pair of a training split.

    Gururangan et al. (2018), Sec. 3.1: ``PMI(w, y) = log p(w, y) / (p(w) p(y))`` with
    add-k smoothing of the raw counts (they use k = 100, which favours frequent pairs).
    Counts are word *tokens* of the hypotheses with label ``y``, over the vocabulary V
    of words seen at least ``min_count`` times in all training hypotheses (rarer words
    get no PMI: their estimates are noise). With ``c(w, y)`` the counts, ``T`` their
    sum, ``Y`` the labels and ``Z = T + k |V| |Y|``::

        p(w, y) = (c(w, y) + k) / Z
        p(w)    = (c(w) + k |Y|) / Z
        p(y)    = (c(y) + k |V|) / Z

    Y holds the labels that occur in ``train`` (with a word of V); the others have no
    statistics and their column is NaN. The logarithm is natural.

    Returns
    -------
    vocabulary : list of str
    pmi : numpy.ndarray, shape (len(vocabulary), n_labels)
        Columns in the order of ``train.label_names``.

    Examples
    --------
    >>> train = _nli(["p"] * 4, ["a cat", "a dog", "no cat", "no dog"],
    ...              ["entailment", "entailment", "contradiction", "contradiction"])
    >>> vocab, pmi = word_label_pmi(train, smoothing=0, min_count=1)
    >>> col = pmi[:, train.label_names.index("contradiction")]
    >>> {w: round(float(v), 3) + 0.0 for w, v in zip(vocab, col)}  # + 0.0: no "-0.0"
    {'a': -inf, 'cat': 0.0, 'dog': 0.0, 'no': 0.693}
    """
    second = _FIELDS[train.task.name][1]
    labels = train.labels
    counts: list[Counter[str]] = [Counter() for _ in train.label_names]
    for ws, y in zip(words_of(train.texts(second)), labels, strict=True):
        counts[y].update(ws)
    total = Counter()
    for c in counts:
        total.update(c)
    vocab = sorted(w for w, n in total.items() if n >= min_count)
    if not vocab:
        return vocab, np.full((0, len(counts)), np.nan)
    full = np.array([[c.get(w, 0) for c in counts] for w in vocab], dtype=np.float64)
    full = full.reshape(len(vocab), len(counts))
    # Y is the labels seen in train (over V): smoothing mass for a label with no example
    # would invent statistics for it. Their columns stay NaN.
    present = full.sum(axis=0) > 0
    table = full[:, present]
    k = float(smoothing)
    n_words, n_labels = table.shape
    z = table.sum() + k * n_words * n_labels
    pmi = np.full(full.shape, np.nan)
    with np.errstate(divide="ignore"):  # log(0) = -inf: a pair never seen, when k = 0
        log_wy = np.log(table + k)
        log_w = np.log(table.sum(axis=1, keepdims=True) + k * n_labels)
        log_y = np.log(table.sum(axis=0, keepdims=True) + k * n_words)
    pmi[:, present] = log_wy - log_w - log_y + np.log(z)
    return vocab, pmi


@register_heuristic
class MaxWordLabelPMI(Heuristic):
    """The strongest word-label association (PMI) among the hypothesis words.

    Definition: with ``PMI(w, y)`` estimated on the *training* split
    (:func:`word_label_pmi`: add-k smoothing as in Gururangan et al., 2018, Sec. 3.1;
    words seen fewer than ``min_count`` times are ignored),
    ``h(x) = max over hypothesis words w in V, over labels y, of PMI(w, y)``; with
    ``label`` set, the maximum is over that one label only.

    The gold label of x is *not* used: taking PMI with x's own label would make h(x)
    encode the label and turn a split by h into a split by label. Max over all labels
    asks "does the hypothesis carry some word that is a strong label cue?", computable
    for any unlabelled input. Natural-log units; larger = stronger cue. NaN when no
    hypothesis word is in the training vocabulary. Compute it on data *other* than
    ``train``: on the training split itself every example contributed to its own
    counts.

    Parameters
    ----------
    smoothing : float, default=100
        k of add-k smoothing (Gururangan et al. use 100).
    min_count : int, default=5
        Minimum number of occurrences in the training hypotheses for a word to count.
    label : str or None, default=None
        Restrict the maximum to PMI with this label (a name in ``train.label_names``).

    Examples
    --------
    >>> train = _nli(["p"] * 4, ["a cat", "a dog", "no cat", "no dog"],
    ...              ["entailment", "entailment", "contradiction", "contradiction"])
    >>> test = _nli(["p", "p"], ["no bird", "bird"])
    >>> MaxWordLabelPMI(smoothing=0, min_count=1).compute(test, train=train).round(3)
    array([0.693,   nan])
    """

    name: ClassVar[str] = "max_word_label_pmi"
    tasks: ClassVar[tuple[str, ...]] = _TASKS
    description: ClassVar[str] = (
        "Max over hypothesis words and labels of the smoothed word-label PMI estimated on "
        "the training split (nats; gold label not used)."
    )
    source: ClassVar[str] = f"{GURURANGAN}.1 (PMI of words and classes, add-100 smoothing)"
    needs_train: ClassVar[bool] = True
    uses_train: ClassVar[bool] = True
    _parameter_constraints: ClassVar[dict] = {
        "smoothing": [Interval(Real, 0, None, closed="left")],
        "min_count": [Interval(Integral, 1, None, closed="left")],
        "label": [str, None],
    }

    def __init__(self, smoothing: float = 100.0, min_count: int = 5, label: str | None = None):
        self.smoothing = smoothing
        self.min_count = min_count
        self.label = label

    def _compute(self, dataset, *, train, nlp, progress):
        if self.label is not None and self.label not in train.label_names:
            raise ParameterError(
                f"The 'label' parameter of {self.name} must be None or one of the training "
                f"labels {list(train.label_names)}. Got {self.label!r} instead."
            )
        vocab, pmi = word_label_pmi(train, smoothing=self.smoothing, min_count=self.min_count)
        if not vocab:
            logger.warning(
                "%s: no training hypothesis word occurs >= %d times; every value is NaN.",
                self.name,
                self.min_count,
            )
            return np.full(len(dataset), np.nan), ["empty training vocabulary"] * len(dataset)
        seen = ~np.isnan(pmi).all(axis=0)
        if self.label is not None:
            col = train.label_names.index(self.label)
            if not seen[col]:
                raise ParameterError(
                    f"The 'label' parameter of {self.name} must be a label that occurs in the "
                    f"training split. Got {self.label!r}, which labels no training example."
                )
            best = pmi[:, col]
        else:
            # Only labels that occur in train (the others are NaN columns).
            best = pmi[:, seen].max(axis=1)
        score = dict(zip(vocab, best.tolist(), strict=True))
        logger.debug(
            "%s: %d training words with >= %d occurrences", self.name, len(vocab), self.min_count
        )
        values = np.full(len(dataset), np.nan)
        reasons = []
        for i, (_, h) in enumerate(_pairs(dataset)):
            known = [score[w] for w in h if w in score]
            if not known:
                reasons.append(f"no hypothesis word seen >= {self.min_count} times in train")
                continue
            values[i] = max(known)
        return values, reasons
