"""Training dynamics: how a model's belief in each example's gold label moves while it trains.

Dataset cartography (Swayamdipta et al. 2020, used by paper 002 Sec. 3) summarises, per
example, the probability a model gives the gold label at the end of each training epoch.
This package holds the record and everything that makes or moves one:

- :class:`TrainingDynamics`: one row per (example, split, recording) with ``p_gold``,
  ``pred``, ``correct`` and optionally the ``logits``; saved as Parquet + JSON
  (atomically), and converted to and from allenai/cartography's
  ``dynamics_epoch_{e}.jsonl`` files so dynamics recorded elsewhere can be used here and
  ours elsewhere;
- :func:`cartography_stats`: confidence, variability, correctness and forgetting events
  per example;
- :func:`probe_dynamics`: the *fast path* (issue 8 part 3), a small MLP or a linear
  softmax layer trained for a few epochs on frozen features (cached sentence
  embeddings), recording every training and evaluation example after every epoch;
- :func:`option_dynamics`: the fast path for multiple-choice items, an option scorer
  (shared weights over each item's option blocks, softmax over its real options) whose
  record holds the gold option's probability;
- :func:`crossfit_dynamics`: held-out dynamics of a training split without an evaluation
  split (each example recorded by a probe trained on the other folds);
- the paths that make a record (:data:`PATHS`); the ``"training_dynamics"`` artifact
  provider that picks one lives in :mod:`spurious.artifacts.dynamics`, so every analysis
  of a run shares one record per configuration.

Dynamics of the evaluation split come from the model trained on the training split only,
recorded after each epoch as one would record validation accuracy (paper 002 Sec. 3 and
footnote 5: "we are **not** fine-tuning on the test set").

Modules, in the order the data flows: :mod:`~spurious.models.dynamics.probe` and
:mod:`~spurious.models.dynamics.options` (the fast paths make a dynamics frame),
:mod:`~spurious.models.dynamics.record` (the record and its Parquet + JSON files),
:mod:`~spurious.models.dynamics.cartography_files` (allenai's jsonl files) and
:mod:`~spurious.models.dynamics.stats` (the summary statistics).
"""

from spurious.models.dynamics.crossfit import crossfit_dynamics, stratified_folds
from spurious.models.dynamics.options import option_dynamics, permute_gold_within_counts
from spurious.models.dynamics.probe import FAST_MODELS, FAST_OPTIONS, probe_dynamics
from spurious.models.dynamics.record import (
    DYNAMICS_COLUMNS,
    OPTIONAL_COLUMNS,
    PATHS,
    TrainingDynamics,
    load_dynamics,
)
from spurious.models.dynamics.stats import cartography_stats

__all__ = [
    "DYNAMICS_COLUMNS",
    "FAST_MODELS",
    "FAST_OPTIONS",
    "OPTIONAL_COLUMNS",
    "PATHS",
    "TrainingDynamics",
    "cartography_stats",
    "crossfit_dynamics",
    "load_dynamics",
    "option_dynamics",
    "permute_gold_within_counts",
    "probe_dynamics",
    "stratified_folds",
]
