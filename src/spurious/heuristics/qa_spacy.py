"""The two QA heuristics of paper 001 that read a spaCy parse: *sim-ents*, *subj-pos*.

:class:`EntityCount` counts the context's named entities of the type the question asks
for (:func:`question_entity_types`); :class:`SubjectPosition` counts the occurrences of
the question's subject (:func:`question_subjects`) before the answer. spaCy is imported
only when they compute. The conventions they share are in :mod:`spurious.heuristics.qa`.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from spurious.data.dataset import Dataset  # noqa: F401  (the doctests build datasets)
from spurious.heuristics.base import STOPWORDS, Heuristic, register_heuristic, words
from spurious.heuristics.qa_spans import PAPER, answer_span, qa_rows
from spurious.utils.validation import StrOptions

if TYPE_CHECKING:  # pragma: no cover
    from spacy.tokens import Doc

__all__ = [
    "HOW_TYPES",
    "NOUN_TYPES",
    "EntityCount",
    "SubjectPosition",
    "question_entity_types",
    "question_subjects",
]

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
            zip(qa_rows(dataset), subjects, strict=True)
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
