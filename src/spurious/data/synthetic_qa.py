"""Synthetic extractive QA with a planted, known answer-position shortcut (tests, checks).

Every context is a short list of template sentences drawn independently from one
distribution ("The red falcon watched the copper near the river in 1931."); the question
restates one of them, the *gold* sentence, without its object, and the answer is that
object. Reading the question against the sentences finds the answer (the question shares
the gold sentence's subject, verb and place); without a planted cue nothing else does:
sentences are exchangeable, so neither the passage alone nor the question alone beats
chance (1 / number of sentences). The planted cue puts the gold sentence **first** in a
share of the items (the position bias of real QA sets, Ko et al. 2020).
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd

from spurious.data.dataset import Dataset
from spurious.utils.validation import Interval, StrOptions, check_params

__all__ = ["SyntheticQA", "make_qa_artifacts"]

_ADJ = ("red", "old", "small", "quiet", "tall", "young", "pale", "swift", "dark", "brave")
_SUBJ = (
    "falcon", "farmer", "otter", "teacher", "heron", "sailor", "badger", "miller", "fox",
    "weaver", "potter", "hunter", "walrus", "baker", "trader", "monk",
)  # fmt: skip
_VERB = ("watched", "carried", "painted", "found", "sold", "hid", "cleaned", "measured")
_OBJ = (
    "copper", "lantern", "basket", "ladder", "mirror", "anchor", "barrel", "compass",
    "kettle", "saddle", "violin", "helmet", "blanket", "hammer", "candle", "bucket",
)  # fmt: skip
_PLACE = ("river", "market", "harbour", "forest", "bridge", "chapel", "meadow", "quarry")


@dataclass
class SyntheticQA:
    """Questions, and which of them carry the planted cue (``has_artifact``)."""

    dataset: Dataset
    has_artifact: np.ndarray
    params: dict[str, Any]


def make_qa_artifacts(
    n: int = 300,
    artifact: str = "position",
    artifact_rate: float = 0.8,
    n_sentences: tuple[int, int] = (3, 6),
    questions_per_article: int = 5,
    random_state: int | np.random.Generator | None = 0,
) -> SyntheticQA:
    """Generate extractive QA items whose answer sentence is first in a share of them.

    Parameters
    ----------
    n : int, default=300
        Number of questions (one context each).
    artifact : {"position", "none"}, default="position"
        ``"position"``: the gold sentence is the first in ``round(artifact_rate * n)``
        items and at a uniformly drawn position in the others; ``"none"``: uniformly
        drawn everywhere.
    artifact_rate : float in [0, 1], default=0.8
    n_sentences : (int, int), default=(3, 6)
        Sentences per context, drawn uniformly from this closed range.
    questions_per_article : int, default=5
        Consecutive questions share a ``title`` (grouped cross-fitting keeps an
        article's questions in one fold).
    random_state : int, numpy.random.Generator or None, default=0

    Returns
    -------
    SyntheticQA
        ``dataset`` (task ``qa``; ids ``"qa-00000"``...; ``answers`` and
        ``answer_starts`` lists), ``has_artifact`` and ``params``.

    Examples
    --------
    >>> out = make_qa_artifacts(n=4, artifact_rate=1.0, random_state=0)
    >>> row = out.dataset.frame.iloc[0]
    >>> row["question"]
    'What did the brave falcon painted near the meadow in 1934?'
    >>> row["context"].split(". ")[0], row["answers"], row["answer_starts"]
    ('The brave falcon painted the barrel near the meadow in 1934', ['barrel'], [29])
    """
    check_params(
        {
            "n": [Interval(Integral, 2, None, closed="left")],
            "artifact": [StrOptions({"position", "none"})],
            "artifact_rate": [Interval(Real, 0, 1, closed="both")],
            "n_sentences": [tuple, list],
            "questions_per_article": [Interval(Integral, 1, None, closed="left")],
            "random_state": ["random_state", np.random.Generator],
        },
        {
            "n": n,
            "artifact": artifact,
            "artifact_rate": artifact_rate,
            "n_sentences": n_sentences,
            "questions_per_article": questions_per_article,
            "random_state": random_state,
        },
        "make_qa_artifacts",
    )
    lo, hi = (int(x) for x in n_sentences)
    rng = (
        random_state
        if isinstance(random_state, np.random.Generator)
        else np.random.default_rng(random_state)
    )
    planted = np.zeros(n, dtype=bool)
    if artifact == "position":
        planted[rng.permutation(n)[: round(artifact_rate * n)]] = True
    rows = []
    for i in range(n):
        k = int(rng.integers(max(lo, 2), max(hi, lo, 2) + 1))
        # Distinct subjects and objects within a context: one sentence answers the question.
        subj = rng.choice(len(_SUBJ), k, replace=False)
        obj = rng.choice(len(_OBJ), k, replace=False)
        sents = []
        for j in range(k):
            adj, verb = _ADJ[rng.integers(len(_ADJ))], _VERB[rng.integers(len(_VERB))]
            place, year = _PLACE[rng.integers(len(_PLACE))], int(rng.integers(1800, 2000))
            sents.append((adj, _SUBJ[subj[j]], verb, _OBJ[obj[j]], place, year))
        gold = 0 if planted[i] else int(rng.integers(k))
        texts = [f"The {a} {s} {v} the {o} near the {p} in {y}." for a, s, v, o, p, y in sents]
        context = " ".join(texts)
        a, s, v, o, p, y = sents[gold]
        start = sum(len(t) + 1 for t in texts[:gold]) + texts[gold].index(f"the {o} ") + 4
        rows.append(
            {
                "id": f"qa-{i:05d}",
                "title": f"article{i // questions_per_article}",
                "question": f"What did the {a} {s} {v} near the {p} in {y}?",
                "context": context,
                "answers": [o],
                "answer_starts": [start],
            }
        )
    params = {
        "n": n,
        "artifact": artifact,
        "artifact_rate": float(artifact_rate),
        "n_sentences": [lo, hi],
        "questions_per_article": questions_per_article,
    }
    ds = Dataset.from_frame(pd.DataFrame(rows), "qa", name=f"synthetic-qa-{artifact}")
    return SyntheticQA(ds, planted, params)
