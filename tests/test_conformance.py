"""Checks every registered analysis must pass (in the spirit of sklearn's estimator checks).

A new analysis gets these for free by registering: the suite reads its ``fast_params``
from the class and builds every input an analysis may need (train and evaluation
splits, model predictions) once.
"""

from __future__ import annotations

import copy
import json

import numpy as np
import pandas as pd
import pytest

from spurious.analysis import Analysis, Requirements, load_analyses
from spurious.context import RunContext
from spurious.data import Dataset
from spurious.data.predictions import align_predictions
from spurious.data.synthetic import make_nli_artifacts
from spurious.exceptions import DetectorError, ParameterError, ResultLoadError
from spurious.report import build_section
from spurious.results import Result
from spurious.runner import build_analyses, run_analyses

REGISTRY = load_analyses()
ANALYSES = REGISTRY.names()


def _make(name: str, **kw) -> Analysis:
    cls = REGISTRY[name]
    return cls(**{**cls.fast_params, **kw})


@pytest.fixture(scope="module")
def data():
    return make_nli_artifacts(n=300, artifact_rate=0.8, random_state=5).dataset.split(
        0.3, random_state=0
    )


def _predictions(test: Dataset, name: str, noise: float, seed: int):
    # A model that is right on most examples, wrong more often on short hypotheses.
    rng = np.random.default_rng(seed)
    short = test.frame["hypothesis"].str.split().str.len().to_numpy() < 6
    wrong = rng.random(len(test)) < np.where(short, 2 * noise, noise)
    labels = np.where(wrong, (test.labels + 1) % test.n_classes, test.labels)
    names = np.asarray(test.label_names, dtype=object)
    return align_predictions(dict(zip(test.ids, names[labels], strict=True)), test, name=name)


@pytest.fixture(scope="module")
def context(data):
    train, test = data
    preds = [_predictions(test, "model_a", 0.2, 0), _predictions(test, "model_b", 0.4, 1)]
    return RunContext(train, test, predictions=preds, progress=False)


def _fresh(ctx: RunContext) -> RunContext:
    return RunContext(ctx.train, ctx.eval, predictions=ctx.predictions, progress=False)


def test_registry_is_not_empty_and_names_match():
    assert {"partial_input", "aflite", "prediction_bias"} <= set(ANALYSES)
    for name, cls in REGISTRY.items():
        assert cls.name == name
        assert cls.description and cls.metric_docs and cls.score_columns
        assert isinstance(cls.requires, Requirements)
        assert cls.kind in ("detector", "evaluation")
        cls(**cls.fast_params).validate_params()


def test_registry_refuses_duplicates_and_lists_names():
    cls = REGISTRY["partial_input"]
    with pytest.raises(ValueError, match="already registered"):
        REGISTRY.register("partial_input", type("Other", (cls,), {}))
    with pytest.raises(ParameterError, match="partial_input"):
        REGISTRY.get("no_such_analysis")


@pytest.mark.parametrize("name", ANALYSES)
def test_same_seed_same_output(name, context):
    a = _make(name, random_state=0).run(context=_fresh(context))
    b = _make(name, random_state=0).run(context=_fresh(context))
    pd.testing.assert_frame_equal(a.scores, b.scores)
    assert a.metrics == pytest.approx(b.metrics, nan_ok=True)


@pytest.mark.parametrize("name", ANALYSES)
def test_one_row_per_example_with_documented_columns(name, context):
    analysis = _make(name)
    res = analysis.run(context=context)
    scored = analysis.scored_dataset(context)
    assert res.scores.columns[0] == "id"
    assert res.scores["id"].is_unique
    assert set(res.scores["id"]) == set(scored.ids)
    assert len(res.scores) == len(scored)
    assert f"{name}_score" in res.scores and f"is_{name}_issue" in res.scores
    assert all(isinstance(v, float) for v in res.metrics.values())
    json.dumps(res.details)  # details are plain JSON
    head = res.headline
    assert {"label", "value", "text", "verdict", "severity", "inconclusive", "evidence"} <= set(
        head
    )
    assert head["severity"] in ("none", "low", "moderate", "high", "info")


def _shuffled(ds: Dataset, seed: int) -> Dataset:
    """The same rows and ids with the labels permuted: any association with the text is gone."""
    frame = ds.frame.drop(columns=["label_id"]).copy()
    frame["label"] = np.random.default_rng(seed).permutation(frame["label"].to_numpy())
    return Dataset.from_frame(
        frame, ds.task, label_names=ds.label_names, name=f"{ds.name}-shuffled"
    )


@pytest.fixture(scope="module", params=[0, 1], ids=["shuffle0", "shuffle1"])
def shuffled_context(request, data):
    train, test = data
    # The models learned the real task (their predictions follow the unshuffled labels), so
    # against the shuffled gold labels they are right at chance on every group.
    preds = [_predictions(test, "model_a", 0.2, 0), _predictions(test, "model_b", 0.4, 1)]
    s_train, s_test = _shuffled(train, 10 + request.param), _shuffled(test, 20 + request.param)
    preds = [
        align_predictions(dict(zip(p.ids, p.values, strict=True)), s_test, name=p.name)
        for p in preds
    ]
    return RunContext(s_train, s_test, predictions=preds, progress=False)


@pytest.mark.parametrize("name", ANALYSES)
def test_shuffled_labels_never_give_a_finding(name, shuffled_context):
    """A verdict is a claim: with labels permuted there is nothing to find, so no analysis
    may report a MODERATE or HIGH finding (LOW stays possible at the tests' alpha)."""
    analysis = _make(name, random_state=0)
    if analysis.unmet(shuffled_context):
        pytest.skip(f"{name}: {analysis.unmet(shuffled_context)}")
    head = analysis.run(context=_fresh(shuffled_context)).headline
    assert head["severity"] not in ("moderate", "high"), head


@pytest.mark.parametrize("name", ANALYSES)
def test_a_severity_rests_on_an_interval_or_a_null_test(name, context):
    """Severities other than ``info`` come with the evidence they rest on."""
    head = _make(name).run(context=_fresh(context)).headline
    evidence = head["evidence"]
    if head["severity"] in ("low", "moderate", "high"):
        assert evidence["basis"] in ("interval", "null_test", "interval+null_test"), head
    if evidence["interval"] is not None:
        lo, hi = evidence["interval"]
        assert lo <= hi
    if head["inconclusive"]:
        assert "inconclusive" in head["verdict"]


@pytest.mark.parametrize("name", ANALYSES)
def test_inputs_not_mutated(name, context):
    ctx = _fresh(context)
    train, test = ctx.train, ctx.eval
    before = (copy.deepcopy(train.frame), copy.deepcopy(test.frame), train.fingerprint)
    _make(name).run(context=ctx)
    # Shared artifacts are not changed by the analysis that used them.
    shared = {k: v.copy() for k, v in ctx._memo.items() if isinstance(v, np.ndarray)}
    _make(name).run(context=ctx)
    for k, v in shared.items():
        np.testing.assert_array_equal(ctx._memo[k], v)
    pd.testing.assert_frame_equal(train.frame, before[0])
    pd.testing.assert_frame_equal(test.frame, before[1])
    assert train.fingerprint == before[2]


@pytest.mark.parametrize("name", ANALYSES)
def test_save_load_round_trip(name, context, tmp_path):
    res = _make(name).run(context=context)
    res.save(tmp_path / name)
    back = Result.load(
        tmp_path / name,
        expected_fingerprints={
            "train": context.train.fingerprint,
            "eval": context.eval.fingerprint,
        },
    )
    pd.testing.assert_frame_equal(back.scores, res.scores)
    assert back.metrics == pytest.approx(res.metrics, nan_ok=True)
    assert back.params == res.params and back.details == res.details
    assert back.headline == res.headline
    assert back.provenance.seed == res.provenance.seed
    assert back.provenance.fingerprints == res.provenance.fingerprints
    with pytest.raises(ResultLoadError, match="fingerprint for 'train'"):
        Result.load(tmp_path / name, expected_fingerprints={"train": "0" * 16})
    # No temp files left behind by the atomic writes.
    assert not [p for p in (tmp_path / name).iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("name", ANALYSES)
def test_config_round_trip(name):
    """Parameters are plain data that rebuild the same analysis (re-run from a manifest)."""
    a = _make(name)
    config = a.to_config()
    json.dumps(config)
    b = type(a).from_config(json.loads(json.dumps(config)))
    assert b.get_params() == a.get_params()
    with pytest.raises(ParameterError, match="Unknown parameter"):
        type(a).from_config({"no_such_param": 1})


@pytest.mark.parametrize("name", ANALYSES)
def test_section_renders_from_its_own_result(name, context):
    """The report section reads only what the analysis writes in ``details``/metrics."""
    res = _make(name).run(context=context)
    section = build_section(res)
    html = str(section.html_body)
    assert len(html) > 200
    assert "Traceback" not in html


@pytest.mark.parametrize("name", ANALYSES)
def test_clear_error_on_missing_inputs(name, data):
    train, _ = data
    analysis = _make(name)
    with pytest.raises(DetectorError, match="expects a spurious Dataset"):
        analysis.run(train.frame)
    unlabeled = Dataset.from_frame(
        pd.DataFrame({"question": ["q"], "context": ["c"], "answers": [["a"]]}), "qa"
    )
    unmet = analysis.unmet(RunContext(unlabeled, progress=False))
    if analysis.requirements().labels:
        assert any("needs class labels" in why for why in unmet)
        with pytest.raises(DetectorError, match="needs class labels"):
            analysis.run(unlabeled)


@pytest.mark.parametrize("name", ANALYSES)
def test_unmet_requirements_are_skipped_with_the_reason(name, data, tmp_path):
    train, _ = data
    ctx = RunContext(train, progress=False)  # no eval split, no predictions
    analysis = _make(name)
    res = run_analyses([analysis], ctx, out=tmp_path)[name]
    unmet = analysis.unmet(ctx)
    if unmet:
        assert res.status == "skipped" and res.error == "; ".join(unmet)
        back = Result.load(tmp_path / name)
        assert back.status == "skipped" and back.error == res.error
    else:
        assert res.status == "ok"


@pytest.mark.parametrize("name", ANALYSES)
def test_failure_is_recorded_not_swallowed(name, tmp_path):
    tiny = Dataset.from_frame(
        pd.DataFrame(
            {"premise": ["a", "b"], "hypothesis": ["c", "d"], "label": ["entailment", "neutral"]}
        ),
        "nli",
    )
    preds = [align_predictions({i: "entailment" for i in tiny.ids}, tiny, name="m")]
    # An analysis that needs an evaluation split gets one (else it is skipped, not failed).
    eval_split = tiny if _make(name).requirements().eval_split else None
    ctx = RunContext(tiny, eval_split, predictions=preds, progress=False)
    res = run_analyses([_make(name)], ctx, out=tmp_path)[name]
    assert res.status == "failed" and res.error
    back = Result.load(tmp_path / name)
    assert back.status == "failed" and back.error == res.error


def test_aflite_mode_is_explicit(context):
    """An evaluation split in the context does not switch AFLite to evaluation-set mode."""
    train_mode = _make("aflite").run(context=context)
    assert train_mode.details["mode"] == "train"
    assert set(train_mode.scores["id"]) == set(context.train.ids)
    eval_mode = _make("aflite", mode="eval").run(context=context)
    assert eval_mode.details["mode"] == "eval"
    assert set(eval_mode.scores["id"]) == set(context.eval.ids)
    no_eval = RunContext(context.train, progress=False)
    assert "needs an evaluation split (--eval)" in _make("aflite", mode="eval").unmet(no_eval)


def test_features_are_built_once_per_run(context):
    """Two analyses on the same featurizer and view share one matrix per split."""
    from spurious.context import ARTIFACTS

    original = ARTIFACTS.get("features")
    calls: list[tuple[str, str]] = []

    def spy(ctx, **config):
        calls.append((config["view"], config["split"]))
        return original(ctx, **config)

    ARTIFACTS.register("features", spy, replace=True)
    try:
        analyses = build_analyses(
            {
                "partial_input": {"features": "tfidf", "n_resamples": 50},
                "aflite": {**REGISTRY["aflite"].fast_params, "features": "tfidf"},
            }
        )
        results = run_analyses(analyses, _fresh(context))
    finally:
        ARTIFACTS.register("features", original, replace=True)
    assert all(r.status == "ok" for r in results.values())
    # partial_input needs train+eval of three views; AFLite (train mode) reuses full/train.
    assert sorted(calls) == sorted(
        (v, s) for v in ("full", "premise_only", "hypothesis_only") for s in ("train", "eval")
    )


def test_result_load_rejects_newer_format(tmp_path, context):
    res = _make(ANALYSES[0]).run(context=context)
    res.save(tmp_path / "r")
    meta = json.loads((tmp_path / "r" / "result.json").read_text())
    meta["format_version"] = 999
    (tmp_path / "r" / "result.json").write_text(json.dumps(meta))
    with pytest.raises(ResultLoadError, match="newer spurious"):
        Result.load(tmp_path / "r")
    (tmp_path / "r" / "result.json").write_text("{not json")
    with pytest.raises(ResultLoadError, match="not a valid result file"):
        Result.load(tmp_path / "r")
