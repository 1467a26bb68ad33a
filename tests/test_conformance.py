"""Checks every registered detector must pass (in the spirit of sklearn's estimator checks).

A new detector gets these for free by registering; add fast parameters for it to
``FAST_PARAMS`` if its defaults are slow.
"""

from __future__ import annotations

import copy
import json

import numpy as np
import pandas as pd
import pytest

from spurious.data import Dataset
from spurious.data.synthetic import make_nli_artifacts
from spurious.detectors import REGISTRY
from spurious.exceptions import DetectorError, ResultLoadError
from spurious.results import DetectorResult
from spurious.run import run_detectors

FAST_PARAMS: dict[str, dict] = {
    "partial_input": {"n_resamples": 50},
    "aflite": {
        "features": "tfidf",
        "n_partitions": 8,
        "train_size": 0.3,
        "slice_size": 0.1,
        "max_rounds": 3,
    },
}
DETECTORS = sorted(REGISTRY)


def _make(name: str, **kw):
    return REGISTRY[name](**{**FAST_PARAMS.get(name, {}), **kw})


@pytest.fixture(scope="module")
def data():
    return make_nli_artifacts(n=300, artifact_rate=0.8, random_state=5).dataset.split(
        0.3, random_state=0
    )


def test_registry_is_not_empty_and_names_match():
    assert DETECTORS
    for name, cls in REGISTRY.items():
        assert cls.name == name
        assert cls.description and cls.metric_docs and cls.score_columns


@pytest.mark.parametrize("name", DETECTORS)
def test_same_seed_same_output(name, data):
    train, test = data
    a = _make(name, random_state=0).run(train, test)
    b = _make(name, random_state=0).run(train, test)
    pd.testing.assert_frame_equal(a.scores, b.scores)
    assert a.metrics == pytest.approx(b.metrics, nan_ok=True)


@pytest.mark.parametrize("name", DETECTORS)
def test_one_row_per_example_with_documented_columns(name, data):
    train, test = data
    res = _make(name).run(train, test)
    assert res.scores.columns[0] == "id"
    assert res.scores["id"].is_unique
    assert set(res.scores["id"]) == set(test.ids)
    assert len(res.scores) == len(test)
    assert f"{name}_score" in res.scores and f"is_{name}_issue" in res.scores
    assert all(isinstance(v, float) for v in res.metrics.values())
    json.dumps(res.details)  # details are plain JSON


@pytest.mark.parametrize("name", DETECTORS)
def test_inputs_not_mutated(name, data):
    train, test = data
    before = (copy.deepcopy(train.frame), copy.deepcopy(test.frame), train.fingerprint)
    _make(name).run(train, test)
    pd.testing.assert_frame_equal(train.frame, before[0])
    pd.testing.assert_frame_equal(test.frame, before[1])
    assert train.fingerprint == before[2]


@pytest.mark.parametrize("name", DETECTORS)
def test_save_load_round_trip(name, data, tmp_path):
    train, test = data
    res = _make(name).run(train, test)
    res.save(tmp_path / name)
    back = DetectorResult.load(
        tmp_path / name,
        expected_fingerprints={"train": train.fingerprint, "eval": test.fingerprint},
    )
    pd.testing.assert_frame_equal(back.scores, res.scores)
    assert back.metrics == pytest.approx(res.metrics, nan_ok=True)
    assert back.params == res.params and back.details == res.details
    assert back.provenance.seed == res.provenance.seed
    assert back.provenance.fingerprints == res.provenance.fingerprints
    with pytest.raises(ResultLoadError, match="fingerprint for 'train'"):
        DetectorResult.load(tmp_path / name, expected_fingerprints={"train": "0" * 16})
    # No temp files left behind by the atomic writes.
    assert not [p for p in (tmp_path / name).iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("name", DETECTORS)
def test_clear_error_on_missing_inputs(name, data):
    train, _ = data
    det = _make(name)
    with pytest.raises(DetectorError, match="expects a spurious Dataset"):
        det.run(train.frame)
    unlabeled = Dataset.from_frame(
        pd.DataFrame({"question": ["q"], "context": ["c"], "answers": [["a"]]}), "qa"
    )
    if "labels" in det.requires:
        with pytest.raises(DetectorError, match="needs class labels"):
            det.run(unlabeled)


@pytest.mark.parametrize("name", DETECTORS)
def test_failure_is_recorded_not_swallowed(name, tmp_path):
    tiny = Dataset.from_frame(
        pd.DataFrame(
            {"premise": ["a", "b"], "hypothesis": ["c", "d"], "label": ["entailment", "neutral"]}
        ),
        "nli",
    )
    res = run_detectors([_make(name)], tiny, out=tmp_path)[name]
    assert res.status == "failed" and res.error
    back = DetectorResult.load(tmp_path / name)
    assert back.status == "failed" and back.error == res.error


def test_result_load_rejects_newer_format(tmp_path, data):
    train, test = data
    res = _make(DETECTORS[0]).run(train, test)
    res.save(tmp_path / "r")
    meta = json.loads((tmp_path / "r" / "result.json").read_text())
    meta["format_version"] = 999
    (tmp_path / "r" / "result.json").write_text(json.dumps(meta))
    with pytest.raises(ResultLoadError, match="newer spurious"):
        DetectorResult.load(tmp_path / "r")
    (tmp_path / "r" / "result.json").write_text("{not json")
    with pytest.raises(ResultLoadError, match="not a valid result file"):
        DetectorResult.load(tmp_path / "r")
    assert np.isfinite(res.metrics.get("n_eval", 0))
