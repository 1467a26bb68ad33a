"""Statistics shared by detectors and evaluations: per-example metrics and bootstraps.

This package sits below :mod:`spurious.detectors` and :mod:`spurious.evaluate` and
imports neither: per-example scores (:mod:`~spurious.stats.metrics`), paired bootstrap
intervals (:mod:`~spurious.stats.bootstrap`) and the bootstrap of threshold splits
behind prediction bias (:mod:`~spurious.stats.split_bootstrap`).

Examples
--------
>>> import numpy as np
>>> from spurious.stats import bootstrap_interval
>>> est, lo, hi = bootstrap_interval(lambda c, axis=-1: c.mean(axis=axis), [np.ones(50)])
>>> est, lo, hi
(1.0, 1.0, 1.0)
"""

from spurious.stats.bootstrap import bootstrap_interval, safe_ratio
from spurious.stats.metrics import (
    QA_METRICS,
    accuracy_scores,
    example_scores,
    leave_one_out_scores,
    normalize_answer,
    qa_scores,
    resolve_metric,
    squad_exact_match,
    squad_f1,
)
from spurious.stats.split_bootstrap import SplitBootstrap, check_bootstrap_params, split_bootstrap

__all__ = [
    "QA_METRICS",
    "SplitBootstrap",
    "accuracy_scores",
    "bootstrap_interval",
    "check_bootstrap_params",
    "example_scores",
    "leave_one_out_scores",
    "normalize_answer",
    "qa_scores",
    "resolve_metric",
    "safe_ratio",
    "split_bootstrap",
    "squad_exact_match",
    "squad_f1",
]
