"""Read raw rows from files (JSONL, JSON, CSV/TSV, Parquet, SQuAD JSON) into DataFrames.

Readers only parse; mapping to canonical fields and validation happen in
:mod:`spurious.data.loaders`. Errors name the file and the row (1-based line number).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pandas as pd

from spurious.exceptions import DataFormatError, EmptyDatasetError

FORMATS = ("jsonl", "json", "csv", "tsv", "parquet", "squad")


def infer_format(path: Path) -> str:
    """Guess the format from the file suffix (``.jsonl``, ``.tsv``...)."""
    suffix = path.suffix.lower().lstrip(".")
    aliases = {"ndjson": "jsonl", "txt": "tsv", "pq": "parquet"}
    fmt = aliases.get(suffix, suffix)
    if fmt not in FORMATS:
        raise DataFormatError(
            f"Cannot infer the format of {str(path)!r} from its suffix {path.suffix!r}; "
            f"pass format= one of {list(FORMATS)}."
        )
    if fmt == "json" and _looks_like_squad(path):
        return "squad"
    return fmt


def _looks_like_squad(path: Path) -> bool:
    with open(path, "rb") as fh:
        head = fh.read(4096)
    return b'"data"' in head and (b'"paragraphs"' in head or b'"version"' in head)


def _read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DataFormatError(f"Data file {str(path)!r} does not exist.") from None
    except IsADirectoryError:
        raise DataFormatError(f"Data path {str(path)!r} is a directory, not a file.") from None
    except OSError as e:
        raise DataFormatError(f"Cannot read data file {str(path)!r}: {e.strerror}.") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise DataFormatError(
            f"{str(path)!r} is not valid UTF-8: invalid byte 0x{raw[e.start]:02x} on line {line} "
            f"(byte offset {e.start}). Re-encode the file as UTF-8."
        ) from None


def read_jsonl(path: Path) -> tuple[pd.DataFrame, list[int]]:
    """Read one JSON object per line; blank lines are skipped."""
    records, rows = [], []
    for lineno, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataFormatError(
                f"{str(path)!r}, line {lineno}: not valid JSON ({e.msg} at column {e.colno})."
            ) from None
        if not isinstance(obj, dict):
            raise DataFormatError(
                f"{str(path)!r}, line {lineno}: expected a JSON object per line, "
                f"got {type(obj).__name__}."
            )
        records.append(obj)
        rows.append(lineno)
    _nonempty(records, path)
    return pd.DataFrame.from_records(records), rows


def read_json(path: Path) -> tuple[pd.DataFrame, list[int]]:
    """Read a JSON array of objects (or ``{"data": [...]}``)."""
    try:
        obj = json.loads(_read_text(path))
    except json.JSONDecodeError as e:
        raise DataFormatError(
            f"{str(path)!r}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno}). "
            "For one object per line use a .jsonl file or format='jsonl'."
        ) from None
    if isinstance(obj, dict) and isinstance(obj.get("data"), list):
        obj = obj["data"]
    if not isinstance(obj, list) or not all(isinstance(r, dict) for r in obj):
        raise DataFormatError(
            f"{str(path)!r}: expected a JSON array of objects, got {type(obj).__name__}."
        )
    _nonempty(obj, path)
    return pd.DataFrame.from_records(obj), list(range(1, len(obj) + 1))


def read_delimited(path: Path, sep: str) -> tuple[pd.DataFrame, list[int]]:
    """Read CSV (``sep=','``, standard quoting) or TSV (``sep='\\t'``, no quoting).

    TSV files in NLP (GLUE, SNLI, CAD) do not quote fields and contain bare ``"``
    characters, so TSV is read with quoting disabled.
    """
    text = _read_text(path)
    quoting = csv.QUOTE_NONE if sep == "\t" else csv.QUOTE_MINIMAL
    try:
        df = pd.read_csv(
            io.StringIO(text),
            sep=sep,
            quoting=quoting,
            dtype=str,
            keep_default_na=False,
            na_values=[],
            on_bad_lines="error",
            engine="python" if sep == "\t" else "c",
        )
    except pd.errors.EmptyDataError:
        raise EmptyDatasetError(f"{str(path)!r} is empty.") from None
    except (pd.errors.ParserError, csv.Error) as e:
        raise DataFormatError(f"{str(path)!r}: cannot parse as {_sepname(sep)}: {e}") from None
    if df.shape[1] == 1 and sep == "\t" and "," in df.columns[0]:
        raise DataFormatError(
            f"{str(path)!r}: found a single column {df.columns[0]!r} when reading as TSV; "
            "the file looks comma-separated, pass format='csv'."
        )
    _nonempty(df, path)
    # Header is line 1, so data row i (0-based) is on line i + 2 (no multi-line fields in TSV).
    return df, list(range(2, len(df) + 2))


def _sepname(sep: str) -> str:
    return "TSV" if sep == "\t" else "CSV"


def read_parquet(path: Path) -> tuple[pd.DataFrame, list[int]]:
    """Read a Parquet file with pyarrow."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not path.exists():
        raise DataFormatError(f"Data file {str(path)!r} does not exist.")
    try:
        df = pq.read_table(path).to_pandas()
    except (pa.ArrowInvalid, OSError) as e:
        raise DataFormatError(f"{str(path)!r}: not a readable Parquet file ({e}).") from None
    _nonempty(df, path)
    return df, list(range(1, len(df) + 1))


def read_squad(path: Path) -> tuple[pd.DataFrame, list[int]]:
    """Flatten the official SQuAD JSON into one row per question.

    Columns: ``id``, ``question``, ``context``, ``answers`` (list of answer texts, one
    per annotator), ``answer_starts``, ``title``, ``group`` (title + paragraph index, so
    questions on the same paragraph are siblings).
    """
    try:
        obj = json.loads(_read_text(path))
        articles = obj["data"]
        records = []
        for article in articles:
            for p_idx, para in enumerate(article["paragraphs"]):
                for qa in para["qas"]:
                    answers = qa.get("answers", [])
                    records.append(
                        {
                            "id": str(qa["id"]),
                            "question": qa["question"],
                            "context": para["context"],
                            "answers": [a["text"] for a in answers],
                            "answer_starts": [int(a["answer_start"]) for a in answers],
                            "title": article.get("title", ""),
                            "group": f"{article.get('title', '')}#{p_idx}",
                        }
                    )
    except json.JSONDecodeError as e:
        raise DataFormatError(
            f"{str(path)!r}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})."
        ) from None
    except (KeyError, TypeError) as e:
        raise DataFormatError(
            f"{str(path)!r}: not in SQuAD format (data -> paragraphs -> qas); missing {e}."
        ) from None
    _nonempty(records, path)
    return pd.DataFrame.from_records(records), list(range(1, len(records) + 1))


def _nonempty(records: object, path: Path) -> None:
    if len(records) == 0:  # type: ignore[arg-type]
        raise EmptyDatasetError(f"{str(path)!r} contains no rows.")


READERS = {
    "jsonl": read_jsonl,
    "json": read_json,
    "csv": lambda p: read_delimited(p, ","),
    "tsv": lambda p: read_delimited(p, "\t"),
    "parquet": read_parquet,
    "squad": read_squad,
}
