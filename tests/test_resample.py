"""RESAM (paper 001, Sec. 4.3) and the ``bias`` / ``resample`` commands."""

from __future__ import annotations

import hashlib
import json

import click
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from spurious.actions.resample import resample_file, resample_indices
from spurious.cli.bias import bias, resample
from spurious.data import load_dataset
from spurious.exceptions import ParameterError


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _groups(attr, idx, t):
    a = np.asarray(attr, dtype=float)[idx]
    return int((a <= t).sum()), int((a > t).sum())


def test_minority_is_oversampled_to_the_majority_size():
    attr = np.r_[np.zeros(10), np.ones(3), [np.nan]]
    idx, info = resample_indices(attr, 0.5, random_state=0)
    assert (info.n_low, info.n_high, info.minority, info.n_added) == (10, 3, "high", 7)
    assert info.n_output == 14 + 7 and info.n_unsplit == 1
    assert _groups(attr, idx, 0.5) == (10, 10)
    # Every original row once, then copies; balanced: each minority row 3 or 4 times.
    assert idx[:14].tolist() == list(range(14))
    counts = np.bincount(idx, minlength=14)[10:13]
    assert sorted(counts.tolist()) == [3, 3, 4] and np.bincount(idx)[13] == 1
    again, _ = resample_indices(attr, 0.5, random_state=0)
    assert np.array_equal(idx, again)


def test_with_replacement_and_equal_groups():
    attr = np.r_[np.zeros(4), np.ones(100)]
    idx, info = resample_indices(attr, 0.0, replace=True, random_state=1)
    assert info.minority == "low" and _groups(attr, idx, 0.0) == (100, 100)
    idx, info = resample_indices(np.r_[np.zeros(5), np.ones(5)], 0.0)
    assert info.minority is None and info.n_added == 0 and idx.tolist() == list(range(10))
    with pytest.raises(ParameterError, match="one group"):
        resample_indices(np.ones(5), 3.0)


def test_jsonl_csv_tsv_parquet_roundtrip(tmp_path):
    rows = [
        {"id": f"r{i}", "premise": f"p {i}", "hypothesis": f"h {i}", "label": i % 3}
        for i in range(6)
    ]
    rows[0]["extra"] = {"kept": True}  # keys present in one row only stay that way
    attr = np.array([1, 1, 1, 1, 5, 5], dtype=float)
    src = tmp_path / "train.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    before = _digest(src)
    info = resample_file(src, tmp_path / "out.jsonl", task="nli", threshold=2, attribute=attr)
    assert _digest(src) == before
    out = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r["id"] for r in out] == [f"r{i}" for i in range(6)] + ["r4-resam1", "r5-resam1"]
    assert "extra" in out[0] and "extra" not in out[1]
    assert info.n_output == 8
    df = pd.DataFrame(rows).drop(columns="extra").rename(columns={"id": "pairID"})
    for fmt in ("csv", "tsv", "parquet"):
        path = tmp_path / f"train.{fmt}"
        if fmt == "parquet":
            df.to_parquet(path, index=False)
        else:
            df.to_csv(path, index=False, sep="\t" if fmt == "tsv" else ",")
        dst = tmp_path / f"out.{fmt}"
        resample_file(path, dst, task="nli", threshold=2, attribute=attr)
        back = load_dataset(dst, "nli")  # SNLI's pairID is the id column
        assert len(back) == 8 and back.ids[-2:].tolist() == ["r4-resam1", "r5-resam1"]
        assert back.frame["premise"].tolist()[-2:] == ["p 4", "p 5"]


def test_squad_json_keeps_the_nested_structure(tmp_path):
    def qa(i, answer, start):
        return {"id": f"q{i}", "question": f"What {i}?",
                "answers": [{"text": answer, "answer_start": start}]}  # fmt: skip

    squad = {
        "version": "1.1",
        "data": [
            {"title": "A", "paragraphs": [
                {"context": "Ann met Bob in Rome.", "qas": [qa(0, "Ann", 0), qa(1, "Bob", 8)]},
                {"context": "Cats purr loudly.", "qas": [qa(2, "Cats", 0)]},
            ]},
            {"title": "B", "paragraphs": [
                {"context": "Dogs bark at night.", "qas": [qa(3, "Dogs bark at night", 0)]},
            ]},
        ],
    }  # fmt: skip
    src = tmp_path / "train-v1.1.json"
    src.write_text(json.dumps(squad))
    before = _digest(src)
    dst = tmp_path / "resam.json"
    attr = np.array([1.0, 1.0, 1.0, 4.0])  # the long answer is the minority
    info = resample_file(src, dst, task="qa", threshold=2, attribute=attr)
    assert _digest(src) == before and info.n_added == 2
    out = json.loads(dst.read_text())
    assert out["version"] == "1.1" and [a["title"] for a in out["data"]] == ["A", "B"]
    assert out["data"][0]["paragraphs"] == squad["data"][0]["paragraphs"]
    qas = out["data"][1]["paragraphs"][0]["qas"]
    assert [q["id"] for q in qas] == ["q3", "q3-resam1", "q3-resam2"]
    assert qas[1]["answers"] == qas[0]["answers"]
    assert len(load_dataset(dst, "qa")) == 6


def test_input_is_protected(tmp_path):
    src = tmp_path / "t.csv"
    pd.DataFrame({"text": ["a", "b"], "label": [0, 1]}).to_csv(src, index=False)
    with pytest.raises(ParameterError, match="must differ from the source"):
        resample_file(src, src, task="text", threshold=0, attribute=np.array([0.0, 1.0]))
    dst = tmp_path / "o.csv"
    dst.write_text("x")
    with pytest.raises(ParameterError, match="exists"):
        resample_file(src, dst, task="text", threshold=0, attribute=np.array([0.0, 1.0]))
    with pytest.raises(ParameterError, match="one value per row"):
        resample_file(src, dst, task="text", threshold=0, attribute=np.zeros(3), overwrite=True)


# -- command line ----------------------------------------------------------------------------
@pytest.fixture()
def cli():
    group = click.Group(commands={"bias": bias, "resample": resample})
    return lambda args: CliRunner().invoke(group, args, catch_exceptions=False)


def test_help_lists_every_option(cli):
    for cmd, opts in {
        "bias": ["--predictions", "--heuristic", "--own-threshold", "--reference", "--metric",
                 "--seed", "--threshold", "--attributes", "--no-natural", "--sample-size"],
        "resample": ["--heuristic", "--out", "--threshold", "--from-run", "--replace", "--seed"],
    }.items():  # fmt: skip
        text = cli([cmd, "--help"]).output
        for opt in opts:
            assert opt in text, (cmd, opt)


def test_bias_and_resample_commands(cli, tmp_path):
    rng = np.random.default_rng(0)
    n = 2400
    ids = [f"q{i}" for i in range(n)]
    ans_words = rng.integers(1, 7, n)
    answers = [" ".join(["w"] * k) for k in ans_words]
    frame = pd.DataFrame(
        {"id": ids, "question": ["which?"] * n, "context": answers,
         "answers": [[a, a] for a in answers]}
    )  # fmt: skip
    data = tmp_path / "dev.jsonl"
    frame.to_json(data, orient="records", lines=True)
    # A model that fails on long answers, one that is right everywhere.
    for name, right in (("short", ans_words <= 3), ("oracle", np.ones(n, bool))):
        preds = dict(zip(ids, np.where(right, answers, "nope"), strict=True))
        (tmp_path / f"{name}.json").write_text(json.dumps(preds))
    attr = tmp_path / "attr.csv"
    pd.DataFrame({"id": ids, "answer_length": ans_words}).to_csv(attr, index=False)
    out = tmp_path / "run"
    r = cli(["bias", str(data), "--task", "qa", "--predictions", str(tmp_path / "short.json"),
             str(tmp_path / "oracle.json"), "--attributes", str(attr), "--metric", "em",
             "--sample-size", "400", "--n-trials", "50", "--out", str(out)])  # fmt: skip
    assert r.exit_code == 0, r.output
    metrics = json.loads((out / "prediction_bias" / "metrics.json").read_text())
    assert metrics["threshold/answer_length"] == 3.0
    assert metrics["bias/short/answer_length"] == 1.0 and metrics["bias/oracle/answer_length"] == 0
    assert (out / "manifest.json").exists() and (out / "report.html").stat().st_size > 10_000
    assert "answer_length" in r.output and "human" in r.output

    dst = tmp_path / "resam.jsonl"
    r = cli(["resample", str(data), "--task", "qa", "--heuristic", "answer_length",
             "--from-run", str(out), "--out", str(dst)])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "threshold 3" in r.output and dst.exists()
    back = load_dataset(dst, "qa")
    lengths = back.frame["answers"].map(lambda a: len(a[0].split())).to_numpy()
    assert (
        (lengths <= 3).sum()
        == (lengths > 3).sum()
        == max((ans_words <= 3).sum(), (ans_words > 3).sum())
    )
