"""The CI gate: which findings of a run reach a severity (``spurious audit --fail-on``).

A finding's severity comes from its evidence (an interval's lower bound or a test
against a null, see :class:`spurious.analysis.VerdictScale`), so a gate on ``moderate``
fails a build only when the data shows at least a moderate shortcut at the 95% level,
never on a point estimate that seed noise could move.

Examples
--------
>>> heads = {"a": {"severity": "high", "text": "x"}, "b": {"severity": "low", "text": "y"}}
>>> [name for name, _ in findings_at_or_above(heads, "moderate")]
['a']
>>> normalise_level("medium")
'moderate'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spurious.exceptions import ParameterError

#: Severities a gate can be set to, weakest first.
GATE_LEVELS = ("low", "moderate", "high")
_RANK = {"none": 0, "info": 0, "low": 1, "moderate": 2, "high": 3}
_ALIASES = {"medium": "moderate"}


def normalise_level(level: str) -> str:
    """``low`` / ``moderate`` (alias ``medium``) / ``high``; anything else is an error."""
    level = _ALIASES.get(str(level).lower(), str(level).lower())
    if level not in GATE_LEVELS:
        raise ParameterError(
            f"The 'fail_on' parameter must be one of {[*GATE_LEVELS, 'medium']}; got {level!r}."
        )
    return level


def findings_at_or_above(
    headlines: Mapping[str, Mapping[str, Any]], level: str
) -> list[tuple[str, Mapping[str, Any]]]:
    """``(analysis, headline)`` of every finding whose severity reaches ``level``."""
    floor = _RANK[normalise_level(level)]
    return [
        (name, head)
        for name, head in headlines.items()
        if _RANK.get(str((head or {}).get("severity", "info")), 0) >= floor
    ]


def run_findings(results: Mapping[str, Any], level: str) -> list[tuple[str, Mapping[str, Any]]]:
    """The findings of a run's ``ok`` results that reach ``level``."""
    heads = {n: r.headline for n, r in results.items() if r.status == "ok"}
    return findings_at_or_above(heads, level)
