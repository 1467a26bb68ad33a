"""Filtered datasets: keep the rows a detector did not flag (AFLite's reduced set S).

:func:`filter_dataset` returns the kept rows as a :class:`~spurious.data.Dataset`;
:func:`write_filtered` writes them, atomically, as JSONL, CSV, TSV, Parquet or a
Hugging Face dataset folder. Rows keep every column the source had (a Dataset frame
keeps extra columns) plus ``id`` (content-hash ids when the source had none), without the
derived ``label_id``; ``field_map`` renames canonical fields back to the source's names.
TSV is written unquoted, as NLP corpora are and as :func:`spurious.load_dataset` reads it.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from spurious.data.dataset import Dataset
from spurious.exceptions import DataFormatError, DetectorError, ParameterError
from spurious.results import DetectorResult
from spurious.utils.io import atomic_write

logger = logging.getLogger(__name__)

__all__ = ["FILTER_FORMATS", "filter_dataset", "write_filtered"]

#: Output formats of :func:`write_filtered`.
FILTER_FORMATS = ("jsonl", "csv", "tsv", "parquet", "hf")
_SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "tsv",
             ".parquet": "parquet", ".pq": "parquet"}  # fmt: skip
# Columns the library adds to a Dataset frame; not part of the user's data.
_DERIVED = ("label_id",)


def _flag_column(result: DetectorResult) -> str:
    col = f"is_{result.detector}_issue"
    if col not in result.scores.columns:
        raise DetectorError(
            f"The {result.detector!r} result has no {col!r} column to filter on "
            f"(columns: {list(result.scores.columns)[:10]})."
        )
    return col


def kept_mask(dataset: Dataset, result: DetectorResult) -> np.ndarray:
    """Boolean mask over ``dataset`` rows: True where ``result`` did not flag the row.

    Rows are matched by id; every row of ``dataset`` must be scored by ``result``.
    """
    if result.status != "ok":
        raise DetectorError(
            f"Cannot filter with a failed {result.detector!r} result: {result.error}"
        )
    col = _flag_column(result)
    fps = set((result.provenance.fingerprints or {}).values())
    if fps and dataset.fingerprint not in fps:
        logger.warning(
            "dataset %r (fingerprint %s) is not one the %s result was computed on (%s); "
            "matching rows by id",
            dataset.name,
            dataset.fingerprint,
            result.detector,
            sorted(fps),
        )
    flags = pd.Series(
        result.scores[col].to_numpy(dtype=bool), index=result.scores["id"].astype(str)
    )
    ids = pd.Index(dataset.ids.astype(str))
    missing = ids.difference(flags.index)
    if len(missing):
        raise DetectorError(
            f"{len(missing)} of {len(ids)} example id(s) of dataset {dataset.name!r} are not in "
            f"the {result.detector!r} result, e.g. {list(missing[:5])}; filter the dataset the "
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
    return dataset.subset(np.flatnonzero(keep), f"{dataset.name}[{result.detector}]")


def _infer_format(path: Path, fmt: str | None) -> str:
    if fmt is not None:
        if fmt not in FILTER_FORMATS:
            raise ParameterError(
                f"The 'format' parameter must be one of {list(FILTER_FORMATS)}. Got {fmt!r} instead."
            )
        return fmt
    suffix = path.suffix.lower()
    if suffix in _SUFFIXES:
        return _SUFFIXES[suffix]
    raise ParameterError(
        f"Cannot tell the output format of {str(path)!r} from its suffix {path.suffix!r}; "
        f"pass format= one of {list(FILTER_FORMATS)} ('hf' writes a Hugging Face dataset folder)."
    )


def _source_frame(dataset: Dataset, field_map: Mapping[str, str] | None) -> pd.DataFrame:
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


def write_filtered(
    dataset: Dataset,
    result: DetectorResult,
    path: str | os.PathLike[str],
    format: str | None = None,
    *,
    field_map: Mapping[str, str] | None = None,
) -> Path:
    """Write the rows ``result`` kept, in the format of ``path`` (atomically).

    Parameters
    ----------
    dataset : Dataset
        The data the result scored.
    result : DetectorResult
    path : path
        Output file (``.jsonl``, ``.csv``, ``.tsv``, ``.parquet``) or, with
        ``format="hf"``, the folder of a Hugging Face ``datasets`` dataset
        (``save_to_disk``; needs the ``hf`` extra).
    format : {"jsonl", "csv", "tsv", "parquet", "hf"}, optional
        Overrides the suffix.
    field_map : mapping, optional
        ``{canonical name: source column}`` as given to ``load_dataset``, to write the
        source's column names back.

    Returns
    -------
    pathlib.Path

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
    path = Path(path)
    fmt = _infer_format(path, format)
    kept = filter_dataset(dataset, result)
    frame = _source_frame(kept, field_map)
    if fmt == "jsonl":
        atomic_write(
            path,
            lambda p: frame.to_json(p, orient="records", lines=True, force_ascii=False),
        )
    elif fmt == "csv":
        atomic_write(path, lambda p: frame.to_csv(p, index=False))
    elif fmt == "tsv":
        text = _tsv_text(frame)
        atomic_write(path, lambda p: p.write_text(text, encoding="utf-8"))
    elif fmt == "parquet":
        atomic_write(path, lambda p: frame.to_parquet(p, index=False))
    else:
        _save_hf(frame, path)
    logger.info("wrote %d of %d rows to %s (%s)", len(kept), len(dataset), path, fmt)
    return path


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


def _save_hf(frame: pd.DataFrame, path: Path) -> None:
    from spurious.exceptions import missing_dependency

    try:
        import datasets
    except ImportError:
        raise missing_dependency("datasets", "hf", "Writing a Hugging Face dataset") from None
    hf = datasets.Dataset.from_pandas(frame, preserve_index=False)
    # save_to_disk writes a folder: build it beside the target, then swap it in.
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        hf.save_to_disk(str(tmp / "data"))
        old = None
        if path.exists():
            old = path.with_name(f".{path.name}.old")
            os.replace(path, old)
        os.replace(tmp / "data", path)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
