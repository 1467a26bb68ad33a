"""Single-sentence (partial-input) label leakage: paper 003 (PECO) Sec. 2.1-2.2 and 3.1.

Probes are trained in the paired condition (PSC, the full input) and in each
single-sentence condition (SSC, e.g. hypothesis-only) and evaluated on the same
examples. How far a partial-input probe beats the majority guess (Delta_maj, Eq. 4), how
much of the full-input accuracy it recovers (%R_R, Eq. 5) and how often it agrees with the
full-input probe (NBA, Eq. 7; NBR, Eq. 8) measure label leakage through part of the input.

Deviations from the paper (see docs/methods/partial_input.md):

- By default, probes on frozen features (tf-idf or MiniLM sentence embeddings) stand in
  for fine-tuned RoBERTa-large; absolute accuracies are lower, the comparison between
  conditions is what the metrics use. ``model="finetune"`` fine-tunes a transformer per
  condition instead (the paper's Sec. 2.4 procedure, with the training engine; MiniLM by
  default), and adds token relevance agreement (TRA, Sec. 3.1 Eq. 9-10) between the
  full-input and each partial-input model.
- Eq. 7 divides the agreement *ratio* Ag by |X| once more; read literally that would be
  ~1/N. We divide the agreement *count* by |X| (NBA = fraction of examples where the two
  probes agree), which is what the paper's numbers show (Table 4: 32.0-70.0%, i.e.
  0.32-0.70).
- The majority baseline guesses the most frequent label of the *training* split.
- 95% intervals come from a percentile bootstrap over evaluation examples (the trained
  probes are fixed); they do not include training-seed variance.

Scale (issue 14, item 11). Without an evaluation split every condition is cross-fitted
on the same folds, computed once per run (the ``"cv_folds"`` artifact). Lexical features
are tokenised once per text block (the ``"lexical_counts"`` artifact); each fold's
vocabulary and idf are then built from its training rows' counts, equal to the bit to
refitting the featurizer on those rows. The fold x condition fits are independent tasks
for an :class:`~spurious.execution.Executor` (local, or Ray across a cluster), each a
pure function of the shared inputs, so every executor gives the same result. The
intervals resample counts of joint outcomes (:func:`~spurious.stats.bootstrap.bootstrap_of_means`)
instead of examples.

The data flow, one module each: :mod:`~spurious.detectors.partial_input.detector` (the
registered :class:`PartialInput`) gets class probabilities per condition, out of fold
through :mod:`~spurious.detectors.partial_input.crossfit` (folds, the ``"cv_folds"`` and
``"lexical_counts"`` artifacts, the fold x condition task) when there is no evaluation
split, and scores them with :mod:`~spurious.detectors.partial_input.metrics`
(:func:`leakage_metrics`); fine-tuned conditions and TRA are in
:mod:`~spurious.detectors.partial_input.finetuned`, the score table, examples and
summary in :mod:`~spurious.detectors.partial_input.outputs`.
"""

# The private names are imported from here by tests and bench/bench_leakage_scale.py.
from spurious.detectors.partial_input.crossfit import (  # noqa: F401
    _CrossFitInputs,
    _fit_fold,
    _fit_predict,
    assign_folds,
    stratified_group_folds,
)
from spurious.detectors.partial_input.detector import PartialInput
from spurious.detectors.partial_input.metrics import leakage_metrics

__all__ = ["PartialInput", "assign_folds", "leakage_metrics", "stratified_group_folds"]
