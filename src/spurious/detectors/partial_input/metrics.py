"""Leakage metrics from predictions: PECO Sec. 2.1-2.2 and 3.1, with bootstrap intervals.

:func:`leakage_metrics` compares the full-input (PSC) predictions with each
partial-input (SSC) condition's: accuracy, Delta_maj (Eq. 4), %R_R (Eq. 5), NBA (Eq. 7)
and NBR (Eq. 8), each with a percentile-bootstrap interval over evaluation examples.
"""

from __future__ import annotations

import numpy as np

from spurious.exceptions import AnalysisError
from spurious.stats.bootstrap import bootstrap_of_means, safe_ratio

__all__ = ["leakage_metrics"]


# Every metric is a function of the means of 0/1 vectors over the evaluation examples
# (see bootstrap_of_means); each takes those means.
def _acc(m_correct):
    return m_correct


def _delta_maj(m_correct, m_majority):
    return m_correct - m_majority


def _recovery(m_ssc, m_psc):
    return safe_ratio(m_ssc, m_psc)


def _nba(m_agree):
    return m_agree


def _nbr(m_agree, m_agree_correct):
    return safe_ratio(m_agree_correct, m_agree)


def leakage_metrics(
    y: np.ndarray,
    preds: dict[str, np.ndarray],
    majority: int,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    random_state: int | None = 0,
) -> dict[str, float]:
    """PECO Sec. 2.1-2.2 and 3.1 metrics from predictions, with bootstrap intervals.

    Parameters
    ----------
    y : ndarray of int
        Gold label ids of the evaluation examples.
    preds : dict
        ``{"full": PSC predictions, "<cond>": SSC predictions, ...}`` (label ids).
    majority : int
        The label id the majority baseline always guesses.

    Returns
    -------
    dict
        ``accuracy_full``, ``majority_accuracy`` and, per partial condition,
        ``accuracy_<c>``, ``delta_maj_<c>``, ``recovery_<c>``, ``nba_<c>``, ``nbr_<c>``,
        each with ``_ci_low`` / ``_ci_high``; plus ``max_delta_maj``.

    Examples
    --------
    >>> y = np.array([0, 0, 1, 1, 2])
    >>> m = leakage_metrics(y, {"full": np.array([0, 0, 1, 2, 2]),
    ...                         "hypothesis_only": np.array([0, 1, 1, 2, 0])}, 0,
    ...                     n_resamples=50)
    >>> round(m["accuracy_hypothesis_only"], 2), round(m["nba_hypothesis_only"], 2)
    (0.4, 0.6)
    """
    y = np.asarray(y)
    if "full" not in preds:
        raise AnalysisError("leakage_metrics needs the full-input predictions under 'full'.")
    boot = dict(n_resamples=n_resamples, confidence=confidence, random_state=random_state)
    c_full = (np.asarray(preds["full"]) == y).astype(float)
    maj_correct = (y == majority).astype(float)
    metrics: dict[str, float] = {}

    def put(name: str, fn, arrays) -> None:
        # Every metric is a function of means of 0/1 vectors: resampling the counts of
        # their joint outcomes is the example bootstrap, in milliseconds at any size.
        est, lo, hi = bootstrap_of_means(fn, arrays, **boot)
        metrics[name], metrics[f"{name}_ci_low"], metrics[f"{name}_ci_high"] = est, lo, hi

    put("accuracy_full", _acc, [c_full])
    put("majority_accuracy", _acc, [maj_correct])
    partial = [c for c in preds if c != "full"]
    for c in partial:
        p = np.asarray(preds[c])
        c_ssc = (p == y).astype(float)
        agree = (p == np.asarray(preds["full"])).astype(float)
        put(f"accuracy_{c}", _acc, [c_ssc])
        put(f"delta_maj_{c}", _delta_maj, [c_ssc, maj_correct])
        put(f"recovery_{c}", _recovery, [c_ssc, c_full])
        put(f"nba_{c}", _nba, [agree])
        # SSC == PSC and SSC == Y  <=>  all three agree (Eq. 8's numerator).
        put(f"nbr_{c}", _nbr, [agree, agree * c_ssc])
    if partial:
        metrics["max_delta_maj"] = max(metrics[f"delta_maj_{c}"] for c in partial)
    return metrics
