"""torch, imported lazily, and its CPU threads: one accessor, one context manager, one pool.

- :func:`import_torch`: the lazy ``import torch`` every module of :mod:`spurious.models`
  and :mod:`spurious.features` goes through (torch is an optional dependency, so no
  module imports it at import time);
- :func:`torch_threads`: run a block with ``n`` torch intra-op threads, then put back
  what was set;
- :func:`thread_map`: apply a function to items on worker threads, each with its own
  intra-op thread count (torch releases the GIL inside ops), or serially; what the
  sentence encoder, fine-tuning inference and the batched logistic regression run their
  batches with.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from spurious.exceptions import missing_dependency

T = TypeVar("T")
R = TypeVar("R")

__all__ = ["import_torch", "openmp_backend", "thread_map", "torch_threads"]


def import_torch(feature: str = "This feature", extra: str = "torch") -> Any:
    """The ``torch`` module; :class:`~spurious.exceptions.MissingDependencyError` naming
    ``feature`` and the extra that installs torch when it is missing.

    Examples
    --------
    >>> import_torch("Tests").__name__  # doctest: +SKIP
    'torch'
    """
    try:
        import torch
    except ImportError:
        raise missing_dependency("torch", extra, feature) from None
    return torch


@contextlib.contextmanager
def torch_threads(n: int | None = None, *, always_restore: bool = False) -> Iterator[None]:
    """Run the block with ``n`` torch intra-op threads (``None``: as set), then restore.

    ``always_restore`` sets the saved count again on exit even when ``n`` left it as it
    was: needed after worker threads called ``torch.set_num_threads``, which also
    changes torch's default for threads started later.

    Examples
    --------
    >>> import torch  # doctest: +SKIP
    >>> before = torch.get_num_threads()  # doctest: +SKIP
    >>> with torch_threads(1):  # doctest: +SKIP
    ...     torch.get_num_threads()
    1
    >>> torch.get_num_threads() == before  # doctest: +SKIP
    True
    """
    torch = import_torch("Thread settings")
    old = torch.get_num_threads()
    change = n is not None and n != old
    if not change and not always_restore:
        yield
        return
    if change:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


@functools.lru_cache(maxsize=1)
def openmp_backend() -> bool:
    """Whether torch's intra-op backend is OpenMP (per-thread settings need it; other
    backends share one global pool)."""
    torch = import_torch("Thread settings")
    try:
        return "parallel backend: OpenMP" in str(torch.__config__.parallel_info())
    except Exception:  # pragma: no cover  (exotic builds)
        return False


def thread_map(
    fn: Callable[[T], R],
    items: Iterable[T],
    *,
    workers: int,
    threads_each: int = 1,
    serial_threads: int | None = None,
    name: str = "spurious",
) -> Iterator[R]:
    """``fn(item)`` for every item, yielded in order.

    With ``workers > 1`` and more than one item, the items run on ``workers`` threads
    with ``threads_each`` torch intra-op threads each: for small models and short inputs
    whole batches side by side beat OpenMP splitting every op over the cores (no
    fork/join per op; +40% on 2 cores for the sentence encoder), and a batch's arithmetic
    is that of a ``threads_each``-thread run. Otherwise they run here, one after another,
    with ``serial_threads`` intra-op threads (``None``: as set). Either way torch's thread
    setting is what it was once the iterator is exhausted.

    Examples
    --------
    >>> list(thread_map(lambda x: x * x, [1, 2, 3], workers=2))  # doctest: +SKIP
    [1, 4, 9]
    """
    items = list(items)
    if workers > 1 and len(items) > 1:
        torch = import_torch("Parallel batches")
        # ``set_num_threads`` in a worker changes only that thread's OpenMP setting, plus
        # torch's default for new threads: restored on the way out.
        with (
            torch_threads(always_restore=True),
            ThreadPoolExecutor(
                workers,
                thread_name_prefix=name,
                initializer=torch.set_num_threads,
                initargs=(threads_each,),
            ) as pool,
        ):
            yield from pool.map(fn, items)
        return
    with torch_threads(serial_threads):
        for item in items:
            yield fn(item)
