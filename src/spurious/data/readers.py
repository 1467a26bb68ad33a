"""Read raw rows from files into DataFrames: JSONL, JSON, CSV/TSV, Parquet, SQuAD JSON,
Arrow, and Hugging Face ``save_to_disk`` folders.

Readers only parse; mapping to canonical fields and validation happen in
:mod:`spurious.data.loaders`. Errors name the file and the row (1-based line number).

Files written by Hugging Face ``datasets`` (``to_parquet``, ``save_to_disk``, its
``.arrow`` cache files) store the dataset's features, ``ClassLabel`` names included, in
the Arrow schema metadata (key ``huggingface``). Readers put them, in their JSON form,
in ``frame.attrs["hf_features"]`` so the loader maps integer labels by *those* names
(:func:`hf_class_labels`), never by a default order.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from spurious.exceptions import DataFormatError, EmptyDatasetError, ParameterError
from spurious.utils.io import check_input_file, open_input, read_input_text, text_lines
from spurious.utils.registry import Registry

FORMATS = ("jsonl", "json", "csv", "tsv", "parquet", "squad", "arrow")
#: Files that mark a folder written by ``datasets``' ``save_to_disk``.
HF_DATASET_FILE = "state.json"
HF_DATASET_DICT_FILE = "dataset_dict.json"


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
    if not path.exists():
        return False  # the reader says "does not exist"
    with open_input(path, what=DATA_WHAT) as fh:
        head = fh.read(4096)
    return b'"data"' in head and (b'"paragraphs"' in head or b'"version"' in head)


#: How reader messages name the file they read (callers check first with their own flag).
DATA_WHAT = "Data file"


def check_regular_file(path: Path) -> None:
    """Refuse devices, FIFOs, sockets and files over the size limit; folders pass.

    Reading a device may never end (``/dev/zero``) and opening a FIFO blocks until a
    writer comes; see :func:`spurious.utils.io.check_input_file`. A missing path passes
    (the reader names it, or it may be a Hub name).
    """
    if path.exists():
        check_input_file(path, what="Data path", allow_dir=True)


def parse_json(text: str, path: Path, where: str = "") -> object:
    """``json.loads`` with one readable error for bad syntax and for absurd nesting."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise DataFormatError(
            f"{str(path)!r}{where}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})."
        ) from None
    except RecursionError:
        raise DataFormatError(
            f"{str(path)!r}{where}: JSON nested too deeply to be a dataset record."
        ) from None


def _read_text(path: Path) -> str:
    try:
        return read_input_text(path, what=DATA_WHAT)
    except OSError as e:  # unreadable (permissions...) after the checks
        raise DataFormatError(f"Cannot read data file {str(path)!r}: {e.strerror}.") from None


def read_jsonl(path: Path) -> tuple[pd.DataFrame, list[int]]:
    """Read one JSON object per line; blank lines are skipped.

    Lines end at ``\\n`` only (:func:`~spurious.utils.io.text_lines`): U+2028 or U+0085,
    which JSON allows raw inside a string, do not cut a record.
    """
    records, rows = [], []
    for lineno, line in text_lines(_read_text(path)):
        if not line.strip():
            continue
        obj = parse_json(line, path, f", line {lineno}")
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
    text = _read_text(path)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise DataFormatError(
            f"{str(path)!r}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno}). "
            "For one object per line use a .jsonl file or format='jsonl'."
        ) from None
    except RecursionError:
        obj = parse_json(text, path)  # raises the readable nesting error
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
    """Read a Parquet file (or folder of Parquet files) with pyarrow.

    The Hugging Face features stored by ``datasets``' ``to_parquet`` are kept in
    ``frame.attrs["hf_features"]`` (see the module docstring).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    _check_table_input(path)
    try:
        table = pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as e:
        raise DataFormatError(f"{str(path)!r}: not a readable Parquet file ({e}).") from None
    return _table_frame(table, path)


def read_arrow(path: Path) -> tuple[pd.DataFrame, list[int]]:
    """Read an Arrow IPC file: the stream format ``datasets`` writes, or the file format.

    The Hugging Face features in the schema metadata are kept as for Parquet.
    """
    return _table_frame(read_arrow_table(path), path)


def read_arrow_table(path: Path):  # -> pyarrow.Table
    """The :class:`pyarrow.Table` of an Arrow IPC stream or file (``.arrow``)."""
    import pyarrow as pa

    check_input_file(path, what=DATA_WHAT)
    errors = []
    for opener in (pa.ipc.open_stream, pa.ipc.open_file):
        try:
            with pa.memory_map(str(path)) as source:
                return opener(source).read_all()
        except (pa.ArrowInvalid, OSError) as e:
            errors.append(str(e))
    raise DataFormatError(f"{str(path)!r}: not a readable Arrow IPC stream or file ({errors[-1]}).")


def read_hf_disk(path: Path, split: str | None = None) -> tuple[pd.DataFrame, list[int]]:
    """Read a folder written by ``datasets``' ``save_to_disk`` (a Dataset or a DatasetDict).

    Parameters
    ----------
    path : Path
        The folder: a Dataset folder holds ``state.json``, ``dataset_info.json`` and
        ``data-*.arrow`` shards; a DatasetDict folder holds ``dataset_dict.json`` and
        one Dataset folder per split.
    split : str, optional
        The split to read from a DatasetDict folder (required there; refused for a
        Dataset folder, which has a single split).

    Returns
    -------
    frame, rows
        As the other readers; ``frame.attrs["hf_features"]`` holds the features.
    """
    import pyarrow as pa

    folder = hf_disk_split_folder(path, split)
    tables = [read_arrow_table(s) for s in hf_disk_shards(folder)]
    table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    frame, rows = _table_frame(table, folder)
    if frame.attrs.get("hf_features") is None and (folder / "dataset_info.json").exists():
        info = _read_json_file(folder / "dataset_info.json")
        frame.attrs["hf_features"] = info.get("features") if isinstance(info, dict) else None
    return frame, rows


def hf_disk_shards(folder: Path) -> list[Path]:
    """The ``.arrow`` files a Dataset folder's ``state.json`` names, confined to the folder.

    ``state.json`` is data from the user's disk: a name with ``..``, an absolute path or a
    link that leads out of the folder is refused rather than read.

    Examples
    --------
    >>> import json, tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "state.json").write_text(json.dumps({"_data_files": [{"filename": "../x"}]}))
    >>> hf_disk_shards(d)
    Traceback (most recent call last):
    ...
    spurious.exceptions.DataFormatError: '...state.json' names the data file '../x', which lies outside the dataset folder ...; a save_to_disk folder only names its own files.
    """
    state_path = folder / HF_DATASET_FILE
    state = _read_json_file(state_path)
    try:
        names = [f["filename"] for f in state["_data_files"]]  # type: ignore[index]
        if not names or not all(isinstance(n, str) and n for n in names):
            raise TypeError
    except (KeyError, TypeError):
        raise DataFormatError(
            f"{str(state_path)!r}: no '_data_files' list of file names; not a folder written "
            "by datasets' save_to_disk."
        ) from None
    root = folder.resolve()
    shards = []
    for name in names:
        target = (folder / name).resolve()
        if root not in target.parents:
            raise DataFormatError(
                f"{str(state_path)!r} names the data file {name!r}, which lies outside the "
                f"dataset folder {str(folder)!r}; a save_to_disk folder only names its own files."
            )
        shards.append(folder / name)
    return shards


def is_hf_disk_folder(path: Path) -> bool:
    """True for a folder written by ``datasets``' ``save_to_disk`` (Dataset or DatasetDict)."""
    return path.is_dir() and (
        (path / HF_DATASET_FILE).exists() or (path / HF_DATASET_DICT_FILE).exists()
    )


def hf_disk_splits(path: Path) -> list[str] | None:
    """The splits of a DatasetDict folder, or ``None`` for a Dataset folder."""
    if not (path / HF_DATASET_DICT_FILE).exists():
        return None
    meta = _read_json_file(path / HF_DATASET_DICT_FILE)
    splits = meta.get("splits") if isinstance(meta, dict) else None
    if not isinstance(splits, list):
        raise DataFormatError(f"{str(path / HF_DATASET_DICT_FILE)!r}: no 'splits' list.")
    return [str(s) for s in splits]


def hf_disk_split_folder(path: Path, split: str | None) -> Path:
    """The Dataset folder to read: ``path`` itself, or its ``split`` sub-folder."""
    splits = hf_disk_splits(path)
    if splits is None:
        if split is not None:
            raise ParameterError(
                f"The 'split' parameter applies to a DatasetDict folder; {str(path)!r} holds a "
                f"single Dataset. Got split={split!r}; leave it out."
            )
        return path
    if split is None:
        raise ParameterError(
            f"The 'split' parameter is required for the DatasetDict folder {str(path)!r}; "
            f"choose one of {splits}."
        )
    if split not in splits:
        raise ParameterError(
            f"The 'split' parameter must be one of {splits} (the splits of {str(path)!r}). "
            f"Got {split!r} instead."
        )
    folder = path / split
    if path.resolve() not in folder.resolve().parents:  # a crafted dataset_dict.json
        raise DataFormatError(
            f"{str(path / HF_DATASET_DICT_FILE)!r} names the split {split!r}, whose folder lies "
            f"outside {str(path)!r}; a save_to_disk folder only names its own sub-folders."
        )
    return folder


def hf_features_from_schema(schema) -> dict | None:
    """The Hugging Face features (JSON form) stored in an Arrow schema, or ``None``."""
    raw = (schema.metadata or {}).get(b"huggingface")
    if raw is None:
        return None
    try:
        features = json.loads(raw)["info"]["features"]
    except (ValueError, KeyError, TypeError):
        return None
    return features if isinstance(features, dict) else None


def hf_class_labels(features: dict | None) -> dict[str, list[str]]:
    """``{column: ClassLabel names}`` from Hugging Face features in their JSON form.

    A list of class labels (``Sequence(ClassLabel)``, e.g. annotator labels) counts too.

    Examples
    --------
    >>> hf_class_labels({"label": {"names": ["neg", "pos"], "_type": "ClassLabel"},
    ...                  "text": {"dtype": "string", "_type": "Value"}})
    {'label': ['neg', 'pos']}
    """
    out: dict[str, list[str]] = {}
    for col, feat in (features or {}).items():
        names = _class_names(feat)
        if names:
            out[str(col)] = names
    return out


def _class_names(feat: object) -> list[str] | None:
    if isinstance(feat, list) and len(feat) == 1:  # the JSON form of a list feature
        return _class_names(feat[0])
    if not isinstance(feat, dict):
        return None
    if feat.get("_type") == "ClassLabel":
        names = feat.get("names")
        return [str(n) for n in names] if isinstance(names, list) and names else None
    if feat.get("_type") in ("Sequence", "List", "LargeList"):
        return _class_names(feat.get("feature"))
    return None


def _check_table_input(path: Path) -> None:
    """A Parquet file, or every file of a Parquet folder, is a regular file within limits."""
    check_input_file(path, what=DATA_WHAT, allow_dir=True)
    if path.is_dir():
        for part in sorted(path.rglob("*")):
            if not part.is_dir():
                check_input_file(part, what=DATA_WHAT)


def _table_frame(table, path: Path) -> tuple[pd.DataFrame, list[int]]:
    df = table.to_pandas()
    df.attrs["hf_features"] = hf_features_from_schema(table.schema)
    _nonempty(df, path)
    return df, list(range(1, len(df) + 1))


def _read_json_file(path: Path) -> object:
    return parse_json(_read_text(path), path)


def read_squad(path: Path) -> tuple[pd.DataFrame, list[int]]:
    """Flatten the official SQuAD JSON into one row per question.

    Columns: ``id``, ``question``, ``context``, ``answers`` (list of answer texts, one
    per annotator), ``answer_starts``, ``title``, ``group`` (title + paragraph index, so
    questions on the same paragraph are siblings).
    """
    try:
        obj = parse_json(_read_text(path), path)
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
                            "answer_starts": [_answer_start(a, qa, path) for a in answers],
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


def _answer_start(answer: dict, qa: dict, path: Path) -> int:
    """An answer's ``answer_start``: a character offset (an int, or digits as text)."""
    value = answer["answer_start"]
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if (
        isinstance(value, bool)
        or not isinstance(value, int | str)
        or (isinstance(value, str) and not value.strip().isdigit())
    ):
        raise DataFormatError(
            f"{str(path)!r}, question {str(qa.get('id'))!r}: answer_start must be a "
            f"character offset into the context (an integer); got {value!r}."
        )
    return int(value)


def _nonempty(records: object, path: Path) -> None:
    if len(records) == 0:  # type: ignore[arg-type]
        raise EmptyDatasetError(f"{str(path)!r} contains no rows.")


def read_csv(path: Path) -> tuple[pd.DataFrame, list[int]]:
    """Read a comma-separated file (standard quoting); see :func:`read_delimited`."""
    return read_delimited(path, ",")


def read_tsv(path: Path) -> tuple[pd.DataFrame, list[int]]:
    """Read a tab-separated file (no quoting); see :func:`read_delimited`."""
    return read_delimited(path, "\t")


#: format name -> reader ``path -> (frame, line numbers)``.
READERS: Registry[Callable[[Path], tuple[pd.DataFrame, list[int]]]] = Registry("format")
for _fmt, _reader in (
    ("jsonl", read_jsonl),
    ("json", read_json),
    ("csv", read_csv),
    ("tsv", read_tsv),
    ("parquet", read_parquet),
    ("squad", read_squad),
    ("arrow", read_arrow),
):
    READERS.register(_fmt, _reader)
del _fmt, _reader


def read_file(path: Path, format: str | None = None) -> tuple[pd.DataFrame, list[int]]:
    """Read a data file with the reader of ``format`` (default: inferred from the file).

    Returns the frame and, per row, its line/record number in the file.

    Examples
    --------
    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "x.jsonl"
    >>> _ = p.write_text('{"a": 1}\\n')
    >>> read_file(p)[0]["a"].tolist()
    [1]
    """
    fmt = format or infer_format(path)
    if fmt not in READERS:
        raise ParameterError(
            f"The 'format' parameter must be one of {sorted(READERS)}. Got {fmt!r} instead."
        )
    return READERS[fmt](path)
