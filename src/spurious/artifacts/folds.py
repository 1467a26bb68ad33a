"""Cross-fitting inputs shared by every view and analysis: the folds, the lexical counts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from spurious.artifacts.protocol import ArtifactContext

__all__ = ["cv_folds", "lexical_counts"]


def cv_folds(
    ctx: ArtifactContext, *, n_folds: int, group_by: str | None, random_state: int | None
) -> np.ndarray:
    """Folds of the data, computed once per run and shared by every view (and analysis)."""
    from spurious.data.folds import assign_folds

    return assign_folds(ctx.train, n_folds, group_by, random_state)


def lexical_counts(ctx: ArtifactContext, *, ngram_max: int, lowercase: bool, block: str) -> Any:
    """N-gram counts of one text block of the data: the run's one tokenisation of it."""
    from spurious.features import LexicalFeaturizer

    featurizer = LexicalFeaturizer(ngram_max=ngram_max, lowercase=lowercase)
    return featurizer.count_block(ctx.train, block)
