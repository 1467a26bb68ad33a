"""AFLite: adversarial filtering (paper 000, Alg. 1) and its evaluation-set mode (paper 004).

Modules: :mod:`~spurious.detectors.aflite.algorithm` (partitions, predictability, slice
selection: the building blocks, documented with the papers' symbols and every
deviation), :mod:`~spurious.detectors.aflite.detector` (the :class:`AFLite` analysis:
parameters, validation, the run), :mod:`~spurious.detectors.aflite.prepare` (sizes,
features and groups a run filters with), :mod:`~spurious.detectors.aflite.rounds` (the
filtering loop and one round), :mod:`~spurious.detectors.aflite.checkpoint` (state
saved after every round), :mod:`~spurious.detectors.aflite.outputs` (scores, metrics,
details), :mod:`~spurious.detectors.aflite.verdict` (baselines, shuffled-label null,
headline), :mod:`~spurious.detectors.aflite.baselines` (size-matched baselines) and
:mod:`~spurious.detectors.aflite.mcq` (multiple-choice items: option blocks, a
conditional logit, gold positions re-drawn within items as the null).
"""

from spurious.detectors.aflite.algorithm import (
    SELECTIONS,
    chunk_partitions,
    features_fingerprint,
    make_partition_model,
    predictability,
    round_rng,
    sample_partitions,
    score_partitions,
    select_slice,
)
from spurious.detectors.aflite.detector import AFLite

__all__ = [
    "SELECTIONS",
    "AFLite",
    "chunk_partitions",
    "features_fingerprint",
    "make_partition_model",
    "predictability",
    "round_rng",
    "sample_partitions",
    "score_partitions",
    "select_slice",
]
