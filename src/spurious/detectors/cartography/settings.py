"""What cartography's helper modules read of the analysis: its parameters, as a protocol.

:mod:`~.mcq`, :mod:`~.nulls` and :mod:`~.verdict` are called by
:class:`~spurious.detectors.cartography.analysis.Cartography` with the analysis itself;
typing them against this protocol rather than the class keeps the package's import
graph acyclic (type-only imports included). :class:`Cartography` satisfies it
structurally, checked by mypy at every call.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

from spurious.analysis import VerdictScale

__all__ = ["CartographySettings"]


class CartographySettings(Protocol):
    """The parameters of a cartography analysis (see its class docstring for each)."""

    verdict_scale: ClassVar[VerdictScale]
    path: str
    features: str
    view: str
    partial_view: str | None
    epochs: int | None
    model: str | None
    train_options: dict[str, Any] | None
    anti_biased_fraction: float
    held_out_folds: int | None
    null_permutations: int
    random_state: int | None
