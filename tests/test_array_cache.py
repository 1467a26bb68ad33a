"""ArrayCache: one dtype per cache, and the sweep of temp files left by interrupted writes."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from spurious.features.cache import FeatureCache
from spurious.heuristics.base import HeuristicCache
from spurious.utils import cache as cache_mod
from spurious.utils.cache import ArrayCache, remove_stale_temp_files

KEY = {"dataset": "f00d", "what": "values"}


def test_dtype_is_fixed_per_cache(tmp_path: Path) -> None:
    values = np.array([1 / 3, np.nan, 2.0])
    wide = ArrayCache(tmp_path, dtype=np.float64)
    assert wide.put(KEY, values).dtype == np.float64
    np.testing.assert_array_equal(wide.get(KEY), values)  # exact, NaN kept
    # The same folder read with another dtype: the entry does not fit, so it is rebuilt.
    assert ArrayCache(tmp_path, dtype=np.float32).get(KEY) is None
    assert wide.get(KEY) is None


def test_feature_and_heuristic_caches_are_array_caches(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(cache_mod.CACHE_ENV_VAR, str(tmp_path / "root"))
    assert FeatureCache().dtype == np.float32 and HeuristicCache().dtype == np.float64
    assert FeatureCache().root == tmp_path / "root"
    assert HeuristicCache().root == tmp_path / "root" / "heuristics"
    assert isinstance(FeatureCache(False), ArrayCache) and not HeuristicCache(False).enabled
    assert repr(HeuristicCache(tmp_path)) == f"HeuristicCache({str(tmp_path)!r}, dtype='float64')"


def _tmp_file(root: Path, age_s: float, name: str | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    p = root / (name or f".{'ab' * 16}.npy.k3j2h1.tmp")
    p.write_bytes(b"half an array")
    t = time.time() - age_s
    os.utime(p, (t, t))
    return p


def test_stale_temp_files_are_removed_fresh_and_foreign_ones_kept(tmp_path: Path) -> None:
    stale = _tmp_file(tmp_path, 2 * 3600)
    stale_json = _tmp_file(tmp_path, 2 * 3600, f".{'cd' * 16}.json.x9.tmp")
    fresh = _tmp_file(tmp_path, 10, f".{'ef' * 16}.npy.q1.tmp")  # a write in progress
    foreign = _tmp_file(tmp_path, 2 * 3600, ".notes.txt.tmp")  # not a cache entry's
    assert remove_stale_temp_files(tmp_path) == 2
    assert not stale.exists() and not stale_json.exists()
    assert fresh.exists() and foreign.exists()
    assert remove_stale_temp_files(tmp_path / "missing") == 0


def test_opening_a_cache_sweeps_its_folder_once(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(cache_mod, "_SWEPT", set())
    stale = _tmp_file(tmp_path, 2 * 3600)
    FeatureCache(tmp_path)
    assert not stale.exists()
    again = _tmp_file(tmp_path, 2 * 3600)
    HeuristicCache(tmp_path)  # this process swept the folder already
    assert again.exists()


def test_disabled_cache_touches_no_folder(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(cache_mod, "_SWEPT", set())
    calls: list[Path] = []
    monkeypatch.setattr(cache_mod, "remove_stale_temp_files", calls.append)
    ArrayCache(False)
    assert calls == []


@pytest.mark.parametrize("dtype", [np.float16, np.int64, np.bool_])
def test_other_dtypes_round_trip(tmp_path: Path, dtype) -> None:
    cache = ArrayCache(tmp_path, dtype=dtype)
    stored = cache.put(KEY, np.arange(6).reshape(2, 3) % 2)
    got = cache.get(KEY)
    assert got is not None and got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, stored)
