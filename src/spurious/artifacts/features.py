"""Feature matrices of the run: one fitted featurizer per (spec, view), one matrix per split."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from spurious.artifacts.protocol import ArtifactContext

__all__ = ["features", "fitted_featurizer"]


def fitted_featurizer(ctx: ArtifactContext, *, featurizer: str, view: str) -> Any:
    """A featurizer fitted on the data for ``view`` (shared by every split's matrix)."""
    from sklearn.base import clone

    from spurious.features import PrecomputedFeaturizer, make_featurizer

    feat = ctx.registered_featurizer(featurizer) or make_featurizer(featurizer)
    if not (isinstance(feat, PrecomputedFeaturizer) or feat.stateless):
        feat = clone(feat)  # never fit the caller's object
    return feat.fit(ctx.train, view)


def features(ctx: ArtifactContext, *, featurizer: str, view: str, split: str) -> Any:
    """The matrix of ``split`` seen through ``view`` (see :meth:`RunContext.features`).

    A one-field view of a sentence encoder with pair features is the field's block of
    the two-field view's ``[u, v, |u - v|, u * v]`` when that matrix was built already:
    the same values, as a view of its columns rather than a copy (550k NLI pairs: the
    premise-only and hypothesis-only matrices are 0.84 GB each beside the full view's
    3.4 GB).
    """
    feat = ctx.artifact("fitted_featurizer", featurizer=featurizer, view=view)
    block = _block_of_pair_view(ctx, feat, featurizer=featurizer, view=view, split=split)
    if block is not None:
        return block
    # Shared between analyses: the conformance suite checks that none modifies its inputs.
    return feat.transform(ctx.split(split), view, progress=ctx.progress)


def _block_of_pair_view(
    ctx: ArtifactContext, feat: Any, *, featurizer: str, view: str, split: str
) -> Any:
    """The columns of a built two-field matrix that hold ``view``'s one field, or None."""
    from spurious.features.encoder import EncoderFeaturizer
    from spurious.views import get_view

    if not (isinstance(feat, EncoderFeaturizer) and feat.pair_features):
        return None
    task = ctx.split(split).task
    one, full = get_view(task, view), get_view(task, "full")
    if len(one.fields) != 1 or len(full.fields) != 2 or one.fields[0] not in full.fields:
        return None
    X = ctx.built("features", featurizer=featurizer, view=full.name, split=split)
    if X is None or X.ndim != 2 or X.shape[1] % 4:
        return None
    d = X.shape[1] // 4  # [u, v, |u - v|, u * v], u and v in the full view's field order
    start = full.fields.index(one.fields[0]) * d
    return X[:, start : start + d]
