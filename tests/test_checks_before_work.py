"""Checked before work, and nothing false or empty (issue 26, items 13 and 15).

A table of invocations whose parameters cannot fit the data: each must exit 2 with one
line naming the parameter, before the run directory exists, and leave every input
byte-identical. Then the cases that must run, and say what they did: a small evaluation
split under the quick profile, minority examples on a tiny set, a run where some
analyses are skipped.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from spurious.cli import main
from spurious.data.synthetic import make_nli_artifacts
from spurious.utils.metric_keys import split_metric_key

QA_CONTEXT = "The river Nile flows north through eleven countries into the sea."


def _squad(path, n_articles: int, per_article: int) -> list[str]:
    """A SQuAD 1.1 file of ``n_articles`` one-paragraph articles; returns the ids."""
    data, ids = [], []
    for a in range(n_articles):
        qas = []
        for q in range(per_article):
            qid = f"q{a}-{q}"
            ids.append(qid)
            word = ["Nile", "north", "eleven", "sea"][q % 4]
            qas.append({"id": qid, "question": f"Which word {q}?",
                        "answers": [{"text": word, "answer_start": QA_CONTEXT.index(word)}]})  # fmt: skip
        data.append({"title": f"article{a}", "paragraphs": [{"context": QA_CONTEXT, "qas": qas}]})
    path.write_text(json.dumps({"version": "1.1", "data": data}))
    return ids


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("checks")
    train, dev = make_nli_artifacts(n=400, artifact_rate=0.9, random_state=3).dataset.split(0.3)
    cols = ["id", "premise", "hypothesis", "label"]
    for name, ds in (("train", train), ("dev", dev)):
        ds.frame[cols].to_json(d / f"{name}.jsonl", orient="records", lines=True)
    train.frame[cols].head(10).to_json(d / "tiny.jsonl", orient="records", lines=True)
    preds = pd.DataFrame({"id": dev.frame["id"], "prediction": dev.frame["label"]})
    preds.to_json(d / "m1.jsonl", orient="records", lines=True)
    (d / "other").mkdir()
    preds.to_json(d / "other" / "m1.jsonl", orient="records", lines=True)
    ids = dev.frame["id"].tolist()
    bad = ["high" if i == 3 else str(i % 7) for i in range(len(ids))]
    pd.DataFrame({"id": ids, "myattr": bad}).to_csv(d / "attr_text.csv", index=False)
    pd.DataFrame({"id": [f"x{i}" for i in ids], "myattr": range(len(ids))}).to_csv(
        d / "attr_other.csv", index=False
    )
    (d / "single.jsonl").write_text(
        "".join(json.dumps({"text": t, "label": lab}) + "\n"
                for t, lab in [("good", "pos"), ("bad", "neg"), ("fine", "pos"), ("dull", "neg")])
    )  # fmt: skip
    qa_ids = _squad(d / "squad.json", 1, 12)
    (d / "qa_int.json").write_text(json.dumps({i: k % 2 for k, i in enumerate(qa_ids)}))
    (d / "qa_text.json").write_text(json.dumps({i: "Nile" for i in qa_ids}))
    return d


def _snapshot(d):
    return {p: p.read_bytes() for p in d.rglob("*") if p.is_file()}


BIAS = ["bias", "{d}/dev.jsonl", "--task", "nli", "--n-trials", "10", "--sample-size", "20"]
FAIR = ["fairness", "{d}/train.jsonl", "--task", "nli", "--eval", "{d}/dev.jsonl",
        "--predictions", "{d}/m1.jsonl", "--seeds", "0"]  # fmt: skip
AMP = ["amplify", "{d}/train.jsonl", "--task", "nli", "--eval", "{d}/dev.jsonl", "--no-hf",
       "--set", "cartography.features=bow", "--set", "cartography.epochs=2"]  # fmt: skip
MINORITY = ["audit", "{d}/train.jsonl", "--task", "nli", "--only", "minority",
            "--set", "minority.features=bow"]  # fmt: skip

BAD = [
    # item 13: data-dependent checks, now in check()
    (["leakage", "{d}/train.jsonl", "--task", "nli", "--folds", "200", "--features", "bow"],
     "--folds"),
    (["audit", "{d}/train.jsonl", "--task", "nli", "--only", "pvi", "--set", "pvi.n_folds=200",
      "--set", "pvi.features=bow"], "n_folds=200"),
    ([*BIAS, "--predictions", "{d}/m1.jsonl", "--heuristic", "nope"], "Unknown heuristic 'nope'"),
    ([*BIAS, "--predictions", "{d}/m1.jsonl", "--heuristic", "word_distance"],
     "--heuristic) names 'word_distance'"),
    ([*BIAS, "--predictions", "{d}/m1.jsonl", "--threshold", "nope=3"], "'thresholds' parameter"),
    ([*BIAS, "--predictions", "{d}/m1.jsonl", "--reference", "nope"], "'reference' parameter"),
    ([*BIAS, "--predictions", "{d}/m1.jsonl", "--metric", "em"], "'metric' parameter"),
    ([*BIAS, "--predictions", "{d}/m1.jsonl", "--predictions", "{d}/other/m1.jsonl"],
     "distinct names"),
    ([*BIAS, "--predictions", "{d}/m1.jsonl", "--attributes", "{d}/attr_other.csv"],
     "'attributes' lacks 121 of the 121 ids"),
    (["bias", "{d}/dev.jsonl", "--task", "nli", "--predictions", "{d}/m1.jsonl",
      "--fixed-sample-size"], "--sample-size"),
    (["audit", "{d}/dev.jsonl", "--task", "nli", "--predictions", "{d}/m1.jsonl", "--only",
      "prediction_bias", "--set", "prediction_bias.heuristic_params={overlap_rate: {x: 1}}"],
     "'heuristic_params'"),
    ([*FAIR, "--adversary", "nope"], "--adversary"),
    ([*FAIR, "--adversary", "bow", "--set", "fairness.aflite_params={bogus: 3}"],
     "'aflite_params' parameter names unknown AFLite parameter(s) ['bogus']"),
    ([*FAIR, "--adversary", "bow", "--set", "fairness.aflite_params={n_partitions: 0}"],
     "'aflite_params' parameter: The 'n_partitions'"),
    ([*FAIR, "--adversary", "bow", "--predictions", "{d}/other/m1.jsonl"],
     "distinct model names"),
    ([*MINORITY, "--set", "minority.n_clusters=500"], "n_clusters=500"),
    ([*MINORITY, "--set", "minority.n_pseudo_labels=500"], "n_pseudo_labels=500"),
    ([*AMP, "--eval-name", "../../escape"], "--eval-name"),
    ([*AMP, "--eval-name", "train"], "--eval-name"),
    ([*AMP, "--definition", "nope"], "--definition"),
    ([*AMP, "--reinsert", "2"], "'reinsert'"),
    ([*AMP, "--match-to", "nope"], "--match-to"),
    (["amplify", "{d}/train.jsonl", "--task", "nli", "--eval", "{d}/dev.jsonl", "--analysis",
      "partial_input"], "nothing to amplify"),
    # item 15: false or empty results
    (["aflite", "{d}/train.jsonl", "--task", "nli", "--features", "bow", "--partitions", "4",
      "--target-size", "1000"], "--target-size) resolves to n=1000, but the data hold |D|=279"),
    (["leakage", "{d}/single.jsonl", "--task", "text", "--features", "bow"],
     "Nothing to run: no analysis can use these inputs: partial_input needs two or more"),
    (["audit", "{d}/train.jsonl", "--task", "nli", "--only", "prediction_bias"],
     "Nothing to run: no analysis can use these inputs: prediction_bias needs model"),
    ([*BIAS, "--predictions", "{d}/m1.jsonl", "--attributes", "{d}/attr_text.csv"],
     "line 5 (id 'nli-020'): column 'myattr' must hold numbers (a heuristic's values); got 'high'"),
    (["bias", "{d}/squad.json", "--task", "qa", "--predictions", "{d}/qa_int.json"],
     "a QA prediction must be an answer string"),
    (["fairness", "{d}/squad.json", "--task", "qa", "--predictions", "{d}/qa_text.json"],
     "has 1 article"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "message"), BAD, ids=[f"case{i}" for i in range(len(BAD))])
def test_bad_parameters_stop_before_the_run_directory(files, tmp_path, args, message):
    before = _snapshot(files)
    out = tmp_path / "run"
    argv = [a.replace("{d}", str(files)) for a in args]
    r = CliRunner().invoke(main, [*argv, "--out", str(out)])
    assert r.exit_code == 2, r.output
    assert message in r.output, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), r.output
    assert not out.exists()
    assert _snapshot(files) == before


def test_quick_audit_adapts_to_a_small_evaluation_split_and_says_so(tmp_path):
    train, dev = make_nli_artifacts(n=900, random_state=4).dataset.split(1 / 3, random_state=0)
    assert len(dev) < 1600
    cols = ["id", "premise", "hypothesis", "label"]
    train.frame[cols].to_json(tmp_path / "train.jsonl", orient="records", lines=True)
    dev.frame[cols].to_json(tmp_path / "dev.jsonl", orient="records", lines=True)
    right = np.random.default_rng(0).random(len(dev)) < 0.7
    pred = np.where(right, dev.frame["label"], "neutral")
    pd.DataFrame({"id": dev.frame["id"], "prediction": pred}).to_json(
        tmp_path / "p.jsonl", orient="records", lines=True
    )
    out = tmp_path / "run"
    args = ["audit", str(tmp_path / "train.jsonl"), "--task", "nli", "--eval",
            str(tmp_path / "dev.jsonl"), "--predictions", str(tmp_path / "p.jsonl"), "--quick",
            "--only", "prediction_bias", "--out", str(out)]  # fmt: skip
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["statuses"] == {"prediction_bias": "ok"}
    notes = [w for w in manifest["warnings"] if "bootstrap groups adapted" in w]
    assert len(notes) == 1 and f"the {len(dev)} examples" in notes[0]
    assert "instead of sample_size=800" in r.output
    metrics = json.loads((out / "prediction_bias" / "metrics.json").read_text())
    sizes = [v for k, v in metrics.items() if split_metric_key(k)[0] == "sample_size"]
    adapted = [s for s in sizes if s < 800]  # the others stay undefined (too few values)
    assert len(adapted) >= 4 and all(s <= len(dev) // 4 for s in adapted)
    assert f"adapted to the data for {len(adapted)} heuristic(s)" in notes[0]


def test_minority_on_a_tiny_set_claims_no_split(files, tmp_path):
    out = tmp_path / "run"
    args = ["audit", str(files / "tiny.jsonl"), "--task", "nli", "--only", "minority",
            "--set", "minority.features=bow", "--out", str(out)]  # fmt: skip
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    result = json.loads((out / "minority" / "result.json").read_text())
    metrics = json.loads((out / "minority" / "metrics.json").read_text())
    assert metrics["n_anti_biased_train"] == 0.0 and metrics["n_train"] == 10.0
    verdict = result["headline"]["verdict"]
    assert verdict.startswith("no anti-biased split: no training example is a minority")
    assert "split available" not in r.output and "nothing to amplify" in r.output


def test_some_analyses_skipped_is_not_an_error(files, tmp_path):
    out = tmp_path / "run"
    args = ["audit", str(files / "train.jsonl"), "--task", "nli", "--only", "atlas",
            "--only", "prediction_bias", "--out", str(out)]  # fmt: skip
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    statuses = json.loads((out / "manifest.json").read_text())["statuses"]
    assert statuses == {"atlas": "ok", "prediction_bias": "skipped"}


def test_answer_strings_are_still_qa_predictions(files):
    from spurious.data import load_dataset
    from spurious.data.predictions import load_predictions

    ds = load_dataset(files / "squad.json", "qa")
    preds = load_predictions(files / "qa_text.json", ds)
    assert preds.values.tolist() == ["Nile"] * 12


def test_empty_attribute_cells_are_missing_values_not_errors(tmp_path):
    from spurious.inputs import read_attributes

    path = tmp_path / "a.csv"
    path.write_text("id,h\na,1\nb,\nc,NaN\nd,2.5\n")
    frame = read_attributes(path)
    assert frame["h"].tolist()[0::3] == [1.0, 2.5]
    assert frame["h"].isna().tolist() == [False, True, True, False]
