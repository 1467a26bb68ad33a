"""An ignored option is an error (issue 26 items 14, 16 and 18).

A table of options that used to be accepted and then ignored (exit 0, as if they had
worked): each now exits 2 (CLI) or raises ParameterError (API) naming the option and
why it has no effect, with nothing written. Then fairness annotations with known
answers (a bad label refused naming the row, a string where a list belongs refused,
partial coverage warned with its counts and recorded), ``--label-names``, AFLite's
resume line and ``train`` errors in flags.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner

import spurious
from spurious.cli import main
from spurious.data import load_dataset
from spurious.data.annotations import match_annotations, read_annotations
from spurious.data.synthetic import make_nli_artifacts
from spurious.detectors.cartography import Cartography
from spurious.evaluate.fairness.agreement import counts_from_lists, coverage
from spurious.exceptions import DataFormatError, ParameterError
from spurious.report import render_report
from spurious.results import DetectorResult

FAST_AFLITE = ["--features", "bow", "--partitions", "4", "--baseline-view", "none"]
#: Fairness on 120 evaluation rows in seconds: one adversary, one seed, one round.
FAST_FAIRNESS = {
    "adversaries": ["bow"],
    "seeds": [0],
    "aflite_params": {"n_partitions": 4, "train_size": 0.3, "slice_size": 0.1, "max_rounds": 1},
    "n_bootstrap": 0,
}


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def d(tmp_path_factory):
    """train.jsonl (300 rows), dev.jsonl (120 rows, other ids), predictions on dev, and
    dev copies whose annotator labels are bad, partial or strings."""
    d = tmp_path_factory.mktemp("options")
    cols = ["id", "premise", "hypothesis", "label"]
    train = make_nli_artifacts(n=300, random_state=0).dataset.frame[cols]
    dev = make_nli_artifacts(n=120, random_state=1).dataset.frame[cols].copy()
    dev["id"] = dev["id"].str.replace("nli-", "dev-")
    _write(d / "train.jsonl", train.to_dict("records"))
    rows = dev.to_dict("records")
    _write(d / "dev.jsonl", rows)
    # model A is always right, model B right on the first 80 rows
    _write(d / "A.jsonl", [{"id": r["id"], "prediction": r["label"]} for r in rows])
    other = {"entailment": "neutral", "neutral": "contradiction", "contradiction": "entailment"}
    _write(d / "B.jsonl", [{"id": r["id"], "prediction": r["label"] if k < 80 else
                            other[r["label"]]} for k, r in enumerate(rows)])  # fmt: skip
    _write(d / "dev_banana.jsonl",
           [{**r, "annotator_labels": [r["label"]] * 4 + (["banana"] if k == 7 else [])}
            for k, r in enumerate(rows)])  # fmt: skip
    _write(d / "dev_partial.jsonl",
           [{**r, "annotator_labels": [r["label"]] * 5} if k < 30 else r
            for k, r in enumerate(rows)])  # fmt: skip
    _write(d / "ann_string.jsonl", [{"id": r["id"], "annotator_labels": "ecn"} for r in rows])
    _write(d / "ann_partial.jsonl",
           [{"id": r["id"], "annotator_labels": [r["label"]] * 5} for r in rows[:30]])  # fmt: skip
    # integer labels in the order contradiction, neutral, entailment
    order = ["contradiction", "neutral", "entailment"]
    _write(d / "train_int.jsonl",
           [{**r, "label": order.index(r["label"])} for r in train.to_dict("records")])  # fmt: skip
    # one row of 300 without a gold label (SNLI's "-")
    _write(d / "train_nogold.jsonl", [{**r, "label": "-"} if k == 0 else r
                                      for k, r in enumerate(train.to_dict("records"))])  # fmt: skip
    (d / "empty").mkdir()
    return d


def _cli(args, d, tmp):
    args = [a.format(d=d, tmp=tmp) for a in args]
    return CliRunner().invoke(main, args)


# -- item 14: ignored options -----------------------------------------------------------
IGNORED = [
    # --split on a plain file: there is no split to pick
    (["leakage", "{d}/train.jsonl", "--task", "nli", "--split", "validation", "--out", "{tmp}/o"],
     "The 'split' parameter (--split) 'validation' applies to a Hugging Face DatasetDict"),
    (["aflite", "{d}/train.jsonl", "--task", "nli", *FAST_AFLITE, "--ray-address", "ray://x:1",
      "--out", "{tmp}/o"], "only --executor ray uses"),
    (["demo", "--split", "validation", "--out", "{tmp}/o"], "No such option '--split'"),
    # run --config takes its inputs from the config: the data options would be ignored
    (["run", "--config", "{d}/train.jsonl", "--split", "x", "--out", "{tmp}/o"],
     "No such option '--split'"),
    (["leakage", "{d}/train.jsonl", "--task", "nli", "--max-dropped", "nan", "--out", "{tmp}/o"],
     "expected a fraction in [0, 1]; got nan"),
    (["leakage", "{d}/train.jsonl", "--task", "nli", "--max-dropped", "-1", "--out", "{tmp}/o"],
     "expected a fraction in [0, 1]; got -1.0"),
    # 0 is a limit, not "unset" (it used to fall back to the default 10%)
    (["leakage", "{d}/train_nogold.jsonl", "--task", "nli", "--max-dropped", "0", "--out",
      "{tmp}/o"], "1 of 300 rows (0.3%) have no gold label and were left out, more than the 0%"),
    (["fairness", "{d}/train.jsonl", "--task", "nli", "--eval", "{d}/dev.jsonl", "--predictions",
      "{d}/A.jsonl", "--adversary", "bow", "--family", "electra-bse=electra-base", "--out",
      "{tmp}/o"], "names ['electra-bse'], neither an adversary"),
    (["train", "{d}/train.jsonl", "--task", "nli", "--resume", "--out", "{d}/empty"],
     "nothing to resume"),
    (["train", "{d}/train.jsonl", "--task", "nli", "--resume", "--force", "--out", "{tmp}/o"],
     "--force starts it over"),
    (["aflite", "{d}/train.jsonl", "--task", "nli", *FAST_AFLITE, "--write-filtered",
      "{tmp}/kept.jsonl", "--filtered-format", "csv", "--out", "{tmp}/o"],
     "(--filtered-format) 'csv' contradicts the suffix"),
    (["aflite", "{d}/train.jsonl", "--task", "nli", *FAST_AFLITE, "--filtered-format", "csv",
      "--out", "{tmp}/o"], "which is not given"),
    (["aflite", "{d}/train.jsonl", "--task", "nli", *FAST_AFLITE, "--restart", "--out",
      "{tmp}/o"], "--checkpoint-dir, which is not given"),
    (["leakage", "{d}/train.jsonl", "--task", "qa", "--label-names", "a,b", "--out", "{tmp}/o"],
     "has no label names to set"),
    # item 16 through the CLI: a label outside the label names, a string for a list
    (["fairness", "{d}/train.jsonl", "--task", "nli", "--eval", "{d}/dev_banana.jsonl",
      "--predictions", "{d}/A.jsonl", "--adversary", "bow", "--out", "{tmp}/o"],
     "id 'dev-007': label 'banana' is not one of"),
    (["fairness", "{d}/train.jsonl", "--task", "nli", "--eval", "{d}/dev.jsonl",
      "--predictions", "{d}/A.jsonl", "--annotations", "{d}/ann_string.jsonl", "--out",
      "{tmp}/o"], "'annotator_labels' must be a list of labels; got str 'ecn'"),
]  # fmt: skip


def _id(value):
    return " ".join(value[:2] + value[4:6]) if isinstance(value, list) else "-"


@pytest.mark.parametrize(("args", "message"), IGNORED, ids=_id)
def test_an_ignored_option_is_an_error(d, tmp_path, args, message):
    r = _cli(args, d, tmp_path)
    assert r.exit_code == 2, r.output
    assert message in " ".join(r.output.split()), r.output
    assert list(tmp_path.iterdir()) == []  # no run folder, no filtered file
    assert list((d / "empty").iterdir()) == []


def test_api_split_on_a_plain_file_or_frame(d):
    for source in (d / "train.jsonl", pd.read_json(d / "train.jsonl", lines=True)):
        with pytest.raises(ParameterError, match=r"'split' parameter \(--split\) 'validation'"):
            load_dataset(source, "nli", split="validation")
    assert len(load_dataset(d / "train.jsonl", "nli")) == 300


def test_api_task_and_profile_that_would_be_ignored(d, tmp_path):
    ds = load_dataset(d / "train.jsonl", "nli")
    pi = {"partial_input": {"features": "bow", "n_resamples": 20}}
    with pytest.raises(ParameterError, match=r"run\(task='qa'\) but the in-memory 'data'"):
        spurious.run(ds, "qa", analyses=pi, out=tmp_path / "a")
    with pytest.raises(ParameterError, match=r"must be one of \['full', 'quick'\]. Got 'turbo'"):
        spurious.run(ds, profile="turbo", out=tmp_path / "b")
    with pytest.raises(ParameterError, match="with 'analyses' given it has no effect"):
        spurious.run(ds, analyses=pi, profile="quick", out=tmp_path / "c")
    with pytest.raises(ParameterError, match="with 'analyses' given it has no effect"):
        spurious.run(ds, analyses=pi, profile="full", out=tmp_path / "c")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", [-0.1, 1.5, "nan", "lots", True])
def test_max_dropped_written_in_a_config_is_range_checked(d, tmp_path, value):
    # The CLI checks --max-dropped; a config file reaches load_inputs directly.
    config = {
        "inputs": {"data": str(d / "train.jsonl"), "task": "nli", "max_dropped": value},
        "analyses": {"atlas": {}},
    }
    with pytest.raises(ParameterError, match=r"inputs.max_dropped \(--max-dropped\)"):
        spurious.run_config(config, out=tmp_path / "run")
    assert list(tmp_path.iterdir()) == []


def test_render_report_into_a_folder_without_a_run(tmp_path):
    with pytest.raises(ParameterError, match="is not a run directory"):
        render_report(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_write_filtered_format_that_contradicts_the_suffix(d, tmp_path):
    ds = load_dataset(d / "train.jsonl", "nli")
    res = DetectorResult("aflite", pd.DataFrame({"id": ds.ids, "is_aflite_issue": False}), {})
    with pytest.raises(ParameterError, match=r"'csv' contradicts the suffix .* names 'jsonl'"):
        spurious.write_filtered(ds, res, tmp_path / "kept.jsonl", "csv")
    assert list(tmp_path.iterdir()) == []
    # a suffix that names no format takes the given one
    out = spurious.write_filtered(ds, res, tmp_path / "kept.txt", "csv")
    assert out.read_text().splitlines()[0].startswith("id,")


@pytest.mark.parametrize("what", ["missing", "empty", "a file"])
def test_cartography_dynamics_dir_is_checked_before_work(d, tmp_path, what):
    folder = {"missing": tmp_path / "nope", "empty": d / "empty", "a file": d / "dev.jsonl"}[what]
    with pytest.raises(ParameterError, match="'dynamics_dir' parameter of Cartography"):
        spurious.run(d / "train.jsonl", "nli", out=tmp_path / "run",
                     analyses={"cartography": {"path": "load", "dynamics_dir": str(folder)}})  # fmt: skip
    assert not (tmp_path / "run").exists()


def test_cartography_dynamics_dir_without_load_is_refused():
    with pytest.raises(ParameterError, match=r"needed with it, ignored otherwise.*path='fast'"):
        Cartography(path="fast", dynamics_dir="runs/dyn").validate_params()


# -- item 16: fairness annotations ------------------------------------------------------
NAMES = ["entailment", "neutral", "contradiction"]


def test_annotation_labels_are_validated_with_known_answers():
    ok = counts_from_lists([["entailment", "e", "n", "-"], None], NAMES, ids=["a", "b"])
    assert ok == [{"entailment": 2.0, "neutral": 1.0}, None]
    with pytest.raises(DataFormatError, match="dev, id 'b': label 'banana' is not one of"):
        counts_from_lists([["e"], ["banana"]], NAMES, ids=["a", "b"], name="dev")
    # a string is refused, never split into letters (that gave 2.82 bits of "entropy")
    with pytest.raises(DataFormatError, match=r"got str 'contradiction'.*\['contradiction'\]"):
        counts_from_lists(["contradiction"], NAMES, ids=["a"])
    with pytest.raises(DataFormatError, match="got str 'ab'"):
        counts_from_lists(["ab"])  # without label names too


def test_annotation_file_strings_and_counters_are_refused(d, tmp_path):
    with pytest.raises(DataFormatError, match=r"ann_string.jsonl:1: 'annotator_labels' must"):
        read_annotations(d / "ann_string.jsonl", NAMES)
    bad = _write(tmp_path / "c.jsonl", [{"id": "x", "label_counter": {"e": -3}}])
    with pytest.raises(DataFormatError, match=r"c\.jsonl:1: label 'e' has count -3"):
        read_annotations(bad, NAMES)


def test_partial_coverage_is_counted(d):
    dev = load_dataset(d / "dev.jsonl", "nli")
    match = match_annotations(d / "ann_partial.jsonl", dev)
    record, note = coverage(match.counts, "dev")
    assert record == {"n_annotated": 30, "n_examples": 120, "share": 0.25}
    assert note is not None and "only 30 of the 120 examples of dev" in note


def test_fairness_warns_and_records_partial_coverage(d):
    r = spurious.run(d / "train.jsonl", "nli", eval=d / "dev_partial.jsonl",
                     predictions=[d / "A.jsonl", d / "B.jsonl"],
                     analyses={"fairness": FAST_FAIRNESS}, progress=False)  # fmt: skip
    res = r["fairness"]
    assert res.status == "ok", res.error
    assert res.details["annotation_coverage"] == {
        "n_annotated": 30,
        "n_examples": 120,
        "share": 0.25,
    }
    assert any("only 30 of the 120 examples" in w for w in r.context.warnings), r.context.warnings
    # the 30 annotated rows all agree with the gold: agreement 1.0 over them, NaN elsewhere
    assert res.scores["annotator_agreement"].notna().sum() == 30
    assert res.scores["annotator_agreement"].dropna().eq(1.0).all()


# -- item 18 ------------------------------------------------------------------------------
def test_label_names_on_the_command_line(d, tmp_path):
    args = ["leakage", str(d / "train_int.jsonl"), "--task", "nli", "--features", "bow",
            "--n-resamples", "20", "--folds", "2", "--out"]  # fmt: skip
    order = "contradiction,neutral,entailment"
    r = CliRunner().invoke(main, [*args, str(tmp_path / "named"), "--label-names", order])
    assert r.exit_code == 0, r.output
    manifest = json.loads((tmp_path / "named" / "manifest.json").read_text())
    assert manifest["datasets"]["train"]["label_names"] == order.split(",")
    assert manifest["config"]["inputs"]["label_names"] == order.split(",")
    # the integers index into the names given: row 0 (contradiction) keeps its label
    first = json.loads((d / "train_int.jsonl").read_text().splitlines()[0])
    ds = load_dataset(d / "train_int.jsonl", "nli", label_names=order.split(","))
    assert ds.frame["label"].iloc[0] == order.split(",")[first["label"]]
    # a name list that misses a label of the data is an error naming the row
    r = CliRunner().invoke(main, [*args, str(tmp_path / "bad"), "--label-names", "a,b"])
    assert r.exit_code == 2 and "unknown label" in r.output, r.output
    assert not (tmp_path / "bad").exists()
    r = CliRunner().invoke(main, [*args, str(tmp_path / "bad"), "--label-names", "a,a"])
    assert r.exit_code == 2 and "repeated" in r.output, r.output


def test_aflite_says_it_resumed_from_a_checkpoint(d, tmp_path):
    base = ["aflite", str(d / "train.jsonl"), "--task", "nli", *FAST_AFLITE,
            "--checkpoint-dir", str(tmp_path / "ckpt")]  # fmt: skip
    first = CliRunner().invoke(main, [*base, "--max-rounds", "1", "--out", str(tmp_path / "a")])
    assert first.exit_code == 0, first.output
    assert "aflite: resumed" not in first.output
    again = CliRunner().invoke(main, [*base, "--max-rounds", "2", "--out", str(tmp_path / "b")])
    assert again.exit_code == 0, again.output
    assert f"aflite: resumed from round 1 of {tmp_path / 'ckpt'}" in again.output


def test_train_errors_name_flags_not_api_arguments(d, tmp_path):
    (tmp_path / "metrics.json").write_text("{}")  # a finished fine-tune
    r = CliRunner().invoke(main, ["train", str(d / "train.jsonl"), "--task", "nli",
                                  "--out", str(tmp_path)])  # fmt: skip
    assert r.exit_code == 2, r.output
    assert "--out" in r.output and "pass --force to replace it" in r.output, r.output
    assert "output_dir" not in r.output and "overwrite=True" not in r.output
    r = CliRunner().invoke(main, ["train", str(d / "train.jsonl"), "--task", "nli", "--lr",
                                  "-1", "--out", str(tmp_path / "o")])  # fmt: skip
    assert r.exit_code == 2 and "error: --lr must be a float" in r.output, r.output
    assert "learning_rate" not in r.output
