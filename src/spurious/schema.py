"""Published JSON Schemas of what a run writes, so a CI job reads results without guessing.

Three schemas, versioned with the result format (:data:`~spurious.results.RESULT_FORMAT_VERSION`):

- ``headline``: the verdict card of one analysis (``result.json``'s ``headline``): what
  was measured, the severity and the evidence it rests on (an interval, a test against a
  null);
- ``result``: ``<run>/<analysis>/result.json``;
- ``metrics/<analysis>``: ``<run>/<analysis>/metrics.json``, one per registered analysis,
  built from the analysis' own ``metric_docs`` (a documented name such as
  ``delta_maj_<cond>`` becomes a pattern), so an undocumented metric key fails validation.

The files ship inside the package (``spurious/schemas/v<N>/``) and are regenerated with
``spurious schema --out DIR``; a test checks that the shipped files equal what the code
generates.

Examples
--------
>>> metric_pattern("delta_maj_<cond>")
'^delta_maj_.+$'
>>> expand_metric_doc_key("peco_<d>_seed_sd / _seed_min")
['peco_<d>_seed_sd', 'peco_<d>_seed_min']
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from spurious.results import RESULT_FORMAT_VERSION, STATUSES

#: Severities a headline may carry, from "not judged" to the strongest.
SEVERITIES = ("info", "none", "low", "moderate", "high")
#: What a severity rests on (see :class:`spurious.analysis.VerdictScale`).
EVIDENCE_BASES = ("point", "interval", "null_test", "interval+null_test")
#: Exit code of ``spurious audit --fail-on`` when a finding reaches the given severity
#: (distinct from 1, an analysis failed, and 2, bad input).
GATE_EXIT_CODE = 3
SCHEMA_BASE = "urn:spurious:schemas"


def schema_dir(version: int = RESULT_FORMAT_VERSION) -> Path:
    """Folder of the shipped schemas of one format version."""
    return Path(__file__).parent / "schemas" / f"v{version}"


def _number_or_null() -> dict[str, Any]:
    return {"type": ["number", "null"]}


def headline_schema() -> dict[str, Any]:
    """JSON Schema of an analysis' headline (its verdict card)."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{SCHEMA_BASE}/v{RESULT_FORMAT_VERSION}/headline.schema.json",
        "title": "spurious headline (one analysis' verdict card)",
        "type": "object",
        "required": ["label", "value", "text", "verdict", "severity", "inconclusive", "evidence"],
        "properties": {
            "label": {"type": "string", "description": "What was measured."},
            "value": {**_number_or_null(), "description": "The headline number."},
            "text": {"type": "string", "description": "The figure in words."},
            "verdict": {"type": "string", "description": "The judgement in words."},
            "severity": {
                "enum": list(SEVERITIES),
                "description": "'info': shown, not judged; otherwise from the evidence.",
            },
            "inconclusive": {
                "type": "boolean",
                "description": "The 95% interval spans more than one severity at this size.",
            },
            "evidence": {
                "type": "object",
                "required": ["basis", "interval", "p_value", "null", "measured"],
                "properties": {
                    "basis": {"enum": list(EVIDENCE_BASES)},
                    "interval": {
                        "oneOf": [
                            {"type": "null"},
                            {
                                "type": "array",
                                "items": {"type": "number"},
                                "minItems": 2,
                                "maxItems": 2,
                            },
                        ]
                    },
                    "p_value": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
                    "null": {"type": ["string", "null"]},
                    "measured": {"type": "string"},
                },
                "additionalProperties": True,
            },
        },
        "additionalProperties": True,
    }


def result_schema() -> dict[str, Any]:
    """JSON Schema of ``<run>/<analysis>/result.json``."""
    headline = headline_schema()
    headline.pop("$schema")
    headline.pop("$id")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{SCHEMA_BASE}/v{RESULT_FORMAT_VERSION}/result.schema.json",
        "title": "spurious result.json (one analysis of a run)",
        "type": "object",
        "required": ["format_version", "analysis", "detector", "status", "headline", "provenance"],
        "properties": {
            "format_version": {"const": RESULT_FORMAT_VERSION},
            "analysis": {"type": "string", "description": "Registry name of the analysis."},
            "detector": {
                "type": "string",
                "description": "The earlier name of 'analysis' (same value), kept for readers.",
            },
            "status": {"enum": list(STATUSES)},
            "error": {"type": ["string", "null"]},
            "summary": {"type": "string"},
            "params": {"type": "object"},
            "provenance": {
                "type": "object",
                "required": ["library_version", "seed", "fingerprints", "versions"],
            },
            "details": {"type": "object"},
            # A skipped or failed analysis has no finding, so its headline may be empty.
            "headline": {"oneOf": [headline, {"type": "object", "maxProperties": 0}]},
        },
        "additionalProperties": True,
    }


def expand_metric_doc_key(key: str) -> list[str]:
    """The metric names one ``metric_docs`` key documents.

    ``"a / b"`` documents two names; a part starting with ``_`` replaces the suffix of the
    first name that starts with the same word (``"x_ci_low / _ci_high"``).
    """
    parts = [p.strip() for p in key.split(" / ") if p.strip()]
    first = parts[0]
    out = [first]
    for part in parts[1:]:
        if not part.startswith("_"):
            out.append(part)
            continue
        word = "_" + part[1:].split("_", 1)[0]
        cut = first.rfind(word)
        out.append((first[:cut] if cut >= 0 else first) + part)
    return out


def metric_pattern(name: str) -> str:
    """A regular expression matching a documented metric name; ``<x>`` matches any text."""
    pieces = re.split(r"<[^<>]+>", name)
    return "^" + ".+".join(re.escape(p) for p in pieces) + "$"


def metrics_schema(analysis: type) -> dict[str, Any]:
    """JSON Schema of one analysis' ``metrics.json``, from its ``metric_docs``.

    Every key must match a documented name (``<placeholders>`` match any text), optionally
    followed by ``_ci_low`` / ``_ci_high`` (its interval); values are numbers or null
    (NaN is written as null).
    """
    names = sorted({n for key in analysis.metric_docs for n in expand_metric_doc_key(key)})
    patterns = sorted({metric_pattern(n)[:-1] + "(_ci_low|_ci_high)?$" for n in names})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{SCHEMA_BASE}/v{RESULT_FORMAT_VERSION}/metrics/{analysis.name}.schema.json",
        "title": f"spurious metrics.json of the {analysis.name!r} analysis",
        "description": "Metric names: " + "; ".join(names),
        "type": "object",
        "patternProperties": {p: _number_or_null() for p in patterns},
        "additionalProperties": False,
    }


def all_schemas() -> dict[str, dict[str, Any]]:
    """``{relative path: schema}`` of every published schema of the current version."""
    from spurious.analysis import load_analyses

    out = {"headline.schema.json": headline_schema(), "result.schema.json": result_schema()}
    for name, cls in load_analyses().items():
        out[f"metrics/{name}.schema.json"] = metrics_schema(cls)
    return out


def write_schemas(directory: str | Path) -> list[Path]:
    """Write :func:`all_schemas` below ``directory`` (atomically, one file each)."""
    from spurious.utils.io import atomic_write_text

    directory = Path(directory)
    written = []
    for rel, schema in all_schemas().items():
        path = directory / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(schema, indent=2, sort_keys=True) + "\n")
        written.append(path)
    return written


def validate(instance: Any, schema: dict[str, Any]) -> None:
    """Validate ``instance`` against ``schema``; raises ``jsonschema.ValidationError``.

    Needs the ``jsonschema`` package (in the ``test`` extra).
    """
    try:
        import jsonschema
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "Validating results needs jsonschema: pip install 'spurious[test]' (or jsonschema)."
        ) from e
    jsonschema.validate(instance, schema)
