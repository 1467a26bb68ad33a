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

Modules: :mod:`~spurious.heuristics.qa_spans` (rows, the gold answer's span, the
sentence splitter), :mod:`~spurious.heuristics.qa_lexical` (the five heuristics that
need no spaCy model) and :mod:`~spurious.heuristics.qa_spacy` (*sim-ents* and
*subj-pos*, which read a spaCy parse). This module re-exports their public names;
importing it registers all seven.
"""

from __future__ import annotations

# Importing the two modules registers the seven heuristics (the registry lists them sorted).
from spurious.heuristics.qa_lexical import (
    AnswerLength,
    AnswerSentenceRank,
    QATfidfSimilarity,
    SharedWords,
    WordDistance,
)
from spurious.heuristics.qa_spacy import (
    HOW_TYPES,
    NOUN_TYPES,
    EntityCount,
    SubjectPosition,
    question_entity_types,
    question_subjects,
)
from spurious.heuristics.qa_spans import PAPER, answer_span, sentence_starts

__all__ = [
    "HOW_TYPES",
    "NOUN_TYPES",
    "PAPER",
    "AnswerLength",
    "AnswerSentenceRank",
    "EntityCount",
    "QATfidfSimilarity",
    "SharedWords",
    "SubjectPosition",
    "WordDistance",
    "answer_span",
    "question_entity_types",
    "question_subjects",
    "sentence_starts",
]
