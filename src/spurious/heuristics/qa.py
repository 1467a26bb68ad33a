"""The seven extractive-QA heuristics of paper 001 ("Think Twice"), Sec. 4.1.

Each heuristic computes, for every question, the attribute A_h of one suspected QA
shortcut. Where the paper's one-paragraph definition leaves a detail open, the choice
is stated in the class docstring; the paper's reference code (``isbiased``) was read
to settle such details where it agrees with the paper's text, and every place where
we depart from it on purpose is marked "Departure".

Conventions shared by all seven:

* **The gold answer** is the first annotator's answer, ``answers[0]``, located at
  ``answer_starts[0]`` (SQuAD dev has three annotators per question; the paper speaks
  of "the first answer"). When the start offset is missing or does not point at the
  answer text, the first occurrence of the text in the context is used; a row without
  an answer (SQuAD 2.0 unanswerable) or whose answer is not in the context is NaN.
  (``word_distance``'s default variant locates it by its words instead, as App. C's
  numbers need.)
* **Words** come from :func:`spurious.heuristics.base.words`: lower-cased ``\\w+`` runs
  (punctuation dropped, "n't" split off), except in ``word_distance``'s default
  ``variant="paper"``, which keeps case as the reference code does (that is what
  reproduces App. C). Stopwords (NLTK's English list,
  :data:`~spurious.heuristics.base.STOPWORDS`) are removed only where the paper's
  heuristic is about content words (``word_distance``); the paper does not mention
  them elsewhere.
* NaN marks an undefined value; :meth:`Heuristic.compute` logs how many and why.
"""

from __future__ import annotations

import bisect
import logging
import re
from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from spurious.data.dataset import Dataset
from spurious.heuristics.base import STOPWORDS, Heuristic, register_heuristic, word_spans, words
from spurious.utils.validation import StrOptions

if TYPE_CHECKING:  # pragma: no cover
    from spacy.tokens import Doc

logger = logging.getLogger(__name__)

#: How ``source`` cites paper 001 (shared/papers/001_a2bafe98649013f1.txt).
PAPER = "Think Twice: Measuring the Efficiency of Eliminating Prediction Shortcuts of Question Answering Models (paper 001)"

# -- shared helpers ----------------------------------------------------------------------

_NO_ANSWER = "no gold answer"
_NOT_IN_CONTEXT = "gold answer not found in the context"


def _as_list(v: object) -> list:
    return list(v) if isinstance(v, list | tuple | np.ndarray) else []


def _rows(dataset: Dataset) -> Iterator[tuple[str, str, list[str], list[int]]]:
    """(question, context, answers, answer_starts) per row."""
    f = dataset.frame
    starts = f["answer_starts"] if "answer_starts" in f else [None] * len(f)
    yield from zip(
        f["question"], f["context"], map(_as_list, f["answers"]), map(_as_list, starts), strict=True
    )


def answer_span(context: str, answers: list[str], starts: list[int]) -> tuple[int, int] | str:
    """Character span ``(start, end)`` of the first gold answer, or why there is none.

    Examples
    --------
    >>> answer_span("Ann met Bob. Bob left.", ["Bob"], [13])
    (13, 16)
    >>> answer_span("Ann met Bob. Bob left.", ["Bob"], [])  # no offset: first occurrence
    (8, 11)
    >>> answer_span("Ann met Bob.", [], [])
    'no gold answer'
    """
    if not answers or not answers[0]:
        return _NO_ANSWER
    text = answers[0]
    if starts:
        s = int(starts[0])
        if context[s : s + len(text)] == text:
            return s, s + len(text)
        logger.debug("answer_starts[0]=%d does not point at %r; searching the text", s, text)
    s = context.find(text)
    return (s, s + len(text)) if s >= 0 else _NOT_IN_CONTEXT


# Sentence boundaries: ., ! or ? (plus closing quotes/brackets), whitespace, then something
# that can open a sentence. A "." after an abbreviation or an initial is no boundary.
_SENT_END = re.compile(r"""[.!?]+['"’”)\]]*(?=\s+['"‘“(\[]?[A-Z0-9])""")
_ABBREVIATIONS = frozenset(
    """
    mr mrs ms dr prof st jr sr gen col lt sgt capt cmdr adm rev hon gov sen rep pres inc ltd
    co corp bros vs etc al jan feb mar apr jun jul aug sep sept oct nov dec no nos vol pp ca
    approx est dept univ mt ft fig op ed eds max
    """.split()  # noqa: SIM905  (a word list reads best as one string)
)
_INITIALS = re.compile(r"^(?:[A-Za-z]\.)*[A-Za-z]$")  # "F", "U.S", "e.g"


def sentence_starts(text: str) -> list[int]:
    """Character offsets where the sentences of ``text`` start (the first is 0).

    A rule-based splitter, in the spirit of NLTK's Punkt (used by the paper's code, which
    needs a data download): it splits after ``.``, ``!`` or ``?`` followed by whitespace
    and an upper-case letter, digit or opening quote, except after a known abbreviation
    ("Dr.", "Jan.") or an initial ("John F. Kennedy", "U.S. Army").

    Examples
    --------
    >>> text = "Dr. Who met John F. Kennedy in the U.S. Army. He left! Then 3 came."
    >>> [text[s:s + 8] for s in sentence_starts(text)]
    ['Dr. Who ', 'He left!', 'Then 3 c']
    """
    starts = [0]
    for m in _SENT_END.finditer(text):
        if text[m.start()] == ".":
            before = text[: m.start()].rsplit(None, 1)
            token = before[-1].lstrip("\"'‘“([") if before else ""
            if token.lower() in _ABBREVIATIONS or _INITIALS.match(token):
                continue
        nxt = m.end()
        while nxt < len(text) and text[nxt].isspace():
            nxt += 1
        starts.append(nxt)
    return starts


class _ContextWords:
    """Words of one context with offsets, and the positions of each word (memoised)."""

    def __init__(self, context: str) -> None:
        spans = word_spans(context)
        self.starts = np.array([s for _, s, _ in spans], dtype=np.int64)
        self.ends = np.array([e for _, _, e in spans], dtype=np.int64)
        self.positions: dict[str, list[int]] = {}
        for i, (w, _, _) in enumerate(spans):
            self.positions.setdefault(w, []).append(i)

    def token_range(self, start: int, end: int) -> tuple[int, int] | None:
        """Indices ``(first, last)`` of the words overlapping characters [start, end)."""
        first = int(np.searchsorted(self.ends, start, side="right"))
        last = int(np.searchsorted(self.starts, end, side="left")) - 1
        return (first, last) if first <= last else None


# -- (a) word-dist -----------------------------------------------------------------------


# Words as the paper's reference code reads them for word-dist: NLTK's
# RegexpTokenizer(r"\w+"), case kept (so "What" is no stopword and "Ada" != "ada").
_CASED_WORD_RE = re.compile(r"\w+")


class _CasedContext:
    """Case-kept ``\\w+`` words of one context and the positions of each word (memoised)."""

    def __init__(self, context: str) -> None:
        self.words = _CASED_WORD_RE.findall(context)
        self.positions: dict[str, list[int]] = {}
        for i, w in enumerate(self.words):
            self.positions.setdefault(w, []).append(i)

    def find(self, seq: list[str]) -> int | None:
        """Index of the first occurrence of the word sequence ``seq``, or ``None``."""
        n = len(seq)
        for i in self.positions.get(seq[0], ()):
            if self.words[i : i + n] == seq:
                return i
        return None


@register_heuristic
class WordDistance(Heuristic):
    """*word-dist*: words between the answer and the closest question word in the context.

    Paper 001, Sec. 4.1 (after Jia and Liang, 2017): "how close the closest question
    word is to the first answer in the context ... the distance as a number of words
    between the closest question word and the answer span".

    Two definitions; they are *not* the same split (SQuAD 1.1 dev, BERT-base-uncased
    predictions, exact match, App. C search):

    ``variant="paper"`` (default) is the reference code's reading, the one behind App.
    C's numbers: it reproduces App. C's threshold T=7 and its 1,651 examples above it
    exactly. Words are ``\\w+`` runs with their case kept; the question words are the
    question's words that are not stopwords, compared case-sensitively (NLTK's list is
    lower-case, so a capitalised "What" or "The" stays a question word); the answer is
    located as the *first* occurrence of its word sequence in the context's words (not
    at the annotated offset), at word ``a``; the value is ``min |j - a|`` over every
    position ``j`` of a question word in the context, i.e. measured from the answer's
    first word, on either side. So a question word right before the answer gives 1, the
    answer's own first word 0. Range: integers >= 0.

    ``variant="nearest_end"`` is this library's earlier reading: lower-cased words
    (:func:`~spurious.heuristics.base.words`), the answer at its annotated offset
    covering words ``a .. b``, and the distance ``a - j`` before the span, ``j - b``
    after it and 0 inside it. On the data above its App. C search picks T=0 (1,644 /
    8,845), where the group at or below T means "a question word occurs inside the
    answer" and is the *worse* group: the reverse of the paper's shortcut.

    NaN when the question has no non-stopword word, none occurs in the context, or the
    answer cannot be located. The reference code stores -1 for these and drops rows
    below 0 before it splits (``bias_significance.py``); NaN rows are likewise left out
    of every split here and counted.

    Parameters
    ----------
    variant : {"paper", "nearest_end"}, default="paper"
        Which definition (see above).

    Examples
    --------
    >>> import pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({
    ...     "question": ["Where was Ada born?", "Who was born in London?"],
    ...     "context": ["Ada Lovelace was born in London in 1815."] * 2,
    ...     "answers": [["London"], ["Ada Lovelace"]], "answer_starts": [[25], [0]]}), "qa")
    >>> WordDistance().compute(ds)  # "born" (word 3) -> "London" (5); "born" -> "Ada" (0)
    array([2., 3.])
    >>> WordDistance(variant="nearest_end").compute(ds)  # "born" is 2 after "Lovelace"
    array([2., 2.])
    """

    name: ClassVar[str] = "word_distance"
    tasks: ClassVar[tuple[str, ...]] = ("qa",)
    description: ClassVar[str] = (
        "Words between the first word of the gold answer and the nearest non-stopword "
        "question word in the context (case kept, as paper 001's code); integer >= 0."
    )
    source: ClassVar[str] = f"{PAPER}, Sec. 4.1 'word-dist' (after Jia and Liang, 2017)"
    _parameter_constraints: ClassVar[dict] = {"variant": [StrOptions({"paper", "nearest_end"})]}

    def __init__(self, variant: str = "paper") -> None:
        self.variant = variant

    def _compute(self, dataset, *, train, nlp, progress):
        if self.variant == "paper":
            return self._paper(dataset)
        return self._nearest_end(dataset)

    def _paper(self, dataset: Dataset) -> tuple[np.ndarray, list[str]]:
        values = np.full(len(dataset), np.nan)
        reasons: list[str] = []
        memo: dict[str, _CasedContext] = {}
        for i, (question, context, answers, _) in enumerate(_rows(dataset)):
            if not answers or not answers[0]:
                reasons.append(_NO_ANSWER)
                continue
            cc = memo.get(context)
            if cc is None:
                cc = memo[context] = _CasedContext(context)
            answer_words = _CASED_WORD_RE.findall(answers[0])
            a = cc.find(answer_words) if answer_words else None
            if a is None:
                reasons.append("gold answer's words not found in the context's words")
                continue
            qwords = {w for w in _CASED_WORD_RE.findall(question) if w not in STOPWORDS}
            if not qwords:
                reasons.append("question has only stopwords")
                continue
            pos = [p for w in qwords for p in cc.positions.get(w, ())]
            if not pos:
                reasons.append("no question word occurs in the context")
                continue
            values[i] = np.min(np.abs(np.asarray(pos) - a))
        return values, reasons

    def _nearest_end(self, dataset: Dataset) -> tuple[np.ndarray, list[str]]:
        values = np.full(len(dataset), np.nan)
        reasons: list[str] = []
        memo: dict[str, _ContextWords] = {}
        for i, (question, context, answers, starts) in enumerate(_rows(dataset)):
            span = answer_span(context, answers, starts)
            if isinstance(span, str):
                reasons.append(span)
                continue
            cw = memo.get(context)
            if cw is None:
                cw = memo[context] = _ContextWords(context)
            rng = cw.token_range(*span)
            if rng is None:
                reasons.append("gold answer has no word")
                continue
            qwords = set(words(question)) - STOPWORDS
            if not qwords:
                reasons.append("question has only stopwords")
                continue
            pos = [p for w in qwords for p in cw.positions.get(w, ())]
            if not pos:
                reasons.append("no question word occurs in the context")
                continue
            a, b = rng
            p = np.asarray(pos)
            values[i] = np.min(np.where(p < a, a - p, np.where(p > b, p - b, 0)))
        return values, reasons


# -- (b) sim-word ------------------------------------------------------------------------


@register_heuristic
class SharedWords(Heuristic):
    """*sim-word*: number of distinct words shared by the question and the whole context.

    Paper 001, Sec. 4.1 (after Shinoda et al., 2021): "the number of shared words
    between the question and the context. Both are defined as sets, and the
    intersection size of these two sets is computed". The paper compares with the
    *context* (not the answer's sentence), and so do we.

    Definition: ``|set(words(question)) & set(words(context))|`` with lower-cased words;
    stopwords are kept, as in the paper and its reference code (``remove_stopwords=True``
    drops them). Range: integers >= 0 (threshold in App. C: 3). Never NaN.

    Parameters
    ----------
    remove_stopwords : bool, default=False
        Count only non-stopwords.

    Examples
    --------
    >>> import pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({
    ...     "question": ["Where was Ada born?"],
    ...     "context": ["Ada was born in London."], "answers": [["London"]]}), "qa")
    >>> SharedWords().compute(ds), SharedWords(remove_stopwords=True).compute(ds)
    (array([3.]), array([2.]))
    """

    name: ClassVar[str] = "shared_words"
    tasks: ClassVar[tuple[str, ...]] = ("qa",)
    description: ClassVar[str] = (
        "Number of distinct (lower-cased) words occurring in both the question and the "
        "context; integer >= 0."
    )
    source: ClassVar[str] = f"{PAPER}, Sec. 4.1 'sim-word' (after Shinoda et al., 2021)"
    _parameter_constraints: ClassVar[dict] = {"remove_stopwords": ["boolean"]}

    def __init__(self, remove_stopwords: bool = False) -> None:
        self.remove_stopwords = remove_stopwords

    def _compute(self, dataset, *, train, nlp, progress):
        drop = STOPWORDS if self.remove_stopwords else frozenset()
        memo: dict[str, set[str]] = {}
        values = np.empty(len(dataset))
        for i, (question, context, _, _) in enumerate(_rows(dataset)):
            cset = memo.get(context)
            if cset is None:
                cset = memo[context] = set(words(context))
            values[i] = len((set(words(question)) - drop) & cset)
        return values, []


# -- (c) ans-pos -------------------------------------------------------------------------


@register_heuristic
class AnswerSentenceRank(Heuristic):
    """*ans-pos*: index of the context sentence that contains the answer (0 = first).

    Paper 001, Sec. 4.1 (after Ko et al., 2020): "first segments the context into
    sentences, then identifies the sentence containing the answer and yields a scalar
    corresponding to the rank of the sentence within the context".

    Definition: the 0-based index of the sentence (see :func:`sentence_starts`) in which
    the gold answer *starts*; 0-based like the reference code, so "the first two
    sentences" of Ko et al. are values 0 and 1. Range: integers >= 0. NaN when the answer
    cannot be located. (The paper gives no threshold for it in App. C.)

    Departure from the reference code, which takes the first sentence whose text
    contains the answer string (wrong when the string also occurs earlier) and NLTK's
    Punkt splitter: we use the annotated offset and a rule-based splitter.

    Examples
    --------
    >>> import pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({
    ...     "question": ["Who left?"], "context": ["Ann met Bob. Bob left."],
    ...     "answers": [["Bob"]], "answer_starts": [[13]]}), "qa")
    >>> AnswerSentenceRank().compute(ds)  # the second "Bob"
    array([1.])
    """

    name: ClassVar[str] = "answer_sentence_rank"
    tasks: ClassVar[tuple[str, ...]] = ("qa",)
    description: ClassVar[str] = (
        "0-based index of the context sentence in which the gold answer starts; integer >= 0."
    )
    source: ClassVar[str] = f"{PAPER}, Sec. 4.1 'ans-pos' (after Ko et al., 2020)"

    def _compute(self, dataset, *, train, nlp, progress):
        values = np.full(len(dataset), np.nan)
        reasons: list[str] = []
        memo: dict[str, list[int]] = {}
        for i, (_, context, answers, starts) in enumerate(_rows(dataset)):
            span = answer_span(context, answers, starts)
            if isinstance(span, str):
                reasons.append(span)
                continue
            sents = memo.get(context)
            if sents is None:
                sents = memo[context] = sentence_starts(context)
            values[i] = bisect.bisect_right(sents, span[0]) - 1
        return values, reasons


# -- (d) cos-sim -------------------------------------------------------------------------


@register_heuristic
class QATfidfSimilarity(Heuristic):
    """*cos-sim*: cosine similarity of the TF-IDF vectors of the question and the answer.

    Paper 001, Sec. 4.1 (after Clark et al., 2019a): "(i) fitting the TF-IDF model on all
    SQuAD contexts, (ii) inferring the TF-IDF vectors of both questions and their
    corresponding answers, and (iii) returning ... cosine similarity between the TF-IDF
    vectors of question and answer".

    Definition: a scikit-learn ``TfidfVectorizer`` (lower-cased, default token pattern of
    2+ character words, smooth idf, l2 norm, English stopwords removed as in the
    reference code) is fitted on the *distinct* contexts of ``train`` when given, else
    of ``dataset`` (a paragraph counts once for the document frequencies, however many
    questions it has); the value is the cosine of the question's and the first gold
    answer's vectors. Range [0, 1] (threshold in App. C: 0.1). A question or answer with
    no known non-stopword term has a zero vector; its similarity is 0 (nothing matches).
    NaN only without a gold answer.

    Departure from the reference code, which compares the question with the *context*:
    we follow the paper's text (question vs. answer); ``target="context"`` gives the
    reference code's variant (then defined for every row). On SQuAD dev the paper's
    group size at threshold 0.1 (954) is closer to the context variant (713 rows <= 0.1)
    than to the answer variant (1,558 rows > 0.1), so its numbers may come from the code.

    Parameters
    ----------
    stop_words : {"english"} or None, default="english"
        Passed to ``TfidfVectorizer``.
    target : {"answer", "context"}, default="answer"
        What the question is compared with.

    Examples
    --------
    >>> import pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({
    ...     "question": ["Which river city?", "Who wrote it?"],
    ...     "context": ["The river city of Rome.", "Virgil wrote it."],
    ...     "answers": [["river city of Rome"], ["Virgil"]]}), "qa")
    >>> QATfidfSimilarity().compute(ds).round(3)
    array([0.816, 0.   ])
    """

    name: ClassVar[str] = "qa_tfidf_similarity"
    tasks: ClassVar[tuple[str, ...]] = ("qa",)
    description: ClassVar[str] = (
        "Cosine similarity of the question's and the gold answer's TF-IDF vectors "
        "(fitted on the contexts); in [0, 1]."
    )
    source: ClassVar[str] = f"{PAPER}, Sec. 4.1 'cos-sim' (after Clark et al., 2019a)"
    uses_train: ClassVar[bool] = True
    _parameter_constraints: ClassVar[dict] = {
        "stop_words": [StrOptions({"english"}), None],
        "target": [StrOptions({"answer", "context"})],
    }

    def __init__(self, stop_words: str | None = "english", target: str = "answer") -> None:
        self.stop_words = stop_words
        self.target = target

    def _compute(self, dataset, *, train, nlp, progress):
        from sklearn.feature_extraction.text import TfidfVectorizer

        source = train if train is not None else dataset
        contexts = list(dict.fromkeys(source.texts("context")))
        vec = TfidfVectorizer(stop_words=self.stop_words, dtype=np.float64)
        vec.fit(contexts)
        values = np.full(len(dataset), np.nan)
        reasons: list[str] = []
        rows, questions, answers = [], [], []
        for i, (question, context, ans, _) in enumerate(_rows(dataset)):
            if self.target == "context":
                answers.append(context)
            elif ans and ans[0]:
                answers.append(ans[0])
            else:
                reasons.append(_NO_ANSWER)
                continue
            rows.append(i)
            questions.append(question)
        if rows:
            # Rows are l2-normalised, so the cosine is the row-wise dot product (0 for a
            # zero vector); clip the float error above 1.
            q = vec.transform(questions)
            a = vec.transform(answers)
            cos = np.asarray(q.multiply(a).sum(axis=1)).ravel()
            values[rows] = np.clip(cos, 0.0, 1.0)
            zero = int(((q.getnnz(axis=1) == 0) | (a.getnnz(axis=1) == 0)).sum())
            logger.debug("%s: %d row(s) with an empty TF-IDF vector (value 0)", self.name, zero)
        return values, reasons


# -- (e) ans-len -------------------------------------------------------------------------


@register_heuristic
class AnswerLength(Heuristic):
    """*ans-len*: length of the gold answer in words.

    Paper 001, Sec. 4.1 (after Bartolo et al., 2020): "computing A_h as the length of the
    answer".

    Definition: the number of words (:func:`~spurious.heuristics.base.words`) of the
    first gold answer; ``aggregate="mean"`` averages over all annotators' answers
    (duplicates included), as the reference code does. Range: >= 0 (threshold in App.
    C: 4). NaN without a gold answer.

    Neither reading reproduces App. C's group size exactly. On SQuAD 1.1 dev, above the
    paper's T=4 lie 1,831 questions with ``"first"`` and 2,041 with ``"mean"`` (paper:
    3,124); with ``"mean"``, exactly 3,124 lie above T=3, so the paper's count may come
    from the mean with a threshold one lower than stated. The App. C search picks T=4
    under both readings.

    Parameters
    ----------
    aggregate : {"first", "mean"}, default="first"
        ``"first"``: the first annotator's answer (the paper's "the answer", and the
        answer every other heuristic here uses). ``"mean"``: the mean length over every
        annotator's answer (the reference code's ``average_answer_length``).

    Examples
    --------
    >>> import pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({"question": ["When?"], "context": ["In May 1815."],
    ...     "answers": [["May 1815", "In May 1815", "1815"]]}), "qa")
    >>> AnswerLength().compute(ds), AnswerLength(aggregate="mean").compute(ds)
    (array([2.]), array([2.]))
    """

    name: ClassVar[str] = "answer_length"
    tasks: ClassVar[tuple[str, ...]] = ("qa",)
    description: ClassVar[str] = "Number of words of the gold answer; >= 0."
    source: ClassVar[str] = f"{PAPER}, Sec. 4.1 'ans-len' (after Bartolo et al., 2020)"
    _parameter_constraints: ClassVar[dict] = {"aggregate": [StrOptions({"first", "mean"})]}

    def __init__(self, aggregate: str = "first") -> None:
        self.aggregate = aggregate

    def _compute(self, dataset, *, train, nlp, progress):
        values = np.full(len(dataset), np.nan)
        reasons: list[str] = []
        for i, (_, _, answers, _) in enumerate(_rows(dataset)):
            if not answers or not answers[0]:
                reasons.append(_NO_ANSWER)
                continue
            chosen = answers[:1] if self.aggregate == "first" else answers
            values[i] = np.mean([len(words(a)) for a in chosen])
        return values, reasons


# -- (f) sim-ents ------------------------------------------------------------------------

_WHO = ("PERSON",)
_WHEN = ("DATE", "TIME")
_WHERE = ("GPE", "LOC", "FAC")
_NUMBER = ("CARDINAL", "QUANTITY", "MONEY", "PERCENT")
_DATE = ("DATE",)


def _each(keys: str, types: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """``{key: types}`` for every space-separated key (keeps the tables below compact)."""
    return dict.fromkeys(keys.split(), types)


#: Second word of a "how" question -> entity types it asks for.
HOW_TYPES: dict[str, tuple[str, ...]] = {
    "many": ("CARDINAL", "QUANTITY"),
    "much": ("MONEY", "QUANTITY", "PERCENT", "CARDINAL"),
    "long": ("DATE", "TIME", "QUANTITY"),
    "old": ("DATE",),  # OntoNotes tags ages ("22 years old") as DATE
    **_each("far tall high big large wide deep heavy fast hot cold", ("QUANTITY",)),
}
#: A noun right after "what"/"which" (or one word later) -> entity types it asks for.
NOUN_TYPES: dict[str, tuple[str, ...]] = {
    **_each("year years date day days month months decade decades century centuries era", _DATE),
    "time": ("TIME", "DATE"),
    **_each("percentage percent proportion share", ("PERCENT",)),
    **_each(
        "country countries city cities state states nation nations town towns county province "
        "capital",
        ("GPE",),
    ),
    **_each("continent region river rivers ocean sea mountain mountains lake island", ("LOC",)),
    **_each("building stadium airport bridge venue", ("FAC",)),
    **_each(
        "person man woman president king queen emperor author writer poet painter composer "
        "scientist architect actor singer player coach pope",
        _WHO,
    ),
    **_each(
        "company companies organization organisation team teams university college school "
        "agency party band newspaper network",
        ("ORG",),
    ),
    "language": ("LANGUAGE",),
    **_each("nationality religion ethnicity", ("NORP",)),
    **_each("amount number", _NUMBER),
    **_each("price cost", ("MONEY",)),
}
_WH = ("who", "whom", "whose", "when", "where", "how", "what", "which")


def question_entity_types(question: str) -> tuple[str, ...] | None:
    """spaCy (OntoNotes) entity labels the question asks for, or ``None`` if untyped.

    The first wh-word of the question decides: *who/whom/whose* -> PERSON (the paper's
    example); *when* -> DATE, TIME; *where* -> GPE, LOC, FAC; *how* + many / much / long
    / old / far ... -> numeric types (:data:`HOW_TYPES`); *what/which* + a typed noun in
    the next two words ("what year", "which German city") -> :data:`NOUN_TYPES`.

    Examples
    --------
    >>> question_entity_types("Who wrote Hamlet?")
    ('PERSON',)
    >>> question_entity_types("In which German city was he born?")
    ('GPE',)
    >>> question_entity_types("How many moons?")
    ('CARDINAL', 'QUANTITY')
    >>> question_entity_types("What is love?") is None
    True
    """
    ws = words(question)
    for i, w in enumerate(ws):
        if w not in _WH:
            continue
        if w in ("who", "whom", "whose"):
            return _WHO
        if w == "when":
            return _WHEN
        if w == "where":
            return _WHERE
        if w == "how":
            return HOW_TYPES.get(ws[i + 1]) if i + 1 < len(ws) else None
        for nxt in ws[i + 1 : i + 3]:
            if nxt in NOUN_TYPES:
                return NOUN_TYPES[nxt]
        return None
    return None


def _entity_labels(doc: Doc) -> dict[str, int]:
    return dict(Counter(ent.label_ for ent in doc.ents))


@register_heuristic
class EntityCount(Heuristic):
    """*sim-ents*: number of named entities in the context of the type the question asks.

    Paper 001, Sec. 4.1 (new in the paper): "identify named entities of the *question
    type* (i.e., *personal names* if the question starts with 'Who'). Then, we count A_h
    as the number of matching named entities in the context."

    Definition: the question type is read off its first wh-word by
    :func:`question_entity_types` (Who -> PERSON only, the paper's example; When ->
    DATE/TIME; Where -> GPE/LOC/FAC; How many/much -> CARDINAL/QUANTITY/MONEY/PERCENT;
    "what year", "which city" ... via a noun table); the value is the number of entity
    *mentions* of those types that spaCy's NER finds in the context. Range: integers
    >= 0 (threshold in App. C: 0). Questions with no recognisable type ("What is ...",
    59% of SQuAD dev) count 0 by default: App. C's group size for this heuristic (5,006
    of 10,570 at T=0) is larger than the 4,281 typed questions, so the paper scored
    every question, and the reference code gives 0 wherever it finds no matching entity.
    ``untyped="nan"`` leaves them out of every split instead.

    spaCy: only the ``ner`` component runs, once per distinct context. The paper used a
    transformer NER in spaCy 3.4; the default here is ``en_core_web_sm`` 3.8 (CNN), so
    counts differ somewhat.

    Departure from the reference code, which counts context entities sharing a label
    with an entity of the *answer* (it uses the gold answer): we follow the paper's text
    (question type), which is computable without the answer.

    Parameters
    ----------
    untyped : {"zero", "nan"}, default="zero"
        Value for questions whose type cannot be determined: 0 (every question is
        scored, as in App. C) or NaN (left out and counted).

    Examples
    --------
    >>> import pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({"question": ["Who met Bob?"],
    ...     "context": ["Ann met Bob Smith in Paris."], "answers": [["Ann"]]}), "qa")
    >>> EntityCount().compute(ds)  # doctest: +SKIP
    array([2.])
    """

    name: ClassVar[str] = "entity_count"
    tasks: ClassVar[tuple[str, ...]] = ("qa",)
    description: ClassVar[str] = (
        "Number of named-entity mentions in the context of the type the question asks for "
        "(Who -> PERSON, When -> DATE/TIME, ...); integer >= 0, 0 for untyped questions."
    )
    source: ClassVar[str] = f"{PAPER}, Sec. 4.1 'sim-ents'"
    requires_spacy: ClassVar[bool] = True
    _parameter_constraints: ClassVar[dict] = {"untyped": [StrOptions({"nan", "zero"})]}

    def __init__(self, untyped: str = "zero") -> None:
        self.untyped = untyped

    def _compute(self, dataset, *, train, nlp, progress):
        from spurious.heuristics.nlp import pipe_unique

        types = [question_entity_types(q) for q in dataset.texts("question")]
        values = np.full(len(dataset), np.nan)
        reasons: list[str] = []
        typed = [i for i, t in enumerate(types) if t is not None]
        if self.untyped == "zero":
            values[:] = 0.0
        else:
            reasons += ["question type not recognised"] * (len(dataset) - len(typed))
        if typed:
            contexts = dataset.frame["context"].to_numpy()[typed].tolist()
            labels = pipe_unique(
                nlp,
                contexts,
                _entity_labels,
                components=["ner"],
                batch_size=128,
                progress=progress,
                desc=f"{self.name}: NER of contexts",
            )
            for i, counts in zip(typed, labels, strict=True):
                values[i] = sum(counts.get(t, 0) for t in types[i])
        return values, reasons


# -- (g) subj-pos ------------------------------------------------------------------------

_SUBJECT_DEPS = frozenset({"nsubj", "nsubjpass"})


def question_subjects(doc: Doc) -> list[tuple[str, str]]:
    """``(expression, head)`` of each nominal subject of a parsed question, in order.

    The expression is the subject head with its contiguous compound modifiers ("Super
    Bowl" for the head "Bowl"). Subjects whose head is a stopword are skipped: wh-words
    ("Who won?" names the answer, not a thing to find in the context), pronouns,
    demonstratives and "there". (A word list instead of POS tags lets the tagger stay
    off: the parse then takes a quarter less time.)
    """
    out = []
    for tok in doc:
        if tok.dep_ not in _SUBJECT_DEPS or tok.lower_ in STOPWORDS:
            continue
        first = tok.i
        for child in reversed(list(tok.lefts)):
            if child.dep_ == "compound" and child.i == first - 1:
                first = child.i
        out.append((doc[first : tok.i + 1].text, tok.text))
    return out


def _occurrences(phrase: str, context: str) -> list[int]:
    """Start offsets of whole-word, case-insensitive occurrences of ``phrase``."""
    pattern = r"(?<!\w)" + r"\s+".join(map(re.escape, phrase.split())) + r"(?!\w)"
    return [m.start() for m in re.finditer(pattern, context, flags=re.IGNORECASE)]


@register_heuristic
class SubjectPosition(Heuristic):
    """*subj-pos*: how many occurrences of the question's subject precede the answer.

    Paper 001, Sec. 4.1 (new in the paper): "using SPACY library, we (i) identify the
    questions' subject expression and (ii) locate its occurrences in the context. We
    (iii) locate the answer span and compute A_h as a relative position of the answer:
    either before the subject, after the subject, or after multiple occurrences of the
    question subject."

    Definition: the subject is the first nominal subject (``nsubj``/``nsubjpass`` of
    spaCy's dependency parse, not a wh-word or pronoun) of the question whose
    expression (head + compound modifiers, :func:`question_subjects`) or, failing that,
    head word occurs in the context (whole words, case-insensitive). The value is the
    number of its occurrences that start before the gold answer starts: 0 = the answer
    precedes the subject, 1 = after the subject, k >= 2 = after multiple occurrences
    (as in the reference code, which counts occurrences the same way). Range: integers
    >= 0 (threshold in App. C: 1). NaN when the question has no nominal subject, the
    subject does not occur in the context, or the answer cannot be located.

    spaCy: tok2vec and parser run, once per distinct question.

    Examples
    --------
    >>> import pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({"question": ["What did the Romans build?"],
    ...     "context": ["The Romans came. The Romans built roads."],
    ...     "answers": [["roads"]], "answer_starts": [[34]]}), "qa")
    >>> SubjectPosition().compute(ds)  # doctest: +SKIP
    array([2.])
    """

    name: ClassVar[str] = "subject_position"
    tasks: ClassVar[tuple[str, ...]] = ("qa",)
    description: ClassVar[str] = (
        "Number of occurrences of the question's subject in the context before the gold "
        "answer (0: answer first, 1: after it, >=2: after several); integer >= 0."
    )
    source: ClassVar[str] = f"{PAPER}, Sec. 4.1 'subj-pos'"
    requires_spacy: ClassVar[bool] = True

    def _compute(self, dataset, *, train, nlp, progress):
        from spurious.heuristics.nlp import pipe_unique

        subjects = pipe_unique(
            nlp,
            dataset.texts("question"),
            question_subjects,
            components=["parser"],
            batch_size=128,
            progress=progress,
            desc=f"{self.name}: parse of questions",
        )
        values = np.full(len(dataset), np.nan)
        reasons: list[str] = []
        for i, ((_, context, answers, starts), subj) in enumerate(
            zip(_rows(dataset), subjects, strict=True)
        ):
            span = answer_span(context, answers, starts)
            if isinstance(span, str):
                reasons.append(span)
                continue
            if not subj:
                reasons.append("question has no nominal subject")
                continue
            found = None
            for expression, head in subj:
                found = _occurrences(expression, context) or _occurrences(head, context)
                if found:
                    break
            if not found:
                reasons.append("question subject not found in the context")
                continue
            values[i] = sum(s < span[0] for s in found)
        return values, reasons
