"""Executors: local (default) and Ray; AFLite gives the same result on both."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from spurious.data import Dataset
from spurious.data.synthetic import make_concentric_circles
from spurious.detectors.aflite import AFLite, chunk_partitions
from spurious.exceptions import MissingDependencyError, ParameterError
from spurious.execution import Executor, LocalExecutor, RayExecutor, make_executor
from spurious.models.partition import SklearnPartitionModel


def _square_plus(item, shared):
    return item * item + shared["offset"]


def _pinned_device(item, shared):
    from spurious.models.runtime import run_device

    return run_device()


def test_local_executor_keeps_order_and_passes_shared():
    ex = LocalExecutor()
    assert ex.map(_square_plus, [3, 1, 2], shared=ex.put({"offset": 1})) == [10, 2, 5]
    assert ex.map(_square_plus, [], shared={"offset": 0}) == []
    assert ex.n_workers == 1


def test_make_executor():
    assert isinstance(make_executor("local"), LocalExecutor)
    assert isinstance(make_executor(None), LocalExecutor)
    custom = LocalExecutor()
    assert make_executor(custom) is custom
    with pytest.raises(ParameterError, match="'executor' parameter"):
        make_executor("spark")


def test_missing_ray_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(MissingDependencyError, match=r"pip install 'spurious\[ray\]'"):
        make_executor("ray")
    with pytest.raises(MissingDependencyError, match="ray"):
        RayExecutor().map(_square_plus, [1], shared={"offset": 0})


def test_chunks_align_with_the_model_group_size():
    class Grouped:
        group_size = 16

    assert chunk_partitions(64, None, 3, Grouped()) == 32  # 22 rounded up to 2 groups
    assert chunk_partitions(64, 5, 1, Grouped()) == 16
    assert chunk_partitions(8, None, 1, object()) == 8


def _circles(n=300):
    c = make_concentric_circles(n=n, random_state=2)
    frame = pd.DataFrame({"text": [f"p{i}" for i in range(n)], "label": c.y})
    return Dataset.from_frame(frame, "text", label_names=["0", "1"]), c.X


class _Recording(Executor):
    """A local executor that records how the work was split."""

    def __init__(self):
        self.sizes: list[list[int]] = []

    def map(self, fn, items, *, shared=None):
        self.sizes.append([len(it["train_idx"]) for it in items])
        return [fn(it, shared) for it in items]


def test_aflite_splits_partitions_into_chunks_without_changing_results():
    ds, X = _circles()
    kw = dict(n_partitions=7, train_size=50, slice_size=30, max_rounds=2, features=X,
              model=SklearnPartitionModel(LogisticRegression(solver="liblinear")))  # fmt: skip
    rec = _Recording()
    a = AFLite(**kw, executor=rec, chunk_size=3).run(ds)
    b = AFLite(**kw).run(ds)
    # two rounds, then round 1's partitions again for the shuffled-label null
    assert rec.sizes == [[3, 3, 1], [3, 3, 1], [3, 3, 1]]
    pd.testing.assert_frame_equal(a.scores, b.scores)


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    yield ray
    if started:
        ray.shutdown()


def test_ray_executor_matches_local(ray_cluster):
    ex = RayExecutor()
    shared = ex.put({"offset": 1})
    assert ex.map(_square_plus, [3, 1, 2], shared=shared) == [10, 2, 5]
    assert ex.n_workers == 2
    ds, X = _circles()
    kw = dict(n_partitions=6, train_size=50, slice_size=30, max_rounds=3, features=X,
              model=SklearnPartitionModel(LogisticRegression(solver="liblinear")))  # fmt: skip
    local = AFLite(**kw).run(ds)
    remote = AFLite(**kw, executor=ex, chunk_size=2).run(ds)
    pd.testing.assert_frame_equal(local.scores, remote.scores)
    assert local.metrics == remote.metrics
    # Evaluation-set mode too.
    train, ev = ds.subset(np.arange(200)), ds.subset(np.arange(200, 300))
    kw["features"], kw["mode"] = (X[:200], X[200:]), "eval"
    a = AFLite(**kw).run(train, ev)
    b = AFLite(**kw, executor=ex).run(train, ev)
    pd.testing.assert_frame_equal(a.scores, b.scores)
    # The run's device reaches the worker processes (a local map's threads get it from
    # the copied context; a Ray task from carry_to_workers).
    from spurious.models.runtime import use_device

    assert ex.map(_pinned_device, [0, 1]) == [None, None]
    with use_device("cpu"):
        assert ex.map(_pinned_device, [0, 1]) == ["cpu", "cpu"]
    ex.close()  # did not start Ray: leaves the caller's cluster running
    assert ray_cluster.is_initialized()


def test_remote_calls_run_inside_the_carried_contexts():
    from spurious.execution import executor as executor_module
    from spurious.models.runtime import run_device, use_device

    assert (run_device, use_device) in executor_module._CARRIED  # registered on import
    assert executor_module._apply(_pinned_device, 0, None) is None
    assert executor_module._apply(_pinned_device, 0, None, [(use_device, "cpu")]) == "cpu"
    assert run_device() is None  # left again after the call


def test_local_executor_side_by_side_runs_calls_at_once_in_order(monkeypatch):
    import threading

    from spurious.execution import executor as executor_module

    monkeypatch.setattr(executor_module, "available_cores", lambda: 2)
    barrier = threading.Barrier(2, timeout=10)

    def meet(item, shared):  # only returns once two calls are running at the same time
        barrier.wait()
        return item * shared

    assert LocalExecutor().map(meet, [1, 2], shared=3, side_by_side=True) == [3, 6]
    # Without side_by_side the calls run one after another (the barrier would time out).
    assert LocalExecutor().map(lambda i, s: i + s, [1, 2], shared=3) == [4, 5]
