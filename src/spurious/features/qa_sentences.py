"""Answer-sentence selection: extractive QA as choosing one of a context's sentences.

Extractive QA is reduced to a choice among candidates, **answer-sentence selection**: a
question's candidates are the sentences of its context (split by
:func:`spurious.heuristics.qa.sentence_starts`, the splitter the QA heuristics use), and
its label is the index of the sentence holding the first gold answer's start
(:func:`answer_sentences`). A model sees a set of features per (question, sentence)
pair, packed one question per row (:func:`pack_candidates`) for the conditional logit
(:class:`~spurious.models.conditional_logit.ConditionalLogit`). Two analyses use it:
``fairness`` filters QA with AFLite on it (paper 004 filters classification sets only)
and ``qa_partial_input`` measures question-only and passage-only baselines with it
(the partial-input views are built in :mod:`spurious.features.qa_views`).

The feature sets of :func:`candidate_features`, weakest first (:data:`QA_ADVERSARIES`,
the fairness adversaries):

- ``qa_position``: the sentence's position (first, last, relative, log index) and length;
- ``qa_lexical``: + unigram and bigram overlap with the question, tf-idf cosine and a
  BM25 score (scikit-learn's ``TfidfVectorizer`` / ``CountVectorizer`` fitted on the
  sentences; unsupervised, so fitting on every sentence leaks no label);
- ``qa_heuristic``: + the sentence's answer types (spaCy NER over each distinct context,
  grouped: person, place, organisation, date/time, number, money/percent, other name)
  x the question's wh-word, and whether and how often the sentence holds an entity of the
  type the question asks for (:func:`spurious.heuristics.qa.question_entity_types`, paper
  001's sim-ents typing, per sentence). Without spaCy's model, regular-expression cues (a
  number, a year, a month, a capitalised word, a percent/currency sign) stand in, with a
  warning.
"""

from __future__ import annotations

import bisect
import itertools
import logging
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from spurious.data.dataset import Dataset
from spurious.exceptions import ParameterError
from spurious.heuristics.base import STOPWORDS, words
from spurious.heuristics.qa import answer_span, question_entity_types, sentence_starts

logger = logging.getLogger(__name__)

__all__ = [
    "QA_ADVERSARIES",
    "WH_ORDER",
    "SentenceCandidates",
    "answer_sentences",
    "answer_type_features",
    "candidate_features",
    "lexical_features",
    "pack_candidates",
    "position_features",
    "question_type",
    "regex_cues",
]

#: QA adversaries, weakest first (feature sets of :func:`candidate_features`).
QA_ADVERSARIES = ("qa_position", "qa_lexical", "qa_heuristic")
#: Question types (first wh-word) crossed with the sentence's answer-type cues.
_WH_GROUPS = {
    "who": "who", "whom": "who", "whose": "who", "when": "when", "where": "where",
    "which": "which", "what": "what", "why": "why", "how": "how",
}  # fmt: skip
WH_ORDER = ("who", "when", "where", "which", "what", "why", "how", "how_quantity", "other")
_CUES = {
    "number": re.compile(r"\d"),
    "year": re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b"),
    "month": re.compile(
        r"\b(January|February|March|April|May|June|July|August|September|October|November|"
        r"December)\b"
    ),
    # A capitalised word that is not the sentence's first: a proper-name cue.
    "capitalised": re.compile(r"(?<=\s)[A-Z][a-z]+"),
    "percent_currency": re.compile(r"[%$£€]|\bpercent\b|\bdollars?\b"),
}
# Which cue stands in for which spaCy entity type (question_entity_types' labels).
_TYPE_CUES = {
    "DATE": ("year", "month"), "TIME": ("number",), "CARDINAL": ("number",),
    "QUANTITY": ("number",), "MONEY": ("percent_currency", "number"),
    "PERCENT": ("percent_currency",), "PERSON": ("capitalised",), "GPE": ("capitalised",),
    "LOC": ("capitalised",), "FAC": ("capitalised",), "ORG": ("capitalised",),
    "NORP": ("capitalised",), "LANGUAGE": ("capitalised",),
}  # fmt: skip
_BM25_K1, _BM25_B = 1.2, 0.75


@dataclass
class SentenceCandidates:
    """The sentences of every question's context, flattened question by question.

    Attributes
    ----------
    question : ndarray of int64, shape (n_candidates,)
        Row of the question each candidate belongs to (ascending, contiguous).
    position : ndarray of int64, shape (n_candidates,)
        The sentence's index in its context (0 = first).
    n_sentences : ndarray of int64, shape (n,)
        Sentences per question's context.
    text : list of str
        The sentence of each candidate.
    label : ndarray of int64, shape (n,)
        Index of the sentence holding the first gold answer's start; -1 where no answer
        could be located (such questions get no stage).
    contexts : list of str, optional
        The context of every question (for the named entities of ``qa_heuristic``).
    bounds : list of list of int, optional
        Per question, the character offsets where its context's sentences start.
    """

    question: np.ndarray
    position: np.ndarray
    n_sentences: np.ndarray
    text: list[str]
    label: np.ndarray
    contexts: list[str] | None = None
    bounds: list[list[int]] | None = None

    @property
    def max_candidates(self) -> int:
        """K: the most sentences any context has."""
        return int(self.n_sentences.max()) if len(self.n_sentences) else 0

    def concat(self, other: SentenceCandidates) -> SentenceCandidates:
        """The questions of ``self`` then those of ``other`` (two splits as one).

        Examples
        --------
        >>> a = SentenceCandidates(np.array([0, 0]), np.array([0, 1]), np.array([2]),
        ...                        ["x", "y"], np.array([1]))
        >>> b = a.concat(a)
        >>> b.question.tolist(), b.label.tolist()
        ([0, 0, 1, 1], [1, 1])
        """

        def joined(x: list[Any] | None, y: list[Any] | None) -> list[Any] | None:
            return None if x is None or y is None else [*x, *y]

        return SentenceCandidates(
            question=np.concatenate([self.question, other.question + len(self.n_sentences)]),
            position=np.concatenate([self.position, other.position]),
            n_sentences=np.concatenate([self.n_sentences, other.n_sentences]),
            text=[*self.text, *other.text],
            label=np.concatenate([self.label, other.label]),
            contexts=joined(self.contexts, other.contexts),
            bounds=joined(self.bounds, other.bounds),
        )


def answer_sentences(dataset: Dataset) -> SentenceCandidates:
    """Split every context into sentences; label each question with its answer's sentence.

    Parameters
    ----------
    dataset : Dataset
        A QA dataset (``question``, ``context``, ``answers``, optional ``answer_starts``).

    Returns
    -------
    SentenceCandidates

    Examples
    --------
    >>> import pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({"question": ["Who left?"],
    ...     "context": ["Ann met Bob. Bob left. Ann stayed."], "answers": [["Bob"]],
    ...     "answer_starts": [[13]]}), "qa")
    >>> c = answer_sentences(ds)
    >>> c.label.tolist(), c.text
    ([1], ['Ann met Bob.', 'Bob left.', 'Ann stayed.'])
    """
    if dataset.task.name != "qa":
        raise ParameterError(
            f"The 'dataset' parameter must be a QA dataset; got task {dataset.task.name!r}."
        )
    f = dataset.frame
    starts_col = f["answer_starts"] if "answer_starts" in f else [None] * len(f)
    memo: dict[str, tuple[list[int], list[str]]] = {}
    q_idx: list[int] = []
    pos: list[int] = []
    n_sent: list[int] = []
    texts: list[str] = []
    labels: list[int] = []
    all_bounds: list[list[int]] = []
    for i, (context, answers, starts) in enumerate(
        zip(f["context"], f["answers"], starts_col, strict=True)
    ):
        if context not in memo:
            bounds = sentence_starts(context)
            ends = [*bounds[1:], len(context)]
            memo[context] = (
                bounds,
                [context[a:b].strip() for a, b in zip(bounds, ends, strict=True)],
            )
        bounds, sents = memo[context]
        all_bounds.append(bounds)
        span = answer_span(
            context,
            list(answers) if answers is not None else [],
            list(starts) if starts is not None else [],
        )
        labels.append(bisect.bisect_right(bounds, span[0]) - 1 if isinstance(span, tuple) else -1)
        q_idx.extend([i] * len(sents))
        pos.extend(range(len(sents)))
        n_sent.append(len(sents))
        texts.extend(sents)
    unlabelled = sum(v < 0 for v in labels)
    if unlabelled:
        logger.warning("%d question(s) without a located gold answer get no stage", unlabelled)
    return SentenceCandidates(
        question=np.asarray(q_idx, dtype=np.int64),
        position=np.asarray(pos, dtype=np.int64),
        n_sentences=np.asarray(n_sent, dtype=np.int64),
        text=texts,
        label=np.asarray(labels, dtype=np.int64),
        contexts=[str(x) for x in f["context"]],
        bounds=all_bounds,
    )


def _pair_sums(Q: sp.csr_matrix, S: sp.csr_matrix, cands: SentenceCandidates) -> np.ndarray:
    """Per candidate: sum over terms of Q[question] * S[candidate] (row-wise dot products)."""
    return np.asarray(Q[cands.question].multiply(S).sum(axis=1)).ravel()


def position_features(c: SentenceCandidates) -> dict[str, np.ndarray]:
    n = c.n_sentences[c.question]
    return {
        "is_first": (c.position == 0).astype(float),
        "is_last": (c.position == n - 1).astype(float),
        "relative_position": c.position / np.maximum(n - 1, 1),
        "log_position": np.log1p(c.position),
        "log_length": np.log1p([len(words(s)) for s in c.text]),
    }


def lexical_features(c: SentenceCandidates, questions: Sequence[str]) -> dict[str, np.ndarray]:
    from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

    q_words = [words(q) for q in questions]
    s_words = [words(s) for s in c.text]
    uni, frac, bi = [], [], []
    for qi, sw in zip(c.question, s_words, strict=True):
        qw = q_words[qi]
        content = set(qw) - STOPWORDS
        shared = len(content & set(sw))
        uni.append(shared)
        frac.append(shared / max(1, len(content)))
        bi.append(len(set(itertools.pairwise(qw)) & set(itertools.pairwise(sw))))
    # tf-idf and BM25 weights come from the sentences (the "documents" being retrieved).
    tfidf = TfidfVectorizer(analyzer=words, sublinear_tf=True).fit(c.text)
    cosine = _pair_sums(tfidf.transform(questions), tfidf.transform(c.text), c)
    counts = CountVectorizer(analyzer=words, vocabulary=tfidf.vocabulary_)
    tf = counts.transform(c.text).tocsr().astype(np.float64)
    length = np.asarray(tf.sum(axis=1)).ravel()
    norm = _BM25_K1 * (1 - _BM25_B + _BM25_B * length / max(length.mean(), 1e-12))
    rows = np.repeat(np.arange(tf.shape[0]), np.diff(tf.indptr))
    tf.data = tfidf.idf_[tf.indices] * tf.data * (_BM25_K1 + 1) / (tf.data + norm[rows])
    q_bin = counts.transform(questions).tocsr()
    q_bin.data[:] = 1.0
    return {
        "unigram_overlap": np.log1p(uni),
        "unigram_overlap_share": np.asarray(frac, dtype=float),
        "bigram_overlap": np.log1p(bi),
        "tfidf_cosine": cosine,
        "bm25": _pair_sums(q_bin, tf, c),
    }


def question_type(question: str) -> str:
    ws = words(question)
    for i, w in enumerate(ws):
        if w in _WH_GROUPS:
            if w == "how" and i + 1 < len(ws) and ws[i + 1] in ("many", "much"):
                return "how_quantity"
            return _WH_GROUPS[w]
    return "other"


def regex_cues(texts: Sequence[str]) -> dict[str, np.ndarray]:
    """Regular-expression answer-type cues of each text (1.0 where present).

    A number, a year, a month, a capitalised word that is not the first, a percent or
    currency sign: what a sentence could answer, without spaCy.

    Examples
    --------
    >>> {k: v.tolist() for k, v in regex_cues(["It rose 5% in May 1990."]).items()}
    {'number': [1.0], 'year': [1.0], 'month': [1.0], 'capitalised': [1.0], 'percent_currency': [1.0]}
    """
    return {
        k: np.array([bool(rx.search(s)) for s in texts], dtype=float) for k, rx in _CUES.items()
    }


#: spaCy entity labels grouped into answer types (OntoNotes labels of en_core_web_sm).
_ENTITY_GROUPS = {
    "person": ("PERSON",), "place": ("GPE", "LOC", "FAC"), "organisation": ("ORG", "NORP"),
    "date_time": ("DATE", "TIME"), "number": ("CARDINAL", "QUANTITY", "ORDINAL"),
    "money_percent": ("MONEY", "PERCENT"),
    "other_name": ("PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE"),
}  # fmt: skip


def _entity_spans(doc: Any) -> list[tuple[int, str]]:
    return [(ent.start_char, ent.label_) for ent in doc.ents]


def _sentence_entities(c: SentenceCandidates, progress: bool = False) -> list[Counter] | None:
    """Entity-label counts of every candidate sentence from spaCy's NER over each distinct
    context (the named entities paper 001's sim-ents counts); ``None`` without spaCy."""
    from spurious.exceptions import MissingDependencyError
    from spurious.heuristics.nlp import load_spacy, pipe_unique

    if c.contexts is None or c.bounds is None:
        return None
    try:
        nlp = load_spacy()
    except MissingDependencyError as e:
        logger.warning("qa_heuristic: %s; regular-expression answer-type cues instead", e)
        return None
    spans = pipe_unique(
        nlp, c.contexts, _entity_spans, components=["ner"], batch_size=64, progress=progress,
        desc="qa_heuristic: NER of contexts",
    )  # fmt: skip
    first = np.concatenate([[0], np.cumsum(c.n_sentences)[:-1]])
    out: list[Counter[str]] = [Counter() for _ in c.text]
    for qi, (ents, bounds) in enumerate(zip(spans, c.bounds, strict=True)):
        for start, label in ents:
            out[first[qi] + bisect.bisect_right(bounds, start) - 1][label] += 1
    return out


def answer_type_features(
    c: SentenceCandidates, questions: Sequence[str], *, spacy: bool = True, progress: bool = False
) -> dict[str, np.ndarray]:
    """Answer types of each sentence (spaCy NER, else regex cues) x the question's wh-word,
    and whether the sentence holds an entity of the type the question asks for.

    ``spacy=False`` uses the regular-expression cues (:func:`regex_cues`) without trying
    spaCy: deterministic, fast, and the same on every install.

    Examples
    --------
    >>> c = SentenceCandidates(np.array([0, 0]), np.array([0, 1]), np.array([2]),
    ...                        ["Ann left.", "It was in 1990."], np.array([1]))
    >>> f = answer_type_features(c, ["When did Ann leave?"], spacy=False)
    >>> f["when_x_year"].tolist(), f["expected_type_cue"].tolist()
    ([0.0, 1.0], [0.0, 1.0])
    """
    ents = _sentence_entities(c, progress) if spacy else None
    wanted = [question_entity_types(q) for q in questions]
    if ents is not None:
        cues = {
            g: np.array([any(e[lab] for lab in labels) for e in ents], dtype=float)
            for g, labels in _ENTITY_GROUPS.items()
        }
        n_match = np.array(
            [sum(e[t] for t in (wanted[qi] or ())) for qi, e in zip(c.question, ents, strict=True)],
            dtype=float,
        )
    else:
        cues = regex_cues(c.text)
        n_match = np.array(
            [
                float(any(cues[k][j] for t in (wanted[qi] or ()) for k in _TYPE_CUES.get(t, ())))
                for j, qi in enumerate(c.question)
            ]
        )
    q_type = np.array([question_type(q) for q in questions], dtype=object)[c.question]
    out: dict[str, np.ndarray] = {f"cue_{k}": v for k, v in cues.items()}
    for wh in WH_ORDER:
        is_wh = (q_type == wh).astype(float)
        for k, v in cues.items():
            out[f"{wh}_x_{k}"] = is_wh * v
    out["expected_type_cue"] = (n_match > 0).astype(float)
    out["expected_type_count"] = np.log1p(n_match)
    return out


def candidate_features(
    candidates: SentenceCandidates,
    questions: Sequence[str],
    adversary: str,
    *,
    progress: bool = False,
) -> tuple[np.ndarray, list[str]]:
    """Features of every (question, sentence) candidate for one QA adversary.

    Parameters
    ----------
    candidates : SentenceCandidates
    questions : sequence of str
        The questions, one per row of the dataset.
    adversary : {"qa_position", "qa_lexical", "qa_heuristic"}
        Each adds to the one before (:data:`QA_ADVERSARIES`).
    progress : bool, default=False
        A progress bar over spaCy's parse of the contexts (``qa_heuristic``).

    Returns
    -------
    features : ndarray of float64, shape (n_candidates, p)
    names : list of str

    Examples
    --------
    >>> import pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({"question": ["Who left?"],
    ...     "context": ["Ann met Bob. Bob left."], "answers": [["Bob"]]}), "qa")
    >>> F, names = candidate_features(answer_sentences(ds), ["Who left?"], "qa_lexical")
    >>> F.shape, names[5], F[:, 5].tolist()  # unigram overlap: 'left' in sentence 2
    ((2, 10), 'unigram_overlap', [0.0, 0.6931471805599453])
    """
    if adversary not in QA_ADVERSARIES:
        raise ParameterError(
            f"The 'adversary' parameter must be one of {list(QA_ADVERSARIES)}. "
            f"Got {adversary!r} instead."
        )
    feats = position_features(candidates)
    if adversary in ("qa_lexical", "qa_heuristic"):
        feats.update(lexical_features(candidates, questions))
    if adversary == "qa_heuristic":
        feats.update(answer_type_features(candidates, questions, progress=progress))
    names = list(feats)
    return np.column_stack([feats[k] for k in names]).astype(np.float64), names


def pack_candidates(candidates: SentenceCandidates, features: np.ndarray) -> np.ndarray:
    """Pad the candidates of each question into one row: shape (n, K * (1 + p)).

    Each block is ``[1, standardised features]`` for a real sentence and zeros for padding
    (the layout :class:`~spurious.models.conditional_logit.ConditionalLogit` reads).
    Features are standardised over the real candidates (constant ones become 0), so one
    ridge penalty suits them all.

    Examples
    --------
    >>> c = SentenceCandidates(np.array([0, 0, 1]), np.array([0, 1, 0]), np.array([2, 1]),
    ...                        ["a", "b", "c"], np.array([0, 0]))
    >>> pack_candidates(c, np.array([[0.0], [2.0], [1.0]])).tolist()
    [[1.0, -1.224744871391589, 1.0, 1.224744871391589], [1.0, 0.0, 0.0, 0.0]]
    """
    F = np.asarray(features, dtype=np.float64)
    sd = F.std(axis=0)
    F = (F - F.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    n, K, p = len(candidates.n_sentences), candidates.max_candidates, F.shape[1]
    X = np.zeros((n, K, 1 + p))
    X[candidates.question, candidates.position, 0] = 1.0
    X[candidates.question, candidates.position, 1:] = F
    return X.reshape(n, K * (1 + p))
