"""Option blocks of multiple-choice items, shared by every analysis of a run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from spurious.artifacts.protocol import ArtifactContext

__all__ = ["fitted_option_featurizer", "option_blocks"]


def fitted_option_featurizer(ctx: ArtifactContext, *, features: str, n_components: int) -> Any:
    """An :class:`~spurious.features.mcq.OptionFeaturizer` fitted on the data (train split)."""
    from spurious.features.mcq import OptionFeaturizer

    return OptionFeaturizer(features, n_components=n_components, random_state=0).fit(ctx.train)


def option_blocks(
    ctx: ArtifactContext, *, features: str = "minilm", view: str, split: str, n_components: int = 32
) -> Any:
    """The :class:`~spurious.features.mcq.OptionBlocks` of ``split`` seen through ``view``.

    Every split of a run gets the same number of blocks (the most options of an item in
    any split), so a model fitted on one split scores the other.
    """
    feat = ctx.artifact("fitted_option_featurizer", features=features, n_components=n_components)
    splits = [ctx.train] if ctx.eval is None else [ctx.train, ctx.eval]
    n_blocks = max(int(s.frame["options"].map(len).max()) for s in splits)
    return feat.transform(ctx.split(split), view, n_blocks=n_blocks, progress=ctx.progress)
