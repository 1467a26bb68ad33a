"""The plan of ``spurious audit``: which analyses run, with which parameters, in which order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from spurious.analysis import load_analyses
from spurious.data.tasks import get_task
from spurious.exceptions import ParameterError

__all__ = ["audit_plan"]


def audit_plan(
    *,
    profile: str = "full",
    seed: int = 0,
    only: Sequence[str] = (),
    skip: Sequence[str] = (),
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    shared: Mapping[str, Any] | None = None,
    task: str | None = None,
) -> dict[str, dict[str, Any]]:
    """``{name: params}`` of every analysis ``spurious audit`` runs, in run order
    (each class' ``audit_order``, model-free analyses first, then the name).

    Every registered analysis with ``in_audit`` is planned, except those that declare
    tasks without ``task`` (an analysis of multiple-choice items on NLI data: not a skip
    worth a line); whether requirements are met is decided at run time (unmet ->
    skipped with the reason). ``shared`` parameters
    (e.g. ``{"features": "minilm"}``) go to every analysis that has that parameter, so
    analyses share one representation; ``overrides`` (``{name: {param: value}}``) win
    over the profile and ``shared``.
    """
    registry = load_analyses()
    for name in [*only, *skip, *(overrides or {})]:
        registry.get(name)  # unknown names fail early, listing the known ones
    plan: dict[str, dict[str, Any]] = {}
    ordered = sorted(registry.items(), key=lambda item: (item[1].audit_order, item[0]))
    for name, cls in ordered:
        if (only and name not in only) or name in skip or not (cls.in_audit or name in only):
            continue
        declared = cls.requires.tasks
        if task is not None and declared is not None and task not in declared and not only:
            continue
        own = cls().get_params(deep=False)
        params = dict(cls.profiles.get(profile, {}))
        # An analysis that will be skipped for the task (tasks=None on multiple choice)
        # keeps its own defaults: a shared value meant for the others (--features lexical
        # on MC items) must not fail its parameter checks.
        if not (task is not None and declared is None and get_task(task).multiple_choice):
            params.update({k: v for k, v in (shared or {}).items() if k in own})
        if "random_state" in own:
            params["random_state"] = seed
        params.update((overrides or {}).get(name, {}))
        plan[name] = params
    if not plan:
        raise ParameterError(
            f"No analysis left to run (only={list(only)}, skip={list(skip)}); known: "
            f"{registry.names()}."
        )
    return plan
