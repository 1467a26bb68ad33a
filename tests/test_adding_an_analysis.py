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
    assert len(blocks) == 2, "the worked example has a module and a usage block"
    namespace: dict = {"__name__": "doc_example"}
    load_analyses()
    exec(compile(blocks[0], str(DOC), "exec"), namespace)  # registers the analysis
    try:
        yield namespace, blocks[1]
    finally:
        ANALYSES.unregister("length_leakage")


def test_the_worked_example_runs_end_to_end(doc_namespace, tmp_path, capsys):
    namespace, usage = doc_namespace
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
