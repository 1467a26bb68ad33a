"""Numbers as the report shows them: finite checks, flags, metric and time formatting.

Pure functions of a value (no HTML); :mod:`spurious.report.cells` turns their text into
table cells.

Examples
--------
>>> from spurious.report.formatting import format_number
>>> format_number(0.5, "percent")
'50.0%'
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["MISSING", "as_flags", "cell_value", "finite", "format_number", "format_seconds"]

#: Shown for missing or non-finite numbers.
MISSING = "—"


def finite(value: Any) -> float | None:
    """``value`` as a float, or ``None`` when missing, non-numeric, non-finite or a bool.

    Examples
    --------
    >>> finite("0.5"), finite(float("nan")), finite(None), finite(True)
    (0.5, None, None, None)
    """
    if value is None or isinstance(value, bool | np.bool_):
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def as_flags(values: Any) -> np.ndarray:
    """Boolean flags from a column that may hold bools, 0/1 or missing values (False).

    Examples
    --------
    >>> as_flags([True, 0, 1.0, None]).tolist()
    [True, False, True, False]
    """
    return pd.to_numeric(pd.Series(values), errors="coerce").fillna(0).astype(bool).to_numpy()


def format_number(value: Any, kind: str = "auto", digits: int = 3) -> str:
    """Format a metric value for display.

    Parameters
    ----------
    value : number or None
        Missing, NaN and infinite values give ``"—"``.
    kind : {"auto", "float", "percent", "signed", "int"}
        ``percent`` multiplies by 100 and appends ``%``; ``signed`` always shows the sign.
    digits : int
        Decimals for ``float``/``signed`` (``percent`` uses two fewer, at least 1).

    Returns
    -------
    str

    Examples
    --------
    >>> format_number(0.61234), format_number(0.893, "percent"), format_number(0.25, "signed")
    ('0.612', '89.3%', '+0.250')
    >>> format_number(12000), format_number(float("nan"))
    ('12,000', '—')
    """
    f = finite(value)
    if f is None:
        return MISSING
    if kind == "percent":
        return f"{100.0 * f:.{max(digits - 2, 1)}f}%"
    if kind == "signed":
        return f"{f:+.{digits}f}"
    if kind == "int" or (
        kind == "auto"
        # Analyses store counts as floats (n_eval=200.0); show those as integers. 0 and 1
        # stay decimal because they are usually rates.
        and (isinstance(value, numbers.Integral) or (f.is_integer() and abs(f) >= 2))
        and abs(f) < 1e15
    ):
        return f"{round(f):,}"
    if f != 0 and (abs(f) < 10 ** (-digits) or abs(f) >= 1e7):
        return f"{f:.{digits}g}" if abs(f) >= 1e7 else f"{f:.2e}"
    if abs(f) >= 1000:
        return f"{f:,.1f}"
    return f"{f:.{digits}f}"


def format_seconds(value: Any) -> Any:
    """Seconds as ``"1.25 s"`` (minutes added past ten minutes); non-numbers unchanged.

    Examples
    --------
    >>> format_seconds(1.25), format_seconds(900), format_seconds("n/a")
    ('1.25 s', '900 s (15.0 min)', 'n/a')
    """
    f = finite(value)
    if f is None:
        return value
    return f"{f:,.2f} s" if f < 600 else f"{f:,.0f} s ({f / 60:.1f} min)"


def cell_value(value: Any) -> Any:
    """Unwrap numpy scalars so :func:`to_cell` formats them as numbers.

    Examples
    --------
    >>> import numpy as np
    >>> type(cell_value(np.float32(0.5)))
    <class 'float'>
    """
    if isinstance(value, np.generic):
        return value.item()
    return value
