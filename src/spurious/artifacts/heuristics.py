"""Heuristic values of the judged split: supplied attributes, else computed (and cached)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from spurious.artifacts.protocol import ArtifactContext

__all__ = ["heuristics"]


def heuristics(ctx: ArtifactContext, *, names: list[str], params: dict[str, Any]) -> Any:
    """``id`` + one column per heuristic name for ``ctx.target`` (see
    :meth:`RunContext.heuristics`)."""
    from spurious.heuristics import compute_heuristics, get_heuristic

    supplied = ctx.attributes
    if supplied is not None and all(n in supplied.columns for n in names):
        return supplied[["id", *names]]
    fit_on = ctx.heuristics_train
    if fit_on is None and ctx.eval is not None:
        fit_on = ctx.train
    task = ctx.target.task.name
    specs = [get_heuristic(n, task=task)(**params[n]) if n in params else n for n in names]
    return compute_heuristics(ctx.target, specs, train=fit_on, progress=ctx.progress)
