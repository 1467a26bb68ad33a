"""The input's own rows: re-read from the file or taken from the loaded object, checked.

The writers of :mod:`spurious.actions.filter` return and write the rows a dataset was
loaded from (:attr:`~spurious.data.Dataset.source`) with the input's own columns and
values; a dataset built in memory has only its canonical frame (:func:`source_frame`).
An input that changed since it was loaded is refused (:func:`check_unchanged`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from spurious.data.dataset import Dataset, InputSource
from spurious.exceptions import DataFormatError, ParameterError

__all__ = [
    "check_unchanged",
    "raw_rows",
    "require_source",
    "reread",
    "source_frame",
    "typed_labels",
]

# Columns the library adds to a Dataset frame; not part of the user's data.
_DERIVED = ("label_id",)


def source_frame(dataset: Dataset, field_map: Mapping[str, str] | None) -> pd.DataFrame:
    """The canonical frame without derived columns, renamed by ``field_map``."""
    frame = dataset.frame.drop(columns=[c for c in _DERIVED if c in dataset.frame.columns])
    if field_map:
        unknown = [k for k in field_map if k not in frame.columns]
        if unknown:
            raise ParameterError(
                f"The 'field_map' parameter names field(s) {unknown} that the dataset does not "
                f"have (columns: {list(map(str, frame.columns))})."
            )
        frame = frame.rename(columns=dict(field_map))
    return frame


def require_source(dataset: Dataset) -> InputSource:
    """``dataset.source``; raises for a dataset built in memory (no input to return)."""
    if dataset.source is None:
        raise ParameterError(
            f"Dataset {dataset.name!r} has no recorded input (it was built in memory, not by "
            "spurious.load_dataset): there is no input form to return. Use filter_dataset(), "
            "or write_filtered(..., field_map=...) to write its canonical columns."
        )
    return dataset.source


def raw_rows(
    dataset: Dataset, src: InputSource, keep: np.ndarray, add_id: bool, *, reset_index: bool
) -> pd.DataFrame:
    """The kept rows of the input, with the input's columns and values (+ ``id``)."""
    if src.kind == "dataframe":
        raw = src.obj
    elif src.kind == "hf":
        obj = src.obj[src.split] if src.split is not None else src.obj
        raw = obj.to_pandas()
    else:
        raw = reread(src)
    check_unchanged(dataset, src, raw)
    out = raw.iloc[src.rows[keep]].copy()
    if reset_index:
        out = out.reset_index(drop=True)
    if add_id and src.id_column is None:
        out.insert(0, "id", dataset.ids[keep])
    return out


def reread(src: InputSource) -> pd.DataFrame:
    """The input file (or ``save_to_disk`` folder) read again, as a frame."""
    from spurious.data.readers import READERS, read_hf_disk

    path = Path(src.path or "")
    if not path.exists():
        raise DataFormatError(
            f"The input {str(path)!r} no longer exists; the filtered rows are re-read from it."
        )
    if src.format == "hf_disk":
        frame, _ = read_hf_disk(path, src.split)
    elif src.format in ("csv_headerless", "csv_folder"):  # MMLU's layouts (task mcq)
        from spurious.data.mcq import read_mcq_folder, read_mmlu_csv

        frame, _ = (read_mmlu_csv if src.format == "csv_headerless" else read_mcq_folder)(path)
    else:
        frame, _ = READERS[src.format](path)
    frame.attrs.pop("hf_features", None)
    return frame


def check_unchanged(dataset: Dataset, src: InputSource, raw: pd.DataFrame) -> None:
    """Refuse to write rows of an input that changed since it was loaded."""
    changed = len(raw) != src.n_source_rows
    if not changed:
        for f in dataset.task.text_fields:
            col = src.columns.get(f, f)
            if col in raw.columns and not raw[col].iloc[src.rows].astype(str).reset_index(
                drop=True
            ).equals(dataset.frame[f].reset_index(drop=True)):
                changed = True
                break
    if changed:
        where = src.path or f"the in-memory {src.kind}"
        raise DataFormatError(
            f"The input of dataset {dataset.name!r} ({where}) changed since it was loaded "
            f"({len(raw)} rows now, {src.n_source_rows} then, or different texts); reload it "
            "and rerun the analysis before writing the filtered rows."
        )


def typed_labels(frame: pd.DataFrame, src: InputSource) -> pd.DataFrame:
    """CSV/TSV cells are read as text: give an all-integer label column its integers back."""
    col = src.columns.get("label", "label")
    if col in frame.columns:
        text = frame[col].astype(str).str.strip()
        if len(text) and text.str.fullmatch(r"-?\d+").all():
            frame[col] = text.astype(np.int64)
    return frame
