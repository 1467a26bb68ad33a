"""Detectors: analyses that read the data alone (no model outputs).

The contract lives in :mod:`spurious.analysis`; this module keeps the detector names
(``Detector``, ``register_detector``, ``REGISTRY``) that existing code and plugins use.
"""

from __future__ import annotations

from typing import ClassVar

from spurious.analysis import (
    ANALYSES,
    Analysis,
    AnalysisOutput,
    get_analysis,
    register_analysis,
)

#: The one registry of analyses (detectors and evaluations share it).
REGISTRY = ANALYSES
#: Detectors register like every analysis.
register_detector = register_analysis
get_detector = get_analysis
DetectorOutput = AnalysisOutput


class Detector(Analysis):
    """Base class of detectors: analyses computed from the data alone."""

    kind: ClassVar[str] = "detector"


__all__ = ["REGISTRY", "Detector", "DetectorOutput", "get_detector", "register_detector"]
