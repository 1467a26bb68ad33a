"""Feature matrices of the run: one fitted featurizer per (spec, view), one matrix per split."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from spurious.context import RunContext

__all__ = ["features", "fitted_featurizer"]


def fitted_featurizer(ctx: RunContext, *, featurizer: str, view: str) -> Any:
    """A featurizer fitted on the data for ``view`` (shared by every split's matrix)."""
    from sklearn.base import clone

    from spurious.features import PrecomputedFeaturizer, make_featurizer

    feat = ctx._featurizers.get(featurizer) or make_featurizer(featurizer)
    if not (isinstance(feat, PrecomputedFeaturizer) or feat.stateless):
        feat = clone(feat)  # never fit the caller's object
    return feat.fit(ctx.train, view)


def features(ctx: RunContext, *, featurizer: str, view: str, split: str) -> Any:
    """The matrix of ``split`` seen through ``view`` (see :meth:`RunContext.features`)."""
    feat = ctx.artifact("fitted_featurizer", featurizer=featurizer, view=view)
    # Shared between analyses: the conformance suite checks that none modifies its inputs.
    return feat.transform(ctx.split(split), view, progress=ctx.progress)
