"""Hugging Face outputs: the kept rows as a ``datasets`` object of the input's type.

Features (``ClassLabel`` included) and the container type (a ``DatasetDict`` stays
one) are kept; :func:`save_hf` writes a ``save_to_disk`` folder atomically. The
``datasets`` package (the ``hf`` extra) is imported only here, when needed.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from spurious.actions.input_rows import raw_rows, typed_labels
from spurious.data.dataset import Dataset, InputSource
from spurious.exceptions import DataFormatError
from spurious.utils.progress import datasets_progress, default_progress

__all__ = [
    "check_hf_target",
    "hf_from_frame",
    "hf_like_input",
    "import_datasets",
    "is_hf_folder",
    "save_hf",
]


def import_datasets(what: str) -> Any:
    """The ``datasets`` module; a missing ``hf`` extra is an error that names ``what``."""
    from spurious.exceptions import missing_dependency

    try:
        import datasets
    except ImportError:
        raise missing_dependency("datasets", "hf", what) from None
    return datasets


def hf_like_input(
    dataset: Dataset, src: InputSource, keep: np.ndarray, add_id: bool, whole_dict: bool = True
) -> Any:
    """The kept rows as a Hugging Face object of the input's type, features kept.

    A ``DatasetDict`` input (object or folder) comes back as a DatasetDict with its
    loaded split filtered (``whole_dict=False``: only that split, as a Dataset); any
    other input becomes a ``datasets.Dataset`` with the input's columns and, when the
    input carried them, its features.
    """
    datasets = import_datasets("A Hugging Face dataset of the filtered rows")
    if src.kind == "hf":
        obj = src.obj
    elif src.format == "hf_disk":
        obj = datasets.load_from_disk(str(src.path))
    else:
        frame = raw_rows(dataset, src, keep, add_id, reset_index=True)
        if src.format in ("csv", "tsv"):
            frame = typed_labels(frame, src)
        return hf_from_frame(frame, src.hf_features)
    is_dict = src.split is not None
    split = obj[src.split] if is_dict else obj
    if len(split) != src.n_source_rows:
        raise DataFormatError(
            f"The input of dataset {dataset.name!r} has {len(split)} rows now, "
            f"{src.n_source_rows} when it was loaded; reload it before filtering."
        )
    kept = split.select(src.rows[keep].tolist())
    if add_id and src.id_column is None:
        kept = kept.add_column("id", dataset.ids[keep].tolist())
        kept = kept.select_columns(["id", *[c for c in kept.column_names if c != "id"]])
    if not (is_dict and whole_dict):
        return kept
    return datasets.DatasetDict({k: (kept if k == src.split else v) for k, v in obj.items()})


def hf_from_frame(frame: pd.DataFrame, features: dict | None) -> Any:
    """A ``datasets.Dataset`` of ``frame``, with ``features`` when they match its columns."""
    datasets = import_datasets("Writing a Hugging Face dataset")
    feats = None
    if features:
        full = dict(features)
        if "id" in frame.columns and "id" not in full:
            full = {"id": {"dtype": "string", "_type": "Value"}, **full}
        if set(full) == set(frame.columns):
            feats = datasets.Features.from_dict({c: full[c] for c in frame.columns})
    return datasets.Dataset.from_pandas(frame, features=feats, preserve_index=False)


#: Files ``datasets``' ``save_to_disk`` writes in a Dataset folder (besides ``*.arrow``).
_HF_DATASET_FILES = ("dataset_info.json", "state.json")


def _is_hf_dataset_folder(path: Path) -> bool:
    """A ``Dataset.save_to_disk`` folder: its JSON files, Arrow shards and nothing else."""
    try:
        entries = list(path.iterdir())
    except OSError:
        return False
    names = {e.name for e in entries}
    if not set(_HF_DATASET_FILES) <= names:
        return False
    return all(
        e.is_file() and not e.is_symlink() and (e.name in _HF_DATASET_FILES or e.suffix == ".arrow")
        for e in entries
    )


def is_hf_folder(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a folder ``save_to_disk`` wrote and nothing else did.

    A ``Dataset`` folder (``dataset_info.json``, ``state.json``, ``*.arrow``) or a
    ``DatasetDict`` folder (``dataset_dict.json`` and one such folder per split); a
    folder holding any other file is not one, so :func:`save_hf` never replaces it.
    """
    path = Path(path)
    if path.is_symlink() or not path.is_dir():
        return False
    if _is_hf_dataset_folder(path):
        return True
    if not (path / "dataset_dict.json").is_file():
        return False
    for entry in path.iterdir():
        if entry.name == "dataset_dict.json":
            continue
        if entry.is_symlink() or not entry.is_dir() or not _is_hf_dataset_folder(entry):
            return False
    return True


def check_hf_target(
    path: str | os.PathLike[str], inputs: Any = (), *, what: str = "The 'path' argument"
) -> Path:
    """Refuse a Hugging Face output folder that would touch an input or a foreign folder.

    ``path`` must not be, hold or lie inside an input
    (:func:`~spurious.utils.io.check_not_an_input`); an existing ``path`` is replaced only
    when it is a dataset folder ``save_to_disk`` wrote (:func:`is_hf_folder`): a folder
    holding anything else is never removed.
    """
    from spurious.exceptions import ParameterError
    from spurious.utils.io import check_not_an_input

    path = Path(path)
    check_not_an_input(path, inputs, what=what)
    if (path.exists() or path.is_symlink()) and not is_hf_folder(path):
        kind = "a folder" if path.is_dir() else "a file"
        raise ParameterError(
            f"{what} {str(path)!r} exists and is {kind} that is not a Hugging Face dataset "
            "folder written by save_to_disk; it is never replaced (even with --force). "
            "Choose a new folder."
        )
    return path


def save_hf(
    obj: Any,
    path: str | os.PathLike[str],
    *,
    inputs: Any = (),
    what: str = "The 'path' argument",
) -> Path:
    """``obj.save_to_disk`` into ``path`` atomically: built beside it, then swapped in.

    ``path`` must not be, hold or lie inside one of ``inputs``, and an existing ``path``
    is replaced only when it is a Hugging Face dataset folder (see :func:`check_hf_target`).
    """
    path = check_hf_target(path, inputs, what=what)
    # save_to_disk writes a folder: build it beside the target, then swap it in.
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        # datasets' "Flattening the indices" / "Saving the dataset" bars only where a
        # person watches, as ours.
        with datasets_progress(default_progress()):
            obj.save_to_disk(str(tmp / "data"))
        if path.exists():  # a dataset folder (checked above): removed with tmp
            os.replace(path, tmp / "old")
        os.replace(tmp / "data", path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path
