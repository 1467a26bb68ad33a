"""The published JSON Schemas and the CI gate (``spurious audit --fail-on``)."""

from __future__ import annotations

import json

import jsonschema
import pytest
from click.testing import CliRunner

from spurious.analysis import VerdictScale, load_analyses
from spurious.cli import main
from spurious.data.synthetic import make_nli_artifacts
from spurious.gate import findings_at_or_above, normalise_level
from spurious.schema import (
    GATE_EXIT_CODE,
    all_schemas,
    expand_metric_doc_key,
    headline_schema,
    metrics_schema,
    schema_dir,
)


def test_shipped_schemas_are_what_the_code_generates():
    """The files in the package are the published contract: regenerate them on change
    (``spurious schema --out src/spurious/schemas/v1``)."""
    shipped = {
        p.relative_to(schema_dir()).as_posix(): json.loads(p.read_text())
        for p in sorted(schema_dir().rglob("*.json"))
    }
    assert shipped == all_schemas()
    for schema in shipped.values():
        jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize(
    ("key", "names"),
    [
        ("accuracy_full", ["accuracy_full"]),
        ("agreement_all / entropy_all", ["agreement_all", "entropy_all"]),
        ("peco_<d>_ci_low / _ci_high", ["peco_<d>_ci_low", "peco_<d>_ci_high"]),
        (
            "peco_<d>_seed_sd / _seed_min / _seed_max",
            ["peco_<d>_seed_sd", "peco_<d>_seed_min", "peco_<d>_seed_max"],
        ),
    ],
)
def test_metric_doc_keys_expand_to_names(key, names):
    assert expand_metric_doc_key(key) == names


def test_metrics_schema_accepts_documented_keys_and_refuses_others():
    schema = metrics_schema(load_analyses()["partial_input"])
    jsonschema.validate(
        {"delta_maj_hypothesis_only": 0.2, "delta_maj_hypothesis_only_ci_low": 0.1,
         "accuracy_full": None, "n_train": 10.0}, schema,
    )  # fmt: skip
    with pytest.raises(jsonschema.ValidationError, match="undocumented_metric"):
        jsonschema.validate({"undocumented_metric": 1.0}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"accuracy_full": "high"}, schema)


def test_headlines_follow_the_schema():
    scale = VerdictScale(0.01, 0.05, 0.1, {"high": "strong"})
    for head in (
        scale.headline("x", 0.2, "t", interval=(0.15, 0.3)),
        scale.headline("x", 0.2, "t", p_value=0.5, null="shuffled labels"),
        scale.headline("x", None, "t", severity="info"),
        scale.headline("x", 0.2, "t"),
    ):
        jsonschema.validate(head, headline_schema())


def test_gate_levels():
    heads = {
        "a": {"severity": "high"},
        "b": {"severity": "moderate"},
        "c": {"severity": "low"},
        "d": {"severity": "info"},
        "e": {"severity": "none"},
    }
    assert [n for n, _ in findings_at_or_above(heads, "low")] == ["a", "b", "c"]
    assert [n for n, _ in findings_at_or_above(heads, "medium")] == ["a", "b"]
    assert [n for n, _ in findings_at_or_above(heads, "high")] == ["a"]
    with pytest.raises(ValueError, match="fail_on"):
        normalise_level("severe")


@pytest.fixture(scope="module")
def planted_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("gate")
    ds = make_nli_artifacts(n=600, artifact_rate=0.9, random_state=2).dataset
    ds.frame[["id", "premise", "hypothesis", "label"]].to_json(
        d / "planted.jsonl", orient="records", lines=True
    )
    return d / "planted.jsonl"


def _audit(path, out, *extra):
    args = ["audit", str(path), "--task", "nli", "--only", "partial_input", "--features", "bow",
            "--set", "partial_input.n_resamples=200", "--out", str(out), *extra]  # fmt: skip
    return CliRunner().invoke(main, args)


def test_fail_on_exits_3_and_names_the_finding(planted_file, tmp_path):
    """A planted hypothesis cue is a high partial-input finding: the gate trips."""
    r = _audit(planted_file, tmp_path / "gated", "--fail-on", "moderate")
    assert r.exit_code == GATE_EXIT_CODE, r.output
    assert "gate: partial_input" in r.output
    # the results are written all the same, and follow the published schemas
    result = json.loads((tmp_path / "gated" / "partial_input" / "result.json").read_text())
    metrics = json.loads((tmp_path / "gated" / "partial_input" / "metrics.json").read_text())
    schemas = all_schemas()
    jsonschema.validate(result, schemas["result.schema.json"])
    jsonschema.validate(metrics, schemas["metrics/partial_input.schema.json"])
    assert result["headline"]["severity"] in ("moderate", "high")


def test_without_fail_on_the_same_run_exits_0(planted_file, tmp_path):
    r = _audit(planted_file, tmp_path / "plain")
    assert r.exit_code == 0, r.output
    assert "gate:" not in r.output


def test_bad_fail_on_level_is_refused_before_anything_is_written(planted_file, tmp_path):
    r = _audit(planted_file, tmp_path / "bad", "--fail-on", "severe")
    assert r.exit_code == 2
    assert "--fail-on" in r.output
    assert not (tmp_path / "bad").exists()
