"""Minority examples by clustering: paper 002 ("Fighting Bias with Bias") Sec. 3 and App. C.

The training set is clustered in a representation; within each cluster the examples of
its *majority label* (the label with the most training examples there) are *biased* and
the others are *minority examples*, *anti-biased* (Sec. 3). Evaluation examples go to
the cluster of their nearest training neighbour (Euclidean) and are anti-biased iff their
label is not that cluster's majority label. Footnote 10's variant (used for ANLI and
WANLI, where "all but the majority" marked over 40% of the training set) marks only the
cluster's *least frequent* label; ``minority_rule="auto"`` (the default) applies that
switch whenever "all but the majority" would mark more than 40%.

The clustering (App. C.1-C.2) is one DeepCluster iteration (Caron et al. 2018): cluster
the representation into m pseudo-labels, train a fresh model on them for one epoch,
embed again, then Ward into k clusters (k = 10; m = 1500 and the layer before last were
tuned on SST-2, App. C.3). Plain k-means and plain Ward are options: App. C.4.1 found
them label-homogeneous (under 5% minority instances per cluster on SST-2, against 15%
with DeepCluster), which is why the paper used DeepCluster.

Deviations (see docs/methods/minority.md):

- The default representation is a frozen sentence encoder (MiniLM pair features), not
  the [CLS] of a RoBERTa-base fine-tuned on the task; ``features="finetuned:<dir>"``
  clusters a fine-tuned model's [CLS] (layer before last by default, as App. C.3).
- The DeepCluster model is a fresh one-hidden-layer MLP on the frozen features (its
  hidden layer is the new representation), not a fresh pretrained transformer.
- Pseudo-labels come from k-means (DeepCluster's own choice) by default; App. C.2 used
  Ward (``pseudo_clustering="ward"``).
- m scales with the data (:func:`~spurious.models.clustering.auto_n_pseudo_labels`).
- Ward above ``exact_max_samples`` points runs on mini-batch k-means pre-clusters
  weighted by their counts (no n x n matrix); the paper clustered a 50% sample instead.

The data flow, one module each: :mod:`~spurious.detectors.minority.analysis` (the
registered :class:`MinorityExamples`) gets the features and calls
:mod:`~spurious.detectors.minority.clustering` (:func:`find_minority_examples` on
matrices: DeepCluster / Ward / k-means, nearest-neighbour assignment), which marks
examples with :mod:`~spurious.detectors.minority.labels` (counts per cluster and label,
minority labels, homogeneity: plain functions); the analysis writes its scores, cluster
table, example sentences and marks with :mod:`~spurious.detectors.minority.details`.
:mod:`~spurious.detectors.minority.methods` runs the clusterings (the analysis' method
and, with ``compare_methods``, the others) as tasks of an executor, local or Ray.
"""

from spurious.detectors.minority.analysis import MinorityExamples
from spurious.detectors.minority.clustering import (
    METHODS,
    MinorityClusters,
    find_minority_examples,
)
from spurious.detectors.minority.labels import (
    AUTO_SWITCH_SHARE,
    MINORITY_SHARE_CUT,
    RULES,
    choose_rule,
    homogeneity_stats,
    label_counts,
    minority_labels,
    purity_null,
)

__all__ = [
    "AUTO_SWITCH_SHARE",
    "METHODS",
    "MINORITY_SHARE_CUT",
    "RULES",
    "MinorityClusters",
    "MinorityExamples",
    "choose_rule",
    "find_minority_examples",
    "homogeneity_stats",
    "label_counts",
    "minority_labels",
    "purity_null",
]
