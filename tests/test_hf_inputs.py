"""Hugging Face files as inputs (issue 13, items 7 and 8): labels by their stored names.

``datasets`` stores ``ClassLabel`` names in the Arrow schema metadata of the Parquet and
Arrow files it writes and in ``save_to_disk`` folders. Integer labels must be mapped by
those names, never by the task's default order; integer labels without names are mapped
by the default order with a warning that says so. A Hub name gives a clear "hub access
is off" error instead of "does not exist".
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest

import spurious
from spurious.exceptions import DataFormatError, ParameterError
from tests.conftest import shared_data

datasets = pytest.importorskip("datasets", reason="needs the 'hf' extra (pip install datasets)")

NLI_LABELS = ("entailment", "neutral", "contradiction")
#: A ClassLabel order that differs from the default NLI order at every position.
OTHER_ORDER = ["contradiction", "entailment", "neutral"]


@pytest.fixture(autouse=True)
def _quiet_datasets():
    datasets.disable_progress_bars()


def nli_hf(frame: pd.DataFrame, names=OTHER_ORDER):
    """A datasets.Dataset with integer labels under a ClassLabel of ``names``."""
    feats = datasets.Features(
        {
            "premise": datasets.Value("string"),
            "hypothesis": datasets.Value("string"),
            "label": datasets.ClassLabel(names=list(names)),
        }
    )
    ints = [names.index(x) for x in frame["label"]]
    return datasets.Dataset.from_dict(
        {"premise": frame["premise"].tolist(), "hypothesis": frame["hypothesis"].tolist(),
         "label": ints},
        features=feats,
    )  # fmt: skip


@pytest.fixture(scope="module")
def snli() -> pd.DataFrame:
    """SNLI dev (9,842 gold-labelled pairs), or skip without the shared data."""
    return pd.read_json(shared_data("snli", "dev.jsonl"), lines=True)


def _match(ds, expected: pd.Series) -> float:
    return float((ds.frame["label"].to_numpy() == expected.to_numpy()).mean())


def test_hf_parquet_labels_follow_the_stored_class_names(snli, tmp_path, caplog):
    path = tmp_path / "snli.parquet"
    nli_hf(snli).to_parquet(str(path))
    with caplog.at_level(logging.WARNING):
        ds = spurious.load_dataset(path, "nli")
    assert len(ds) == 9842
    assert _match(ds, snli["label"]) == 1.0  # was 0.0: ints mapped by the NLI order
    assert ds.label_names == NLI_LABELS
    assert "assumed" not in caplog.text  # the names came from the file


@pytest.mark.parametrize("writer", ["parquet", "arrow", "save_to_disk"])
def test_every_hf_file_kind_keeps_the_names(writer, tmp_path):
    df = pd.DataFrame(
        {
            "premise": [f"premise {i}" for i in range(9)],
            "hypothesis": [f"hypothesis {i}" for i in range(9)],
            "label": list(NLI_LABELS) * 3,
        }
    )
    hf = nli_hf(df)
    if writer == "parquet":
        path = tmp_path / "d.parquet"
        hf.to_parquet(str(path))
    elif writer == "save_to_disk":
        path = tmp_path / "d"
        hf.save_to_disk(str(path))
    else:
        hf.save_to_disk(str(tmp_path / "d"))
        path = next((tmp_path / "d").glob("*.arrow"))
    ds = spurious.load_dataset(path, "nli")
    assert ds.frame["label"].tolist() == df["label"].tolist()
    assert ds.source.hf_features["label"]["names"] == OTHER_ORDER


def test_save_to_disk_dataset_dict_needs_and_takes_a_split(tmp_path):
    df = pd.DataFrame(
        {"sentence": ["good", "bad", "fine", "awful"], "label": ["pos", "neg", "pos", "neg"]}
    )
    feats = datasets.Features(
        {"sentence": datasets.Value("string"), "label": datasets.ClassLabel(names=["pos", "neg"])}
    )
    train = datasets.Dataset.from_dict(
        {"sentence": df["sentence"].tolist(), "label": [0, 1, 0, 1]}, features=feats
    )
    test = train.select([1, 0])
    datasets.DatasetDict({"train": train, "test": test}).save_to_disk(str(tmp_path / "dd"))

    ds = spurious.load_dataset(tmp_path / "dd", "text", split="test")
    assert ds.frame["text"].tolist() == ["bad", "good"]
    assert ds.frame["label"].tolist() == ["neg", "pos"]
    # No standard order for these names: the ClassLabel's order gives the label ids.
    assert ds.label_names == ("pos", "neg") and ds.labels.tolist() == [1, 0]
    assert ds.name == "dd[test]"
    with pytest.raises(ParameterError, match=r"'split' parameter is required.*\['train', 'test'\]"):
        spurious.load_dataset(tmp_path / "dd", "text")
    with pytest.raises(ParameterError, match="must be one of"):
        spurious.load_dataset(tmp_path / "dd", "text", split="validation")
    with pytest.raises(ParameterError, match="single Dataset"):
        spurious.load_dataset(tmp_path / "dd" / "train", "text", split="train")


def test_integer_labels_without_names_warn_with_the_assumed_mapping(tmp_path, caplog):
    df = pd.DataFrame(
        {"premise": ["a", "b", "c"], "hypothesis": ["x", "y", "z"], "label": [0, 1, 2]}
    )
    df.to_json(tmp_path / "ints.jsonl", orient="records", lines=True)
    with caplog.at_level(logging.WARNING, logger="spurious.data.dataset"):
        ds = spurious.load_dataset(tmp_path / "ints.jsonl", "nli")
    assert "3 label(s) are integers and the data carries no label names" in caplog.text
    assert "0 -> entailment, 1 -> neutral, 2 -> contradiction" in caplog.text
    assert ds.frame["label"].tolist() == list(NLI_LABELS)

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="spurious.data.dataset"):
        named = spurious.load_dataset(tmp_path / "ints.jsonl", "nli", label_names=OTHER_ORDER)
    assert caplog.text == ""
    assert named.frame["label"].tolist() == OTHER_ORDER
    # Names, or integers of a task without a default order, assume nothing.
    with caplog.at_level(logging.WARNING, logger="spurious.data.dataset"):
        spurious.load_dataset(pd.DataFrame({"text": ["a", "b"], "label": [0, 1]}), "text")
    assert caplog.text == ""


@pytest.mark.parametrize("name", ["snli", "stanfordnlp/snli", "nyu-mll/glue"])
def test_hub_name_says_hub_access_is_off(name):
    with pytest.raises(
        DataFormatError, match="hub access is off; pass a local path or allow the network"
    ):
        spurious.load_dataset(name, "nli")


def test_missing_file_with_a_suffix_still_does_not_exist(tmp_path):
    with pytest.raises(DataFormatError, match="does not exist"):
        spurious.load_dataset(tmp_path / "train.jsonl", "nli")


def test_allow_network_reads_a_hub_name_through_datasets(monkeypatch):
    calls = []
    hub = datasets.DatasetDict(
        {"validation": nli_hf(pd.DataFrame({"premise": ["a", "b"], "hypothesis": ["x", "y"],
                                             "label": ["neutral", "contradiction"]}))}
    )  # fmt: skip

    def fake_load_dataset(name, split=None):
        calls.append((name, split))
        return hub[split] if split else hub

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    ds = spurious.load_dataset("snli", "nli", split="validation", allow_network=True)
    assert calls == [("snli", "validation")]
    assert ds.frame["label"].tolist() == ["neutral", "contradiction"]
    assert ds.name == "snli"


def test_source_records_rows_columns_and_generated_ids(tmp_path):
    df = pd.DataFrame(
        {"pairID": ["p0", "p1", "p2"], "sentence1": ["a", "b", "c"],
         "sentence2": ["x", "y", "z"], "gold_label": ["neutral", "-", "entailment"]}
    )  # fmt: skip
    df.to_csv(tmp_path / "d.tsv", sep="\t", index=False)
    ds = spurious.load_dataset(tmp_path / "d.tsv", "nli")
    src = ds.source
    assert src.kind == "file" and src.format == "tsv" and src.n_source_rows == 3
    np.testing.assert_array_equal(src.rows, [0, 2])  # the "-" row is dropped
    assert src.id_column == "pairID"
    assert src.columns["premise"] == "sentence1" and src.columns["label"] == "gold_label"
    np.testing.assert_array_equal(ds.subset([1]).source.rows, [2])
    no_id = spurious.load_dataset(df.drop(columns="pairID"), "nli")
    assert no_id.source.kind == "dataframe" and no_id.source.id_column is None
