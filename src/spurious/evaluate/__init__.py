"""Model-facing analyses: prediction bias of models along heuristic splits.

The statistics they rest on (per-example metrics, bootstraps) live in
:mod:`spurious.stats`.
"""

from spurious.evaluate.prediction_bias import bias_table, prediction_bias, threshold_search

__all__ = ["bias_table", "prediction_bias", "threshold_search"]
