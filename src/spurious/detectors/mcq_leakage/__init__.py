"""Partial-input leakage of multiple-choice items (paper 003 Sec. 2-3.1 in MC form).

An option-scoring probe (:class:`~spurious.models.conditional_logit.ConditionalLogit` on
:class:`~spurious.features.mcq.OptionBlocks`) answers each item from a view: the whole
item, the options alone (choices-only, Balepur et al. 2024) or the question alone. Its
accuracy is judged against chance (the mean of 1/k), with bootstrap intervals and a
shuffled-gold permutation test.

- :mod:`~spurious.detectors.mcq_leakage.fitting`: folds, the probe's out-of-sample
  option probabilities per view, the shuffled-gold null;
- :mod:`~spurious.detectors.mcq_leakage.metrics`: accuracy, chance, Delta over chance,
  chance-corrected %R_R, NBA / NBR, the permutation p-value, the per-group table;
- :mod:`~spurious.detectors.mcq_leakage.analysis`: the registered ``mc_leakage``.
"""

from spurious.detectors.mcq_leakage.analysis import MCLeakage

__all__ = ["MCLeakage"]
