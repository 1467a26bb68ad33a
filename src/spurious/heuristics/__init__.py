"""Heuristics h: example -> float that expose suspected shortcuts (paper 001, Sec. 3).

Seven extractive-QA heuristics of "Think Twice" (paper 001, Sec. 4.1) and six NLI /
sentence-pair heuristics (HANS overlap and subsequence, negation, length, word-label
PMI). Each is a registered class; :func:`compute_heuristics` computes several at once,
cached by dataset fingerprint and heuristic configuration.

Examples
--------
>>> from spurious.heuristics import list_heuristics
>>> list_heuristics("qa")
['answer_length', 'answer_sentence_rank', 'entity_count', 'qa_tfidf_similarity', 'shared_words', 'subject_position', 'word_distance']
"""

from spurious.heuristics import mcq, nli, qa  # noqa: F401  (importing registers the heuristics)
from spurious.heuristics.base import (
    HEURISTICS,
    STOPWORDS,
    Heuristic,
    HeuristicCache,
    compute_heuristics,
    get_heuristic,
    list_heuristics,
    register_heuristic,
    words,
)

__all__ = [
    "HEURISTICS",
    "STOPWORDS",
    "Heuristic",
    "HeuristicCache",
    "compute_heuristics",
    "get_heuristic",
    "list_heuristics",
    "register_heuristic",
    "words",
]
