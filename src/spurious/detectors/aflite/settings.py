"""What AFLite's helper modules read of the analysis: its parameters, as a protocol.

The helpers (:mod:`~.rounds`, :mod:`~.outputs`, :mod:`~.verdict`, :mod:`~.mcq`) are
called by :class:`~spurious.detectors.aflite.detector.AFLite` with the analysis itself.
They are typed against this protocol rather than the class, so no helper imports the
module that imports it (the package's import graph stays acyclic, type-only imports
included); :class:`AFLite` satisfies it structurally, and mypy checks that it does at
every call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Protocol

from spurious.analysis import VerdictScale

__all__ = ["AFLiteSettings"]


class AFLiteSettings(Protocol):
    """The parameters of an AFLite analysis (see its class docstring for each)."""

    verdict_scale: ClassVar[VerdictScale]
    mode: str
    n_partitions: int
    tau: float
    selection: str
    group_by: str | None
    model: Any
    features: Any
    view: str
    max_rounds: int | None
    chunk_size: int | None
    checkpoint_dir: str | Path | None
    checkpoint_mismatch: str
    n_examples: int
    baseline_view: str | None
    baseline_features: Any
    n_shuffles: int
    random_state: int | None

    def params_for_json(self) -> dict[str, Any]:
        """The hyperparameters as plain JSON."""
        ...
