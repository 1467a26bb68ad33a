"""PECO: single-sentence label leakage as cluster outliers (paper 003 Sec. 3.2, App. C).

Modules (plain functions unless named): :mod:`~spurious.detectors.peco.divergence`
(label distributions, Eq. 11 divergences, the Eq. 12 area and the authors' reference
curve), :mod:`~spurious.detectors.peco.clusters` (PCA and k-means, the choice of k),
:mod:`~spurious.detectors.peco.score` (one fit, the shuffled baseline, the bootstrap and
the App. C sweep; it re-exports the two modules before it),
:mod:`~spurious.detectors.peco.regions` (biased regions by rule, and by chance),
:mod:`~spurious.detectors.peco.details` (cluster table, example sentences, 2-D map,
cartography comparison for the report) and :mod:`~spurious.detectors.peco.analysis`
(the :class:`Peco` analysis).
"""

from spurious.detectors.peco.analysis import Peco, default_elicited_view
from spurious.detectors.peco.score import (
    auto_n_clusters,
    cluster_divergences,
    fit_peco,
    peco_area,
    peco_curve,
    permutation_scores,
    sweep,
)

__all__ = [
    "Peco",
    "auto_n_clusters",
    "cluster_divergences",
    "default_elicited_view",
    "fit_peco",
    "peco_area",
    "peco_curve",
    "permutation_scores",
    "sweep",
]
