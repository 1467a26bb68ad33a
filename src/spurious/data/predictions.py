"""A model's predictions on a dataset, read from a file and aligned to the dataset.

Supported files:

- SQuAD's official prediction JSON ``{question id: answer text}`` (also any JSON
  object ``{id: label}`` for classification);
- JSONL, a JSON array of objects, CSV or TSV with an id column (``id``, or the column
  named by ``id_field``) and a prediction column (:data:`VALUE_FIELDS`, or the column
  named by ``value_field``). Classification labels may be label names or integer ids.

Three kinds of prediction (``kind``):

- ``"labels"``: the predicted label (or answer text, for QA);
- ``"correctness"``: only whether the model was right, 0/1 or true/false per example
  (a column :data:`CORRECTNESS_FIELDS`, JSON booleans, or ``kind="correctness"``);
- ``"probabilities"``: one probability per label, as one column per label (named by
  the label, or ``prob_<label>`` / ``p_<label>``), a list column
  (:data:`PROBABILITY_FIELDS`, in the dataset's label order) or a JSON ``{id: [p, ...]}``
  / ``{id: {label: p}}``; the prediction is the most probable label.

The gold column (:data:`GOLD_FIELDS`: ``label``, ``gold_label`` ...) is never taken for
the prediction: a file that carries the gold label beside a prediction column with
another name is an error that names the columns searched for, until ``value_field``
names the prediction. Predictions that equal the gold label on more than 99.9% of the
rows (:data:`GOLD_LIKE_SHARE`; files of at least :data:`GOLD_LIKE_MIN_ROWS` rows) are
loaded with a warning.

**Alignment.** By default (``align="id"``) every prediction belongs to an example of
the dataset by id (an unknown id is an error that says how many, with a few examples);
ids are the file's ids when the data has an id column, else the 12-character content
hashes the loader gives every row (``spurious ids DATA --task ...`` lists them). A file
without ids can be aligned by row order instead (``align="rows"``): it must have as many
rows as the dataset, and a text column that the dataset also has (``premise``,
``hypothesis``, ``question`` ...) must match row by row; the first mismatch is an error
that names the row.

An example without a prediction is scored as wrong, as the official SQuAD v1.1
evaluator scores an unanswered question 0: a warning gives the count,
:attr:`PredictionSet.n_missing` records it, and ``on_missing="error"`` makes it an
error instead.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from spurious.data.dataset import Dataset
from spurious.data.readers import read_delimited, read_jsonl
from spurious.exceptions import DataFormatError, LabelError, ParameterError, SchemaError

logger = logging.getLogger(__name__)

__all__ = [
    "CORRECTNESS_FIELDS",
    "GOLD_FIELDS",
    "GOLD_LIKE_SHARE",
    "PROBABILITY_FIELDS",
    "VALUE_FIELDS",
    "PredictionSet",
    "align_predictions",
    "load_predictions",
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
#: Ids shown in a mismatch error.
_SHOW = 5
_TRUE = {"1", "1.0", "true", "t", "yes", "y", "correct"}
_FALSE = {"0", "0.0", "false", "f", "no", "n", "wrong", "incorrect"}


@dataclass(frozen=True, eq=False)
class PredictionSet:
    """One model's predictions, aligned to a dataset's row order.

    Attributes
    ----------
    name : str
        The model's name (file stem by default), used in tables and metric names.
    values : numpy.ndarray
        One value per dataset row: answer texts (object array of str) for QA, label ids
        (``int64``) for classification. From a correctness file: the gold label (first
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
        missing); ``None`` unless ``kind="probabilities"``.

    Examples
    --------
    >>> import pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({"id": ["a", "b"], "question": ["q1", "q2"],
    ...     "context": ["c1", "c2"], "answers": [["x"], ["y"]]}), "qa")
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


def load_predictions(
    path: str | os.PathLike[str],
    dataset: Dataset,
    *,
    name: str | None = None,
    format: str | None = None,
    id_field: str | None = None,
    value_field: str | None = None,
    kind: str = "auto",
    align: str = "id",
    on_missing: str = "wrong",
) -> PredictionSet:
    """Read a prediction file and align it to ``dataset`` by id (or by row order).

    Parameters
    ----------
    path : path
        ``.json`` (``{id: prediction}``, an array of objects or, with ``align="rows"``,
        an array of values), ``.jsonl``, ``.csv`` or ``.tsv``.
    dataset : Dataset
        The evaluated dataset; its ids decide the order of the returned values.
    name : str, optional
        Model name (default: the file stem, e.g. ``electra-base``).
    format : {"json", "jsonl", "csv", "tsv"}, optional
        Overrides the format inferred from the suffix.
    id_field : str, optional
        Id column of tabular files (default ``"id"``). The ids must be the dataset's
        (its id column, or the content hashes of ``spurious ids``).
    value_field : str, optional
        Prediction column of tabular files (default: the first of :data:`VALUE_FIELDS`,
        then :data:`CORRECTNESS_FIELDS`, :data:`PROBABILITY_FIELDS` and per-label
        probability columns, present). May name a gold-looking column (``label``) when
        that column really is the prediction.
    kind : {"auto", "labels", "correctness", "probabilities"}, default="auto"
        What the values are; ``"auto"`` decides from the column's name and values
        (JSON booleans are correctness, lists are probabilities).
    align : {"id", "rows"}, default="id"
        ``"rows"``: the file's rows are the dataset's rows in order (no id needed);
        checked by the row count and any text column the file shares with the dataset.
    on_missing : {"wrong", "error"}, default="wrong"
        What to do with dataset examples the file has no prediction for; see
        :func:`align_predictions`.

    Returns
    -------
    PredictionSet

    Raises
    ------
    DataFormatError
        The file cannot be read, or has no id column (``align="id"``) or no prediction
        column (the message lists the columns searched for).
    SchemaError
        A predicted id is not in the dataset, none of the dataset's ids has a
        prediction, some have none and ``on_missing="error"`` (the message counts
        missing and extra ids), an id is duplicated, or, with ``align="rows"``, the row
        count or a text column does not match (the message names the first row).
    LabelError
        A classification prediction is not a known label name or id.

    Examples
    --------
    >>> import json, tempfile, pathlib, pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({"id": ["q1"], "question": ["Who?"],
    ...     "context": ["Ann did."], "answers": [["Ann"]]}), "qa")
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "model-a.json"
    >>> _ = f.write_text(json.dumps({"q1": "Ann"}))
    >>> p = load_predictions(f, ds)
    >>> p.name, p.values.tolist()
    ('model-a', ['Ann'])

    A file without ids, in the dataset's row order:

    >>> g = f.with_name("model-b.csv")
    >>> _ = g.write_text("question,prediction\\nWho?,Bob\\n")
    >>> load_predictions(g, ds, align="rows").values.tolist()
    ['Bob']
    """
    _check_choice("align", align, ("id", "rows"), "load_predictions")
    _check_choice("kind", kind, KINDS, "load_predictions")
    path = Path(path)
    if not path.exists():
        raise DataFormatError(f"Prediction file {str(path)!r} does not exist.")
    if path.is_dir():
        raise DataFormatError(f"Prediction path {str(path)!r} is a directory, not a file.")
    fmt = (format or path.suffix.lower().lstrip(".")).replace("ndjson", "jsonl")
    by_rows = align == "rows"
    if fmt == "json":
        obj = _read_json(path)
        if isinstance(obj, dict):
            # SQuAD's official prediction format: {question id: answer text}.
            if by_rows:
                raise DataFormatError(
                    f"{str(path)!r} is a JSON object keyed by id; align it by id "
                    "(align='id', --align id), not by row order."
                )
            mapping, kind = obj, kind
        elif isinstance(obj, list) and obj and all(isinstance(r, dict) for r in obj):
            frame = pd.DataFrame.from_records(obj)
            rows = list(range(1, len(obj) + 1))
            mapping, kind = _frame_to_mapping(
                frame, rows, path, dataset, id_field, value_field, kind, by_rows
            )
        elif isinstance(obj, list) and by_rows:
            mapping = _rows_to_mapping(obj, None, list(range(1, len(obj) + 1)), path, dataset)
        else:
            raise DataFormatError(
                f"{str(path)!r}: expected a JSON object {{id: prediction}} or an array of "
                f"objects (an array of values with align='rows'), got {type(obj).__name__}."
            )
    elif fmt in ("jsonl", "csv", "tsv", "txt"):
        frame, rows = (
            read_jsonl(path)
            if fmt == "jsonl"
            else read_delimited(path, "," if fmt == "csv" else "\t")
        )
        mapping, kind = _frame_to_mapping(
            frame, rows, path, dataset, id_field, value_field, kind, by_rows
        )
    else:
        raise DataFormatError(
            f"Cannot read predictions from {str(path)!r}: unknown format {fmt!r}; "
            "use .json ({id: prediction}), .jsonl, .csv or .tsv, or pass format=."
        )
    return align_predictions(
        mapping,
        dataset,
        name=name or path.stem,
        source=os.fspath(path),
        on_missing=on_missing,
        kind=kind,
    )


def align_predictions(
    predictions: Mapping[Any, Any],
    dataset: Dataset,
    *,
    name: str = "model",
    source: str | None = None,
    on_missing: str = "wrong",
    kind: str = "auto",
) -> PredictionSet:
    """Align ``{id: prediction}`` to ``dataset``'s row order.

    Parameters
    ----------
    predictions : mapping
        Example id -> answer text (QA) or label name / label id (classification), a
        correctness flag (``kind="correctness"``; JSON booleans are recognised), or
        probabilities (a list in the dataset's label order or ``{label: p}``).
        Ids are compared as strings.
    dataset : Dataset
    name : str
        Model name.
    source : str, optional
        Where the predictions came from (recorded only).
    on_missing : {"wrong", "error"}, default="wrong"
        Dataset examples without a prediction: ``"wrong"`` scores them as wrong (an
        always-wrong value, flagged in :attr:`PredictionSet.missing`) and logs a warning
        with their count, as the official SQuAD v1.1 evaluator scores an unanswered
        question 0; ``"error"`` raises :class:`~spurious.exceptions.SchemaError`. A
        prediction whose id is not in the dataset, or a file that covers none of the
        dataset's ids (the wrong file), is an error either way.
    kind : {"auto", "labels", "correctness", "probabilities"}, default="auto"
        See :func:`load_predictions`.

    Returns
    -------
    PredictionSet

    Examples
    --------
    >>> import pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({"id": [1, 2], "text": ["good", "bad"],
    ...                                        "label": ["pos", "neg"]}), "text")
    >>> align_predictions({"1": "pos", "2": 1}, ds).values.tolist()  # names or ids
    [1, 1]
    >>> p = align_predictions({"1": "pos"}, ds)  # id 2 unanswered: scored as wrong
    >>> p.values.tolist(), p.missing.tolist(), p.n_missing
    ([1, -1], [False, True], 1)
    >>> align_predictions({"1": True, "2": False}, ds).values.tolist()  # correctness
    [1, -1]
    >>> p = align_predictions({"1": [0.2, 0.8], "2": [0.9, 0.1]}, ds)  # label order neg, pos
    >>> p.kind, p.values.tolist()
    ('probabilities', [1, 0])
    """
    _check_choice("on_missing", on_missing, ("wrong", "error"), "align_predictions")
    _check_choice("kind", kind, KINDS, "align_predictions")
    mapping = {str(k): v for k, v in predictions.items()}
    if len(mapping) != len(predictions):
        raise SchemaError(
            f"Predictions {name!r}: ids are duplicated once converted to strings "
            f"({len(predictions)} keys, {len(mapping)} distinct)."
        )
    ids = dataset.ids
    missing = [i for i in ids if i not in mapping]
    id_set = set(ids)
    extra = [k for k in mapping if k not in id_set]
    if extra or len(missing) == len(ids) > 0 or (missing and on_missing == "error"):
        parts = []
        if missing:
            parts.append(
                f"{len(missing)} of the dataset's {len(ids)} id(s) have no prediction "
                f"(e.g. {missing[:_SHOW]})"
            )
        if extra:
            parts.append(
                f"{len(extra)} predicted id(s) are not in the dataset (e.g. {extra[:_SHOW]})"
            )
        hint = (
            "Predictions must cover exactly the dataset's examples (on_missing='error')."
            if on_missing == "error" and not extra and len(missing) < len(ids)
            else "Every predicted id must be an example of the dataset; are these the "
            "predictions for another dataset? Without an id column the dataset's ids are "
            "content hashes (list them with `spurious ids DATA --task ...`); a file in the "
            "dataset's row order can be aligned with align='rows' (--align rows)."
        )
        raise SchemaError(
            f"Predictions {name!r} do not match dataset {dataset.name!r}: "
            + "; ".join(parts)
            + ". "
            + hint
        )
    is_missing = np.fromiter((i not in mapping for i in ids), dtype=bool, count=len(ids))
    if missing:
        logger.warning(
            "Predictions %r: %d of the %d example(s) of %r have no prediction (e.g. %s); "
            "they are scored as wrong, as the official SQuAD evaluator scores an unanswered "
            "question 0 (on_missing='error' refuses such files).",
            name,
            len(missing),
            len(ids),
            dataset.name,
            missing[:_SHOW],
        )
    present = np.flatnonzero(~is_missing)
    raw = [mapping[ids[j]] for j in present]
    if kind == "auto":
        kind = _infer_kind(raw)
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
    _warn_if_gold(values, present, dataset, name, kind)
    return PredictionSet(
        name=name,
        values=values,
        ids=ids.copy(),
        source=source,
        missing=is_missing,
        kind=kind,
        probabilities=probs,
    )


# -- kinds --------------------------------------------------------------------------


def _infer_kind(raw: Sequence[Any]) -> str:
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


def _warn_if_gold(
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


# -- helpers ------------------------------------------------------------------------


def _check_choice(param: str, value: Any, choices: Sequence[str], owner: str) -> None:
    if value not in choices:
        raise ParameterError(
            f"The {param!r} parameter of {owner} must be one of {list(choices)}. "
            f"Got {value!r} instead."
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


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as e:
        raise DataFormatError(
            f"{str(path)!r}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})."
        ) from None
    except UnicodeDecodeError as e:
        raise DataFormatError(f"{str(path)!r} is not valid UTF-8 ({e.reason}).") from None


def _probability_columns(frame: pd.DataFrame, labels: Sequence[str]) -> list[str] | None:
    """Per-label probability columns (``<label>`` or ``prob_<label>`` ...), in label order."""
    cols = set(map(str, frame.columns))
    for prefix in ("", *PROBABILITY_PREFIXES):
        names = [f"{prefix}{lab}" for lab in labels]
        if labels and all(n in cols for n in names):
            return names
    return None


def _frame_to_mapping(
    frame: pd.DataFrame,
    rows: list[int],
    path: Path,
    dataset: Dataset,
    id_field: str | None,
    value_field: str | None,
    kind: str,
    by_rows: bool,
) -> tuple[dict[str, Any], str]:
    """``{id: value}`` and the kind of a tabular prediction file."""
    cols = list(map(str, frame.columns))
    id_col = id_field or "id"
    if not by_rows and id_col not in frame.columns:
        raise DataFormatError(
            f"{str(path)!r}: no id column {id_col!r}; columns found: {cols}. Name it with "
            "id_field= (--id-field), or align a file in the dataset's row order with "
            "align='rows' (--align rows)."
        )
    labels = list(dataset.label_names) if dataset.task.has_labels else []
    prob_cols = None
    if value_field is not None:
        if value_field not in frame.columns:
            raise DataFormatError(
                f"{str(path)!r}: no prediction column {value_field!r}; columns found: {cols}."
            )
        if kind == "auto" and value_field in CORRECTNESS_FIELDS:
            kind = "correctness"
    else:
        searched: list[str] = []
        for names, what in (
            (() if kind in ("correctness", "probabilities") else VALUE_FIELDS, "labels"),
            (() if kind in ("labels", "probabilities") else CORRECTNESS_FIELDS, "correctness"),
            (() if kind in ("labels", "correctness") else PROBABILITY_FIELDS, "probabilities"),
        ):
            searched.extend(names)
            value_field = next((c for c in names if c in frame.columns), None)
            if value_field is not None:
                kind = what if kind == "auto" else kind
                break
        if value_field is None and kind in ("auto", "probabilities"):
            prob_cols = _probability_columns(frame, labels)
            if prob_cols is not None:
                kind = "probabilities"
        if value_field is None and prob_cols is None:
            gold = [c for c in GOLD_FIELDS if c in frame.columns]
            note = (
                f" The gold column(s) {gold} are never read as predictions; if one of them "
                "really holds the model's predictions, name it with value_field= "
                "(--value-field)."
                if gold
                else ""
            )
            per_label = (
                f", or one probability column per label ({labels} or prob_<label>)"
                if labels and kind in ("auto", "probabilities")
                else ""
            )
            raise DataFormatError(
                f"{str(path)!r}: no prediction column; looked for {searched}{per_label} among "
                f"{cols}.{note} Pass value_field= (--value-field) to name it."
            )
    if prob_cols is not None:
        block = frame[prob_cols]
        values = [list(r) for r in block.itertuples(index=False, name=None)]
        where = prob_cols
    else:
        values = frame[value_field].tolist()
        where = value_field
    missing = [rows[i] for i, v in enumerate(values) if _is_missing(v)]
    if missing:
        raise SchemaError(
            f"{str(path)!r}, row {missing[0]}: the prediction ({where!r}) is missing "
            f"({len(missing)} row(s) affected)."
        )
    logger.debug("%s: %d predictions from %r (%s)", path, len(values), where, kind)
    if by_rows:
        return _rows_to_mapping(values, frame, rows, path, dataset), kind
    keys = frame[id_col].map(str)
    dup = keys.duplicated(keep=False).to_numpy()
    if dup.any():
        first = keys[dup].iloc[0]
        where_rows = [rows[i] for i in np.flatnonzero((keys == first).to_numpy())][:5]
        raise SchemaError(
            f"{str(path)!r}: id {first!r} has several predictions (rows {where_rows}); "
            f"{int(keys[dup].nunique())} id(s) are duplicated."
        )
    return dict(zip(keys.tolist(), values, strict=True)), kind


def _is_missing(v: Any) -> bool:
    if isinstance(v, list):
        return any(x is None or (isinstance(x, float) and math.isnan(x)) for x in v)
    return v is None or (isinstance(v, float) and math.isnan(v))


def _rows_to_mapping(
    values: Sequence[Any],
    frame: pd.DataFrame | None,
    rows: list[int],
    path: Path,
    dataset: Dataset,
) -> dict[str, Any]:
    """``{dataset id: value}`` for a file in the dataset's row order, checked."""
    n = len(dataset)
    if len(values) != n:
        dropped = int(dataset.frame.attrs.get("n_dropped_no_gold", 0))
        note = (
            f" (the dataset left out {dropped} row(s) without a gold label; predictions for "
            "them must be removed too)"
            if dropped
            else ""
        )
        raise SchemaError(
            f"{str(path)!r} has {len(values)} prediction row(s) but dataset {dataset.name!r} "
            f"has {n}{note}; align='rows' needs one row per example, in the same order."
        )
    if frame is not None:
        for col in dataset.task.text_fields:
            if col not in frame.columns or col not in dataset.frame.columns:
                continue
            theirs = frame[col].map(lambda v: "" if v is None else str(v).strip()).to_numpy()
            ours = dataset.frame[col].map(lambda v: "" if v is None else str(v).strip())
            bad = np.flatnonzero(theirs != ours.to_numpy())
            if bad.size:
                i = int(bad[0])
                raise SchemaError(
                    f"{str(path)!r}, row {rows[i]}: its {col!r} is {theirs[i][:80]!r} but "
                    f"example {i} of {dataset.name!r} (id {dataset.ids[i]!r}) has "
                    f"{str(ours.iloc[i])[:80]!r}; {bad.size} of {n} row(s) differ, so the "
                    "file is not in the dataset's row order (align='rows')."
                )
    return dict(zip(dataset.ids.tolist(), values, strict=True))
