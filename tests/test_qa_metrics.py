"""SQuAD v1.1 exact match / F1, leave-one-out annotator scores, accuracy, prediction files."""

from __future__ import annotations

import json
import re
import string
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from spurious.data import Dataset, load_dataset
from spurious.data.predictions import align_predictions, load_predictions
from spurious.exceptions import DataFormatError, LabelError, ParameterError, SchemaError
from spurious.stats.metrics import (
    accuracy_scores,
    example_scores,
    leave_one_out_scores,
    normalize_answer,
    qa_scores,
    squad_exact_match,
    squad_f1,
)
from tests.conftest import shared_data


# -- the official evaluate-v1.1.py functions, transcribed as the reference ---------------
def _official_normalize(s):
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def _official_f1(prediction, ground_truth):
    prediction_tokens = _official_normalize(prediction).split()
    ground_truth_tokens = _official_normalize(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def _official_em(prediction, ground_truth):
    return _official_normalize(prediction) == _official_normalize(ground_truth)


def _official_max(fn, prediction, ground_truths):
    return max(fn(prediction, gt) for gt in ground_truths)


TRICKY = [
    ("The Denver Broncos", ["Denver Broncos"]),
    ("the the a an", ["the"]),  # normalises to "" on both sides: EM 1, F1 0 (v1.1)
    ("", ["the"]),
    ("", ["Paris"]),
    ("another theatre", ["other theatre"]),  # articles only as whole words
    ("Paris.", ["paris"]),
    ("«Paris»", ["Paris"]),  # non-ASCII punctuation is kept
    ("U.S.", ["US"]),
    ("1,000", ["1000"]),
    ("don't", ["dont"]),
    ("cat cat", ["cat"]),  # repeated tokens: multiset overlap
    ("big  red\tdog", ["big red dog"]),
    ("Carolina Panthers", ["Denver Broncos", "the Panthers", "Panthers"]),
    ("a", ["an"]),
    ("ÉCOLE normale", ["école Normale"]),
]


@pytest.mark.parametrize(("pred", "golds"), TRICKY)
def test_matches_official_script_on_tricky_cases(pred, golds):
    assert squad_exact_match(pred, golds) == float(_official_max(_official_em, pred, golds))
    assert squad_f1(pred, golds) == pytest.approx(_official_max(_official_f1, pred, golds))
    for g in golds:
        assert normalize_answer(g) == _official_normalize(g)


def test_hand_computed_values():
    # pred {cat, sat}, gold {cat, sat, on, mat}: P = 1, R = 1/2, F1 = 2/3.
    assert squad_f1("The cat sat", ["cat sat on the mat"]) == pytest.approx(2 / 3)
    assert squad_exact_match("The cat sat", ["cat sat on the mat"]) == 0.0
    # "cat cat" vs "cat": one shared token, P = 1/2, R = 1 -> 2/3.
    assert squad_f1("cat cat", ["cat"]) == pytest.approx(2 / 3)
    # Max over gold answers: the second gold matches exactly.
    assert squad_exact_match("Panthers", ["Denver Broncos", "the Panthers!"]) == 1.0
    assert squad_f1("Panthers", ["Denver Broncos", "Carolina Panthers"]) == pytest.approx(2 / 3)
    # Empty after normalisation on both sides: EM 1 but F1 0 (the v1.1 script).
    assert (squad_exact_match("The", ["a"]), squad_f1("The", ["a"])) == (1.0, 0.0)
    # No gold answer: undefined.
    assert np.isnan(squad_f1("x", [])) and np.isnan(squad_exact_match("x", []))


def test_vectorised_scores_and_errors():
    preds = ["Denver", "gold", ""]
    golds = [["Denver Broncos"], ["gold", "golden"], []]
    em = qa_scores(preds, golds, "em")
    f1 = qa_scores(preds, golds, "f1")
    assert em[:2].tolist() == [0.0, 1.0] and np.isnan(em[2])
    assert f1[:2].tolist() == pytest.approx([2 / 3, 1.0])
    with pytest.raises(ParameterError, match="'metric'"):
        qa_scores(preds, golds, "bleu")
    with pytest.raises(ParameterError, match="same length"):
        qa_scores(preds, golds[:2])


def test_leave_one_out_scores():
    answers = [["the cat", "cat", "dog"], ["x"], ["red car", "car"]]
    em = leave_one_out_scores(answers, "em")
    assert em.shape == (3, 3)
    # Example 0: "the cat" vs {cat, dog} -> 1; "cat" vs {the cat, dog} -> 1; "dog" -> 0.
    assert em[:, 0].tolist() == [1.0, 1.0, 0.0]
    # One answer: nobody to compare with.
    assert np.isnan(em[:, 1]).all()
    f1 = leave_one_out_scores(answers, "f1")
    assert f1[0, 2] == pytest.approx(2 / 3) and f1[1, 2] == pytest.approx(2 / 3)
    assert np.isnan(f1[2, 2])


def test_accuracy_and_example_scores():
    assert accuracy_scores([1, 0, 2], [1, 1, 2]).tolist() == [1.0, 0.0, 1.0]
    ds = Dataset.from_frame(
        pd.DataFrame({"id": ["a", "b"], "text": ["x", "y"], "label": ["pos", "neg"]}), "text"
    )
    p = align_predictions({"a": "pos", "b": "pos"}, ds)
    assert example_scores(ds, p).tolist() == [1.0, 0.0]
    with pytest.raises(ParameterError, match="accuracy"):
        example_scores(ds, p, "f1")


def _qa(ids):
    n = len(ids)
    return Dataset.from_frame(
        pd.DataFrame(
            {"id": ids, "question": ["q"] * n, "context": ["c"] * n, "answers": [["a"]] * n}
        ),
        "qa",
        name="toy",
    )


def test_load_predictions_formats(tmp_path):
    ds = _qa(["q1", "q2", "q3"])
    (tmp_path / "squad.json").write_text(json.dumps({"q3": "c", "q1": "a", "q2": "b"}))
    p = load_predictions(tmp_path / "squad.json", ds)
    assert p.name == "squad" and p.values.tolist() == ["a", "b", "c"]
    assert p.ids.tolist() == ["q1", "q2", "q3"]
    pd.DataFrame({"id": ["q2", "q1", "q3"], "prediction": ["b", "", "c"]}).to_csv(
        tmp_path / "m.csv", index=False
    )
    # An empty answer is a valid QA prediction.
    assert load_predictions(tmp_path / "m.csv", ds).values.tolist() == ["", "b", "c"]
    (tmp_path / "m.jsonl").write_text(
        "\n".join(
            json.dumps({"id": i, "answer": v}) for i, v in [("q1", "a"), ("q2", "b"), ("q3", "c")]
        )
    )
    assert load_predictions(tmp_path / "m.jsonl", ds, name="x").name == "x"


def test_load_predictions_classification_names_and_ids(tmp_path):
    ds = Dataset.from_frame(
        pd.DataFrame(
            {"id": [1, 2, 3], "premise": ["p"] * 3, "hypothesis": ["h1", "h2", "h3"],
             "label": ["entailment", "neutral", "contradiction"]}
        ),
        "nli",
    )  # fmt: skip
    pd.DataFrame({"id": [3, 1, 2], "prediction": ["contradiction", 0, "2"]}).to_csv(
        tmp_path / "p.csv", index=False
    )
    p = load_predictions(tmp_path / "p.csv", ds)
    assert p.values.tolist() == [0, 2, 2]
    assert example_scores(ds, p).tolist() == [1.0, 0.0, 1.0]
    # A column named like the gold label is read only when named (issue 19 item 16).
    (tmp_path / "p.csv").write_text((tmp_path / "p.csv").read_text().replace("prediction", "label"))
    with pytest.raises(DataFormatError, match="never read as predictions"):
        load_predictions(tmp_path / "p.csv", ds)
    assert load_predictions(tmp_path / "p.csv", ds, value_field="label").values.tolist() == [
        0,
        2,
        2,
    ]
    pd.DataFrame({"id": [1, 2, 3], "prediction": ["yes", "no", "no"]}).to_csv(
        tmp_path / "bad.csv", index=False
    )
    with pytest.raises(LabelError, match="unknown label 'yes'"):
        load_predictions(tmp_path / "bad.csv", ds)


def test_mismatched_ids_say_how_many(tmp_path):
    ds = _qa([f"q{i}" for i in range(10)])
    preds = {f"q{i}": "a" for i in range(3, 12)}  # q0-q2 missing, q10-q11 extra
    with pytest.raises(SchemaError) as e:
        align_predictions(preds, ds, name="m")
    msg = str(e.value)
    assert "3 of the dataset's 10 id(s) have no prediction" in msg
    assert "2 predicted id(s) are not in the dataset" in msg
    assert "'q0'" in msg and "'q11'" in msg
    pd.DataFrame({"id": ["q1", "q1"], "prediction": ["a", "b"]}).to_csv(
        tmp_path / "dup.csv", index=False
    )
    with pytest.raises(SchemaError, match="several predictions"):
        load_predictions(tmp_path / "dup.csv", ds)
    (tmp_path / "nocol.csv").write_text("id,foo\nq1,a\n")
    with pytest.raises(DataFormatError, match="no prediction column"):
        load_predictions(tmp_path / "nocol.csv", ds)
    with pytest.raises(DataFormatError, match="does not exist"):
        load_predictions(tmp_path / "missing.json", ds)


def test_official_scores_of_the_real_squad_predictions():
    """README: electra 87.00/92.64, bert-base 66.58/76.84, bert-tiny 37.78/50.63."""
    dev = load_dataset(shared_data("squad", "dev-v1.1.json"), "qa")
    folder = shared_data("predictions", "squad")
    expected = {
        "electra-base": (87.00, 92.64),
        "bert-base-uncased": (66.58, 76.84),
        "bert-tiny": (37.78, 50.63),
    }
    for name, (em, f1) in expected.items():
        p = load_predictions(folder / f"{name}.json", dev)
        assert 100 * example_scores(dev, p, "em").mean() == pytest.approx(em, abs=0.005)
        assert 100 * example_scores(dev, p, "f1").mean() == pytest.approx(f1, abs=0.005)
