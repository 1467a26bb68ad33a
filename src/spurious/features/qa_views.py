"""Partial-input views of answer-sentence selection: what a model may see of a QA item.

Kaushik & Lipton (2018) ask how much of a reading-comprehension score survives when a
model sees only the question or only the passage. In answer-sentence selection
(:mod:`spurious.features.qa_sentences`: choose the sentence of the context that holds
the answer) a model scores every sentence with one weight vector and takes a softmax
over the item's sentences, so features that are the same for every sentence of an item
cannot move the choice. The views (:data:`QA_VIEWS`) differ in what a sentence's
features may depend on:

``position_only``
    The sentence's place in the context: first, last, relative position, log index.
    No reading at all; the prior over answer positions (Ko et al. 2020's position bias).
``passage_only``
    + the sentence itself, without the question: its length, answer-type cues (a
    number, a year, a month, a capitalised word, a percent or currency sign), how
    central it is to its passage (tf-idf cosine with the whole context) and a
    truncated SVD of its tf-idf vector (which words make a sentence answer-bearing).
``question_only``
    The question crossed with the position block: the question's wh-word, its length
    and a truncated SVD of its tf-idf vector, each times every position feature. The
    model learns where answers to *this kind of question* sit, but never reads a
    sentence (it sees the context's number of sentences through the relative position).
``full``
    Everything above, plus what relates the question to a sentence: unigram and bigram
    overlap, tf-idf cosine, BM25 and the wh-word x answer-type interactions
    (:func:`~spurious.features.qa_sentences.answer_type_features` with the
    regular-expression cues, so no spaCy and the same result on every install).

Every vectorizer (tf-idf, SVD) is fitted on the texts without their labels, so fitting
them on all the questions and sentences of a run leaks no label.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from spurious.exceptions import ParameterError
from spurious.features.qa_sentences import (
    WH_ORDER,
    SentenceCandidates,
    answer_type_features,
    lexical_features,
    pack_candidates,
    position_features,
    question_type,
    regex_cues,
)
from spurious.heuristics.base import words

__all__ = ["QA_VIEWS", "SentenceBlocks", "sentence_view_blocks"]

#: The views of answer-sentence selection, in the order the analysis reports them.
QA_VIEWS = ("full", "passage_only", "question_only", "position_only")
#: Position features (``position_features`` less the sentence length, which is content).
_POSITION = ("is_first", "is_last", "relative_position", "log_position")


@dataclass
class SentenceBlocks:
    """One view's packed candidates: ``X`` of shape ``(n, K * d)``.

    Attributes
    ----------
    X : ndarray of float64
        ``K`` blocks of ``d`` columns per question; column 0 of a block is 1 for a real
        sentence and 0 for padding (:func:`~spurious.features.qa_sentences.pack_candidates`).
    n_features : int
        ``d``, the indicator column included.
    columns : list of str
        The names of a block's ``d - 1`` feature columns.
    view : str
    """

    X: np.ndarray
    n_features: int
    columns: list[str]
    view: str


def _svd(texts: Sequence[str], n_components: int, random_state: int) -> np.ndarray:
    """A truncated SVD of the texts' tf-idf vectors (LSA), ``(len(texts), <= n_components)``."""
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    try:
        X = TfidfVectorizer(analyzer=words, sublinear_tf=True).fit_transform(texts)
    except ValueError:  # no word in any text: nothing to decompose
        return np.zeros((len(texts), 0))
    k = min(n_components, X.shape[1] - 1, X.shape[0] - 1)
    if k < 1:
        return np.zeros((len(texts), 0))
    svd = TruncatedSVD(k, algorithm="randomized", random_state=random_state)
    return svd.fit_transform(X)


def _centrality(c: SentenceCandidates) -> np.ndarray:
    """tf-idf cosine of each sentence with its whole context (unique contexts once)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    try:
        tfidf = TfidfVectorizer(analyzer=words, sublinear_tf=True).fit(c.text)
    except ValueError:  # no word in any sentence
        return np.zeros(len(c.text))
    contexts = c.contexts or [""] * len(c.n_sentences)
    codes, uniques = pd.factorize(pd.Series(contexts, dtype=object))
    C = tfidf.transform(list(uniques))[codes[c.question]]
    return np.asarray(C.multiply(tfidf.transform(c.text)).sum(axis=1)).ravel()


def _question_block(
    questions: Sequence[str], n_components: int, random_state: int
) -> dict[str, np.ndarray]:
    """Per question: its wh-word (one-hot), log length and an SVD of its tf-idf vector."""
    types = np.array([question_type(q) for q in questions], dtype=object)
    out = {f"wh_{wh}": (types == wh).astype(float) for wh in WH_ORDER}
    out["log_question_words"] = np.log1p([len(words(q)) for q in questions])
    svd = _svd(list(questions), n_components, random_state)
    out.update({f"question_pc{j}": svd[:, j] for j in range(svd.shape[1])})
    return out


def sentence_view_blocks(
    candidates: SentenceCandidates,
    questions: Sequence[str],
    views: Sequence[str] = QA_VIEWS,
    *,
    n_components: int = 16,
    random_state: int = 0,
) -> dict[str, SentenceBlocks]:
    """The packed candidates of every view in ``views`` (see the module docstring).

    Parameters
    ----------
    candidates : SentenceCandidates
        Every question's sentences (:func:`~spurious.features.qa_sentences.answer_sentences`).
    questions : sequence of str
        One question per item.
    views : sequence of str, default=QA_VIEWS
    n_components : int, default=16
        SVD dimensions of the sentences' tf-idf vectors; the questions get
        ``min(8, n_components)``.
    random_state : int, default=0
        Seed of the randomized SVDs.

    Returns
    -------
    dict of str to SentenceBlocks

    Examples
    --------
    >>> c = SentenceCandidates(np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]),
    ...                        np.array([2, 2]), ["Ann left.", "Bob won in 1990.",
    ...                        "Cy ran.", "Di sang."], np.array([1, 0]),
    ...                        contexts=["Ann left. Bob won in 1990.", "Cy ran. Di sang."])
    >>> b = sentence_view_blocks(c, ["Who won?", "Who ran?"], n_components=2)
    >>> b["position_only"].columns
    ['is_first', 'is_last', 'relative_position', 'log_position']
    >>> b["position_only"].X.shape, b["full"].n_features > b["passage_only"].n_features
    ((2, 10), True)
    """
    bad = [v for v in views if v not in QA_VIEWS]
    if bad or not views:
        raise ParameterError(
            f"The 'views' parameter must list views from {list(QA_VIEWS)}. Got {list(views)!r}."
        )
    pos_all = position_features(candidates)
    pos = {k: pos_all[k] for k in _POSITION}
    blocks: dict[str, dict[str, np.ndarray]] = {"position_only": dict(pos)}
    if {"passage_only", "full"} & set(views):
        sent = {"log_length": pos_all["log_length"]}
        sent.update({f"cue_{k}": v for k, v in regex_cues(candidates.text).items()})
        sent["centrality"] = _centrality(candidates)
        svd = _svd(candidates.text, n_components, random_state)
        sent.update({f"sentence_pc{j}": svd[:, j] for j in range(svd.shape[1])})
        blocks["passage_only"] = {**pos, **sent}
    if {"question_only", "full"} & set(views):
        q = _question_block(questions, min(8, n_components), random_state)
        # A question feature alone is the same for every sentence of its item and cannot
        # move the softmax: only its products with the position features can.
        cross = {
            f"{qn}*{pn}": qv[candidates.question] * pv
            for qn, qv in q.items()
            for pn, pv in pos.items()
        }
        blocks["question_only"] = {**pos, **cross}
    if "full" in views:
        full = {**blocks["passage_only"], **blocks["question_only"]}
        full.update(lexical_features(candidates, questions))
        typed = answer_type_features(candidates, questions, spacy=False)
        full.update({k: v for k, v in typed.items() if k not in full})
        blocks["full"] = full
    out = {}
    for v in views:
        names = list(blocks[v])
        F = np.column_stack([blocks[v][k] for k in names]).astype(np.float64)
        X = pack_candidates(candidates, F)
        out[v] = SentenceBlocks(X, 1 + F.shape[1], names, v)
    return out
