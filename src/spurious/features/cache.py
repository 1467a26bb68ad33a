"""On-disk caches of features: float32 matrices, and per-text embeddings.

:class:`FeatureCache` is a :class:`~spurious.utils.cache.ArrayCache` fixed to float32 in
the package's cache folder (``$SPURIOUS_CACHE_DIR`` or ``~/.cache/spurious/features``);
the entry layout, verification and atomic writes are documented there.

:class:`TextEmbeddingStore` holds one vector per distinct *text* (content-addressed by a
digest of the text), so any dataset, subset, fold or split that contains texts encoded
before reuses their vectors, whatever dataset they were first encoded with. It is built
on the same verified, atomic entries.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from spurious.utils.cache import ArrayCache, default_cache_dir
from spurious.utils.hashing import stable_hash
from spurious.utils.io import read_json

logger = logging.getLogger(__name__)

#: Bytes of the per-text digest (blake2b): collisions are out of reach (2^-64 at 2^32 texts).
DIGEST_BYTES = 16
#: Above this many shards in one namespace, a write merges them into one.
MAX_SHARDS = 32
#: Bytes of shard arrays kept in memory per process (beyond that, shards are re-read).
MEMO_BYTES = 1 << 30


class FeatureCache(ArrayCache):
    """A folder of cached float32 arrays keyed by dicts.

    Parameters
    ----------
    root : path, None or False
        Cache folder. ``None`` (or ``True``) uses
        :func:`spurious.utils.cache.default_cache_dir`; ``False`` disables caching
        (``get`` always misses, ``put`` does nothing).

    Examples
    --------
    >>> import tempfile
    >>> cache = FeatureCache(tempfile.mkdtemp())
    >>> key = {"dataset": "abc", "field": "premise", "featurizer": {"name": "minilm"}}
    >>> cache.get(key) is None
    True
    >>> cache.put(key, np.ones((2, 3))).dtype
    dtype('float32')
    >>> cache.get(key).shape
    (2, 3)
    >>> FeatureCache(False).get(key) is None
    True
    """

    label = "feature"

    def __init__(self, root: str | os.PathLike[str] | bool | None = None) -> None:
        super().__init__(root, dtype=np.float32)


def text_digests(texts: Iterable[str]) -> np.ndarray:
    """One :data:`DIGEST_BYTES`-byte blake2b digest per text (numpy ``V16``), in order.

    Examples
    --------
    >>> d = text_digests(["a cat", "a dog", "a cat"])
    >>> d.dtype.itemsize, bool(d[0] == d[2]), bool(d[0] == d[1])
    (16, True, False)
    """
    joined = b"".join(
        hashlib.blake2b(t.encode("utf-8"), digest_size=DIGEST_BYTES).digest() for t in texts
    )
    return np.frombuffer(joined, dtype=f"V{DIGEST_BYTES}").copy()


class TextEmbeddingStore:
    """Per-text vectors, content-addressed, in one folder per namespace.

    A namespace is everything that determines a text's vector (the encoder's
    configuration and how its batches are built); within it, a text's vector is looked
    up by the digest of the text alone. Vectors are written in *shards* (one per write:
    the texts encoded together, as two verified :class:`~spurious.utils.cache.ArrayCache`
    entries, the vectors and their digests), so a cache only grows by texts it has not
    seen. Concurrent writers are safe: a shard is named by its content and committed by
    its digests entry, written last; a shard that vanishes or fails verification is a
    miss for its texts. Past :data:`MAX_SHARDS` shards a write merges them into one.

    Parameters
    ----------
    namespace : mapping
        JSON-able description of what the vectors depend on (its hash names the folder).
    root : path, None or False
        Cache folder (the store lives in ``<root>/texts/<namespace hash>``). ``None``
        (or ``True``): :func:`~spurious.utils.cache.default_cache_dir`; ``False``: no
        store (``get`` finds nothing, ``put`` does nothing).

    Examples
    --------
    >>> import tempfile
    >>> store = TextEmbeddingStore({"encoder": "demo"}, tempfile.mkdtemp())
    >>> store.put(text_digests(["a", "b"]), np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> found, vectors = store.get(text_digests(["b", "c"]))
    >>> found.tolist(), vectors.tolist()
    ([True, False], [[3.0, 4.0]])
    """

    def __init__(
        self, namespace: Mapping[str, Any], root: str | os.PathLike[str] | bool | None = None
    ) -> None:
        self.namespace = dict(namespace)
        if root is False:
            self.folder: Path | None = None
            return
        base = default_cache_dir() if root is None or root is True else Path(root).expanduser()
        self.folder = base / "texts" / stable_hash(self.namespace, 32)
        self._vectors = ArrayCache(self.folder, dtype=np.float32)
        self._digests = ArrayCache(self.folder, dtype=np.uint8)

    def __repr__(self) -> str:
        return f"TextEmbeddingStore({str(self.folder) if self.folder else False!r})"

    @property
    def enabled(self) -> bool:
        """Whether this store reads and writes anything."""
        return self.folder is not None

    # -- read -------------------------------------------------------------------------
    def get(self, digests: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Vectors of the texts with these digests that the store holds.

        Parameters
        ----------
        digests : ndarray of ``V16``
            From :func:`text_digests`.

        Returns
        -------
        found : ndarray of bool, shape (n,)
            Which digests were found.
        vectors : ndarray of float32, shape (found.sum(), dim)
            Their vectors, in the order of ``digests[found]`` (``dim`` is 0 when none).
        """
        n = len(digests)
        found = np.zeros(n, dtype=bool)
        rows: np.ndarray | None = None
        if self.folder is None or n == 0:
            return found, np.zeros((0, 0), dtype=np.float32)
        for shard in self._shards():
            todo = np.flatnonzero(~found)
            if len(todo) == 0:
                break
            loaded = self._load(shard, need_vectors=False)
            if loaded is None:
                continue
            sorted_digests, order, _ = loaded
            pos = np.searchsorted(sorted_digests, digests[todo])
            pos = np.minimum(pos, len(sorted_digests) - 1)
            hit = sorted_digests[pos] == digests[todo]
            if not hit.any():
                continue
            loaded = self._load(shard, need_vectors=True)
            if loaded is None:  # vectors damaged or gone: a miss for this shard's texts
                continue
            vectors = loaded[2]
            if rows is None:
                rows = np.empty((n, vectors.shape[1]), dtype=np.float32)
            rows[todo[hit]] = vectors[order[pos[hit]]]
            found[todo[hit]] = True
        if rows is None:
            return found, np.zeros((0, 0), dtype=np.float32)
        return found, rows[found]

    # -- write ------------------------------------------------------------------------
    def put(self, digests: np.ndarray, vectors: Any) -> None:
        """Store ``vectors`` (one row per digest) as a new shard.

        Failing to write is logged, not raised (the store is an optimisation).
        """
        if self.folder is None or len(digests) == 0:
            return
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(digests):
            raise ValueError(
                f"vectors must have one row per digest ({len(digests)}); got {vectors.shape}."
            )
        raw = np.ascontiguousarray(digests).view(np.uint8).reshape(len(digests), DIGEST_BYTES)
        shard = hashlib.blake2b(raw.tobytes(), digest_size=16).hexdigest()
        # Vectors first: the digests entry is what makes a shard visible to readers.
        self._vectors.put({"shard": shard, "part": "vectors"}, vectors)
        self._digests.put({"shard": shard, "part": "digests"}, raw)
        if len(self._shards()) > MAX_SHARDS:
            self._compact()

    # -- internals --------------------------------------------------------------------
    def _shards(self) -> list[str]:
        """Committed shards (those whose digests entry exists), oldest first."""
        assert self.folder is not None
        if not self.folder.is_dir():
            return []
        found = []
        for sidecar in self.folder.glob("*.json"):
            try:
                key = read_json(sidecar).get("key", {})
                mtime = sidecar.stat().st_mtime_ns
            except (OSError, ValueError, AttributeError):
                continue  # being written or removed right now
            if isinstance(key, dict) and key.get("part") == "digests" and "shard" in key:
                found.append((mtime, str(key["shard"])))
        return [shard for _, shard in sorted(found)]

    def _load(
        self, shard: str, need_vectors: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
        """``(sorted digests, order, vectors)`` of a shard, from the process memo if there."""
        assert self.folder is not None
        memo_key = (str(self.folder), shard)
        with _MEMO_LOCK:
            entry = _MEMO.get(memo_key)
        if entry is None:
            raw = self._digests.get({"shard": shard, "part": "digests"})
            if raw is None:
                return None
            digests = np.ascontiguousarray(raw).view(f"V{DIGEST_BYTES}").reshape(-1)
            order = np.argsort(digests, kind="stable")
            entry = (digests[order], order, None)
        if need_vectors and entry[2] is None:
            vectors = self._vectors.get({"shard": shard, "part": "vectors"})
            if vectors is None or vectors.ndim != 2 or vectors.shape[0] != len(entry[1]):
                return None
            entry = (entry[0], entry[1], vectors)
        _remember(memo_key, entry)
        return entry

    def _compact(self) -> None:
        """Merge every shard into one (texts de-duplicated), then delete the old ones."""
        shards = self._shards()
        parts = [self._load(s, need_vectors=True) for s in shards]
        kept = [(s, p) for s, p in zip(shards, parts, strict=True) if p is not None]
        if len(kept) < 2:
            return
        digests = np.concatenate([p[0] for _, p in kept])
        vectors = np.concatenate([p[2][p[1]] for _, p in kept])
        digests, first = np.unique(digests, return_index=True)
        self._write_merged(digests, vectors[first], [s for s, _ in kept])

    def _write_merged(self, digests: np.ndarray, vectors: np.ndarray, old: list[str]) -> None:
        """Write the merged shard, then remove the shards it replaces."""
        raw = np.ascontiguousarray(digests).view(np.uint8).reshape(len(digests), DIGEST_BYTES)
        shard = hashlib.blake2b(raw.tobytes(), digest_size=16).hexdigest()
        self._vectors.put({"shard": shard, "part": "vectors"}, vectors)
        self._digests.put({"shard": shard, "part": "digests"}, raw)
        for s in old:
            if s == shard:
                continue
            # Digests first: a reader never sees a committed shard without its vectors.
            self._digests.delete({"shard": s, "part": "digests"})
            self._vectors.delete({"shard": s, "part": "vectors"})
            with _MEMO_LOCK:
                _MEMO.pop((str(self.folder), s), None)
        logger.info("merged %d text-embedding shards into one (%d texts)", len(old), len(digests))


# Shards already read by this process: (folder, shard) -> (sorted digests, order, vectors).
# Shards are immutable (named by content), so a memo entry never goes stale.
_MEMO: dict[tuple[str, str], tuple[np.ndarray, np.ndarray, np.ndarray | None]] = {}
_MEMO_LOCK = threading.Lock()


def _remember(key: tuple[str, str], entry: tuple[np.ndarray, np.ndarray, Any]) -> None:
    with _MEMO_LOCK:
        _MEMO.pop(key, None)
        _MEMO[key] = entry  # most recently used last
        total = sum(
            d.nbytes + o.nbytes + (0 if v is None else v.nbytes) for d, o, v in _MEMO.values()
        )
        while total > MEMO_BYTES and len(_MEMO) > 1:
            oldest = next(iter(_MEMO))
            d, o, v = _MEMO.pop(oldest)
            total -= d.nbytes + o.nbytes + (0 if v is None else v.nbytes)
