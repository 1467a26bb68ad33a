"""Model-free association of heuristics and simple properties with the gold label (issue 20, part 2).

Every registered heuristic of the task (lexical overlap, negation, hypothesis length,
subsequence ...) and three simple properties of every text field (length in words,
punctuation marks, digits) is a 1-D feature x. Without any model, the analysis asks how
much x alone tells about the gold label y:

- **effect** (comparable across features): the out-of-fold accuracy of a *binned
  classifier* (x cut at its quantiles into at most ``n_bins`` bins, each bin predicting the
  majority label of its training fold) minus the out-of-fold accuracy of the majority
  guess; in accuracy points, 0 = no information. Beside it, the plug-in mutual
  information I(bin; y) in bits.
- **p-value**: a permutation test of I(bin; y) (labels permuted, bins fixed),
  ``(1 + #{I_perm >= I}) / (1 + B)``; **Benjamini-Hochberg** over all features.
- **per-label breakdown**: p(y | bin) for every bin, and which label the lowest and the
  highest values point to (the label whose share rises most above its prior).

Gururangan et al. (2018, Sec. 3) report these associations on SNLI as tables of
conditional label shares (negation -> contradiction; long hypotheses -> neutral, short
-> entailment); McCoy et al. (2019) name lexical overlap -> entailment. See
docs/methods/associations.md.

The data flow, one module each: :mod:`~spurious.detectors.associations.analysis` (the
registered :class:`Associations`: which features, BH over them, per-example scores,
the headline) tests each feature with :mod:`~spurious.detectors.associations.binning`
(quantile bins, the out-of-fold binned classifier), whose p-value comes from the random
tables of :mod:`~spurious.detectors.associations.permutation`; the text properties and
QA's random-span null are in :mod:`~spurious.detectors.associations.properties`.
"""

from spurious.detectors.associations.analysis import MIN_EXAMPLES, Associations
from spurious.detectors.associations.binning import (
    BinnedAssociation,
    bin_feature,
    binned_association,
)
from spurious.detectors.associations.permutation import mutual_information, permuted_tables
from spurious.detectors.associations.properties import null_spans, text_properties

__all__ = [
    "MIN_EXAMPLES",
    "Associations",
    "BinnedAssociation",
    "bin_feature",
    "binned_association",
    "mutual_information",
    "null_spans",
    "permuted_tables",
    "text_properties",
]
