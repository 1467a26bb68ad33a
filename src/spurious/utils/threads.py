"""CPU thread counts per kernel: the measured policy, and one context manager that applies it.

Measured with ``bench/bench_threads.py`` (``bench/results/threads.json``: medians of 3
interleaved runs on 2 cores shared with other jobs, load averages 4-12), wall time
against one thread:

=============================================  ==========  =====================
kernel                                         2 threads   2 units side by side
=============================================  ==========  =====================
partial-input probe, 8k x 384 embeddings       6.5-8.3x    0.98-1.0x
partial-input probe, 9.8k x 2.7k bag of words  20-23x      0.89-1.37x
AFLite round, 20k x 384 (m=64, t=5k)           2.9x        1.07x
AFLite round, SNLI bag of words (m=64)         13x         0.97x
AFLite round, 100k x 768 (m=32, one GEMM)      2.2-2.9x    (one group)
=============================================  ==========  =====================

An intra-op thread pool splits and joins every operation, and on a busy machine the join
waits for a descheduled thread; independent units on worker threads do not wait for
each other. Hence:

- **many small fits** (a probe per fold and condition, AFLite's classifier groups, dense
  below :attr:`~spurious.models.batched.BatchedLogisticRegression.parallel_groups_below`
  GEMM FLOPs or sparse, scikit-learn per partition): **one thread each**, independent
  fits side by side on worker threads where the caller has several
  (:func:`spurious.models.runtime.thread_map`: AFLite's groups;
  ``Executor.map(side_by_side=True)`` on the local executor: cartography's null
  trainings, and partial input's fold x condition fits when their row copies fit in
  memory together);
- **one large GEMM** (a dense AFLite group above that threshold): **every thread torch
  was given, as long as the machine has idle cores for them** (one more than the cores
  other jobs leave idle: the 1-minute load average less this process' own share), else
  one. On the busy machine above 2 threads took 2.2-2.9x the wall time of one, so there
  it gets one; on a quiet 2-core machine 2 threads ran the 100k x 768 round in 0.6x
  the wall time of one (3.38 vs 5.68 s, 2026-11-27; bench/results/threads.json).

:func:`limit_threads` sets torch's intra-op threads and every BLAS / OpenMP pool
(threadpoolctl) for a block and puts back what was set before, also when the block
raises. torch is changed only when it is already imported: this module never imports
it (listing analyses must not pay for torch).
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
import time
from collections.abc import Iterator

from spurious.exceptions import ParameterError

__all__ = ["KERNEL_THREADS", "kernel_threads", "limit_threads"]

#: Threads per kernel: an int, or ``"idle"`` (torch's own setting, capped at one more
#: than the idle cores). Measured in ``bench/results/threads.json``.
KERNEL_THREADS: dict[str, int | str] = {
    "probe": 1,  # a LogisticProbe fit per fold and condition
    "small_fits": 1,  # AFLite groups below the GEMM threshold, dense or sparse
    "gemm": "idle",  # one dense AFLite group above it
}


def _available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover  (macOS, Windows)
        return os.cpu_count() or 1


def kernel_threads(kernel: str) -> int:
    """Threads for ``kernel`` (a key of :data:`KERNEL_THREADS`): at least 1.

    ``"idle"`` is torch's intra-op setting when torch is imported (an
    ``OMP_NUM_THREADS`` or ``torch.set_num_threads`` choice caps it), else the cores
    this process may run on, and at most one more than the cores other jobs leave idle
    (the 1-minute load average less this process' own share).

    Examples
    --------
    >>> kernel_threads("probe")
    1
    >>> kernel_threads("gemm") >= 1
    True
    """
    if kernel not in KERNEL_THREADS:
        raise ParameterError(
            f"The 'kernel' argument must be one of {sorted(KERNEL_THREADS)}. Got {kernel!r} instead."
        )
    choice = KERNEL_THREADS[kernel]
    if choice == "idle":
        torch = sys.modules.get("torch")
        cores = _available_cores()
        given = int(torch.get_num_threads()) if torch is not None else cores
        return max(1, min(given, math.floor(cores - _load()) + 1))
    return max(1, int(choice))


#: This process' own CPU use as the 1-minute load average counts it: an exponential
#: moving average (time constant 60 s, the kernel's) of the cores it kept busy, brought
#: up to date whenever a kernel asks for its threads.
_clock, _cpu_clock = time.monotonic, time.process_time  # (replaced by the tests)
_OWN = {"wall": _clock(), "cpu": _cpu_clock(), "avg": 0.0}
_OWN_LOCK = threading.Lock()


def _own_load() -> float:
    """This process' share of the 1-minute load average (cores it kept busy, averaged
    the way the kernel averages the load; the CPU use between two updates is taken as
    even)."""
    with _OWN_LOCK:
        wall, cpu = _clock(), _cpu_clock()
        dt = wall - _OWN["wall"]
        if dt >= 0.5:  # a shorter interval's rate says little
            decay = math.exp(-dt / 60.0)
            rate = (cpu - _OWN["cpu"]) / dt
            _OWN.update(wall=wall, cpu=cpu, avg=_OWN["avg"] * decay + rate * (1.0 - decay))
        return _OWN["avg"]


def _load() -> float:
    """The load of other jobs: the 1-minute load average less this process' own share
    (0 where the platform has none). Without the subtraction an audit's own previous
    step (2 cores busy for minutes) left the next large GEMM one thread on a quiet
    2-core machine, where two ran it in 0.59x the wall time (bench/bench_threads.py,
    dense_gemm)."""
    try:
        total = float(os.getloadavg()[0])
    except (AttributeError, OSError):  # pragma: no cover  (Windows)
        return 0.0
    return max(0.0, total - _own_load())


@contextlib.contextmanager
def limit_threads(n: int | None, *, blas: bool = True) -> Iterator[None]:
    """Run the block with ``n`` torch intra-op threads and (``blas``) ``n`` BLAS and
    OpenMP threads; restore the previous settings on exit. ``None`` changes nothing.

    Safe to enter from worker threads running side by side: OpenMP's and torch's
    settings are per thread, and the process-wide BLAS pools are limited from the main
    thread only.

    Examples
    --------
    >>> import torch  # doctest: +SKIP
    >>> before = torch.get_num_threads()  # doctest: +SKIP
    >>> with limit_threads(1):  # doctest: +SKIP
    ...     torch.get_num_threads()
    1
    >>> torch.get_num_threads() == before  # doctest: +SKIP
    True
    """
    if n is None:
        yield
        return
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ParameterError(f"The 'n' argument must be an int >= 1 or None. Got {n!r} instead.")
    torch = sys.modules.get("torch")
    # Read torch's count first: threadpoolctl's OpenMP limit also reaches torch's pool.
    old = int(torch.get_num_threads()) if torch is not None else None
    with contextlib.ExitStack() as stack:
        if blas:
            stack.enter_context(_pool_limits(n))
        if torch is not None:
            torch.set_num_threads(n)
            stack.callback(torch.set_num_threads, old)  # undone before the BLAS limit
        yield


@contextlib.contextmanager
def _pool_limits(n: int) -> Iterator[None]:
    """threadpoolctl's limits for a block. OpenMP's count is per thread, so every block
    sets and restores its own thread's; BLAS pools are process-wide, so only the main
    thread changes them (worker threads running fits side by side would otherwise
    restore each other's settings; a caller that starts workers limits BLAS around
    them, as the batched model does)."""
    from threadpoolctl import threadpool_limits

    main = threading.current_thread() is threading.main_thread()
    with threadpool_limits(limits=n, user_api=None if main else "openmp"):
        yield
