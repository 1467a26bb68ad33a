"""File writers of the kept rows, by format: frames, JSON records, SQuAD, Parquet, TSV.

Written in the input's own format, a JSONL or JSON row is the input's record unchanged
(:func:`write_records`), SQuAD keeps its nesting (:func:`write_squad`) and a Parquet
file its Arrow schema and metadata (:func:`write_arrow_as_parquet`); other
combinations go through a DataFrame (:func:`write_frame`; TSV unquoted,
:func:`_tsv_text`). Every file is written atomically.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from spurious.actions.hf_output import hf_from_frame, save_hf
from spurious.actions.input_rows import check_unchanged, reread, source_frame
from spurious.actions.records import read_json_records, write_json_records
from spurious.data.dataset import Dataset, InputSource
from spurious.exceptions import DataFormatError, ParameterError
from spurious.utils.io import atomic_write, atomic_write_text

__all__ = [
    "write_arrow_as_parquet",
    "write_canonical",
    "write_frame",
    "write_records",
    "write_squad",
]


def write_frame(frame: pd.DataFrame, path: Path, fmt: str) -> None:
    """Write ``frame`` as ``fmt`` (JSONL, JSON records, CSV, unquoted TSV or Parquet)."""
    if fmt == "jsonl":
        atomic_write(
            path, lambda p: frame.to_json(p, orient="records", lines=True, force_ascii=False)
        )
    elif fmt == "json":
        atomic_write(path, lambda p: frame.to_json(p, orient="records", force_ascii=False))
    elif fmt == "csv":
        flat = _json_cells(frame)
        atomic_write(path, lambda p: flat.to_csv(p, index=False))
    elif fmt == "tsv":
        text = _tsv_text(_json_cells(frame))
        atomic_write(path, lambda p: p.write_text(text, encoding="utf-8"))
    elif fmt == "parquet":
        atomic_write(path, lambda p: frame.to_parquet(p, index=False))
    else:  # pragma: no cover - _infer_format only lets known formats through
        raise ParameterError(f"Unsupported output format {fmt!r}.")


def write_canonical(
    kept: Dataset, path: Path, fmt: str, field_map: Mapping[str, str] | None
) -> None:
    """Write a dataset built in memory from its canonical columns (renamed by ``field_map``)."""
    frame = source_frame(kept, field_map)
    if fmt == "hf":
        save_hf(hf_from_frame(frame, None), path)
    else:
        write_frame(frame, path, fmt)


def write_records(
    dataset: Dataset, src: InputSource, keep: np.ndarray, add_id: bool, path: Path, fmt: str
) -> None:
    """JSONL / JSON array input -> the same records, unchanged, in the same layout."""
    check_unchanged(dataset, src, reread(src))
    records, wrapper = read_json_records(Path(src.path or ""), fmt)
    ids = dataset.ids[keep]
    out = []
    for j, i in enumerate(src.rows[keep].tolist()):
        rec = records[i]
        out.append({"id": ids[j], **rec} if add_id and src.id_column is None else rec)
    write_json_records(path, out, fmt, wrapper)


def write_squad(dataset: Dataset, src: InputSource, keep: np.ndarray, path: Path) -> None:
    """SQuAD's nested JSON without the removed questions (and the then-empty paragraphs)."""
    check_unchanged(dataset, src, reread(src))
    obj = json.loads(Path(src.path or "").read_text(encoding="utf-8-sig"))
    kept = set(dataset.ids[keep].tolist())
    articles = []
    for article in obj["data"]:
        paragraphs = []
        for para in article["paragraphs"]:
            qas = [qa for qa in para["qas"] if str(qa["id"]) in kept]
            if qas:
                paragraphs.append({**para, "qas": qas})
        if paragraphs:
            articles.append({**article, "paragraphs": paragraphs})
    atomic_write_text(path, json.dumps({**obj, "data": articles}, ensure_ascii=False) + "\n")


def write_arrow_as_parquet(
    dataset: Dataset, src: InputSource, keep: np.ndarray, add_id: bool, path: Path
) -> None:
    """Parquet / Arrow / save_to_disk input -> Parquet with the same schema and metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from spurious.data.readers import hf_disk_shards, hf_disk_split_folder, read_arrow_table

    check_unchanged(dataset, src, reread(src))
    in_path = Path(src.path or "")
    if src.format == "parquet":
        table = pq.read_table(in_path)
    elif src.format == "arrow":
        table = read_arrow_table(in_path)
    else:
        folder = hf_disk_split_folder(in_path, src.split)
        tables = [read_arrow_table(p) for p in hf_disk_shards(folder)]  # confined to folder
        table = pa.concat_tables(tables)
    table = table.take(pa.array(src.rows[keep]))
    if add_id and src.id_column is None:
        table = table.add_column(0, "id", pa.array(dataset.ids[keep].tolist(), pa.string()))
        table = table.replace_schema_metadata(_metadata_with_id(table.schema.metadata))
    atomic_write(path, lambda p: pq.write_table(table, p))


def _metadata_with_id(metadata: dict | None) -> dict | None:
    """Schema metadata with the added ``id`` column declared in the HF features (if any)."""
    if not metadata or b"huggingface" not in metadata:
        return metadata
    meta = dict(metadata)
    try:
        hf = json.loads(meta[b"huggingface"])
        features = hf["info"]["features"]
        hf["info"]["features"] = {"id": {"dtype": "string", "_type": "Value"}, **features}
    except (ValueError, KeyError, TypeError):
        return metadata
    meta[b"huggingface"] = json.dumps(hf).encode()
    # pandas' own metadata describes the old columns; drop it rather than mislead.
    meta.pop(b"pandas", None)
    return meta


def _json_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """List / dict cells (multiple-choice options, ARC's nested question) as JSON text.

    A CSV cell holds text; Python's repr of a list (what pandas writes) is not readable
    back, JSON is (``load_dataset(..., "mcq")`` parses such cells).
    """
    nested = [
        c for c in frame.columns
        if frame[c].dtype == object and frame[c].map(lambda v: isinstance(v, list | tuple | dict | np.ndarray)).any()
    ]  # fmt: skip
    if not nested:
        return frame
    out = frame.copy()
    for c in nested:
        out[c] = out[c].map(
            lambda v: (
                json.dumps(v.tolist() if isinstance(v, np.ndarray) else v, ensure_ascii=False)
                if isinstance(v, list | tuple | dict | np.ndarray)
                else v
            )
        )
    return out


def _tsv_text(frame: pd.DataFrame) -> str:
    """Unquoted TSV, as NLP corpora (GLUE, SNLI) write it and our reader reads it."""

    def cell(v: object) -> str:
        if v is None or (isinstance(v, float) and np.isnan(v)):
            return ""
        return str(v)

    lines = ["\t".join(map(str, frame.columns))]
    for i, rec in enumerate(frame.itertuples(index=False, name=None)):
        cells = [cell(v) for v in rec]
        bad = [
            c for c, v in zip(frame.columns, cells, strict=True) if any(ch in v for ch in "\t\r\n")
        ]
        if bad:
            raise DataFormatError(
                f"Row {i + 1} (id {frame['id'].iloc[i] if 'id' in frame else i!r}) has a tab or "
                f"line break in field(s) {bad}; unquoted TSV cannot hold it. Write .jsonl, .csv "
                "or .parquet instead."
            )
        lines.append("\t".join(cells))
    return "\n".join(lines) + "\n"
