"""A run shown in a notebook: the report's answer line, headline cards and key figure."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from markupsafe import escape

import spurious
from spurious.data.synthetic import make_nli_artifacts
from spurious.results import Result

pytest.importorskip("IPython")
from IPython.core.formatters import HTMLFormatter


@pytest.fixture(scope="module")
def nli_run():
    train, test = make_nli_artifacts(n=400, artifact_rate=0.9, random_state=1).dataset.split(0.3)
    return spurious.run(
        train,
        eval=test,
        analyses={"partial_input": {"features": "bow", "n_resamples": 50}},
        progress=False,
    )


def test_run_in_a_notebook_leads_with_the_headline_and_its_figure(nli_run):
    html = HTMLFormatter()(nli_run)  # what Jupyter calls to display the object
    head = nli_run["partial_input"].headline
    assert head["severity"] in ("moderate", "high")
    # The answer line and the card carry the hypothesis-only headline, not a metrics dump.
    assert "Shortcuts found: 1 of 1 analyses flag one" in html
    assert f'class="finding sev-{head["severity"]}"' in html
    assert escape(head["verdict"]) in html and escape(head["label"]) in html
    assert "<table" not in html  # the old view listed the first 12 metrics
    # The key figure is the partial-input section's first plot (accuracy per condition).
    figures = re.findall(r"<figure[^>]*><img src=\"data:image/svg\+xml;base64,", html)
    assert len(figures) == 1
    assert "Key figure: " + escape(head["label"]) in html
    assert "Accuracy per condition" in html
    # The report's card style, scoped to the output so it cannot restyle the notebook.
    assert ".spurious-nb .finding {" in html and "\nbody" not in html


def test_dataset_text_in_a_headline_is_escaped():
    evil = "<script>alert(1)</script>"
    r = Result(
        "x",
        pd.DataFrame(),
        {},
        headline={"label": evil, "text": evil, "verdict": evil, "severity": "high"},
    )
    run = spurious.Run(results={"x": r}, context=None, config={})
    for html in (HTMLFormatter()(run), HTMLFormatter()(r)):
        assert "<script>" not in html and "&lt;script&gt;" in html


def test_a_result_in_a_notebook_shows_its_headline_not_its_metrics():
    metrics = {f"m{i}": float(i) for i in range(20)}
    head = {"label": "hypothesis-only leakage", "text": "0.61 vs 0.34", "verdict": "strong",
            "severity": "high"}  # fmt: skip
    html = HTMLFormatter()(Result("partial_input", pd.DataFrame(), metrics, headline=head))
    assert "hypothesis-only leakage" in html and "[high] strong" in html and "0.61 vs 0.34" in html
    assert "m0" not in html
    skipped = Result("aflite", pd.DataFrame(), {}, status="skipped", error="needs an eval split")
    assert "skipped: needs an eval split" in HTMLFormatter()(skipped)


# -- datasets' own progress bars follow ours (issue 23 item 11) ---------------------------
@pytest.fixture
def bars_on():
    """datasets' bars on (other tests turn them off for the session), then as they were."""
    logging = pytest.importorskip("datasets").utils.logging
    was_on = logging.is_progress_bar_enabled()
    logging.enable_progress_bar()
    yield
    (logging.enable_progress_bar if was_on else logging.disable_progress_bar)()


def test_datasets_bars_are_off_during_a_run_without_progress_and_restored_after(capfd, bars_on):
    datasets = pytest.importorskip("datasets")
    from datasets.utils.logging import is_progress_bar_enabled

    from spurious.context import RunContext
    from spurious.runner import execute

    hf = datasets.Dataset.from_dict({"a": list(range(200))}).select(range(0, 200, 2))
    train, test = make_nli_artifacts(n=300, random_state=0).dataset.split(0.3)
    seen = []

    def flatten(_result):  # a datasets operation inside the run, as an analysis might do
        seen.append(is_progress_bar_enabled())
        hf.flatten_indices()

    assert is_progress_bar_enabled()
    capfd.readouterr()
    execute(
        {"inputs": {"data": "<in-memory>", "task": "nli"}, "analyses": {"atlas": {}}},
        context=RunContext(train, test),
        progress=False,
        on_result=flatten,
    )
    assert seen == [False]
    assert "Flattening the indices" not in capfd.readouterr().err
    assert is_progress_bar_enabled()  # the user's setting is back
    hf.flatten_indices()  # and outside a run the bar shows again
    assert "Flattening the indices" in capfd.readouterr().err


def test_save_hf_prints_no_datasets_bar_where_nobody_watches(tmp_path, capfd, bars_on):
    datasets = pytest.importorskip("datasets")
    from spurious.actions.hf_output import save_hf

    hf = datasets.Dataset.from_dict({"a": list(range(100))}).select(range(0, 100, 2))
    capfd.readouterr()
    save_hf(hf, tmp_path / "kept")  # stderr is captured: not a terminal
    err = capfd.readouterr().err
    assert "Saving the dataset" not in err and "Flattening" not in err
    assert datasets.load_from_disk(str(tmp_path / "kept"))["a"][:3] == [0, 2, 4]


# -- --eval-split: the evaluation split of a DatasetDict folder (issue 23 item 12) --------
@pytest.fixture(scope="module")
def dd_files(tmp_path_factory):
    datasets = pytest.importorskip("datasets")
    d = tmp_path_factory.mktemp("evalsplit")
    train, test = make_nli_artifacts(n=300, random_state=0).dataset.split(0.3)
    cols = ["id", "premise", "hypothesis", "label"]
    train.frame[cols].to_json(d / "train.jsonl", orient="records", lines=True)
    parts = {
        "train": train.frame[cols].iloc[:50],
        "validation": test.frame[cols],
    }
    datasets.DatasetDict(
        {k: datasets.Dataset.from_pandas(v, preserve_index=False) for k, v in parts.items()}
    ).save_to_disk(str(d / "dd"))
    return d, len(test)


def _audit(d, out, *eval_args):
    from click.testing import CliRunner

    from spurious.cli import main

    args = ["audit", str(d / "train.jsonl"), "--task", "nli", "--quick", "--only", "atlas"]
    return CliRunner().invoke(main, [*args, *eval_args, "--out", str(out)])


def test_eval_split_reads_that_split_of_a_datasetdict_folder(dd_files, tmp_path):
    import json

    d, n_eval = dd_files
    by_split = _audit(d, tmp_path / "a", "--eval", str(d / "dd"), "--eval-split", "validation")
    assert by_split.exit_code in (0, 3), by_split.output
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["config"]["inputs"]["eval_split"] == "validation"  # re-runs the same
    assert manifest["datasets"]["eval"]["n"] == n_eval
    # The split's own folder is the same data.
    by_folder = _audit(d, tmp_path / "b", "--eval", str(d / "dd" / "validation"))
    assert by_folder.exit_code in (0, 3), by_folder.output
    other = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert other["datasets"]["eval"]["fingerprint"] == manifest["datasets"]["eval"]["fingerprint"]


@pytest.mark.parametrize(
    ("eval_args", "message"),
    [
        (["--eval", "{dd}"], "choose its split with --eval-split"),
        (["--eval", "{dd}", "--eval-split", "test"], "--eval-split (inputs.eval_split) must be"),
        (["--eval", "{dd}/validation", "--eval-split", "validation"], "is not one"),
        (["--eval-split", "validation"], "no --eval (inputs.eval) was given"),
    ],
)
def test_eval_split_mistakes_are_one_line_before_anything_is_written(
    dd_files, tmp_path, eval_args, message
):
    d, _ = dd_files
    args = [a.replace("{dd}", str(d / "dd")) for a in eval_args]
    res = _audit(d, tmp_path / "never", *args)
    assert res.exit_code == 2 and message in res.output, res.output
    assert not (tmp_path / "never").exists()


def test_eval_split_is_documented_in_help():
    from click.testing import CliRunner

    from spurious.cli import main

    text = " ".join(CliRunner().invoke(main, ["audit", "--help"]).output.split())
    assert "--eval-split SPLIT" in text and "--eval snli_dd/validation" in text
