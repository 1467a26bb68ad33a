"""Duplicated inputs within a split: exact copies after normalisation and near copies.

:mod:`~spurious.detectors.duplicates.search` finds them (normalised keys, candidate
pairs by prefix filtering, TF-IDF cosines, clusters);
:mod:`~spurious.detectors.duplicates.analysis` is the registered analysis ``duplicates``.
"""

from spurious.detectors.duplicates.analysis import Duplicates, split_duplicates
from spurious.detectors.duplicates.search import (
    candidate_pairs,
    clusters,
    exact_codes,
    near_pairs,
    normalise_fields,
    normalise_text,
)

__all__ = [
    "Duplicates",
    "candidate_pairs",
    "clusters",
    "exact_codes",
    "near_pairs",
    "normalise_fields",
    "normalise_text",
    "split_duplicates",
]
