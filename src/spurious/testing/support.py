"""Helpers the contract checks share: building, copying and running an analysis, and
comparing what two runs give."""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping
from numbers import Integral
from typing import TYPE_CHECKING, Any, cast

import pandas as pd

from spurious.analysis import Analysis

if TYPE_CHECKING:  # pragma: no cover
    from spurious.context import RunContext
    from spurious.results import Result

__all__ = [
    "analysis_label",
    "as_instance",
    "assert_frames_equal",
    "assert_metrics_equal",
    "copy_analysis",
    "init_params",
    "run_on",
    "seed_params",
]


def as_instance(obj: type[Analysis] | Analysis, params: Mapping[str, Any]) -> Analysis:
    """An instance: a class built with its ``fast_params``, an instance as it is; ``params``
    override either's parameters (in a new instance)."""
    if isinstance(obj, type) and issubclass(obj, Analysis):
        return obj(**{**obj.fast_params, **params})
    if isinstance(obj, Analysis):
        instance = cast(Analysis, obj)
        if not params:
            return instance
        return type(instance)(**{**instance.get_params(deep=False), **params})
    raise TypeError(f"Expected an Analysis subclass or instance; got {obj!r}.")


def analysis_label(analysis: Analysis) -> str:
    """The analysis' registry name (its class name when it has none), for messages."""
    return type(analysis).name or type(analysis).__name__


def seed_params(cls: type[Analysis]) -> list[str]:
    """The parameters that seed the analysis: ``random_state`` or declared as a seed."""
    names = init_params(cls)
    return [
        p
        for p in names
        if p == "random_state" or "random_state" in cls._parameter_constraints.get(p, [])
    ]


def init_params(cls: type[Analysis]) -> list[str]:
    """The named parameters of ``cls.__init__``."""
    sig = inspect.signature(cls.__init__)
    return [
        p.name
        for p in sig.parameters.values()
        if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def copy_analysis(analysis: Analysis, *, seeded: bool = False, **params: Any) -> Analysis:
    """A new instance with the same parameters; ``seeded`` fixes an unset seed to 0."""
    values = {**analysis.get_params(deep=False), **params}
    if seeded:
        for p in seed_params(type(analysis)):
            if not isinstance(values.get(p), Integral):
                values[p] = 0
    return type(analysis)(**values)


def run_on(analysis: Analysis, ctx: RunContext) -> Result:
    """Run the analysis on ``ctx``; check data that do not meet its requirements fail."""
    unmet = analysis.unmet(ctx)
    if unmet:
        raise AssertionError(
            f"the check data do not meet its requirements ({'; '.join(unmet)}); pass "
            "data= (a labelled dataset, or a (train, eval) pair) that does"
        )
    return analysis.run(context=ctx)


def assert_metrics_equal(a: Mapping[str, float], b: Mapping[str, float], what: str) -> None:
    """The same metric names and values (to rounding; NaN equals NaN), else ``what: ...``."""
    assert set(a) == set(b), f"{what}: metric names differ: {sorted(set(a) ^ set(b))}"
    for k in a:
        x, y = a[k], b[k]
        same = (x != x and y != y) or math.isclose(x, y, rel_tol=1e-6, abs_tol=1e-12)
        assert same, f"{what}: metric {k!r} is {x!r} then {y!r}"


def assert_frames_equal(a: pd.DataFrame, b: pd.DataFrame, what: str) -> None:
    """Equal data frames, else an AssertionError ``what: <the difference>``."""
    try:
        pd.testing.assert_frame_equal(a, b)
    except AssertionError as e:
        raise AssertionError(f"{what}: {e}") from None
