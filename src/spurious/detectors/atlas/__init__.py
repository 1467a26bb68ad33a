"""The artifact atlas (issue 20, part 1): token-label statistics per text field.

``stats.py`` holds the vectorised statistics (counts, Gardner et al.'s z, Bonferroni and
Benjamini-Hochberg, Gururangan et al.'s smoothed PMI); ``fields.py`` one field's atlas
(every tested token x label, each example's cue, the report's details of the field);
``analysis.py`` the registered ``atlas`` analysis. See docs/methods/atlas.md.
"""

from spurious.detectors.atlas.analysis import Atlas, FieldAtlas, field_atlas
from spurious.detectors.atlas.stats import (
    adjust_p,
    count_tokens,
    gardner_z,
    significance_curve,
    smoothed_pmi,
    token_label_counts,
    wilson_interval,
)

__all__ = [
    "Atlas",
    "FieldAtlas",
    "adjust_p",
    "count_tokens",
    "field_atlas",
    "gardner_z",
    "significance_curve",
    "smoothed_pmi",
    "token_label_counts",
    "wilson_interval",
]
