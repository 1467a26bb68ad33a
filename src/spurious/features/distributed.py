"""The sentence encoding on an executor: distinct texts in chunks, one task per chunk.

A text's vector does not depend on the texts it is encoded with (fixed length buckets,
one intra-op thread per batch: see :mod:`spurious.features.encoder`), so the texts can
be split into chunks encoded by different workers and put back together: the result
equals the local encoding. Workers load the model once per process; the encoder they
get is a fresh copy of the caller's settings with the precision the caller resolved,
so the vectors match the cache key the caller stores them under.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from spurious.execution import Executor

logger = logging.getLogger(__name__)

__all__ = ["chunk_texts", "encode_chunk", "encode_on"]

#: Fewest and most texts per task: small chunks pay a task's overhead (and the model
#: load of a fresh worker) too often; big ones leave workers idle at the end.
MIN_CHUNK, MAX_CHUNK = 256, 8192
#: Chunks per worker, so a slow worker does not hold up the rest.
CHUNKS_PER_WORKER = 4


def chunk_texts(n: int, n_workers: int) -> int:
    """Texts per task for ``n`` texts on ``n_workers`` workers.

    Examples
    --------
    >>> chunk_texts(20_000, 2), chunk_texts(500, 8), chunk_texts(10**7, 4)
    (2500, 256, 8192)
    """
    per = math.ceil(n / max(1, n_workers * CHUNKS_PER_WORKER))
    return int(min(MAX_CHUNK, max(MIN_CHUNK, per)))


def encode_chunk(texts: Sequence[str], encoder: Any) -> np.ndarray:
    """The executor task: ``encoder.encode(texts)`` in the worker (a module-level function,
    so Ray ships it by reference)."""
    return encoder.encode(list(texts))


def encode_on(
    executor: Executor, encoder: Any, texts: Sequence[str], *, progress: bool = False
) -> np.ndarray:
    """Embed ``texts`` (distinct, in order) with ``encoder`` on ``executor``.

    A local executor encodes in this process (``encoder.encode``, with its progress bar
    and worker threads); another splits the texts into chunks
    (:func:`chunk_texts`), one task each, and stacks the results in order.

    Parameters
    ----------
    executor : Executor
    encoder : SentenceEncoder
        Its :meth:`~spurious.features.encoder.SentenceEncoder.for_worker` copy is what the
        workers run.
    texts : sequence of str
    progress : bool, default=False
        A progress bar (local executor only).

    Examples
    --------
    >>> from spurious.execution import LocalExecutor
    >>> class Lengths:
    ...     def encode(self, texts, progress=False):
    ...         return np.array([[len(t)] for t in texts], dtype=np.float32)
    >>> encode_on(LocalExecutor(), Lengths(), ["ab", "c"]).ravel().tolist()
    [2.0, 1.0]
    """
    texts = list(texts)
    if not executor.remote:
        return encoder.encode(texts, progress=progress)
    size = chunk_texts(len(texts), executor.n_workers)
    chunks = [texts[i : i + size] for i in range(0, len(texts), size)]
    start = time.perf_counter()
    parts = executor.map(encode_chunk, chunks, shared=encoder.for_worker())
    logger.info(
        "encoded %d texts in %d chunks on %r in %.1fs",
        len(texts),
        len(chunks),
        executor,
        time.perf_counter() - start,
    )
    if not parts:
        return encoder.encode([])
    return np.concatenate(parts).astype(np.float32, copy=False)
