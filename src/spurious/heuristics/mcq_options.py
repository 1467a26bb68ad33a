"""Option texts of multiple-choice items: "all / none of the above" options and numbers.

Parsing only; the cues that use it live in :mod:`spurious.heuristics.mcq`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

__all__ = ["comparable_numbers", "is_all_or_none_option", "option_number"]

_ABOVE = r"(?:the\s+)?(?:above|these|those|them|(?:given\s+|listed\s+)?(?:options|choices|answers|statements|responses))"
_LETTER = r"\(?[a-j]\)?"
_META_PATTERNS = (
    re.compile(r"^(?:all|none|both|neither)\W*$"),  # the bare word
    re.compile(rf"^(?:all|none|both|neither)\s+(?:of\s+)?{_ABOVE}\b"),
    # Letter combinations: "A and B", "both (a) and (c)", "A, B and C only", "neither A nor B".
    re.compile(
        rf"^(?:both\s+)?{_LETTER}(?:\s*,\s*{_LETTER})*\s+(?:and|&)\s+{_LETTER}"
        r"\W*(?:only|are\s+(?:correct|true))?\W*$"
    ),
    re.compile(rf"^neither\s+{_LETTER}\s+nor\s+{_LETTER}\W*$"),
)


def is_all_or_none_option(text: str) -> bool:
    """Whether an option refers to the other options ("all / none / both of the above").

    Examples
    --------
    >>> [is_all_or_none_option(t) for t in ["All of the above", "none", "Both A and B",
    ...  "All animals breathe", "Neither (a) nor (b)."]]
    [True, True, True, False, True]
    """
    t = " ".join(str(text).lower().split())
    return any(p.match(t) for p in _META_PATTERNS)


_NUMBER_RE = re.compile(
    r"^(?P<sign>[-+\u2212])?\s*[$\u20ac\u00a3\u00a5]?\s*"
    r"(?P<num>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)"
    r"(?:\s*/\s*(?P<den>\d+(?:\.\d+)?))?"
    r"\s*(?P<unit>[^\d]{0,12}?)[.\s]*$"
)


def option_number(text: str) -> tuple[float, str] | None:
    """The number an option states, with its unit (``None`` if it is not a number).

    A sign, a currency symbol, thousands separators, a decimal part, a fraction
    ``a/b`` and a short unit without digits (``"m/s"``, ``"%"``, two words at most) are
    understood; anything else (``"3 x 10^8"``, a sentence) is not a number.

    Examples
    --------
    >>> option_number("-1,200.5 kg"), option_number("1/4"), option_number("about 3")
    ((-1200.5, 'kg'), (0.25, ''), None)
    """
    m = _NUMBER_RE.match(" ".join(str(text).split()))
    if m is None:
        return None
    unit = m.group("unit").strip().lower()
    if len(unit.split()) > 2:
        return None  # "2 is the answer": a sentence, not a quantity
    value = float(m.group("num").replace(",", ""))
    if m.group("den") is not None:
        den = float(m.group("den"))
        if den == 0:
            return None
        value /= den
    if m.group("sign") in ("-", "\u2212"):
        value = -value
    return value, unit


def comparable_numbers(parsed: Sequence[tuple[float, str] | None]) -> np.ndarray:
    """The numbers of one item's options, comparable with each other (NaN elsewhere).

    Only the options of the item's most common unit count; a tie between units, or fewer
    than two numbers of one unit, gives no number at all.

    Parameters
    ----------
    parsed : sequence of (float, str) or None
        :func:`option_number` of each option.

    Examples
    --------
    >>> comparable_numbers([option_number(t) for t in ["2 kg", "5 kg", "3 m", "cat"]])
    array([ 2.,  5., nan, nan])
    """
    units = Counter(p[1] for p in parsed if p is not None)
    out = np.full(len(parsed), np.nan)
    if not units:
        return out
    (unit, top), *rest = units.most_common()
    if top < 2 or (rest and rest[0][1] == top):
        return out
    for i, p in enumerate(parsed):
        if p is not None and p[1] == unit:
            out[i] = p[0]
    return out
