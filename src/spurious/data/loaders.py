"""``load_dataset``: any supported source -> validated :class:`~spurious.data.Dataset`."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from spurious.data.dataset import Dataset, InputSource
from spurious.data.mcq import canonical_mcq_frame, looks_headerless, read_mcq_folder, read_mmlu_csv
from spurious.data.readers import (
    check_regular_file,
    hf_class_labels,
    infer_format,
    is_hf_disk_folder,
    read_file,
    read_hf_disk,
)
from spurious.data.tasks import FIELD_ALIASES, get_task
from spurious.exceptions import DataFormatError, ParameterError, SchemaError, missing_dependency

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
    allow_network: bool = False,
) -> Dataset:
    """Load and validate a dataset for ``task``.

    Parameters
    ----------
    source : path, pandas.DataFrame or datasets.Dataset / DatasetDict
        A file (``.jsonl``, ``.json``, ``.csv``, ``.tsv``, ``.parquet``, ``.arrow`` or
        SQuAD's official JSON), a folder written by ``datasets``' ``save_to_disk`` (a
        Dataset, or a DatasetDict with ``split``), an in-memory DataFrame, or a Hugging
        Face dataset. A Hub name (``"snli"``) is read only with ``allow_network=True``.
    task : {"nli", "pair", "text", "qa"}
        Decides the canonical fields (see :data:`spurious.data.tasks.TASKS`).
    field_map : mapping, optional
        ``{canonical name: column in the source}``, e.g.
        ``{"premise": "sentence1", "hypothesis": "sentence2", "label": "gold_label"}``.
        Common aliases (SNLI, GLUE, CAD column names) are recognised without it.
        Canonical names: the task's text fields, ``label``, ``id``, ``group``,
        ``annotator_labels``.
    label_names : sequence of str, optional
        Allowed labels in id order; integer labels index into it. By default the
        ``ClassLabel`` names the source carries (Hugging Face datasets, and the
        Parquet, Arrow and ``save_to_disk`` files they write); otherwise the task's
        default names (NLI: entailment, neutral, contradiction, with a warning when
        integer labels are mapped by that assumed order) or the labels found.
    format : str, optional
        Overrides the format inferred from the file suffix.
    name : str, optional
        Name used in reports and errors (default: the file stem).
    split : str, optional
        Split to take from a Hugging Face ``DatasetDict`` (object or folder).
    drop_no_gold : bool, default=True
        Drop rows without a gold label (SNLI's ``"-"``) with a logged count.
    allow_network : bool, default=False
        Read a ``source`` that is not a local path as a Hugging Face Hub dataset name
        (``datasets.load_dataset(source, split=split)``; needs the ``hf`` extra and
        network access). Off by default: nothing is downloaded unless asked for.

    Returns
    -------
    Dataset
        With :attr:`Dataset.source` recording where each row came from.

    Raises
    ------
    DataFormatError
        Unreadable file, unknown format, invalid UTF-8 or JSON (with the line); a
        path that does not exist (for a Hub name: that hub access is off).
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
    _check_arguments(source, field_map, label_names, format, name, split)
    if isinstance(source, str | os.PathLike) and not Path(source).exists():
        # Checked before inferring the format, which peeks into .json files.
        if allow_network and _looks_like_hub_name(os.fspath(source)):
            hub = _from_hub(os.fspath(source), split)
            return load_dataset(
                hub,
                task,
                field_map=field_map,
                label_names=label_names,
                name=name or os.fspath(source),
                # the Hub already took the split: what came back is one Dataset
                split=None if hasattr(hub, "to_pandas") else split,
                drop_no_gold=drop_no_gold,
            )
        raise DataFormatError(_not_found(os.fspath(source)))
    raw = _read_source(source, split, format, mcq=task_obj.multiple_choice)
    frame = raw.frame
    n_source_rows = len(frame)
    class_labels = hf_class_labels(raw.features)
    frame = _apply_class_labels(frame, class_labels)
    if task_obj.multiple_choice:
        frame, used = canonical_mcq_frame(frame, field_map, name or raw.default_name)
        rename = {col: target for target, col in used.items()}
    else:
        frame, rename = _map_fields(frame, task_obj.name, field_map or {}, name or raw.default_name)
    canonical_to_source = {target: col for col, target in rename.items()}
    label_col = canonical_to_source.get("label", "label")
    names = class_labels.get(label_col)
    defaults = task_obj.default_labels or ()
    # The labels are names by now; the ClassLabel order becomes the label ids only where
    # the task has no standard order of these names (NLI keeps its own, so an NLI file
    # gets the same ids and fingerprint whatever format it came in).
    if label_names is None and names and not set(names) <= set(defaults):
        label_names = names
        logger.debug("%s: label names from the source's ClassLabel: %s", name, names)
    input_source = InputSource(
        kind=raw.kind,
        rows=np.arange(n_source_rows, dtype=np.int64),
        format=raw.format,
        path=raw.path,
        obj=None if raw.kind == "file" else source,
        split=raw.split,
        columns=canonical_to_source,
        id_column=canonical_to_source.get("id", "id") if "id" in frame.columns else None,
        hf_features=raw.features,
        n_source_rows=n_source_rows,
    )
    # Texts stay as the source spells them (no Unicode normalisation): they are what a
    # model is fed and what ids and fingerprints hash. Comparisons between datasets
    # (the train/eval overlap) normalise their keys instead (canonical.text_keys).
    return Dataset.from_frame(
        frame,
        task_obj,
        label_names=label_names,
        name=name or raw.default_name,
        drop_no_gold=drop_no_gold,
        source_rows=raw.rows,
        source=input_source,
    )


def _check_arguments(
    source: Any,
    field_map: Any,
    label_names: Any,
    format: Any,
    name: Any,
    split: Any,
) -> None:
    """The arguments' types, before anything is read: one message naming the argument."""
    if field_map is not None and (
        not isinstance(field_map, Mapping)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in field_map.items())
    ):
        raise ParameterError(
            "The 'field_map' parameter must be a mapping {canonical field: source column} "
            "of strings, e.g. {'premise': 'sentence1', 'label': 'gold_label'}. Got "
            f"{field_map!r} instead."
        )
    if label_names is not None and (
        isinstance(label_names, str)
        or not isinstance(label_names, Sequence | np.ndarray)
        or not all(isinstance(v, str) for v in label_names)
    ):
        raise ParameterError(
            "The 'label_names' parameter must be a sequence of label names (str) in id "
            f"order, e.g. ['entailment', 'neutral', 'contradiction']. Got {label_names!r} "
            "instead."
        )
    for arg, value in (("format", format), ("name", name), ("split", split)):
        if value is not None and not isinstance(value, str):
            raise ParameterError(
                f"The '{arg}' parameter must be a str or None. Got {type(value).__name__} "
                f"{value!r} instead."
            )
    if isinstance(source, pd.DataFrame) and isinstance(source.columns, pd.MultiIndex):
        raise SchemaError(
            f"The DataFrame has MultiIndex columns ({source.columns.nlevels} levels, e.g. "
            f"{source.columns[0]!r}); fields are found by one column name each. Flatten "
            "them first, e.g. df.columns = ['_'.join(map(str, c)) for c in df.columns], "
            "and map them with field_map."
        )


# -- reading the source ------------------------------------------------------------------


@dataclass
class _RawSource:
    """A source's rows as read, before fields are mapped; what :class:`InputSource` records."""

    frame: pd.DataFrame
    #: Per row, its line or record number in the file, for messages (``None``: 1..n).
    rows: list[int] | None
    default_name: str
    kind: str
    format: str | None = None
    path: str | None = None
    features: dict | None = None
    split: str | None = None


def _read_source(
    source: DataSource, split: str | None, format: str | None, mcq: bool = False
) -> _RawSource:
    """Read a DataFrame, a Hugging Face object or an existing path (file or folder).

    ``mcq``: multiple-choice data, which also comes as MMLU's headerless CSVs and as a
    folder of them (one per subject).
    """
    if isinstance(source, pd.DataFrame):
        _no_split(split, "a pandas DataFrame")
        dup = source.columns[source.columns.duplicated()].unique().tolist()
        if dup:
            raise SchemaError(
                f"The DataFrame has duplicated column name(s) {dup}; every column needs a "
                "distinct name (rename or drop the duplicates)."
            )
        frame = source.copy()
        # A frame from spurious' readers carries the HF features of its file.
        features = frame.attrs.pop("hf_features", None)
        return _RawSource(frame, None, "dataframe", "dataframe", features=features)
    if hasattr(source, "to_pandas") or (hasattr(source, "keys") and _is_hf(source)):
        frame, features, taken_split = _from_hf(source, split)
        return _RawSource(frame, None, "hf_dataset", "hf", features=features, split=taken_split)
    if isinstance(source, str | os.PathLike):
        return _read_path(Path(source), split, format, mcq)
    raise ParameterError(
        "The 'source' parameter must be a file path, a pandas DataFrame or a Hugging Face "
        f"dataset. Got {type(source).__name__} instead."
    )


def _read_path(path: Path, split: str | None, format: str | None, mcq: bool = False) -> _RawSource:
    """Read an existing file, Parquet folder or ``save_to_disk`` folder."""
    taken_split: str | None = None
    check_regular_file(path)  # before any peek into the file: a FIFO would block
    if not (is_hf_disk_folder(path) and format in (None, "hf_disk")):
        what = "a folder" if path.is_dir() else "a plain file"
        _no_split(split, f"{str(path)!r}, {what} (not written by datasets' save_to_disk)")
    fmt_guess = (format or infer_format(path)) if mcq and not path.is_dir() else format
    if mcq and path.is_dir() and not is_hf_disk_folder(path) and any(path.glob("*.csv")):
        fmt = "csv_folder"
        frame, rows = read_mcq_folder(path)
    elif mcq and fmt_guess == "csv" and looks_headerless(path):
        fmt = "csv_headerless"
        frame, rows = read_mmlu_csv(path)
    elif is_hf_disk_folder(path) and format in (None, "hf_disk"):
        fmt = "hf_disk"
        frame, rows = read_hf_disk(path, split)
        taken_split = split
    else:
        if path.is_dir() and (format or path.suffix.lower().lstrip(".")) not in (
            "parquet",
            "pq",
        ):
            # Only Parquet and save_to_disk have directory datasets.
            raise DataFormatError(
                f"Data path {str(path)!r} is a directory, not a file, and not a folder "
                "written by datasets' save_to_disk (it has no state.json or "
                "dataset_dict.json) or a Parquet dataset."
            )
        fmt = format or infer_format(path)
        frame, rows = read_file(path, fmt)
    # Popped: pandas deep-copies attrs on every operation.
    features = frame.attrs.pop("hf_features", None)
    parent = path.parent.name
    default_name = path.stem if parent in ("", ".") else f"{parent}/{path.stem}"
    if taken_split:
        default_name = f"{path.name}[{taken_split}]"
    return _RawSource(
        frame, rows, default_name, "file", fmt, os.fspath(path), features, taken_split
    )


#: Suffixes of the file formats we read: a missing path with one is no Hub name.
_FILE_SUFFIXES = frozenset(
    {".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".txt", ".parquet", ".pq", ".arrow"}
)
_HUB_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")


def _looks_like_hub_name(text: str) -> bool:
    """``snli``, ``stanfordnlp/snli``: a name the Hugging Face Hub could resolve."""
    return bool(_HUB_NAME.match(text)) and Path(text).suffix.lower() not in _FILE_SUFFIXES


def _not_found(text: str) -> str:
    if _looks_like_hub_name(text):
        return (
            f"{text!r} is not a local file or folder. If it names a Hugging Face Hub dataset: "
            "hub access is off; pass a local path or allow the network (allow_network=True), "
            "or load it with datasets.load_dataset and pass the Dataset."
        )
    return f"Data file {text!r} does not exist."


def _from_hub(name: str, split: str | None) -> Any:
    try:
        import datasets
    except ImportError:
        raise missing_dependency("datasets", "hf", "Reading a Hugging Face Hub dataset") from None
    logger.info("downloading %r from the Hugging Face Hub (allow_network=True)", name)
    try:
        return datasets.load_dataset(name, split=split)
    except OSError as e:  # ConnectionError, timeouts, DatasetNotFoundError
        # datasets says "Couldn't reach 'snli' on the Hub (OfflineModeIsEnabled)" at the
        # end of a chain of library frames: one line, and what to do instead.
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        why = (
            "no such dataset on the Hub, or it is private or gated"
            if isinstance(e, FileNotFoundError)
            else "the Hub could not be reached"
        )
        raise DataFormatError(
            f"{name!r} (allow_network / --allow-network): {why} ({type(e).__name__}: "
            f"{first}). Check the name and the network (and that HF_HUB_OFFLINE / "
            "HF_DATASETS_OFFLINE are not set), or download the dataset where the Hub is "
            "reachable (datasets.load_dataset(...).save_to_disk(DIR)) and pass DIR."
        ) from None


def _is_hf(obj: Any) -> bool:
    return type(obj).__module__.startswith("datasets")


def _no_split(split: str | None, source: str) -> None:
    """Refuse a ``split`` that would be ignored: only a DatasetDict has splits to pick.

    Examples
    --------
    >>> _no_split("validation", "'x.jsonl', a plain file")
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: The 'split' parameter (--split) 'validation' ...
    """
    if split is not None:
        raise ParameterError(
            f"The 'split' parameter (--split) {split!r} applies to a Hugging Face DatasetDict "
            "(a save_to_disk folder of splits, a DatasetDict object or, with allow_network, a "
            f"Hub name); {source} has no splits. Leave it out, or pass the split's own file."
        )


def _from_hf(source: Any, split: str | None) -> tuple[pd.DataFrame, dict | None, str | None]:
    """The split's rows, its features (JSON form) and the split taken (DatasetDict)."""
    taken = None
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
        source, taken = source[split], split
    else:
        _no_split(split, "a Hugging Face Dataset (one split)")
    frame = source.to_pandas()
    features = getattr(source, "features", None)
    return frame, _features_json(features), taken


def _features_json(features: Any) -> dict | None:
    """Hugging Face ``Features`` in their JSON form (as stored in file metadata)."""
    if features is None:
        return None
    to_dict = getattr(features, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    # Older datasets: read ClassLabel names off the feature objects.
    return {
        col: {"names": list(feat.names), "_type": "ClassLabel"}
        for col, feat in features.items()
        if getattr(feat, "names", None)
    }


def _apply_class_labels(frame: pd.DataFrame, class_labels: Mapping[str, list[str]]) -> pd.DataFrame:
    """Replace the integers of ClassLabel columns by their names (lists element-wise)."""
    for col, names in class_labels.items():
        if col in frame.columns:
            frame[col] = frame[col].map(lambda v, n=names: _class_value(v, n))
    return frame


def _class_value(v: Any, names: Sequence[str]) -> Any:
    if isinstance(v, list | tuple | np.ndarray):
        return [_class_name(x, names) for x in v]
    return _class_name(v, names)


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
) -> tuple[pd.DataFrame, dict[str, str]]:
    """Rename source columns to canonical fields; returns ``(frame, {source: canonical})``."""
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
    return frame, rename
