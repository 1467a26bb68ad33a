"""Known answers from loading real files, in-memory sources, fingerprints, ids and splits.

The real datasets live in ``shared/data`` beside the repository (see its README); tests
that need them skip when it is absent.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import spurious
from spurious.data import Dataset

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
needs_data = pytest.mark.skipif(
    not DATA.is_dir(), reason=f"real datasets not found at {DATA} (shared/data beside the repo)"
)
NLI_LABELS = ("entailment", "neutral", "contradiction")


def toy_nli() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "premise": ["A dog runs, fast.", "A cat sits.", "A man eats.", "Kids play."],
            "hypothesis": ["An animal moves.", "A dog sits.", "A man is eating.", "Nobody plays."],
            "label": ["entailment", "contradiction", "entailment", "contradiction"],
        }
    )


# -- real files ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def snli_dev() -> Dataset:
    return spurious.load_dataset(DATA / "snli" / "dev.jsonl", "nli")


@needs_data
def test_snli_dev_jsonl(snli_dev):
    assert len(snli_dev) == 9842
    assert snli_dev.label_names == NLI_LABELS
    assert Counter(snli_dev.frame["label"]) == {
        "entailment": 3329,
        "neutral": 3235,
        "contradiction": 3278,
    }
    assert snli_dev.frame["label_id"].tolist()[:3] == [
        NLI_LABELS.index(x) for x in snli_dev.frame["label"][:3]
    ]
    first = snli_dev.frame.iloc[0]
    assert first["premise"] == "Two women are embracing while holding to go packages."
    assert first["label"] == "neutral"
    assert snli_dev.ids.dtype == object and len(set(snli_dev.ids)) == 9842
    assert snli_dev.name == "snli/dev"


@needs_data
def test_snli_dev_fingerprint_is_stable_across_loads(snli_dev):
    again = spurious.load_dataset(DATA / "snli" / "dev.jsonl", "nli", name="other name")
    assert again.fingerprint == snli_dev.fingerprint
    np.testing.assert_array_equal(again.ids, snli_dev.ids)


@needs_data
def test_snli_original_schema_head():
    path = DATA / "snli" / "snli_1.0_dev_first1288.jsonl"
    raw = [json.loads(line) for line in path.read_text().splitlines()]
    n_no_gold = sum(r["gold_label"] == "-" for r in raw)
    assert (len(raw), n_no_gold) == (1289, 16)  # the last line has no newline

    ds = spurious.load_dataset(path, "nli")
    assert len(ds) == len(raw) - n_no_gold == 1273
    assert ds.frame.attrs["n_dropped_no_gold"] == 16
    assert Counter(ds.frame["label"]) == {"entailment": 433, "neutral": 421, "contradiction": 419}
    gold = [r for r in raw if r["gold_label"] != "-"]
    # id <- pairID, group <- captionID, premise/hypothesis <- sentence1/sentence2.
    assert ds.ids.tolist() == [r["pairID"] for r in gold]
    assert ds.groups.tolist() == [r["captionID"] for r in gold]
    assert ds.frame["hypothesis"].tolist() == [r["sentence2"] for r in gold]
    lengths = Counter(map(len, ds.frame["annotator_labels"]))
    assert lengths == {5: 1271, 4: 2}  # two SNLI pairs were labelled by four annotators
    first = ds.frame.iloc[0]
    assert first["annotator_labels"] == ["neutral", "entailment", "neutral", "neutral", "neutral"]
    assert all(set(a) <= set(NLI_LABELS) for a in ds.frame["annotator_labels"])
    assert ds.frame["group"].nunique() == 427


@needs_data
@pytest.mark.parametrize(
    ("folder", "rows", "counts"),
    [
        ("original", 200, {"entailment": 74, "neutral": 75, "contradiction": 51}),
        ("revised_combined", 800, {"entailment": 252, "neutral": 250, "contradiction": 298}),
    ],
)
def test_cad_tsv(folder, rows, counts):
    ds = spurious.load_dataset(DATA / "cad_snli" / folder / "dev.tsv", "nli")
    assert len(ds) == rows
    assert Counter(ds.frame["label"]) == counts
    assert ds.frame.iloc[0]["premise"] == "The little boy in jean shorts kicks the soccer ball."
    assert ds.name == f"{folder}/dev"


@needs_data
def test_sst2_tsv_text_task():
    ds = spurious.load_dataset(DATA / "sst2" / "dev.tsv", "text")
    assert len(ds) == 6735
    assert ds.task.name == "text"
    assert ds.label_names == ("0", "1")
    assert Counter(ds.frame["label"]) == {"0": 2994, "1": 3741}
    np.testing.assert_array_equal(ds.labels, ds.frame["label"].astype(int).to_numpy())
    # Trailing spaces and quotes survive: TSV is read without quoting or stripping.
    assert ds.frame.iloc[0]["text"] == "the expressive power of the camera "


@needs_data
def test_mnli_dev_matched():
    ds = spurious.load_dataset(DATA / "mnli" / "dev_matched.jsonl", "nli")
    assert len(ds) == 9815
    assert Counter(ds.frame["label"]) == {
        "entailment": 3479,
        "neutral": 3123,
        "contradiction": 3213,
    }


@needs_data
def test_squad_dev():
    ds = spurious.load_dataset(DATA / "squad" / "dev-v1.1.json", "qa")
    assert len(ds) == 10570
    assert ds.label_names == ()
    assert ds.task.text_fields == ("question", "context")
    assert ds.frame["title"].nunique() == 48
    assert ds.frame["group"].nunique() == 2067  # paragraphs
    first = ds.frame.iloc[0]
    assert first["id"] == "56be4db0acb8001400a502ec"
    assert first["question"] == "Which NFL team represented the AFC at Super Bowl 50?"
    assert first["answers"] == ["Denver Broncos"] * 3
    assert first["answer_starts"] == [177] * 3
    assert first["context"][177 : 177 + len("Denver Broncos")] == "Denver Broncos"
    assert all(isinstance(a, list) and a for a in ds.frame["answers"])
    assert len(set(ds.ids)) == 10570
    with pytest.raises(spurious.exceptions.SchemaError, match="no class labels"):
        _ = ds.labels


# -- in-memory sources --------------------------------------------------------------


def test_pandas_dataframe_with_aliases():
    df = toy_nli().rename(
        columns={"premise": "sentence1", "hypothesis": "sentence2", "label": "gold_label"}
    )
    ds = spurious.load_dataset(df, "nli")
    assert ds.frame[["premise", "hypothesis", "label"]].values.tolist() == toy_nli().values.tolist()
    assert ds.labels.tolist() == [0, 2, 0, 2]
    assert ds.name == "dataframe"
    assert ds.fingerprint == spurious.load_dataset(toy_nli(), "nli").fingerprint


def test_field_map_overrides_aliases():
    df = toy_nli().rename(columns={"premise": "p", "hypothesis": "h", "label": "y"})
    ds = spurious.load_dataset(
        df, "nli", field_map={"premise": "p", "hypothesis": "h", "label": "y"}
    )
    assert ds.fingerprint == spurious.load_dataset(toy_nli(), "nli").fingerprint


def test_hf_dataset_with_class_label_maps_labels_by_name():
    datasets = pytest.importorskip("datasets")
    # A ClassLabel whose order differs from the task's: ints must map through its names.
    names = ["contradiction", "entailment", "neutral"]
    df = toy_nli()
    df["label"] = [names.index(x) for x in df["label"]]
    hf = datasets.Dataset.from_pandas(df).cast_column("label", datasets.ClassLabel(names=names))
    ds = spurious.load_dataset(hf, "nli")
    assert ds.label_names == NLI_LABELS
    assert ds.frame["label"].tolist() == toy_nli()["label"].tolist()
    assert ds.fingerprint == spurious.load_dataset(toy_nli(), "nli").fingerprint


def test_hf_class_label_minus_one_is_no_gold():
    datasets = pytest.importorskip("datasets")
    df = toy_nli()
    df["label"] = [0, 2, -1, 1]  # HF's SNLI writes -1 where there is no gold label
    features = datasets.Features(
        {
            "premise": datasets.Value("string"),
            "hypothesis": datasets.Value("string"),
            "label": datasets.ClassLabel(names=list(NLI_LABELS)),
        }
    )
    hf = datasets.DatasetDict({"validation": datasets.Dataset.from_pandas(df, features=features)})
    ds = spurious.load_dataset(hf, "nli", split="validation")
    assert ds.frame["label"].tolist() == ["entailment", "contradiction", "neutral"]
    assert ds.frame.attrs["n_dropped_no_gold"] == 1


def test_to_hf_round_trip():
    datasets = pytest.importorskip("datasets")
    df = toy_nli()
    df["annotator_labels"] = [["entailment", "neutral"]] * 4
    ds = spurious.load_dataset(df, "nli")
    hf = ds.to_hf()
    assert isinstance(hf, datasets.Dataset)
    assert hf.num_rows == 4
    assert hf["id"] == ds.ids.tolist()
    assert hf["annotator_labels"][0] == ["entailment", "neutral"]
    back = spurious.load_dataset(hf, "nli")
    assert back.fingerprint == ds.fingerprint


def test_qa_from_hf_squad_schema():
    # HF's SQuAD stores answers as {"text": [...], "answer_start": [...]}.
    df = pd.DataFrame(
        {
            "question": ["Who?", "Where?"],
            "context": ["Ann went to Rome.", "Ann went to Rome."],
            "answers": [
                {"text": ["Ann"], "answer_start": [0]},
                {"text": ["Rome", "to Rome"], "answer_start": [12, 9]},
            ],
        }
    )
    ds = spurious.load_dataset(df, "qa")
    assert ds.frame["answers"].tolist() == [["Ann"], ["Rome", "to Rome"]]
    assert ds.frame["answer_starts"].tolist() == [[0], [12, 9]]


def test_qa_field_map_for_answers():
    df = pd.DataFrame({"question": ["Who?"], "context": ["Ann ran."], "gold": [["Ann"]]})
    ds = spurious.load_dataset(df, "qa", field_map={"answers": "gold"})
    assert ds.frame["answers"].tolist() == [["Ann"]]


# -- files written here ---------------------------------------------------------------


def test_parquet_round_trip_matches_dataframe(tmp_path):
    df = toy_nli()
    df["annotator_labels"] = [["entailment"], ["contradiction", "neutral"], [], ["neutral"]]
    path = tmp_path / "toy.parquet"
    df.to_parquet(path)
    from_file = spurious.load_dataset(path, "nli")
    from_frame = spurious.load_dataset(df, "nli")
    assert from_file.fingerprint == from_frame.fingerprint
    assert from_file.name.endswith("/toy")  # parent folder / stem
    assert from_file.frame["annotator_labels"].tolist()[1] == ["contradiction", "neutral"]


def test_csv_with_quoted_commas(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text(
        "premise,hypothesis,label\n"
        '"A dog runs, fast.",An animal moves.,entailment\n'
        '"He said ""hi"", then left.","Nobody spoke, ever.",contradiction\n'
    )
    ds = spurious.load_dataset(path, "nli")
    assert ds.frame["premise"].tolist() == ["A dog runs, fast.", 'He said "hi", then left.']
    assert ds.frame["hypothesis"].tolist()[1] == "Nobody spoke, ever."


def test_same_rows_in_every_format_share_a_fingerprint(tmp_path):
    df = toy_nli()
    df.to_json(tmp_path / "d.jsonl", orient="records", lines=True)
    df.to_json(tmp_path / "d.json", orient="records")
    df.to_csv(tmp_path / "d.csv", index=False)
    df.to_csv(tmp_path / "d.tsv", index=False, sep="\t")
    expected = spurious.load_dataset(df, "nli").fingerprint
    for name in ("d.jsonl", "d.json", "d.csv", "d.tsv"):
        assert spurious.load_dataset(tmp_path / name, "nli").fingerprint == expected, name


def test_jsonl_rows_without_optional_lists(tmp_path):
    # A JSONL file where only some rows carry annotator labels.
    rows = [
        {**toy_nli().iloc[0].to_dict(), "annotator_labels": ["entailment"]},
        toy_nli().iloc[1].to_dict(),
    ]
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ds = spurious.load_dataset(path, "nli")
    assert ds.frame["annotator_labels"].tolist() == [["entailment"], []]


# -- fingerprints and ids ------------------------------------------------------------


def test_fingerprint_changes_with_one_character():
    base = spurious.load_dataset(toy_nli(), "nli").fingerprint
    df = toy_nli()
    df.loc[2, "hypothesis"] = "A man is eating!"
    assert spurious.load_dataset(df, "nli").fingerprint != base
    df = toy_nli()
    df.loc[1, "label"] = "neutral"
    assert spurious.load_dataset(df, "nli").fingerprint != base


def test_fingerprint_ignores_source_row_numbers_and_name():
    a = Dataset.from_frame(toy_nli(), "nli", name="a")
    b = Dataset.from_frame(toy_nli(), "nli", name="b", source_rows=[10, 20, 30, 40])
    assert a.fingerprint == b.fingerprint


def test_fingerprint_depends_on_order():
    df = toy_nli()
    shuffled = df.iloc[[1, 0, 2, 3]].reset_index(drop=True)
    assert (
        spurious.load_dataset(df, "nli").fingerprint
        != spurious.load_dataset(shuffled, "nli").fingerprint
    )


def test_content_ids_are_stable_and_unique_with_exact_duplicates():
    df = pd.concat([toy_nli(), toy_nli().iloc[[0, 0]]], ignore_index=True)
    ds = spurious.load_dataset(df, "nli")
    ids = ds.ids.tolist()
    assert len(set(ids)) == 6
    assert ids[4] == ids[0] + "-1" and ids[5] == ids[0] + "-2"
    assert ids == spurious.load_dataset(df, "nli").ids.tolist()
    # An id depends on the row's content, not its position.
    assert spurious.load_dataset(toy_nli().iloc[::-1], "nli").ids.tolist() == ids[:4][::-1]


def test_given_ids_are_kept_as_strings():
    df = toy_nli()
    df["idx"] = [3, 1, 2, 0]
    ds = spurious.load_dataset(df, "nli")
    assert ds.ids.tolist() == ["3", "1", "2", "0"]


# -- splits ---------------------------------------------------------------------------


def _grouped(n_groups: int = 40, per_group: int = 3) -> Dataset:
    rng = np.random.default_rng(0)
    rows = [
        {
            "premise": f"caption {g}",
            "hypothesis": f"hypothesis {g}-{k}",
            "label": NLI_LABELS[int(rng.integers(3))],
            "captionID": f"c{g}",
        }
        for g in range(n_groups)
        for k in range(per_group)
    ]
    return spurious.load_dataset(pd.DataFrame(rows), "nli")


def test_split_is_seeded_and_keeps_groups_together():
    ds = _grouped()
    train, test = ds.split(0.25, random_state=1)
    again_train, again_test = ds.split(0.25, random_state=1)
    other_train, _ = ds.split(0.25, random_state=2)
    assert train.ids.tolist() == again_train.ids.tolist()
    assert test.ids.tolist() == again_test.ids.tolist()
    assert train.ids.tolist() != other_train.ids.tolist()
    assert set(train.groups).isdisjoint(test.groups)
    assert len(train) + len(test) == len(ds)
    assert len(set(test.groups)) == 10  # a quarter of the 40 groups
    assert train.label_names == ds.label_names


def test_split_without_groups_is_stratified():
    ds = spurious.load_dataset(
        pd.DataFrame({"text": [f"t{i}" for i in range(100)], "label": ["a"] * 80 + ["b"] * 20}),
        "text",
    )
    train, test = ds.split(0.2, random_state=0)
    assert (len(train), len(test)) == (80, 20)
    assert Counter(test.frame["label"]) == {"a": 16, "b": 4}
    assert set(train.ids).isdisjoint(test.ids)


@needs_data
def test_snli_split_keeps_captions_together():
    ds = spurious.load_dataset(DATA / "snli" / "snli_1.0_dev_first1288.jsonl", "nli")
    train, test = ds.split(0.2, random_state=0)
    assert set(train.groups).isdisjoint(test.groups)
    assert len(train) + len(test) == 1273
