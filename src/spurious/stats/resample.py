"""RESAM's row indices (paper 001 Sec. 5): balance the two groups of a heuristic split.

Every row is kept once and rows of the smaller group (``attribute <= T`` vs ``> T``) are
copied until the groups are equal. The writer of resampled files is
:mod:`spurious.actions.resample`; the debiasing analysis trains on these indices.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from spurious.exceptions import ParameterError

__all__ = ["ResampleInfo", "resample_indices"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ResampleInfo:
    """What RESAM did.

    Attributes
    ----------
    threshold : float
        ``T``; ``low = attribute <= T``, ``high = attribute > T``.
    n_input : int
        Rows read.
    n_output : int
        Rows written.
    n_low, n_high : int
        Group sizes before resampling.
    minority : {"low", "high"} or None
        The oversampled group (``None`` when the groups are already equal).
    n_added : int
        Copies added (``|n_low - n_high|``).
    n_unsplit : int
        Rows without an attribute value (or dropped by the loader), written once unchanged.
    replace : bool
    random_state : int or None
    """

    threshold: float
    n_input: int
    n_output: int
    n_low: int
    n_high: int
    minority: str | None
    n_added: int
    n_unsplit: int
    replace: bool
    random_state: int | None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict."""
        return asdict(self)


def resample_indices(
    attribute: np.ndarray,
    threshold: float,
    *,
    replace: bool = False,
    random_state: int | None = 0,
) -> tuple[np.ndarray, ResampleInfo]:
    """Row indices of the RESAM-balanced data: every row once, plus minority copies.

    Parameters
    ----------
    attribute : array-like of float, shape (n,)
        The heuristic's value per row; NaN rows are kept once and not resampled.
    threshold : float
        ``T``; the low group is ``attribute <= T``.
    replace : bool, default=False
        ``False``: copy every minority row ``k`` times and draw the remainder without
        replacement. ``True``: draw every extra row with replacement.
    random_state : int or None, default=0

    Returns
    -------
    indices : numpy.ndarray of int64
        ``arange(n)`` followed by the indices of the added copies (sorted).
    info : ResampleInfo

    Examples
    --------
    >>> idx, info = resample_indices(np.array([1, 1, 1, 1, 5, 5]), threshold=2)
    >>> sorted(idx.tolist()), info.minority, info.n_added
    ([0, 1, 2, 3, 4, 4, 5, 5], 'high', 2)
    """
    a = np.asarray(attribute, dtype=np.float64)
    t = float(threshold)
    if a.ndim != 1:
        raise ParameterError(f"The 'attribute' parameter must be 1-D. Got shape {a.shape}.")
    if not np.isfinite(t):
        raise ParameterError(f"The 'threshold' parameter must be finite. Got {threshold!r}.")
    finite = np.isfinite(a)
    low = np.flatnonzero(finite & (a <= t))
    high = np.flatnonzero(finite & (a > t))
    if low.size == 0 or high.size == 0:
        raise ParameterError(
            f"The 'threshold' parameter puts every row with an attribute in one group "
            f"(low {low.size}, high {high.size}; attribute range "
            f"[{np.nanmin(a) if finite.any() else float('nan'):g}, "
            f"{np.nanmax(a) if finite.any() else float('nan'):g}]). Got {threshold!r}."
        )
    rng = np.random.default_rng(random_state)
    minority_name: str | None = None
    extra = np.array([], dtype=np.int64)
    if low.size != high.size:
        minor, major = (low, high) if low.size < high.size else (high, low)
        minority_name = "low" if minor is low else "high"
        n_extra = major.size - minor.size
        if replace:
            extra = rng.choice(minor, size=n_extra, replace=True)
        else:
            whole, rest = divmod(n_extra, minor.size)
            extra = np.concatenate(
                [np.tile(minor, whole), rng.choice(minor, size=rest, replace=False)]
            )
        extra = np.sort(extra)
    indices = np.concatenate([np.arange(a.size, dtype=np.int64), extra.astype(np.int64)])
    info = ResampleInfo(
        threshold=t,
        n_input=int(a.size),
        n_output=int(indices.size),
        n_low=int(low.size),
        n_high=int(high.size),
        minority=minority_name,
        n_added=int(extra.size),
        n_unsplit=int((~finite).sum()),
        replace=bool(replace),
        random_state=random_state,
    )
    logger.info(
        "RESAM at T=%g: low %d, high %d -> added %d copies of the %s group",
        t, low.size, high.size, extra.size, minority_name or "(none)",
    )  # fmt: skip
    return indices, info
