"""Per-example evaluation metrics: SQuAD v1.1 exact match / F1, and accuracy.

Metrics are computed **once per example**; everything downstream (bootstrap intervals,
prediction bias, threshold sweeps) only averages these arrays. Values are in ``[0, 1]``
(the official SQuAD script reports the same numbers times 100).

The SQuAD functions reproduce the official v1.1 evaluation script
(``evaluate-v1.1.py``): answers are normalised by lower-casing, removing ASCII
punctuation, removing the articles *a*, *an*, *the* and collapsing whitespace; a
prediction is scored against every gold answer and the maximum is kept. Two
consequences of the official script are kept on purpose, because published numbers
depend on them:

- F1 between two answers that normalise to the empty string is 0 (v1.1; the v2.0
  script changed this to 1), while their exact match is 1;
- only ASCII punctuation (``string.punctuation``) is removed, so "«Paris»" and
  "Paris" differ.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

import numpy as np

from spurious.exceptions import ParameterError

__all__ = [
    "QA_METRICS",
    "accuracy_scores",
    "example_scores",
    "leave_one_out_scores",
    "normalize_answer",
    "qa_scores",
    "resolve_metric",
    "squad_exact_match",
    "squad_f1",
]

#: Per-example metrics for extractive QA.
QA_METRICS = ("em", "f1")

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """Normalise an answer the way the official SQuAD v1.1 script does.

    Lower-case, drop ASCII punctuation, replace the articles *a*/*an*/*the* by a
    space, then collapse whitespace.

    Examples
    --------
    >>> normalize_answer("The  Denver Broncos!")
    'denver broncos'
    >>> normalize_answer("an apple, a day")
    'apple day'
    """
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _f1_tokens(pred: list[str], gold: list[str]) -> float:
    common = Counter(pred) & Counter(gold)
    num_same = sum(common.values())
    if num_same == 0:
        # Also when both are empty: the v1.1 script returns 0 there.
        return 0.0
    precision = num_same / len(pred)
    recall = num_same / len(gold)
    return 2 * precision * recall / (precision + recall)


def squad_exact_match(prediction: str, gold_answers: Sequence[str]) -> float:
    """Exact match (0 or 1) of ``prediction`` against the best gold answer.

    Returns NaN when there is no gold answer (the official script would fail).

    Examples
    --------
    >>> squad_exact_match("the Broncos", ["Denver Broncos", "Broncos"])
    1.0
    >>> squad_exact_match("Broncos.", ["Denver Broncos"])
    0.0
    """
    if len(gold_answers) == 0:
        return float("nan")
    p = normalize_answer(prediction)
    return float(any(p == normalize_answer(g) for g in gold_answers))


def squad_f1(prediction: str, gold_answers: Sequence[str]) -> float:
    """Token F1 of ``prediction`` against the best gold answer (official v1.1 scoring).

    Returns NaN when there is no gold answer.

    Examples
    --------
    >>> squad_f1("Denver", ["Denver Broncos"])  # P = 1, R = 1/2
    0.6666666666666666
    >>> squad_f1("Carolina Panthers", ["Denver Broncos", "the Panthers"])
    0.6666666666666666
    """
    if len(gold_answers) == 0:
        return float("nan")
    p = normalize_answer(prediction).split()
    return max(_f1_tokens(p, normalize_answer(g).split()) for g in gold_answers)


def qa_scores(
    predictions: Sequence[str], answers: Sequence[Sequence[str]], metric: str = "f1"
) -> np.ndarray:
    """Per-example SQuAD scores of ``predictions`` against lists of gold answers.

    Parameters
    ----------
    predictions : sequence of str
        One predicted answer text per example.
    answers : sequence of sequences of str
        The gold answers of each example (all annotators).
    metric : {"f1", "em"}
        Token F1 or exact match.

    Returns
    -------
    numpy.ndarray of float64
        Values in ``[0, 1]``; NaN where an example has no gold answer.

    Examples
    --------
    >>> qa_scores(["Denver", "gold"], [["Denver Broncos"], ["gold", "golden"]], "em").tolist()
    [0.0, 1.0]
    """
    if metric not in QA_METRICS:
        raise ParameterError(
            f"The 'metric' parameter must be one of {list(QA_METRICS)} for QA. "
            f"Got {metric!r} instead."
        )
    if len(predictions) != len(answers):
        raise ParameterError(
            f"'predictions' and 'answers' must have the same length. Got {len(predictions)} "
            f"and {len(answers)}."
        )
    fn = squad_f1 if metric == "f1" else squad_exact_match
    return np.fromiter(
        (fn(str(p), list(a)) for p, a in zip(predictions, answers, strict=True)),
        dtype=np.float64,
        count=len(predictions),
    )


def leave_one_out_scores(
    answers: Sequence[Sequence[str]], metric: str = "f1", n_annotators: int | None = None
) -> np.ndarray:
    """Score each annotator's answer against the other annotators' answers.

    Annotator ``k`` is the ``k``-th entry of each example's answer list (SQuAD dev
    lists one answer per annotator, in a fixed order). Its answer is the prediction
    and the remaining answers are the gold set, as in SQuAD's human-performance
    estimate.

    Parameters
    ----------
    answers : sequence of sequences of str
        All annotators' answers per example.
    metric : {"f1", "em"}
    n_annotators : int, optional
        Number of annotator rows to return (default: the longest answer list).

    Returns
    -------
    numpy.ndarray, shape (n_annotators, n_examples)
        NaN where annotator ``k`` gave no answer or nobody else did.

    Examples
    --------
    >>> leave_one_out_scores([["a cat", "cat", "dog"]], "em").ravel().tolist()
    [1.0, 1.0, 0.0]
    """
    if metric not in QA_METRICS:
        raise ParameterError(
            f"The 'metric' parameter must be one of {list(QA_METRICS)} for QA. "
            f"Got {metric!r} instead."
        )
    k_max = max((len(a) for a in answers), default=0) if n_annotators is None else n_annotators
    out = np.full((k_max, len(answers)), np.nan)
    fn = squad_f1 if metric == "f1" else squad_exact_match
    for j, answer_list in enumerate(answers):
        answer_list = list(answer_list)
        if len(answer_list) < 2:
            continue
        for k in range(min(k_max, len(answer_list))):
            out[k, j] = fn(answer_list[k], answer_list[:k] + answer_list[k + 1 :])
    return out


def accuracy_scores(
    predicted: Sequence[int] | np.ndarray, gold: Sequence[int] | np.ndarray
) -> np.ndarray:
    """Per-example accuracy (1.0 where the predicted label id equals the gold id).

    Examples
    --------
    >>> accuracy_scores([0, 1, 2], [0, 2, 2]).tolist()
    [1.0, 0.0, 1.0]
    """
    pred = np.asarray(predicted)
    gold = np.asarray(gold)
    if pred.shape != gold.shape:
        raise ParameterError(
            f"'predicted' and 'gold' must have the same shape. Got {pred.shape} and {gold.shape}."
        )
    return (pred == gold).astype(np.float64)


def example_scores(dataset, predictions, metric: str | None = None) -> np.ndarray:
    """Per-example scores of aligned predictions on ``dataset``.

    Parameters
    ----------
    dataset : Dataset
        QA rows need ``answers``; classification rows ``label_id``.
    predictions : PredictionSet or sequence
        Values aligned to ``dataset`` order: answer texts (QA) or label ids.
    metric : {"f1", "em", "accuracy"}, optional
        Default: :func:`resolve_metric` (``"em"`` for QA, ``"accuracy"`` otherwise).

    Returns
    -------
    numpy.ndarray of float64, shape (n_examples,)

    Examples
    --------
    >>> import pandas as pd
    >>> from spurious.data import Dataset
    >>> ds = Dataset.from_frame(pd.DataFrame({"question": ["q"], "context": ["c"],
    ...                                        "answers": [["the cat"]]}), "qa")
    >>> example_scores(ds, ["cat"], "em").tolist()
    [1.0]
    """
    values = getattr(predictions, "values", predictions)
    metric = resolve_metric(dataset.task.has_labels, metric)
    if len(values) != len(dataset):
        raise ParameterError(
            f"The predictions must have one value per example of {dataset.name!r} "
            f"({len(dataset)}). Got {len(values)} instead."
        )
    if metric == "accuracy":
        scores = accuracy_scores(np.asarray(values, dtype=np.int64), dataset.labels)
    else:
        scores = qa_scores(list(values), dataset.frame["answers"].tolist(), metric)
    missing = getattr(predictions, "missing", None)
    if missing is not None and np.any(missing):
        # An unanswered question scores 0, as in the official SQuAD evaluator (an empty
        # answer would match a gold answer that normalises to empty).
        scores = np.where(np.asarray(missing, dtype=bool), 0.0, scores)
    return scores


def resolve_metric(has_labels: bool, metric: str | None) -> str:
    """The metric to use for a task: ``em`` for QA and ``accuracy`` for classes by default.

    Exact match is the default for QA because paper 001 measures prediction bias with it
    (Sec. 3 step v, Figs. 2, 4, 5).

    Examples
    --------
    >>> resolve_metric(False, None), resolve_metric(True, None), resolve_metric(False, "f1")
    ('em', 'accuracy', 'f1')
    """
    if metric is None:
        return "accuracy" if has_labels else "em"
    allowed = ("accuracy",) if has_labels else QA_METRICS
    if metric not in allowed:
        kind = "classification" if has_labels else "QA"
        raise ParameterError(
            f"The 'metric' parameter must be one of {list(allowed)} for {kind} data. "
            f"Got {metric!r} instead."
        )
    return metric
