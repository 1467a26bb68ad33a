"""CPU time and peak memory of a step of a run (each analysis, each shared artifact).

A run records how long each analysis and shared artifact took; at the scale of SNLI
(550k pairs) the user also needs to know which step needs the memory. The kernel keeps
one peak-RSS counter per process (``VmHWM``), which Linux lets a process reset by writing
``5`` to ``/proc/self/clear_refs``. :class:`PeakMeter` resets it at the start of each
step and folds the current peak into every step still open before each reset, so nested
steps (an artifact built inside an analysis) each get their own peak and the outer step
still sees the inner one's.

Resetting the counter is a process-wide side effect (a notebook measuring its own peak
would see it move), so it happens only when asked: ``SPURIOUS_PEAK_RSS=1`` in the
environment (the benchmarks set it). Without it, or off Linux, steps record CPU seconds
only.

Examples
--------
>>> meter = PeakMeter(enabled=False)
>>> with meter.span() as step:
...     _ = sum(range(1000))
>>> sorted(step)
['cpu_s']
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def peak_rss_gib() -> float | None:
    """The process' peak resident set size since the last reset (GiB); ``None`` off Linux."""
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 2**20
    except (OSError, ValueError, IndexError):
        return None
    return None


def _reset_peak() -> bool:
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return True


class PeakMeter:
    """Per-step CPU seconds and (when enabled) peak RSS, for nested steps.

    Parameters
    ----------
    enabled : bool, optional
        Measure peak memory (resets the process' peak counter). Default: the
        ``SPURIOUS_PEAK_RSS`` environment variable is ``1``.
    """

    def __init__(self, enabled: bool | None = None) -> None:
        if enabled is None:
            enabled = os.environ.get("SPURIOUS_PEAK_RSS", "") == "1"
        self.enabled = bool(enabled) and peak_rss_gib() is not None
        self._open: list[dict[str, float]] = []

    @contextmanager
    def span(self) -> Iterator[dict[str, float]]:
        """Measure the ``with`` block; the yielded dict holds ``cpu_s`` (and
        ``peak_rss_gib``) once the block ends."""
        out: dict[str, float] = {}
        cpu = time.process_time()
        if self.enabled:
            self._fold()
            if not _reset_peak():
                self.enabled = False
        running = {"peak": 0.0}
        self._open.append(running)
        try:
            yield out
        finally:
            # By identity: two open steps' records may be equal dicts.
            self._open[:] = [r for r in self._open if r is not running]
            out["cpu_s"] = round(time.process_time() - cpu, 3)
            if self.enabled:
                now = peak_rss_gib() or 0.0
                out["peak_rss_gib"] = round(max(running["peak"], now), 3)
                for other in self._open:  # the enclosing steps saw this peak too
                    other["peak"] = max(other["peak"], now)

    def _fold(self) -> None:
        """Before a reset: every open step keeps the peak reached so far."""
        now = peak_rss_gib() or 0.0
        for running in self._open:
            running["peak"] = max(running["peak"], now)
