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

__all__ = ["hf_from_frame", "hf_like_input", "import_datasets", "save_hf"]


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


def save_hf(obj: Any, path: str | os.PathLike[str]) -> Path:
    """``obj.save_to_disk`` into ``path`` atomically: built beside it, then swapped in."""
    path = Path(path)
    # save_to_disk writes a folder: build it beside the target, then swap it in.
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        obj.save_to_disk(str(tmp / "data"))
        old = None
        if path.exists():
            old = path.with_name(f".{path.name}.old")
            os.replace(path, old)
        os.replace(tmp / "data", path)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path
