"""One registry type for every name -> object table (analyses, sections, heuristics...).

Every table in the package that maps a user-facing name to a class or function uses
:class:`Registry`, so they share one policy: a name is registered once (a second,
different object under the same name is refused), and an unknown name raises
:class:`~spurious.exceptions.ParameterError` listing the known names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from spurious.exceptions import ParameterError

T = TypeVar("T")


class Registry(Generic[T]):
    """A name -> object table that refuses duplicates and lists known names in errors.

    Parameters
    ----------
    kind : str
        What the entries are, for messages ("analysis", "report section", "heuristic").

    Examples
    --------
    >>> colours = Registry("colour")
    >>> colours.register("red", 1)
    1
    >>> colours.get("red")
    1
    >>> colours.get("blue")
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: Unknown colour 'blue'; known: ['red'].
    >>> colours.register("red", 2)
    Traceback (most recent call last):
    ...
    ValueError: A colour named 'red' is already registered (1).
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}

    def register(self, name: str, obj: T, *, replace: bool = False) -> T:
        """Add ``obj`` under ``name``; the same object again is a no-op."""
        if not isinstance(name, str) or not name:
            raise TypeError(f"A {self.kind} needs a non-empty string name; got {name!r}.")
        existing = self._entries.get(name)
        if existing is not None and existing is not obj and not replace:
            what = getattr(existing, "__qualname__", repr(existing))
            raise ValueError(f"A {self.kind} named {name!r} is already registered ({what}).")
        self._entries[name] = obj
        return obj

    def decorator(self, name: str, *, replace: bool = False) -> Callable[[T], T]:
        """``@registry.decorator("name")`` registers the decorated object."""

        def wrap(obj: T) -> T:
            return self.register(name, obj, replace=replace)

        return wrap

    def unregister(self, name: str) -> None:
        """Remove ``name`` (tests and interactive use)."""
        self._entries.pop(name, None)

    def get(self, name: str, choices: list[str] | None = None) -> T:
        """The entry called ``name``; :class:`ParameterError` listing ``choices`` if unknown.

        ``choices`` narrows the names shown in the message (e.g. the heuristics of one
        task); it defaults to every registered name.
        """
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            known = sorted(self._entries) if choices is None else list(choices)
            raise ParameterError(f"Unknown {self.kind} {name!r}; known: {known}.") from None

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._entries)

    def items(self) -> list[tuple[str, T]]:
        """``(name, entry)`` pairs, sorted by name."""
        return sorted(self._entries.items())

    def values(self) -> list[T]:
        """Entries, sorted by name."""
        return [v for _, v in self.items()]

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.names()})"
