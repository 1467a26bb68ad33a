"""Prediction values by kind: labels, correctness flags or probabilities -> one value per row.

:func:`prediction_values` turns the raw values a file gave for the covered rows into
the arrays of a :class:`~spurious.data.predictions.PredictionSet` (label ids, answer
texts, or the gold value where a correctness file says the model was right), and
:func:`warn_if_gold` notices predictions that look like the gold column.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from spurious.data.dataset import Dataset
from spurious.data.predictions.base import GOLD_LIKE_MIN_ROWS, GOLD_LIKE_SHARE, WRONG_ANSWER
from spurious.exceptions import LabelError, SchemaError

__all__ = ["infer_kind", "prediction_values", "warn_if_gold"]

# The logger keeps the name it had before predictions.py became a package, so logging
# configuration that targets it (and the CLI's "%(name)s" prefix) is unchanged.
logger = logging.getLogger("spurious.data.predictions")

_TRUE = {"1", "1.0", "true", "t", "yes", "y", "correct"}
_FALSE = {"0", "0.0", "false", "f", "no", "n", "wrong", "incorrect"}


def infer_kind(raw: Sequence[Any]) -> str:
    """``"correctness"`` for booleans, ``"probabilities"`` for lists or dicts, else labels."""
    sample = [v for v in raw[:1000] if v is not None]
    if sample and all(isinstance(v, bool | np.bool_) for v in sample):
        return "correctness"
    if sample and all(isinstance(v, list | tuple | dict | np.ndarray) for v in sample):
        return "probabilities"
    return "labels"


def _as_flag(v: Any) -> bool | None:
    if isinstance(v, bool | np.bool_):
        return bool(v)
    if isinstance(v, int | float | np.integer | np.floating) and v in (0, 1):
        return bool(v)
    key = str(v).strip().lower()
    return True if key in _TRUE else False if key in _FALSE else None


def _from_correctness(
    raw: Sequence[Any], present: np.ndarray, ids: np.ndarray, dataset: Dataset, name: str
) -> np.ndarray:
    flags = np.zeros(len(raw), dtype=bool)
    for k, v in enumerate(raw):
        flag = _as_flag(v)
        if flag is None:
            raise SchemaError(
                f"Predictions {name!r}, id {ids[present[k]]!r}: a correctness value must be "
                f"0/1 or true/false. Got {v!r} instead."
            )
        flags[k] = flag
    if dataset.task.has_labels:
        values = np.full(len(ids), -1, dtype=np.int64)
        values[present] = np.where(flags, dataset.labels[present], -1)
        return values
    # QA: the first gold answer where right (EM = F1 = 1), a non-answer where wrong.
    answers = dataset.frame["answers"].to_numpy()
    values = np.empty(len(ids), dtype=object)
    values[:] = ""
    for k, j in enumerate(present):
        gold = list(answers[j] or [])
        values[j] = str(gold[0]) if flags[k] and gold else WRONG_ANSWER
    return values


def _from_probabilities(
    raw: Sequence[Any], present: np.ndarray, ids: np.ndarray, dataset: Dataset, name: str
) -> tuple[np.ndarray, np.ndarray]:
    if not dataset.task.has_labels:
        raise SchemaError(
            f"Predictions {name!r}: probabilities need a classification task; "
            f"{dataset.name!r} is {dataset.task.name!r} (give answer texts)."
        )
    labels = list(dataset.label_names)
    c = len(labels)
    probs = np.full((len(ids), c), np.nan)
    for k, v in enumerate(raw):
        j = present[k]
        if isinstance(v, Mapping):
            unknown = sorted(set(map(str, v)) - set(labels))
            if unknown or len(v) != c:
                raise SchemaError(
                    f"Predictions {name!r}, id {ids[j]!r}: probabilities must name every label "
                    f"{labels} once. Got keys {sorted(map(str, v))} instead."
                )
            row = [v[lab] if lab in v else v.get(str(lab)) for lab in labels]
        else:
            row = list(v) if isinstance(v, list | tuple | np.ndarray) else None
        try:
            arr = np.asarray(row, dtype=float)
        except (TypeError, ValueError):
            arr = np.array([])
        if arr.shape != (c,) or not np.isfinite(arr).all():
            raise SchemaError(
                f"Predictions {name!r}, id {ids[j]!r}: expected {c} finite probabilities (one "
                f"per label, in the order {labels}). Got {v!r} instead."
            )
        if arr.min() < 0 or arr.max() > 1 or abs(arr.sum() - 1) > 0.02:
            raise SchemaError(
                f"Predictions {name!r}, id {ids[j]!r}: probabilities must lie in [0, 1] and "
                f"sum to 1 (within 0.02). Got {arr.tolist()} (sum {arr.sum():.4g}); logits "
                "need a softmax first."
            )
        probs[j] = arr
    values = np.full(len(ids), -1, dtype=np.int64)
    values[present] = np.argmax(probs[present], axis=1)
    return values, probs


def warn_if_gold(
    values: np.ndarray, present: np.ndarray, dataset: Dataset, name: str, kind: str
) -> None:
    """Warn when the predictions agree with gold on more than :data:`GOLD_LIKE_SHARE`."""
    if present.size < GOLD_LIKE_MIN_ROWS:
        return
    if dataset.task.has_labels:
        same = float(np.mean(values[present] == dataset.labels[present]))
    else:
        answers = dataset.frame["answers"].to_numpy()
        same = float(
            np.mean([str(values[j]).strip() in map(str, answers[j] or []) for j in present])
        )
    if same > GOLD_LIKE_SHARE:
        what = "say the model is right" if kind == "correctness" else "equal the gold label"
        logger.warning(
            "Predictions %r %s on %.2f%% of the %d rows (%d wrong): is the prediction column "
            "the gold column? Name the prediction with value_field= (--value-field) if not.",
            name,
            what,
            100 * same,
            present.size,
            round((1 - same) * present.size),
        )


def _label_ids(raw: list[Any], ids: np.ndarray, dataset: Dataset, name: str) -> np.ndarray:
    index = {lab: k for k, lab in enumerate(dataset.label_names)}
    n = len(dataset.label_names)
    out = np.empty(len(raw), dtype=np.int64)
    for j, v in enumerate(raw):
        key = str(int(v)) if isinstance(v, float) and float(v).is_integer() else str(v).strip()
        k = index.get(key)
        if k is None:
            try:
                k = int(key)
            except ValueError:
                k = -1
            if not 0 <= k < n:
                raise LabelError(
                    f"Predictions {name!r}, id {ids[j]!r}: unknown label {v!r}; expected one of "
                    f"{list(dataset.label_names)} (or an integer in [0, {n}))."
                )
        out[j] = k
    return out


def prediction_values(
    raw: list[Any],
    present: np.ndarray,
    ids: np.ndarray,
    dataset: Dataset,
    name: str,
    kind: str,
) -> tuple[np.ndarray, np.ndarray | None]:
    """One value per dataset row from the ``raw`` values of the ``present`` rows.

    Parameters
    ----------
    raw : list
        The predictions of the rows ``present``, in that order.
    present : numpy.ndarray of int
        Dataset rows that have a prediction; the others get an always-wrong value
        (``-1``, or ``""`` for QA).
    ids : numpy.ndarray
        The dataset's ids (for messages).
    dataset : Dataset
    name : str
        Model name (for messages).
    kind : {"labels", "correctness", "probabilities"}
        Already resolved (not ``"auto"``).

    Returns
    -------
    values : numpy.ndarray
        Label ids (``int64``) or answer texts (object).
    probabilities : numpy.ndarray or None
        ``(n, n_classes)`` for ``kind="probabilities"``, else ``None``.
    """
    probs = None
    if kind == "correctness":
        values = _from_correctness(raw, present, ids, dataset, name)
    elif kind == "probabilities":
        values, probs = _from_probabilities(raw, present, ids, dataset, name)
    elif dataset.task.has_labels:
        values = np.full(len(ids), -1, dtype=np.int64)
        values[present] = _label_ids(raw, ids[present], dataset, name)
    else:
        values = np.empty(len(ids), dtype=object)
        values[:] = ""
        for j, v in zip(present, raw, strict=True):
            if v is None or isinstance(v, dict | list):
                raise SchemaError(
                    f"Predictions {name!r}, id {ids[j]!r}: a QA prediction must be an answer "
                    f"string. Got {type(v).__name__} {v!r} instead."
                )
            values[j] = str(v)
    return values, probs
