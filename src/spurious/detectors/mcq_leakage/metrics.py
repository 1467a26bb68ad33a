"""Leakage metrics of multiple-choice items, against chance: paper 003 Sec. 2-3.1 in MC form.

:func:`mc_leakage_metrics` takes each view's predicted option and adds to the
partial-input metrics of :func:`~spurious.detectors.partial_input.metrics.leakage_metrics`
(accuracy, Delta_maj, NBA, NBR, each with a bootstrap interval) what multiple choice
needs: **chance**, the mean over items of ``1/k`` (an item with ``k`` options is answered
right by a blind guess with probability ``1/k``), Delta over chance, and %R_R corrected
for chance. Chance, not the majority class, is the baseline of the verdict: the
"majority class" of a multiple-choice set is a letter, and always answering it is itself
a shortcut (a letter-position bias), which the views that see letters can learn and the
verdict must count as leakage. :func:`permutation_p_value` compares an accuracy with the
shuffled-gold null; :func:`group_table` breaks the leakage down by group (MMLU subject).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from spurious.detectors.partial_input.metrics import leakage_metrics
from spurious.stats.bootstrap import bootstrap_of_means

__all__ = ["group_table", "mc_leakage_metrics", "permutation_p_value"]


# Each metric is a function of the means of per-item vectors (0/1 correctness, 1/k):
# bootstrap_of_means resamples the counts of their joint outcomes (the item bootstrap).
def _acc(m_correct):
    return m_correct


def _over_chance(m_correct, m_inv_k):
    return m_correct - m_inv_k


def _chance_recovery(m_view, m_full, m_inv_k):
    # (A_view - chance) / (A_full - chance): NaN where the full probe does not beat
    # chance (nothing to recover; a negative denominator would flip the ratio's sign).
    num = np.asarray(m_view - m_inv_k, dtype=np.float64)
    den = np.asarray(m_full - m_inv_k, dtype=np.float64)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den > 0)
    return out


def mc_leakage_metrics(
    y: np.ndarray,
    n_options: np.ndarray,
    preds: dict[str, np.ndarray],
    majority: int,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    random_state: int | None = 0,
) -> dict[str, float]:
    """Per-view accuracy, chance, Delta over chance and the partial-input metrics.

    Parameters
    ----------
    y : ndarray of int
        Gold positions of the scored items.
    n_options : ndarray of int
        Options per scored item (``k``).
    preds : dict of str to ndarray of int
        Predicted position per view (``"full"``, ``"choices_only"``, ``"question_only"``).
    majority : int
        The gold position most frequent in training (the majority-letter baseline).

    Returns
    -------
    dict
        ``chance``; ``majority_accuracy``; per view ``accuracy_<v>``,
        ``delta_chance_<v>``, ``delta_maj_<v>``; with the full view, per partial view
        ``recovery_<v>`` (chance-corrected %R_R), ``recovery_raw_<v>`` (Eq. 5 as
        printed), ``nba_<v>``, ``nbr_<v>``; every one but ``chance`` with
        ``_ci_low`` / ``_ci_high``.

    Examples
    --------
    >>> y = np.array([0, 1, 2, 3] * 25)
    >>> m = mc_leakage_metrics(y, np.full(100, 4), {"full": y, "choices_only": y * 0}, 0,
    ...                        n_resamples=50)
    >>> m["chance"], m["accuracy_choices_only"], m["delta_chance_choices_only"]
    (0.25, 0.25, 0.0)
    >>> m["recovery_choices_only"], m["delta_chance_full"]
    (0.0, 0.75)
    """
    y = np.asarray(y)
    inv_k = 1.0 / np.asarray(n_options, dtype=np.float64)
    boot: dict[str, Any] = dict(
        n_resamples=n_resamples, confidence=confidence, random_state=random_state
    )
    metrics: dict[str, float] = {}

    def put(name: str, fn, arrays) -> None:
        est, lo, hi = bootstrap_of_means(fn, arrays, **boot)
        metrics[name], metrics[f"{name}_ci_low"], metrics[f"{name}_ci_high"] = est, lo, hi

    correct = {v: (np.asarray(p) == y).astype(float) for v, p in preds.items()}
    partial = [v for v in preds if v != "full"]
    if "full" in preds:
        base = leakage_metrics(y, preds, majority, **boot)
        base.pop("max_delta_maj", None)
        for key, value in base.items():
            # Eq. 5 as printed (A_SSC / A_PSC) keeps its name with _raw_; recovery_<v>
            # is the chance-corrected ratio below.
            metrics[key.replace("recovery_", "recovery_raw_", 1)] = value
    else:
        maj = (y == majority).astype(float)
        put("majority_accuracy", _acc, [maj])
        for v in partial:
            put(f"accuracy_{v}", _acc, [correct[v]])
            put(f"delta_maj_{v}", lambda a, b: a - b, [correct[v], maj])
    metrics["chance"] = float(inv_k.mean())
    for v in preds:
        put(f"delta_chance_{v}", _over_chance, [correct[v], inv_k])
    if "full" in preds:
        put("delta_maj_full", lambda a, b: a - b, [correct["full"], (y == majority).astype(float)])
        for v in partial:
            put(f"recovery_{v}", _chance_recovery, [correct[v], correct["full"], inv_k])
    return metrics


def permutation_p_value(observed: float, null: np.ndarray) -> float:
    """One-sided permutation p-value ``(1 + #{null >= observed}) / (1 + B)``.

    Examples
    --------
    >>> permutation_p_value(0.4, np.array([0.24, 0.26, 0.25]))
    0.25
    """
    null = np.asarray(null, dtype=np.float64)
    return float((1 + np.sum(null >= observed - 1e-12)) / (1 + len(null)))


def group_table(
    groups: np.ndarray,
    y: np.ndarray,
    n_options: np.ndarray,
    correct: dict[str, np.ndarray],
    view: str,
    null_correct: np.ndarray | None,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    random_state: int | None = 0,
) -> pd.DataFrame:
    """Leakage of ``view`` per group: n, accuracy, chance, Delta over chance [CI], p-value.

    Parameters
    ----------
    groups : ndarray
        Each scored item's group (MMLU subject).
    y, n_options : ndarray of int
        Gold position and options per scored item.
    correct : dict of str to ndarray of bool
        Whether each view's probe is right on each item; every view's accuracy is a
        column (``accuracy_<v>``), ``view``'s gets the interval.
    view : str
        The view judged per group (``choices_only``).
    null_correct : ndarray of bool, shape (B, n), optional
        The shuffled-gold null's correctness (:func:`~spurious.detectors.mcq_leakage.fitting.shuffled_gold_null`):
        a permutation p-value per group, unadjusted for the number of groups.

    Returns
    -------
    pandas.DataFrame
        One row per group, most leaky (highest Delta) first: ``group``, ``n``,
        ``chance``, ``accuracy_<v>`` for every view, ``delta_chance``,
        ``delta_chance_ci_low``, ``delta_chance_ci_high``, ``p_value``.

    Examples
    --------
    >>> g = np.array(["a"] * 40 + ["b"] * 40)
    >>> c = np.r_[np.ones(40), np.zeros(40)].astype(bool)
    >>> t = group_table(g, np.zeros(80, int), np.full(80, 4), {"choices_only": c},
    ...                 "choices_only", None, n_resamples=50)
    >>> t["group"].tolist(), t["delta_chance"].tolist()
    (['a', 'b'], [0.75, -0.25])
    """
    groups = np.asarray(groups).astype(str)
    inv_k = 1.0 / np.asarray(n_options, dtype=np.float64)
    boot: dict[str, Any] = dict(
        n_resamples=n_resamples, confidence=confidence, random_state=random_state
    )
    rows = []
    for g in sorted(set(groups.tolist())):
        at = groups == g
        c = correct[view][at].astype(float)
        est, lo, hi = bootstrap_of_means(_over_chance, [c, inv_k[at]], **boot)
        row: dict[str, object] = {"group": g, "n": int(at.sum()), "chance": float(inv_k[at].mean())}
        row.update({f"accuracy_{v}": float(correct[v][at].mean()) for v in correct})
        row.update({"delta_chance": est, "delta_chance_ci_low": lo, "delta_chance_ci_high": hi})
        if null_correct is not None and len(null_correct):
            null_acc = null_correct[:, at].mean(axis=1)
            row["p_value"] = permutation_p_value(float(c.mean()), null_acc)
        else:
            row["p_value"] = float("nan")
        rows.append(row)
    table = pd.DataFrame(rows)
    return table.sort_values(["delta_chance", "group"], ascending=[False, True], kind="stable")[
        list(table.columns)
    ].reset_index(drop=True)
