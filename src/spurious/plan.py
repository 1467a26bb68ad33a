"""The plan of ``spurious audit``: which analyses run, with which parameters, in which order."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from spurious.analysis import Analysis, load_analyses
from spurious.data.tasks import get_task
from spurious.exceptions import ParameterError

__all__ = ["PROFILES", "audit_plan", "check_analyses_argument", "run_profile"]

#: The parameter profiles of ``spurious audit`` (``--quick``; see ``Analysis.profiles``).
PROFILES = ("full", "quick")


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
    if profile not in PROFILES:  # a misspelt profile would silently be "full"
        raise ParameterError(
            f"The 'profile' parameter must be one of {list(PROFILES)}. Got {profile!r} instead."
        )
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


def run_profile(profile: str | None, analyses: object) -> str:
    """``run()``'s profile: ``"full"`` by default; refused where it would be ignored.

    Examples
    --------
    >>> run_profile(None, None), run_profile("quick", None), run_profile(None, ["pvi"])
    ('full', 'quick', 'full')
    >>> run_profile("quick", ["pvi"])
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: The 'profile' parameter of run() ... has no effect ...
    """
    if profile is not None and profile not in PROFILES:
        raise ParameterError(
            f"The 'profile' parameter of run() must be one of {list(PROFILES)}. Got "
            f"{profile!r} instead."
        )
    if analyses is not None and profile is not None:
        raise ParameterError(
            f"The 'profile' parameter of run() ({profile!r}) picks the parameters of the "
            "analyses audit plans; with 'analyses' given it has no effect (their parameters "
            "are the ones given, else each analysis' defaults). Leave profile out, or drop "
            "'analyses' to run the audit's plan with that profile."
        )
    return profile or "full"


def check_analyses_argument(analyses: object) -> None:
    """``run()``'s ``analyses``: ``None``, a list of distinct names or ``{name: params}``.

    Examples
    --------
    >>> check_analyses_argument(["pvi", "peco"])
    >>> check_analyses_argument(["pvi", "pvi"])
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: The 'analyses' parameter names ['pvi'] more than once; ...
    """
    if analyses is None:
        return
    if isinstance(analyses, str):
        raise ParameterError(
            f"The 'analyses' parameter must be a list of names or {{name: params}}; got the "
            f"str {analyses!r} (wrap it in a list: [{analyses!r}])."
        )
    if isinstance(analyses, Mapping):
        bad = {k: v for k, v in analyses.items() if v is not None and not isinstance(v, Mapping)}
        if bad:
            raise ParameterError(
                "The 'analyses' parameter as a mapping takes {name: {parameter: value}}; "
                f"got {bad!r}."
            )
        return
    if not isinstance(analyses, Iterable):
        raise ParameterError(
            "The 'analyses' parameter must be a list of names or {name: params}. Got "
            f"{type(analyses).__name__} {analyses!r} instead."
        )
    names = list(analyses)
    twice = sorted({str(n) for n in names if names.count(n) > 1})
    if twice:
        raise ParameterError(
            f"The 'analyses' parameter names {twice} more than once; a run has one result "
            "per analysis (give its parameters as {name: {parameter: value}})."
        )


def order_analyses(analyses: Sequence[Analysis]) -> list[Analysis]:
    """``analyses`` in the order asked for, except that each runs after those it reads.

    An analysis declares the analyses whose results it reads (``after``); when they are
    in the same run they go first. Otherwise the order is kept (stable).

    Examples
    --------
    >>> class _A:
    ...     def __init__(self, name, after=()):
    ...         self.name, self.after = name, after
    >>> [a.name for a in order_analyses([_A("peco", ("cartography",)), _A("cartography")])]
    ['cartography', 'peco']
    """
    pending = list(analyses)
    names = {a.name for a in pending}
    placed: list[Analysis] = []
    done: set[str] = set()
    while pending:
        for i, analysis in enumerate(pending):
            if all(dep in done or dep not in names for dep in analysis.after):
                placed.append(pending.pop(i))
                done.add(analysis.name)
                break
        else:
            cycle = sorted(a.name for a in pending)
            raise ParameterError(
                f"The analyses {cycle} each wait for another's result ('after'); the order "
                "cannot be resolved."
            )
    return placed
