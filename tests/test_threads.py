"""Thread counts per kernel (spurious.utils.threads): the policy and its context manager."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from spurious.exceptions import ParameterError
from spurious.utils import threads
from spurious.utils.threads import kernel_threads, limit_threads

torch = pytest.importorskip("torch")


def _blas(api: str | None = None) -> list[int]:
    return [int(i["num_threads"]) for i in threadpool_info() if api in (None, i["user_api"])]


@pytest.fixture
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def test_limit_threads_sets_torch_and_blas_and_restores_them(two_threads):
    blas_before = _blas()
    with limit_threads(1):
        assert torch.get_num_threads() == 1
        assert set(_blas()) == {1}
    assert torch.get_num_threads() == 2
    assert _blas() == blas_before
    # restored when the block raises, and None changes nothing
    with pytest.raises(RuntimeError), limit_threads(1):
        raise RuntimeError("boom")
    assert torch.get_num_threads() == 2 and _blas() == blas_before
    with limit_threads(None):
        assert torch.get_num_threads() == 2


def test_blocks_on_worker_threads_side_by_side_restore_every_setting(two_threads):
    blas_before = _blas("blas")
    inside = threading.Barrier(2)
    seen = []

    def work():
        with limit_threads(1):
            inside.wait()  # both blocks are open at once
            # this thread's OpenMP and torch counts; the process-wide BLAS pools are
            # the main thread's to limit
            seen.append((set(_blas("openmp")), torch.get_num_threads(), _blas("blas")))
            inside.wait()

    workers = [threading.Thread(target=work) for _ in range(2)]
    with limit_threads(1):  # the main thread limits BLAS around its workers
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    ones = [1] * len(blas_before)
    assert seen == [({1}, 1, ones), ({1}, 1, ones)]
    assert _blas("blas") == blas_before
    assert torch.get_num_threads() == 2


def test_kernel_threads_policy(monkeypatch, two_threads):
    assert kernel_threads("probe") == 1
    assert kernel_threads("small_fits") == 1
    monkeypatch.setattr(threads, "_available_cores", lambda: 2)
    # a quiet machine (load 0.3: our own process) gives the GEMM torch's 2 threads
    monkeypatch.setattr(threads, "_load", lambda: 0.3)
    assert kernel_threads("gemm") == 2
    # another job on one of the 2 cores: one thread (2 took 2.2x the wall time)
    monkeypatch.setattr(threads, "_load", lambda: 1.6)
    assert kernel_threads("gemm") == 1
    monkeypatch.setattr(threads, "_load", lambda: 9.0)
    assert kernel_threads("gemm") == 1
    # never more than torch was given
    monkeypatch.setattr(threads, "_available_cores", lambda: 16)
    monkeypatch.setattr(threads, "_load", lambda: 0.0)
    assert kernel_threads("gemm") == 2
    with pytest.raises(ParameterError, match=r"'kernel'.*'probe'.*'nope'"):
        kernel_threads("nope")
    with pytest.raises(ParameterError, match=r"'n'.*>= 1.*0"), limit_threads(0):
        pass


def test_probe_and_batched_model_leave_the_thread_setting_as_they_found_it(two_threads):
    from spurious.models.batched import BatchedLogisticRegression
    from spurious.models.linear import LogisticProbe

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 8)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64)
    calls = []
    real = torch.set_num_threads

    def spy(n):
        calls.append(n)
        real(n)

    torch.set_num_threads = spy
    try:
        probe = LogisticProbe().fit(X, y)
        idx = np.stack([rng.choice(300, 100, replace=False) for _ in range(2)])
        BatchedLogisticRegression(device="cpu").fit_predict(X, y, idx, 2)
    finally:
        torch.set_num_threads = real
    assert (probe.predict(X) == y).mean() > 0.95
    # the fits ran on one thread ("probe", "small_fits") and put 2 back
    assert calls[0] == 1 and calls[-1] == 2
    assert torch.get_num_threads() == 2


def test_the_load_of_other_jobs_leaves_out_this_process(monkeypatch):
    # This process kept 2 cores busy for 10 minutes (an audit's previous step): the
    # 1-minute load average says 2.0, all of it ours, so other jobs' load is ~0.
    clock = {"wall": 1000.0, "cpu": 50.0}
    monkeypatch.setattr(threads, "_clock", lambda: clock["wall"])
    monkeypatch.setattr(threads, "_cpu_clock", lambda: clock["cpu"])
    monkeypatch.setattr(threads, "_OWN", {"wall": 1000.0, "cpu": 50.0, "avg": 0.0})
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (2.0, 1.9, 1.5))
    clock.update(wall=1600.0, cpu=50.0 + 2 * 600.0)
    assert threads._own_load() == pytest.approx(2.0, abs=1e-3)
    assert threads._load() == pytest.approx(0.0, abs=1e-3)
    monkeypatch.setattr(threads, "_available_cores", lambda: 2)
    assert kernel_threads("gemm") == min(2, torch.get_num_threads())
    # Then idle for a minute while another job takes both cores: the own share decays
    # as the kernel's average would (e^-1 of 2.0), the rest is the other job's.
    clock.update(wall=1660.0)
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (2.0, 1.9, 1.5))
    assert threads._own_load() == pytest.approx(2.0 * math.exp(-1.0), abs=1e-3)
    assert threads._load() == pytest.approx(2.0 - 2.0 * math.exp(-1.0), abs=1e-3)
    # Updates closer than half a second apart leave the average as it is.
    clock.update(wall=1660.2, cpu=clock["cpu"] + 0.2)
    assert threads._own_load() == pytest.approx(2.0 * math.exp(-1.0), abs=1e-3)
