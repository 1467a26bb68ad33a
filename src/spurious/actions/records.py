"""Raw JSON / JSONL records of an input file, read and written in the file's own layout.

Filtered and resampled outputs are written from the *raw records*, not from the loaded
DataFrame, so keys absent from a row stay absent and values keep their JSON types: the
output is a drop-in replacement for the input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spurious.utils.io import atomic_write_text, read_input_text, text_lines

__all__ = ["read_json_records", "write_json_records"]


def read_json_records(src: str | Path, fmt: str) -> tuple[list[dict[str, Any]], Any]:
    """``(records, wrapper)`` of a JSONL file or a JSON array / ``{"data": [...]}`` file.

    ``wrapper`` is the enclosing object when the records sit under ``"data"``, else None.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x.json"
    >>> _ = p.write_text('{"version": 1, "data": [{"a": 1}]}')
    >>> read_json_records(p, "json")
    ([{'a': 1}], {'version': 1, 'data': [{'a': 1}]})
    """
    text = read_input_text(src, what="Data file")
    if fmt == "jsonl":
        # Lines end at \n only, as the loader reads them: record i here is row i there.
        return [json.loads(line) for _, line in text_lines(text) if line.strip()], None
    obj = json.loads(text)
    if isinstance(obj, dict) and isinstance(obj.get("data"), list):
        return obj["data"], obj
    return obj, None


def write_json_records(path: str | Path, records: list[Any], fmt: str, wrapper: Any) -> Path:
    """Write ``records`` atomically as JSONL, or as JSON inside ``wrapper`` when given.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x.jsonl"
    >>> write_json_records(p, [{"a": 1}, {"a": 2}], "jsonl", None).read_text()
    '{"a": 1}\\n{"a": 2}\\n'
    """
    if fmt == "jsonl":
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    else:
        payload = {**wrapper, "data": records} if wrapper is not None else records
        text = json.dumps(payload, ensure_ascii=False) + "\n"
    return atomic_write_text(path, text)
