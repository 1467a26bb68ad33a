"""Multiple-choice heuristics: model-free cues that point at one option, and item attributes.

A *cue* picks an option of an item without reading the gold: the longest, the shortest,
the one sharing most words with the question, the odd one out, an "all / none of the
above" option, the largest or smallest number. These are the answer-choice shortcuts of
the literature: Balepur et al. (ACL 2024) show that models answer from the choices
alone, partly through such surface cues; the "longest answer is right" rule of
test-taking (Millman et al. 1965, "An analysis of test-wiseness"); Pezeshkpour and
Hruschka (2024) show position (letter) bias. :func:`cue_picks` gives, per item, the
option each cue picks (``-1`` where it abstains: a tie, or nothing to pick); the
``gold_is_*`` heuristics are that pick compared with the gold (1 / 0, NaN where the cue
abstains), so the pick logic is written once. ``question_negation``, ``gold_position``
and ``option_count`` describe the item, not a cue.

Text conventions: lengths are in characters of the stripped option; "content words" are
lower-cased word runs minus :data:`~spurious.heuristics.base.STOPWORDS`; the negation
words of a question come from :func:`spurious.heuristics.base.words` (which splits
"n't" off). Parsing of option texts (numbers, "all of the above") is in
:mod:`spurious.heuristics.mcq_options`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.feature_extraction.text import HashingVectorizer

from spurious.data.dataset import Dataset
from spurious.data.mcq import option_counts
from spurious.exceptions import ParameterError
from spurious.heuristics.base import STOPWORDS, Heuristic, register_heuristic, words
from spurious.heuristics.mcq_options import (
    comparable_numbers,
    is_all_or_none_option,
    option_number,
)

__all__ = [
    "CUES",
    "NEGATION_WORDS",
    "all_cue_picks",
    "cue_picks",
    "is_all_or_none_option",
    "option_number",
]

_TASKS: tuple[str, ...] = ("mcq",)

BALEPUR = "Balepur, Ravichander and Rudinger (ACL 2024), Artifacts or Abduction (choices-only)"
PEZESHKPOUR = "Pezeshkpour and Hruschka (NAACL Findings 2024), LLMs' sensitivity to option order"
TESTWISE = "Millman, Bishop and Ebel (1965), An analysis of test-wiseness"

#: Question words that turn a question around ("Which is NOT ...", "all EXCEPT ...").
NEGATION_WORDS: frozenset[str] = frozenset(
    {"not", "n't", "no", "never", "none", "nor", "neither", "except", "exception", "least",
     "false", "incorrect", "untrue", "cannot"}
)  # fmt: skip

# -- the items, flattened ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Items:
    """Option ``j`` of item ``i`` is flat option ``starts[i] + j``; ``codes`` maps each flat
    option to its text among the distinct ``texts`` (options repeat across items: "True",
    "None of the above"), so per-text work is done once."""

    questions: list[str]
    k: np.ndarray
    starts: np.ndarray
    texts: list[str]
    codes: np.ndarray
    #: Matrices that several cues read, computed once per call (see :func:`all_cue_picks`).
    cache: dict[str, np.ndarray] = field(default_factory=dict)

    def matrix(self, per_option: np.ndarray, fill: float = np.nan) -> np.ndarray:
        """(items, max k) of per-flat-option values; ``fill`` past an item's options."""
        out = np.full((len(self.k), int(self.k.max(initial=1))), fill)
        rows = np.repeat(np.arange(len(self.k)), self.k)
        out[rows, np.arange(len(rows)) - self.starts[rows]] = per_option
        return out

    def per_text(self, fn: Callable[[str], float]) -> np.ndarray:
        """``fn`` of each flat option, computed once per distinct text."""
        return np.array([fn(t) for t in self.texts], dtype=np.float64)[self.codes]


def _items(dataset: Dataset) -> _Items:
    k = option_counts(dataset.frame)
    flat = [str(o).strip() for opts in dataset.frame["options"] for o in opts]
    codes, texts = pd.factorize(pd.Series(flat, dtype=object))
    starts = np.concatenate([[0], np.cumsum(k)[:-1]]).astype(np.int64)
    return _Items([str(q) for q in dataset.frame["question"]], k, starts, list(texts), codes)


def _unique_best(values: np.ndarray, best: str, tol: float = 0.0) -> np.ndarray:
    """Per row, the column of the unique max (``best="max"``) or min of the finite values;
    -1 on a tie at the top (within ``tol``) or when no value is finite."""
    v = np.asarray(values, dtype=np.float64)
    v = np.where(np.isfinite(v), v if best == "max" else -v, -np.inf)
    top = v.max(axis=1, keepdims=True)
    winners = (v >= top - tol) & np.isfinite(top)
    return np.where(winners.sum(axis=1) == 1, winners.argmax(axis=1), -1).astype(np.int64)


# -- the cues -------------------------------------------------------------------------------

# Content words for the question overlap: plain word runs (the "n't" split of
# heuristics.base.words only matters for negation, and its lookahead is slow on long
# texts), lower-cased, minus stopwords.
_PLAIN_WORD = re.compile(r"\w+")


def _content(text: str) -> frozenset[str]:
    return frozenset(w for w in _PLAIN_WORD.findall(text.lower()) if w not in STOPWORDS)


def _lengths(items: _Items) -> np.ndarray:
    return items.matrix(items.per_text(len))


def _question_overlap(items: _Items) -> np.ndarray:
    option_words = [_content(t) for t in items.texts]
    shared = np.zeros(len(items.codes))
    for q, s, kk in zip(items.questions, items.starts, items.k, strict=True):
        qw = _content(q)
        for j in range(s, s + kk):
            shared[j] = len(option_words[items.codes[j]] & qw)
    return items.matrix(shared)


def _number_matrix(items: _Items) -> np.ndarray:
    """Each option's number; NaN where it is not one or not comparable with the item's
    other numbers (:func:`~spurious.heuristics.mcq_options.comparable_numbers`)."""
    if items.cache.get("numbers") is not None:  # numeric_max and numeric_min share it
        return items.cache["numbers"]
    parsed = [option_number(t) for t in items.texts]
    values = np.full(len(items.codes), np.nan)
    for s, kk in zip(items.starts, items.k, strict=True):
        values[s : s + kk] = comparable_numbers([parsed[c] for c in items.codes[s : s + kk]])
    items.cache["numbers"] = items.matrix(values)
    return items.cache["numbers"]


def _meta_matrix(items: _Items) -> np.ndarray:
    """True where the option refers to the others ("all / none of the above")."""
    return items.matrix(items.per_text(is_all_or_none_option), fill=0.0) > 0


def _pick_all_or_none(items: _Items) -> np.ndarray:
    meta = _meta_matrix(items)
    # "All of the above" beside "None of the above": no single pick.
    return np.where(meta.sum(axis=1) == 1, meta.argmax(axis=1), -1).astype(np.int64)


#: Options differing by less than this in mean similarity tie (float noise, not a signal).
_SIMILARITY_TOL = 1e-9


def _pick_odd_one_out(items: _Items) -> np.ndarray:
    """The option least similar to the others: character 3-gram cosine, mean over the
    other options; a tie (always with two options) abstains.

    Term frequencies are hashed without IDF on purpose: an item's pick must not depend on
    which other items share the split (IDF would), and options of one item are compared
    only with each other.
    """
    k, starts = items.k, items.starts
    # 3-grams only: hashing longer n-grams as well dominated the run time on long options.
    vec = HashingVectorizer(
        analyzer="char_wb", ngram_range=(3, 3), n_features=2**20, alternate_sign=False, norm="l2"
    )
    x = sp.csr_matrix(vec.transform(items.texts))[items.codes]
    # Every within-item pair (a, b), a < b, at once: cosine = row-wise dot product.
    a_idx, b_idx = [], []
    for kk in np.unique(k):
        a, b = np.triu_indices(int(kk), 1)
        rows = np.flatnonzero(k == kk)
        a_idx.append((starts[rows][:, None] + a[None, :]).ravel())
        b_idx.append((starts[rows][:, None] + b[None, :]).ravel())
    a_all, b_all = np.concatenate(a_idx), np.concatenate(b_idx)
    sims = np.asarray(x[a_all].multiply(x[b_all]).sum(axis=1)).ravel()
    total = np.zeros(len(items.codes))
    np.add.at(total, a_all, sims)
    np.add.at(total, b_all, sims)
    mean_sim = items.matrix(total / np.repeat(np.maximum(k - 1, 1), k))
    picks = _unique_best(mean_sim, "min", _SIMILARITY_TOL)
    return np.where(k > 2, picks, -1)


_PICKERS: dict[str, Callable[[_Items], np.ndarray]] = {
    "longest": lambda items: _unique_best(_lengths(items), "max"),
    "shortest": lambda items: _unique_best(_lengths(items), "min"),
    "most_question_overlap": lambda items: _unique_best(_question_overlap(items), "max"),
    "odd_one_out": _pick_odd_one_out,
    "all_or_none_of_the_above": _pick_all_or_none,
    "numeric_max": lambda items: _unique_best(_number_matrix(items), "max"),
    "numeric_min": lambda items: _unique_best(_number_matrix(items), "min"),
}

#: The option-picking cues :func:`cue_picks` knows, in report order.
CUES: tuple[str, ...] = tuple(_PICKERS)


def _check_mcq(dataset: object, owner: str) -> Dataset:
    if not isinstance(dataset, Dataset):
        raise ParameterError(
            f"The 'dataset' parameter of {owner} must be a spurious Dataset. Got "
            f"{type(dataset).__name__} instead."
        )
    if not dataset.task.multiple_choice:
        raise ParameterError(
            f"The 'dataset' parameter of {owner} must hold multiple-choice items (task "
            f"'mcq'). Got task {dataset.task.name!r} instead."
        )
    return dataset


def cue_picks(dataset: Dataset, name: str) -> np.ndarray:
    """The option each item's cue ``name`` picks, without reading the gold.

    Parameters
    ----------
    dataset : Dataset
        Multiple-choice items (task ``mcq``).
    name : str
        One of :data:`CUES`: ``longest`` / ``shortest`` (characters), ``most_question_overlap``
        (distinct content words shared with the question), ``odd_one_out`` (least similar
        to the other options, character n-gram cosine; three options at least),
        ``all_or_none_of_the_above`` (the one option referring to the others),
        ``numeric_max`` / ``numeric_min`` (two numeric options at least).

    Returns
    -------
    numpy.ndarray of int64, shape (len(dataset),)
        The picked option's 0-based position; -1 where the cue abstains (a tie for the
        top, or nothing to pick).

    Examples
    --------
    >>> import pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({"question": ["Pick one", "How many?"],
    ...     "options": [["a cat", "a large dog", "an ox"], ["4", "12", "7"]],
    ...     "label": ["B", "A"]}), "mcq")
    >>> cue_picks(ds, "longest").tolist(), cue_picks(ds, "numeric_max").tolist()
    ([1, 1], [-1, 1])
    """
    return all_cue_picks(dataset, [name])[name]


def all_cue_picks(dataset: Dataset, names: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """:func:`cue_picks` of several cues at once (the items are read once).

    Parameters
    ----------
    dataset : Dataset
        Multiple-choice items (task ``mcq``).
    names : sequence of str, optional
        Cues among :data:`CUES` (default: all of them).

    Returns
    -------
    dict of str to numpy.ndarray
        Cue -> picked option per item (-1: abstains), in the order of ``names``.

    Examples
    --------
    >>> import pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({"question": ["q"],
    ...     "options": [["a", "None of the above", "ccc"]], "label": ["A"]}), "mcq")
    >>> {c: int(p[0]) for c, p in all_cue_picks(ds, ["shortest", "all_or_none_of_the_above"]).items()}
    {'shortest': 0, 'all_or_none_of_the_above': 1}
    """
    _check_mcq(dataset, "cue_picks")
    names = list(CUES) if names is None else list(names)
    bad = [n for n in names if n not in _PICKERS]
    if bad:
        raise ParameterError(
            f"The 'name' parameter of cue_picks must be one of {list(CUES)}. Got "
            f"{bad[0]!r} instead."
        )
    items = _items(dataset)
    return {n: _PICKERS[n](items) for n in names}


def _gold_hits(picks: np.ndarray, gold: np.ndarray, why: str) -> tuple[np.ndarray, list[str]]:
    """1 where the pick is the gold, 0 where it is another option, NaN where it abstains."""
    values = np.where(picks < 0, np.nan, (picks == gold).astype(np.float64))
    return values, [why] * int((picks < 0).sum())


# -- the heuristics ---------------------------------------------------------------------------


class _CueHeuristic(Heuristic):
    """``gold_is_<cue>``: 1 if the cue picks the gold, 0 if it picks another option, NaN
    where it abstains."""

    tasks: ClassVar[tuple[str, ...]] = _TASKS
    cue: ClassVar[str] = ""
    abstains: ClassVar[str] = ""

    def _compute(self, dataset, *, train, nlp, progress):
        return _gold_hits(cue_picks(dataset, self.cue), dataset.labels, self.abstains)


@register_heuristic
class GoldIsLongest(_CueHeuristic):
    """1 if the gold is the unique longest option (characters), 0 if another option is,
    NaN on a tie for the longest.

    Examples
    --------
    >>> import pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({"question": ["q", "q"],
    ...     "options": [["ab", "abcd", "a"], ["ab", "cd", "e"]], "label": ["B", "C"]}), "mcq")
    >>> GoldIsLongest().compute(ds)
    array([ 1., nan])
    """

    name: ClassVar[str] = "gold_is_longest"
    cue: ClassVar[str] = "longest"
    abstains: ClassVar[str] = "two options tie for the longest"
    description: ClassVar[str] = (
        "1 if the gold is the unique longest option, 0 if another is; NaN on a tie."
    )
    source: ClassVar[str] = f"{TESTWISE} (longest answer); {BALEPUR}"


@register_heuristic
class GoldIsShortest(_CueHeuristic):
    """1 if the gold is the unique shortest option (characters), 0 if another option is,
    NaN on a tie for the shortest.

    Examples
    --------
    >>> import pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({"question": ["q"],
    ...     "options": [["ab", "abcd", "a"]], "label": ["C"]}), "mcq")
    >>> GoldIsShortest().compute(ds)
    array([1.])
    """

    name: ClassVar[str] = "gold_is_shortest"
    cue: ClassVar[str] = "shortest"
    abstains: ClassVar[str] = "two options tie for the shortest"
    description: ClassVar[str] = (
        "1 if the gold is the unique shortest option, 0 if another is; NaN on a tie."
    )
    source: ClassVar[str] = f"{TESTWISE}; {BALEPUR}"


@register_heuristic
class GoldMostOverlap(_CueHeuristic):
    """1 if the gold shares the most content words with the question, 0 if another option
    does, NaN on a tie (no option sharing a word is a tie at 0).

    Content words are lower-cased words minus stopwords; each distinct word counts once.

    Examples
    --------
    >>> import pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({"question": ["Which metal conducts heat?"],
    ...     "options": [["wood", "a metal that conducts", "glass"]], "label": ["B"]}), "mcq")
    >>> GoldMostOverlap().compute(ds)
    array([1.])
    """

    name: ClassVar[str] = "gold_most_overlap"
    cue: ClassVar[str] = "most_question_overlap"
    abstains: ClassVar[str] = "no single option shares the most words with the question"
    description: ClassVar[str] = (
        "1 if the gold shares the most content words with the question, 0 if another "
        "option does; NaN on a tie."
    )
    source: ClassVar[str] = f"{BALEPUR} (question-choice overlap); {TESTWISE}"


@register_heuristic
class GoldIsOddOneOut(_CueHeuristic):
    """1 if the gold is the option least similar to the others, 0 if another is, NaN on
    a tie or with two options.

    Similarity: cosine of character 3-gram counts (hashed, no IDF), averaged over the
    other options of the item.

    Examples
    --------
    >>> import pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({"question": ["q"],
    ...     "options": [["red apple", "red apples", "quantum flux", "red appel"]],
    ...     "label": ["C"]}), "mcq")
    >>> GoldIsOddOneOut().compute(ds)
    array([1.])
    """

    name: ClassVar[str] = "gold_is_odd_one_out"
    cue: ClassVar[str] = "odd_one_out"
    abstains: ClassVar[str] = "a tie for the least similar option, or two options only"
    description: ClassVar[str] = (
        "1 if the gold is the option least similar to the others (character n-gram "
        "cosine), 0 if another is; NaN on a tie or with two options."
    )
    source: ClassVar[str] = f"{BALEPUR} (choices-only cues); {TESTWISE}"


@register_heuristic
class GoldIsAllOrNoneOfTheAbove(Heuristic):
    """1 if the gold is an "all / none / both / neither of the above" option, 0 if the item
    has one and the gold is another option, NaN when the item has none.

    Examples
    --------
    >>> import pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({"question": ["q", "q", "q"],
    ...     "options": [["x", "y", "All of the above"], ["x", "y", "None of these"],
    ...                 ["x", "y", "z"]], "label": ["C", "A", "A"]}), "mcq")
    >>> GoldIsAllOrNoneOfTheAbove().compute(ds)
    array([ 1.,  0., nan])
    """

    name: ClassVar[str] = "gold_is_all_or_none_of_the_above"
    tasks: ClassVar[tuple[str, ...]] = _TASKS
    description: ClassVar[str] = (
        "1 if the gold is an 'all/none/both/neither of the above' option, 0 if another "
        "option is the gold; NaN when the item has no such option."
    )
    source: ClassVar[str] = f"{TESTWISE} ('all of the above' is often right); {BALEPUR}"

    def _compute(self, dataset, *, train, nlp, progress):
        meta = _meta_matrix(_items(dataset))
        has = meta.any(axis=1)
        values = np.where(has, meta[np.arange(len(dataset)), dataset.labels], np.nan)
        return values, ["no 'all/none of the above' option"] * int((~has).sum())


@register_heuristic
class GoldIsNumericExtreme(Heuristic):
    """1 if the gold is the largest or the smallest number among the numeric options, 0
    if it is another option; NaN unless two options (of one unit) are numbers.

    Examples
    --------
    >>> import pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({"question": ["q", "q", "q"],
    ...     "options": [["4", "12", "7"], ["4 m", "12 m", "7 m"], ["x", "2", "y"]],
    ...     "label": ["B", "C", "B"]}), "mcq")
    >>> GoldIsNumericExtreme().compute(ds)
    array([ 1.,  0., nan])
    """

    name: ClassVar[str] = "gold_is_numeric_extreme"
    tasks: ClassVar[tuple[str, ...]] = _TASKS
    description: ClassVar[str] = (
        "1 if the gold is the max or min of the numeric options, 0 otherwise; NaN with "
        "fewer than two numeric options."
    )
    source: ClassVar[str] = f"{TESTWISE} (extreme numeric options); {BALEPUR}"

    def _compute(self, dataset, *, train, nlp, progress):
        nums = _number_matrix(_items(dataset))
        defined = np.isfinite(nums).sum(axis=1) >= 2
        # Rows with fewer than two numbers are NaN anyway; fill them so the reductions
        # stay quiet.
        filled = np.where(defined[:, None], nums, 0.0)
        g = filled[np.arange(len(dataset)), dataset.labels]
        extreme = (g == np.nanmax(filled, axis=1)) | (g == np.nanmin(filled, axis=1))
        values = np.where(defined, extreme.astype(np.float64), np.nan)
        return values, ["fewer than two numeric options"] * int((~defined).sum())


@register_heuristic
class QuestionNegation(Heuristic):
    """1 if the question holds a negation or an inversion word (not, except, least, false
    ...; see :data:`NEGATION_WORDS`), else 0. An item attribute, not a cue.

    Examples
    --------
    >>> import pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({"question": ["Which is NOT a metal?",
    ...     "Which is a metal?"], "options": [["a", "b"], ["a", "b"]], "label": ["A", "B"]}),
    ...     "mcq")
    >>> QuestionNegation().compute(ds)
    array([1., 0.])
    """

    name: ClassVar[str] = "question_negation"
    tasks: ClassVar[tuple[str, ...]] = _TASKS
    description: ClassVar[str] = "1 if the question says not / except / least / false ..., else 0."
    source: ClassVar[str] = f"{BALEPUR}; negation as in Gururangan et al. (2018)"

    def _compute(self, dataset, *, train, nlp, progress):
        qs = dataset.frame["question"].astype(str)
        return np.array([float(bool(NEGATION_WORDS & set(words(q)))) for q in qs]), []


@register_heuristic
class GoldPosition(Heuristic):
    """The gold's relative position, ``label_id / (k - 1)`` in [0, 1] (0 = A, 1 = last).

    Examples
    --------
    >>> import pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({"question": ["q", "q"],
    ...     "options": [["a", "b", "c"], ["a", "b"]], "label": ["B", "A"]}), "mcq")
    >>> GoldPosition().compute(ds)
    array([0.5, 0. ])
    """

    name: ClassVar[str] = "gold_position"
    tasks: ClassVar[tuple[str, ...]] = _TASKS
    description: ClassVar[str] = "Gold position label_id / (k - 1), in [0, 1]; 0 = first option."
    source: ClassVar[str] = PEZESHKPOUR

    def _compute(self, dataset, *, train, nlp, progress):
        k = option_counts(dataset.frame)
        return dataset.labels / (k - 1.0), []


@register_heuristic
class OptionCount(Heuristic):
    """The number of options k of the item (2-10).

    Examples
    --------
    >>> import pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({"question": ["q", "q"],
    ...     "options": [["a", "b", "c"], ["a", "b"]], "label": ["B", "A"]}), "mcq")
    >>> OptionCount().compute(ds)
    array([3., 2.])
    """

    name: ClassVar[str] = "option_count"
    tasks: ClassVar[tuple[str, ...]] = _TASKS
    description: ClassVar[str] = "Number of options of the item, 2-10 (chance = 1 / k)."
    source: ClassVar[str] = PEZESHKPOUR

    def _compute(self, dataset, *, train, nlp, progress):
        return option_counts(dataset.frame).astype(np.float64), []
