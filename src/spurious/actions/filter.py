"""Filtered datasets: keep the rows a detector did not flag (AFLite's reduced set S).

:func:`filter_dataset` returns the kept rows as a :class:`~spurious.data.Dataset`.
:func:`filter_source` returns them in the input's own form, and :func:`write_filtered`
writes them, atomically, as JSONL, JSON, CSV, TSV, Parquet or a Hugging Face dataset
folder, as drop-in replacements for the input:

- the rows are the input's own rows (re-read from the file, or taken from the
  DataFrame / Hugging Face object that was loaded), so column names (``sentence``,
  ``sentence1``, ``gold_label``...), columns the analysis did not use, and value types
  (integer labels stay integers) are those of the input; written in the input's own
  format, a JSONL or JSON row is the input's record unchanged (keys absent from a row
  stay absent) and a Parquet file keeps its Arrow schema and metadata;
- a Hugging Face dataset keeps its features (``ClassLabel`` included) and its type:
  a ``DatasetDict`` comes back as a ``DatasetDict`` whose loaded split is filtered and
  whose other splits are unchanged;
- an ``id`` column (the ids :func:`spurious.load_dataset` gave the rows: content hashes)
  is added, as the first column, **only when the input had no id column**, so the kept
  rows can be matched to the analysis' per-example results; ``add_id=False`` leaves it
  out. An input id column (``id``, ``pairID``...) is kept as it was.

Datasets built in memory with :meth:`~spurious.data.Dataset.from_frame` have no
recorded input: they are written from their canonical frame (without the derived
``label_id``), with ``field_map`` renaming canonical fields back to source names. TSV is
written unquoted, as NLP corpora are and as :func:`spurious.load_dataset` reads it.

The entry points are here; the input's own rows are in
:mod:`~spurious.actions.input_rows`, the writers by format in
:mod:`~spurious.actions.file_writers` and the Hugging Face outputs in
:mod:`~spurious.actions.hf_output`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from spurious.actions.file_writers import (
    write_arrow_as_parquet,
    write_canonical,
    write_frame,
    write_records,
    write_squad,
)
from spurious.actions.hf_output import check_hf_target, hf_from_frame, hf_like_input, save_hf
from spurious.actions.input_rows import raw_rows, require_source, source_frame, typed_labels
from spurious.data.dataset import Dataset
from spurious.exceptions import AnalysisError, ParameterError
from spurious.results import DetectorResult
from spurious.utils.io import atomic_write, check_not_an_input, input_paths

logger = logging.getLogger(__name__)

__all__ = [
    "FILTER_FORMATS",
    "filter_dataset",
    "filter_source",
    "output_format",
    "rows_as_hf",
    "save_hf",
    "write_filtered",
    "write_rows",
]

#: Output formats of :func:`write_filtered` ("json": a JSON array of records, or SQuAD's
#: nested JSON when the input was one).
FILTER_FORMATS = ("jsonl", "json", "csv", "tsv", "parquet", "hf")
_SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv",
             ".tsv": "tsv", ".parquet": "parquet", ".pq": "parquet"}  # fmt: skip
#: Formats whose files hold Arrow tables (with the Hugging Face features, if any).
_ARROW_FORMATS = ("parquet", "arrow", "hf_disk")


def _flag_column(result: DetectorResult) -> str:
    col = f"is_{result.analysis}_issue"
    if col not in result.scores.columns:
        raise AnalysisError(
            f"The {result.analysis!r} result has no {col!r} column to filter on "
            f"(columns: {list(result.scores.columns)[:10]})."
        )
    return col


def kept_mask(dataset: Dataset, result: DetectorResult) -> np.ndarray:
    """Boolean mask over ``dataset`` rows: True where ``result`` did not flag the row.

    Rows are matched by id; every row of ``dataset`` must be scored by ``result``.
    """
    if result.status != "ok":
        raise AnalysisError(
            f"Cannot filter with a failed {result.analysis!r} result: {result.error}"
        )
    col = _flag_column(result)
    fps = set((result.provenance.fingerprints or {}).values())
    if fps and dataset.fingerprint not in fps:
        logger.warning(
            "dataset %r (fingerprint %s) is not one the %s result was computed on (%s); "
            "matching rows by id",
            dataset.name,
            dataset.fingerprint,
            result.analysis,
            sorted(fps),
        )
    flags = pd.Series(
        result.scores[col].to_numpy(dtype=bool), index=result.scores["id"].astype(str)
    )
    ids = pd.Index(dataset.ids.astype(str))
    missing = ids.difference(flags.index)
    if len(missing):
        raise AnalysisError(
            f"{len(missing)} of {len(ids)} example id(s) of dataset {dataset.name!r} are not in "
            f"the {result.analysis!r} result, e.g. {list(missing[:5])}; filter the dataset the "
            "result was computed on (in evaluation-set mode: the evaluation split)."
        )
    return ~flags.reindex(ids).to_numpy(dtype=bool)


def filter_dataset(dataset: Dataset, result: DetectorResult) -> Dataset:
    """The rows of ``dataset`` that ``result`` did not flag (``is_<detector>_issue``).

    Parameters
    ----------
    dataset : Dataset
        The data the result scored (the evaluation split in AFLite's evaluation mode).
    result : DetectorResult
        E.g. an AFLite result: the kept rows are AFLite's filtered set.

    Returns
    -------
    Dataset
        Kept rows in their original order; same label names.

    Examples
    --------
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> from spurious.results import DetectorResult
    >>> ds = make_nli_artifacts(n=30, random_state=0).dataset
    >>> flags = np.arange(30) % 3 == 0
    >>> res = DetectorResult("aflite", pd.DataFrame({"id": ds.ids, "is_aflite_issue": flags}), {})
    >>> len(filter_dataset(ds, res))
    20
    """
    keep = kept_mask(dataset, result)
    return dataset.subset(np.flatnonzero(keep), f"{dataset.name}[{result.analysis}]")


def _infer_format(path: Path, fmt: str | None) -> str:
    suffix = path.suffix.lower()
    if fmt is not None:
        if fmt not in FILTER_FORMATS:
            raise ParameterError(
                f"The 'format' parameter must be one of {list(FILTER_FORMATS)}. Got {fmt!r} instead."
            )
        if suffix in _SUFFIXES and _SUFFIXES[suffix] != fmt:
            # CSV in a file named .jsonl: every reader would take it for the suffix' format.
            raise ParameterError(
                f"The 'format' parameter (--filtered-format) {fmt!r} contradicts the suffix of "
                f"{str(path)!r}, which names {_SUFFIXES[suffix]!r}. Name the file for its "
                "format, or leave the format out to write what the suffix says."
            )
        return fmt
    if suffix in _SUFFIXES:
        return _SUFFIXES[suffix]
    raise ParameterError(
        f"Cannot tell the output format of {str(path)!r} from its suffix {path.suffix!r}; "
        f"pass format= one of {list(FILTER_FORMATS)} ('hf' writes a Hugging Face dataset folder)."
    )


def filter_source(dataset: Dataset, result: DetectorResult, *, add_id: bool = True) -> Any:
    """The rows ``result`` did not flag, in the form the input had (see the module docstring).

    Parameters
    ----------
    dataset : Dataset
        Loaded with :func:`spurious.load_dataset` (its :attr:`~Dataset.source` says
        what the input was).
    result : DetectorResult
    add_id : bool, default=True
        Add an ``id`` column when the input had none.

    Returns
    -------
    datasets.Dataset, datasets.DatasetDict or pandas.DataFrame
        The same type as a Hugging Face input (a ``save_to_disk`` folder counts as one;
        features kept; a DatasetDict with its loaded split filtered), else a DataFrame
        of the input's rows with its own columns (a DataFrame input keeps its index).

    Examples
    --------
    >>> from spurious.data import load_dataset
    >>> from spurious.results import DetectorResult
    >>> df = pd.DataFrame({"sentence": ["good", "bad", "fine"], "label": [1, 0, 1]})
    >>> ds = load_dataset(df, "text")
    >>> res = DetectorResult("aflite", pd.DataFrame({"id": ds.ids,
    ...                      "is_aflite_issue": [False, True, False]}), {})
    >>> out = filter_source(ds, res, add_id=False)
    >>> out.columns.tolist(), out["label"].tolist()
    (['sentence', 'label'], [1, 1])
    """
    keep = kept_mask(dataset, result)
    src = require_source(dataset)
    if src.kind == "hf" or src.format == "hf_disk":
        return hf_like_input(dataset, src, keep, add_id)
    return raw_rows(dataset, src, keep, add_id, reset_index=src.kind != "dataframe")


def write_filtered(
    dataset: Dataset,
    result: DetectorResult,
    path: str | os.PathLike[str],
    format: str | None = None,
    *,
    field_map: Mapping[str, str] | None = None,
    add_id: bool = True,
    inputs: Any = (),
) -> Path:
    """Write the rows ``result`` kept, as a drop-in replacement for the input (atomically).

    Parameters
    ----------
    dataset : Dataset
        The data the result scored.
    result : DetectorResult
    path : path
        Output file (``.jsonl``, ``.json``, ``.csv``, ``.tsv``, ``.parquet``) or, with
        ``format="hf"``, the folder of a Hugging Face ``datasets`` dataset
        (``save_to_disk``; needs the ``hf`` extra).
    format : {"jsonl", "json", "csv", "tsv", "parquet", "hf"}, optional
        For a path whose suffix does not name a format (``hf``: a folder); a
        suffix that names another format is an error, not overridden.
    field_map : mapping, optional
        ``{canonical name: source column}``, used only for a dataset without a recorded
        input (built with ``Dataset.from_frame``); loaded data writes its own columns.
    add_id : bool, default=True
        Add an ``id`` column when the input had none (see the module docstring).
    inputs : path or sequence of paths, optional
        The run's other inputs (evaluation data, predictions...). ``path`` must not be,
        hold or lie inside any of them nor the file or folder ``dataset`` was loaded
        from (always checked): inputs are never modified. An existing Hugging Face
        output folder is replaced only when ``save_to_disk`` wrote it.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ParameterError
        When ``path`` would touch an input, or replace a folder that is not a Hugging
        Face dataset folder.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> from spurious.results import DetectorResult
    >>> ds = make_nli_artifacts(n=30, random_state=0).dataset
    >>> res = DetectorResult("aflite", pd.DataFrame({"id": ds.ids,
    ...                      "is_aflite_issue": np.arange(30) < 10}), {})
    >>> out = write_filtered(ds, res, pathlib.Path(tempfile.mkdtemp()) / "kept.jsonl")
    >>> len(out.read_text().splitlines())
    20
    """
    return write_rows(
        dataset,
        kept_mask(dataset, result),
        path,
        format,
        field_map=field_map,
        add_id=add_id,
        inputs=inputs,
    )


def write_rows(
    dataset: Dataset,
    keep: np.ndarray,
    path: str | os.PathLike[str],
    format: str | None = None,
    *,
    field_map: Mapping[str, str] | None = None,
    add_id: bool = True,
    inputs: Any = (),
) -> Path:
    """Write the rows of ``dataset`` where ``keep`` is True, drop-in, atomically.

    The writer behind :func:`write_filtered` (same formats and guarantees), for a row
    selection that does not come from a detector's flags (e.g. the ``amplify`` splits).

    Parameters
    ----------
    dataset : Dataset
    keep : numpy.ndarray of bool
        One entry per row of ``dataset``.
    path, format, field_map, add_id, inputs
        As for :func:`write_filtered`.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> ds = make_nli_artifacts(n=30, random_state=0).dataset
    >>> out = write_rows(ds, np.arange(30) < 5, pathlib.Path(tempfile.mkdtemp()) / "a.jsonl")
    >>> len(out.read_text().splitlines())
    5
    """
    path = Path(path)
    fmt = _infer_format(path, format)
    keep = _check_keep(dataset, keep)
    src = dataset.source
    sources = [*dataset_inputs(dataset), *input_paths(inputs)]
    if fmt == "hf":
        check_hf_target(path, sources)
    else:
        check_not_an_input(path, sources, what="The 'path' argument")
    if src is None:
        write_canonical(dataset.subset(np.flatnonzero(keep)), path, fmt, field_map)
    elif fmt == "hf":
        save_hf(hf_like_input(dataset, src, keep, add_id), path, inputs=sources)
    elif src.kind == "hf" and fmt == "parquet":
        hf = hf_like_input(dataset, src, keep, add_id, whole_dict=False)
        atomic_write(path, lambda p: hf.to_parquet(str(p)))
    elif fmt == src.format == "jsonl" or (fmt == src.format == "json"):
        write_records(dataset, src, keep, add_id, path, fmt)
    elif fmt == src.format == "squad" or (fmt == "json" and src.format == "squad"):
        write_squad(dataset, src, keep, path)
    elif fmt == "parquet" and src.kind == "file" and src.format in _ARROW_FORMATS:
        write_arrow_as_parquet(dataset, src, keep, add_id, path)
    else:
        frame = raw_rows(dataset, src, keep, add_id, reset_index=True)
        if src.format in ("csv", "tsv") and fmt not in ("csv", "tsv"):
            frame = typed_labels(frame, src)
        write_frame(frame, path, fmt)
    logger.info("wrote %d of %d rows to %s (%s)", int(keep.sum()), len(dataset), path, fmt)
    return path


def dataset_inputs(dataset: Dataset) -> list[Path]:
    """The files ``dataset`` was read from: its source file or folder, or the cache files
    of a Hugging Face object (an output must never touch them)."""
    src = dataset.source
    if src is None:
        return []
    found = [Path(src.path)] if src.path else []
    if src.kind == "hf":
        try:
            cache = src.obj.cache_files
            groups = cache.values() if isinstance(cache, dict) else [cache]
            found += [Path(f["filename"]) for g in groups for f in g if f.get("filename")]
        except (AttributeError, TypeError, KeyError):
            # An in-memory Dataset (no cache files) or another datasets layout: the
            # source path above, when there is one, is still checked.
            pass
    return found


def rows_as_hf(
    dataset: Dataset,
    keep: np.ndarray,
    *,
    field_map: Mapping[str, str] | None = None,
    add_id: bool = True,
) -> Any:
    """The rows of ``dataset`` where ``keep`` is True as one ``datasets.Dataset``.

    The input's own columns and, when it carried them, its Hugging Face features
    (``ClassLabel`` included); a split of a ``DatasetDict`` input comes back alone. A
    dataset built in memory gives its canonical columns (renamed by ``field_map``).

    Examples
    --------
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> ds = make_nli_artifacts(n=30, random_state=0).dataset
    >>> rows_as_hf(ds, np.arange(30) < 5).num_rows
    5
    """
    keep = _check_keep(dataset, keep)
    src = dataset.source
    if src is None:
        return hf_from_frame(source_frame(dataset.subset(np.flatnonzero(keep)), field_map), None)
    return hf_like_input(dataset, src, keep, add_id, whole_dict=False)


def _check_keep(dataset: Dataset, keep: Any) -> np.ndarray:
    keep = np.asarray(keep)
    if keep.dtype != bool or keep.shape != (len(dataset),):
        raise ParameterError(
            f"The 'keep' argument must be a boolean mask of {len(dataset)} rows (dataset "
            f"{dataset.name!r}); got dtype {keep.dtype} and shape {keep.shape}."
        )
    return keep


def output_format(path: str | Path, fmt: str | None = None) -> str:
    """The format :func:`write_filtered` writes ``path`` in (``fmt``, else its suffix).

    Raises the same error as :func:`write_filtered` for an unknown suffix, or a
    ``fmt`` that its suffix contradicts, so callers can check an output location before
    any work.

    Examples
    --------
    >>> output_format("kept.tsv"), output_format("kept", "csv")
    ('tsv', 'csv')
    >>> output_format("kept.jsonl", "csv")
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: The 'format' parameter (--filtered-format) 'csv' contradicts ...
    """
    return _infer_format(Path(path), fmt)
