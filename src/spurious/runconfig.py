"""A run's config: checked, read from a file or a run's manifest, turned into analyses.

A config is plain data (see :mod:`spurious.runner`): :func:`normalise_config` checks its
keys and fills defaults, :func:`read_config` reads one from JSON/YAML or from the config
a run's ``manifest.json`` recorded (its relative inputs resolved against the folder the
run started from, the in-memory data it stored against its own folder),
:func:`manifest_fingerprints` gives the data fingerprints a re-run must match and
:func:`build_analyses` the validated analysis instances.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spurious.analysis import Analysis, load_analyses
from spurious.exceptions import DataFormatError, ParameterError
from spurious.execution import make_executor
from spurious.inputs import INPUT_KEYS
from spurious.models.runtime.hardware import check_device
from spurious.rundir import resolve_input_paths
from spurious.utils.io import read_input_text, read_json
from spurious.utils.validation import check_seed

__all__ = [
    "CONFIG_KEYS",
    "build_analyses",
    "manifest_fingerprints",
    "normalise_config",
    "read_config",
]

CONFIG_KEYS = ("inputs", "analyses", "seed", "profile", "executor", "device")


def normalise_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Check a config's keys and fill defaults; plain data in, plain data out.

    Examples
    --------
    >>> normalise_config({"inputs": {"data": "x.jsonl", "task": "nli"},
    ...                   "analyses": {"partial_input": {}}})["seed"]
    0
    """
    if not isinstance(config, Mapping):
        raise ParameterError(f"A run config must be a mapping; got {type(config).__name__}.")
    if "config" in config and "inputs" not in config:  # a manifest: its config inside
        config = config["config"]
    unknown = sorted(set(config) - set(CONFIG_KEYS))
    if unknown:
        raise ParameterError(f"Unknown run config key(s) {unknown}; expected {list(CONFIG_KEYS)}.")
    inputs = dict(config.get("inputs") or {})
    bad = sorted(set(inputs) - set(INPUT_KEYS))
    if bad:
        raise ParameterError(f"Unknown input key(s) {bad}; expected {list(INPUT_KEYS)}.")
    if not inputs.get("data") and not inputs.get("synthetic"):
        raise ParameterError("A run config needs inputs.data (a file) or inputs.synthetic.")
    if inputs.get("data") and not inputs.get("task"):
        raise ParameterError("A run config needs inputs.task with inputs.data.")
    inputs.setdefault("field_map", {})
    inputs.setdefault("predictions", [])
    analyses = config.get("analyses")
    if not isinstance(analyses, Mapping) or not analyses:
        raise ParameterError(
            "A run config needs 'analyses': {name: {parameter: value}} with at least one "
            f"analysis; known: {load_analyses().names()}."
        )
    bad_params = {k: v for k, v in analyses.items() if v is not None and not isinstance(v, Mapping)}
    if bad_params:
        raise ParameterError(
            f"A run config's 'analyses' maps each name to {{parameter: value}}; got {bad_params!r}."
        )
    out = {
        "inputs": inputs,
        "analyses": {str(k): dict(v or {}) for k, v in analyses.items()},
        "seed": check_seed(config.get("seed", 0), "'seed' of the run config"),
        "profile": config.get("profile"),
    }
    if config.get("executor") not in (None, "local"):
        # Where the run's shared steps (the encoding) run; made now, so an unknown kind
        # or a missing Ray fails before any work. Kept only when not local, so configs
        # without one stay as they were.
        make_executor(config["executor"])
        out["executor"] = config["executor"]
    if config.get("device") not in (None, "auto"):
        # Where the model-based steps run (spurious audit --device); its spelling is
        # checked now, whether the machine has it when the run starts.
        out["device"] = check_device(config["device"], "'device' of the run config")
    return out


def read_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a run config (JSON or YAML), or the config inside a run's ``manifest.json``."""
    path = Path(path)
    if path.is_dir():
        path = path / "manifest.json"
    if not path.exists():
        raise ParameterError(f"--config {str(path)!r}: no such file.")
    # A regular file of bounded size only: a FIFO would block, /dev/zero never end.
    text = read_input_text(path, what="--config", kind="config")
    try:
        if path.suffix.lower() in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text)
        else:
            data = json.loads(text)
    except Exception as e:  # JSON or YAML syntax: one readable line
        raise DataFormatError(f"--config {str(path)!r} is not valid JSON/YAML: {e}") from None
    if isinstance(data, Mapping) and isinstance(data.get("config"), Mapping):
        # A manifest: its relative inputs are relative to where that run was started, and
        # the in-memory data it stored are in its folder ("<run>/inputs/...").
        cwd = data.get("cwd") if isinstance(data.get("cwd"), str) else None
        config = resolve_input_paths(data["config"], cwd, run_dir=path.parent)
        data = {**data, "config": config}
    return normalise_config(data)


def manifest_fingerprints(path: str | os.PathLike[str]) -> dict[str, str]:
    """``{"train": ..., "eval": ...}`` fingerprints a run's manifest recorded (``{}`` for a
    plain config file): a re-run must load the same data."""
    path = Path(path)
    path = path / "manifest.json" if path.is_dir() else path
    try:
        datasets = read_json(path).get("datasets") or {}
    except (OSError, ValueError, AttributeError):
        return {}
    return {
        k: v["fingerprint"]
        for k, v in datasets.items()
        if isinstance(v, dict) and "fingerprint" in v
    }


def build_analyses(spec: Mapping[str, Mapping[str, Any]]) -> list[Analysis]:
    """Analysis instances from ``{name: params}``; parameters are validated here.

    Examples
    --------
    >>> [a.name for a in build_analyses({"partial_input": {"features": "bow"}})]
    ['partial_input']
    """
    registry = load_analyses()
    out = []
    for name, params in spec.items():
        cls = registry.get(name)
        analysis = cls.from_config(dict(params))
        analysis.validate_params()
        out.append(analysis)
    return out
