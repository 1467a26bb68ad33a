"""AFLite checkpoints: a run interrupted after round r and resumed gives the identical result."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from spurious.data import Dataset
from spurious.data.synthetic import make_concentric_circles
from spurious.detectors.aflite import AFLite
from spurious.detectors.aflite.checkpoint import STATE_FILE
from spurious.exceptions import AnalysisError
from spurious.models.partition import SklearnPartitionModel

FAST_LOGISTIC = LogisticRegression(solver="liblinear")


class Crashing:
    """The same model family, but raising on its ``crash_at``-th call (a killed run)."""

    def __init__(self, crash_at: int):
        self.inner = SklearnPartitionModel(FAST_LOGISTIC)
        self.crash_at = crash_at
        self.calls = 0

    def fit_predict(self, *args, **kwargs):
        self.calls += 1
        if self.calls >= self.crash_at:
            raise RuntimeError("injected failure")
        return self.inner.fit_predict(*args, **kwargs)

    def config(self):
        return self.inner.config()


def _data(n=400, seed=0):
    c = make_concentric_circles(n=n, random_state=seed)
    frame = pd.DataFrame({"id": [f"c{i}" for i in range(n)],
                          "text": [f"point {i}" for i in range(n)], "label": c.y})  # fmt: skip
    return Dataset.from_frame(frame, "text", label_names=["0", "1"]), c.X


def _kw(X, **extra):
    kw = dict(n_partitions=6, train_size=60, slice_size=20, model=SklearnPartitionModel(FAST_LOGISTIC),
              features=X, random_state=5)  # fmt: skip
    kw.update(extra)
    return kw


def _same(a, b):
    pd.testing.assert_frame_equal(a.scores, b.scores)
    assert a.metrics == b.metrics
    assert a.details == b.details


@pytest.fixture(scope="module")
def full():
    ds, X = _data()
    res = AFLite(**_kw(X)).run(ds)
    assert res.metrics["n_rounds"] >= 4  # the interruption below happens mid-run
    return ds, X, res


def test_resume_after_round_budget_is_identical(full, tmp_path):
    ds, X, uninterrupted = full
    part = AFLite(**_kw(X, checkpoint_dir=tmp_path, max_rounds=2)).run(ds)
    assert part.metrics["n_rounds"] == 2 and part.details["stop_reason"] == "max_rounds"
    resumed = AFLite(**_kw(X, checkpoint_dir=tmp_path)).run(ds)
    _same(resumed, uninterrupted)


def test_resume_after_a_crash_in_round_3_is_identical(full, tmp_path):
    ds, X, uninterrupted = full
    with pytest.raises(RuntimeError, match="injected"):
        AFLite(**_kw(X, checkpoint_dir=tmp_path, model=Crashing(crash_at=3))).run(ds)
    state = json.loads((tmp_path / STATE_FILE).read_text())
    assert state["rounds_done"] == 2 and state["stop_reason"] is None
    resumed = AFLite(**_kw(X, checkpoint_dir=tmp_path)).run(ds)
    _same(resumed, uninterrupted)
    # Only JSON and plain .npy files, readable without pickle, and no temp files.
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files and all(p.suffix in (".json", ".npy") for p in files)
    assert not [p for p in files if p.name.startswith(".")]
    for p in files:
        if p.suffix == ".npy":
            np.load(p, allow_pickle=False)


def test_finished_checkpoint_is_returned_without_refitting(full, tmp_path):
    ds, X, uninterrupted = full
    AFLite(**_kw(X, checkpoint_dir=tmp_path)).run(ds)
    # The filter is not refitted; only the verdict's shuffled-label null is recomputed
    # (one fit per partition and permutation: 6 here), so the 7th call would be a refit.
    again = AFLite(**_kw(X, checkpoint_dir=tmp_path, model=Crashing(crash_at=7))).run(ds)
    _same(again, uninterrupted)


def test_mismatched_checkpoint_is_a_clear_error_or_restarts(full, tmp_path):
    ds, X, _ = full
    AFLite(**_kw(X, checkpoint_dir=tmp_path, max_rounds=1)).run(ds)
    with pytest.raises(AnalysisError, match=r"different run: params.*tau 0.75 -> 0.8"):
        AFLite(**_kw(X, checkpoint_dir=tmp_path, tau=0.8)).run(ds)
    other, X2 = _data(seed=1)
    with pytest.raises(AnalysisError, match="dataset"):
        AFLite(**_kw(X2, checkpoint_dir=tmp_path)).run(other)
    restarted = AFLite(**_kw(X, checkpoint_dir=tmp_path, tau=0.8, max_rounds=2,
                             checkpoint_mismatch="restart")).run(ds)  # fmt: skip
    fresh = AFLite(**_kw(X, tau=0.8, max_rounds=2)).run(ds)
    _same(restarted, fresh)


def test_corrupted_checkpoint_is_detected(full, tmp_path):
    ds, X, _ = full
    AFLite(**_kw(X, checkpoint_dir=tmp_path, max_rounds=2)).run(ds)
    arr = next((tmp_path / "arrays").glob("train_removed_round.*.npy"))
    raw = bytearray(arr.read_bytes())
    raw[-1] ^= 0xFF
    arr.write_bytes(bytes(raw))
    with pytest.raises(AnalysisError, match="checksum"):
        AFLite(**_kw(X, checkpoint_dir=tmp_path)).run(ds)


def test_a_checkpoint_without_its_training_side_is_a_clear_error(full, tmp_path):
    ds, X, _ = full
    AFLite(**_kw(X, checkpoint_dir=tmp_path, max_rounds=2)).run(ds)
    state = json.loads((tmp_path / STATE_FILE).read_text())
    state["files"] = {k: v for k, v in state["files"].items() if not k.startswith("train/")}
    (tmp_path / STATE_FILE).write_text(json.dumps(state))
    with pytest.raises(AnalysisError, match="no training-side arrays"):
        AFLite(**_kw(X, checkpoint_dir=tmp_path)).run(ds)


def test_eval_mode_resume_is_identical(tmp_path):
    ds, X = _data(n=500)
    train, ev = ds.subset(np.arange(400)), ds.subset(np.arange(400, 500))
    kw = {**_kw((X[:400], X[400:])), "mode": "eval"}
    uninterrupted = AFLite(**kw).run(train, ev)
    AFLite(**{**kw, "checkpoint_dir": tmp_path, "max_rounds": 1}).run(train, ev)
    resumed = AFLite(**{**kw, "checkpoint_dir": tmp_path}).run(train, ev)
    _same(resumed, uninterrupted)
    assert resumed.metrics["n_rounds"] > 1


def test_unseeded_run_resumes_with_its_own_entropy(full, tmp_path):
    ds, X, _ = full
    part = AFLite(**_kw(X, checkpoint_dir=tmp_path, max_rounds=1, random_state=None)).run(ds)
    resumed = AFLite(**_kw(X, checkpoint_dir=tmp_path, random_state=None)).run(ds)
    assert resumed.details["entropy"] == part.details["entropy"]
    assert resumed.metrics["n_rounds"] > 1


def test_batched_model_resume_and_chunking_are_exact(tmp_path):
    """The batched model family builds its shared start once per run, on D: a resumed run
    rebuilds the same one, so resuming and executor chunking leave results bitwise equal."""
    from spurious.models.batched import BatchedLogisticRegression

    ds, X = _data(n=600, seed=1)
    rng = np.random.default_rng(0)
    X = np.hstack([X, rng.normal(size=(600, 12))]).astype(np.float32)

    def kw(**extra):
        model = BatchedLogisticRegression(device="cpu", chunk_size=4)
        return _kw(X, n_partitions=8, train_size=120, slice_size=30, model=model, **extra)

    whole = AFLite(**kw()).run(ds)
    assert whole.metrics["n_rounds"] >= 3
    AFLite(**kw(checkpoint_dir=tmp_path, max_rounds=2)).run(ds)
    _same(AFLite(**kw(checkpoint_dir=tmp_path)).run(ds), whole)
    _same(AFLite(**kw(chunk_size=4)).run(ds), whole)
