"""Prediction values by kind: labels, correctness flags or probabilities -> one value per row.

:func:`prediction_values` turns the raw values a file gave for the covered rows into
the arrays of a :class:`~spurious.data.predictions.PredictionSet` (label ids, answer
texts, or the gold value where a correctness file says the model was right), and
:func:`warn_if_gold` notices predictions that look like the gold column.

Multiple-choice items (task ``mcq``) differ in two ways: a predicted letter or 0-based
index must be one of *that item's* options (an item with three options has no ``"D"``),
and a list per item holds one **score per option** (log-probabilities, similarities or
probabilities, the shape LLM evaluation harnesses write), of the item's own length.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from spurious.data.dataset import Dataset
from spurious.data.mcq import LETTERS, option_counts
from spurious.data.predictions.base import GOLD_LIKE_MIN_ROWS, GOLD_LIKE_SHARE, WRONG_ANSWER
from spurious.exceptions import LabelError, SchemaError

__all__ = ["infer_kind", "prediction_values", "warn_if_gold"]

# The logger keeps the name it had before predictions.py became a package, so logging
# configuration that targets it (and the CLI's "%(name)s" prefix) is unchanged.
logger = logging.getLogger("spurious.data.predictions")

_TRUE = {"1", "1.0", "true", "t", "yes", "y", "correct"}
_FALSE = {"0", "0.0", "false", "f", "no", "n", "wrong", "incorrect"}
#: A letter as models write it: "B", "b", "(B)", "B)", "B.", "B:".
_LETTER = re.compile(r"^\(?\s*([A-Ja-j])\s*[).:]?$")


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
    elif dataset.task.multiple_choice and kind == "probabilities":
        values, probs = _from_option_scores(raw, present, ids, dataset, name)
    elif dataset.task.multiple_choice:
        values = np.full(len(ids), -1, dtype=np.int64)
        values[present] = _option_ids(raw, present, ids, dataset, name)
    elif kind == "probabilities":
        values, probs = _from_probabilities(raw, present, ids, dataset, name)
    elif dataset.task.has_labels:
        values = np.full(len(ids), -1, dtype=np.int64)
        values[present] = _label_ids(raw, ids[present], dataset, name)
    else:
        values = np.empty(len(ids), dtype=object)
        values[:] = ""
        for j, v in zip(present, raw, strict=True):
            # Only text is an answer: a number (a label id, a 0/1 flag, a row index) would
            # be compared with the gold spans as the string "3" and silently score 0.
            if not isinstance(v, str):
                hint = (
                    " (0/1 flags of whether the model was right: --prediction-kind correctness)"
                    if isinstance(v, int | float | np.integer | np.floating) and v in (0, 1)
                    else ""
                )
                raise SchemaError(
                    f"Predictions {name!r}, id {ids[j]!r}: a QA prediction must be an answer "
                    f"string (the predicted span). Got {type(v).__name__} {v!r} instead{hint}."
                )
            values[j] = v
    return values, probs


# -- multiple choice -----------------------------------------------------------------------


def _option_ids(
    raw: list[Any], present: np.ndarray, ids: np.ndarray, dataset: Dataset, name: str
) -> np.ndarray:
    """0-based option positions of predicted letters / indices, each within its item's options."""
    # Letters as models write them ("b", "(B)") are read as the letter; anything else keeps
    # the classification rules (label name, or an integer id: here a 0-based position).
    tidy = []
    for v in raw:
        m = _LETTER.match(v.strip()) if isinstance(v, str) else None
        tidy.append(m.group(1).upper() if m else v)
    out = _label_ids(tidy, ids[present], dataset, name)
    counts = option_counts(dataset.frame)[present]
    bad = np.flatnonzero(out >= counts)
    if bad.size:
        k = int(bad[0])
        n_opt = int(counts[k])
        raise LabelError(
            f"Predictions {name!r}, id {ids[present[k]]!r}: predicted {raw[k]!r} (option "
            f"{LETTERS[out[k]]}) but the item has {n_opt} options ({list(LETTERS[:n_opt])}); "
            f"{bad.size} prediction(s) name an option their item does not have."
        )
    return out


def _score_row(v: Any, k: int, item_id: str, name: str) -> np.ndarray:
    """One item's per-option scores as floats, checked against its ``k`` options."""
    letters = list(LETTERS[:k])
    if isinstance(v, Mapping):
        keys = sorted(str(x).strip().upper() for x in v)
        if keys != letters:
            raise SchemaError(
                f"Predictions {name!r}, id {item_id!r}: scores keyed by letter must name the "
                f"item's {k} options {letters} once. Got keys {sorted(map(str, v))} instead."
            )
        by_letter = {str(x).strip().upper(): s for x, s in v.items()}
        v = [by_letter[lab] for lab in letters]
    if not isinstance(v, list | tuple | np.ndarray):
        raise SchemaError(
            f"Predictions {name!r}, id {item_id!r}: per-option scores must be a list (one "
            f"score per option). Got {type(v).__name__} {v!r} instead."
        )
    try:
        arr = np.asarray(v, dtype=float)
    except (TypeError, ValueError):
        arr = np.array([np.nan])
    if arr.ndim != 1:
        arr = np.array([np.nan])
    if len(arr) != k:
        raise SchemaError(
            f"Predictions {name!r}, id {item_id!r}: {len(arr)} option score(s) but the item "
            f"has {k} options; give one score per option, in option order."
        )
    # -inf is a log-probability of 0 (an option the model rules out); NaN and +inf say nothing.
    if np.isnan(arr).any() or (arr == np.inf).any() or not np.isfinite(arr).any():
        raise SchemaError(
            f"Predictions {name!r}, id {item_id!r}: option scores must be numbers (-inf "
            f"allowed, at least one finite). Got {list(v)!r} instead."
        )
    return arr


def _from_option_scores(
    raw: Sequence[Any], present: np.ndarray, ids: np.ndarray, dataset: Dataset, name: str
) -> tuple[np.ndarray, np.ndarray]:
    """Predicted options (argmax) and probabilities from per-option scores of each item.

    Rows that are all distributions are kept as they are; otherwise every row is a
    softmax of its scores (log-probabilities give the model's renormalised choice
    probabilities; any other score keeps its order, hence its argmax).
    """
    counts = option_counts(dataset.frame)
    rows = [_score_row(v, int(counts[j]), ids[j], name) for v, j in zip(raw, present, strict=True)]
    is_dist = all(r.min() >= 0 and r.max() <= 1 and abs(r.sum() - 1) <= 0.02 for r in rows)
    probs = np.full((len(ids), len(dataset.label_names)), np.nan)
    ties = 0
    for r, j in zip(rows, present, strict=True):
        if is_dist:
            p = r
        else:
            e = np.exp(r - r.max())
            p = e / e.sum()
        probs[j] = 0.0
        probs[j, : len(r)] = p
        ties += int((r == r.max()).sum() > 1)
    if ties:
        # The argmax takes the first of tied options, as evaluation harnesses do; that
        # leans towards "A", so the count is worth knowing when reading a letter bias.
        logger.warning(
            "Predictions %r: %d item(s) have tied top scores; the first tied option (the "
            "earliest letter) is taken as the prediction.",
            name,
            ties,
        )
    values = np.full(len(ids), -1, dtype=np.int64)
    values[present] = np.argmax(probs[present], axis=1)
    return values, probs
