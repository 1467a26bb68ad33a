"""Stable content hashes used for example ids, dataset fingerprints, cache keys and checksums."""

from __future__ import annotations

import hashlib
import json
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
    return hashlib.blake2b(np.ascontiguousarray(array).data, digest_size=size).hexdigest()
