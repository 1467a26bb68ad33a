"""Model predictions on multiple-choice items, and the ``position_bias`` analysis.

Reading: letters, 0-based indices, per-option scores (JSON, JSONL, CSV) and
lm-evaluation-harness samples files; alignment by id, or by row order when asked; the
errors name the item and what was received. The analysis: a model that always answers
"A" has a letter bias whose interval excludes 0; one whose letters follow the gold
distribution independently of the gold has none; accuracy by gold position on a
hand-built set.
"""

from __future__ import annotations

import json
import logging

import numpy as np
import pandas as pd
import pytest

import spurious
from spurious.context import RunContext
from spurious.data import Dataset
from spurious.data.predictions import align_predictions, load_predictions
from spurious.data.synthetic_mcq import make_mcq_artifacts
from spurious.evaluate.position_bias import PositionBias, letter_statistics
from spurious.exceptions import DataFormatError, LabelError, SchemaError
from spurious.report.sections import build_section


@pytest.fixture(scope="module")
def items() -> Dataset:
    """Three items: 4, 3 and 5 options."""
    frame = pd.DataFrame(
        {
            "id": ["q1", "q2", "q3"],
            "question": ["First?", "Second?", "Third?"],
            "options": [["a", "b", "c", "d"], ["x", "y", "z"], ["1", "2", "3", "4", "5"]],
            "label": ["B", "A", "E"],
        }
    )
    return Dataset.from_frame(frame, "mcq", name="items")


def _write(path, obj):
    path.write_text(json.dumps(obj))
    return path


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# -- input shapes ------------------------------------------------------------------------


def test_letter_json(items, tmp_path):
    f = _write(tmp_path / "m.json", {"q1": "B", "q2": "(c)", "q3": "e"})
    p = load_predictions(f, items)
    assert p.kind == "labels" and p.values.tolist() == [1, 2, 4]
    assert p.name == "m" and p.n_missing == 0


def test_index_json(items, tmp_path):
    f = _write(tmp_path / "idx.json", {"q1": 1, "q2": 0, "q3": 3})
    assert load_predictions(f, items).values.tolist() == [1, 0, 3]


def test_scores_jsonl_softmax_and_argmax(items, tmp_path):
    rows = [
        {"id": "q1", "scores": [-1.2, -0.3, -2.0, -4.1]},
        {"id": "q2", "scores": [-0.1, -3.0, -3.0]},
        {"id": "q3", "scores": [-5, -4, -3, -2, -1]},
    ]
    p = load_predictions(_jsonl(tmp_path / "s.jsonl", rows), items)
    assert p.kind == "probabilities" and p.values.tolist() == [1, 0, 4]
    assert p.probabilities.shape == (3, 5)
    np.testing.assert_allclose(p.probabilities.sum(axis=1), 1.0)
    # Past an item's last option the probability is 0 (q1 has no "E").
    assert p.probabilities[0, 4] == 0.0 and p.probabilities[1, 3:].tolist() == [0.0, 0.0]
    e = np.exp([-1.2, -0.3, -2.0, -4.1])
    np.testing.assert_allclose(p.probabilities[0, :4], e / e.sum())


def test_prediction_column_of_lists_is_scores(items, tmp_path):
    rows = [{"id": "q1", "prediction": [0, 0, 1, 0]}, {"id": "q2", "prediction": [1, 0, 0]}]
    rows.append({"id": "q3", "prediction": [0, 0, 0, 0, 1]})
    p = load_predictions(_jsonl(tmp_path / "p.jsonl", rows), items)
    assert p.kind == "probabilities" and p.values.tolist() == [2, 0, 4]


def test_scores_json_mapping_and_distributions_kept(items, tmp_path):
    f = _write(
        tmp_path / "p.json",
        {"q1": [0.1, 0.2, 0.6, 0.1], "q2": [0.5, 0.25, 0.25], "q3": [0, 0, 0, 1, 0]},
    )
    p = load_predictions(f, items)
    assert p.values.tolist() == [2, 0, 3]
    np.testing.assert_allclose(p.probabilities[0, :4], [0.1, 0.2, 0.6, 0.1])


def test_csv_letters_and_scores(items, tmp_path):
    f = tmp_path / "m.csv"
    f.write_text("id,prediction\nq1,B\nq2,C\nq3,A\n")
    assert load_predictions(f, items).values.tolist() == [1, 2, 0]
    g = tmp_path / "s.csv"
    g.write_text('id,logprobs\nq1,"[-3, -1, -2, -4]"\nq2,"[0, -1, -2]"\nq3,"[-1,-1,-1,-1,0]"\n')
    p = load_predictions(g, items)
    assert p.kind == "probabilities" and p.values.tolist() == [1, 0, 4]


def _samples(tmp_path, resps, targets, doc_ids=None):
    rows = [
        {"doc_id": i if doc_ids is None else doc_ids[i], "target": t, "filtered_resps": r}
        for i, (r, t) in enumerate(zip(resps, targets, strict=True))
    ]
    return _jsonl(tmp_path / "samples_arc_2024.jsonl", rows)


def test_lm_eval_samples_by_row(items, tmp_path):
    resps = [
        [["-4.5", "False"], ["-1.0", "True"], ["-3.0", "False"], ["-9", "False"]],
        [["-0.5", "True"], ["-2.5", "False"], ["-3.5", "False"]],
        [[-5.0, False], [-4.0, False], [-3.0, False], [-2.0, False], [-1.0, True]],
    ]
    f = _samples(tmp_path, resps, [1, 0, 4], doc_ids=[0, 1, 2])
    p = load_predictions(f, items, align="rows")
    assert p.values.tolist() == [1, 0, 4] and p.kind == "probabilities"
    # Out of order and with "resps" ([[[ll, greedy]]] per option) it reads the same.
    rows = [
        {
            "doc_id": 2,
            "target": 4,
            "resps": [[[-5, False]], [[-4, False]], [[-3, 0]], [[-2, 0]], [[-9, 0]]],
        },
        {"doc_id": 0, "target": 1, "resps": [[[-4, 0]], [[-1, 1]], [[-3, 0]], [[-9, 0]]]},
        {"doc_id": 1, "target": 0, "resps": [[[-0.5, 1]], [[-2, 0]], [[-3, 0]]]},
    ]
    g = _jsonl(tmp_path / "samples_b.jsonl", rows)
    assert load_predictions(g, items, align="rows").values.tolist() == [1, 0, 3]


def test_lm_eval_needs_explicit_row_alignment(items, tmp_path):
    f = _samples(tmp_path, [[[-1, 0]] * 4, [[-1, 0]] * 3, [[-1, 0]] * 5], [1, 0, 4])
    with pytest.raises(DataFormatError, match=r"lm-evaluation-harness.*align='rows'"):
        load_predictions(f, items)


def test_lm_eval_target_mismatch_names_the_row(items, tmp_path):
    f = _samples(tmp_path, [[[-1, 0]] * 4, [[-1, 0]] * 3, [[-1, 0]] * 5], [1, 2, 4])
    with pytest.raises(SchemaError, match=r"doc_id 1.*target' is 2.*'q2'.*gold 'A'"):
        load_predictions(f, items, align="rows")


# -- alignment -------------------------------------------------------------------------------


def test_by_order_alignment_is_explicit(items, tmp_path):
    f = _write(tmp_path / "rows.json", ["B", "C", "A"])
    with pytest.raises(DataFormatError):
        load_predictions(f, items)  # an array of values has no ids
    assert load_predictions(f, items, align="rows").values.tolist() == [1, 2, 0]
    g = tmp_path / "rows.csv"
    g.write_text("question,prediction\nFirst?,D\nSecond?,A\nThird?,B\n")
    assert load_predictions(g, items, align="rows").values.tolist() == [3, 0, 1]
    g.write_text("question,prediction\nSecond?,D\nFirst?,A\nThird?,B\n")
    with pytest.raises(
        SchemaError, match=r"row 2: its 'question' is 'Second\?'.*not in the dataset's row order"
    ):
        load_predictions(g, items, align="rows")


def test_by_id_alignment_missing_and_extra(items, tmp_path, caplog):
    f = _write(tmp_path / "part.json", {"q2": "A", "q1": "D"})
    with caplog.at_level(logging.WARNING):
        p = load_predictions(f, items)
    assert p.values.tolist() == [3, 0, -1] and p.missing.tolist() == [False, False, True]
    with pytest.raises(SchemaError, match=r"1 of the dataset's 3 id\(s\) have no prediction"):
        load_predictions(f, items, on_missing="error")
    g = _write(tmp_path / "extra.json", {"q1": "A", "q2": "A", "q3": "A", "q9": "A"})
    with pytest.raises(SchemaError, match=r"not in the dataset \(e.g. \['q9'\]\)"):
        load_predictions(g, items)


# -- errors ----------------------------------------------------------------------------------


def test_wrong_number_of_scores_names_id_and_lengths(items, tmp_path):
    f = _write(tmp_path / "s.json", {"q1": [0, 1, 2, 3], "q2": [0, 1, 2, 3], "q3": [1] * 5})
    with pytest.raises(SchemaError, match=r"id 'q2': 4 option score\(s\) but the item has 3"):
        load_predictions(f, items)


def test_letter_outside_the_items_options(items, tmp_path):
    f = _write(tmp_path / "m.json", {"q1": "A", "q2": "D", "q3": "A"})
    with pytest.raises(LabelError, match=r"id 'q2': predicted 'D' .*has 3 options"):
        load_predictions(f, items)
    with pytest.raises(LabelError, match=r"id 'q1': predicted 4 .*has 4 options"):
        align_predictions({"q1": 4, "q2": 0, "q3": 0}, items)
    with pytest.raises(LabelError, match=r"id 'q3': unknown label 'K'"):
        align_predictions({"q1": "A", "q2": "A", "q3": "K"}, items)


def test_bad_scores_are_refused(items):
    with pytest.raises(SchemaError, match=r"id 'q1': option scores must be numbers"):
        align_predictions({"q1": [1, None, 2, 3], "q2": [0, 0, 1], "q3": [1] * 5}, items)


def test_other_tasks_do_not_read_score_columns(tmp_path):
    """A ``scores`` list column is read only for multiple choice; NLI behaves as before."""
    ds = Dataset.from_frame(
        pd.DataFrame(
            {"id": ["1", "2"], "premise": ["a", "b"], "hypothesis": ["c", "d"], "label": [0, 1]}
        ),
        "nli",
    )
    f = _jsonl(
        tmp_path / "s.jsonl", [{"id": "1", "scores": [1, 0, 0]}, {"id": "2", "scores": [0, 1, 0]}]
    )
    with pytest.raises(DataFormatError, match="no prediction column"):
        load_predictions(f, ds)


# -- position_bias ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def uniform_items() -> Dataset:
    return make_mcq_artifacts(n=400, artifact="none", random_state=3).dataset


def _run(ds: Dataset, **preds: np.ndarray):
    sets = [
        align_predictions(dict(zip(ds.ids, v.tolist(), strict=True)), ds, name=name)
        for name, v in preds.items()
    ]
    ctx = RunContext(ds, predictions=sets, progress=False)
    return PositionBias(n_resamples=300, random_state=0).run(context=ctx)


def test_always_a_has_a_significant_letter_bias(uniform_items):
    ds = uniform_items
    res = _run(ds, always_a=np.zeros(len(ds), dtype=int))
    m = res.metrics
    assert m["letter_p_value_always_a"] < 1e-10
    assert m["letter_bias_always_a_ci_low"] > 0.5  # the interval excludes 0
    assert m["pred_share_always_a_A"] == 1.0
    assert res.headline["severity"] == "high"
    assert res.headline["evidence"]["basis"] == "interval+null_test"
    assert m["accuracy_always_a_gold_A"] == 1.0 and m["accuracy_always_a_gold_B"] == 0.0
    assert res.scores.columns[0] == "id" and res.scores["is_position_bias_issue"].sum() > 0


def test_letters_following_the_gold_distribution_are_no_finding(uniform_items):
    ds = uniform_items
    rng = np.random.default_rng(0)
    gold = ds.labels
    # Independent of the gold item by item, with the gold letters' distribution.
    independent = rng.permutation(gold)
    accurate = np.where(rng.random(len(ds)) < 0.7, gold, (gold + rng.integers(1, 4, len(ds))) % 4)
    res = _run(ds, independent=independent, accurate=accurate)
    assert res.headline["severity"] == "none", res.headline
    assert res.metrics["letter_p_value_independent"] > 0.05
    assert res.metrics["letter_bias_independent_ci_low"] == 0.0
    lo, hi = res.metrics["accuracy_independent_ci_low"], res.metrics["accuracy_independent_ci_high"]
    assert lo < 0.25 < hi  # chance: 1/4


def test_accuracy_by_gold_position_on_a_hand_built_set():
    gold = np.repeat([0, 1, 2, 3], 10)
    pred = gold.copy()
    pred[10:15] = 0  # half of the B items answered A
    pred[20:30] = 3  # every C item answered D
    k = np.full(40, 4)
    s = letter_statistics(pred, gold, k, 4, n_resamples=200, random_state=0)
    assert s["accuracy_by_gold"] == [1.0, 0.5, 0.0, 1.0]
    assert s["position_spread"] == 1.0
    assert s["accuracy"] == pytest.approx(25 / 40)
    assert s["pred_share"] == [0.375, 0.125, 0.0, 0.5]
    assert s["gold_share"] == [0.25] * 4
    assert s["letter_bias"] == pytest.approx(0.25) and s["overpredicted"] == "D"
    assert s["chance"] == 0.25
    lo, hi = s["accuracy_by_gold_ci"][1]
    assert lo < 0.5 < hi


def test_correctness_only_model_gets_accuracy_but_no_letters(uniform_items):
    ds = uniform_items
    right = np.random.default_rng(1).random(len(ds)) < 0.6
    p = align_predictions(dict(zip(ds.ids, right.tolist(), strict=True)), ds, name="flags")
    res = PositionBias(n_resamples=200).run(context=RunContext(ds, predictions=[p], progress=False))
    assert res.metrics["accuracy_flags"] == pytest.approx(right.mean())
    assert np.isnan(res.metrics["letter_bias_flags"])
    assert res.headline["severity"] == "info"


def test_run_from_files_and_section(uniform_items, tmp_path):
    ds = uniform_items
    data = tmp_path / "items.jsonl"
    ds.frame[["id", "question", "options", "label"]].to_json(data, orient="records", lines=True)
    pred = _write(tmp_path / "<b>model.json", {i: "A" for i in ds.ids})
    run = spurious.run(
        data,
        task="mcq",
        predictions=[pred],
        analyses={"position_bias": {"n_resamples": 200}},
        out=tmp_path / "run",
        progress=False,
    )
    res = run["position_bias"]
    assert res.status == "ok" and res.headline["severity"] == "high"
    html = str(build_section(res).html_body)
    assert "&lt;b&gt;model" in html and "<b>model" not in html
    assert "data:image/svg+xml" in html
