"""What a prediction file may hold (column names, kinds) and :class:`PredictionSet`.

The constants name the columns searched for in a prediction file and the thresholds of
the gold-column check; :class:`PredictionSet` is one model's predictions once aligned
to a dataset (see :mod:`spurious.data.predictions`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from spurious.exceptions import ParameterError

__all__ = [
    "CORRECTNESS_FIELDS",
    "GOLD_FIELDS",
    "GOLD_LIKE_MIN_ROWS",
    "GOLD_LIKE_SHARE",
    "KINDS",
    "LM_EVAL_FIELDS",
    "MC_SCORE_FIELDS",
    "PROBABILITY_FIELDS",
    "PROBABILITY_PREFIXES",
    "VALUE_FIELDS",
    "WRONG_ANSWER",
    "PredictionSet",
    "check_choice",
]

#: Column names tried, in order, for the predicted value when ``value_field`` is not given.
VALUE_FIELDS = (
    "prediction",
    "pred",
    "prediction_text",
    "answer",
    "predicted_label",
    "pred_label",
    "predicted",
)
#: Columns read as correctness (0/1 or true/false per example).
CORRECTNESS_FIELDS = ("correct", "is_correct", "correctness")
#: List columns read as probabilities in the dataset's label order.
PROBABILITY_FIELDS = ("probabilities", "probs", "probability")
#: List columns read as per-option scores of multiple-choice items (task ``mcq`` only, so
#: a ``scores`` column of another task is read as before): log-probabilities,
#: similarities or probabilities, one per option in option order.
MC_SCORE_FIELDS = ("scores", "option_scores", "logprobs", "log_probs", "loglikelihoods", "logits")
#: Per-option response columns of an lm-evaluation-harness ``samples_*.jsonl`` file, in the
#: order tried: ``filtered_resps`` (after the task's filters) is what its ``acc`` scores.
LM_EVAL_FIELDS = ("filtered_resps", "resps")
#: Prefixes of per-label probability columns (``prob_entailment``); bare label names count too.
PROBABILITY_PREFIXES = ("prob_", "p_", "probability_")
#: Gold columns: never read as a prediction unless ``value_field`` names one.
GOLD_FIELDS = ("label", "gold_label", "gold", "label_id", "answers", "answerKey")
#: Above this share of predictions equal to gold, a warning asks whether gold was read.
GOLD_LIKE_SHARE = 0.999
#: ... on at least this many rows (a perfect score on a handful of rows says little).
GOLD_LIKE_MIN_ROWS = 100
#: Kinds of prediction file.
KINDS = ("auto", "labels", "correctness", "probabilities")
#: A QA answer that matches no gold answer: the value of a "wrong" correctness entry.
WRONG_ANSWER = "\u2205"  # one token no gold answer holds: EM and F1 0


@dataclass(frozen=True, eq=False)
class PredictionSet:
    """One model's predictions, aligned to a dataset's row order.

    Attributes
    ----------
    name : str
        The model's name (file stem by default), used in tables and metric names.
    values : numpy.ndarray
        One value per dataset row: answer texts (object array of str) for QA, label ids
        (``int64``) for classification; for multiple choice (task ``mcq``) the 0-based
        position of the predicted option (``0`` = ``"A"``), always one of the item's
        options. From a correctness file: the gold label (first
        gold answer) where the model was right, ``-1`` (:data:`WRONG_ANSWER`) where it
        was wrong, so accuracy (EM and F1) reproduce the file's correctness.
    ids : numpy.ndarray
        The dataset's ids, in the same order (object array of str).
    source : str or None
        The file the predictions were read from.
    missing : numpy.ndarray of bool
        True for the examples the file had no prediction for. Their value is a
        prediction that is always wrong: the empty answer ``""`` for QA (EM and F1 0
        unless a gold answer is itself empty after SQuAD's normalisation) and the label
        id ``-1`` (no class) for classification. All False when nothing is missing.
    kind : {"labels", "correctness", "probabilities"}
        What the file held. From a correctness file the wrong label is unknown (``-1``):
        use such predictions for scores, not for confusion tables.
    probabilities : numpy.ndarray or None
        ``(n, n_classes)`` probabilities in the dataset's label order (NaN rows where
        missing); ``None`` unless ``kind="probabilities"``. For multiple choice: one
        column per option letter, the softmax of the per-option scores a file gave
        (unchanged when every row already was a distribution), ``0`` past an item's last
        option.

    Examples
    --------
    >>> import pandas as pd
    >>> from spurious.data.dataset import Dataset
    >>> ds = Dataset.from_frame(pd.DataFrame({"id": ["a", "b"], "question": ["q1", "q2"],
    ...     "context": ["c1", "c2"], "answers": [["x"], ["y"]]}), "qa")
    >>> from spurious.data.predictions import align_predictions
    >>> p = align_predictions({"b": "y", "a": "z"}, ds, name="m")
    >>> p.values.tolist(), len(p), p.n_missing
    (['z', 'y'], 2, 0)
    """

    name: str
    values: np.ndarray
    ids: np.ndarray
    source: str | None = None
    missing: np.ndarray = field(default=None)  # type: ignore[assignment]
    kind: str = "labels"
    probabilities: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.missing is None:
            object.__setattr__(self, "missing", np.zeros(len(self.values), dtype=bool))

    def __len__(self) -> int:
        return len(self.values)

    @property
    def n_missing(self) -> int:
        """Number of examples the predictions did not cover (scored as wrong)."""
        return int(self.missing.sum())


def check_choice(param: str, value: Any, choices: Sequence[str], owner: str) -> None:
    """Raise :class:`~spurious.exceptions.ParameterError` unless ``value`` is a choice."""
    if value not in choices:
        raise ParameterError(
            f"The {param!r} parameter of {owner} must be one of {list(choices)}. "
            f"Got {value!r} instead."
        )
