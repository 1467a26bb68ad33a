"""Inputs are never written over, by the CLI or the API (issue 26, items 1-4).

Each case names its expected exit code / exception and checks that every input is
byte-identical afterwards. The check lives in the writers themselves
(``write_rows``/``write_filtered``, ``save_hf``, ``resample_file``, ``prepare_out``),
against every input of the run, with ``samefile`` and ancestor/descendant tests; and
``--force`` never removes a folder that is not a run or a dataset this tool wrote.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from spurious.cli import main
from spurious.data import load_dataset
from spurious.data.synthetic import make_nli_artifacts
from spurious.exceptions import ParameterError
from spurious.results import DetectorResult
from spurious.utils.io import check_not_an_input

FAST = ["--partitions", "4", "--max-rounds", "1", "--features", "bow"]


def _write_nli(path, n=600, seed=3):
    frame = make_nli_artifacts(n=n, artifact_rate=0.9, random_state=seed).dataset.frame
    frame[["id", "premise", "hypothesis", "label"]].to_json(path, orient="records", lines=True)
    return path


def _tree(d):
    """Every regular file under ``d`` and its bytes (links not followed)."""
    return {
        os.path.relpath(os.path.join(root, f), d): open(os.path.join(root, f), "rb").read()
        for root, _dirs, names in os.walk(d)
        for f in names
        if not os.path.islink(os.path.join(root, f))
    }


def _result(ds, n_flagged=12):
    flags = np.arange(len(ds)) < n_flagged
    return DetectorResult("aflite", pd.DataFrame({"id": ds.ids, "is_aflite_issue": flags}), {})


# -- the check itself --------------------------------------------------------------------
def test_check_not_an_input_same_ancestor_descendant(tmp_path):
    data = tmp_path / "in" / "train.jsonl"
    data.parent.mkdir()
    data.write_text("{}\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(data)
    hard = tmp_path / "hard.jsonl"
    os.link(data, hard)
    folder_input = tmp_path / "hf_in"
    folder_input.mkdir()
    cases = [
        (data, [data], "is an input of this run"),
        (link, [data], "is an input of this run"),  # samefile through a symlink
        (data, [link], "is an input of this run"),
        (hard, [data], "is an input of this run"),  # samefile: a hard link
        (tmp_path / "in", [data], "is a folder that holds"),  # ancestor
        (tmp_path, [None, [data]], "is a folder that holds"),  # grandparent, nested list
        (folder_input / "sub" / "x.jsonl", [folder_input], "lies inside the folder"),  # descendant
    ]
    for out, inputs, message in cases:
        with pytest.raises(ParameterError, match=message) as info:
            check_not_an_input(out, inputs, what="--out")
        assert str(info.value).startswith("--out "), info.value
    # Unrelated, sibling or missing inputs are fine.
    assert check_not_an_input(tmp_path / "in" / "kept.jsonl", [data], what="--out")
    assert check_not_an_input(tmp_path / "other", [data, tmp_path / "missing"], what="--out")
    assert data.read_text() == "{}\n"


# -- 1. write_filtered / write_rows over the dataset's own file ---------------------------
def test_write_filtered_refuses_the_datasets_own_file(tmp_path):
    import spurious

    path = _write_nli(tmp_path / "train.jsonl")
    before = path.read_bytes()
    ds = load_dataset(path, "nli")
    res = _result(ds)
    link = tmp_path / "link.jsonl"
    link.symlink_to(path)
    for out in (path, link, tmp_path):  # same file, samefile via a link, ancestor
        with pytest.raises(ParameterError, match="input of this run"):
            spurious.write_filtered(ds, res, out, "jsonl")
        assert path.read_bytes() == before
    with pytest.raises(ParameterError, match="is an input of this run"):
        spurious.actions.write_rows(ds, np.ones(len(ds), dtype=bool), path)
    assert path.read_bytes() == before
    assert len(before.decode().splitlines()) == 600
    # Other inputs passed by the caller are protected too.
    other = _write_nli(tmp_path / "dev.jsonl", n=50)
    dev = other.read_bytes()
    with pytest.raises(ParameterError, match="is an input of this run"):
        spurious.write_filtered(ds, res, other, inputs=[other])
    assert other.read_bytes() == dev
    # A fresh output is written: 600 - 12 rows.
    out = spurious.write_filtered(ds, res, tmp_path / "kept.jsonl")
    assert len(out.read_text().splitlines()) == 588


# -- 2/3. the Hugging Face saver ----------------------------------------------------------
def test_hf_output_never_replaces_an_input_folder_or_a_foreign_one(tmp_path):
    pytest.importorskip("datasets")
    import spurious
    from spurious.actions.hf_output import is_hf_folder, save_hf

    data_dir = tmp_path / "project" / "data"
    data_dir.mkdir(parents=True)
    path = _write_nli(data_dir / "train.jsonl", n=200)
    ds = load_dataset(path, "nli")
    res = _result(ds)
    before = _tree(tmp_path)
    # The folder holding the input, its grandparent: refused, nothing touched.
    for out in (data_dir, tmp_path / "project"):
        with pytest.raises(ParameterError, match="is a folder that holds"):
            spurious.write_filtered(ds, res, out, "hf")
        assert _tree(tmp_path) == before
    # An unrelated user folder: refused, its files kept.
    thesis = tmp_path / "thesis"
    thesis.mkdir()
    (thesis / "thesis.tex").write_text("\\chapter{One}")
    with pytest.raises(ParameterError, match="not a Hugging Face dataset folder"):
        spurious.write_filtered(ds, res, thesis, "hf")
    with pytest.raises(ParameterError, match="not a Hugging Face dataset folder"):
        save_hf(object(), thesis)
    assert (thesis / "thesis.tex").read_text() == "\\chapter{One}"
    # A folder save_to_disk wrote is replaced (a re-run with --force)...
    out = spurious.write_filtered(ds, res, tmp_path / "kept_hf", "hf")
    assert is_hf_folder(out)
    spurious.write_filtered(ds, _result(ds, 50), out, "hf")
    assert is_hf_folder(out)
    from datasets import load_from_disk

    assert load_from_disk(str(out)).num_rows == 150
    # ... but not once a foreign file is added to it.
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ParameterError, match="not a Hugging Face dataset folder"):
        spurious.write_filtered(ds, res, out, "hf")
    assert (out / "notes.txt").read_text() == "mine"
    assert path.read_bytes() == before["project/data/train.jsonl"]


def test_hf_folder_input_descendant_and_itself_refused(tmp_path):
    pytest.importorskip("datasets")
    import spurious

    path = _write_nli(tmp_path / "train.jsonl", n=100)
    ds = load_dataset(path, "nli")
    hf_dir = spurious.write_filtered(ds, _result(ds, 0), tmp_path / "hf_in", "hf")
    loaded = load_dataset(hf_dir, "nli")
    before = _tree(hf_dir)
    res = _result(loaded)
    with pytest.raises(ParameterError, match="is an input of this run"):
        spurious.write_filtered(loaded, res, hf_dir, "hf")
    with pytest.raises(ParameterError, match="lies inside the folder"):
        spurious.write_filtered(loaded, res, hf_dir / "kept.jsonl")
    assert _tree(hf_dir) == before


@pytest.mark.parametrize("where", ["parent", "grandparent", "thesis"])
def test_aflite_cli_hf_force_refuses_folders(tmp_path, where):
    pytest.importorskip("datasets")
    data_dir = tmp_path / "g" / "data"
    data_dir.mkdir(parents=True)
    path = _write_nli(data_dir / "train.jsonl", n=200)
    target = {"parent": data_dir, "grandparent": tmp_path / "g", "thesis": tmp_path / "thesis"}
    out_dir = target[where]
    if where == "thesis":
        out_dir.mkdir()
        (out_dir / "thesis.tex").write_text("\\chapter{One}")
    before = _tree(tmp_path)
    args = ["aflite", str(path), "--task", "nli", *FAST, "--out", str(tmp_path / "run"),
            "--write-filtered", str(out_dir), "--filtered-format", "hf", "--force"]  # fmt: skip
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2, r.output
    message = "not a Hugging Face dataset folder" if where == "thesis" else "is a folder that holds"
    assert message in r.output and r.output.strip().startswith("error:"), r.output
    assert "--write-filtered" in r.output
    assert not (tmp_path / "run").exists()  # checked before any work
    assert _tree(tmp_path) == before


# -- 3. resample: --train is an input too -------------------------------------------------
def test_resample_refuses_its_train_input(tmp_path):
    data = _write_nli(tmp_path / "data.jsonl", n=200, seed=1)
    train = _write_nli(tmp_path / "train.jsonl", n=400, seed=2)
    base = ["resample", str(data), "--task", "nli", "--heuristic", "overlap_rate",
            "--threshold", "0.5", "--train", str(train), "--force"]  # fmt: skip
    link = tmp_path / "link.jsonl"
    link.symlink_to(train)
    before = _tree(tmp_path)
    for out in (train, link, data):
        r = CliRunner().invoke(main, [*base, "--out", str(out)])
        assert r.exit_code == 2, r.output
        assert "is an input of this run" in r.output and "--out" in r.output, r.output
        assert _tree(tmp_path) == before
    assert len(train.read_text().splitlines()) == 400
    # The API refuses too.
    from spurious.actions.resample import resample_file

    with pytest.raises(ParameterError, match="is an input of this run"):
        resample_file(data, train, task="nli", threshold=0.5, heuristic="overlap_rate",
                      overwrite=True, inputs=[train])  # fmt: skip
    assert _tree(tmp_path) == before
    # A fresh output is fine.
    r = CliRunner().invoke(main, [*base, "--out", str(tmp_path / "resam.jsonl")])
    assert r.exit_code == 0, r.output


# -- 4. --out --force never removes a folder holding an input, nor a non-run folder --------
def _leakage(data, out, *extra):
    args = ["leakage", str(data), "--task", "nli", "--folds", "3", "--n-resamples", "20",
            "--features", "bow", "--out", str(out), *extra]  # fmt: skip
    return CliRunner().invoke(main, args)


def test_force_never_deletes_the_run_folder_holding_the_input(tmp_path):
    data = _write_nli(tmp_path / "train.jsonl", n=300)
    old = tmp_path / "old"
    assert _leakage(data, old).exit_code == 0
    analysis = next(p for p in old.iterdir() if (p / "result.json").is_file())
    kept = analysis / "kept.jsonl"  # an earlier output, now this run's input
    kept.write_bytes(data.read_bytes())
    before = _tree(old)
    r = _leakage(kept, old, "--force")
    assert r.exit_code == 2, r.output
    assert "is a folder that holds" in r.output and "--out" in r.output, r.output
    assert _tree(old) == before
    # Elsewhere, the same input is fine.
    assert _leakage(kept, tmp_path / "new").exit_code == 0
    assert _tree(old) == before


@pytest.mark.parametrize("content", ["thesis", "report_only"])
def test_force_never_replaces_a_folder_that_is_not_a_run(tmp_path, content):
    data = _write_nli(tmp_path / "train.jsonl", n=300)
    out = tmp_path / "mine"
    out.mkdir()
    if content == "thesis":
        (out / "thesis.tex").write_text("\\chapter{One}")
        (out / "chapter").mkdir()
        (out / "chapter" / "result.json").write_text("{}")  # looks like an analysis folder
    else:
        (out / "report.html").write_text("my own report")
    before = _tree(out)
    r = _leakage(data, out, "--force")
    assert r.exit_code == 2, r.output
    assert "is not a run directory" in r.output, r.output
    assert _tree(out) == before


def test_force_replaces_a_run_and_an_empty_folder(tmp_path):
    data = _write_nli(tmp_path / "train.jsonl", n=300)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _leakage(data, empty, "--force").exit_code == 0
    assert (empty / "manifest.json").is_file()
    # A different run into a spurious run folder with --force: replaced.
    r = _leakage(data, empty, "--force", "--folds", "2")
    assert r.exit_code == 0, r.output
