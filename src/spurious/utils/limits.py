"""Upper bounds of size parameters, in one place (documented in each parameter's docstring).

An absurd size (``spurious demo --n 1e9``, ``--n-resamples 2e9``, ``--partitions 1e8``)
is refused in one message naming the parameter and its range, instead of ending in a
MemoryError after minutes of work. This module imports nothing, so the command line can
use the bounds in its options without loading scikit-learn.
"""

from __future__ import annotations

__all__ = ["MAX_PARTITIONS", "MAX_RESAMPLES", "MAX_SYNTHETIC_ROWS"]

#: Resampling draws (bootstrap resamples): at 100,000 the Monte-Carlo error of a 95% bound
#: is far below the precision reported; more only costs time and memory.
MAX_RESAMPLES = 100_000
#: AFLite's classifiers per round (the paper uses 64; 128 on its synthetic data).
MAX_PARTITIONS = 10_000
#: Rows a synthetic generator makes (``spurious demo --n``; 3,000 by default).
MAX_SYNTHETIC_ROWS = 1_000_000
