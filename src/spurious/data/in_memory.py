"""Data handed to the Python API in memory: recognised, loaded, and stored to re-run.

:func:`spurious.run` takes a split as a path, a :class:`~spurious.data.Dataset`, a pandas
``DataFrame`` or a Hugging Face ``datasets.Dataset`` / ``DatasetDict``.
:func:`check_data_argument` says which one an argument is (one message naming the
argument otherwise), :func:`load_in_memory` loads the last two as
:func:`~spurious.data.load_dataset` does, and :func:`save_for_rerun` writes a loaded split
as Parquet that ``load_dataset`` reads back to the same examples, ids, labels and
fingerprint, so a run of in-memory data can be re-run from its manifest
(``spurious run --config DIR``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spurious.data.dataset import META_COLUMNS, Dataset
from spurious.exceptions import ParameterError
from spurious.utils.io import atomic_write

__all__ = [
    "INPUTS_FOLDER",
    "RUN_PREFIX",
    "check_data_argument",
    "load_in_memory",
    "load_splits",
    "save_for_rerun",
    "split_inputs",
    "split_task",
    "stored_name",
]

#: How a config names a file inside its own run folder (resolved against that folder).
RUN_PREFIX = "<run>/"
#: Where a run keeps the in-memory splits it was given: ``<run>/inputs/<role>-<fp>.parquet``.
INPUTS_FOLDER = "inputs"
_STORED = re.compile(r"^(data|eval|heuristics_train)-[0-9a-f]{8,64}\.parquet$")


def check_data_argument(value: Any, argument: str) -> str | None:
    """What kind of split ``value`` is: ``"path"``, ``"dataset"``, ``"frame"``, ``"hf"``
    (a Hugging Face Dataset or DatasetDict) or ``None`` (not given).

    Raises
    ------
    ParameterError
        Anything else, naming ``argument`` and what it got.

    Examples
    --------
    >>> import pandas as pd
    >>> check_data_argument("train.jsonl", "data"), check_data_argument(pd.DataFrame(), "eval")
    ('path', 'frame')
    >>> check_data_argument(42, "data")
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: The 'data' parameter must be a path, ... Got int 42 instead.
    """
    import pandas as pd

    if value is None:
        return None
    if isinstance(value, Dataset):
        return "dataset"
    if isinstance(value, str | os.PathLike):
        return "path"
    if isinstance(value, pd.DataFrame):
        return "frame"
    if type(value).__module__.split(".")[0] == "datasets" and (
        hasattr(value, "to_pandas") or hasattr(value, "keys")
    ):
        return "hf"
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    raise ParameterError(
        f"The '{argument}' parameter must be a path, a spurious Dataset, a pandas DataFrame "
        f"or a Hugging Face datasets.Dataset / DatasetDict. Got {type(value).__name__} "
        f"{shown} instead."
    )


def split_task(data: Any, kind: str | None, task: str | None) -> str:
    """The task of a run on ``data`` (of :func:`check_data_argument`'s ``kind``): a
    Dataset's own, else ``task``, which is then required."""
    if kind is None:
        raise ParameterError(
            "run() needs 'data': a path, a Dataset, a pandas DataFrame or a Hugging Face dataset."
        )
    if kind == "dataset":
        if task is not None and task != data.task.name:
            raise ParameterError(
                f"run(task={task!r}) but the in-memory 'data' has task {data.task.name!r}."
            )
        return str(data.task.name)
    if task is None:
        raise ParameterError(
            f"run() needs 'task' with 'data' given as a {kind} (only a Dataset knows its task)."
        )
    return task


def split_inputs(
    splits: Mapping[str, Any],
    kinds: Mapping[str, str | None],
    stored: Mapping[str, Dataset],
    in_run: bool,
    format: str | None,
    split: str | None,
    eval_split: str | None,
) -> dict[str, Any]:
    """A run config's ``inputs`` for its splits: paths as given, in-memory splits as the
    file the run stores them in (``in_run``: ``"<run>/inputs/..."``, with the data's label
    names so the re-run gets the same label ids) or by name (``"<in-memory NAME>"``).

    Raises
    ------
    ParameterError
        ``format`` where no split is read by it (every split in memory, or stored as
        Parquet to re-run).
    """
    if format is not None and stored and (in_run or "path" not in kinds.values()):
        raise ParameterError(
            f"The 'format' parameter ({format!r}) applies to splits given as paths; "
            f"{sorted(stored)} are in memory"
            + (" and are stored as Parquet to re-run." if in_run else ".")
            + " Leave format out (it is read from each file's suffix)."
        )
    inputs: dict[str, Any] = {}
    for key, value in splits.items():
        if key in stored:
            name = stored_name(key, stored[key])
            inputs[key] = (
                f"{RUN_PREFIX}{INPUTS_FOLDER}/{name}"
                if in_run
                else f"<in-memory {stored[key].name}>"
            )
        else:
            inputs[key] = None if value is None else os.fspath(value)
    if split is not None and kinds["data"] == "path":
        inputs["split"] = split
    if eval_split is not None and kinds["eval"] == "path":
        inputs["eval_split"] = eval_split
    data = stored.get("data")
    if in_run and data is not None and data.label_names and not data.task.multiple_choice:
        inputs["label_names"] = list(data.label_names)
    return inputs


def load_in_memory(
    value: Any,
    task: str,
    *,
    argument: str,
    field_map: Mapping[str, str] | None = None,
    split: str | None = None,
    label_names: Sequence[str] | None = None,
) -> Dataset:
    """A DataFrame or Hugging Face split as a validated Dataset (a Dataset as it is).

    ``field_map`` and ``split`` are :func:`~spurious.data.load_dataset`'s; ``label_names``
    (the data's, for an evaluation split) keeps label ids equal across splits.
    """
    from spurious.data.loaders import load_dataset

    if isinstance(value, Dataset):
        if split is not None:
            raise ParameterError(
                f"A split was named for '{argument}' ({split!r}), which is a loaded Dataset "
                "(one split): leave the split out, or pass the DatasetDict it came from."
            )
        return value
    return load_dataset(
        value,
        task,
        field_map=field_map,
        split=split,
        label_names=label_names,
        # "data (DataFrame)", "eval (DatasetDict)[validation]": as reports name it
        name=f"{argument} ({type(value).__name__})" + (f"[{split}]" if split else ""),
    )


def load_splits(
    splits: Mapping[str, Any],
    kinds: Mapping[str, str | None],
    task: str,
    field_map: Mapping[str, str],
    format: str | None,
    split: str | None,
    eval_split: str | None,
) -> dict[str, Dataset]:
    """The splits given in memory (``data``, ``eval``, ``heuristics_train``), loaded.

    ``kinds`` are :func:`check_data_argument`'s. An in-memory evaluation split takes its
    label ids from the data, so a data *file* is loaded here too in that case (the run
    then uses it as loaded).
    """
    from spurious.data.loaders import load_dataset

    loaded: dict[str, Dataset] = {}
    in_memory = {k for k, kind in kinds.items() if kind not in (None, "path")}
    if "data" in in_memory:
        loaded["data"] = load_in_memory(
            splits["data"], task, argument="data", field_map=field_map, split=split
        )
    elif in_memory & {"eval", "heuristics_train"}:
        loaded["data"] = load_dataset(
            os.fspath(splits["data"]), task, field_map=field_map, format=format, split=split
        )
    labels = loaded["data"].label_names if "data" in loaded else None
    for key, key_split in (("eval", eval_split), ("heuristics_train", None)):
        if key in in_memory:
            loaded[key] = load_in_memory(
                splits[key], task, argument=key, field_map=field_map, split=key_split,
                label_names=labels or None,
            )  # fmt: skip
    return loaded


def stored_name(role: str, dataset: Dataset) -> str:
    """The file name a run stores ``dataset`` under: its role and fingerprint.

    The fingerprint in the name makes the config of a run on other data differ, so two
    runs on different in-memory data never pass for one run in the same folder.

    Examples
    --------
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> ds = make_nli_artifacts(n=30, random_state=0).dataset
    >>> stored_name("data", ds) == f"data-{ds.fingerprint}.parquet"
    True
    """
    return f"{role}-{dataset.fingerprint}.parquet"


def stored_frame(dataset: Dataset, field_map: Mapping[str, str] | None = None) -> Any:
    """The canonical columns of ``dataset`` under the names ``field_map`` maps them from.

    ``load_dataset(<this frame>, task, field_map=field_map, label_names=<the data's>)``
    gives back the same rows: the mapping the run applies to every split is undone here,
    and ``label_id`` is left out (it is recomputed from the label names).
    """
    cols = [*dataset.task.text_fields, *(c for c in META_COLUMNS if c != "label_id")]
    cols = [c for c in dict.fromkeys(cols) if c in dataset.frame.columns]
    frame = dataset.frame[cols].copy()
    frame.attrs = {}  # pandas would store loader counts in the Parquet metadata
    fmap = dict(field_map or {})
    return frame.rename(columns={c: fmap[c] for c in cols if c in fmap})


def save_for_rerun(
    datasets: Mapping[str, Dataset],
    out: str | os.PathLike[str],
    field_map: Mapping[str, str] | None = None,
) -> dict[str, Path]:
    """Write each in-memory split to ``out/inputs/<role>-<fingerprint>.parquet``.

    Files of earlier runs in that folder with the same naming (other fingerprints) are
    removed: after ``force`` replaced a run, they belong to no run.

    Returns
    -------
    dict
        ``{role: path}``.
    """
    folder = Path(out) / INPUTS_FOLDER
    written: dict[str, Path] = {}
    for role, ds in datasets.items():
        frame = stored_frame(ds, field_map)

        def write(tmp: Path, frame: Any = frame) -> None:
            frame.to_parquet(tmp, index=False)

        written[role] = atomic_write(folder / stored_name(role, ds), write)
    keep = {p.name for p in written.values()}
    for old in folder.glob("*.parquet") if folder.is_dir() else ():
        if _STORED.match(old.name) and old.name not in keep:
            old.unlink()
    return written
