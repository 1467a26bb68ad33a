"""Are adversarially filtered evaluation sets fair? (paper 004, Sec. 5, App. A-B).

For a set of adversaries (representations Phi, each run through AFLite's
evaluation-set mode over several seeds) and a set of evaluated models (prediction files),
this package measures

- the filter stage of every evaluation example per adversary and seed
  (:mod:`~spurious.evaluate.fairness.adversaries`, Fig. 1);
- every model's accuracy on every adversary's AF-selected set (:mod:`.matrix`, Fig. 2/7);
- how stable the models' ranking is (:mod:`.ranking`, Fig. 3/4);
- the annotators' agreement with the gold label per stage (:mod:`.agreement`, Fig. 5/9);

and :mod:`.analysis` registers it all as the ``fairness`` analysis: :mod:`.steps` turns
each part of a run into metrics and detail rows, :mod:`.verdict` puts them into words,
:mod:`.families` infers model families for the same-family rank change. On extractive QA
the study runs on answer-sentence selection: :mod:`spurious.features.qa_sentences` builds
the candidate sentences and the QA adversaries' features, :mod:`.qa` filters with them.
"""

from spurious.evaluate.fairness.adversaries import (
    PAPER_TABLE3,
    STAGES,
    adversary_names,
    run_adversaries,
)
from spurious.evaluate.fairness.agreement import (
    agreement_by_stage,
    gold_agreement,
    label_entropy,
    read_label_counts,
)
from spurious.evaluate.fairness.matrix import accuracy_matrix, correctness
from spurious.evaluate.fairness.ranking import family_rank_change, rank_agreement, ranks

__all__ = [
    "PAPER_TABLE3",
    "STAGES",
    "accuracy_matrix",
    "adversary_names",
    "agreement_by_stage",
    "correctness",
    "family_rank_change",
    "gold_agreement",
    "label_entropy",
    "rank_agreement",
    "ranks",
    "read_label_counts",
    "run_adversaries",
]
