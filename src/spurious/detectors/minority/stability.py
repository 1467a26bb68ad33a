"""How much the minority marking depends on its seed.

Paper 002 clusters once. The clustering is a seeded procedure (the pseudo-label k-means,
the MLPs' initialisation and batches), and on SNLI dev-scale data five seeds mark
14.7-18.9% of the training pairs, two markings sharing 42% of their examples on
average (Jaccard; independent random sets of the same sizes: 9%), while the
bias-amplified split built on them moved its drop from -13.9 to -37.1 points
(``bench/amplify_marking_spread.py``). With ``stability_seeds = k`` the analysis clusters
k more times with the seeds ``random_state + 1 .. random_state + k`` and reports the
overlap of the marked sets against that chance level, and how often each scored example
is marked. The analysis' own marks stay those of its seed (the paper's procedure).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from spurious.detectors.minority.clustering import MinorityClusters

__all__ = [
    "STABILITY_METRIC_DOCS",
    "STABILITY_SCORE_COLUMNS",
    "marking_stability",
    "scored_marks",
    "stability_note",
    "stability_seeds_of",
]

#: The metrics ``stability_seeds > 0`` adds to the analysis' result.
STABILITY_METRIC_DOCS = {
    "stability_n_seeds": "With stability_seeds: clusterings compared (the analysis' own seed "
    "and stability_seeds more).",
    "marking_jaccard_mean / _min": "With stability_seeds: mean and smallest Jaccard overlap "
    "of two seeds' marked training sets, [0, 1].",
    "marking_jaccard_chance": "With stability_seeds: the same pairs' expected Jaccard for "
    "independent random sets of the same sizes (the chance level), [0, 1].",
    "anti_biased_fraction_train_min / _max": "With stability_seeds: the smallest and largest "
    "marked share of the training set over the seeds, [0, 1].",
}
#: The score column it adds.
STABILITY_SCORE_COLUMNS = {
    "marked_frequency": "With stability_seeds: share of the clusterings (the analysis' seed "
    "and the others) that mark the example, [0, 1].",
}

#: Below this mean Jaccard of two seeds' marked training sets the analysis notes that
#: one marking is one draw.
UNSTABLE_JACCARD = 0.5


def stability_seeds_of(random_state: int | None, k: int) -> list[int]:
    """The seeds of the ``k`` extra clusterings: the next ``k`` after ``random_state``
    (after 0 when it is None).

    Examples
    --------
    >>> stability_seeds_of(0, 3), stability_seeds_of(None, 2), stability_seeds_of(7, 0)
    ([1, 2, 3], [1, 2], [])
    """
    start = 0 if random_state is None else int(random_state)
    return [start + i for i in range(1, int(k) + 1)]


def scored_marks(results: list[MinorityClusters], has_eval: bool) -> list[np.ndarray]:
    """Each clustering's marks over the scored split: the evaluation split when there is
    one (every stability re-run assigns it), else the training split."""
    out = []
    for r in results:
        marks = r.eval_anti_biased if has_eval else r.train_anti_biased
        if marks is None:  # a clustering run without the evaluation split
            raise ValueError("a stability clustering has no marks for the evaluation split")
        out.append(marks)
    return out


def _jaccard(a: np.ndarray, b: np.ndarray) -> float:
    union = int(np.count_nonzero(a | b))
    return float(np.count_nonzero(a & b) / union) if union else 1.0


def _chance_jaccard(p: float, q: float) -> float:
    """Expected Jaccard of two independent random subsets holding shares ``p`` and ``q``
    of the same items (large-n limit): ``pq / (p + q - pq)``."""
    union = p + q - p * q
    return p * q / union if union > 0 else 1.0


def marking_stability(
    train_marks: list[np.ndarray], scored_marks: list[np.ndarray]
) -> tuple[dict[str, float], np.ndarray]:
    """Overlap of the marked training sets of several seeds, against independent random
    sets of the same sizes, and the share of seeds marking each scored example.

    Parameters
    ----------
    train_marks : list of numpy.ndarray of bool
        Each seed's minority marks over the training split (the analysis' own first).
    scored_marks : list of numpy.ndarray of bool
        The same seeds' marks over the scored split.

    Returns
    -------
    metrics : dict
        ``stability_n_seeds``, ``marking_jaccard_mean`` / ``_min`` (over pairs of seeds),
        ``marking_jaccard_chance`` (the same pairs' expectation for independent random
        sets), ``anti_biased_fraction_train_min`` / ``_max``.
    frequency : numpy.ndarray of float
        Per scored example, the share of seeds that mark it, [0, 1].

    Examples
    --------
    >>> a = np.array([1, 1, 0, 0, 0, 0], bool); b = np.array([1, 0, 1, 0, 0, 0], bool)
    >>> m, freq = marking_stability([a, b], [a, b])
    >>> round(m["marking_jaccard_mean"], 3), freq.tolist()
    (0.333, [1.0, 0.5, 0.5, 0.0, 0.0, 0.0])
    """
    shares = [float(np.mean(m)) if len(m) else 0.0 for m in train_marks]
    pairs = list(combinations(range(len(train_marks)), 2))
    jac = [_jaccard(train_marks[i], train_marks[j]) for i, j in pairs]
    chance = [_chance_jaccard(shares[i], shares[j]) for i, j in pairs]
    metrics = {
        "stability_n_seeds": float(len(train_marks)),
        "marking_jaccard_mean": float(np.mean(jac)) if jac else 1.0,
        "marking_jaccard_min": float(np.min(jac)) if jac else 1.0,
        "marking_jaccard_chance": float(np.mean(chance)) if chance else 1.0,
        "anti_biased_fraction_train_min": min(shares),
        "anti_biased_fraction_train_max": max(shares),
    }
    frequency = np.mean(np.vstack(scored_marks).astype(float), axis=0)
    return metrics, frequency


def stability_note(metrics: dict[str, float]) -> str | None:
    """The report's note when two seeds' markings overlap little; None otherwise.

    Examples
    --------
    >>> stability_note({"stability_n_seeds": 5.0, "marking_jaccard_mean": 0.42,
    ...     "marking_jaccard_chance": 0.09, "anti_biased_fraction_train_min": 0.147,
    ...     "anti_biased_fraction_train_max": 0.189})[:47]
    'The marked set depends on the seed: over 5 seed'
    """
    if "marking_jaccard_mean" not in metrics:
        return None
    mean = metrics["marking_jaccard_mean"]
    if mean >= UNSTABLE_JACCARD:
        return None
    return (
        f"The marked set depends on the seed: over {metrics['stability_n_seeds']:.0f} seeds "
        f"two markings share {mean:.0%} of their examples on average (Jaccard; independent "
        f"random sets of the same sizes: {metrics['marking_jaccard_chance']:.0%}), and mark "
        f"{metrics['anti_biased_fraction_train_min']:.1%}-"
        f"{metrics['anti_biased_fraction_train_max']:.1%} of the training set. Read one "
        "marking as one draw: see the marked_frequency column, and re-mark with other "
        "random_state values before building a split on it."
    )
