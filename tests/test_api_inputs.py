"""The Python API keeps every input, in memory or on disk, and names a missing file.

``spurious.run`` used to drop the evaluation split, predictions, attributes, annotations,
field maps and formats when the data was an in-memory Dataset; a missing predictions file
ended as "skipped: needs model predictions". Each case here checks what reached the run.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from spurious import load_dataset
from spurious.analysis import Analysis, AnalysisOutput, Requirements
from spurious.data.synthetic import make_nli_artifacts
from spurious.exceptions import ParameterError
from spurious.runner import order_analyses, run, run_analyses

ATLAS = {"atlas": {"min_count": 2}}


@pytest.fixture(scope="module")
def splits():
    return make_nli_artifacts(n=300, random_state=0).dataset.split(0.3, random_state=0)


def _write_jsonl(ds, path, rename=None):
    frame = ds.frame[["id", "premise", "hypothesis"]].copy()
    frame["label"] = [ds.label_names[i] for i in ds.labels]
    if rename:
        frame = frame.rename(columns=rename)
    path.write_text("\n".join(json.dumps(r) for r in frame.to_dict("records")) + "\n")
    return path


def test_in_memory_data_keeps_an_eval_file(splits, tmp_path):
    train, test = splits
    path = _write_jsonl(test, tmp_path / "eval.jsonl")
    r = run(train, eval=path, analyses=ATLAS, progress=False)
    assert r.context.eval is not None and len(r.context.eval) == len(test)
    assert r.config["inputs"]["eval"] == str(path)


def test_field_map_and_format_apply_to_an_eval_file_beside_in_memory_data(splits, tmp_path):
    train, test = splits
    path = _write_jsonl(test, tmp_path / "eval.txt", rename={"hypothesis": "sentence2"})
    r = run(
        train,
        eval=path,
        field_map={"hypothesis": "sentence2"},
        format="jsonl",
        analyses=ATLAS,
        progress=False,
    )
    assert r.context.eval.frame["hypothesis"].tolist() == test.frame["hypothesis"].tolist()


def test_in_memory_data_keeps_predictions_and_attributes(splits, tmp_path):
    train, test = splits
    preds = tmp_path / "preds.jsonl"
    rows = [{"id": i, "prediction": test.label_names[0]} for i in test.ids]
    preds.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    attrs = tmp_path / "attrs.csv"
    pd.DataFrame({"id": test.ids, "my_h": np.arange(len(test), dtype=float)}).to_csv(
        attrs, index=False
    )
    r = run(
        train,
        eval=test,
        predictions=preds,  # one path, not a list: taken as one file
        attributes=attrs,
        analyses=ATLAS,
        progress=False,
    )
    assert len(r.context.predictions) == 1
    assert r.context.attributes["my_h"].tolist() == list(range(len(test)))


def test_in_memory_data_keeps_annotations(splits, tmp_path):
    train, test = splits
    ann = tmp_path / "ann.jsonl"
    rows = [{"id": i, "annotator_labels": [test.label_names[0]] * 3} for i in test.ids]
    ann.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    r = run(train, eval=test, annotations=ann, analyses=ATLAS, progress=False)
    assert r.context.has_annotations


def test_in_memory_heuristics_train(splits):
    train, test = splits
    r = run(train, eval=test, heuristics_train=train, analyses=ATLAS, progress=False)
    assert r.context.heuristics_train is train
    assert r.config["inputs"]["heuristics_train"].startswith("<in-memory")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"predictions": ["nope.json"]}, r"inputs.predictions\[0\]: no such file 'nope.json'"),
        ({"attributes": "nope.csv"}, r"inputs.attributes: no such file or folder 'nope.csv'"),
        ({"annotations": "nope.jsonl"}, r"inputs.annotations: no such file or folder"),
        ({"eval": "nope.jsonl"}, r"'nope\.jsonl' does not exist"),
    ],
)
def test_a_missing_file_is_an_error_naming_it(splits, tmp_path, kwargs, message):
    from spurious.exceptions import SpuriousError

    train, _ = splits
    out = tmp_path / "run"
    with pytest.raises(SpuriousError, match=message):
        run(train, analyses=ATLAS, progress=False, out=out, **kwargs)
    assert not out.exists()  # checked before anything is written


def test_a_missing_file_is_an_error_with_a_data_path_too(tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"premise": "a", "hypothesis": "b", "label": "neutral"}) + "\n")
    with pytest.raises(ParameterError, match=r"inputs\.predictions"):
        run(data, "nli", predictions=["missing.json"], analyses=ATLAS, progress=False)


def test_task_of_in_memory_data_must_agree(splits):
    train, _ = splits
    with pytest.raises(ParameterError, match="in-memory 'data' has task 'nli'"):
        run(train, "qa", analyses=ATLAS, progress=False)


def test_path_and_memory_give_the_same_metrics(splits, tmp_path):
    train, test = splits
    a = run(train, eval=test, analyses=ATLAS, progress=False)
    tr = load_dataset(_write_jsonl(train, tmp_path / "tr.jsonl"), "nli")
    ev = load_dataset(_write_jsonl(test, tmp_path / "ev.jsonl"), "nli")
    b = run(tr, eval=ev, analyses=ATLAS, progress=False)
    assert a["atlas"].metrics == b["atlas"].metrics


# -- declared order ----------------------------------------------------------------------
class _Reader(Analysis):
    """Reads another analysis' result (declared with ``after``)."""

    name = "doc_reader"
    after = ("doc_source",)
    requires = Requirements()

    def _run(self, context):
        prev = context.results.get("doc_source")
        seen = float(prev is not None and prev.status == "ok")
        return AnalysisOutput(scores=pd.DataFrame({"id": []}), metrics={"saw_source": seen})


class _Source(Analysis):
    name = "doc_source"
    requires = Requirements()

    def _run(self, context):
        return AnalysisOutput(scores=pd.DataFrame({"id": []}), metrics={"ran": 1.0})


def test_an_analysis_runs_after_what_it_reads(splits):
    from spurious.context import RunContext

    train, _ = splits
    ctx = RunContext(train, progress=False)
    results = run_analyses([_Reader(), _Source()], ctx)
    assert list(results) == ["doc_source", "doc_reader"]
    assert results["doc_reader"].metrics["saw_source"] == 1.0
    assert not ctx.warnings


def test_a_dependency_not_run_is_said(splits):
    from spurious.context import RunContext

    train, _ = splits
    ctx = RunContext(train, progress=False)
    results = run_analyses([_Reader()], ctx)
    assert results["doc_reader"].metrics["saw_source"] == 0.0
    assert ctx.warnings == [
        "doc_reader uses the result of doc_source when both run; doc_source was not run "
        "in this run, so doc_reader ran without it."
    ]


def test_a_circle_of_dependencies_is_refused():
    class _X:
        def __init__(self, name, after):
            self.name, self.after = name, after

    with pytest.raises(ParameterError, match="cannot be resolved"):
        order_analyses([_X("a", ("b",)), _X("b", ("a",))])


def test_builtin_readers_declare_what_they_read():
    from spurious.analysis import load_analyses

    registry = load_analyses()
    assert "cartography" in registry.get("peco").after
    assert "partial_input" in registry.get("pvi").after
    for name, cls in registry.items():
        assert set(cls.after) <= set(registry), name


# -- requirements that are checked ---------------------------------------------------------
def test_missing_extra_is_an_unmet_requirement(splits):
    from spurious.context import RunContext

    train, _ = splits
    req = Requirements(extras=(("no_such_module_xyz", "encoder"),))
    assert req.unmet(RunContext(train, progress=False)) == [
        "needs no_such_module_xyz is not installed (pip install 'spurious[encoder]')"
    ]


def test_heuristics_requirement_is_checked(splits):
    from spurious.context import RunContext
    from spurious.heuristics import HEURISTICS

    train, _ = splits
    ctx = RunContext(train, progress=False)
    assert Requirements(heuristics=True).unmet(ctx) == []  # NLI has heuristics
    saved = dict(HEURISTICS.items())
    try:
        for name in list(saved):
            HEURISTICS.unregister(name)
        assert "needs heuristic attributes" in Requirements(heuristics=True).unmet(ctx)[0]
    finally:
        for name, cls in saved.items():
            HEURISTICS.register(name, cls, replace=True)
