"""The ``debiasing`` analysis: what debiasing objectives do to accuracy and prediction bias.

Paper 001 (Sec. 4.4, 5; Fig. 5-7) measures how much debiasing methods remove a shortcut
and finds them inconsistent: only resampling (RESAM) lowered the prediction bias it
targeted every time. This analysis closes that loop inside a run:

1. a **bias model** gives every training example class probabilities (a partial-input
   model scored out-of-fold, trained on its own budget with early stopping on the
   out-of-fold NLL and temperature-scaled; a shallow model, a heuristic split's biased
   segment, or a file; :mod:`spurious.models.debias.bias`), rescaled per method into
   ``<0; x>``; its accuracy, ECE and NLL (before / after calibration) are reported;
2. a model is trained on the training split with each **objective** (plain, product of
   experts, LearnedMixin, LearnedMixin+H, confidence regularization, example
   reweighting; :mod:`spurious.models.debias.losses`) and with **RESAM** data (plain
   loss on the heuristic-balanced rows), over several seeds;
3. each model is **measured** on the evaluation split: accuracy, accuracy on the *hard*
   examples (by default those the bias model gets wrong; ``hard_subset`` gives a subset
   of the user's own), and the prediction bias of paper 001 on
   each heuristic at the threshold the plain model's search found (Alg. 1, fixed across
   methods as in the paper), plus the training cost (wall time and its ratio to plain
   training in ``details["table"]``; epochs to 99% of the best eval accuracy);
4. optionally (``cross_bias=True``) the **cross-bias matrix** of Fig. 6/7: for each
   heuristic as the *targeted* bias (its biased segment trains the bias model; RESAM
   balances it), the change in prediction bias on every *measured* heuristic.

The models are, with ``path="fast"`` (the default), an MLP on frozen features
(:func:`spurious.models.debias.fast.train_fast`); with ``path="finetune"``, transformer
fine-tunes (MiniLM by default) of the full input through the fine-tuning engine with the
same objectives (:func:`spurious.models.finetune.finetune_cached`, cached on disk by
data, config, objective and a digest of the bias / teacher probabilities). The bias
model stays the fast one unless ``bias_model`` names a file; ConfReg's teacher is the
plain model of the same seed scored on the training split. See docs/methods/debiasing.md
for what the fast path changes against the papers' fine-tuned BERT/RoBERTa models.

The package, by concept:

- :mod:`~spurious.evaluate.debiasing.analysis`: the registered :class:`Debiasing`
  analysis (parameters, checks, the steps of a run, the headline);
- :mod:`~spurious.evaluate.debiasing.training`: one model per method and seed, on the
  fast path or the fine-tune path (with ConfReg's teacher and RESAM's rows);
- :mod:`~spurious.evaluate.debiasing.measures`: the measurements on the evaluation
  split (thresholds, prediction bias, the method table, the chance-corrected
  hard-subset gain);
- :mod:`~spurious.evaluate.debiasing.cross_bias`: the cross-bias matrix (step 4).
"""

from spurious.evaluate.debiasing.analysis import (
    DEFAULT_RESCALE,
    METHODS,
    NLI_HEURISTICS,
    Debiasing,
)

__all__ = ["DEFAULT_RESCALE", "METHODS", "NLI_HEURISTICS", "Debiasing"]
