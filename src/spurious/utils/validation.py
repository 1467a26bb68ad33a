"""Parameter checking with scikit-learn's constraint language: the one place that uses it.

We reuse scikit-learn's validated, well-tested constraint objects (``Interval``,
``StrOptions``...) rather than writing our own; failures are re-raised as
:class:`spurious.exceptions.ParameterError` with scikit-learn's message format:
"The 'k' parameter of AFLite must be an int in the range [1, inf). Got 0 instead."

Those objects live in scikit-learn's *private* module ``sklearn.utils._param_validation``,
which may change in any release. This module is the only one in the package that
imports it (everything else imports the names below from here, and estimators call
:func:`check_params` rather than scikit-learn's private ``BaseEstimator._validate_params``),
``pyproject.toml`` pins scikit-learn to the versions verified (:data:`SKLEARN_VERSIONS`),
and ``tests/test_validation.py`` fails if the private API changes shape.
"""

from __future__ import annotations

from numbers import Integral
from typing import Any

from spurious.exceptions import ParameterError

#: scikit-learn versions whose private parameter validation has been verified; keep in
#: step with the pin in ``pyproject.toml`` (a test compares the two).
SKLEARN_VERSIONS = ">=1.3,<1.10"

try:
    from sklearn.utils._param_validation import (
        HasMethods,
        Interval,
        InvalidParameterError,
        Options,
        RealNotInt,
        StrOptions,
        validate_parameter_constraints,
    )
except ImportError as e:  # pragma: no cover  (an unsupported scikit-learn release)
    import sklearn

    raise ImportError(
        f"spurious needs scikit-learn{SKLEARN_VERSIONS}: the installed scikit-learn "
        f"{sklearn.__version__} moved the parameter validation spurious builds on ({e}). "
        f"Install a supported version: pip install 'scikit-learn{SKLEARN_VERSIONS}'."
    ) from e

__all__ = [
    "SKLEARN_VERSIONS",
    "HasMethods",
    "Interval",
    "InvalidParameterError",
    "Options",
    "RealNotInt",
    "StrOptions",
    "check_params",
    "check_seed",
]


def check_params(constraints: dict[str, list[Any]], params: dict[str, Any], owner: str) -> None:
    """Validate ``params`` against ``constraints``; raise :class:`ParameterError`.

    Parameters
    ----------
    constraints : dict of str to list
        Per parameter, the accepted constraints (any one suffices): the classes of this
        module (``Interval``, ``StrOptions``, ``Options``, ``HasMethods``), a type,
        ``None`` or one of scikit-learn's constraint strings (``"boolean"``,
        ``"random_state"``, ``"array-like"``...). Parameters without an entry are not
        checked.
    params : dict of str to object
        The values, e.g. ``estimator.get_params(deep=False)``.
    owner : str
        The class or function named in the message.

    Raises
    ------
    ParameterError
        For the first parameter that satisfies none of its constraints.

    Examples
    --------
    >>> from numbers import Integral
    >>> check_params({"k": [Interval(Integral, 1, None, closed="left")]}, {"k": 3}, "AFLite")
    >>> check_params({"k": [Interval(Integral, 1, None, closed="left")]}, {"k": 0}, "AFLite")
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: The 'k' parameter of AFLite must be an int in the range [1, inf). Got 0 instead.
    """
    try:
        validate_parameter_constraints(constraints, params, caller_name=owner)
    except InvalidParameterError as e:
        raise ParameterError(str(e)) from None


def check_seed(value: Any, what: str = "'seed' parameter") -> int:
    """``value`` as a seed: an int in ``[0, 2**32 - 1]`` (``None``: 0), else one message.

    The range is what numpy's and scikit-learn's ``RandomState`` accept.

    Examples
    --------
    >>> check_seed(3), check_seed(None)
    (3, 0)
    >>> check_seed("abc")
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: The 'seed' parameter must be an int in the range [0, 4294967295]. Got 'abc' (str) instead.
    """
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, Integral) or not 0 <= int(value) < 2**32:
        raise ParameterError(
            f"The {what} must be an int in the range [0, {2**32 - 1}]. Got {value!r} "
            f"({type(value).__name__}) instead."
        )
    return int(value)
