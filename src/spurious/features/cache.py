"""On-disk cache of float32 feature matrices, keyed by a JSON-able dict.

Each entry is two files named by the :func:`~spurious.utils.hashing.stable_hash` of the
key: ``<hash>.npy`` (the array, plain ``.npy``, never pickled) and ``<hash>.json`` (the
key, shape, dtype and a blake2b checksum of the array bytes). Both are written
atomically, array first, so the sidecar acts as the commit marker: a reader that finds
a sidecar finds a complete array beside it. Entries that fail verification (truncated,
bit-flipped, wrong shape, foreign key) are logged, deleted and reported as a miss, so
the caller simply recomputes them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from spurious.utils.hashing import stable_hash
from spurious.utils.io import atomic_write, atomic_write_json, read_json, to_jsonable

logger = logging.getLogger(__name__)

#: Environment variable that overrides the default cache folder.
CACHE_ENV_VAR = "SPURIOUS_CACHE_DIR"
#: Bumped when the on-disk layout changes; older entries then simply miss.
CACHE_FORMAT = 1
_DTYPE = np.dtype(np.float32)


def default_cache_dir() -> Path:
    """The feature cache folder: ``$SPURIOUS_CACHE_DIR`` or ``~/.cache/spurious/features``.

    Examples
    --------
    >>> isinstance(default_cache_dir(), Path)
    True
    """
    env = os.environ.get(CACHE_ENV_VAR)
    if env:
        return Path(env).expanduser()
    return Path("~/.cache/spurious/features").expanduser()


def array_checksum(array: np.ndarray) -> str:
    """blake2b (128-bit) hex digest of an array's C-order bytes.

    Examples
    --------
    >>> array_checksum(np.zeros(3, np.float32)) == array_checksum(np.zeros(3, np.float32))
    True
    """
    return hashlib.blake2b(np.ascontiguousarray(array).data, digest_size=16).hexdigest()


def _canonical(key: Mapping[str, Any]) -> Any:
    # The key as it reads back from JSON, so a stored key compares equal to a fresh one
    # (tuples become lists, numpy scalars plain numbers).
    return json.loads(json.dumps(to_jsonable(dict(key)), sort_keys=True, default=str))


class FeatureCache:
    """A folder of cached float32 arrays keyed by dicts.

    Parameters
    ----------
    root : path, None or False
        Cache folder. ``None`` (or ``True``) uses :func:`default_cache_dir`; ``False``
        disables caching (``get`` always misses, ``put`` does nothing).

    Examples
    --------
    >>> import tempfile
    >>> cache = FeatureCache(tempfile.mkdtemp())
    >>> key = {"dataset": "abc", "field": "premise", "featurizer": {"name": "minilm"}}
    >>> cache.get(key) is None
    True
    >>> _ = cache.put(key, np.ones((2, 3)))
    >>> cache.get(key).shape
    (2, 3)
    >>> FeatureCache(False).get(key) is None
    True
    """

    def __init__(self, root: str | os.PathLike[str] | bool | None = None) -> None:
        if root is False:
            self.root: Path | None = None
        elif root is None or root is True:
            self.root = default_cache_dir()
        else:
            self.root = Path(root).expanduser()

    def __repr__(self) -> str:
        return f"FeatureCache({str(self.root) if self.root else False!r})"

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
            raise RuntimeError("FeatureCache(False) is disabled and has no paths.")
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
            logger.debug("feature cache miss: %s", meta_path.stem)
            return None
        try:
            array = self._read_verified(key, npy, meta_path)
        except (OSError, ValueError, KeyError, TypeError, EOFError) as e:
            logger.warning(
                "Feature cache entry %s is unusable (%s); deleting it and recomputing.",
                npy,
                e,
            )
            self._remove(npy, meta_path)
            return None
        logger.debug("feature cache hit: %s %s", meta_path.stem, array.shape)
        return array

    def put(self, key: Mapping[str, Any], array: np.ndarray) -> np.ndarray:
        """Store ``array`` (as float32) under ``key``; return the float32 array.

        Failing to write (read-only or full disk) is logged, not raised: the cache is an
        optimisation and must not break the computation it serves.
        """
        arr = np.ascontiguousarray(array, dtype=_DTYPE)
        if self.root is None:
            return arr
        npy, meta_path = self.paths(key)
        meta = {
            "format": CACHE_FORMAT,
            "key": _canonical(key),
            "shape": list(arr.shape),
            "dtype": arr.dtype.str,
            "checksum": array_checksum(arr),
        }

        def write_npy(tmp: Path) -> None:
            # Through a file handle: np.save on a path would append ".npy" to the temp name.
            with open(tmp, "wb") as fh:
                np.save(fh, arr, allow_pickle=False)

        try:
            atomic_write(npy, write_npy)
            atomic_write_json(meta_path, meta)
        except OSError as e:
            logger.warning("Could not write feature cache entry %s: %s", npy, e)
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
    @staticmethod
    def _read_verified(key: Mapping[str, Any], npy: Path, meta_path: Path) -> np.ndarray:
        meta = read_json(meta_path)
        if not isinstance(meta, dict):
            raise ValueError("sidecar is not a JSON object")
        if meta.get("format") != CACHE_FORMAT:
            raise ValueError(f"cache format {meta.get('format')!r} != {CACHE_FORMAT}")
        if meta["key"] != _canonical(key):
            raise ValueError("stored key differs from the requested key")
        shape = tuple(int(s) for s in meta["shape"])
        if np.dtype(meta["dtype"]) != _DTYPE:
            raise ValueError(f"sidecar dtype {meta['dtype']!r} is not float32")
        # A plain read (not mmap): the checksum touches every byte anyway, and a truncated
        # file then fails here with a ValueError instead of later with a SIGBUS.
        array = np.load(npy, allow_pickle=False)
        if array.shape != shape or array.dtype != _DTYPE:
            raise ValueError(
                f"array is {array.dtype}{list(array.shape)}, sidecar says float32{list(shape)}"
            )
        if array_checksum(array) != meta["checksum"]:
            raise ValueError("checksum mismatch")
        return array

    @staticmethod
    def _remove(*paths: Path) -> None:
        for p in paths:
            try:
                p.unlink(missing_ok=True)
            except OSError as e:  # pragma: no cover  (permissions)
                logger.warning("Could not delete feature cache file %s: %s", p, e)
