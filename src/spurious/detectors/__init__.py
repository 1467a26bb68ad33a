"""Detectors: per-example scores and dataset metrics. Importing this fills the registry."""

from spurious.detectors.aflite import AFLite
from spurious.detectors.base import REGISTRY, Detector, get_detector, register_detector
from spurious.detectors.partial_input import PartialInput

__all__ = ["REGISTRY", "AFLite", "Detector", "PartialInput", "get_detector", "register_detector"]
