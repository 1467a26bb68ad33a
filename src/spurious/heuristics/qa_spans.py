"""What the QA heuristics of paper 001 share: rows, the gold answer's span, sentences.

:func:`answer_span` locates the first gold answer (the convention all seven heuristics
follow, see :mod:`spurious.heuristics.qa`); :func:`sentence_starts` is the rule-based
sentence splitter (also used by :mod:`spurious.evaluate.fairness.qa`); the context's
words with their offsets are memoised per paragraph by the heuristics.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator

import numpy as np

from spurious.data.dataset import Dataset
from spurious.heuristics.base import word_spans

# The logger keeps the name it had before the QA heuristics were split, so logging
# configuration that targets it (and the CLI's "%(name)s" prefix) is unchanged.
logger = logging.getLogger("spurious.heuristics.qa")

__all__ = [
    "NOT_IN_CONTEXT",
    "NO_ANSWER",
    "PAPER",
    "ContextWords",
    "answer_span",
    "qa_rows",
    "sentence_starts",
]

#: How ``source`` cites paper 001 (shared/papers/001_a2bafe98649013f1.txt).
PAPER = "Think Twice: Measuring the Efficiency of Eliminating Prediction Shortcuts of Question Answering Models (paper 001)"

# -- shared helpers ----------------------------------------------------------------------

NO_ANSWER = "no gold answer"
NOT_IN_CONTEXT = "gold answer not found in the context"


def _as_list(v: object) -> list:
    return list(v) if isinstance(v, list | tuple | np.ndarray) else []


def qa_rows(dataset: Dataset) -> Iterator[tuple[str, str, list[str], list[int]]]:
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
        return NO_ANSWER
    text = answers[0]
    if starts:
        s = int(starts[0])
        if context[s : s + len(text)] == text:
            return s, s + len(text)
        logger.debug("answer_starts[0]=%d does not point at %r; searching the text", s, text)
    s = context.find(text)
    return (s, s + len(text)) if s >= 0 else NOT_IN_CONTEXT


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


class ContextWords:
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
