"""A model's predictions on a dataset, read from a file and aligned to the dataset by id.

Supported files:

- SQuAD's official prediction JSON ``{question id: answer text}`` (also any JSON
  object ``{id: label}`` for classification);
- JSONL, a JSON array of objects, CSV or TSV with an ``id`` column and a prediction
  column (``prediction``, ``pred``, ``label``, ``answer`` or ``prediction_text``, or the
  column named by ``value_field``). Classification labels may be label names or
  integer label ids.

Every prediction must belong to an example of the dataset (an unknown id is an error
that says how many, with a few examples). An example without a prediction is scored as
wrong, as the official SQuAD v1.1 evaluator scores an unanswered question 0: a warning
gives the count, :attr:`PredictionSet.n_missing` records it, and
``on_missing="error"`` makes it an error instead.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from spurious.data.dataset import Dataset
from spurious.data.readers import read_delimited, read_jsonl
from spurious.exceptions import DataFormatError, LabelError, ParameterError, SchemaError

logger = logging.getLogger(__name__)

__all__ = ["PredictionSet", "align_predictions", "load_predictions"]

#: Column names tried, in order, for the predicted value when ``value_field`` is not given.
VALUE_FIELDS = ("prediction", "pred", "prediction_text", "answer", "predicted_label", "label")
#: Ids shown in a mismatch error.
_SHOW = 5


@dataclass(frozen=True, eq=False)
class PredictionSet:
    """One model's predictions, aligned to a dataset's row order.

    Attributes
    ----------
    name : str
        The model's name (file stem by default), used in tables and metric names.
    values : numpy.ndarray
        One value per dataset row: answer texts (object array of str) for QA, label ids
        (``int64``) for classification.
    ids : numpy.ndarray
        The dataset's ids, in the same order (object array of str).
    source : str or None
        The file the predictions were read from.
    missing : numpy.ndarray of bool
        True for the examples the file had no prediction for. Their value is a
        prediction that is always wrong: the empty answer ``""`` for QA (EM and F1 0
        unless a gold answer is itself empty after SQuAD's normalisation) and the label
        id ``-1`` (no class) for classification. All False when nothing is missing.

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
    id_field: str = "id",
    value_field: str | None = None,
    on_missing: str = "wrong",
) -> PredictionSet:
    """Read a prediction file and align it to ``dataset`` by id.

    Parameters
    ----------
    path : path
        ``.json`` (``{id: prediction}`` or an array of objects), ``.jsonl``, ``.csv``
        or ``.tsv``.
    dataset : Dataset
        The evaluated dataset; its ids decide the order of the returned values.
    name : str, optional
        Model name (default: the file stem, e.g. ``electra-base``).
    format : {"json", "jsonl", "csv", "tsv"}, optional
        Overrides the format inferred from the suffix.
    id_field : str
        Id column of tabular files.
    value_field : str, optional
        Prediction column of tabular files (default: the first of
        :data:`VALUE_FIELDS` present).
    on_missing : {"wrong", "error"}, default="wrong"
        What to do with dataset examples the file has no prediction for; see
        :func:`align_predictions`.

    Returns
    -------
    PredictionSet

    Raises
    ------
    DataFormatError
        The file cannot be read or has neither an id nor a prediction column.
    SchemaError
        A predicted id is not in the dataset, none of the dataset's ids has a
        prediction, some have none and ``on_missing="error"`` (the message counts
        missing and extra ids), or an id is duplicated.
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
    """
    path = Path(path)
    if not path.exists():
        raise DataFormatError(f"Prediction file {str(path)!r} does not exist.")
    if path.is_dir():
        raise DataFormatError(f"Prediction path {str(path)!r} is a directory, not a file.")
    fmt = (format or path.suffix.lower().lstrip(".")).replace("ndjson", "jsonl")
    if fmt == "json":
        mapping = _read_json_predictions(path, id_field, value_field)
    elif fmt in ("jsonl", "csv", "tsv", "txt"):
        frame, rows = (
            read_jsonl(path)
            if fmt == "jsonl"
            else read_delimited(path, "," if fmt == "csv" else "\t")
        )
        mapping = _frame_to_mapping(frame, rows, path, id_field, value_field)
    else:
        raise DataFormatError(
            f"Cannot read predictions from {str(path)!r}: unknown format {fmt!r}; "
            "use .json ({id: prediction}), .jsonl, .csv or .tsv, or pass format=."
        )
    return align_predictions(
        mapping, dataset, name=name or path.stem, source=os.fspath(path), on_missing=on_missing
    )


def align_predictions(
    predictions: Mapping[Any, Any],
    dataset: Dataset,
    *,
    name: str = "model",
    source: str | None = None,
    on_missing: str = "wrong",
) -> PredictionSet:
    """Align ``{id: prediction}`` to ``dataset``'s row order.

    Parameters
    ----------
    predictions : mapping
        Example id -> answer text (QA) or label name / label id (classification).
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
    """
    if on_missing not in ("wrong", "error"):
        raise ParameterError(
            f"The 'on_missing' parameter of align_predictions must be 'wrong' or 'error'. "
            f"Got {on_missing!r} instead."
        )
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
            "predictions for another dataset?"
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
    if dataset.task.has_labels:
        values = np.full(len(ids), -1, dtype=np.int64)
        present = np.flatnonzero(~is_missing)
        raw = [mapping[ids[j]] for j in present]
        values[present] = _label_ids(raw, ids[present], dataset, name)
    else:
        raw = [mapping.get(i, "") for i in ids]
        values = np.empty(len(raw), dtype=object)
        for j, v in enumerate(raw):
            if v is None or isinstance(v, dict | list):
                raise SchemaError(
                    f"Predictions {name!r}, id {ids[j]!r}: a QA prediction must be an answer "
                    f"string. Got {type(v).__name__} {v!r} instead."
                )
            values[j] = str(v)
    return PredictionSet(
        name=name, values=values, ids=ids.copy(), source=source, missing=is_missing
    )


# -- helpers ------------------------------------------------------------------------


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


def _read_json_predictions(path: Path, id_field: str, value_field: str | None) -> dict[str, Any]:
    try:
        obj = json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as e:
        raise DataFormatError(
            f"{str(path)!r}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})."
        ) from None
    except UnicodeDecodeError as e:
        raise DataFormatError(f"{str(path)!r} is not valid UTF-8 ({e.reason}).") from None
    if isinstance(obj, dict):
        # SQuAD's official prediction format: {question id: answer text}.
        return obj
    if isinstance(obj, list) and all(isinstance(r, dict) for r in obj):
        frame = pd.DataFrame.from_records(obj)
        return _frame_to_mapping(frame, list(range(1, len(obj) + 1)), path, id_field, value_field)
    raise DataFormatError(
        f"{str(path)!r}: expected a JSON object {{id: prediction}} or an array of objects, "
        f"got {type(obj).__name__}."
    )


def _frame_to_mapping(
    frame: pd.DataFrame, rows: list[int], path: Path, id_field: str, value_field: str | None
) -> dict[str, Any]:
    cols = list(map(str, frame.columns))
    if id_field not in frame.columns:
        raise DataFormatError(
            f"{str(path)!r}: no id column {id_field!r}; columns found: {cols}. "
            "Pass id_field= (--id-field) to name it."
        )
    if value_field is None:
        value_field = next((c for c in VALUE_FIELDS if c in frame.columns), None)
        if value_field is None:
            raise DataFormatError(
                f"{str(path)!r}: no prediction column; looked for {list(VALUE_FIELDS)} among "
                f"{cols}. Pass value_field= to name it."
            )
    elif value_field not in frame.columns:
        raise DataFormatError(
            f"{str(path)!r}: no prediction column {value_field!r}; columns found: {cols}."
        )
    keys = frame[id_field].map(str)
    dup = keys.duplicated(keep=False).to_numpy()
    if dup.any():
        first = keys[dup].iloc[0]
        where = [rows[i] for i in np.flatnonzero((keys == first).to_numpy())][:5]
        raise SchemaError(
            f"{str(path)!r}: id {first!r} has several predictions (rows {where}); "
            f"{int(keys[dup].nunique())} id(s) are duplicated."
        )
    values = frame[value_field].tolist()
    missing = [rows[i] for i, v in enumerate(values) if v is None or v != v]  # None or NaN
    if missing:
        raise SchemaError(
            f"{str(path)!r}, row {missing[0]}: the prediction ({value_field!r}) is missing "
            f"({len(missing)} row(s) affected)."
        )
    logger.debug("%s: %d predictions from column %r", path, len(values), value_field)
    return dict(zip(keys.tolist(), values, strict=True))
