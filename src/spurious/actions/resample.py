"""RESAM: oversample the under-represented side of a heuristic's split (paper 001, Sec. 4.3).

Mikula et al. ("Think Twice", Sec. 4.3) debias a QA training set by "simple
super-sampling of the under-represented group (X1 or X2 in Algorithm 1) until the two
groups are represented equally", splitting at the heuristic's optimal threshold. Here:

- the groups are ``low = {h <= T}`` and ``high = {h > T}``, as in
  :mod:`spurious.evaluate.prediction_bias`;
- nothing is removed: the smaller group is oversampled until it is as large as the
  larger one, so the output has ``2 * max(n_low, n_high)`` split rows (plus any rows
  without an attribute, kept once and unchanged);
- the paper does not say how copies are drawn. By default every minority row is copied
  the same number of times and the remainder is drawn without replacement (the most
  even oversampling); ``replace=True`` draws every extra row independently with
  replacement instead. Both are seeded.

Copies get new ids (``<id>-resam<k>``) so that ids stay unique; an input without an
id column gets none (its copies are identical rows, which :func:`spurious.load_dataset`
tells apart by content-hash ids with ``-1``, ``-2``... suffixes). Files are written in
the input's format, atomically, and never over the input, as drop-in replacements: the
input's own rows with its own column names and value types (JSONL/JSON records
unchanged, CSV/TSV cells as read, Parquet and Arrow files with their Arrow schema and
metadata, so the ``ClassLabel`` names ``datasets`` stores there survive), or SQuAD's
nested JSON, where the copies are placed beside their original question in the same
paragraph.
"""

from __future__ import annotations

import csv
import json
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from spurious.actions.records import read_json_records, write_json_records
from spurious.exceptions import DataFormatError, ParameterError
from spurious.stats.resample import ResampleInfo, resample_indices
from spurious.utils.io import atomic_write, atomic_write_text, check_not_an_input

if TYPE_CHECKING:  # pragma: no cover
    from spurious.data.dataset import Dataset

logger = logging.getLogger(__name__)

__all__ = ["ResampleInfo", "resample_file", "resample_indices"]  # the first two re-exported

#: Suffix of the ids given to copies: ``<id>-resam<k>``.
COPY_SUFFIX = "-resam"


def resample_file(
    source: str | os.PathLike[str],
    destination: str | os.PathLike[str],
    *,
    task: str,
    threshold: float,
    attribute: np.ndarray | Callable[[Dataset], np.ndarray] | None = None,
    heuristic: str | None = None,
    field_map: Mapping[str, str] | None = None,
    format: str | None = None,
    replace: bool = False,
    random_state: int | None = 0,
    overwrite: bool = False,
    inputs: Any = (),
) -> ResampleInfo:
    """Write a RESAM-balanced copy of a training file, in the same format.

    Parameters
    ----------
    source : path
        The training file (JSONL, JSON, CSV, TSV, Parquet or SQuAD JSON). Never modified.
    destination : path
        Where to write; must differ from ``source``.
    task : {"nli", "pair", "text", "qa"}
    threshold : float
        ``T`` of the split (normally the threshold chosen by ``spurious bias``).
    attribute : array-like or callable, optional
        The heuristic's value per row of ``load_dataset(source, task)`` (same order), or
        a function of that :class:`~spurious.data.Dataset` returning them.
    heuristic : str, optional
        Otherwise, the heuristic to compute (``spurious.heuristics``; heuristics that
        estimate statistics are fitted on the file itself).
    field_map, format
        As for :func:`spurious.load_dataset`.
    replace : bool, default=False
        See :func:`resample_indices`.
    random_state : int or None, default=0
    overwrite : bool, default=False
        Replace an existing ``destination``.
    inputs : path or sequence of paths, optional
        The other inputs of the run (e.g. the ``--train`` file heuristics are fitted
        on). ``destination`` must not be, hold or lie inside any of them nor ``source``,
        even with ``overwrite``: inputs are never modified.

    Returns
    -------
    ResampleInfo

    Examples
    --------
    >>> import tempfile, pathlib, pandas as pd
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> pd.DataFrame({"id": list("abc"), "text": ["x", "y", "z y"], "label": [0, 1, 1]}
    ...              ).to_csv(d / "train.csv", index=False)
    >>> info = resample_file(d / "train.csv", d / "out.csv", task="text", threshold=1,
    ...                      attribute=np.array([1.0, 1.0, 2.0]))
    >>> pd.read_csv(d / "out.csv")["id"].tolist()
    ['a', 'b', 'c', 'c-resam1']
    """
    from spurious.data.loaders import load_dataset
    from spurious.data.readers import infer_format, read_file

    src, dst = Path(source), Path(destination)
    if not src.exists():
        raise DataFormatError(f"Data file {str(src)!r} does not exist.")
    if dst.resolve() == src.resolve():
        raise ParameterError(
            "The 'destination' parameter must differ from the source file (the input is "
            f"never modified). Got {str(dst)!r} for both."
        )
    check_not_an_input(dst, [src, inputs], what="The 'destination' parameter")
    if dst.exists() and not overwrite:
        raise ParameterError(
            f"The 'destination' file {str(dst)!r} exists; pass overwrite=True (--force) to "
            "replace it."
        )
    fmt = format or infer_format(src)
    raw, _rows = read_file(src, fmt)
    # A private column maps each dataset row back to its row in the file (the loader may
    # drop rows without a gold label).
    tagged = raw.copy()
    tagged["__spurious_row__"] = np.arange(len(raw))
    ds = load_dataset(tagged, task, field_map=field_map, name=src.stem)
    file_rows = ds.frame["__spurious_row__"].to_numpy(dtype=np.int64)
    ds.frame = ds.frame.drop(columns="__spurious_row__")

    if attribute is None:
        if heuristic is None:
            raise ParameterError("resample_file needs 'attribute' or 'heuristic'.")
        from spurious.heuristics import compute_heuristics

        # The file is a training set: statistics-based heuristics are fitted on it.
        frame = compute_heuristics(ds, [heuristic], train=ds)
        attribute = frame[heuristic].to_numpy(dtype=np.float64)
    elif callable(attribute):
        attribute = attribute(ds)
    attr = np.asarray(attribute, dtype=np.float64)
    if attr.shape != (len(ds),):
        raise ParameterError(
            f"The 'attribute' parameter must hold one value per row of {str(src)!r} "
            f"({len(ds)}). Got shape {attr.shape}."
        )
    # Attribute per file row; rows the loader dropped have none and are kept unchanged.
    attr_file = np.full(len(raw), np.nan)
    attr_file[file_rows] = attr
    indices, info = resample_indices(
        attr_file, threshold, replace=replace, random_state=random_state
    )
    id_col = _id_column(raw.columns, task, field_map)
    if fmt == "squad":
        _write_squad(src, dst, ds.ids, file_rows, indices)
    elif fmt in ("jsonl", "json"):
        _write_json_records(src, dst, fmt, indices, id_col)
    elif fmt in ("parquet", "arrow"):
        _write_arrow_table(src, dst, fmt, indices, id_col)
    else:
        _write_table(raw, dst, fmt, indices, id_col)
    return info


# -- writers -----------------------------------------------------------------------------


def _copy_numbers(indices: np.ndarray) -> np.ndarray:
    """0 for the first occurrence of a row, then 1, 2, ... for its copies."""
    order = np.argsort(indices, kind="stable")
    sorted_idx = indices[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_idx)) + 1]
    run = np.arange(indices.size) - np.repeat(starts, np.diff(np.r_[starts, indices.size]))
    out = np.empty_like(run)
    out[order] = run
    return out


def _id_column(columns: Any, task: str, field_map: Mapping[str, str] | None) -> str | None:
    from spurious.data.tasks import FIELD_ALIASES

    cols = list(columns)
    if field_map and "id" in field_map:
        return field_map["id"]
    if "id" in cols:
        return "id"
    return next((c for c in FIELD_ALIASES.get("id", ()) if c in cols), None)


def _write_table(
    raw: pd.DataFrame, dst: Path, fmt: str, indices: np.ndarray, id_col: str | None
) -> None:
    out = raw.iloc[indices].reset_index(drop=True)
    if id_col is not None:
        k = _copy_numbers(indices)
        ids = out[id_col].astype(str)
        out[id_col] = np.where(k > 0, ids + COPY_SUFFIX + k.astype(str), out[id_col].to_numpy())
    if fmt == "parquet":
        atomic_write(dst, lambda p: out.to_parquet(p, index=False))
    elif fmt == "csv":
        atomic_write(dst, lambda p: out.to_csv(p, index=False))
    elif fmt == "tsv":
        # Our TSV reader (like GLUE/SNLI files) has no quoting: a tab or newline inside a
        # field cannot be written back faithfully.
        bad = out.apply(lambda c: c.astype(str).str.contains(r"[\t\n\r]", regex=True)).any()
        if bad.any():
            raise DataFormatError(
                f"Cannot write {str(dst)!r} as TSV: column(s) {list(bad[bad].index)} contain "
                "tabs or newlines; use CSV, JSONL or Parquet."
            )
        atomic_write(
            dst,
            lambda p: out.to_csv(p, sep="\t", index=False, quoting=csv.QUOTE_NONE, escapechar=None),
        )
    else:  # pragma: no cover - callers pass known formats
        raise ParameterError(f"Unsupported output format {fmt!r}.")


def _write_arrow_table(
    src: Path, dst: Path, fmt: str, indices: np.ndarray, id_col: str | None
) -> None:
    """Parquet / Arrow: take rows of the Arrow table itself, so schema and metadata stay."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from spurious.data.readers import read_arrow_table

    table = pq.read_table(src) if fmt == "parquet" else read_arrow_table(src)
    out = table.take(pa.array(indices))
    if id_col is not None and id_col in out.column_names:
        k = _copy_numbers(indices)
        ids = out.column(id_col).to_pylist()
        new = [
            v if c == 0 else f"{v}{COPY_SUFFIX}{c}" for v, c in zip(ids, k.tolist(), strict=True)
        ]
        field = out.schema.field(id_col)
        if not (pa.types.is_string(field.type) or pa.types.is_large_string(field.type)):
            # Copies' ids are strings: the column must be one (numeric ids become text).
            new = [None if v is None else str(v) for v in new]
            field = field.with_type(pa.string())
        i = out.column_names.index(id_col)
        out = out.set_column(i, field, pa.array(new, field.type))
    if fmt == "parquet":
        atomic_write(dst, lambda p: pq.write_table(out, p))
    else:

        def write_stream(p: Path) -> None:
            # The IPC stream format, as datasets writes its .arrow files.
            with pa.OSFile(str(p), "wb") as sink, pa.ipc.new_stream(sink, out.schema) as w:
                w.write_table(out)

        atomic_write(dst, write_stream)


def _write_json_records(
    src: Path, dst: Path, fmt: str, indices: np.ndarray, id_col: str | None
) -> None:
    # The raw records, not the DataFrame: keys absent from a row must stay absent.
    records, wrapper = read_json_records(src, fmt)
    k = _copy_numbers(indices)
    out = []
    for i, copy in zip(indices.tolist(), k.tolist(), strict=True):
        rec = records[i]
        if copy and id_col is not None and id_col in rec:
            rec = {**rec, id_col: f"{rec[id_col]}{COPY_SUFFIX}{copy}"}
        out.append(rec)
    write_json_records(dst, out, fmt, wrapper)


def _write_squad(
    src: Path, dst: Path, ids: np.ndarray, file_rows: np.ndarray, indices: np.ndarray
) -> None:
    # Copies of a question go right after it, in the same paragraph, so the official
    # nested structure (data -> paragraphs -> qas) and every context are preserved.
    obj = json.loads(src.read_text(encoding="utf-8-sig"))
    copies = np.bincount(indices, minlength=int(file_rows.max()) + 1) - 1
    n_copies = {str(ids[j]): int(copies[r]) for j, r in enumerate(file_rows) if copies[r] > 0}
    for article in obj["data"]:
        for para in article["paragraphs"]:
            qas = []
            for qa in para["qas"]:
                qas.append(qa)
                for c in range(1, n_copies.get(str(qa["id"]), 0) + 1):
                    qas.append({**qa, "id": f"{qa['id']}{COPY_SUFFIX}{c}"})
            para["qas"] = qas
    atomic_write_text(dst, json.dumps(obj, ensure_ascii=False) + "\n")
