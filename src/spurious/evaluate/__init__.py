"""Model-facing analyses and the statistics they share (bootstrap intervals)."""

from spurious.evaluate.bootstrap import bootstrap_interval
from spurious.evaluate.prediction_bias import bias_table, prediction_bias, threshold_search

__all__ = ["bias_table", "bootstrap_interval", "prediction_bias", "threshold_search"]
