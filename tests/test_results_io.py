"""Atomic writes: content, permissions, no temp files left on success or failure."""

from __future__ import annotations

import os
import stat

import pytest

from spurious.utils.io import atomic_write_json, atomic_write_text, read_json


def test_atomic_write_text_and_permissions(tmp_path):
    p = atomic_write_text(tmp_path / "sub" / "a.txt", "hello")
    assert p.read_text() == "hello"
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~mask  # not mkstemp's 0600
    assert [f.name for f in p.parent.iterdir()] == ["a.txt"]


def test_failed_write_keeps_previous_file(tmp_path):
    target = tmp_path / "m.json"
    atomic_write_json(target, {"a": 1})

    class BoomError(Exception):
        pass

    def writer(_):
        raise BoomError

    from spurious.utils.io import atomic_write

    with pytest.raises(BoomError):
        atomic_write(target, writer)
    assert read_json(target) == {"a": 1}
    assert [f.name for f in tmp_path.iterdir()] == ["m.json"]


def test_json_nan_becomes_null(tmp_path):
    import numpy as np

    atomic_write_json(
        tmp_path / "x.json", {"a": np.float32(0.5), "b": float("nan"), "c": np.int64(3)}
    )
    assert read_json(tmp_path / "x.json") == {"a": 0.5, "b": None, "c": 3}
