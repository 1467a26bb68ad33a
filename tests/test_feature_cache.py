"""FeatureCache: round trips, default folder, corruption detection, atomic writes."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from spurious.features.cache import FeatureCache
from spurious.utils import cache as cache_mod
from spurious.utils.cache import CACHE_ENV_VAR
from spurious.utils.hashing import array_digest

KEY = {"dataset": "f00d", "field": "premise", "featurizer": {"name": "minilm", "dim": 384}}


@pytest.fixture
def cache(tmp_path: Path) -> FeatureCache:
    return FeatureCache(tmp_path / "cache")


@pytest.fixture
def array() -> np.ndarray:
    return np.arange(24, dtype=np.float64).reshape(6, 4) / 7.0


def _files(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir())


def test_round_trip_returns_float32_copy(cache: FeatureCache, array: np.ndarray) -> None:
    stored = cache.put(KEY, array)
    assert stored.dtype == np.float32
    got = cache.get(KEY)
    assert got is not None
    assert got.dtype == np.float32 and got.shape == (6, 4)
    np.testing.assert_array_equal(got, array.astype(np.float32))
    # A normal, writable array detached from the file (not a read-only memmap).
    assert type(got) is np.ndarray and got.flags.writeable


def test_key_is_order_insensitive_and_specific(cache: FeatureCache, array: np.ndarray) -> None:
    cache.put(KEY, array)
    reordered = {
        "featurizer": {"dim": 384, "name": "minilm"},
        "field": "premise",
        "dataset": "f00d",
    }
    assert cache.get(reordered) is not None
    assert cache.get({**KEY, "field": "hypothesis"}) is None
    assert cache.get({**KEY, "featurizer": {"name": "minilm", "dim": 768}}) is None


def test_entry_layout_and_sidecar(cache: FeatureCache, array: np.ndarray) -> None:
    cache.put(KEY, array)
    npy, meta_path = cache.paths(KEY)
    assert _files(cache.root) == sorted([npy.name, meta_path.name])
    meta = json.loads(meta_path.read_text())
    assert meta["key"] == KEY
    assert meta["shape"] == [6, 4]
    assert np.dtype(meta["dtype"]) == np.float32
    assert meta["checksum"] == array_digest(array.astype(np.float32))
    # Plain .npy: readable without pickle.
    np.testing.assert_array_equal(np.load(npy, allow_pickle=False), array.astype(np.float32))


def test_atomic_write_leaves_no_temp_files(cache: FeatureCache, array: np.ndarray) -> None:
    for i in range(3):
        cache.put({**KEY, "i": i}, array + i)
    names = _files(cache.root)
    assert len(names) == 6
    assert all(n.endswith((".npy", ".json")) and not n.startswith(".") for n in names)


def test_interrupted_write_keeps_previous_entry(
    cache: FeatureCache, array: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache.put(KEY, array)

    def boom(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt  # an interruption mid-write, not a handled OSError

    monkeypatch.setattr(cache_mod.np, "save", boom)
    with pytest.raises(KeyboardInterrupt):
        cache.put(KEY, array * 2)
    monkeypatch.undo()
    assert len(_files(cache.root)) == 2  # no temp file left behind
    np.testing.assert_array_equal(cache.get(KEY), array.astype(np.float32))


def test_write_failure_is_logged_not_raised(
    cache: FeatureCache,
    array: np.ndarray,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def disk_full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache_mod.np, "save", disk_full)
    with caplog.at_level(logging.WARNING, logger="spurious.features.cache"):
        out = cache.put(KEY, array)
    np.testing.assert_array_equal(out, array.astype(np.float32))
    assert "Could not write" in caplog.text
    assert cache.get(KEY) is None


def test_disabled_cache(tmp_path: Path, array: np.ndarray, monkeypatch) -> None:
    monkeypatch.setenv(CACHE_ENV_VAR, str(tmp_path / "env"))
    off = FeatureCache(False)
    assert not off.enabled
    assert off.get(KEY) is None
    np.testing.assert_array_equal(off.put(KEY, array), array.astype(np.float32))
    assert off.get(KEY) is None
    assert not (tmp_path / "env").exists()


def test_default_root_from_env_then_home(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(CACHE_ENV_VAR, str(tmp_path / "env"))
    assert FeatureCache().root == tmp_path / "env"
    assert FeatureCache(None).root == tmp_path / "env"
    monkeypatch.delenv(CACHE_ENV_VAR)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert FeatureCache().root == tmp_path / "home" / ".cache" / "spurious" / "features"


def _corrupt_truncate(npy: Path, meta: Path) -> None:
    data = npy.read_bytes()
    npy.write_bytes(data[: len(data) - 10])


def _corrupt_flip_data(npy: Path, meta: Path) -> None:
    data = bytearray(npy.read_bytes())
    data[-3] ^= 0xFF  # inside the array payload: only the checksum can notice
    npy.write_bytes(bytes(data))


def _corrupt_flip_header(npy: Path, meta: Path) -> None:
    data = bytearray(npy.read_bytes())
    data[1:6] = b"XXXXX"  # breaks the \x93NUMPY magic
    npy.write_bytes(bytes(data))


def _corrupt_shape(npy: Path, meta: Path) -> None:
    np.save(npy, np.zeros((3, 4), np.float32))  # a valid .npy of the wrong shape


def _corrupt_dtype(npy: Path, meta: Path) -> None:
    np.save(npy, np.zeros((6, 4), np.float64))


def _corrupt_sidecar(npy: Path, meta: Path) -> None:
    meta.write_text("{not json")


def _foreign_key(npy: Path, meta: Path) -> None:
    m = json.loads(meta.read_text())
    m["key"] = {"dataset": "someone-else"}  # as after a hash collision
    meta.write_text(json.dumps(m))


def _missing_array(npy: Path, meta: Path) -> None:
    npy.unlink()


def _empty_array_file(npy: Path, meta: Path) -> None:
    npy.write_bytes(b"")


@pytest.mark.parametrize(
    "damage",
    [
        _corrupt_truncate,
        _corrupt_flip_data,
        _corrupt_flip_header,
        _corrupt_shape,
        _corrupt_dtype,
        _corrupt_sidecar,
        _foreign_key,
        _missing_array,
        _empty_array_file,
    ],
)
def test_damaged_entry_is_a_logged_miss_and_is_rebuilt(
    cache: FeatureCache, array: np.ndarray, damage, caplog: pytest.LogCaptureFixture
) -> None:
    cache.put(KEY, array)
    npy, meta = cache.paths(KEY)
    damage(npy, meta)
    with caplog.at_level(logging.WARNING, logger="spurious.features.cache"):
        assert cache.get(KEY) is None
    assert "unusable" in caplog.text
    assert not npy.exists() and not meta.exists()  # deleted, so it gets rebuilt
    cache.put(KEY, array)
    np.testing.assert_array_equal(cache.get(KEY), array.astype(np.float32))


def test_array_without_sidecar_is_a_plain_miss(cache: FeatureCache, array: np.ndarray) -> None:
    cache.put(KEY, array)
    _, meta = cache.paths(KEY)
    meta.unlink()  # e.g. interrupted between the two writes
    assert cache.get(KEY) is None


def test_delete_and_clear(cache: FeatureCache, array: np.ndarray) -> None:
    cache.put(KEY, array)
    cache.put({**KEY, "field": "hypothesis"}, array)
    assert cache.delete(KEY) is True
    assert cache.delete(KEY) is False
    assert cache.get(KEY) is None
    assert cache.clear() == 1
    assert _files(cache.root) == []


def test_empty_and_1d_arrays_round_trip(cache: FeatureCache) -> None:
    cache.put({"k": "empty"}, np.zeros((0, 384), np.float32))
    got = cache.get({"k": "empty"})
    assert got is not None and got.shape == (0, 384)
    cache.put({"k": "vec"}, np.array([1.0, 2.0]))
    np.testing.assert_array_equal(cache.get({"k": "vec"}), [1.0, 2.0])


# -- per-text embeddings ------------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path):
    from spurious.features import cache as features_cache

    features_cache._MEMO.clear()  # shards remembered by other tests' stores
    return features_cache.TextEmbeddingStore({"encoder": "test"}, tmp_path / "cache")


def test_text_store_round_trip_and_partial_hits(store) -> None:
    from spurious.features.cache import text_digests

    vectors = np.arange(12, dtype=np.float32).reshape(3, 4)
    store.put(text_digests(["a", "b", "c"]), vectors)
    found, got = store.get(text_digests(["c", "zzz", "a", "c"]))
    assert found.tolist() == [True, False, True, True]
    np.testing.assert_array_equal(got, vectors[[2, 0, 2]])
    assert got.dtype == np.float32
    # A second shard: lookups span shards; the folder grows by the new texts only.
    store.put(text_digests(["zzz"]), np.ones((1, 4)))
    found, got = store.get(text_digests(["zzz", "b"]))
    assert found.all()
    np.testing.assert_array_equal(got, [[1, 1, 1, 1], vectors[1]])


def test_text_store_namespaces_are_separate_and_disabled_store_is_inert(tmp_path: Path) -> None:
    from spurious.features.cache import TextEmbeddingStore, text_digests

    d = text_digests(["a"])
    TextEmbeddingStore({"encoder": "one"}, tmp_path).put(d, np.ones((1, 2)))
    assert not TextEmbeddingStore({"encoder": "two"}, tmp_path).get(d)[0].any()
    off = TextEmbeddingStore({"encoder": "one"}, False)
    off.put(d, np.ones((1, 2)))
    assert not off.enabled and not off.get(d)[0].any()


def test_text_store_damaged_shard_is_a_miss(store, caplog) -> None:
    from spurious.features import cache as features_cache
    from spurious.features.cache import text_digests

    d = text_digests(["a", "b"])
    store.put(d, np.ones((2, 3)))
    features_cache._MEMO.clear()
    for npy in store.folder.glob("*.npy"):
        data = bytearray(npy.read_bytes())
        data[-1] ^= 0x01
        npy.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING):
        found, _ = store.get(d)
    assert not found.any() and "unusable" in caplog.text


def test_text_store_merges_many_shards(store, monkeypatch) -> None:
    from spurious.features import cache as features_cache
    from spurious.features.cache import text_digests

    monkeypatch.setattr(features_cache, "MAX_SHARDS", 3)
    texts = [f"t{i}" for i in range(5)]
    for i, t in enumerate(texts):
        store.put(text_digests([t, "shared"]), np.full((2, 2), i, dtype=np.float32))
    assert len(store._shards()) <= 3
    found, got = store.get(text_digests([*texts, "shared"]))
    assert found.all()
    np.testing.assert_array_equal(got[:5, 0], np.arange(5))
