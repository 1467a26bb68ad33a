"""spurious: find, measure and remove shortcuts in supervised datasets.

The public entry points are importable from here; they load lazily, so
``import spurious`` (and ``spurious --help``) stays fast.

>>> import spurious
>>> {"run", "load_dataset", "PartialInput", "AFLite", "PredictionBias"} <= set(spurious.__all__)
True
"""

from __future__ import annotations

import importlib
from typing import Any

from spurious._version import __version__

#: public name -> module that defines it
_EXPORTS = {
    "Dataset": "spurious.data",
    "load_dataset": "spurious.data",
    "load_predictions": "spurious.data.predictions",
    "run": "spurious.runner",
    "run_config": "spurious.runner",
    "audit_plan": "spurious.runner",
    "Run": "spurious.runner",
    "RunContext": "spurious.context",
    "Result": "spurious.results",
    "Analysis": "spurious.analysis",
    "Requirements": "spurious.analysis",
    "ANALYSES": "spurious.analysis",
    "register_analysis": "spurious.analysis",
    "get_analysis": "spurious.analysis",
    "PartialInput": "spurious.detectors.partial_input",
    "AFLite": "spurious.detectors.aflite",
    "PredictionBias": "spurious.evaluate.prediction_bias.analysis",
    "bias_table": "spurious.evaluate.prediction_bias",
    "prediction_bias": "spurious.evaluate.prediction_bias",
    "threshold_search": "spurious.evaluate.prediction_bias",
    "compute_heuristics": "spurious.heuristics",
    "list_heuristics": "spurious.heuristics",
    "write_filtered": "spurious.actions",
    "filter_source": "spurious.actions",
    "resample_file": "spurious.actions.resample",
    "render_report": "spurious.report",
    "render": "spurious.report",
}

__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'spurious' has no attribute {name!r}")
    if name == "ANALYSES":
        from spurious.analysis import load_analyses

        return load_analyses()
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
