"""``load_dataset``: any supported source -> validated :class:`~spurious.data.Dataset`."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from spurious.data.dataset import Dataset
from spurious.data.readers import READERS, infer_format
from spurious.data.tasks import FIELD_ALIASES, get_task
from spurious.exceptions import DataFormatError, ParameterError, SchemaError

logger = logging.getLogger(__name__)

DataSource = str | os.PathLike[str] | pd.DataFrame | Any


def load_dataset(
    source: DataSource,
    task: str,
    *,
    field_map: Mapping[str, str] | None = None,
    label_names: Sequence[str] | None = None,
    format: str | None = None,
    name: str | None = None,
    split: str | None = None,
    drop_no_gold: bool = True,
) -> Dataset:
    """Load and validate a dataset for ``task``.

    Parameters
    ----------
    source : path, pandas.DataFrame or datasets.Dataset / DatasetDict
        A file (``.jsonl``, ``.json``, ``.csv``, ``.tsv``, ``.parquet`` or SQuAD's
        official JSON), an in-memory DataFrame, or a Hugging Face dataset.
    task : {"nli", "pair", "text", "qa"}
        Decides the canonical fields (see :data:`spurious.data.tasks.TASKS`).
    field_map : mapping, optional
        ``{canonical name: column in the source}``, e.g.
        ``{"premise": "sentence1", "hypothesis": "sentence2", "label": "gold_label"}``.
        Common aliases (SNLI, GLUE, CAD column names) are recognised without it.
        Canonical names: the task's text fields, ``label``, ``id``, ``group``,
        ``annotator_labels``.
    label_names : sequence of str, optional
        Allowed labels in id order; integer labels index into it.
    format : str, optional
        Overrides the format inferred from the file suffix.
    name : str, optional
        Name used in reports and errors (default: the file stem).
    split : str, optional
        Split to take from a Hugging Face ``DatasetDict``.
    drop_no_gold : bool, default=True
        Drop rows without a gold label (SNLI's ``"-"``) with a logged count.

    Returns
    -------
    Dataset

    Raises
    ------
    DataFormatError
        Unreadable file, unknown format, invalid UTF-8 or JSON (with the line).
    SchemaError
        A missing field (with the fields found), duplicate ids, wrong types.
    LabelError
        An unknown label (with the row) or a single class.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"sentence1": ["A dog runs.", "A cat sits."],
    ...                    "sentence2": ["An animal moves.", "A dog sits."],
    ...                    "gold_label": ["entailment", "contradiction"]})
    >>> ds = load_dataset(df, "nli")
    >>> ds.frame[["premise", "label"]].values.tolist()
    [['A dog runs.', 'entailment'], ['A cat sits.', 'contradiction']]
    """
    task_obj = get_task(task)
    if isinstance(source, pd.DataFrame):
        frame, rows, default_name = source.copy(), None, "dataframe"
    elif hasattr(source, "to_pandas") or (hasattr(source, "keys") and _is_hf(source)):
        frame, rows, default_name = _from_hf(source, split), None, "hf_dataset"
    elif isinstance(source, str | os.PathLike):
        path = Path(source)
        # Checked before inferring the format, which peeks into .json files.
        if not path.exists():
            raise DataFormatError(f"Data file {str(path)!r} does not exist.")
        if path.is_dir() and (format or path.suffix.lower().lstrip(".")) not in ("parquet", "pq"):
            # Only Parquet has directory datasets.
            raise DataFormatError(f"Data path {str(path)!r} is a directory, not a file.")
        fmt = format or infer_format(path)
        if fmt not in READERS:
            raise ParameterError(
                f"The 'format' parameter must be one of {sorted(READERS)}. Got {fmt!r} instead."
            )
        frame, rows = READERS[fmt](path)
        parent = path.parent.name
        default_name = path.stem if parent in ("", ".") else f"{parent}/{path.stem}"
    else:
        raise ParameterError(
            "The 'source' parameter must be a file path, a pandas DataFrame or a Hugging Face "
            f"dataset. Got {type(source).__name__} instead."
        )
    frame = _map_fields(frame, task_obj.name, field_map or {}, name or default_name)
    return Dataset.from_frame(
        frame,
        task_obj,
        label_names=label_names,
        name=name or default_name,
        drop_no_gold=drop_no_gold,
        source_rows=rows,
    )


def _is_hf(obj: Any) -> bool:
    return type(obj).__module__.startswith("datasets")


def _from_hf(source: Any, split: str | None) -> pd.DataFrame:
    if hasattr(source, "keys") and not hasattr(source, "to_pandas"):  # DatasetDict
        splits = list(source.keys())
        if split is None:
            raise ParameterError(
                f"The 'split' parameter is required for a DatasetDict; choose one of {splits}."
            )
        if split not in splits:
            raise ParameterError(
                f"The 'split' parameter must be one of {splits}. Got {split!r} instead."
            )
        source = source[split]
    frame = source.to_pandas()
    # HF ClassLabel columns store ints; keep their names so labels map by name.
    features = getattr(source, "features", {}) or {}
    for col, feat in features.items():
        names = getattr(feat, "names", None)
        if names and col in frame:
            frame[col] = frame[col].map(lambda v, n=names: _class_name(v, n))
    return frame


def _class_name(v: Any, names: Sequence[str]) -> Any:
    # HF ClassLabel uses -1 for "no label" (SNLI's "-"): make it missing, so rows
    # without a gold label are dropped like in the original files.
    if v is None or v != v:  # None or NaN
        return None
    k = int(v)
    if k == -1:
        return None
    return names[k] if 0 <= k < len(names) else v


def _map_fields(
    frame: pd.DataFrame, task: str, field_map: Mapping[str, str], name: str
) -> pd.DataFrame:
    task_obj = get_task(task)
    canonical = [*task_obj.text_fields, "label", "id", "group", "annotator_labels"]
    if not task_obj.has_labels:
        canonical += ["answers", "answer_starts"]
    for key, col in field_map.items():
        if key not in canonical:
            raise ParameterError(
                f"The 'field_map' parameter has an unknown key {key!r}; keys must be among "
                f"{canonical}."
            )
        if col not in frame.columns:
            raise SchemaError(
                f"field_map maps {key!r} to column {col!r}, which is not in {name!r}; "
                f"fields found: {list(map(str, frame.columns))}."
            )
    rename: dict[str, str] = {}
    taken = set(field_map.values())
    for target in canonical:
        if target in field_map:
            rename[field_map[target]] = target
            continue
        if target in frame.columns:
            continue
        for alias in FIELD_ALIASES.get(target, ()):
            if alias in frame.columns and alias not in taken and alias not in rename:
                rename[alias] = target
                taken.add(alias)
                break
    # Drop columns that would collide with a renamed canonical column (e.g. SNLI's
    # empty "label" beside "gold_label" when the map says label <- gold_label).
    collide = [t for s, t in rename.items() if t in frame.columns and s != t]
    frame = frame.drop(columns=collide).rename(columns=rename)
    if rename:
        logger.debug("%s: mapped columns %s", name, rename)
    return frame
