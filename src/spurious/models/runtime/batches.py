"""The batched no-grad forward pass: batches of tokenised texts, run on CPU worker threads.

One pass serves the sentence encoder (:mod:`spurious.features.encoder`) and fine-tuning
inference (:mod:`spurious.models.finetune.inference`):

* texts are tokenised once, unpadded, and batched by length, longest first, so a batch
  pads little (NLI sentences are short: fixed padding would waste most of the compute).
  Two plans: :func:`length_buckets` (every batch holds one exact length and a fixed
  number of rows, so a text's vector does not depend on its companions: what the
  sentence encoder caches per text) and :func:`sorted_batches` (length-sorted rows, each
  batch padded to its longest: fine-tuning's passes). On CPU a batch also holds at most
  :data:`CPU_TOKENS_PER_BATCH` padded tokens (the working set that measured fastest);
* :func:`forward_batches` runs a function over the batches under
  ``torch.inference_mode()`` and the autocast precision, on CPU with whole batches on
  worker threads (:func:`cpu_workers`, :func:`~spurious.models.runtime.threads.thread_map`)
  instead of splitting every matmul over the cores.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

import numpy as np

from spurious.models.runtime.hardware import inference_context
from spurious.models.runtime.threads import openmp_backend, thread_map

B = TypeVar("B")
R = TypeVar("R")

__all__ = [
    "CPU_TOKENS_PER_BATCH",
    "cpu_workers",
    "forward_batches",
    "length_buckets",
    "rows_per_bucket_batch",
    "sorted_batches",
]

#: Padded tokens per CPU batch (measured sweet spot of the sentence encoder).
CPU_TOKENS_PER_BATCH = 1024


def rows_per_bucket_batch(length: int, batch_size: int, on_cpu: bool) -> int:
    """Rows of every batch of texts of ``length`` tokens in :func:`length_buckets`.

    On CPU a batch also holds at most :data:`CPU_TOKENS_PER_BATCH` tokens: smaller
    working sets stay in cache (measured ~+10% over 128 short sentences per batch), and
    long inputs get proportionally fewer rows so memory stays flat.

    Examples
    --------
    >>> rows_per_bucket_batch(10, 128, True), rows_per_bucket_batch(10, 128, False)
    (102, 128)
    """
    if on_cpu:
        return max(1, min(batch_size, CPU_TOKENS_PER_BATCH // max(1, length)))
    return batch_size


def length_buckets(
    lengths: np.ndarray, batch_size: int, on_cpu: bool
) -> list[tuple[np.ndarray, int]]:
    """Batches of row indices of equal token length: ``(rows, batch rows)`` each.

    Longest lengths first (the peak memory shows up in the first batch, not the last).
    Every batch of a length has :func:`rows_per_bucket_batch` rows; the last one of a
    length has fewer real rows, and ``batch rows`` says how many rows to run it with
    (the caller fills it up, so every batch of a length has one shape).

    Examples
    --------
    >>> [(r.tolist(), s) for r, s in length_buckets(np.array([3, 5, 3]), 8, False)]
    [([1], 8), ([0, 2], 8)]
    """
    batches = []
    for length in sorted(set(lengths.tolist()), reverse=True):
        rows = np.flatnonzero(lengths == length)
        size = rows_per_bucket_batch(int(length), batch_size, on_cpu)
        batches.extend((rows[lo : lo + size], size) for lo in range(0, len(rows), size))
    return batches


def sorted_batches(
    lengths: np.ndarray, rows: np.ndarray, batch_size: int, on_cpu: bool
) -> list[np.ndarray]:
    """``rows`` sorted by length, longest first, cut into batches of at most
    ``batch_size`` rows; on CPU also at most :data:`CPU_TOKENS_PER_BATCH` padded tokens
    (small working sets stay in cache; long inputs get fewer rows, so memory stays flat).

    Examples
    --------
    >>> [b.tolist() for b in sorted_batches(np.array([3, 600, 5]), np.arange(3), 2, True)]
    [[1], [2, 0]]
    """
    order = rows[np.argsort(-lengths[rows], kind="stable")]
    batches, start = [], 0
    while start < len(order):
        size = batch_size
        if on_cpu:
            size = max(1, min(batch_size, CPU_TOKENS_PER_BATCH // int(lengths[order[start]])))
        batches.append(order[start : start + size])
        start += size
    return batches


def cpu_workers(total: int, max_workers: int, *, split_threads: bool = False) -> tuple[int, int]:
    """``(worker threads, intra-op threads each)`` for a CPU pass with ``total`` threads.

    One worker with every thread when there is one thread or torch's backend is not
    OpenMP (per-thread settings need it); otherwise up to ``max_workers`` workers with
    one intra-op thread each (a batch's arithmetic is then that of a one-thread run on
    any machine), or with ``split_threads`` the ``total // workers`` threads left each.

    Examples
    --------
    >>> cpu_workers(1, 8)
    (1, 1)
    """
    if total <= 1 or not openmp_backend():
        return 1, total
    workers = min(total, max_workers)
    return workers, (max(1, total // workers) if split_threads else 1)


def forward_batches(
    fn: Callable[[B], R],
    batches: Iterable[B],
    *,
    device: str,
    precision: str,
    workers: int = 1,
    threads_each: int = 1,
    serial_threads: int | None = None,
    name: str = "spurious-forward",
) -> Iterator[R]:
    """``fn(batch)`` for every batch, in order, each under ``torch.inference_mode()`` and
    the autocast of ``precision`` on ``device``.

    ``workers``, ``threads_each`` and ``serial_threads`` are those of
    :func:`~spurious.models.runtime.threads.thread_map` (see :func:`cpu_workers`); the
    modes are entered in the thread that runs the batch (they are thread-local).
    """

    def one(batch: B) -> R:
        with inference_context(device, precision):
            return fn(batch)

    return thread_map(
        one,
        batches,
        workers=workers,
        threads_each=threads_each,
        serial_threads=serial_threads,
        name=name,
    )
