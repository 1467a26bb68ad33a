"""Prediction bias: how much better a model does on one side of a heuristic's split.

Mikula et al., "Think Twice: Measuring the Efficiency of Eliminating Prediction
Shortcuts of Question Answering Models" (Algorithm 1, Sec. 3, App. C).

A *heuristic* ``h`` gives every example an attribute ``A_h = h(x)`` (for example the
number of words between the answer and the closest question word). A threshold ``T``
splits the evaluation data into

- ``X1`` (the *low* group): ``A_h <= T``, and
- ``X2`` (the *high* group): ``A_h > T``.

Each group is bootstrapped (``n_trials`` resamples of ``sample_size`` examples; the
paper: 100 x 800) into a distribution of mean scores ``E1`` / ``E2``, and

``prediction bias = max(0, E1_q_low - E2_q_high, E2_q_low - E1_q_high)``

with ``q_low = 0.025`` and ``q_high = 0.975``: the gap between the two groups' bootstrap
intervals, 0 when they overlap. The *margin* is the same expression without the
``max(0, .)`` (negative: by how much the intervals overlap); it breaks ties among
thresholds whose bias is 0.

**Threshold search** (App. C): candidates run over the attribute's range in steps of 1
(of 0.1 when every value lies in ``[0, 1]``); a candidate is *valid* when both groups
hold at least ``2 * sample_size`` examples. The threshold with the largest bias among
valid candidates is chosen. When no valid candidate separates the groups (bias 0
everywhere), the paper allows a threshold whose groups only exceed ``sample_size``; we
then take the best such candidate with a positive bias (``validity="relaxed"``).

**Natural bias** (Sec. 3, "Human"): where examples carry several annotations, every
annotator is scored against the others (leave-one-out) and treated as a model; the
natural prediction bias is the minimum over annotators at the same threshold.

Bootstrap resampling is vectorised (:func:`spurious.stats.split_bootstrap.split_bootstrap`):
one ``(n_trials, sample_size)`` matrix of uniform draws per group turns into indices for
every candidate threshold and every model in one gather and one mean (common random
numbers across thresholds, which also makes the bias-vs-threshold curve smooth).
Per-example metrics are computed once beforehand.

The package: :mod:`~spurious.stats.bias_search` (one model, one
heuristic: fixed split, threshold search, natural bias; its option and result types in
:mod:`~spurious.stats.bias_results`),
:mod:`~spurious.evaluate.prediction_bias.table` (:func:`bias_table`: models x heuristics)
with its input checks (:mod:`~spurious.evaluate.prediction_bias.checks`) and its
Monte-Carlo spread and permutation null (:mod:`~spurious.evaluate.prediction_bias.spread`),
and :mod:`~spurious.evaluate.prediction_bias.analysis` (the registered analysis).
"""

from spurious.evaluate.prediction_bias.table import bias_table
from spurious.stats.bias_search import (
    PAPER_QA_THRESHOLDS,
    PAPER_QA_WORSE_GROUP_SIZES,
    BiasResult,
    GroupStats,
    NaturalBiasResult,
    adapted_sample_size,
    candidate_thresholds,
    natural_bias,
    prediction_bias,
    split_capacity,
    threshold_search,
)

__all__ = [
    "PAPER_QA_THRESHOLDS",
    "PAPER_QA_WORSE_GROUP_SIZES",
    "BiasResult",
    "GroupStats",
    "NaturalBiasResult",
    "adapted_sample_size",
    "bias_table",
    "candidate_thresholds",
    "natural_bias",
    "prediction_bias",
    "split_capacity",
    "threshold_search",
]
