"""Model-facing analyses and the statistics they share (bootstrap intervals)."""

from spurious.evaluate.bootstrap import bootstrap_interval

__all__ = ["bootstrap_interval"]
