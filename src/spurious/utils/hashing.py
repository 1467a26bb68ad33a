"""Stable content hashes used for example ids, dataset fingerprints, cache keys and checksums."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import numpy as np


def stable_hash(obj: Any, length: int = 16) -> str:
    """Hex digest of a JSON-serialisable object, independent of dict order and process.

    Examples
    --------
    >>> stable_hash({"b": 1, "a": [1, 2]}) == stable_hash({"a": [1, 2], "b": 1})
    True
    """
    payload = json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.blake2b(payload.encode("utf-8"), digest_size=32).hexdigest()[:length]


def array_digest(array: Any, size: int = 16) -> str:
    """blake2b hex digest of an array's C-order bytes (values only: not shape or dtype).

    The one checksum of arrays written to disk (cache entries, checkpoints) and of
    in-memory arrays named in configurations. Its value is part of stored sidecars, so it
    must never change for the same bytes.

    Parameters
    ----------
    array : array-like
        Any array exposing its buffer once made C-contiguous (numeric or fixed-width
        string dtypes; not ``object``).
    size : int, default=16
        Digest size in bytes (the hex string is twice as long).

    Examples
    --------
    >>> a = np.arange(3, dtype=np.float32)
    >>> array_digest(a) == array_digest(a.copy())
    True
    >>> len(array_digest(a)), len(array_digest(a, size=8))
    (32, 16)
    >>> array_digest(np.asfortranarray(np.eye(2))) == array_digest(np.eye(2))  # C order
    True
    """
    h = hashlib.blake2b(digest_size=size)
    for chunk in c_order_chunks(array):
        h.update(chunk)
    return h.hexdigest()


#: Bytes of a non-contiguous array made contiguous at a time by :func:`c_order_chunks`.
_CHUNK_BYTES = 64 * 2**20


def c_order_chunks(array: Any, chunk_bytes: int = _CHUNK_BYTES) -> Iterator[memoryview]:
    """An array's C-order bytes as consecutive buffers: the array's own buffer when it is
    C-contiguous, else blocks of its leading axis copied ``chunk_bytes`` at a time.

    Hashing the chunks one after another gives the digest of the whole buffer without
    a contiguous copy of all of it (a column block of a feature matrix is a strided
    view: 0.84 GB to copy at 550k x 384).

    Examples
    --------
    >>> a = np.arange(12, dtype=np.int64).reshape(3, 4)
    >>> b"".join(c_order_chunks(a[:, :2], chunk_bytes=16)) == a[:, :2].copy().tobytes()
    True
    """
    array = np.asarray(array)
    if array.flags.c_contiguous or array.ndim == 0:
        yield np.ascontiguousarray(array).data
        return
    row_bytes = max(1, array[:1].nbytes)
    rows = max(1, chunk_bytes // row_bytes)
    for start in range(0, array.shape[0], rows):
        yield np.ascontiguousarray(array[start : start + rows]).data
