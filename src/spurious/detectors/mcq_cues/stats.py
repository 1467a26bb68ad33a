"""Statistics of the multiple-choice cues: null draws, the cue table, the gold-letter test.

Everything is vectorised over items and null draws: the gold is re-drawn uniformly among
each item's options for all items at once (``floor(U k)``), in blocks that bound memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import chisquare

from spurious.data.mcq import LETTERS
from spurious.detectors.atlas.stats import adjust_p, wilson_interval
from spurious.stats.bootstrap import bootstrap_of_means

__all__ = [
    "MIN_ITEMS",
    "POSITION_CUE",
    "cue_table",
    "group_table",
    "letter_cue",
    "null_draws",
    "perm_p",
    "position_test",
]


#: Fewest items the analysis runs on.
MIN_ITEMS = 20
#: The cue "always answer the most frequent gold letter".
POSITION_CUE = "most_frequent_letter"
#: Null gold draws held in memory at once (draws x items), to bound memory on big data.
_MAX_DRAWN = 4_000_000


def null_draws(
    k: np.ndarray,
    picks: dict[str, np.ndarray],
    n_permutations: int,
    random_state: Any,
    groups: np.ndarray | None = None,
) -> dict[str, Any]:
    """Hits of every cue, and letter counts, with the gold re-drawn uniformly per item.

    Parameters
    ----------
    k : numpy.ndarray of int, shape (n,)
        Options per item.
    picks : dict of str to numpy.ndarray
        Per cue, the picked option per item (-1: abstains).
    n_permutations : int
        Draws of the null.
    random_state : int, Generator or None
    groups : numpy.ndarray of int, optional
        Group code per item (0 .. G-1): the hits are also summed per group.

    Returns
    -------
    dict
        ``hits``: cue -> (n_permutations,) hit counts; ``letters``: (n_permutations,
        max k) gold-letter counts; ``group_hits``: cue -> (n_permutations, G) (with groups).

    Examples
    --------
    >>> k = np.full(1000, 4)
    >>> out = null_draws(k, {"c": np.zeros(1000, dtype=int)}, 200, 0)
    >>> bool(230 < out["hits"]["c"].mean() < 270), out["letters"].shape
    (True, (200, 4))
    """
    rng = np.random.default_rng(random_state)
    k = np.asarray(k, dtype=np.int64)
    n, n_letters = len(k), int(k.max())
    block = max(1, min(n_permutations, _MAX_DRAWN // max(n, 1)))
    hits = {c: np.zeros(n_permutations, dtype=np.int64) for c in picks}
    letters = np.zeros((n_permutations, n_letters), dtype=np.int64)
    group_hits: dict[str, np.ndarray] = {}
    # Items sorted by group once, so that per-group sums are one reduceat per cue (the
    # totals do not depend on the order).
    order = np.argsort(groups, kind="stable") if groups is not None else np.arange(n)
    k = k[order]
    # int8 positions (k <= 10): a quarter of the memory traffic of int64 per comparison.
    sorted_picks = {c: np.asarray(p)[order].astype(np.int8) for c, p in picks.items()}
    if groups is not None:
        n_groups = int(groups.max()) + 1
        starts = np.searchsorted(groups[order], np.arange(n_groups))
        group_hits = {c: np.zeros((n_permutations, n_groups), dtype=np.int64) for c in picks}
    for lo in range(0, n_permutations, block):
        b = min(block, n_permutations - lo)
        # floor(U k) is uniform on 0 .. k-1 for every item at once.
        gold = (rng.random((b, n)) * k).astype(np.int8)
        offsets = (gold + n_letters * np.arange(b)[:, None]).ravel()
        letters[lo : lo + b] = np.bincount(offsets, minlength=b * n_letters).reshape(b, -1)
        for c, p in sorted_picks.items():
            hit = gold == p[None, :]  # an abstaining item (-1) never hits
            hits[c][lo : lo + b] = hit.sum(axis=1)
            if groups is not None:
                group_hits[c][lo : lo + b] = np.add.reduceat(hit, starts, axis=1)
    out: dict[str, Any] = {"hits": hits, "letters": letters}
    if groups is not None:
        out["group_hits"] = group_hits
    return out


def _expected_letters(k: np.ndarray, n_letters: int) -> np.ndarray:
    """Expected gold count per letter under uniform positions: sum of 1/k over items with
    more than j options."""
    inv = np.bincount(k, weights=1.0 / k, minlength=n_letters + 1)  # sum of 1/k per k
    # Letter j is offered by the items with k > j.
    return np.array([inv[j + 1 :].sum() for j in range(n_letters)])


def position_test(
    gold: np.ndarray, k: np.ndarray, null_letters: np.ndarray | None = None
) -> dict[str, Any]:
    """The gold-letter distribution against uniform positions (chi-square goodness of fit).

    Parameters
    ----------
    gold : numpy.ndarray of int
        Gold position per item.
    k : numpy.ndarray of int
        Options per item.
    null_letters : numpy.ndarray, shape (n_permutations, max k), optional
        Letter counts of null draws (:func:`null_draws`): adds ``p_value_permutation``.

    Returns
    -------
    dict
        ``letters``, ``counts``, ``expected``, ``share``, ``share_ci_low`` /
        ``share_ci_high`` (95% Wilson), ``expected_share``, ``chi2``, ``dof``,
        ``p_value`` and, with null draws, ``p_value_permutation``.

    Examples
    --------
    >>> out = position_test(np.array([0] * 60 + [1, 2, 3] * 20), np.full(120, 4))
    >>> out["counts"], round(out["p_value"], 6)
    ([60, 20, 20, 20], 0.0)
    """
    n_letters = int(k.max())
    counts = np.bincount(gold, minlength=n_letters)[:n_letters]
    expected = _expected_letters(k, n_letters)
    chi2, p = chisquare(counts, expected)
    n = len(gold)
    cis = [wilson_interval(c, n) for c in counts]
    out: dict[str, Any] = {
        "letters": list(LETTERS[:n_letters]),
        "counts": counts.tolist(),
        "expected": expected.tolist(),
        "share": (counts / n).tolist(),
        "share_ci_low": [lo for lo, _ in cis],
        "share_ci_high": [hi for _, hi in cis],
        "expected_share": (expected / n).tolist(),
        "chi2": float(chi2),
        "dof": n_letters - 1,
        "p_value": float(p),
        "majority_letter": LETTERS[int(np.argmax(counts))],
    }
    if null_letters is not None:
        null_chi2 = ((null_letters - expected) ** 2 / expected).sum(axis=1)
        out["p_value_permutation"] = float(
            (1 + (null_chi2 >= chi2 - 1e-9).sum()) / (1 + len(null_chi2))
        )
    return out


def _cue_row(
    cue: str, pick: np.ndarray, gold: np.ndarray, k: np.ndarray, n_bootstrap: int, seed: int
) -> dict[str, Any]:
    """n, hit rate, chance, effect and its bootstrap interval of one cue (no test yet)."""
    m = pick >= 0
    n = int(m.sum())
    row: dict[str, Any] = {"cue": cue, "n": n, "coverage": n / len(pick) if len(pick) else 0.0}
    if n == 0:
        return {**row, "hits": 0, "hit_rate": np.nan, "chance": np.nan, "effect": np.nan,
                "effect_ci_low": np.nan, "effect_ci_high": np.nan}  # fmt: skip
    h = (pick[m] == gold[m]).astype(np.float64)
    e = 1.0 / k[m]
    # The effect is a difference of two means over the same items: the bootstrap of their
    # joint outcomes is exact and independent of n (spurious.stats.bootstrap).
    effect, lo, hi = bootstrap_of_means(
        lambda mh, me: mh - me, [h, e], n_resamples=n_bootstrap, random_state=seed
    )
    return {**row, "hits": int(h.sum()), "hit_rate": float(h.mean()), "chance": float(e.mean()),
            "effect": effect, "effect_ci_low": lo, "effect_ci_high": hi}  # fmt: skip


def perm_p(observed: float, null: np.ndarray) -> float:
    """One-sided permutation p-value, ``(1 + #{null >= observed}) / (1 + draws)``.

    Counting the observed value as one draw keeps the p-value above 0 and the test exact.

    Examples
    --------
    >>> perm_p(5.0, np.arange(99.0))
    0.95
    """
    return float((1 + (null >= observed - 1e-9).sum()) / (1 + len(null)))


def cue_table(
    picks: dict[str, np.ndarray],
    gold: np.ndarray,
    k: np.ndarray,
    null_hits: dict[str, np.ndarray],
    *,
    min_items: int = 10,
    n_bootstrap: int = 1000,
    random_state: Any = 0,
) -> pd.DataFrame:
    """One row per cue: n, hit rate, chance, effect [95% CI], permutation p and BH q.

    Parameters
    ----------
    picks : dict of str to numpy.ndarray
        Per cue, the picked option per item (-1: abstains).
    gold, k : numpy.ndarray of int
        Gold position and option count per item.
    null_hits : dict of str to numpy.ndarray
        Per cue, the null statistic per draw: hit counts (:func:`null_draws`); for a cue
        whose pick was chosen from the gold (the most frequent letter), the hit count
        minus its expectation, with the pick chosen again on each draw.
    min_items : int
        Cues picking fewer items are shown, not tested (p and q NaN).
    n_bootstrap : int
    random_state : int or None

    Returns
    -------
    pandas.DataFrame
        ``cue, n, coverage, hits, hit_rate, chance, effect, effect_ci_low,
        effect_ci_high, p_value, q_value``.

    Examples
    --------
    >>> k = np.full(200, 4); gold = np.tile([0, 1, 2, 3], 50); pick = np.zeros(200, dtype=int)
    >>> null = null_draws(k, {"a": pick}, 99, 0)["hits"]
    >>> cue_table({"a": pick}, gold, k, null)[["n", "hit_rate", "chance"]].values.tolist()
    [[200.0, 0.25, 0.25]]
    """
    seeds = np.random.default_rng(random_state).integers(0, 2**31 - 1, size=len(picks))
    rows = []
    for (cue, pick), seed in zip(picks.items(), seeds, strict=True):
        row = _cue_row(cue, pick, gold, k, n_bootstrap, int(seed))
        observed = float(row["hits"])
        if cue == POSITION_CUE:  # its null statistic is an excess count (see above)
            observed -= float((1.0 / k[pick >= 0]).sum())
        row["p_value"] = perm_p(observed, null_hits[cue]) if row["n"] >= min_items else np.nan
        rows.append(row)
    return _with_q(pd.DataFrame(rows))


def _with_q(table: pd.DataFrame) -> pd.DataFrame:
    """``q_value``: Benjamini-Hochberg over the rows with a p-value (NaN elsewhere)."""
    table["q_value"] = np.nan
    tested = table["p_value"].notna().to_numpy()
    if tested.any():
        table.loc[tested, "q_value"] = adjust_p(table.loc[tested, "p_value"].to_numpy())[1]
    return table


def letter_cue(
    gold: np.ndarray, k: np.ndarray, null_letters: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The most frequent gold letter as a cue, and its null statistic.

    Parameters
    ----------
    gold, k : numpy.ndarray of int
        Gold position and option count per item.
    null_letters : numpy.ndarray, shape (n_permutations, max k)
        Gold-letter counts of the null draws (:func:`null_draws`).

    Returns
    -------
    pick : numpy.ndarray of int64
        The most frequent letter's position, -1 for items without that many options.
    null : numpy.ndarray of float, shape (n_permutations,)
        On each draw the most frequent letter is chosen again and the statistic is its
        count minus its expectation, so choosing the letter from the data is part of the
        null (compare with the observed count minus expectation).

    Examples
    --------
    >>> k = np.array([4, 4, 2, 4]); gold = np.array([3, 3, 0, 1])
    >>> pick, null = letter_cue(gold, k, np.array([[1, 1, 1, 1]]))
    >>> pick.tolist(), null.round(2).tolist()
    ([3, 3, -1, 3], [-0.25])
    """
    n_letters = null_letters.shape[1]
    counts = np.bincount(gold, minlength=n_letters)[:n_letters]
    expected = _expected_letters(k, n_letters)
    best = int(np.argmax(counts))
    pick = np.where(k > best, best, -1)
    chosen = np.argmax(null_letters, axis=1)
    null = null_letters[np.arange(len(chosen)), chosen] - expected[chosen]
    return pick, null


def group_table(
    picks: dict[str, np.ndarray],
    gold: np.ndarray,
    k: np.ndarray,
    codes: np.ndarray,
    names: list[str],
    group_hits: dict[str, np.ndarray],
    min_items: int,
) -> pd.DataFrame:
    """The cue table per group: n, hit rate (95% Wilson), chance, effect, p and BH q.

    Parameters
    ----------
    picks : dict of str to numpy.ndarray
        Per cue, the picked option per item (-1: abstains).
    gold, k : numpy.ndarray of int
        Gold position and option count per item.
    codes : numpy.ndarray of int
        Group code per item, ``0 .. len(names) - 1``.
    names : list of str
        Group names.
    group_hits : dict of str to numpy.ndarray
        Per cue, null hit counts per draw and group (:func:`null_draws` with ``groups``).
    min_items : int
        Group x cue cells with fewer picked items are shown, not tested.

    Returns
    -------
    pandas.DataFrame
        One row per group x cue with a pick; q is Benjamini-Hochberg over every tested
        row (groups x cues are one family).

    Examples
    --------
    >>> k = np.full(40, 4); gold = np.zeros(40, dtype=int); pick = np.zeros(40, dtype=int)
    >>> codes = np.repeat([0, 1], 20)
    >>> null = null_draws(k, {"c": pick}, 99, 0, groups=codes)["group_hits"]
    >>> group_table({"c": pick}, gold, k, codes, ["x", "y"], null, 10)["hit_rate"].tolist()
    [1.0, 1.0]
    """
    rows = []
    for cue, pick in picks.items():
        m = pick >= 0
        n = np.bincount(codes[m], minlength=len(names))
        hits = np.bincount(codes[m], weights=(pick[m] == gold[m]), minlength=len(names))
        chance = np.bincount(codes[m], weights=1.0 / k[m], minlength=len(names))
        for g, name in enumerate(names):
            if n[g] == 0:
                continue
            p = perm_p(hits[g], group_hits[cue][:, g]) if n[g] >= min_items else np.nan
            lo, hi = wilson_interval(hits[g], n[g])
            rows.append({"group": name, "cue": cue, "n": int(n[g]), "hit_rate": hits[g] / n[g],
                         "hit_rate_ci_low": lo, "hit_rate_ci_high": hi,
                         "chance": chance[g] / n[g], "effect": (hits[g] - chance[g]) / n[g],
                         "p_value": p})  # fmt: skip
    table = pd.DataFrame(
        rows,
        columns=["group", "cue", "n", "hit_rate", "hit_rate_ci_low", "hit_rate_ci_high",
                 "chance", "effect", "p_value"],
    )  # fmt: skip
    return _with_q(table)
