"""How much the minority marking depends on its seed.

Paper 002 clusters once. The clustering is a seeded procedure (the pseudo-label k-means,
the MLPs' initialisation and batches), and on SNLI dev-scale data five seeds mark
14.7-18.9% of the training pairs, two markings sharing 42% of their examples on
average (Jaccard; independent random sets of the same sizes: 9%), while the
bias-amplified split built on them moved its drop from -13.9 to -37.1 points
(``bench/amplify_marking_spread.py``). With ``stability_seeds = k`` the analysis clusters
k more times with the seeds ``random_state + 1 .. random_state + k`` and reports the
overlap of the marked sets against that chance level, and how often each scored example
is marked. The analysis' own ``minority`` marks stay those of its seed (the paper's
procedure); a second definition, ``minority_consensus``, marks what at least half of the
clusterings mark and carries the marked share as its score, so ``spurious amplify``
q-matches it to ``minority``'s size.
"""

from __future__ import annotations

from itertools import combinations
from numbers import Integral
from typing import Any

import numpy as np
import pandas as pd

from spurious.data.dataset import Dataset
from spurious.detectors.minority.clustering import MinorityClusters
from spurious.detectors.minority.details import minority_marks

__all__ = [
    "CONSENSUS",
    "STABILITY_METRIC_DOCS",
    "STABILITY_SCORE_COLUMNS",
    "consensus_marks",
    "marking_stability",
    "scored_marks",
    "stability_note",
    "stability_seeds_of",
]

#: The metrics ``stability_seeds > 0`` adds to the analysis' result.
STABILITY_METRIC_DOCS = {
    "stability_n_seeds": "With stability_seeds: clusterings compared (the analysis' own seed "
    "and stability_seeds more).",
    "marking_jaccard_mean / marking_jaccard_min": "With stability_seeds: mean and smallest Jaccard overlap "
    "of two seeds' marked training sets, [0, 1].",
    "marking_jaccard_chance": "With stability_seeds: the same pairs' expected Jaccard for "
    "independent random sets of the same sizes (the chance level), [0, 1].",
    "anti_biased_fraction_train_min / anti_biased_fraction_train_max": "With stability_seeds: the smallest and largest "
    "marked share of the training set over the seeds, [0, 1].",
}
#: The mark definition of the examples most seeds mark.
CONSENSUS = "minority_consensus"
STABILITY_METRIC_DOCS["anti_biased_fraction_train_consensus"] = (
    "With stability_seeds: share of the training set that at least half of the clusterings "
    "mark (the minority_consensus definition as marked), [0, 1]."
)
#: The score column it adds.
STABILITY_SCORE_COLUMNS = {
    "marked_frequency": "With stability_seeds: share of the clusterings (the analysis' seed "
    "and the others) that mark the example, [0, 1].",
}

#: Below this mean Jaccard of two seeds' marked training sets the analysis notes that
#: one marking is one draw.
UNSTABLE_JACCARD = 0.5


def stability_seeds_of(random_state: Any, k: int) -> list[int]:
    """The seeds of the ``k`` extra clusterings: the next ``k`` after ``random_state``
    (after 0 when it is not an integer: None or a generator).

    Examples
    --------
    >>> stability_seeds_of(0, 3), stability_seeds_of(None, 2), stability_seeds_of(7, 0)
    ([1, 2, 3], [1, 2], [])
    """
    start = int(random_state) if isinstance(random_state, Integral) else 0
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


def consensus_marks(
    results: list[MinorityClusters],
    train: Dataset,
    evald: Dataset | None,
    metrics: dict[str, float],
) -> list[pd.DataFrame]:
    """The ``minority_consensus`` marks: examples that at least half of the clusterings
    mark, with their marked share as the ``score``.

    With the score, ``spurious amplify`` q-matches the definition to ``minority``'s count
    like a cartography definition (its most often marked examples first; ties to the
    earlier row): a split of the seed-stable minority examples, the same size as one
    seed's. Adds ``anti_biased_fraction_train_consensus`` to ``metrics``.
    """
    out = []
    for split, ds in (("train", train), ("eval", evald)):
        if ds is None:
            continue
        marks = (
            scored_marks(results, has_eval=True)
            if split == "eval"
            else [r.train_anti_biased for r in results]
        )
        freq = np.mean(np.vstack(marks).astype(float), axis=0)
        out.append(minority_marks(ds, split, freq >= 0.5, CONSENSUS, score=freq))
        if split == "train":
            metrics["anti_biased_fraction_train_consensus"] = float(np.mean(freq >= 0.5))
    return out


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
        "marking as one draw: the minority_consensus definition (what most seeds mark) and "
        "the marked_frequency column say which examples are stable."
    )
