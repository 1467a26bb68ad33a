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
  was given, as long as the machine has idle cores for them** (one more than the idle
  cores, from the 1-minute load average), else one. On the busy machine above 2
  threads took 2.2-2.9x the wall time of one, so there it gets one; idle cores are
  where a split GEMM can gain (not measured here: every run above had a busy machine).

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
    this process may run on, and at most one more than the cores the 1-minute load
    average leaves idle.

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


def _load() -> float:
    """The 1-minute load average (0 where the platform has none)."""
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):  # pragma: no cover  (Windows)
        return 0.0


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
