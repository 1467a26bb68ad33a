"""What the associations analysis tests besides the heuristics, and the QA null.

:func:`text_properties` measures simple properties of every text field (length in
words, punctuation marks, digits); :func:`null_spans` builds the null of QA (a random
span of the same context in place of the gold answer) and :func:`relative_position`
the one QA property (where the answer starts in its context).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from spurious.data.dataset import Dataset
from spurious.heuristics.base import words, words_of

_PUNCT = r"[^\w\s]"
_DIGIT = r"\d"


def text_properties(dataset: Dataset, fields: list[str] | None = None) -> pd.DataFrame:
    """Length in words, punctuation marks and digits of every text field.

    Words are those of the heuristics (:func:`spurious.heuristics.base.words`).

    Columns ``<field>_n_words``, ``<field>_n_punct``, ``<field>_n_digits`` (float64).

    Examples
    --------
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> ds = make_nli_artifacts(n=3, random_state=0).dataset
    >>> text_properties(ds, ["hypothesis"]).columns.tolist()
    ['hypothesis_n_words', 'hypothesis_n_punct', 'hypothesis_n_digits']
    """
    out = {}
    for field in fields or list(dataset.task.text_fields):
        s = pd.Series(dataset.texts(field), dtype=object).fillna("").astype(str)
        # The heuristics' tokenizer ("didn't" -> "did", "n't"), so hypothesis_n_words
        # equals hypothesis_length and is tested once.
        out[f"{field}_n_words"] = np.array([len(w) for w in words_of(s)], dtype=np.float64)
        out[f"{field}_n_punct"] = s.str.count(_PUNCT).astype(np.float64)
        out[f"{field}_n_digits"] = s.str.count(_DIGIT).astype(np.float64)
    return pd.DataFrame(out)


def null_spans(dataset: Dataset, random_state: int | None = 0) -> Dataset:
    """A copy of a QA dataset whose answer is a random span of the same context.

    The span has as many words as the first gold answer and starts at a word drawn
    uniformly among the other positions where it fits; it is the null of the QA
    associations: a heuristic that tells gold answers from such spans is a shortcut a
    model can take without reading the question's meaning. Rows without an answer keep
    none.

    Examples
    --------
    >>> frame = pd.DataFrame({"question": ["Who left?"], "context": ["Ann met Bob. Bob left."],
    ...                       "answers": [["Bob"]], "answer_starts": [[8]]})
    >>> ds = Dataset.from_frame(frame, "qa")
    >>> span = null_spans(ds).frame.iloc[0]
    >>> span["answers"][0] != "Bob" or span["answer_starts"][0] != 8
    True
    """
    from spurious.heuristics.base import word_spans

    rng = np.random.default_rng(random_state)
    frame = dataset.frame.copy()
    spans_of: dict[str, list[tuple[str, int, int]]] = {}
    new_answers, new_starts = [], []
    for context, answers, starts in zip(
        frame["context"],
        frame["answers"],
        frame["answer_starts"] if "answer_starts" in frame else [None] * len(frame),
        strict=True,
    ):
        answers = list(answers) if isinstance(answers, list | tuple | np.ndarray) else []
        starts = list(starts) if isinstance(starts, list | tuple | np.ndarray) else []
        spans = spans_of.setdefault(context, word_spans(context))
        k = max(1, len(words(answers[0]))) if answers else 0
        n_pos = len(spans) - k + 1
        if not answers or n_pos < 1:
            new_answers.append([])
            new_starts.append([])
            continue
        gold = starts[0] if starts else context.find(answers[0])
        options = [j for j in range(n_pos) if spans[j][1] != gold] or list(range(n_pos))
        j = options[int(rng.integers(len(options)))]
        begin, end = spans[j][1], spans[j + k - 1][2]
        new_answers.append([context[begin:end]])
        new_starts.append([begin])
    frame["answers"] = new_answers
    frame["answer_starts"] = new_starts
    return Dataset.from_frame(frame, "qa", name=f"{dataset.name}-null-spans")


def relative_position(dataset: Dataset) -> np.ndarray:
    """Start of the first gold answer as a share of the context's length (NaN without)."""
    out = np.full(len(dataset), np.nan)
    f = dataset.frame
    for i, (context, starts) in enumerate(zip(f["context"], f["answer_starts"], strict=True)):
        if isinstance(starts, list | tuple | np.ndarray) and len(starts) and len(context):
            out[i] = float(starts[0]) / len(context)
    return out
