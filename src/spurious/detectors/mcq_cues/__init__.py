"""Multiple-choice answer cues: does a model-free rule find the gold more often than chance?

For every option-picking cue of :mod:`spurious.heuristics.mcq` (the longest option, the
shortest, the one sharing most words with the question, the odd one out, "all / none of
the above", the largest / smallest number) and for the gold *position* ("always answer
the most frequent letter"), on the items where the cue picks an option:

- **hit rate**: how often its pick is the gold; **chance**: the mean of ``1 / k`` over
  those items (the hit rate if the gold sat at a uniformly random position);
- **effect** = hit rate - chance, with a 95% bootstrap interval over the items;
- a **permutation p-value** against "the gold is uniform among each item's options": the
  gold is re-drawn ``n_permutations`` times for every item at once (one-sided: the cue
  points *at* the gold); for the position cue the letter is chosen again on every draw,
  so picking the most frequent letter is part of the null;
- Benjamini-Hochberg **q** across the cues.

Beside the cues, the gold-letter distribution is tested against its expectation under
random positions (letter j expects ``sum over items with more than j options of 1/k``):
Pearson's chi-square (``scipy.stats.chisquare``), with the same permutation draws giving
an exact-null p-value as well (items with different option counts make the statistic a
mixture, so the chi-square law is an approximation there). With groups (MMLU subjects),
the cue table is also computed per group (BH within that table).

The headline rests on the strongest significant cue (q < ``alpha``): its effect interval
grades the severity (Balepur et al. 2024 for choices-only shortcuts; Pezeshkpour and
Hruschka 2024 for position bias).

``stats.py`` holds the statistics (null draws, cue table, gold-letter test, per-group
table); ``analysis.py`` the registered ``mc_cues`` analysis.
"""

from spurious.detectors.mcq_cues.analysis import MCCues
from spurious.detectors.mcq_cues.stats import (
    POSITION_CUE,
    cue_table,
    null_draws,
    position_test,
)

__all__ = ["POSITION_CUE", "MCCues", "cue_table", "null_draws", "position_test"]
