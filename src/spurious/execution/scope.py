"""The executor of a run: set once for the run, used by the steps every analysis shares.

Analyses that split their own work (AFLite, partial input, PVI, cartography, minority)
take an ``executor`` parameter. Steps that no single analysis owns, the shared sentence
encoding above all, run on the *current* executor instead: the one the runner set with
:func:`use_executor` for the run (``spurious audit --executor ray`` records it in the
run's config), else the local one.

Examples
--------
>>> current_executor()
LocalExecutor()
>>> with use_executor("local") as ex:
...     current_executor() is ex
True
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from spurious.execution.executor import Executor, LocalExecutor, make_executor

__all__ = ["current_executor", "resolve_executor", "use_executor"]

_CURRENT: ContextVar[Executor | None] = ContextVar("spurious_executor", default=None)


def current_executor() -> Executor:
    """The executor set by the innermost :func:`use_executor`, else a local one.

    Examples
    --------
    >>> current_executor().name
    'local'
    """
    ex = _CURRENT.get()
    return LocalExecutor() if ex is None else ex


@contextmanager
def use_executor(
    spec: str | Mapping[str, Any] | Executor | None = None,
    *,
    start: bool = True,
    close: bool | None = None,
) -> Iterator[Executor]:
    """Make ``spec`` the current executor inside the block.

    Parameters
    ----------
    spec : {"local", "ray"}, dict, Executor or None
        See :func:`~spurious.execution.make_executor`; ``None`` means local.
    start : bool, default=True
        Connect now (a Ray cluster is joined or started here, so every analysis of the
        run finds it running and none starts and stops its own).
    close : bool, optional
        Close the executor at the end of the block (a Ray instance it started is shut
        down). Default: when it was made here from a name or a dict; an
        :class:`Executor` passed in is left open.

    Examples
    --------
    >>> with use_executor({"kind": "local"}):
    ...     current_executor().name
    'local'
    """
    ex = make_executor(spec)
    owned = not isinstance(spec, Executor) if close is None else close
    token = _CURRENT.set(ex)
    try:
        if start:
            ex.start()
        yield ex
    finally:
        _CURRENT.reset(token)
        if owned:
            ex.close()


def resolve_executor(spec: str | Mapping[str, Any] | Executor | None) -> tuple[Executor, bool]:
    """``(executor, owned)`` for an ``executor`` argument: ``None`` is the current one;
    ``owned`` says whether the caller made it and must close it.

    Examples
    --------
    >>> resolve_executor(None)[0].name, resolve_executor("local")[1]
    ('local', True)
    """
    if spec is None:
        return current_executor(), False
    return make_executor(spec), not isinstance(spec, Executor)
