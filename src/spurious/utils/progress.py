"""When to show progress bars: where a person watches (a terminal or a notebook)."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Iterator
from typing import Any

__all__ = ["Phases", "datasets_progress", "default_progress", "step_bar", "ticking"]


def default_progress() -> bool:
    """Progress bars by default where a person watches: a terminal or a notebook.

    Examples
    --------
    >>> isinstance(default_progress(), bool)
    True
    """
    try:
        from IPython import get_ipython

        if get_ipython() is not None:
            return True
    except ImportError:
        pass
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


@contextlib.contextmanager
def datasets_progress(enabled: bool) -> Iterator[None]:
    """Hugging Face ``datasets``' own bars ("Flattening the indices", "Saving the
    dataset") follow ours: off inside the block when ``enabled`` is false, then as before.

    Acts only when ``datasets`` is already imported (it is whenever a ``datasets`` object
    is at hand); importing it just to silence it would cost seconds on runs that never
    touch it. The environment variable ``HF_DATASETS_DISABLE_PROGRESS_BARS`` wins, as
    ``datasets`` documents: with it set to 0 the bars stay on.

    Examples
    --------
    >>> with datasets_progress(False):
    ...     pass
    """
    if enabled or "datasets" not in sys.modules:
        yield
        return
    from datasets.utils import logging as hf_logging

    if not hf_logging.is_progress_bar_enabled():
        yield  # off already: the user's setting stays
        return
    with warnings.catch_warnings():
        # HF_DATASETS_DISABLE_PROGRESS_BARS=0 keeps them on; datasets warns and obeys it.
        warnings.simplefilter("ignore")
        hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.enable_progress_bar()


class Phases:
    """One progress line for an analysis made of a few long steps: which step it is on,
    how many are done, how far the current step is (:meth:`advance`), the time so far (a
    no-op when ``enabled`` is false).

    While a step runs, the line's clock is redrawn every ``tick`` seconds from a
    background thread, so a step that is one long call (a k-means fit, a t-SNE map) still
    shows that the run is alive (a call that holds the GIL, such as SciPy's Ward
    linkage, stops the clock until it returns).

    Examples
    --------
    >>> with Phases("peco", ["clustering", "null"], enabled=False) as p:
    ...     p.start("clustering")
    ...     p.start("null")
    ...     p.advance(50, 100, "perm")
    """

    def __init__(
        self, desc: str, phases: list[str], *, enabled: bool, tick: float | None = 1.0
    ) -> None:
        from tqdm.auto import tqdm

        self._bar = tqdm(
            total=len(phases),
            desc=desc,
            disable=not enabled,
            leave=False,
            bar_format="{desc}: {n}/{total} steps{postfix} [{elapsed}]",
        )
        self._started = False
        self._phase = ""
        self._since = self._shown = time.monotonic()
        self._ticker = _Ticker(self._bar, tick) if enabled and tick else None

    def start(self, phase: str) -> None:
        """Mark the previous step done and say which one runs now."""
        if self._started:
            self._bar.update(1)
        self._started = True
        self._phase = phase
        self._since = time.monotonic()
        self._bar.set_postfix_str(f"now {phase}")  # tqdm puts ", " before it

    def advance(self, done: int, total: int, unit: str = "it") -> None:
        """How far the current step is: ``done`` of ``total`` ``unit`` and the rate.

        Redrawn at most twice a second (and at the end), so callers may report every
        replicate of a loop.
        """
        if self._bar.disable:
            return
        now = time.monotonic()
        if done < total and now - self._shown < 0.5:
            return
        self._shown = now
        per_s = done / max(now - self._since, 1e-9)
        # as tqdm writes rates: 1.2k unit/s, not 1.2e+03; 12.5 s/unit below one a second
        rate = (
            f"{self._bar.format_sizeof(per_s)} {unit}/s"
            if per_s >= 1
            else f"{1 / per_s:.1f} s/{unit}"
        )
        self._bar.set_postfix_str(f"now {self._phase} {done}/{total} {unit} ({rate})")

    def close(self) -> None:
        """Mark the last step done and remove the line."""
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None
        if self._started:
            self._bar.update(1)
            self._started = False
        self._bar.close()

    def __enter__(self) -> Phases:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Ticker:
    """Redraws a bar every ``interval`` seconds (its elapsed time) until stopped or until
    the bar is closed or dropped (it holds the bar weakly: a bar abandoned by an error
    does not keep a thread drawing it)."""

    def __init__(self, bar: Any, interval: float) -> None:
        self._bar, self._interval = weakref.ref(bar), float(interval)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="spurious-progress", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopped.wait(self._interval):
            bar = self._bar()
            if bar is None or bar.disable:
                return
            # Under tqdm's lock, and only while open: close() marks the bar closed before
            # it takes the lock to clear the line, so a redraw can never follow the clear.
            with bar.get_lock():
                if not bar.disable:
                    bar.refresh(nolock=True)
            del bar

    def stop(self) -> None:
        self._stopped.set()
        if threading.current_thread() is not self._thread:
            self._thread.join()


@contextlib.contextmanager
def ticking(bar: Any, interval: float = 1.0) -> Iterator[Any]:
    """Redraw ``bar`` every ``interval`` seconds inside the block, so that its clock runs
    through a step that is one long call (a k-means fit, a t-SNE map); nothing when the bar
    is disabled.

    Examples
    --------
    >>> with step_bar("minority", 2, enabled=False) as bar, ticking(bar):
    ...     bar.update(2)
    """
    ticker = None if getattr(bar, "disable", True) else _Ticker(bar, interval)
    try:
        yield bar
    finally:
        if ticker is not None:
            ticker.stop()


def step_bar(
    desc: str,
    total: float | None,
    *,
    enabled: bool,
    unit: str = "it",
    unit_scale: bool = False,
    initial: float = 0,
    tick: float | None = 1.0,
) -> Any:
    """A progress bar for one long step of an analysis: what it does (``desc``), how far
    (``n/total``), the rate in ``unit``/s; on stderr (a widget in notebooks), removed when
    it closes so that the analysis' result line takes its place; a no-op bar when
    ``enabled`` is false.

    Update it per chunk, fold, epoch or replicate, never per example in a hot loop. Its
    clock is redrawn every ``tick`` seconds in between (``None``: only on updates), so
    that a slow item (one fit of many seconds) does not look like a hang.

    Examples
    --------
    >>> with step_bar("fairness: adversary runs", 3, enabled=False, unit="run") as bar:
    ...     bar.update(1)
    """
    from tqdm.auto import tqdm

    bar = tqdm(
        total=total,
        desc=desc,
        unit=unit,
        unit_scale=unit_scale,
        initial=initial,
        disable=not enabled,
        leave=False,
        dynamic_ncols=True,
    )
    if enabled and tick:
        _Ticker(bar, tick)  # ends when the bar is closed (or dropped)
    return bar
