"""How prediction files are read and aligned (issue 19, items 14 and 16).

Planted answers: a model that is right on a known set of rows is written in every
layout a user may have (labels, correctness, probabilities; by id or by row order), and
each must give exactly that accuracy. The gold column is never read as the prediction.
"""

from __future__ import annotations

import json
import logging

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from spurious import load_dataset
from spurious.cli import main
from spurious.data.dataset import Dataset
from spurious.data.predictions import load_predictions
from spurious.exceptions import DataFormatError, ParameterError, SchemaError
from spurious.stats.metrics import example_scores
from tests.conftest import shared_data

N = 300
LABELS = ["contradiction", "entailment", "neutral"]


@pytest.fixture(scope="module")
def nli() -> Dataset:
    """An NLI dataset without an id column: its ids are content hashes."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "premise": [f"premise number {i}" for i in range(N)],
            "hypothesis": [f"hypothesis {i}" + " word" * rng.integers(8) for i in range(N)],
            "label": rng.choice(LABELS, N),
        }
    )
    return Dataset.from_frame(frame, "nli")


@pytest.fixture(scope="module")
def planted(nli):
    """A model right on ~80% of the rows (which ones is known) and its predicted labels."""
    rng = np.random.default_rng(1)
    right = rng.random(N) < 0.8
    pred = np.where(right, nli.labels, (nli.labels + 1) % 3)
    return right, pred


def _write(path, layout, nli, right, pred):
    """Write the planted model in one layout; return the load_predictions keyword args."""
    names = np.asarray(nli.label_names, dtype=object)
    probs = np.full((N, 3), 0.1)
    probs[np.arange(N), pred] = 0.8
    ids = nli.ids.tolist()
    frame = pd.DataFrame({"id": ids, "label": names[nli.labels]})
    if layout == "jsonl_prediction":
        frame.assign(prediction=names[pred]).to_json(path, orient="records", lines=True)
    elif layout == "csv_pred_label_ids":
        frame.assign(pred_label=pred).to_csv(path, index=False)
    elif layout == "csv_other_id_field":
        frame.rename(columns={"id": "pairID"}).assign(pred=names[pred]).to_csv(path, index=False)
        return {"id_field": "pairID"}
    elif layout == "csv_value_field":
        frame.assign(model_output=names[pred]).to_csv(path, index=False)
        return {"value_field": "model_output"}
    elif layout == "jsonl_correct":
        frame.assign(correct=right.astype(int)).to_json(path, orient="records", lines=True)
    elif layout == "csv_correctness_named":
        frame.assign(acc=right.astype(int)).to_csv(path, index=False)
        return {"value_field": "acc", "kind": "correctness"}
    elif layout == "json_bool":
        path.write_text(json.dumps(dict(zip(ids, right.tolist(), strict=True))))
    elif layout == "csv_prob_columns":
        cols = {f"prob_{lab}": probs[:, k] for k, lab in enumerate(nli.label_names)}
        frame.assign(**cols).to_csv(path, index=False)
    elif layout == "tsv_label_columns":
        cols = {lab: probs[:, k] for k, lab in enumerate(nli.label_names)}
        frame.assign(**cols).to_csv(path, index=False, sep="\t")
    elif layout == "json_prob_lists":
        path.write_text(json.dumps(dict(zip(ids, probs.tolist(), strict=True))))
    elif layout == "jsonl_probs_list":
        frame.assign(probs=probs.tolist()).to_json(path, orient="records", lines=True)
    elif layout == "rows_csv_with_text":
        pd.DataFrame({"hypothesis": nli.frame["hypothesis"], "prediction": names[pred]}).to_csv(
            path, index=False
        )
        return {"align": "rows"}
    elif layout == "rows_json_values":
        path.write_text(json.dumps(pred.tolist()))
        return {"align": "rows"}
    else:  # pragma: no cover
        raise AssertionError(layout)
    return {}


LAYOUTS = [
    ("jsonl_prediction", ".jsonl", "labels"),
    ("csv_pred_label_ids", ".csv", "labels"),
    ("csv_other_id_field", ".csv", "labels"),
    ("csv_value_field", ".csv", "labels"),
    ("jsonl_correct", ".jsonl", "correctness"),
    ("csv_correctness_named", ".csv", "correctness"),
    ("json_bool", ".json", "correctness"),
    ("csv_prob_columns", ".csv", "probabilities"),
    ("tsv_label_columns", ".tsv", "probabilities"),
    ("json_prob_lists", ".json", "probabilities"),
    ("jsonl_probs_list", ".jsonl", "probabilities"),
    ("rows_csv_with_text", ".csv", "labels"),
    ("rows_json_values", ".json", "labels"),
]


@pytest.mark.parametrize(("layout", "suffix", "kind"), LAYOUTS, ids=[x[0] for x in LAYOUTS])
def test_every_layout_gives_the_planted_accuracy(layout, suffix, kind, nli, planted, tmp_path):
    right, pred = planted
    path = tmp_path / f"model{suffix}"
    kw = _write(path, layout, nli, right, pred)
    p = load_predictions(path, nli, **kw)
    assert p.kind == kind
    np.testing.assert_array_equal(example_scores(nli, p), right.astype(float))
    if kind != "correctness":  # the predicted label itself is known
        np.testing.assert_array_equal(p.values, pred)
    if kind == "probabilities":
        assert p.probabilities.shape == (N, 3)
        np.testing.assert_allclose(p.probabilities.sum(axis=1), 1.0)


def test_gold_column_is_never_read_as_the_prediction(nli, planted, tmp_path, caplog):
    """Issue 19 item 16: a file with the gold label and a differently named prediction
    used to score 1.000; now it is refused, naming what was searched for."""
    right, pred = planted
    names = np.asarray(nli.label_names, dtype=object)
    path = tmp_path / "model.csv"
    pd.DataFrame({"id": nli.ids, "label": names[nli.labels], "model_output": names[pred]}).to_csv(
        path, index=False
    )
    with pytest.raises(DataFormatError) as e:
        load_predictions(path, nli)
    msg = str(e.value)
    assert "'prediction'" in msg and "'correct'" in msg and "prob_<label>" in msg
    assert "['label']" in msg and "never read as predictions" in msg and "--value-field" in msg
    # Named, the real prediction column gives the real accuracy ...
    p = load_predictions(path, nli, value_field="model_output")
    assert example_scores(nli, p).mean() == pytest.approx(right.mean())
    # ... and naming the gold column on purpose loads it with a warning.
    with caplog.at_level(logging.WARNING, logger="spurious.data.predictions"):
        load_predictions(path, nli, value_field="label")
    assert "equal the gold label on 100.00% of the 300 rows" in caplog.text


def test_gold_like_warning_needs_more_than_999_per_mille(nli, tmp_path, caplog):
    names = np.asarray(nli.label_names, dtype=object)
    almost = nli.labels.copy()
    almost[:1] = (almost[:1] + 1) % 3  # 299 of 300 right: 99.67%, a plausible model
    path = tmp_path / "good.jsonl"
    pd.DataFrame({"id": nli.ids, "prediction": names[almost]}).to_json(
        path, orient="records", lines=True
    )
    with caplog.at_level(logging.WARNING, logger="spurious.data.predictions"):
        load_predictions(path, nli)
    assert "gold" not in caplog.text


@pytest.mark.parametrize(
    ("rows", "error"),
    [
        ("swap_1_2", r"row 3: its 'hypothesis' is .* but example 1 .* 2 of 300 row\(s\) differ"),
        ("drop_last", r"has 299 prediction row\(s\) but dataset .* has 300"),
    ],
)
def test_row_alignment_is_checked(rows, error, nli, planted, tmp_path):
    _, pred = planted
    frame = pd.DataFrame({"hypothesis": nli.frame["hypothesis"], "prediction": pred})
    if rows == "swap_1_2":
        frame.iloc[[1, 2]] = frame.iloc[[2, 1]].to_numpy()
    else:
        frame = frame.iloc[:-1]
    path = tmp_path / "rows.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(SchemaError, match=error):
        load_predictions(path, nli, align="rows")


def test_a_file_without_ids_says_how_to_align_it(nli, planted, tmp_path):
    _, pred = planted
    path = tmp_path / "noid.csv"
    pd.DataFrame({"prediction": pred}).to_csv(path, index=False)
    with pytest.raises(DataFormatError, match=r"no id column 'id'.*--id-field.*--align rows"):
        load_predictions(path, nli)
    assert load_predictions(path, nli, align="rows").values.tolist() == pred.tolist()
    with pytest.raises(ParameterError, match="'align' parameter"):
        load_predictions(path, nli, align="order")
    # A file keyed by other ids points at `spurious ids` and --align rows.
    other = tmp_path / "other.jsonl"
    pd.DataFrame({"id": [str(i) for i in range(N)], "prediction": pred}).to_json(
        other, orient="records", lines=True
    )
    with pytest.raises(SchemaError, match=r"spurious ids DATA.*--align rows"):
        load_predictions(other, nli)


@pytest.mark.parametrize(
    ("values", "error"),
    [
        ([0.5, 0.6, 0.2], "sum to 1"),
        ([2.0, -1.0, 0.0], "logits need a softmax"),
        ([0.5, 0.5], "expected 3 finite probabilities"),
    ],
)
def test_bad_probabilities_name_the_row(values, error, nli, tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({i: values for i in nli.ids}))
    with pytest.raises(SchemaError, match=f"id '{nli.ids[0]}'.*{error}"):
        load_predictions(path, nli)


def test_bad_correctness_value_names_the_row(nli, tmp_path):
    path = tmp_path / "c.jsonl"
    pd.DataFrame({"id": nli.ids, "correct": ["maybe"] * N}).to_json(
        path, orient="records", lines=True
    )
    with pytest.raises(SchemaError, match=r"correctness value must be 0/1 .* 'maybe'"):
        load_predictions(path, nli)


def test_qa_correctness_file_reproduces_em_on_real_squad(tmp_path):
    """A correctness-only file of a real model (BERT-base on SQuAD dev) gives its EM."""
    squad = load_dataset(shared_data("squad", "dev-v1.1.json"), "qa")
    full = load_predictions(shared_data("predictions", "squad", "bert-base-uncased.json"), squad)
    em = example_scores(squad, full, "em")
    path = tmp_path / "bert-correct.json"
    path.write_text(json.dumps(dict(zip(squad.ids.tolist(), (em == 1).tolist(), strict=True))))
    p = load_predictions(path, squad)
    assert p.kind == "correctness"
    np.testing.assert_array_equal(example_scores(squad, p, "em"), em)
    np.testing.assert_array_equal(example_scores(squad, p, "f1"), em)  # 0/1: F1 = EM


def test_cli_ids_lists_the_content_hashes_and_they_align(nli, planted, tmp_path):
    _, pred = planted
    data = tmp_path / "data.jsonl"
    nli.frame[["premise", "hypothesis", "label"]].to_json(data, orient="records", lines=True)
    out = tmp_path / "ids.csv"
    res = CliRunner().invoke(main, ["ids", str(data), "--task", "nli", "--out", str(out)])
    assert res.exit_code == 0, res.output
    table = pd.read_csv(out)
    assert table.columns.tolist() == ["row", "id", "premise", "hypothesis", "label"]
    assert table["id"].tolist() == nli.ids.tolist()
    assert table["id"].str.len().eq(12).all()
    preds = tmp_path / "keyed.csv"
    table[["id"]].assign(prediction=pred).to_csv(preds, index=False)
    assert load_predictions(preds, load_dataset(data, "nli")).values.tolist() == pred.tolist()


def _bias_cli(args, tmp_path):
    out = tmp_path / "run"
    base = ["--heuristic", "hypothesis_length", "--n-trials", "20", "--sample-size", "20"]
    return out, CliRunner().invoke(main, [*args, *base, "--out", str(out)])


@pytest.mark.parametrize(
    ("layout", "flags", "config"),
    [
        ("rows_csv_with_text", ["--align", "rows"], {"predictions_align": "rows"}),
        ("csv_other_id_field", ["--id-field", "pairID"], {"predictions_id_field": "pairID"}),
        ("csv_value_field", ["--value-field", "model_output"], {}),
        ("csv_correctness_named", ["--value-field", "acc", "--prediction-kind", "correctness"],
         {"predictions_kind": "correctness"}),
    ],
)  # fmt: skip
def test_bias_command_reads_files_as_told(layout, flags, config, nli, planted, tmp_path):
    right, pred = planted
    data = tmp_path / "data.jsonl"
    nli.frame[["premise", "hypothesis", "label"]].to_json(data, orient="records", lines=True)
    ds = load_dataset(data, "nli")
    preds = tmp_path / "model.csv"
    _write(preds, layout, ds, right, pred)
    out, res = _bias_cli(["bias", str(data), "--task", "nli", "--predictions", str(preds), *flags],
                         tmp_path)  # fmt: skip
    assert res.exit_code == 0, res.output
    manifest = json.loads((out / "manifest.json").read_text())
    for key, value in config.items():
        assert manifest["config"]["inputs"][key] == value
    metrics = json.loads((out / "prediction_bias" / "metrics.json").read_text())
    assert metrics["accuracy/model"] == pytest.approx(right.mean())


def test_audit_and_fairness_accept_the_prediction_options():
    for command in ("audit", "fairness", "bias"):
        res = CliRunner().invoke(main, [command, "--help"])
        for flag in ("--id-field", "--value-field", "--align", "--prediction-kind"):
            assert flag in res.output, (command, flag)


def test_api_run_aligns_by_rows_for_files_and_in_memory_data(nli, planted, tmp_path):
    import spurious

    right, pred = planted
    data = tmp_path / "data.jsonl"
    nli.frame[["premise", "hypothesis", "label"]].to_json(data, orient="records", lines=True)
    preds = tmp_path / "model.csv"
    _write(preds, "rows_csv_with_text", nli, right, pred)
    params = {"prediction_bias": {"heuristics": ["hypothesis_length"], "n_trials": 20,
                                  "sample_size": 20}}  # fmt: skip
    for source in (str(data), nli):
        run = spurious.run(source, "nli", analyses=params, predictions=[preds],
                           predictions_align="rows", progress=False)  # fmt: skip
        assert run["prediction_bias"].metrics["accuracy/model"] == pytest.approx(right.mean())


def test_bias_table_says_why_a_cell_is_undefined(nli, planted, tmp_path):
    """Issue 19 item 15: an undefined cell names the reason and the size that defines it."""
    from spurious.evaluate.prediction_bias import split_capacity
    from spurious.heuristics import compute_heuristics

    right, pred = planted
    data = tmp_path / "data.jsonl"
    nli.frame[["premise", "hypothesis", "label"]].to_json(data, orient="records", lines=True)
    preds = tmp_path / "model.csv"
    _write(preds, "rows_csv_with_text", nli, right, pred)
    smaller, _ = split_capacity(compute_heuristics(nli, ["hypothesis_length"]).iloc[:, -1])
    # The fixture: 300 rows hold 2 x 150 in all (a smaller --sample-size with
    # --fixed-sample-size is refused before any work), but not 150 on both sides.
    assert 40 < smaller < 150
    args = ["bias", str(data), "--task", "nli", "--predictions", str(preds), "--align", "rows",
            "--heuristic", "hypothesis_length", "--n-trials", "20", "--sample-size", "150"]  # fmt: skip
    res = CliRunner().invoke(main, [*args, "--fixed-sample-size", "--out", str(tmp_path / "a")])
    assert "undefined" in res.output
    assert f"leaves {smaller} example(s) on its smaller side" in res.output
    flat = " ".join(res.output.split())
    assert f"sample_size={smaller // 2} (--sample-size {smaller // 2}) would define it" in flat
    res = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "b")])
    assert res.exit_code == 0, res.output
    assert "hypothesis_length       " in res.output and f"{smaller // 2}*" in res.output
