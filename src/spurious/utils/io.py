"""Atomic writes, and bounded reads of the files a user hands in.

Every file the package writes goes through :func:`atomic_write` (temp file in the same
directory, fsync, ``os.replace``), so an interruption cannot corrupt a previous result.

Every input file (data, predictions, features, ids, attributes, annotations, configs) is
checked by :func:`check_input_file` or read through :func:`open_input`: a regular file
only (a FIFO would block forever, ``/dev/zero`` never ends) of at most a bounded size
(:data:`INPUT_LIMITS`, raised with ``$SPURIOUS_MAX_INPUT_BYTES``).
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import math
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

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
    with output_errors(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        with output_errors(path):  # the caller's writer runs at the yield
            yield tmp
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            # mkstemp creates 0600 files; give outputs the permissions a plain open() would.
            os.chmod(tmp, 0o666 & ~_UMASK)
            os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


#: What a write failure with one of these ``errno`` values means for the person, and what
#: to do: the location cannot take the output (not a bug of the package).
_OUTPUT_ERRNOS = {
    errno.ENOSPC: "no space left on the device; free some space or write elsewhere",
    errno.EDQUOT: "the disk quota is exhausted; free some space or write elsewhere",
    errno.EFBIG: "the file would be larger than this file system allows; write elsewhere",
    errno.EROFS: "the file system is read-only; write elsewhere",
    errno.EACCES: "permission denied; choose a folder you may write to",
    errno.EPERM: "operation not permitted; choose a folder you may write to",
    errno.ENOTDIR: "a parent of it is a file, not a folder; choose another path",
}


@contextlib.contextmanager
def output_errors(path: str | os.PathLike[str]) -> Iterator[None]:
    """Turn a write that fails for the location (disk full, read-only, permission) into one
    :class:`~spurious.exceptions.OutputError` naming ``path``; other errors pass unchanged.

    Examples
    --------
    >>> with output_errors("/mnt/ro/run/metrics.json"):
    ...     raise OSError(errno.EROFS, "Read-only file system")
    Traceback (most recent call last):
    ...
    spurious.exceptions.OutputError: Cannot write '/mnt/ro/run/metrics.json': the file system is read-only; write elsewhere [Errno 30].
    """
    from spurious.exceptions import OutputError

    try:
        yield
    except OutputError:
        raise
    except OSError as e:
        advice = _OUTPUT_ERRNOS.get(e.errno)  # type: ignore[arg-type]
        if advice is None:
            raise
        raise OutputError(
            f"Cannot write {os.fspath(path)!r}: {advice} [Errno {e.errno}]."
        ) from None


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


# -- reading inputs: regular files of a bounded size ----------------------------------------

#: Environment variable that replaces every default of :data:`INPUT_LIMITS` (bytes, or a
#: number with a K, M, G or T suffix, powers of 1024: ``20G``).
MAX_INPUT_ENV = "SPURIOUS_MAX_INPUT_BYTES"
_GIB = 1 << 30
#: Largest input file read by default, per kind of input, in bytes. Text formats are read
#: whole into memory (and take several times their size once parsed), so a file larger
#: than these is far more likely a wrong path than a dataset; ``.npy`` features are
#: memory-mapped, so they may be much larger.
INPUT_LIMITS: dict[str, int] = {
    "data": 4 * _GIB,
    "features": 64 * _GIB,
    "predictions": 1 * _GIB,
    "attributes": 1 * _GIB,
    "annotations": 1 * _GIB,
    "ids": 1 * _GIB,
    "config": 16 << 20,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


def max_input_bytes(kind: str = "data") -> int:
    """The size limit for an input of ``kind``: ``$SPURIOUS_MAX_INPUT_BYTES`` or the default.

    Examples
    --------
    >>> max_input_bytes("config")
    16777216
    """
    from spurious.exceptions import ParameterError

    raw = os.environ.get(MAX_INPUT_ENV, "").strip()
    if not raw:
        if kind not in INPUT_LIMITS:
            raise ParameterError(
                f"Unknown input kind {kind!r}; expected one of {sorted(INPUT_LIMITS)}."
            )
        return INPUT_LIMITS[kind]
    m = _SIZE.match(raw)
    if m is None or float(m.group(1)) <= 0:
        raise ParameterError(
            f"${MAX_INPUT_ENV} must be a positive size in bytes (e.g. 20000000000 or 20G); "
            f"got {raw!r}."
        )
    return int(float(m.group(1)) * 1024 ** "_kmgt".index(m.group(2).lower() or "_"))


def _human(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit} ({n:,} bytes)"
    return f"{n:,} bytes"


def _not_regular(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def _check_stat(st: os.stat_result, path: Path, what: str, limit: int, allow_dir: bool) -> None:
    from spurious.exceptions import DataFormatError

    if stat.S_ISDIR(st.st_mode):
        if allow_dir:
            return
        raise DataFormatError(f"{what} {str(path)!r} is a directory, not a file.")
    if not stat.S_ISREG(st.st_mode):
        raise DataFormatError(
            f"{what} {str(path)!r} is {_not_regular(st.st_mode)}, not a regular file: reading "
            "it could block forever or never end. Pass a regular file."
        )
    if st.st_size > limit:
        raise DataFormatError(_too_large(path, what, st.st_size, limit))


def _too_large(path: Path, what: str, size: int, limit: int) -> str:
    return (
        f"{what} {str(path)!r} is {_human(size)}, more than the {_human(limit)} an input of "
        f"this kind may have; if it really is this large, raise the limit with "
        f"{MAX_INPUT_ENV}=<bytes> (e.g. {MAX_INPUT_ENV}=64G)."
    )


def check_input_file(
    path: str | os.PathLike[str],
    *,
    what: str,
    kind: str = "data",
    allow_dir: bool = False,
    max_bytes: int | None = None,
) -> Path:
    """Refuse an input that is missing, not a regular file, or larger than its limit.

    Runs ``os.stat`` without opening the path: opening a FIFO for reading blocks until
    a writer comes, and a device such as ``/dev/zero`` never ends. Links are followed.

    Parameters
    ----------
    path : path
        The input.
    what : str
        How messages name it: a flag (``"--predictions"``) or a phrase
        (``"Prediction file"``).
    kind : str, default="data"
        A key of :data:`INPUT_LIMITS`: which default size limit applies.
    allow_dir : bool, default=False
        Accept a folder (a ``save_to_disk`` or Parquet dataset); its files are checked
        when they are read.
    max_bytes : int, optional
        The size limit (default: :func:`max_input_bytes` of ``kind``).

    Raises
    ------
    DataFormatError
        Naming ``what``, the path, and what it is (a FIFO, a character device, a
        folder) or its size, the limit and how to raise it.

    Examples
    --------
    >>> check_input_file("/dev/null", what="--predictions")
    Traceback (most recent call last):
    ...
    spurious.exceptions.DataFormatError: --predictions '/dev/null' is a character device, not a regular file: reading it could block forever or never end. Pass a regular file.
    """
    from spurious.exceptions import DataFormatError

    path = Path(path)
    limit = max_input_bytes(kind) if max_bytes is None else int(max_bytes)
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise DataFormatError(f"{what} {str(path)!r} does not exist.") from None
    except OSError as e:
        raise DataFormatError(f"{what} {str(path)!r} cannot be read: {e.strerror}.") from None
    _check_stat(st, path, what, limit, allow_dir)
    return path


@contextlib.contextmanager
def open_input(
    path: str | os.PathLike[str],
    *,
    what: str,
    kind: str = "data",
    max_bytes: int | None = None,
) -> Iterator[BinaryIO]:
    """Open a checked input for binary reading (see :func:`check_input_file`).

    The path is checked with ``stat`` first, then opened without blocking and checked
    again on the open descriptor, so a file swapped for a FIFO in between is refused too.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "ids.txt"
    >>> _ = p.write_text("a\\nb\\n")
    >>> with open_input(p, what="--ids", kind="ids") as fh:
    ...     fh.read()
    b'a\\nb\\n'
    """
    path = check_input_file(path, what=what, kind=kind, max_bytes=max_bytes)
    limit = max_input_bytes(kind) if max_bytes is None else int(max_bytes)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        # O_NONBLOCK changes nothing for a regular file, the only kind accepted here.
        _check_stat(os.fstat(fd), path, what, limit, allow_dir=False)
        fh = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with fh:
        yield fh  # type: ignore[misc]


def read_input_bytes(
    path: str | os.PathLike[str],
    *,
    what: str,
    kind: str = "data",
    max_bytes: int | None = None,
) -> bytes:
    """The bytes of a checked input, never more than its limit (a file that grows is cut).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x.json"
    >>> _ = p.write_text("{}")
    >>> read_input_bytes(p, what="--config", kind="config")
    b'{}'
    """
    from spurious.exceptions import DataFormatError

    limit = max_input_bytes(kind) if max_bytes is None else int(max_bytes)
    with open_input(path, what=what, kind=kind, max_bytes=limit) as fh:
        # read(n) allocates n bytes first: read(limit + 1) asked for 4 GiB for every input
        # (harmless under Linux's default overcommit, fatal under `ulimit -v`). Read what
        # the file holds, then (only if it grew since) the rest up to the limit.
        try:
            size = os.fstat(fh.fileno()).st_size
        except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
            size = limit
        data = fh.read(min(size, limit) + 1)
        if limit >= len(data) > size:
            data += fh.read(limit + 1 - len(data))
    if len(data) > limit:  # it grew after the check
        raise DataFormatError(_too_large(Path(path), what, len(data), limit))
    return data


def read_input_text(
    path: str | os.PathLike[str],
    *,
    what: str,
    kind: str = "data",
    max_bytes: int | None = None,
) -> str:
    """The UTF-8 text of a checked input (a byte-order mark is dropped).

    Raises
    ------
    DataFormatError
        As :func:`check_input_file`, or for bytes that are not UTF-8 (with the line and
        byte offset of the first).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x.txt"
    >>> _ = p.write_bytes(b"ok\\n\\xe9\\n")
    >>> read_input_text(p, what="--ids", kind="ids")
    Traceback (most recent call last):
    ...
    spurious.exceptions.DataFormatError: --ids '...x.txt' is not valid UTF-8: invalid byte 0xe9 on line 2 (byte offset 3). Re-encode the file as UTF-8.
    """
    from spurious.exceptions import DataFormatError

    raw = read_input_bytes(path, what=what, kind=kind, max_bytes=max_bytes)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise DataFormatError(
            f"{what} {str(path)!r} is not valid UTF-8: invalid byte 0x{raw[e.start]:02x} on "
            f"line {line} (byte offset {e.start}). Re-encode the file as UTF-8."
        ) from None


def text_lines(text: str) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of a JSONL or one-per-line text, split at ``\\n`` only.

    ``str.splitlines`` also splits at U+2028, U+2029, U+0085 and other characters that
    JSON allows raw inside a string, which would cut a valid record in two. A ``\\r``
    before the ``\\n`` (Windows line ends) is dropped; a last line without ``\\n`` counts.

    Examples
    --------
    >>> list(text_lines('{"a": "x\\u2028y"}\\r\\n{"a": 2}'))
    [(1, '{"a": "x\\u2028y"}'), (2, '{"a": 2}')]
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for i, line in enumerate(lines, start=1):
        yield i, line[:-1] if line.endswith("\r") else line
