"""Nothing lost, nothing mixed: output locations are checked before any work (issue 14).

A table of bad invocations: each must exit 2 with one readable line, write no run
directory and leave every input byte-identical.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np
import pytest
from click.testing import CliRunner

from spurious.cli import main
from spurious.data.synthetic import make_nli_artifacts

FAST = ["--partitions", "4", "--max-rounds", "1", "--features", "bow"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("safety")
    train, dev = make_nli_artifacts(n=400, artifact_rate=0.9, random_state=3).dataset.split(0.3)
    for name, ds in (("train", train), ("dev", dev)):
        ds.frame[["id", "premise", "hypothesis", "label"]].to_json(
            d / f"{name}.jsonl", orient="records", lines=True
        )
    np.save(d / "X.npy", np.zeros((len(train) - 1, 4), dtype=np.float32))  # one row short
    (d / "link.jsonl").symlink_to(d / "train.jsonl")
    return d


def _snapshot(d):
    return {p.name: p.read_bytes() for p in d.iterdir() if p.is_file() and not p.is_symlink()}


BAD = [
    (["aflite", "{d}/train.jsonl", "--task", "nli", *FAST, "--write-filtered", "{d}/train.jsonl"],
     "is an input of this run"),
    (["aflite", "{d}/train.jsonl", "--task", "nli", *FAST, "--write-filtered", "{d}/link.jsonl"],
     "is an input of this run"),
    (["aflite", "{d}/train.jsonl", "--task", "nli", *FAST, "--write-filtered", "{d}/dev.jsonl"],
     "exists; pass --force"),
    (["aflite", "{d}/train.jsonl", "--task", "nli", *FAST, "--write-filtered", "{tmp}/k.xyz"],
     "suffix"),
    (["aflite", "{d}/train.jsonl", "--task", "nli", *FAST, "--view", "nope_only"], "nope_only"),
    (["aflite", "{d}/train.jsonl", "--task", "nli", *FAST, "--group-by", "nope"],
     "'group_by' parameter"),
    (["aflite", "{d}/train.jsonl", "--task", "nli", *FAST, "--train-size", "100000"],
     "train_size"),
    (["aflite", "{d}/train.jsonl", "--task", "nli", "--features-npy", "{d}/X.npy",
      "--partitions", "4"], "rows"),
    (["leakage", "{d}/train.jsonl", "--task", "nli", "--condition", "nope_only"], "nope_only"),
    (["leakage", "{d}/train.jsonl", "--task", "nli", "--features", "nope"], "'features'"),
    (["demo", "--features", "nope"], "'features'"),
    (["audit", "{d}/train.jsonl", "--task", "nli", "--set", "aflite.view=nope_only"], "nope_only"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "message"), BAD, ids=[f"case{i}" for i in range(len(BAD))])
def test_bad_invocations_write_nothing(files, tmp_path, args, message):
    before = _snapshot(files)
    out = tmp_path / "run"
    argv = [a.format(d=files, tmp=tmp_path) for a in args]
    r = CliRunner().invoke(main, [*argv, "--out", str(out)])
    assert r.exit_code == 2, r.output
    assert message in r.output, r.output
    assert r.output.strip().startswith("error:")
    assert not out.exists()
    assert _snapshot(files) == before


def _leakage(files, out, *extra):
    args = ["leakage", str(files / "train.jsonl"), "--task", "nli", "--folds", "3",
            "--n-resamples", "20", "--features", "bow", "--out", str(out), *extra]  # fmt: skip
    return CliRunner().invoke(main, args)


def test_out_must_be_a_directory(files, tmp_path):
    out = tmp_path / "file.txt"
    out.write_text("mine")
    r = _leakage(files, out)
    assert r.exit_code == 2 and "is not a directory" in r.output
    assert out.read_text() == "mine"


def test_a_different_run_is_never_mixed_in(files, tmp_path):
    out = tmp_path / "run"
    assert _leakage(files, out).exit_code == 0
    # The same run again, in place: allowed (a re-run).
    assert _leakage(files, out).exit_code == 0
    # A different run into the same directory: refused, nothing touched.
    before = (out / "manifest.json").read_bytes()
    args = ["aflite", str(files / "train.jsonl"), "--task", "nli", *FAST, "--out", str(out)]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2 and "already holds a different run" in r.output
    assert (out / "manifest.json").read_bytes() == before
    # With --force the old run's files are replaced: one run per report.
    r = CliRunner().invoke(main, [*args, "--force"])
    assert r.exit_code == 0, r.output
    assert not (out / "partial_input").exists() and (out / "aflite").is_dir()
    manifest = json.loads((out / "manifest.json").read_text())
    assert list(manifest["statuses"]) == ["aflite"]


def test_a_users_own_files_are_not_overwritten(files, tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "report.html").write_text("my own report")
    r = _leakage(files, out)
    assert r.exit_code == 2 and "other files" in r.output
    assert (out / "report.html").read_text() == "my own report"


def test_stale_temp_files_are_cleaned(files, tmp_path):
    out = tmp_path / "run"
    assert _leakage(files, out).exit_code == 0
    stale = out / "partial_input" / ".scores.parquet.abc.tmp"
    stale.write_bytes(b"partial")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    assert _leakage(files, out).exit_code == 0
    assert not stale.exists()


def test_write_filtered_force_replaces_an_output(files, tmp_path):
    kept = tmp_path / "kept.jsonl"
    kept.write_text("old\n")
    args = ["aflite", str(files / "train.jsonl"), "--task", "nli", *FAST,
            "--out", str(tmp_path / "run"), "--write-filtered", str(kept), "--force"]  # fmt: skip
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    assert kept.read_text() != "old\n"


def test_report_refuses_a_directory_that_is_not_a_run(tmp_path):
    r = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert r.exit_code == 2 and "not a run directory" in r.output
    assert not (tmp_path / "report.html").exists()


def test_report_keeps_a_good_report_when_results_are_corrupt(files, tmp_path):
    out = tmp_path / "run"
    assert _leakage(files, out).exit_code == 0
    good = (out / "report.html").read_bytes()
    (out / "partial_input" / "metrics.json").write_text("{not json")
    r = CliRunner().invoke(main, ["report", str(out)])
    assert r.exit_code == 1 and "partial_input" in r.output
    assert (out / "report.html").read_bytes() == good
    r = CliRunner().invoke(main, ["report", str(out), "--force"])
    assert r.exit_code == 0
    assert (out / "report.html").read_bytes() != good


def test_evaluation_rows_that_occur_in_the_data_are_reported_and_droppable(files, tmp_path):
    out = tmp_path / "run"
    args = ["leakage", str(files / "train.jsonl"), "--eval", str(files / "train.jsonl"),
            "--task", "nli", "--n-resamples", "20", "--features", "bow"]  # fmt: skip
    r = CliRunner().invoke(main, [*args, "--out", str(out)])
    assert r.exit_code == 0, r.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert any("have the same text as a row of the data" in w for w in manifest["warnings"])
    assert "same text as a row of the data" in (out / "report.html").read_text()
    # Dropping them all leaves nothing to evaluate: a clear error, nothing written.
    r = CliRunner().invoke(main, [*args, "--drop-overlap", "--out", str(tmp_path / "none")])
    assert r.exit_code == 2 and "nothing would be left" in r.output
    assert not (tmp_path / "none").exists()


def test_rows_without_gold_labels_are_counted_and_bounded(tmp_path):
    frame = make_nli_artifacts(n=80, random_state=4).dataset.frame
    rows = frame[["premise", "hypothesis", "label"]].to_dict(orient="records")
    for r in rows[:20]:
        r["label"] = None  # 25% of the rows have no gold label
    data = tmp_path / "half.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    base = ["leakage", str(data), "--task", "nli", "--folds", "2", "--features", "bow",
            "--n-resamples", "20"]  # fmt: skip
    r = CliRunner().invoke(main, [*base, "--out", str(tmp_path / "a")])
    assert r.exit_code == 2 and "have no gold label" in r.output and "--max-dropped" in r.output
    assert not (tmp_path / "a").exists()
    r = CliRunner().invoke(main, [*base, "--max-dropped", "0.5", "--out", str(tmp_path / "b")])
    assert r.exit_code == 0, r.output
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert any("20 of 80 rows" in w for w in manifest["warnings"])


# -- raw tracebacks and hangs (issue 14, item 10) ------------------------------------------
def test_non_regular_files_and_absurd_json_are_clear_errors(tmp_path):
    import pandas as pd

    from spurious.data import load_dataset
    from spurious.exceptions import DataFormatError, SchemaError

    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(DataFormatError, match="not a regular file"):
        load_dataset(fifo, "nli")  # would block forever on open() without the check
    if os.path.exists("/dev/zero"):
        with pytest.raises(DataFormatError, match="not a regular file"):
            load_dataset("/dev/zero", "nli", format="jsonl")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(DataFormatError, match="nested too deeply"):
        load_dataset(deep, "nli")
    deep_lines = tmp_path / "deep.jsonl"
    deep_lines.write_text('{"premise": ' + "[" * 200_000 + "]" * 200_000 + "}\n")
    with pytest.raises(DataFormatError, match="line 1: JSON nested too deeply"):
        load_dataset(deep_lines, "nli")
    frame = pd.DataFrame(
        [["p", "h", "neutral", "x"]], columns=["premise", "hypothesis", "label", "premise"]
    )
    with pytest.raises(SchemaError, match="duplicated column name"):
        load_dataset(frame, "nli")


def test_tiny_demo_is_refused_by_the_option_and_tiny_splits_explain_themselves():
    from spurious.exceptions import SchemaError

    r = CliRunner().invoke(main, ["demo", "--n", "5"])
    assert r.exit_code == 2 and "30<=x<=1000000" in r.output
    tiny = make_nli_artifacts(n=3, random_state=0).dataset
    with pytest.raises(SchemaError, match="at least 2 examples of every label"):
        tiny.split(0.3)


def test_questions_without_answers_and_empty_texts_are_counted(tmp_path):
    import pandas as pd

    from spurious.data import Dataset
    from spurious.exceptions import SchemaError
    from spurious.inputs import load_inputs

    qa = pd.DataFrame({"question": ["q1", "q2"], "context": ["c", "c"], "answers": [[], []]})
    with pytest.raises(SchemaError, match="no question has a gold answer"):
        Dataset.from_frame(qa, "qa")
    qa.loc[0, "answers"] = ["c"]
    data = tmp_path / "qa.jsonl"
    qa.to_json(data, orient="records", lines=True)
    ctx = load_inputs({"data": str(data), "task": "qa"}, progress=False)
    assert any("1 of 2 questions have no gold answer" in w for w in ctx.warnings)

    nli = pd.DataFrame(
        {"premise": ["a b", "c d", "e f"], "hypothesis": ["x", " ", ""], "label": [0, 1, 2]}
    )
    data = tmp_path / "nli.jsonl"
    nli.to_json(data, orient="records", lines=True)
    ctx = load_inputs({"data": str(data), "task": "nli"}, progress=False)
    assert any("2 of 3 rows have an empty 'hypothesis'" in w for w in ctx.warnings)
    nli["hypothesis"] = ""
    with pytest.raises(SchemaError, match="empty in every row"):
        Dataset.from_frame(nli, "nli")
