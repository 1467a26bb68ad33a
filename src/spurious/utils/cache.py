"""On-disk cache of arrays of one dtype, keyed by JSON-able dicts.

Each entry is two files named by the :func:`~spurious.utils.hashing.stable_hash` of the
key: ``<hash>.npy`` (the array, plain ``.npy``, never pickled) and ``<hash>.json`` (the
key, shape, dtype and an :func:`~spurious.utils.hashing.array_digest` of the array
bytes). Both are written atomically, array first, so the sidecar acts as the commit
marker: a reader that finds a sidecar finds a complete array beside it. Entries that
fail verification (truncated, bit-flipped, wrong shape or dtype, foreign key) are
logged, deleted and reported as a miss, so the caller simply recomputes them.

Feature matrices (:class:`spurious.features.cache.FeatureCache`, float32) and heuristic
values (:class:`spurious.heuristics.base.HeuristicCache`, float64) are the two users.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from spurious.utils.hashing import array_digest, stable_hash
from spurious.utils.io import atomic_write, atomic_write_json, read_json, to_jsonable

#: Environment variable that overrides the default cache folder.
CACHE_ENV_VAR = "SPURIOUS_CACHE_DIR"
#: Bumped when the on-disk layout changes; older entries then simply miss.
CACHE_FORMAT = 1
#: Temp files of interrupted writes older than this (seconds) are removed.
STALE_TMP_SECONDS = 3600.0

# The temp files atomic_path leaves when a writer is killed: ".<hash>.npy.<random>.tmp".
_TMP_NAME = re.compile(r"\.[0-9a-f]{32}\.(?:npy|json)\..+\.tmp")
# Folders already swept by this process (sweeping once is enough: new stale files only
# come from writers killed later, and the next process removes those).
_SWEPT: set[Path] = set()
_SWEPT_LOCK = threading.Lock()


def default_cache_dir() -> Path:
    """The package's cache folder: ``$SPURIOUS_CACHE_DIR`` or ``~/.cache/spurious/features``.

    Feature matrices live in it directly and heuristic values in its ``heuristics/``
    subfolder (the name predates the heuristics; kept so that existing caches stay valid).

    Examples
    --------
    >>> isinstance(default_cache_dir(), Path)
    True
    """
    env = os.environ.get(CACHE_ENV_VAR)
    if env:
        return Path(env).expanduser()
    return Path("~/.cache/spurious/features").expanduser()


def remove_stale_temp_files(
    root: str | os.PathLike[str], max_age: float = STALE_TMP_SECONDS
) -> int:
    """Delete the temp files of cache writes interrupted more than ``max_age`` seconds ago.

    Only names an :class:`ArrayCache` write produces are touched. A live writer keeps
    touching its temp file, so an old modification time means its process died before
    renaming it (killed, or the machine lost power).

    Parameters
    ----------
    root : path
        A cache folder.
    max_age : float, default=3600
        Minimum age in seconds of a temp file to delete.

    Returns
    -------
    int
        How many files were deleted.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / f".{'a' * 32}.npy.x1y2.tmp").write_bytes(b"partial")
    >>> remove_stale_temp_files(d, max_age=0.0), list(d.iterdir())
    (1, [])
    """
    root = Path(root)
    if not root.is_dir():
        return 0
    now = time.time()
    removed = 0
    for path in root.glob(".*.tmp"):
        if not _TMP_NAME.fullmatch(path.name):
            continue
        try:
            if now - path.stat().st_mtime >= max_age:
                path.unlink()
                removed += 1
        except FileNotFoundError:  # renamed or removed by another process meanwhile
            continue
        except OSError as e:  # pragma: no cover  (permissions)
            logging.getLogger(__name__).warning("Could not delete stale %s: %s", path, e)
    if removed:
        logging.getLogger(__name__).info(
            "Removed %d temp file(s) of interrupted cache writes in %s", removed, root
        )
    return removed


def _canonical(key: Mapping[str, Any]) -> Any:
    # The key as it reads back from JSON, so a stored key compares equal to a fresh one
    # (tuples become lists, numpy scalars plain numbers).
    return json.loads(json.dumps(to_jsonable(dict(key)), sort_keys=True, default=str))


class ArrayCache:
    """A folder of cached arrays of one dtype, keyed by dicts.

    Parameters
    ----------
    root : path, None or False
        Cache folder. ``None`` (or ``True``) uses :meth:`default_root`; ``False``
        disables caching (``get`` always misses, ``put`` does nothing).
    dtype : numpy dtype, default=float32
        The dtype every entry is stored and returned in; ``put`` converts to it and an
        entry of another dtype is treated as damaged.

    Notes
    -----
    The first cache opened on a folder in a process removes the temp files left there
    by writes interrupted over an hour ago (:func:`remove_stale_temp_files`).

    Examples
    --------
    >>> import tempfile
    >>> cache = ArrayCache(tempfile.mkdtemp(), dtype=np.float64)
    >>> key = {"dataset": "abc", "heuristic": "answer_length"}
    >>> cache.get(key) is None
    True
    >>> cache.put(key, [0.5, np.nan])
    array([0.5, nan])
    >>> cache.get(key)
    array([0.5, nan])
    >>> ArrayCache(False).get(key) is None
    True
    """

    #: What the entries are, for log messages ("feature", "heuristic").
    label: str = "array"

    def __init__(
        self, root: str | os.PathLike[str] | bool | None = None, *, dtype: DTypeLike = np.float32
    ) -> None:
        self.dtype = np.dtype(dtype)
        if root is False:
            self.root: Path | None = None
        elif root is None or root is True:
            self.root = self.default_root()
        else:
            self.root = Path(root).expanduser()
        self._logger = logging.getLogger(type(self).__module__)
        if self.root is not None:
            self._sweep_once(self.root)

    def __repr__(self) -> str:
        root = str(self.root) if self.root else False
        return f"{type(self).__name__}({root!r}, dtype={self.dtype.name!r})"

    @staticmethod
    def default_root() -> Path:
        """The folder used when ``root`` is ``None`` (:func:`default_cache_dir`)."""
        return default_cache_dir()

    @property
    def enabled(self) -> bool:
        """Whether this cache reads and writes anything."""
        return self.root is not None

    # -- paths ----------------------------------------------------------------------
    @staticmethod
    def key_hash(key: Mapping[str, Any]) -> str:
        """The 32-hex-digit name of the entry for ``key``."""
        return stable_hash({"format": CACHE_FORMAT, "key": _canonical(key)}, 32)

    def paths(self, key: Mapping[str, Any]) -> tuple[Path, Path]:
        """``(array_path, sidecar_path)`` of the entry for ``key``.

        Raises
        ------
        RuntimeError
            If the cache is disabled.
        """
        if self.root is None:
            raise RuntimeError(f"{type(self).__name__}(False) is disabled and has no paths.")
        h = self.key_hash(key)
        return self.root / f"{h}.npy", self.root / f"{h}.json"

    # -- read / write ---------------------------------------------------------------
    def get(self, key: Mapping[str, Any]) -> np.ndarray | None:
        """The cached array for ``key``, or ``None`` on a miss.

        A damaged or mismatched entry is logged as a warning, deleted and reported as a
        miss so that it is rebuilt.
        """
        if self.root is None:
            return None
        npy, meta_path = self.paths(key)
        if not meta_path.exists():
            self._logger.debug("%s cache miss: %s", self.label, meta_path.stem)
            return None
        try:
            array = self._read_verified(key, npy, meta_path)
        except (OSError, ValueError, KeyError, TypeError, EOFError) as e:
            self._logger.warning(
                "%s cache entry %s is unusable (%s); deleting it and recomputing.",
                self.label.capitalize(),
                npy,
                e,
            )
            self._remove(npy, meta_path)
            return None
        self._logger.debug("%s cache hit: %s %s", self.label, meta_path.stem, array.shape)
        return array

    def put(self, key: Mapping[str, Any], array: Any) -> np.ndarray:
        """Store ``array`` (converted to the cache's dtype) under ``key``; return it converted.

        Failing to write (read-only or full disk) is logged, not raised: the cache is an
        optimisation and must not break the computation it serves.
        """
        arr = np.ascontiguousarray(array, dtype=self.dtype)
        if self.root is None:
            return arr
        npy, meta_path = self.paths(key)
        meta = {
            "format": CACHE_FORMAT,
            "key": _canonical(key),
            "shape": list(arr.shape),
            "dtype": arr.dtype.str,
            "checksum": array_digest(arr),
        }

        def write_npy(tmp: Path) -> None:
            # Through a file handle: np.save on a path would append ".npy" to the temp name.
            with open(tmp, "wb") as fh:
                np.save(fh, arr, allow_pickle=False)

        try:
            atomic_write(npy, write_npy)
            atomic_write_json(meta_path, meta)
        except OSError as e:
            self._logger.warning("Could not write %s cache entry %s: %s", self.label, npy, e)
        return arr

    def delete(self, key: Mapping[str, Any]) -> bool:
        """Remove the entry for ``key``; return whether there was one."""
        if self.root is None:
            return False
        npy, meta_path = self.paths(key)
        existed = npy.exists() or meta_path.exists()
        self._remove(npy, meta_path)
        return existed

    def clear(self) -> int:
        """Remove every entry in the cache folder; return how many were removed."""
        if self.root is None or not self.root.is_dir():
            return 0
        n = 0
        for meta_path in self.root.glob("*.json"):
            self._remove(meta_path.with_suffix(".npy"), meta_path)
            n += 1
        for orphan in self.root.glob("*.npy"):
            orphan.unlink(missing_ok=True)
        return n

    # -- helpers --------------------------------------------------------------------
    def _read_verified(self, key: Mapping[str, Any], npy: Path, meta_path: Path) -> np.ndarray:
        meta = read_json(meta_path)
        if not isinstance(meta, dict):
            raise ValueError("sidecar is not a JSON object")
        if meta.get("format") != CACHE_FORMAT:
            raise ValueError(f"cache format {meta.get('format')!r} != {CACHE_FORMAT}")
        if meta["key"] != _canonical(key):
            raise ValueError("stored key differs from the requested key")
        shape = tuple(int(s) for s in meta["shape"])
        if np.dtype(meta["dtype"]) != self.dtype:
            raise ValueError(f"sidecar dtype {meta['dtype']!r} is not {self.dtype.name}")
        # A plain read (not mmap): the checksum touches every byte anyway, and a truncated
        # file then fails here with a ValueError instead of later with a SIGBUS.
        array = np.load(npy, allow_pickle=False)
        if array.shape != shape or array.dtype != self.dtype:
            raise ValueError(
                f"array is {array.dtype}{list(array.shape)}, sidecar says "
                f"{self.dtype.name}{list(shape)}"
            )
        if array_digest(array) != meta["checksum"]:
            raise ValueError("checksum mismatch")
        return array

    def _remove(self, *paths: Path) -> None:
        for p in paths:
            try:
                p.unlink(missing_ok=True)
            except OSError as e:  # pragma: no cover  (permissions)
                self._logger.warning("Could not delete %s cache file %s: %s", self.label, p, e)

    @staticmethod
    def _sweep_once(root: Path) -> None:
        with _SWEPT_LOCK:
            if root in _SWEPT:
                return
            _SWEPT.add(root)
        remove_stale_temp_files(root)
