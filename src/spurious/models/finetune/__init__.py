"""Fine-tuning engine: sequence classification on any view, training dynamics, hidden states.

- :func:`fine_tune` (``transformers.Trainer`` underneath) -> :class:`FineTuneResult`:
  the model (safetensors), per-epoch dynamics of every training and evaluation example,
  history and metrics; :class:`FineTuneConfig` holds the hyperparameters.
- :func:`hidden_states`: pooled hidden states of any layer of a trained model, the
  representation behind the ``finetuned:<dir>`` featurizer; :func:`predict_proba`: its
  class probabilities.
- :func:`token_relevance` / :func:`relevance_agreement` /
  :func:`token_relevance_agreement`: per-token gradient relevance and token relevance
  agreement (TRA) of full- and partial-input models (paper 003 Eq. 9-10).
- :func:`finetune_cached`: a fine-tune cached on disk by data and config (what the
  artifact providers of :mod:`spurious.artifacts.finetune` call).
- :func:`warmup_split`: AFLite's warm-up fraction (paper 000 Sec. 4).

Method notes and measurements: ``docs/methods/training.md``. Everything that needs torch
is imported lazily, so importing this package is cheap.
"""

from spurious.models.finetune.attribution import (
    TokenRelevance,
    relevance_agreement,
    token_relevance,
    token_relevance_agreement,
)
from spurious.models.finetune.cached import (
    finetune_cache_dir,
    finetune_cached,
    warmup_split,
)
from spurious.models.finetune.config import FineTuneConfig
from spurious.models.finetune.engine import FineTuneResult, fine_tune
from spurious.models.finetune.inference import hidden_states, predict_proba, weights_digest
from spurious.models.finetune.recording import FINETUNE_FRAME_COLUMNS, read_dynamics

__all__ = [
    "FINETUNE_FRAME_COLUMNS",
    "FineTuneConfig",
    "FineTuneResult",
    "TokenRelevance",
    "fine_tune",
    "finetune_cache_dir",
    "finetune_cached",
    "hidden_states",
    "predict_proba",
    "read_dynamics",
    "relevance_agreement",
    "token_relevance",
    "token_relevance_agreement",
    "warmup_split",
    "weights_digest",
]
