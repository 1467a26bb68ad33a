"""Values outside a parameter's declared constraints, for the ``invalid_parameters`` check.

For each constraint of :mod:`spurious.utils.validation`: a value of no accepted type,
one past each bound of an ``Interval`` (and an excluded bound itself), a string outside a
``StrOptions``; :func:`is_invalid` keeps those no other constraint of the parameter accepts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral
from typing import Any

from spurious.exceptions import ParameterError
from spurious.utils.validation import Interval, StrOptions, check_params

__all__ = ["describe_constraints", "invalid_values", "is_invalid"]


class _NoAcceptedType:
    """A value of a type no declared constraint accepts."""

    def __repr__(self) -> str:
        return "<an object of no accepted type>"


def invalid_values(constraints: Sequence[Any]) -> list[Any]:
    """Candidate values outside ``constraints`` (filtered by the constraints themselves)."""
    out: list[Any] = [_NoAcceptedType()]
    for c in constraints:
        if isinstance(c, Interval):
            integral = issubclass(c.type, Integral)
            if c.left is not None:
                out.append(math.ceil(c.left) - 1 if integral else float(c.left) - 1.0)
                if c.closed in ("right", "neither"):  # the excluded bound itself
                    out.append(int(c.left) if integral else float(c.left))
            if c.right is not None:
                out.append(math.floor(c.right) + 1 if integral else float(c.right) + 1.0)
                if c.closed in ("left", "neither"):
                    out.append(int(c.right) if integral else float(c.right))
        elif isinstance(c, StrOptions):
            out.append("__no_such_option__")
    return out


def is_invalid(constraints: Sequence[Any], name: str, value: Any) -> bool:
    """Whether ``value`` is outside the constraints of the parameter ``name``."""
    try:
        check_params({name: list(constraints)}, {name: value}, "probe")
    except ParameterError:
        return True
    return False


def describe_constraints(constraints: Sequence[Any]) -> str:
    """The constraints as text: ``int or Interval(...)``."""
    return " or ".join(c.__name__ if isinstance(c, type) else str(c) for c in constraints)
