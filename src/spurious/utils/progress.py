"""When to show progress bars: where a person watches (a terminal or a notebook)."""

from __future__ import annotations

import sys

__all__ = ["Phases", "default_progress"]


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


class Phases:
    """One progress line for an analysis made of a few long steps: which step it is on,
    how many are done, the time so far (a no-op when ``enabled`` is false).

    Examples
    --------
    >>> with Phases("peco", ["clustering", "null"], enabled=False) as p:
    ...     p.start("clustering")
    ...     p.start("null")
    """

    def __init__(self, desc: str, phases: list[str], *, enabled: bool) -> None:
        from tqdm.auto import tqdm

        self._bar = tqdm(
            total=len(phases),
            desc=desc,
            disable=not enabled,
            leave=False,
            bar_format="{desc}: {n}/{total} steps{postfix} [{elapsed}]",
        )
        self._started = False

    def start(self, phase: str) -> None:
        """Mark the previous step done and say which one runs now."""
        if self._started:
            self._bar.update(1)
        self._started = True
        self._bar.set_postfix_str(f"now {phase}")  # tqdm puts ", " before it

    def close(self) -> None:
        """Mark the last step done and remove the line."""
        if self._started:
            self._bar.update(1)
            self._started = False
        self._bar.close()

    def __enter__(self) -> Phases:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
