"""Checks and normalisation that turn a frame with canonical columns into a dataset's frame.

:meth:`spurious.data.Dataset.from_frame` runs them in order: the task's fields are
present (:func:`check_fields`) and hold strings (:func:`check_texts`); labels become
names and ids (:func:`normalise_labels`) or QA answers lists of strings
(:func:`normalise_answers`); ids are checked or made from the content
(:func:`normalise_ids`). Every message names the dataset and the source row.
:func:`text_keys` is what "the same text" means when rows of two datasets are compared.
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Sequence

import numpy as np
import pandas as pd

from spurious.data.tasks import Task
from spurious.exceptions import EmptyDatasetError, LabelError, ParameterError, SchemaError
from spurious.utils.hashing import stable_hash

# The logger keeps the name it had before these checks left dataset.py, so logging
# configuration that targets it (and the CLI's "%(name)s" prefix) is unchanged.
logger = logging.getLogger("spurious.data.dataset")

__all__ = [
    "check_fields",
    "check_label_names",
    "check_texts",
    "normalise_answers",
    "normalise_ids",
    "normalise_labels",
    "text_keys",
]


def check_fields(frame: pd.DataFrame, task: Task, name: str) -> None:
    """Raise unless ``frame`` has the task's text fields and its label (or answers)."""
    required = list(task.text_fields) + (["label"] if task.has_labels else ["answers"])
    if task.multiple_choice:
        required.append("options")
    missing = [f for f in required if f not in frame.columns]
    if missing:
        raise SchemaError(
            f"Dataset {name!r} (task {task.name!r}) is missing field(s) {missing}; "
            f"fields found: {list(map(str, frame.columns))}. Map your columns with "
            f"field_map={{'{missing[0]}': '<your column>'}}."
        )


def check_texts(frame: pd.DataFrame, task: Task, rows: np.ndarray, name: str) -> None:
    """Raise unless every text field holds strings, not all empty; counts empty ones.

    The count of empty texts per field goes to ``frame.attrs["n_empty_text"]``.
    """
    for f in task.text_fields:
        frame[f] = _check_text_column(frame[f], f, rows, name)
    empty = {f: int(frame[f].str.strip().eq("").sum()) for f in task.text_fields}
    for f, k in empty.items():
        if k == len(frame):
            raise SchemaError(
                f"Dataset {name!r}: field {f!r} is empty in every row; check --field-map."
            )
    if any(empty.values()):
        # Kept (an empty hypothesis is a valid, if odd, example), but counted and reported.
        frame.attrs["n_empty_text"] = {f: k for f, k in empty.items() if k}


def check_label_names(label_names: Sequence[str] | None) -> None:
    """Raise when the given label names repeat a name."""
    if label_names is not None and len(set(map(str, label_names))) != len(label_names):
        raise ParameterError(
            "The 'label_names' parameter must hold distinct names. "
            f"Got {list(label_names)!r} instead."
        )


def normalise_answers(frame: pd.DataFrame, rows: np.ndarray, name: str) -> pd.DataFrame:
    """QA answers as lists of str; raises when no question has one (counted in attrs)."""
    frame = _normalise_answers(frame, rows, name)
    no_answer = int(frame["answers"].map(len).eq(0).sum())
    if no_answer == len(frame):
        raise SchemaError(
            f"Dataset {name!r}: no question has a gold answer, so nothing can be "
            "scored (unanswerable-question sets such as SQuAD 2.0's are not supported)."
        )
    if no_answer:
        frame.attrs["n_no_answer"] = no_answer
    return frame


def normalise_ids(frame: pd.DataFrame, task: Task, rows: np.ndarray, name: str) -> None:
    """Ids as unique strings, in place; content-hash ids when ``frame`` has no ``id``."""
    if "id" in frame.columns:
        # astype(str) would turn a missing id into the id "nan" (or keep NaN).
        no_id = frame["id"].isna().to_numpy()
        if no_id.any():
            i = int(np.flatnonzero(no_id)[0])
            raise SchemaError(
                f"Dataset {name!r}, row {rows[i]}: field 'id' is missing "
                f"({int(no_id.sum())} row(s) without an id). Give every row an id, or "
                "drop the id column to get content-hash ids."
            )
        ids = frame["id"].astype(str)
        dup = ids[ids.duplicated(keep=False)]
        if len(dup):
            first = dup.iloc[0]
            where = rows[(ids == first).to_numpy()].tolist()[:5]
            raise SchemaError(
                f"Dataset {name!r} has {dup.nunique()} duplicated id(s); e.g. id "
                f"{first!r} appears on rows {where}. Ids must be unique."
            )
        frame["id"] = ids
    else:
        frame.insert(0, "id", _content_ids(frame, task))


def _check_text_column(col: pd.Series, field_name: str, rows: np.ndarray, name: str) -> pd.Series:
    bad = col.map(lambda v: not isinstance(v, str))
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        v = col.iloc[i]
        # A JSON null or an absent key arrives as NaN: say "missing", not "float nan".
        got = (
            "a missing value (null/NaN)" if _is_missing(v) else f"{type(v).__name__} {_plain(v)!r}"
        )
        raise SchemaError(
            f"Dataset {name!r}, row {rows[i]}: field {field_name!r} must be a string. "
            f"Got {got} instead ({int(bad.sum())} row(s) affected)."
        )
    return col


def normalise_labels(
    frame: pd.DataFrame,
    rows: np.ndarray,
    label_names: Sequence[str] | None,
    name: str,
    drop_no_gold: bool,
    assumed: bool = False,
) -> tuple[pd.DataFrame, np.ndarray, tuple[str, ...], np.ndarray]:
    """Labels as names and ids; returns ``(frame, rows, label_names, kept positions)``."""
    from spurious.data.tasks import NO_GOLD_LABELS

    raw = frame["label"]
    missing = raw.isna().to_numpy() | raw.map(lambda v: str(v).strip() in NO_GOLD_LABELS).to_numpy()
    if missing.any():
        if not drop_no_gold:
            i = int(np.flatnonzero(missing)[0])
            raise LabelError(
                f"Dataset {name!r}, row {rows[i]}: no gold label (got {_plain(raw.iloc[i])!r})."
            )
        logger.info("%s: dropped %d row(s) without a gold label", name, int(missing.sum()))
        frame = frame.loc[~missing].reset_index(drop=True)
        rows = rows[~missing]
        if len(frame) == 0:
            raise EmptyDatasetError(f"Dataset {name!r} has no rows with a gold label.")
    kept = np.flatnonzero(~missing)
    frame.attrs["n_dropped_no_gold"] = int(missing.sum())

    values = frame["label"].map(_label_str)
    if label_names is None:
        label_names = tuple(sorted(values.unique(), key=_natural_key))
    label_names = tuple(str(x) for x in label_names)
    index = {lab: i for i, lab in enumerate(label_names)}
    # Integer labels (HF datasets, GLUE TSVs) index into label_names.
    ids = values.map(lambda v: index.get(v, _int_index(v, len(label_names))))
    unknown = ids.isna().to_numpy()
    if unknown.any():
        i = int(np.flatnonzero(unknown)[0])
        raise LabelError(
            f"Dataset {name!r}, row {rows[i]}: unknown label {_plain(frame['label'].iloc[i])!r}; "
            f"expected one of {list(label_names)} (or an integer in [0, {len(label_names)})). "
            f"{int(unknown.sum())} row(s) have unknown labels."
        )
    frame["label_id"] = ids.astype(np.int64)
    by_position = ~values.isin(list(index)).to_numpy()
    if assumed and by_position.any():
        # Integer labels mapped to names nothing in the data states: a silent
        # corruption if the source used another order, so say which order was assumed.
        mapping = ", ".join(f"{i} -> {lab}" for i, lab in enumerate(label_names))
        logger.warning(
            "Dataset %r: %d label(s) are integers and the data carries no label names; "
            "assumed the default order %s. If the source used another order, pass "
            "label_names=[...] in id order.",
            name,
            int(by_position.sum()),
            mapping,
        )
    frame["label"] = frame["label_id"].map(lambda k: label_names[k])
    present = frame["label_id"].nunique()
    if present < 2:
        raise LabelError(
            f"Dataset {name!r} has a single class ({frame['label'].iloc[0]!r}) in all "
            f"{len(frame)} rows; at least two classes are needed."
        )
    if "annotator_labels" in frame:
        frame["annotator_labels"] = [
            [_label_str(x) for x in _as_list(v, "annotator_labels", row, name)]
            for v, row in zip(frame["annotator_labels"], rows, strict=True)
        ]
    return frame, rows, label_names, kept


def _plain(v: object) -> object:
    """A numpy scalar as the Python value (so messages read ``0.5``, not ``np.float64(0.5)``)."""
    return v.item() if isinstance(v, np.generic) else v


def _is_missing(v: object) -> bool:
    return v is None or (isinstance(v, float | np.floating) and np.isnan(v))


def _as_list(v: object, field_name: str, row: int, name: str) -> list:
    """A list-valued cell as a list; missing (None/NaN, e.g. absent from a JSONL row) -> []."""
    if _is_missing(v):
        return []
    if isinstance(v, list | tuple | np.ndarray):
        return list(v)
    raise SchemaError(
        f"Dataset {name!r}, row {row}: field {field_name!r} must be a list. "
        f"Got {type(v).__name__} {_plain(v)!r} instead."
    )


def _normalise_answers(frame: pd.DataFrame, rows: np.ndarray, name: str) -> pd.DataFrame:
    """QA answers as lists of str; also accepts one string and HF SQuAD's dict form."""
    answers, starts = [], []
    for v, row in zip(frame["answers"], rows, strict=True):
        start: list = []
        if isinstance(v, str):
            v = [v]
        elif isinstance(v, dict) and "text" in v:
            # Hugging Face SQuAD: {"text": [...], "answer_start": [...]}.
            start = _offsets(v.get("answer_start"), "answers.answer_start", row, name)
            v = v["text"]
        texts = _as_list(v, "answers", row, name)
        bad = [x for x in texts if not isinstance(x, str)]
        if bad:
            raise SchemaError(
                f"Dataset {name!r}, row {row}: field 'answers' must be a list of strings. "
                f"Got an element {_plain(bad[0])!r} of type {type(bad[0]).__name__}."
            )
        answers.append(texts)
        starts.append(start)
    frame["answers"] = answers
    if "answer_starts" in frame:
        frame["answer_starts"] = [
            _offsets(v, "answer_starts", row, name)
            for v, row in zip(frame["answer_starts"], rows, strict=True)
        ]
    elif any(starts):
        frame["answer_starts"] = starts
    return frame


def _offsets(v: object, field_name: str, row: int, name: str) -> list[int]:
    """Answer start offsets as ints (integral floats and digit strings too), else an error
    naming the row: a fractional or textual offset would point nowhere in the context."""
    values = [v] if isinstance(v, int | np.integer | float | str) and not _is_missing(v) else v
    out = []
    for x in _as_list(values, field_name, row, name):
        x = _plain(x)
        if (isinstance(x, float) and x.is_integer()) or (isinstance(x, str) and x.isdigit()):
            x = int(x)
        if isinstance(x, bool) or not isinstance(x, int):
            raise SchemaError(
                f"Dataset {name!r}, row {row}: field {field_name!r} must hold character "
                f"offsets into the context (integers). Got {x!r} of type {type(x).__name__}."
            )
        out.append(x)
    return out


def _label_str(v: object) -> str:
    if isinstance(v, float | np.floating) and float(v).is_integer():
        v = int(v)
    return str(v).strip()


def _int_index(v: str, n: int) -> float | int:
    try:
        k = int(v)
    except ValueError:
        return np.nan
    return k if 0 <= k < n else np.nan


def _natural_key(s: str) -> tuple[int, float | str]:
    try:
        return (0, float(s))
    except ValueError:
        return (1, s)


def text_keys(frame: pd.DataFrame, fields: Sequence[str]) -> list[tuple[str, ...]]:
    """Per row, the texts of ``fields`` in Unicode NFC: the key two rows are compared by.

    NFC and NFD spell the same text with different code points (``"é"`` as U+00E9, or as
    ``e`` + U+0301); rows equal up to that are the same example, so the overlap of an
    evaluation split with the training data compares these keys. The loaders keep every
    text as the file has it (no normalisation on load): it is the user's text, the one a
    model is fed, and content-hash ids and fingerprints are computed from it.

    Examples
    --------
    >>> f = pd.DataFrame({"premise": ["Cafe\u0301"], "hypothesis": ["ok"]})
    >>> text_keys(f, ["premise", "hypothesis"]) == [("Caf\u00e9", "ok")]
    True
    """
    columns = [frame[f].astype(str).map(lambda s: unicodedata.normalize("NFC", s)) for f in fields]
    return list(zip(*columns, strict=True))


def _content_ids(frame: pd.DataFrame, task: Task) -> list[str]:
    """Content-hash ids; exact duplicate rows get ``-1``, ``-2``... suffixes.

    The hash is of the texts as given, not NFC-normalised: normalising would change the
    ids of existing files that prediction files are already keyed to.
    """
    seen: dict[str, int] = {}
    out = []
    cols = list(task.text_fields) + (["label"] if task.has_labels else [])
    cols += [c for c in ("options", "context") if c in frame.columns and task.multiple_choice]
    for values in frame[cols].itertuples(index=False, name=None):
        h = stable_hash(list(values), 12)
        k = seen.get(h, 0)
        seen[h] = k + 1
        out.append(h if k == 0 else f"{h}-{k}")
    return out
