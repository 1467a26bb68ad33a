"""How much a prediction bias of :func:`~spurious.evaluate.prediction_bias.bias_table`
moves by chance: its Monte-Carlo spread and the permutation null of the table's largest.

The bias is a gap between bootstrap quantiles, so it moves with the resampling seed:
:func:`monte_carlo_sd` re-bootstraps each chosen threshold with :data:`MC_REPEATS` more
seeds, and :func:`spread_warnings` says when that spread (above :data:`MC_SD_WARN`) is
too large to compare biases. The threshold search picks the best of many splits, so a
positive bias alone is not evidence: :func:`permutation_null` repeats the whole table on
scores permuted across examples.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from spurious.stats.bias_search import _select, _sweep

logger = logging.getLogger(__name__)

__all__ = ["MC_REPEATS", "MC_SD_WARN", "monte_carlo_sd", "permutation_null", "spread_warnings"]

#: Extra bootstrap seeds per reported bias to measure its Monte-Carlo spread.
MC_REPEATS = 4
#: Above this Monte-Carlo sd (1 point), ``n_trials`` is too small to compare biases.
MC_SD_WARN = 0.01


def monte_carlo_sd(
    values: np.ndarray,
    attribute: np.ndarray,
    grid: np.ndarray,
    chosen: Sequence[tuple[int | None, str]],
    results: Sequence[Any],
    params: Mapping[str, Any],
    min_size: int,
) -> list[float]:
    """Sd of each reported bias over ``MC_REPEATS`` extra bootstrap seeds (and the run's own).

    The bias is a bootstrap quantile gap, so it moves with the resampling seed; with the
    paper's 100 trials it moves by about half a point. Only the chosen threshold is
    re-bootstrapped (the search is not repeated), so this measures the estimate's
    resampling noise, not the threshold choice's.
    """
    seed = params["random_state"]
    out = [math.nan] * len(results)
    for c in {c for c, _ in chosen if c is not None}:
        rows = [m for m, (cc, _) in enumerate(chosen) if cc == c]
        draws = [[results[m].bias] for m in rows]
        for r in range(1, MC_REPEATS + 1):
            # Seeds derived from the run's seed: the spread is reproducible too.
            derived = (
                None
                if seed is None
                else int(np.random.SeedSequence([seed, r]).generate_state(1)[0])
            )
            p = {**params, "random_state": derived}
            sw = _sweep(values[rows], attribute, grid[[c]], p, min_size=min_size)
            for k, margin in enumerate(sw.margin[:, 0]):
                draws[k].append(max(float(margin), 0.0) if math.isfinite(margin) else math.nan)
        for m, d in zip(rows, draws, strict=True):
            finite = [x for x in d if math.isfinite(x)]
            out[m] = float(np.std(finite, ddof=1)) if len(finite) > 1 else math.nan
    return out


def permutation_null(
    scores: np.ndarray,
    plan: Sequence[tuple[np.ndarray, np.ndarray, dict[str, Any], int, bool]],
    table: Sequence[Mapping[str, Any]],
    shared_threshold: bool,
    ref_idx: int,
    n_permutations: int,
    params: Mapping[str, Any],
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """The largest bias of the table against its distribution with scores permuted.

    Each permutation repeats what the table did (the same grids, sample sizes, validity
    rule and threshold choice) on scores shuffled across examples, so the selection of
    the best threshold, heuristic and model is part of the null. ``progress``, if given,
    is called with ``(done, n_permutations)`` after each permutation.
    """
    finite = [r["bias"] for r in table if r["bias"] is not None and math.isfinite(r["bias"])]
    observed = max(finite) if finite else math.nan
    seed = params["random_state"]
    rng = np.random.default_rng(None if seed is None else [seed, 104729])
    n_models = scores.shape[0]
    draws = np.zeros(n_permutations)
    # A largest bias of 0 is met by every permutation (p = 1): nothing to simulate.
    for b in range(n_permutations if observed > 0 else 0):
        perm = rng.permutation(scores.shape[1])
        permuted = scores[:, perm]
        best = 0.0
        for attr, grid, hp, min_size, fixed in plan:
            mask = np.isfinite(attr) & np.isfinite(permuted).all(axis=0)
            if grid.size == 0 or not mask.any():
                continue
            sweep = _sweep(permuted[:, mask], attr[mask], grid, hp, min_size=min_size)
            if fixed:
                chosen = [0] * n_models
            elif shared_threshold:
                chosen = [_select(sweep, ref_idx, hp["sample_size"])[0]] * n_models
            else:
                chosen = [_select(sweep, m, hp["sample_size"])[0] for m in range(n_models)]
            for m, c in enumerate(chosen):
                if c is not None and math.isfinite(sweep.margin[m, c]):
                    best = max(best, float(sweep.margin[m, c]))
        draws[b] = best
        if progress is not None:
            progress(b + 1, n_permutations)
    p_value = (
        float((1 + np.sum(draws >= observed - 1e-12)) / (1 + n_permutations))
        if math.isfinite(observed)
        else math.nan
    )
    return {
        "observed": observed,
        "p_value": p_value,
        "q95": float(np.quantile(draws, 0.95)),
        "mean": float(draws.mean()),
        "n_permutations": n_permutations,
        "null": "per-example scores permuted across examples (heuristic values carry no "
        "information about them); thresholds searched again",
    }


def spread_warnings(table: Sequence[Mapping[str, Any]], n_trials: int) -> list[str]:
    """A warning (also logged) when the table's largest Monte-Carlo sd reaches
    :data:`MC_SD_WARN`: differences below about three times it are resampling noise."""
    sds = [r["bias_mc_sd"] for r in table if math.isfinite(r.get("bias_mc_sd", math.nan))]
    if not sds or max(sds) < MC_SD_WARN:
        return []
    top = max(sds)
    msg = (
        f"The Monte-Carlo sd of the biases reaches {top:.3f} with n_trials={n_trials}: "
        f"differences below about {3 * top:.3f} are resampling noise. Raise n_trials (the sd "
        "falls as 1/sqrt(n_trials))."
    )
    logger.warning("%s", msg)
    return [msg]
