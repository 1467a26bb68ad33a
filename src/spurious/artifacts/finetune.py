"""Fine-tuned models of the run, their hidden states and their training dynamics.

One fine-tune per (data, view, config) serves all three; the fine-tuning code itself
(:mod:`spurious.models.finetune`) takes datasets and a progress flag, never the run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from spurious.artifacts.protocol import ArtifactContext

__all__ = ["finetune_dynamics", "hidden_states", "trained_model"]


def trained_model(ctx: ArtifactContext, *, view: str = "full", **config: Any) -> Any:
    """A model fine-tuned on the data for ``view`` (``config``: FineTuneConfig fields).

    A :class:`~spurious.models.finetune.FineTuneResult` (weights, dynamics of the data and
    of the evaluation split, never trained on, history); built once per run, and cached
    on disk by data and config (:func:`~spurious.models.finetune.finetune_cached`).
    """
    from spurious.models.finetune import finetune_cached

    return finetune_cached(ctx.train, ctx.eval, view=view, progress=ctx.progress, **config)


def hidden_states(
    ctx: ArtifactContext,
    *,
    view: str = "full",
    split: str = "train",
    model_view: str | None = None,
    layer: int = -1,
    pooling: str = "cls",
    **config: Any,
) -> Any:
    """Pooled hidden states of ``split`` seen through ``view`` by the ``trained_model`` of
    ``model_view`` (default: ``view``; e.g. the full-input model fed the hypothesis only,
    paper 003 App. B). ``config``: the trained model's FineTuneConfig fields. The matrix
    is the ``finetuned`` featurizer's, so it is cached on disk like any features."""
    from spurious.features.finetuned import FinetunedFeaturizer

    trained = ctx.artifact("trained_model", view=model_view or view, **config)
    featurizer = FinetunedFeaturizer(str(trained.model_dir), layer=layer, pooling=pooling)
    return ctx.features(featurizer, view, split=split)


def finetune_dynamics(ctx: ArtifactContext, *, view: str = "full", **config: Any) -> Any:
    """Training dynamics of a fine-tune on ``ctx.train``, for ``ctx.train`` and ``ctx.eval``.

    What the ``training_dynamics`` artifact provider calls for ``path="finetune"``:
    a :class:`spurious.models.dynamics.TrainingDynamics`. Through the run context, so one
    fine-tune per run serves the dynamics, the trained model and its hidden states (and
    it is cached on disk, see :func:`~spurious.models.finetune.finetune_cached`).

    Examples
    --------
    >>> dyn = finetune_dynamics(ctx, view="hypothesis_only", epochs=3)  # doctest: +SKIP
    """
    return ctx.artifact("trained_model", view=view, **config).training_dynamics()
