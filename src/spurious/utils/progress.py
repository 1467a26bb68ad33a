"""When to show progress bars: where a person watches (a terminal or a notebook)."""

from __future__ import annotations

import sys

__all__ = ["default_progress"]


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
