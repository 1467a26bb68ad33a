"""Filtered and resampled outputs are drop-in replacements for the input (issue 13, item 9).

Same column names (``sentence`` stays ``sentence``), same value types (integer labels
stay integers), same Hugging Face features (``ClassLabel`` included) and container type
(a DatasetDict comes back as one); an ``id`` column is added only when the input had none.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from spurious import load_dataset
from spurious.actions.filter import filter_source, write_filtered
from spurious.actions.resample import resample_file
from spurious.exceptions import DataFormatError, ParameterError
from spurious.results import DetectorResult
from tests.conftest import shared_data

NLI = ["entailment", "neutral", "contradiction"]


def flagged(ds, flags) -> DetectorResult:
    return DetectorResult(
        "aflite", pd.DataFrame({"id": ds.ids, "is_aflite_issue": np.asarray(flags, bool)}), {}
    )


def every_third(ds) -> DetectorResult:
    return flagged(ds, np.arange(len(ds)) % 3 == 0)


@pytest.fixture
def sst_tsv(tmp_path):
    """SST-2-style TSV: ``sentence`` and integer ``label``, no id column."""
    path = tmp_path / "train.tsv"
    pd.DataFrame(
        {"sentence": [f"a {'good' if i % 2 else 'bad'} film {i}" for i in range(9)],
         "label": [i % 2 for i in range(9)]}
    ).to_csv(path, sep="\t", index=False)  # fmt: skip
    return path


def test_tsv_keeps_its_columns_and_integer_labels(sst_tsv, tmp_path):
    ds = load_dataset(sst_tsv, "text")
    assert "text" in ds.frame  # canonical inside ...
    res = every_third(ds)
    out = write_filtered(ds, res, tmp_path / "kept.tsv")
    lines = out.read_text().splitlines()
    assert lines[0] == "id\tsentence\tlabel"  # ... the input's names outside, + id
    back = pd.read_csv(out, sep="\t")
    assert back["label"].dtype.kind == "i"
    assert back["sentence"].tolist() == [f"a {'good' if i % 2 else 'bad'} film {i}"
                                         for i in range(9) if i % 3]  # fmt: skip
    assert back["id"].tolist() == [i for j, i in enumerate(ds.ids) if j % 3]
    plain = write_filtered(ds, res, tmp_path / "plain.tsv", add_id=False)
    assert plain.read_text().splitlines()[0] == "sentence\tlabel"
    assert plain.read_text().splitlines()[1] == "a good film 1\t1"
    # Reloading the output gives the kept rows with the same ids.
    assert load_dataset(out, "text").ids.tolist() == back["id"].tolist()


def test_tsv_to_jsonl_keeps_names_and_makes_labels_integers(sst_tsv, tmp_path):
    ds = load_dataset(sst_tsv, "text")
    out = write_filtered(ds, every_third(ds), tmp_path / "kept.jsonl", add_id=False)
    first = json.loads(out.read_text().splitlines()[0])
    assert first == {"sentence": "a good film 1", "label": 1}


def test_cad_tsv_keeps_sentence1_sentence2_gold_label(tmp_path):
    src = shared_data("cad_snli", "original", "dev.tsv")
    ds = load_dataset(src, "nli")
    out = write_filtered(ds, every_third(ds), tmp_path / "dev_kept.tsv")
    header = out.read_text(encoding="utf-8").splitlines()[0].split("\t")
    raw_header = src.read_text(encoding="utf-8").splitlines()[0].split("\t")
    assert header == ["id", *raw_header]  # CAD has no id column
    back = pd.read_csv(out, sep="\t", dtype=str, keep_default_na=False, quoting=3)
    raw = pd.read_csv(src, sep="\t", dtype=str, keep_default_na=False, quoting=3)
    kept = raw.iloc[[i for i in range(len(raw)) if i % 3]].reset_index(drop=True)
    pd.testing.assert_frame_equal(back.drop(columns="id"), kept)


def test_jsonl_records_are_written_unchanged(tmp_path):
    rows = [
        {"pairID": f"p{i}", "sentence1": f"s{i}", "sentence2": f"h{i}", "label": i % 3,
         **({"genre": "fiction"} if i % 2 else {})}
        for i in range(9)
    ]  # fmt: skip
    src = tmp_path / "nli.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ds = load_dataset(src, "nli", label_names=NLI)
    out = write_filtered(ds, every_third(ds), tmp_path / "kept.jsonl")
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert got == [r for i, r in enumerate(rows) if i % 3]  # no id added: pairID is one


def test_dataframe_input_comes_back_as_its_own_rows():
    df = pd.DataFrame(
        {"sentence": ["good", "bad", "fine", "dull"], "label": np.array([1, 0, 1, 0], np.int8)},
        index=[10, 11, 12, 13],
    )
    ds = load_dataset(df, "text")
    out = filter_source(ds, flagged(ds, [False, True, False, False]))
    assert out.columns.tolist() == ["id", "sentence", "label"]
    assert out.index.tolist() == [10, 12, 13]
    assert out["label"].dtype == np.int8
    pd.testing.assert_frame_equal(out.drop(columns="id"), df.loc[[10, 12, 13]])


def test_changed_input_is_refused(sst_tsv, tmp_path):
    ds = load_dataset(sst_tsv, "text")
    sst_tsv.write_text(sst_tsv.read_text().replace("film 4", "movie 4"))
    with pytest.raises(DataFormatError, match="changed since it was loaded"):
        write_filtered(ds, every_third(ds), tmp_path / "kept.tsv")


def test_in_memory_dataset_has_no_input_form():
    from spurious.data.synthetic import make_nli_artifacts

    ds = make_nli_artifacts(n=30, random_state=0).dataset
    with pytest.raises(ParameterError, match="no recorded input"):
        filter_source(ds, every_third(ds))


# -- Hugging Face ------------------------------------------------------------------------


@pytest.fixture
def hf_dict():
    datasets = pytest.importorskip("datasets")
    datasets.disable_progress_bars()
    feats = datasets.Features(
        {
            "premise": datasets.Value("string"),
            "hypothesis": datasets.Value("string"),
            "label": datasets.ClassLabel(names=["contradiction", "entailment", "neutral"]),
        }
    )

    def split(n, offset):
        return datasets.Dataset.from_dict(
            {"premise": [f"p{offset + i}" for i in range(n)],
             "hypothesis": [f"h{offset + i}" for i in range(n)], "label": [i % 3 for i in range(n)]},
            features=feats,
        )  # fmt: skip

    return datasets.DatasetDict({"train": split(12, 0), "validation": split(6, 100)})


def test_hf_dataset_dict_comes_back_as_one_with_features(hf_dict):
    datasets = pytest.importorskip("datasets")
    ds = load_dataset(hf_dict, "nli", split="train")
    out = filter_source(ds, every_third(ds))
    assert isinstance(out, datasets.DatasetDict)
    assert list(out) == ["train", "validation"]
    assert out["validation"] is hf_dict["validation"]  # other splits untouched
    assert out["train"].num_rows == 8
    assert out["train"].features["label"] == hf_dict["train"].features["label"]  # ClassLabel
    assert out["train"].column_names == ["id", "premise", "hypothesis", "label"]
    assert out["train"]["label"] == [i % 3 for i in range(12) if i % 3]
    single = load_dataset(hf_dict["train"], "nli")
    kept = filter_source(single, every_third(single), add_id=False)
    assert isinstance(kept, datasets.Dataset) and kept.features == hf_dict["train"].features


def test_save_to_disk_folder_round_trips_as_a_dataset_dict(hf_dict, tmp_path):
    datasets = pytest.importorskip("datasets")
    hf_dict.save_to_disk(str(tmp_path / "in"))
    ds = load_dataset(tmp_path / "in", "nli", split="train")
    out = write_filtered(ds, every_third(ds), tmp_path / "out", format="hf")
    back = datasets.load_from_disk(str(out))
    assert isinstance(back, datasets.DatasetDict) and list(back) == ["train", "validation"]
    assert back["train"].features["label"] == hf_dict["train"].features["label"]
    assert back["validation"].num_rows == 6 and back["train"].num_rows == 8
    again = load_dataset(out, "nli", split="train")
    assert again.frame["label"].tolist() == [x for j, x in enumerate(ds.frame["label"]) if j % 3]
    assert again.ids.tolist() == [i for j, i in enumerate(ds.ids) if j % 3]


def test_hf_parquet_keeps_its_class_label_metadata(hf_dict, tmp_path):
    hf_dict["train"].to_parquet(str(tmp_path / "train.parquet"))
    ds = load_dataset(tmp_path / "train.parquet", "nli")
    out = write_filtered(ds, every_third(ds), tmp_path / "kept.parquet")
    meta = json.loads(pq.read_schema(out).metadata[b"huggingface"])
    names = meta["info"]["features"]["label"]["names"]
    assert names == ["contradiction", "entailment", "neutral"]
    assert pq.read_table(out).column("label").type.bit_width == 64  # still integers
    back = load_dataset(out, "nli")
    expected = [ds.frame["label"][i] for i in range(12) if i % 3]
    assert back.frame["label"].tolist() == expected


# -- RESAM -------------------------------------------------------------------------------


def test_resample_tsv_keeps_columns_and_integer_labels(sst_tsv, tmp_path):
    attr = np.array([0.0] * 7 + [5.0] * 2)
    resample_file(sst_tsv, tmp_path / "out.tsv", task="text", threshold=1, attribute=attr)
    out = pd.read_csv(tmp_path / "out.tsv", sep="\t")
    assert out.columns.tolist() == ["sentence", "label"]  # no id column added
    assert out["label"].dtype.kind == "i" and len(out) == 14


def test_resample_hf_parquet_keeps_class_label_metadata(hf_dict, tmp_path):
    path = tmp_path / "train.parquet"
    hf_dict["train"].to_parquet(str(path))
    attr = np.array([0.0] * 9 + [5.0] * 3)
    resample_file(path, tmp_path / "out.parquet", task="nli", threshold=1, attribute=attr)
    schema = pq.read_schema(tmp_path / "out.parquet")
    meta = json.loads(schema.metadata[b"huggingface"])
    assert meta["info"]["features"]["label"]["_type"] == "ClassLabel"
    back = load_dataset(tmp_path / "out.parquet", "nli")
    assert len(back) == 18
    src = load_dataset(path, "nli")
    assert back.frame["label"].tolist()[:12] == src.frame["label"].tolist()
