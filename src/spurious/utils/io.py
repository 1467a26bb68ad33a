"""Atomic writes: a reader never sees a half-written file, an interrupted write leaves none.

Every file the package writes goes through :func:`atomic_write` (temp file in the same
directory, fsync, ``os.replace``), so an interruption cannot corrupt a previous result.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: Read once at import: os.umask can only be read by setting it, which is not thread-safe.
_UMASK = _current_umask()


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success rename it over ``path``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> with atomic_path(d / "a.txt") as tmp:
    ...     _ = tmp.write_text("hello")
    >>> (d / "a.txt").read_text()
    'hello'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        # mkstemp creates 0600 files; give outputs the permissions a plain open() would.
        os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def atomic_write(path: str | os.PathLike[str], writer: Callable[[Path], Any]) -> Path:
    """Call ``writer(tmp_path)`` and atomically move the result to ``path``."""
    with atomic_path(path) as tmp:
        writer(tmp)
    return Path(path)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return atomic_write(path, lambda p: p.write_text(text, encoding="utf-8"))


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically."""
    return atomic_write(path, lambda p: p.write_bytes(data))


def to_jsonable(obj: Any) -> Any:
    """Convert numpy scalars/arrays, paths and tuples into plain JSON values.

    Non-finite floats become ``None`` because JSON has no NaN.
    """
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating | float):
        value = float(obj)
        return value if math.isfinite(value) else None
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    return obj


def atomic_write_json(path: str | os.PathLike[str], obj: Any) -> Path:
    """Write ``obj`` as indented, key-sorted JSON atomically."""
    text = json.dumps(to_jsonable(obj), indent=2, sort_keys=True, ensure_ascii=False)
    return atomic_write_text(path, text + "\n")


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read a JSON file."""
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def check_output_file(
    path: str | os.PathLike[str],
    inputs: Any = (),
    *,
    overwrite: bool = False,
    what: str = "output",
) -> Path:
    """Refuse an output that would replace an input, or an existing file without ``overwrite``.

    Paths are compared after resolving links, so a symlink to an input is refused too.
    Call it before any work, so a bad output location costs nothing.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "in.jsonl").write_text("{}")
    >>> check_output_file(d / "in.jsonl", [d / "in.jsonl"], what="--write-filtered")
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: --write-filtered ... is an input of this run; inputs are never modified. Choose another path.
    """
    from spurious.exceptions import ParameterError

    path = Path(path)
    check_not_an_input(path, inputs, what=what)
    if path.exists() and not overwrite:
        raise ParameterError(f"{what} {str(path)!r} exists; pass --force to replace it.")
    if path.parent.exists() and not os.access(path.parent, os.W_OK):
        raise ParameterError(f"{what} {str(path)!r}: its folder is not writable.")
    return path


def input_paths(inputs: Any) -> list[Path]:
    """The paths among ``inputs`` (``None`` and non-path values skipped, lists flattened)."""
    found: list[Path] = []
    if inputs is None:
        return found
    if isinstance(inputs, str | os.PathLike):
        return [Path(inputs)]
    if isinstance(inputs, dict):
        inputs = list(inputs.values())
    if not isinstance(inputs, list | tuple | set | frozenset):
        return found  # a DataFrame, a datasets object...: not a path
    for item in inputs:
        found.extend(input_paths(item))
    return found


def _same(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def check_not_an_input(out: str | os.PathLike[str], inputs: Any, *, what: str = "output") -> Path:
    """Refuse an output location that would touch an input of the run.

    ``out`` is refused when it is the same file as an input (``os.path.samefile`` when
    both exist, else equal resolved paths, so links are followed), when it is a folder
    that holds an input (an ancestor), or when it lies inside a folder input (a
    descendant). ``inputs`` are paths (``None`` and non-path values are skipped; lists
    and mappings are flattened); inputs that do not exist cannot be lost and are skipped.
    Writers call it themselves, so the Python API is protected as well as the CLI.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "in.jsonl").write_text("{}")
    >>> check_not_an_input(d, [d / "in.jsonl"], what="--out")
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: --out ... is a folder that holds ... an input of this run; inputs are never modified. Choose another path.
    """
    from spurious.exceptions import ParameterError

    out = Path(out)
    target = out.resolve()
    for src in input_paths(inputs):
        if not (src.exists() or src.is_symlink()):
            continue
        resolved = src.resolve()
        if _same(out, src):
            raise ParameterError(
                f"{what} {str(out)!r} is an input of this run; inputs are never modified. "
                "Choose another path."
            )
        if target in resolved.parents:
            raise ParameterError(
                f"{what} {str(out)!r} is a folder that holds {str(src)!r}, an input of this "
                "run; inputs are never modified. Choose another path."
            )
        if resolved in target.parents:
            raise ParameterError(
                f"{what} {str(out)!r} lies inside the folder {str(src)!r}, an input of this "
                "run; inputs are never modified. Choose another path."
            )
    return out
