"""Stable content hashes used for example ids, dataset fingerprints and cache keys."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def stable_hash(obj: Any, length: int = 16) -> str:
    """Hex digest of a JSON-serialisable object, independent of dict order and process.

    Examples
    --------
    >>> stable_hash({"b": 1, "a": [1, 2]}) == stable_hash({"a": [1, 2], "b": 1})
    True
    """
    payload = json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.blake2b(payload.encode("utf-8"), digest_size=32).hexdigest()[:length]
