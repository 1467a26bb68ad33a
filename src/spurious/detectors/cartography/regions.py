"""Data-map regions and anti-biased examples by rank (paper 002 Sec. 3, Swayamdipta et al.).

:func:`assign_regions` gives each example one region (easy-to-learn, hard-to-learn,
ambiguous, other) from its confidence and variability; :func:`anti_biased_mask` marks
the q% most hard-to-learn examples; :func:`top_k_count` is the rounding both use.
Plain functions on arrays: the analysis applies them per view in
:mod:`~spurious.detectors.cartography.maps`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from spurious.exceptions import ParameterError

#: Region names, in the order the report lists them.
REGIONS = ("easy_to_learn", "ambiguous", "hard_to_learn", "other")


def top_k_count(fraction: float, n: int) -> int:
    """``round(fraction * n)`` with halves rounded up (Python's ``round`` goes to even).

    Examples
    --------
    >>> top_k_count(0.21, 90), top_k_count(0.25, 10), top_k_count(0.0, 5)
    (19, 3, 0)
    """
    return math.floor(fraction * n + 0.5)


def _lowest(values: np.ndarray, k: int) -> np.ndarray:
    """Mask of the ``k`` smallest values; ties go to the earlier row (stable sort)."""
    mask = np.zeros(len(values), dtype=bool)
    mask[np.argsort(values, kind="stable")[:k]] = True
    return mask


def anti_biased_mask(confidence: Any, fraction: float) -> np.ndarray:
    """The ``fraction`` most hard-to-learn examples: lowest confidence (paper 002 Sec. 3).

    Exactly :func:`top_k_count` ``(fraction, n)`` examples are marked; among equal
    confidences the earlier row is taken.

    Parameters
    ----------
    confidence : array-like of float
        Mean gold-label probability per example.
    fraction : float in [0, 1]
        q / 100.

    Returns
    -------
    numpy.ndarray of bool

    Examples
    --------
    >>> anti_biased_mask([0.9, 0.1, 0.5, 0.3], 0.5).tolist()
    [False, True, False, True]
    """
    conf = np.asarray(confidence, dtype=float)
    if not 0.0 <= fraction <= 1.0:
        raise ParameterError(f"The 'fraction' argument must be in [0, 1]; got {fraction!r}.")
    return _lowest(conf, top_k_count(fraction, len(conf)))


def assign_regions(
    confidence: Any,
    variability: Any,
    *,
    ambiguous_fraction: float = 0.33,
    hard_fraction: float = 0.33,
    easy_fraction: float = 0.33,
) -> np.ndarray:
    """One data-map region per example, by rank (Swayamdipta et al. 2020, Sec. 4).

    With ``n`` examples and ``k(f) =`` :func:`top_k_count` ``(f, n)``:

    1. ``easy_to_learn``: the ``k(easy_fraction)`` examples of highest confidence;
    2. ``hard_to_learn``: the ``k(hard_fraction)`` examples of lowest confidence;
    3. ``ambiguous``: of the ``k(ambiguous_fraction)`` examples of highest variability,
       those in neither of the above;
    4. ``other``: the rest (middle confidence, low variability).

    Ranks are taken over all ``n`` examples; ties go to the earlier row. The defaults
    are the 33% of Swayamdipta et al.'s selection experiments. Confidence decides first:
    an example learned early and kept (confidence 0.9) is easy even if the climb to 0.9
    makes its variability high, as happens to planted cues.

    Parameters
    ----------
    confidence, variability : array-like of float
    ambiguous_fraction, hard_fraction, easy_fraction : float in [0, 1]
        ``hard_fraction + easy_fraction`` must not exceed 1.

    Returns
    -------
    numpy.ndarray of str

    Examples
    --------
    >>> conf = [0.95, 0.9, 0.5, 0.55, 0.1, 0.05]
    >>> var = [0.01, 0.02, 0.40, 0.35, 0.02, 0.01]
    >>> assign_regions(conf, var).tolist()
    ['easy_to_learn', 'easy_to_learn', 'ambiguous', 'ambiguous', 'hard_to_learn', 'hard_to_learn']
    """
    conf = np.asarray(confidence, dtype=float)
    var = np.asarray(variability, dtype=float)
    if conf.shape != var.shape or conf.ndim != 1:
        raise ParameterError(
            "The 'confidence' and 'variability' arguments must be 1-D and of equal length; got "
            f"shapes {conf.shape} and {var.shape}."
        )
    for name, f in (
        ("ambiguous_fraction", ambiguous_fraction),
        ("hard_fraction", hard_fraction),
        ("easy_fraction", easy_fraction),
    ):
        if not 0.0 <= f <= 1.0:
            raise ParameterError(f"The {name!r} argument must be in [0, 1]; got {f!r}.")
    if hard_fraction + easy_fraction > 1.0:
        raise ParameterError(
            "The 'hard_fraction' and 'easy_fraction' arguments must sum to at most 1; got "
            f"{hard_fraction} + {easy_fraction}."
        )
    n = len(conf)
    easy = _lowest(-conf, top_k_count(easy_fraction, n))
    hard = _lowest(conf, top_k_count(hard_fraction, n)) & ~easy
    ambiguous = _lowest(-var, top_k_count(ambiguous_fraction, n)) & ~easy & ~hard
    out = np.full(n, "other", dtype=object)
    out[easy] = "easy_to_learn"
    out[hard] = "hard_to_learn"
    out[ambiguous] = "ambiguous"
    return out
