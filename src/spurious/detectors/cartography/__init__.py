"""Dataset cartography and partial-input cartography: paper 002 Sec. 3 (Swayamdipta et al. 2020).

A model is trained on the data and, after every epoch, gives each example a probability
for its gold label. The mean over epochs (*confidence*) and its spread (*variability*)
place the example on a *data map*: easy-to-learn (high confidence), hard-to-learn (low
confidence) or ambiguous (high variability). Paper 002 marks the q% most hard-to-learn
examples of each split *anti-biased* (Sec. 3, "Dataset Cartography") and repeats the map
with a model that sees only part of the input (Sec. 3, "Partial-input Baselines": the
hypothesis for NLI, the first question for QQP): an example a hypothesis-only model
learns easily is one whose label shows in the hypothesis alone.

Evaluation examples get their dynamics from the model trained on the training split,
recorded after each epoch as validation accuracy would be, never trained on (paper 002
footnote 5). Without an evaluation split the training examples are mapped.

Deviations from the papers (see docs/methods/cartography.md):

- The default dynamics come from the *fast path*: a one-hidden-layer MLP trained for 10
  epochs on frozen sentence embeddings (:func:`spurious.models.dynamics.probe_dynamics`),
  not a fine-tuned RoBERTa-base (``path="finetune"`` uses the fine-tuning engine).
- Probabilities are recorded after each epoch with the model in evaluation mode (the
  definition of Swayamdipta et al. Sec. 2); allenai/cartography's trainer logs the
  logits of the training forward passes instead.
- Regions: Swayamdipta et al. name the regions on the map and, for their selection
  experiments (Sec. 4), take the 33% most ambiguous (highest variability), easy-to-learn
  (highest confidence) and hard-to-learn (lowest confidence) examples. We assign each
  example one region by those rank rules, confidence first (see :func:`assign_regions`).

The data flow, one module each: :mod:`~spurious.detectors.cartography.analysis` (the
registered :class:`Cartography`: parameters, the dynamics it asks the run for, the run
and the headline) maps each view with :mod:`~spurious.detectors.cartography.maps` (per
example columns, marks, the report's examples and tables), which ranks examples into
regions with :mod:`~spurious.detectors.cartography.regions` (plain functions); the
numbers of a map and the agreement of two maps are in
:mod:`~spurious.detectors.cartography.stats`, the headline, summary and notes in
:mod:`~spurious.detectors.cartography.verdict`. Multiple-choice items (task ``mcq``) are
mapped with an option scorer's dynamics; their views, per-item chance ``1/k`` and
permuted-gold null are in :mod:`~spurious.detectors.cartography.mcq`.
"""

from spurious.detectors.cartography.analysis import (
    MIN_TRAIN_EXAMPLES,
    Cartography,
    default_partial_view,
)
from spurious.detectors.cartography.regions import (
    REGIONS,
    anti_biased_mask,
    assign_regions,
    top_k_count,
)
from spurious.detectors.cartography.stats import (
    difference_interval,
    excess_over_null,
    spearman_interval,
)
from spurious.detectors.cartography.verdict import FAST_PATH_NOTE

__all__ = [
    "FAST_PATH_NOTE",
    "MIN_TRAIN_EXAMPLES",
    "REGIONS",
    "Cartography",
    "anti_biased_mask",
    "assign_regions",
    "default_partial_view",
    "difference_interval",
    "excess_over_null",
    "spearman_interval",
    "top_k_count",
]
