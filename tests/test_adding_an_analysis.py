"""docs/adding-an-analysis.md is executed: its example analysis works end to end."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spurious.analysis import ANALYSES, load_analyses
from spurious.context import RunContext
from spurious.data.synthetic import make_nli_artifacts
from spurious.runner import audit_plan, execute, run_analyses

DOC = Path(__file__).resolve().parents[1] / "docs" / "adding-an-analysis.md"


@pytest.fixture()
def doc_namespace():
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) == 4, "the worked example: module, usage, and two contract checks"
    namespace: dict = {"__name__": "doc_example"}
    load_analyses()
    exec(compile(blocks[0], str(DOC), "exec"), namespace)  # registers the analysis
    try:
        yield namespace, blocks[1:]
    finally:
        ANALYSES.unregister("length_leakage")


def test_the_worked_example_runs_end_to_end(doc_namespace, tmp_path, capsys):
    namespace, (usage, *_) = doc_namespace
    exec(compile(usage, str(DOC), "exec"), dict(namespace))
    assert "label entropy" in capsys.readouterr().out

    # It joins the audit plan without any change to the audit code.
    assert "length_leakage" in audit_plan(profile="quick")

    # A planted length artifact is found; shuffled labels are not.
    train, test = make_nli_artifacts(n=900, artifact_rate=0.9, random_state=0).dataset.split(0.3)
    cls = ANALYSES["length_leakage"]
    res = cls().run(train, test)
    assert res.metrics["mutual_information"] > 0
    assert set(res.scores["id"]) == set(test.ids)
    # The verdict rests on the G test; without an interval it grades no higher than low.
    assert res.metrics["p_value"] < 1e-6
    assert res.headline["severity"] == "low"
    assert res.headline["evidence"]["basis"] == "null_test"
    shuffled = cls().run(_shuffled(train), _shuffled(test))
    assert shuffled.headline["severity"] == "none", shuffled.headline

    # Skipped with the reason on a task it does not apply to.
    import pandas as pd

    from spurious.data import Dataset

    qa = Dataset.from_frame(
        pd.DataFrame({"question": ["q?"] * 3, "context": ["c"] * 3, "answers": [["c"]] * 3}),
        "qa",
    )
    skipped = run_analyses([cls()], RunContext(qa, progress=False))["length_leakage"]
    assert skipped.status == "skipped" and "applies to tasks" in skipped.error

    # Through the lifecycle: result folder, manifest and a report with its card.
    run = execute(
        {"inputs": {"synthetic": {"n": 300, "eval_fraction": 0.3}},
         "analyses": {"length_leakage": {"n_bins": 4}}},
        out=tmp_path / "run", progress=False,
    )  # fmt: skip
    assert run.results["length_leakage"].status == "ok"
    html = run.report.read_text()
    assert "length leakage" in html


def test_the_contract_checks_of_the_page_run(doc_namespace):
    """Section 3: check_analysis passes the example; the parametrizer names every check."""
    namespace, (_, check_block, pytest_block) = doc_namespace
    ns = dict(namespace)
    exec(compile(check_block, str(DOC), "exec"), ns)
    assert set(ns["outcome"].values()) == {"passed"}
    exec(compile(pytest_block, str(DOC), "exec"), ns)
    (mark,) = ns["test_length_leakage_contract"].pytestmark
    ids = [p.id for p in mark.args[1]]
    assert "length_leakage-shuffled_labels_give_no_finding" in ids
    assert "length_leakage-invalid_parameters" in ids


def _shuffled(ds):
    import numpy as np

    from spurious.data import Dataset

    frame = ds.frame.drop(columns=["label_id"]).copy()
    frame["label"] = np.random.default_rng(0).permutation(frame["label"].to_numpy())
    return Dataset.from_frame(frame, ds.task, label_names=ds.label_names)
