"""Parameter checking with scikit-learn's constraint language.

We reuse scikit-learn's validated, well-tested constraint objects (``Interval``,
``StrOptions``...) rather than writing our own; failures are re-raised as
:class:`spurious.exceptions.ParameterError` with scikit-learn's message format:
"The 'k' parameter of AFLite must be an int in the range [1, inf). Got 0 instead."
"""

from __future__ import annotations

from typing import Any

from sklearn.utils._param_validation import (  # noqa: F401  (re-exported)
    Interval,
    InvalidParameterError,
    Options,
    StrOptions,
    validate_parameter_constraints,
)

from spurious.exceptions import ParameterError


def check_params(constraints: dict[str, list[Any]], params: dict[str, Any], owner: str) -> None:
    """Validate ``params`` against ``constraints``; raise :class:`ParameterError`.

    Examples
    --------
    >>> from numbers import Integral
    >>> check_params({"k": [Interval(Integral, 1, None, closed="left")]}, {"k": 0}, "AFLite")
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: The 'k' parameter of AFLite must be an int in the range [1, inf). Got 0 instead.
    """
    try:
        validate_parameter_constraints(constraints, params, caller_name=owner)
    except InvalidParameterError as e:
        raise ParameterError(str(e)) from None
