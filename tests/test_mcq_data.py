"""The ``mcq`` task: readers for the layouts people have, and clear errors for bad items."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from spurious.data import load_dataset
from spurious.data.synthetic_mcq import make_mcq_artifacts
from spurious.exceptions import LabelError, SchemaError

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "mcq"


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_arc_layout_with_numeric_choice_labels(tmp_path):
    rows = [
        {
            "id": "q1",
            "question": {
                "stem": "Which is a gas?",
                "choices": [
                    {"text": "ice", "label": "1"},
                    {"text": "steam", "label": "2"},
                    {"text": "rock", "label": "3"},
                ],
            },
            "answerKey": "2",
        },
        {
            "id": "q2",
            "question": {
                "stem": "Which is a metal?",
                "choices": [{"text": "iron", "label": "A"}, {"text": "wood", "label": "B"}],
            },
            "answerKey": "A",
        },
    ]
    ds = load_dataset(_jsonl(tmp_path / "arc.jsonl", rows), "mcq")
    assert ds.frame["label_id"].tolist() == [1, 0]
    assert ds.frame["label"].tolist() == ["B", "A"]
    assert ds.label_names == ("A", "B", "C")
    assert ds.frame["options"].tolist() == [["ice", "steam", "rock"], ["iron", "wood"]]
    assert ds.ids.tolist() == ["q1", "q2"]


def test_mmlu_headerless_csv_and_subject_folder(tmp_path):
    (tmp_path / "astronomy_test.csv").write_text(
        'What is the Sun?,a star,a planet,a moon,a comet,A\n"Largest planet, by mass?",Mars,Jupiter,Venus,Earth,B\n'
    )
    (tmp_path / "virology_test.csv").write_text("Which is a virus?,HIV,E. coli,yeast,mold,A\n")
    one = load_dataset(tmp_path / "astronomy_test.csv", "mcq")
    assert one.frame["question"].tolist()[1] == "Largest planet, by mass?"
    assert one.frame["label_id"].tolist() == [0, 1]
    folder = load_dataset(tmp_path, "mcq")
    assert folder.frame["group"].tolist() == ["astronomy", "astronomy", "virology"]
    assert folder.ids.tolist() == ["astronomy/1", "astronomy/2", "virology/1"]


@pytest.mark.parametrize(
    ("frame", "field_map", "options", "gold"),
    [
        # HF: choices list + answer index; PIQA: sol1/sol2; SWAG/HellaSwag: endings + "2".
        (
            {"question": ["q"], "choices": [["a", "b", "c"]], "answer": [2]},
            None,
            ["a", "b", "c"],
            2,
        ),
        (
            {"goal": ["open"], "sol1": ["twist"], "sol2": ["bite"], "label": [1]},
            None,
            ["twist", "bite"],
            1,
        ),
        (
            {"ctx": ["He runs"], "endings": [["fast", "slow", "up", "down"]], "label": ["2"]},
            None,
            ["fast", "slow", "up", "down"],
            2,
        ),
        ({"stem": ["q"], "options": [["x", "y"]], "answer": ["b"]}, None, ["x", "y"], 1),
        (
            {
                "question": ["q"],
                "choices": [{"text": ["x", "y"], "label": ["A", "B"]}],
                "answerKey": ["B"],
            },
            None,
            ["x", "y"],
            1,
        ),
        (
            {"q": ["q"], "o1": ["x"], "o2": ["y"], "gold": ["A"]},
            {"question": "q", "options": "o1,o2", "label": "gold"},
            ["x", "y"],
            0,
        ),
    ],
)
def test_hugging_face_layouts(frame, field_map, options, gold):
    ds = load_dataset(pd.DataFrame(frame), "mcq", field_map=field_map)
    assert ds.frame["options"].iloc[0] == options
    assert ds.frame["label_id"].iloc[0] == gold


@pytest.mark.parametrize(
    ("frame", "error", "match"),
    [
        (
            {"question": ["q"], "options": [["x", "y"]], "label": ["C"]},
            LabelError,
            r"row 1: gold answer 'C' is outside the item's 2 options",
        ),
        ({"question": ["q"], "options": [["x", "y"]], "label": [5]}, LabelError, r"outside"),
        (
            {"question": ["q"], "options": [["x"]], "label": [0]},
            SchemaError,
            r"row 1: an item needs 2 to 10 options\. Got 1",
        ),
        (
            {"question": ["q"], "options": [["x", ""]], "label": [0]},
            SchemaError,
            r"option B must be a non-empty string",
        ),
        (
            {"question": ["q"], "options": ["x"], "label": [0]},
            SchemaError,
            r"'options' must be a list",
        ),
        ({"question": ["q"], "answer": [0]}, SchemaError, r"has no options"),
    ],
)
def test_bad_items_are_clear_errors(frame, error, match):
    with pytest.raises(error, match=match):
        load_dataset(pd.DataFrame(frame), "mcq")


def test_duplicate_options_drop_the_item_loudly_or_raise(caplog):
    frame = pd.DataFrame(
        {"question": ["q1", "q2"], "options": [["x", "x ", "y"], ["Rr", "rr"]], "label": [0, 1]}
    )
    with caplog.at_level(logging.INFO):
        ds = load_dataset(frame, "mcq")
    assert len(ds) == 1 and ds.frame["options"].iloc[0] == ["Rr", "rr"]  # case counts
    assert "dropped 1 item(s) whose options repeat a text" in caplog.text
    assert ds.frame.attrs["n_dropped_duplicate_options"] == 1  # the run warns with it
    with pytest.raises(SchemaError, match="options A and B are the same text"):
        load_dataset(frame, "mcq", drop_no_gold=False)


def test_fingerprint_sees_the_options():
    a = pd.DataFrame({"question": ["q"] * 2, "options": [["x", "y"], ["u", "v"]], "label": [0, 1]})
    b = a.assign(options=[["x", "y"], ["u", "w"]])
    assert load_dataset(a, "mcq").fingerprint != load_dataset(b, "mcq").fingerprint
    assert load_dataset(a, "mcq").ids.tolist() != load_dataset(b, "mcq").ids.tolist()


@pytest.mark.skipif(not SHARED.exists(), reason="../shared/data/mcq is not beside the checkout")
def test_real_benchmarks_load():
    arc = load_dataset(SHARED / "arc_challenge" / "test.jsonl", "mcq")
    assert len(arc) == 1172 and set(arc.frame["options"].map(len)) == {3, 4, 5}
    csqa = load_dataset(SHARED / "commonsenseqa" / "dev.jsonl", "mcq")
    assert len(csqa) == 1221 - 24  # 24 items repeat an option (dropped with a warning)
    mmlu = load_dataset(SHARED / "mmlu" / "dev", "mcq")
    assert len(mmlu) == 285 - 1 and mmlu.frame["group"].nunique() == 57  # one repeats an option


@pytest.mark.parametrize("artifact", ["length", "token", "position", "none"])
def test_synthetic_items_plant_what_they_say(artifact):
    s = make_mcq_artifacts(n=200, n_options=(3, 5), artifact=artifact, artifact_rate=1.0)
    f = s.dataset.frame
    gold = [o[y] for o, y in zip(f["options"], f["label_id"], strict=True)]
    if artifact == "length":
        assert all(len(g) == max(map(len, o)) for g, o in zip(gold, f["options"], strict=True))
    if artifact == "token":
        assert all(g.endswith(" certainly") for g in gold)
    if artifact == "position":
        assert (f["label_id"] == 0).all()
    assert set(f["options"].map(len)) == {3, 4, 5}


@pytest.mark.parametrize("suffix", ["jsonl", "csv", "tsv", "parquet"])
def test_kept_items_round_trip_in_every_format(tmp_path, suffix):
    """AFLite's --write-filtered on MC items: options (lists) and ARC's nested question."""
    from spurious.actions.filter import write_rows

    rows = [
        {"id": f"q{i}", "question": {"stem": f"Which {i}?", "choices": [
            {"text": "red", "label": "A"}, {"text": "blue, or green", "label": "B"}]},
         "answerKey": "AB"[i % 2]}
        for i in range(6)
    ]  # fmt: skip
    ds = load_dataset(_jsonl(tmp_path / "arc.jsonl", rows), "mcq")
    keep = np.arange(6) % 3 != 0
    out = write_rows(ds, keep, tmp_path / f"kept.{suffix}")
    back = load_dataset(out, "mcq")
    assert back.ids.tolist() == ds.ids[keep].tolist()
    assert back.frame["options"].tolist() == ds.frame["options"][keep].tolist()
    assert back.frame["label_id"].tolist() == ds.frame["label_id"][keep].tolist()


def test_kept_items_of_an_mmlu_folder(tmp_path):
    from spurious.actions.filter import write_rows

    folder = tmp_path / "mmlu"
    folder.mkdir()
    (folder / "astronomy_test.csv").write_text(
        "Sun?,star,planet,moon,comet,A\nMoon?,star,planet,moon,comet,C\n"
    )
    (folder / "virology_test.csv").write_text("Virus?,HIV,yeast,mold,fern,A\n")
    ds = load_dataset(folder, "mcq")
    out = write_rows(ds, np.array([True, False, True]), tmp_path / "kept.jsonl")
    back = load_dataset(out, "mcq")
    assert back.ids.tolist() == ["astronomy/1", "virology/1"]
    assert back.frame["group"].tolist() == ["astronomy", "virology"]
