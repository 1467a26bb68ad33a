"""Typed errors instead of tracebacks (issue 26, items 11 and 12; issue 23, item 9).

Degenerate data, impossible options, absurd sizes, unreachable services and outputs that
cannot be written end in one line naming the argument or row and exit 2 (the command
line), or in the package's typed exception (the Python API); a failed check leaves no run
folder. And the Python API takes what ``load_dataset`` takes (DataFrames, Hugging Face
datasets), with the same results as the same data from a file, and a run of in-memory
data re-runs from its manifest.
"""

from __future__ import annotations

import errno
import json
import os

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from spurious.cli import main
from spurious.data import Dataset, load_dataset
from spurious.data.in_memory import save_for_rerun
from spurious.data.synthetic import make_nli_artifacts
from spurious.exceptions import (
    AnalysisError,
    OutputError,
    ParameterError,
    ResultNotFoundError,
    SchemaError,
)
from spurious.runner import run, run_config
from spurious.utils.io import output_errors

LABELS = ["entailment", "neutral", "contradiction"]
FAST = {"partial_input": {"features": "bow", "n_resamples": 50, "n_folds": 3}}


@pytest.fixture(scope="module")
def d(tmp_path_factory):
    """Input files of every case; their bytes are compared before and after."""
    d = tmp_path_factory.mktemp("typed")
    train, dev = make_nli_artifacts(n=400, artifact_rate=0.9, random_state=3).dataset.split(0.3)
    for name, ds in (("train", train), ("dev", dev)):
        ds.frame[["id", "premise", "hypothesis", "label"]].to_json(
            d / f"{name}.jsonl", orient="records", lines=True
        )
    dev.frame[["id"]].assign(prediction=dev.frame["label"]).to_json(
        d / "model.jsonl", orient="records", lines=True
    )
    # One premise for every row: grouped folds have a single group.
    same = [{"id": str(i), "premise": "A man walks.", "hypothesis": f"Someone moves {i}.",
             "label": LABELS[i % 3]} for i in range(90)]  # fmt: skip
    pd.DataFrame(same).to_json(d / "one_premise.jsonl", orient="records", lines=True)
    # One hypothesis for every row: PECO cannot form 8 clusters of one sentence.
    same_h = [{"id": str(i), "premise": f"Premise {i} here.", "hypothesis": "A man walks.",
               "label": LABELS[i % 3]} for i in range(300)]  # fmt: skip
    pd.DataFrame(same_h).to_json(d / "one_hypothesis.jsonl", orient="records", lines=True)
    squad = {"version": "1.1", "data": [{"title": "t", "paragraphs": [{
        "context": "The cat sat on the mat.",
        "qas": [{"id": "q1", "question": "Where?",
                 "answers": [{"text": "the mat", "answer_start": "x"}]}]}]}]}  # fmt: skip
    (d / "squad_bad.json").write_text(json.dumps(squad))
    (d / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (d / "a_file").write_text("not a folder\n")
    (d / "empty_dir").mkdir()
    config = {"inputs": {"data": str(d / "train.jsonl"), "task": "nli"},
              "analyses": {"partial_input": {"features": "bow"}}, "seed": "abc"}  # fmt: skip
    (d / "config.json").write_text(json.dumps(config))
    return d


def _snapshot(d):
    return {p.name: p.read_bytes() for p in d.iterdir() if p.is_file()}


T, DEV = "{d}/train.jsonl", "{d}/dev.jsonl"
CLI_CASES = [
    ("identical premises", ["leakage", "{d}/one_premise.jsonl", "--task", "nli",
     "--features", "bow"], "1 distinct group(s)"),
    ("identical hypotheses", ["audit", "{d}/one_hypothesis.jsonl", "--task", "nli", "--only",
     "peco", "--set", "peco.features=bow", "--set", "peco.n_clusters=8"],
     "1 distinct hypothesis_only text(s)"),
    ("squad answer_start", ["audit", "{d}/squad_bad.json", "--task", "qa", "--quick"],
     "question 'q1': answer_start must be a character offset"),
    ("nested predictions", ["bias", T, "--task", "nli", "--predictions", "{d}/deep.json"],
     "nested too deeply"),
    ("train --out a file", ["train", T, "--task", "nli", "--epochs", "1"], "is a file"),
    ("train --model empty", ["train", T, "--task", "nli", "--model", "{d}/empty_dir"],
     "holds no model (no config.json)"),
    ("--features empty", ["leakage", T, "--task", "nli", "--features", "{d}/empty_dir"],
     "holds no model (no config.json)"),
    ("train --device", ["train", T, "--task", "nli", "--device", "tpu9"], "'tpu9'"),
    ("train --max-length", ["train", T, "--task", "nli", "--max-length", "100000"],
     "at most 512"),
    ("aflite_params key", ["fairness", T, "--task", "nli", "--eval", DEV, "--predictions",
     "{d}/model.jsonl", "--set", "fairness.aflite_params={{bogus: 1}}"], "['bogus']"),
    ("config seed", ["run", "--config", "{d}/config.json"], "'seed' of the run config"),
    ("demo --n", ["demo", "--n", "1000000000", "--features", "bow"], "30<=x<=1000000"),
    ("aflite --partitions", ["aflite", T, "--task", "nli", "--features", "bow",
     "--partitions", "100000000"], "'n_partitions' parameter of AFLite must be an int in the "
     "range [1, 10000]"),
    ("leakage --n-resamples", ["leakage", T, "--task", "nli", "--features", "bow",
     "--n-resamples", "2000000000"], "'n_resamples' parameter of PartialInput must be an int "
     "in the range [10, 100000]"),
    ("ray unreachable", ["aflite", T, "--task", "nli", "--features", "bow", "--partitions", "4",
     "--executor", "ray", "--ray-address", "127.0.0.1:1"], "'127.0.0.1:1' does not answer"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "message"), [c[1:] for c in CLI_CASES],
                         ids=[c[0] for c in CLI_CASES])  # fmt: skip
def test_cli_bad_input_is_one_line_and_exit_2(d, tmp_path, args, message):
    if "ray" in args[-3:]:
        pytest.importorskip("ray")
    before = _snapshot(d)
    out = d / "a_file" if args[0] == "train" and "--epochs" in args else tmp_path / "run"
    argv = [a.format(d=d) for a in args] + ["--out", str(out)]
    r = CliRunner().invoke(main, argv)
    assert r.exit_code == 2, r.output
    assert message in r.output, r.output
    assert "Traceback" not in r.output
    if out.name == "run":
        assert not out.exists()
    assert _snapshot(d) == before


def test_hub_offline_names_the_option_and_what_to_do(tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")

    def offline(name, split=None):
        raise ConnectionError(f"Couldn't reach '{name}' on the Hub (OfflineModeIsEnabled)")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["audit", "snli", "--task", "nli", "--allow-network",
                                  "--quick", "--out", str(out)])  # fmt: skip
    assert r.exit_code == 2, r.output
    assert r.output.startswith("error: 'snli' (allow_network / --allow-network): the Hub could")
    assert "save_to_disk(DIR)" in r.output
    assert not out.exists()


def test_a_full_disk_is_one_line_naming_the_file(d, tmp_path, monkeypatch):
    out = tmp_path / "run"
    real = os.replace

    def full(src, dst, *args, **kwargs):
        if str(out) in os.fspath(dst) and os.fspath(dst).endswith("scores.parquet"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", full)
    args = ["leakage", f"{d}/train.jsonl", "--task", "nli", "--features", "bow", "--folds", "3",
            "--n-resamples", "20", "--out", str(out)]  # fmt: skip
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2, r.output
    want = f"error: Cannot write '{out / 'partial_input' / 'scores.parquet'}': no space left"
    assert r.output.strip().splitlines()[-1].startswith(want), r.output
    assert not list(out.rglob("*.tmp"))  # the temp file of the failed write is gone


@pytest.mark.parametrize(
    ("code", "says"),
    [
        (errno.ENOSPC, "no space left on the device"),
        (errno.EROFS, "the file system is read-only"),
        (errno.EACCES, "permission denied"),
    ],
)
def test_output_errors_name_the_path_and_the_way_out(code, says):
    where = "/x/metrics.json"
    with pytest.raises(OutputError, match=f"Cannot write '{where}': {says}"), output_errors(where):
        raise OSError(code, os.strerror(code))
    # Not about the location: unchanged.
    with pytest.raises(FileNotFoundError), output_errors(where):
        raise FileNotFoundError(errno.ENOENT, "No such file")


# -- the Python API ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def frame(d):
    return pd.read_json(d / "train.jsonl", lines=True)


@pytest.fixture(scope="module")
def ds(d):
    return load_dataset(d / "train.jsonl", "nli")


def _multiindex(frame):
    f = frame.copy()
    f.columns = pd.MultiIndex.from_tuples([("a", c) for c in frame.columns])
    return f


API_CASES = [
    ("run(42)", lambda f, ds, o: run(42, out=o), ParameterError, "'data' parameter"),
    ("run(42, task)", lambda f, ds, o: run(42, "nli", out=o), ParameterError, "Got int 42"),
    ("run(frame) no task", lambda f, ds, o: run(f, out=o), ParameterError, "needs 'task'"),
    ("eval of a bad kind", lambda f, ds, o: run(ds, eval=[1, 2], out=o), ParameterError,
     "'eval' parameter"),
    ("seed='abc'", lambda f, ds, o: run(ds, analyses=FAST, seed="abc", out=o), ParameterError,
     "'seed' parameter must be an int"),
    ("seed=True", lambda f, ds, o: run(ds, analyses=FAST, seed=True, out=o), ParameterError,
     "Got True"),
    ("analysis twice", lambda f, ds, o: run(ds, analyses=["pvi", "pvi"], out=o),
     ParameterError, "names ['pvi'] more than once"),
    ("analyses a str", lambda f, ds, o: run(ds, analyses="pvi", out=o), ParameterError,
     "wrap it in a list"),
    ("format, no path", lambda f, ds, o: run(ds, analyses=FAST, format="csv", out=o),
     ParameterError, "'format' parameter"),
    ("split of a Dataset", lambda f, ds, o: run(ds, analyses=FAST, split="train", out=o),
     ParameterError, "a loaded Dataset"),
    ("field_map list", lambda f, ds, o: load_dataset(f, "nli", field_map=["premise"]),
     ParameterError, "'field_map' parameter must be a mapping"),
    ("label_names str", lambda f, ds, o: load_dataset(f, "nli", label_names="entailment"),
     ParameterError, "'label_names' parameter"),
    ("MultiIndex", lambda f, ds, o: load_dataset(_multiindex(f), "nli"), SchemaError,
     "MultiIndex columns"),
    ("subset 10**6", lambda f, ds, o: ds.subset([10**6]), ParameterError,
     "row positions in [0, 279)"),
    ("subset -1", lambda f, ds, o: ds.subset([0, -1]), ParameterError, "got -1 at position 1"),
    ("subset 0.5", lambda f, ds, o: ds.subset([0.5]), ParameterError, "such as 0.5"),
    ("subset ids", lambda f, ds, o: ds.subset(["3"]), ParameterError, "not ids"),
    ("subset mask", lambda f, ds, o: ds.subset([True, False]), ParameterError,
     "one value per row"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "error", "message"), [c[1:] for c in API_CASES],
                         ids=[c[0] for c in API_CASES])  # fmt: skip
def test_api_raises_typed_errors(frame, ds, tmp_path, call, error, message):
    out = tmp_path / "run"
    with pytest.raises(error) as info:
        call(frame, ds, out)
    assert message in str(info.value)
    assert not out.exists()


def test_missing_result_and_save_into_a_file(ds, tmp_path):
    r = run(ds, analyses=FAST, progress=False)
    with pytest.raises(ResultNotFoundError, match=r"no result named 'peco'; its results: "
                       r"\['partial_input'\]") as info:  # fmt: skip
        r["peco"]
    assert isinstance(info.value, KeyError)  # `except KeyError` keeps working
    target = tmp_path / "a_file"
    target.write_text("x")
    with pytest.raises(ParameterError, match="is a file; a result is saved as a folder"):
        r["partial_input"].save(target)
    assert target.read_text() == "x"


def test_save_on_a_read_only_disk_names_the_file(ds, tmp_path, monkeypatch):
    res = run(ds, analyses=FAST, progress=False)["partial_input"]

    def read_only(src, dst, *args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(os, "replace", read_only)
    with pytest.raises(OutputError, match=r"Cannot write '.*scores\.parquet': the file system"):
        res.save(tmp_path / "res")


def test_subset_takes_positions_and_masks(ds):
    assert ds.subset([2, 0]).ids.tolist() == [ds.ids[2], ds.ids[0]]
    mask = ds.labels == 0
    assert ds.subset(mask).ids.tolist() == ds.ids[mask].tolist()
    assert len(ds.subset([])) == 0


def test_rows_without_a_group_are_groups_of_their_own(d, tmp_path):
    frame = pd.read_json(d / "train.jsonl", lines=True)
    frame["group"] = [None if i % 4 == 0 else f"g{i % 5}" for i in range(len(frame))]
    ds = load_dataset(frame, "nli")
    keys = ds.group_keys()
    missing = frame["group"].isna().to_numpy()
    assert missing.sum() == 70  # rows 0, 4, 8, ... of 279
    assert len(set(keys)) == 5 + 70  # g0..g4, and one group per row without a group
    assert len(set(keys[missing])) == 70
    assert set(keys[~missing]) == {"g0", "g1", "g2", "g3", "g4"}
    path = tmp_path / "groups.jsonl"
    frame.to_json(path, orient="records", lines=True)
    r = CliRunner().invoke(main, ["leakage", str(path), "--task", "nli", "--features", "bow",
                                  "--folds", "3", "--n-resamples", "20",
                                  "--out", str(tmp_path / "run")])  # fmt: skip
    assert r.exit_code == 0, r.output


@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::UserWarning")
def test_peco_refuses_embeddings_with_fewer_points_than_clusters():
    """Six distinct texts, one bag of words: bow embeddings coincide; k=5 cannot be formed."""
    from spurious.detectors.peco.analysis import Peco

    words = ["cat dog bird", "dog cat bird", "bird cat dog", "cat bird dog", "dog bird cat",
             "bird dog cat"]  # fmt: skip
    rows = [{"premise": f"Premise {i}.", "hypothesis": words[i % 6], "label": LABELS[i % 3]}
            for i in range(120)]  # fmt: skip
    ds = Dataset.from_frame(pd.DataFrame(rows), "nli")
    peco = Peco(features="bow", n_clusters=5, n_seeds=1, n_bootstrap=0, n_permutations=5,
                projection="none")  # fmt: skip
    with pytest.raises(AnalysisError, match="embeddings with 1 distinct point"):
        peco.run(ds)


def test_check_device_and_fine_tune_output_dir(tmp_path):
    from spurious.models.finetune import FineTuneConfig, fine_tune

    with pytest.raises(ParameterError, match="Got 'tpu9'"):
        FineTuneConfig(device="tpu9")
    assert FineTuneConfig(device="cuda:1").device == "cuda:1"
    data = make_nli_artifacts(n=30, random_state=0).dataset
    target = tmp_path / "a_file"
    target.write_text("x")
    with pytest.raises(ParameterError, match=r"'output_dir' parameter .* is a file"):
        fine_tune(data, None, FineTuneConfig(epochs=1), target)
    assert target.read_text() == "x"


# -- in-memory data: same answers as files, and re-runs ----------------------------------


def test_run_on_a_dataframe_equals_the_same_file(d, frame):
    from_file = run(d / "train.jsonl", "nli", analyses=FAST, seed=3, progress=False)
    from_frame = run(frame, "nli", analyses=FAST, seed=3, progress=False)
    assert from_frame.context.train.fingerprint == from_file.context.train.fingerprint
    assert from_frame["partial_input"].metrics == from_file["partial_input"].metrics
    assert from_frame.config["inputs"]["data"] == "<in-memory data (DataFrame)>"


def test_run_on_hugging_face_datasets_equals_the_same_file(d, frame):
    datasets = pytest.importorskip("datasets")
    from_file = run(d / "train.jsonl", "nli", analyses=FAST, seed=3, progress=False)
    hf = datasets.Dataset.from_pandas(frame, preserve_index=False)
    from_hf = run(hf, "nli", analyses=FAST, seed=3, progress=False)
    assert from_hf["partial_input"].metrics == from_file["partial_input"].metrics
    dd = datasets.DatasetDict({"train": hf})
    with pytest.raises(ParameterError, match="'split' parameter is required"):
        run(dd, "nli", analyses=FAST)
    from_dd = run(dd, "nli", split="train", analyses=FAST, seed=3, progress=False)
    assert from_dd["partial_input"].metrics == from_file["partial_input"].metrics


def test_an_in_memory_run_re_runs_from_its_manifest(d, frame, tmp_path):
    dev = pd.read_json(d / "dev.jsonl", lines=True)
    out = tmp_path / "run"
    first = run(frame, "nli", eval=dev, analyses=FAST, seed=1, out=out, progress=False)
    manifest = json.loads((out / "manifest.json").read_text())
    inputs = manifest["config"]["inputs"]
    fp = first.context.train.fingerprint
    assert inputs["data"] == f"<run>/inputs/data-{fp}.parquet"
    assert inputs["eval"].startswith("<run>/inputs/eval-")
    assert manifest["datasets"]["train"]["fingerprint"] == fp
    assert (out / "inputs" / f"data-{fp}.parquet").is_file()
    # The CLI re-runs it from another folder, with the same numbers.
    again = tmp_path / "again"
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        r = CliRunner().invoke(main, ["run", "--config", str(out), "--out", str(again)])
    finally:
        os.chdir(cwd)
    assert r.exit_code == 0, r.output
    metrics = json.loads((again / "partial_input" / "metrics.json").read_text())
    assert metrics == json.loads((out / "partial_input" / "metrics.json").read_text())
    # Run.config re-runs as it is (the stored files by absolute path).
    assert run_config(first.config, progress=False)["partial_input"].metrics == (
        first["partial_input"].metrics
    )
    # The same call again is the same run (resumed in place); other data are another run.
    run(frame, "nli", eval=dev, analyses=FAST, seed=1, out=out, progress=False)
    with pytest.raises(ParameterError, match="already holds a different run"):
        run(frame.iloc[:-3], "nli", eval=dev, analyses=FAST, seed=1, out=out)


def test_run_kept_in_memory_says_why_it_cannot_re_run(ds):
    r = run(ds, analyses=FAST, progress=False)
    with pytest.raises(ParameterError, match="run again with out=DIR"):
        run_config(r.config)


@pytest.mark.parametrize("task", ["nli", "text", "qa"])
def test_stored_splits_load_back_to_the_same_fingerprint(tmp_path, task):
    if task == "nli":
        frame = pd.DataFrame({"s1": ["A b.", "C d.", "E f."], "s2": ["x", "y", "z"],
                              "gold": ["neutral", "entailment", "neutral"],
                              "group": ["g", None, "g"]})  # fmt: skip
        fmap, names = {"premise": "s1", "hypothesis": "s2", "label": "gold"}, None
    elif task == "text":  # label ids in an order that is not the sorted one
        frame = pd.DataFrame({"text": ["good", "bad", "fine"], "label": [1, 0, 1]})
        fmap, names = {}, ["pos", "neg"]
    else:
        frame = pd.DataFrame({"question": ["Where?", "Who?"],
                              "context": ["The cat sat on the mat.", "Bob ran."],
                              "answers": [["the mat"], ["Bob"]],
                              "answer_starts": [[15], [0]]})  # fmt: skip
        fmap, names = {}, None
    ds = load_dataset(frame, task, field_map=fmap, label_names=names)
    path = save_for_rerun({"data": ds}, tmp_path, fmap)["data"]
    back = load_dataset(path, task, field_map=fmap, label_names=list(ds.label_names) or None)
    assert back.fingerprint == ds.fingerprint
    assert back.label_names == ds.label_names
    if task != "qa":
        assert np.array_equal(back.labels, ds.labels)


def test_amplify_from_an_in_memory_run(d, frame, tmp_path):
    """``amplify --from-run`` re-loads the splits the run stored (its data were in memory)."""
    from spurious.actions.amplify import amplify_run
    from spurious.results import Result

    dev = pd.read_json(d / "dev.jsonl", lines=True)
    out = tmp_path / "run"
    run(frame, "nli", eval=dev, analyses={"cartography": {"features": "bow", "epochs": 3}},
        out=out, progress=False)  # fmt: skip
    moved = tmp_path / "moved"  # "<run>/..." follows the folder
    out.rename(moved)
    amp = amplify_run(moved)
    res = Result.load(moved / "cartography")
    assert amp.ids("cartography", "train.anti_biased") == res.anti_biased_ids(
        "train", "cartography"
    )
    assert amp.ids("cartography", "test.anti_biased") == res.anti_biased_ids("eval", "cartography")
