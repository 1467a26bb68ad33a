"""What the fine-tuned conditions read of a ``partial_input`` analysis, as a protocol.

:mod:`~spurious.detectors.partial_input.finetuned` is called by
:class:`~spurious.detectors.partial_input.detector.PartialInput` with the analysis
itself; typing it against this protocol rather than the class keeps the package's import
graph acyclic (type-only imports included). :class:`PartialInput` satisfies it
structurally, checked by mypy at every call.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["PartialInputSettings"]


class PartialInputSettings(Protocol):
    """The parameters of a partial-input analysis (see its class docstring for each)."""

    n_resamples: int
    confidence: float
    random_state: int | None
    tra_examples: int | None
    tra_alignment: str
    tra_mode: str

    def finetune_config(self, view: str) -> dict[str, Any]:
        """The plain-data fine-tune settings of the model of ``view``."""
        ...
