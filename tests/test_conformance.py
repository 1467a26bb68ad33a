"""The analysis contract over every registered analysis and the documented worked example.

The checks themselves are public, in :mod:`spurious.testing` (as scikit-learn's
``parametrize_with_checks``), so a plugin runs the same suite on its own analysis. A new
built-in analysis gets them for free by registering: each check reads its ``fast_params``
from the class. The tests below the parametrized suite are about the registry and the run
lifecycle rather than one analysis.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from spurious.analysis import ANALYSES, Analysis, load_analyses
from spurious.context import RunContext
from spurious.data import Dataset
from spurious.data.predictions import align_predictions
from spurious.data.synthetic import make_nli_artifacts
from spurious.exceptions import ParameterError, ResultLoadError
from spurious.results import Result
from spurious.runner import build_analyses, run_analyses
from spurious.testing import parametrize_with_checks

REGISTRY = load_analyses()
ANALYSES_NAMES = REGISTRY.names()
DOC = Path(__file__).resolve().parents[1] / "docs" / "adding-an-analysis.md"


def _worked_example() -> type[Analysis]:
    """The analysis class of docs/adding-an-analysis.md, not left in the registry."""
    block = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)[0]
    namespace: dict = {"__name__": "doc_example"}
    exec(compile(block, str(DOC), "exec"), namespace)  # registers the analysis
    (cls,) = (
        v
        for v in namespace.values()
        if isinstance(v, type) and issubclass(v, Analysis) and v.__module__ == "doc_example"
    )
    ANALYSES.unregister(cls.name)  # other tests see the built-in registry only
    return cls


WORKED_EXAMPLE = _worked_example()


@parametrize_with_checks([*(REGISTRY[name] for name in ANALYSES_NAMES), WORKED_EXAMPLE])
def test_analysis_contract(analysis, check):
    check(analysis)


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
    assert {"partial_input", "aflite", "prediction_bias"} <= set(ANALYSES_NAMES)
    assert WORKED_EXAMPLE.name not in ANALYSES_NAMES  # the doc's example is not built in
    for name, cls in REGISTRY.items():
        assert cls.name == name


def test_registry_refuses_duplicates_and_lists_names():
    cls = REGISTRY["partial_input"]
    with pytest.raises(ValueError, match="already registered"):
        REGISTRY.register("partial_input", type("Other", (cls,), {}))
    with pytest.raises(ParameterError, match="partial_input"):
        REGISTRY.get("no_such_analysis")


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
    res = _make(ANALYSES_NAMES[0]).run(context=context)
    res.save(tmp_path / "r")
    meta = json.loads((tmp_path / "r" / "result.json").read_text())
    meta["format_version"] = 999
    (tmp_path / "r" / "result.json").write_text(json.dumps(meta))
    with pytest.raises(ResultLoadError, match="newer spurious"):
        Result.load(tmp_path / "r")
    (tmp_path / "r" / "result.json").write_text("{not json")
    with pytest.raises(ResultLoadError, match="not a valid result file"):
        Result.load(tmp_path / "r")
