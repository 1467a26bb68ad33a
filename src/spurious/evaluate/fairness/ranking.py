"""Ranking stability (paper 004 Sec. 5.2.1, Fig. 3 and 4).

Models are ranked by accuracy (rank 1 = best, ties share their mean rank) on the full set
and on each adversary's AF-selected set. Kendall's tau and Spearman's rho
(:mod:`scipy.stats`) compare each adversary's ranking with the unfiltered one; their
intervals come from the bootstrap draws of the matrix (the same resampled examples for
both rankings). The same-family rank change (Fig. 4) is the change of a model's rank under
an adversary of its own family (positive = it fell).

A ranking can move because the adversary singles out examples that favour some models, or
only because a smaller set ranks close models less reliably. :func:`random_subset_null`
separates the two: the Kendall tau that random subsets of the AF-selected size give
against the full set (the null "the adversary selects at random"), and the p-value of the
observed tau under it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from scipy import stats

__all__ = ["family_rank_change", "random_subset_null", "rank_agreement", "ranks"]


def ranks(accuracy: Sequence[float] | np.ndarray) -> np.ndarray:
    """Rank 1 = the highest accuracy; ties share their mean rank; NaN ranks last.

    Examples
    --------
    >>> ranks([0.7, 0.9, 0.8]).tolist()
    [3.0, 1.0, 2.0]
    >>> ranks([0.5, 0.5, 0.9]).tolist()
    [2.5, 2.5, 1.0]
    """
    a = np.asarray(accuracy, dtype=float)
    a = np.where(np.isnan(a), -np.inf, a)
    return stats.rankdata(-a, method="average").astype(float)


def _corr(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 2 or np.ptp(a[ok]) == 0 or np.ptp(b[ok]) == 0:
        return math.nan, math.nan
    return float(stats.kendalltau(a[ok], b[ok]).statistic), float(
        stats.spearmanr(a[ok], b[ok]).statistic
    )


def rank_agreement(
    reference: np.ndarray,
    other: np.ndarray,
    boot_reference: np.ndarray | None = None,
    boot_other: np.ndarray | None = None,
    *,
    confidence: float = 0.95,
) -> dict[str, float]:
    """Kendall's tau and Spearman's rho between two accuracy vectors, with bootstrap intervals.

    Parameters
    ----------
    reference, other : arrays of shape (n_models,)
        Accuracies of the same models (e.g. unfiltered and AF-selected).
    boot_reference, boot_other : arrays of shape (n_bootstrap, n_models), optional
        Bootstrap draws of both (paired: the same resampled examples per row).
    confidence : float

    Returns
    -------
    dict
        ``kendall_tau``, ``spearman`` and, with draws, their ``_ci_low`` / ``_ci_high``.

    Examples
    --------
    >>> rank_agreement(np.array([0.9, 0.8, 0.7]), np.array([0.5, 0.4, 0.3]))["kendall_tau"]
    1.0
    >>> rank_agreement(np.array([0.9, 0.8, 0.7]), np.array([0.3, 0.4, 0.5]))["spearman"]
    -1.0
    """
    tau, rho = _corr(np.asarray(reference, float), np.asarray(other, float))
    out = {"kendall_tau": tau, "spearman": rho}
    if boot_reference is not None and boot_other is not None and len(boot_reference):
        draws = np.array([_corr(r, o) for r, o in zip(boot_reference, boot_other, strict=True)])
        alpha = (1 - confidence) / 2
        for k, name in enumerate(("kendall_tau", "spearman")):
            col = draws[:, k][np.isfinite(draws[:, k])]
            lo, hi = (
                (float(np.quantile(col, alpha)), float(np.quantile(col, 1 - alpha)))
                if len(col)
                else (math.nan, math.nan)
            )
            out[f"{name}_ci_low"], out[f"{name}_ci_high"] = lo, hi
    return out


def family_rank_change(
    rank_none: Mapping[str, float],
    rank_by_adversary: Mapping[str, Mapping[str, float]],
    families: Mapping[str, str],
) -> dict[tuple[str, str], float]:
    """Rank change of each model under the adversaries of its own family (Fig. 4).

    Parameters
    ----------
    rank_none : mapping model -> rank on the full set
    rank_by_adversary : mapping adversary -> (mapping model -> rank)
    families : mapping name -> family
        For models and adversaries alike; names without a family are left out.

    Returns
    -------
    dict (model, adversary) -> rank under the adversary minus rank unfiltered
        Positive = the model fell (rank 1 is best).

    Examples
    --------
    >>> family_rank_change({"m1": 1.0, "m2": 2.0}, {"a": {"m1": 2.0, "m2": 1.0}},
    ...                    {"m1": "bert", "a": "bert", "m2": "lstm"})
    {('m1', 'a'): 1.0}
    """
    out: dict[tuple[str, str], float] = {}
    for adv, by_model in rank_by_adversary.items():
        fam = families.get(adv)
        if fam is None:
            continue
        for model, r in by_model.items():
            if families.get(model) == fam and model in rank_none:
                out[(model, adv)] = float(r) - float(rank_none[model])
    return out


def random_subset_null(
    correct: np.ndarray,
    n_select: float,
    tau: float,
    *,
    n_draws: int = 1000,
    random_state: int | None = 0,
) -> dict[str, float]:
    """Kendall tau of random subsets of the AF-selected size against the full set.

    The null hypothesis is that the adversary selects ``n_select`` examples at random:
    each draw ranks the models on a random subset of that size (without replacement)
    and compares the ranking with the full set's. The one-sided p-value is the share of
    draws whose tau is at most the observed ``tau`` (with the usual +1 correction), so a
    small p says that the adversary reorders the models more than chance subsets do.

    Parameters
    ----------
    correct : array (n_models, n)
        Per-example correctness (or a score in [0, 1]) of every model.
    n_select : float
        Size of the AF-selected set (mean over seeds; rounded).
    tau : float
        The observed Kendall tau of the AF-selected set against the full set.
    n_draws : int
        Random subsets drawn.
    random_state : int, optional

    Returns
    -------
    dict
        ``p_value``, ``null_tau_median``, ``null_tau_low`` (2.5% quantile) and ``n_draws``
        (NaN p-value when ``tau`` or every null tau is undefined).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> correct = rng.random((4, 2000)) < np.array([[0.9], [0.8], [0.7], [0.6]])
    >>> random_subset_null(correct, 500, -1.0, n_draws=200)["p_value"] < 0.01
    True
    >>> random_subset_null(correct, 500, 1.0, n_draws=200)["p_value"]
    1.0
    """
    c = np.asarray(correct, dtype=np.float64)
    n_models, n = c.shape
    k = round(float(n_select))
    out = {"p_value": math.nan, "null_tau_median": math.nan, "null_tau_low": math.nan,
           "n_draws": 0.0}  # fmt: skip
    if n_models < 2 or not 0 < k <= n or n_draws < 1 or not math.isfinite(tau):
        return out
    full = c.mean(axis=1)
    rng = np.random.default_rng(random_state)
    taus = np.empty(n_draws)
    for b in range(n_draws):
        idx = rng.choice(n, size=k, replace=False)
        taus[b] = _corr(full, c[:, idx].mean(axis=1))[0]
    taus = taus[np.isfinite(taus)]
    if not len(taus):
        return out
    out.update(
        p_value=float((1 + np.sum(taus <= tau + 1e-12)) / (1 + len(taus))),
        null_tau_median=float(np.median(taus)),
        null_tau_low=float(np.quantile(taus, 0.025)),
        n_draws=float(len(taus)),
    )
    return out
