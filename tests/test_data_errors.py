"""Bad inputs to the data layer: the exception type, and a message that names the culprit.

Every file-based case also checks that a failed load leaves the input file untouched.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import spurious
from spurious.data import Dataset
from spurious.exceptions import (
    DataFormatError,
    EmptyDatasetError,
    LabelError,
    ParameterError,
    SchemaError,
    SpuriousError,
)
from spurious.views import View, get_view

NLI_HEADER = "sentence1\tsentence2\tgold_label\n"


def jsonl(*rows: object) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def nli_row(label: str = "entailment", **extra: object) -> dict[str, object]:
    return {"premise": "A dog runs.", "hypothesis": "An animal moves.", "label": label, **extra}


def check_load_error(
    tmp_path: Path,
    filename: str,
    content: str | bytes,
    exc: type[Exception],
    *needles: str,
    task: str = "nli",
    **kwargs: object,
) -> str:
    """Write ``content``, load it, expect ``exc`` with every needle; file bytes unchanged."""
    path = tmp_path / filename
    data = content.encode("utf-8") if isinstance(content, str) else content
    path.write_bytes(data)
    with pytest.raises(exc) as info:
        spurious.load_dataset(path, task, **kwargs)
    message = str(info.value)
    for needle in needles:
        assert needle in message, f"{needle!r} not in {message!r}"
    assert path.read_bytes() == data
    # Every error is ours, and a built-in (so `except ValueError` keeps working).
    assert isinstance(info.value, SpuriousError)
    assert isinstance(info.value, ValueError)
    return message


# -- paths and formats ------------------------------------------------------------


@pytest.mark.parametrize("name", ["missing.jsonl", "missing.json", "missing.tsv", "missing.pq"])
def test_missing_file(tmp_path, name):
    path = tmp_path / name
    with pytest.raises(DataFormatError, match=r"does not exist") as info:
        spurious.load_dataset(path, "nli")
    assert str(path) in str(info.value)
    assert not path.exists()


@pytest.mark.parametrize("name", ["folder", "folder.jsonl", "folder.json"])
def test_directory_instead_of_file(tmp_path, name):
    path = tmp_path / name
    path.mkdir()
    with pytest.raises(DataFormatError, match="is a directory, not a file") as info:
        spurious.load_dataset(path, "nli")
    assert str(path) in str(info.value)


def test_unknown_suffix(tmp_path):
    msg = check_load_error(tmp_path, "data.xlsx", "x", DataFormatError, "'.xlsx'", "format=")
    assert "jsonl" in msg and "parquet" in msg


def test_unknown_format_argument(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(jsonl(nli_row(), nli_row("neutral")))
    with pytest.raises(ParameterError, match=r"The 'format' parameter must be one of .*'xml'"):
        spurious.load_dataset(path, "nli", format="xml")


def test_wrong_source_type():
    with pytest.raises(ParameterError, match=r"'source' parameter .* Got int instead"):
        spurious.load_dataset(42, "nli")


def test_wrong_task_name(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(jsonl(nli_row(), nli_row("neutral")))
    with pytest.raises(ParameterError, match=r"The 'task' parameter must be one of .*'nil'"):
        spurious.load_dataset(path, "nil")


# -- JSON / JSONL -----------------------------------------------------------------


def test_invalid_json_line_names_line(tmp_path):
    content = jsonl(nli_row(), nli_row("neutral")) + '{"premise": "oops",\n'
    check_load_error(tmp_path, "d.jsonl", content, DataFormatError, "line 3", "not valid JSON")


def test_non_object_json_line(tmp_path):
    content = jsonl(nli_row()) + '["premise", "hypothesis"]\n'
    check_load_error(
        tmp_path, "d.jsonl", content, DataFormatError, "line 2", "JSON object", "got list"
    )


def test_invalid_utf8_in_jsonl_names_line(tmp_path):
    content = jsonl(nli_row()).encode() + b'{"premise": "caf\xe9"}\n'
    check_load_error(
        tmp_path, "d.jsonl", content, DataFormatError, "not valid UTF-8", "line 2", "0xe9"
    )


def test_invalid_json_document(tmp_path):
    check_load_error(
        tmp_path, "d.json", '[{"premise": "a",}]', DataFormatError, "not valid JSON", "line 1"
    )


def test_json_document_not_an_array_of_objects(tmp_path):
    check_load_error(
        tmp_path, "d.json", '{"rows": 3}', DataFormatError, "JSON array of objects", "dict"
    )


@pytest.mark.parametrize("name", ["empty.jsonl", "empty.tsv", "empty.csv"])
def test_empty_file(tmp_path, name):
    check_load_error(tmp_path, name, "", EmptyDatasetError, name)


def test_blank_lines_only_jsonl(tmp_path):
    check_load_error(tmp_path, "blank.jsonl", "\n  \n\n", EmptyDatasetError, "contains no rows")


# -- TSV / CSV --------------------------------------------------------------------


def test_header_only_tsv(tmp_path):
    check_load_error(tmp_path, "h.tsv", NLI_HEADER, EmptyDatasetError, "h.tsv", "no rows")


def test_invalid_utf8_in_tsv_names_line(tmp_path):
    content = (NLI_HEADER + "A dog runs.\tAn animal moves.\tentailment\n").encode()
    content += b"A cat\xff sits.\tA dog sits.\tcontradiction\n"
    check_load_error(tmp_path, "d.tsv", content, DataFormatError, "line 3", "0xff", "UTF-8")


def test_csv_passed_as_tsv(tmp_path):
    content = "premise,hypothesis,label\nA dog runs.,An animal moves.,entailment\n"
    check_load_error(tmp_path, "d.tsv", content, DataFormatError, "comma-separated", "csv")


def test_tsv_row_with_extra_field_names_line(tmp_path):
    content = NLI_HEADER + "a\tb\tneutral\nc\td\tneutral\textra\n"
    check_load_error(tmp_path, "d.tsv", content, DataFormatError, "TSV", "line 3")


def test_csv_unclosed_quote(tmp_path):
    content = 'premise,hypothesis,label\n"a, b",c,neutral\n"unclosed,d,entailment\n'
    check_load_error(tmp_path, "d.csv", content, DataFormatError, "cannot parse as CSV")


# -- Parquet and SQuAD --------------------------------------------------------------


def test_bad_parquet_file(tmp_path):
    check_load_error(
        tmp_path, "d.parquet", b"PAR1 but not really", DataFormatError, "not a readable Parquet"
    )


def test_squad_json_missing_keys(tmp_path):
    squad = {"version": "1.1", "data": [{"title": "T", "paragraphs": [{"context": "c"}]}]}
    check_load_error(
        tmp_path, "squad.json", json.dumps(squad), DataFormatError, "SQuAD", "'qas'", task="qa"
    )


def test_squad_answer_missing_text(tmp_path):
    qa = {"id": "q1", "question": "Who?", "answers": [{"answer_start": 0}]}
    squad = {"data": [{"title": "T", "paragraphs": [{"context": "c", "qas": [qa]}]}]}
    check_load_error(
        tmp_path, "s.json", json.dumps(squad), DataFormatError, "'text'", task="qa", format="squad"
    )


# -- fields and field_map -----------------------------------------------------------


def test_missing_field_names_it_and_lists_fields_found(tmp_path):
    content = jsonl({"premise": "a", "label": "neutral"}, {"premise": "b", "label": "entailment"})
    check_load_error(
        tmp_path,
        "d.jsonl",
        content,
        SchemaError,
        "missing field(s) ['hypothesis']",
        "fields found: ['premise', 'label']",
        "field_map=",
    )


def test_field_map_to_missing_column(tmp_path):
    content = jsonl(nli_row(), nli_row("neutral"))
    check_load_error(
        tmp_path,
        "d.jsonl",
        content,
        SchemaError,
        "'hypothesis'",
        "'h'",
        "fields found: ['premise', 'hypothesis', 'label']",
        field_map={"hypothesis": "h"},
    )


def test_unknown_field_map_key(tmp_path):
    content = jsonl(nli_row(), nli_row("neutral"))
    path = tmp_path / "d.jsonl"
    path.write_text(content)
    with pytest.raises(ParameterError, match=r"'field_map' parameter has an unknown key 'prem'"):
        spurious.load_dataset(path, "nli", field_map={"prem": "premise"})


@pytest.mark.parametrize(
    ("value", "shown"), [(5, "int 5"), (None, "a missing value (null/NaN)"), (["a"], "list ['a']")]
)
def test_non_string_text_names_row(tmp_path, value, shown):
    content = jsonl(nli_row(), nli_row("neutral"), {**nli_row(), "hypothesis": value})
    check_load_error(
        tmp_path, "d.jsonl", content, SchemaError, "row 3", "'hypothesis'", "string", shown
    )


def test_text_nan_in_dataframe_names_row():
    df = pd.DataFrame({"text": ["good", np.nan, "bad"], "label": ["pos", "neg", "neg"]})
    with pytest.raises(
        SchemaError, match=r"row 2: field 'text' must be a string. Got a missing value"
    ):
        Dataset.from_frame(df, "text")


# -- labels -------------------------------------------------------------------------


def test_unknown_label_names_label_and_row(tmp_path):
    content = jsonl(nli_row(), nli_row("neutral"), nli_row("maybe"), nli_row("perhaps"))
    msg = check_load_error(
        tmp_path, "d.jsonl", content, LabelError, "row 3", "unknown label 'maybe'", "entailment"
    )
    assert "2 row(s)" in msg


def test_unknown_label_in_tsv_counts_header_line(tmp_path):
    content = NLI_HEADER + "a\tb\tneutral\nc\td\tentailed\n"
    check_load_error(tmp_path, "d.tsv", content, LabelError, "row 3", "'entailed'")


def test_int_label_out_of_range(tmp_path):
    content = jsonl(nli_row(0), nli_row(1), nli_row(5))
    check_load_error(tmp_path, "d.jsonl", content, LabelError, "row 3", "unknown label 5", "[0, 3)")


def test_fractional_label_is_shown_plainly():
    df = pd.DataFrame({"premise": ["a", "b"], "hypothesis": ["c", "d"], "label": [0.5, 1.0]})
    with pytest.raises(LabelError, match=r"row 1: unknown label 0\.5;"):
        spurious.load_dataset(df, "nli")


def test_single_class(tmp_path):
    content = jsonl(nli_row("neutral"), nli_row("neutral"), nli_row("neutral"))
    check_load_error(tmp_path, "d.jsonl", content, LabelError, "single class ('neutral')", "3 rows")


def test_all_rows_without_gold_label(tmp_path):
    # SNLI writes "-" where the annotators did not agree.
    content = jsonl(
        {"sentence1": "a", "sentence2": "b", "gold_label": "-"},
        {"sentence1": "c", "sentence2": "d", "gold_label": "-"},
    )
    check_load_error(tmp_path, "snli.jsonl", content, EmptyDatasetError, "no rows with a gold")


def test_no_gold_label_when_not_dropping(tmp_path):
    content = jsonl(nli_row(), nli_row("-"), nli_row("neutral"))
    check_load_error(
        tmp_path, "d.jsonl", content, LabelError, "row 2", "no gold label", drop_no_gold=False
    )


def test_duplicate_label_names():
    df = pd.DataFrame({"text": ["a", "b"], "label": ["x", "y"]})
    with pytest.raises(ParameterError, match=r"'label_names' parameter .* \['x', 'x'\]"):
        Dataset.from_frame(df, "text", label_names=["x", "x"])


def test_annotator_labels_not_a_list_names_row(tmp_path):
    content = jsonl(
        nli_row(annotator_labels=["entailment"]), nli_row("neutral", annotator_labels="neutral")
    )
    check_load_error(
        tmp_path, "d.jsonl", content, SchemaError, "row 2", "'annotator_labels'", "list"
    )


# -- ids ----------------------------------------------------------------------------


def test_duplicate_given_ids_name_the_id(tmp_path):
    content = jsonl(nli_row(id="p1"), nli_row("neutral", id="p2"), nli_row(id="p1"))
    check_load_error(
        tmp_path, "d.jsonl", content, SchemaError, "duplicated id", "'p1'", "rows [1, 3]"
    )


def test_missing_given_id_names_row(tmp_path):
    content = jsonl(nli_row(pairID="p1"), nli_row("neutral"))
    check_load_error(tmp_path, "d.jsonl", content, SchemaError, "row 2", "'id' is missing")


# -- QA -----------------------------------------------------------------------------


def test_qa_answers_of_wrong_type_names_row():
    df = pd.DataFrame({"question": ["q1", "q2"], "context": ["c", "c"], "answers": [["a"], [3]]})
    with pytest.raises(SchemaError, match=r"row 2: field 'answers' must be a list of strings"):
        spurious.load_dataset(df, "qa")


# -- Hugging Face -------------------------------------------------------------------


def test_dataset_dict_without_split():
    datasets = pytest.importorskip("datasets")
    part = datasets.Dataset.from_pandas(pd.DataFrame([nli_row(), nli_row("neutral")]))
    dd = datasets.DatasetDict({"train": part, "validation": part})
    with pytest.raises(ParameterError, match=r"'split' parameter is required.*'validation'"):
        spurious.load_dataset(dd, "nli")
    with pytest.raises(ParameterError, match=r"'split' parameter must be one of .*Got 'test'"):
        spurious.load_dataset(dd, "nli", split="test")


# -- views and dataset methods ------------------------------------------------------


@pytest.mark.parametrize(
    ("task", "view", "needle"),
    [
        ("nli", "question_only", "'question_only'"),
        ("nli", ["premise", "premise"], "['premise', 'premise']"),
        ("qa", [], "[]"),
        ("text", ["hypothesis"], "['hypothesis']"),
        ("nli", View("q", ("question",), True), "['question']"),
    ],
)
def test_invalid_views(task, view, needle):
    with pytest.raises(ParameterError) as info:
        get_view(task, view)
    assert needle in str(info.value)
    assert repr(task) in str(info.value)


def test_bad_split_size_and_text_field():
    df = pd.DataFrame({"text": list("abcdefgh"), "label": ["x", "y"] * 4})
    ds = Dataset.from_frame(df, "text")
    with pytest.raises(ParameterError, match=r"'test_size' parameter .* Got 1\.5 instead"):
        ds.split(1.5)
    with pytest.raises(ParameterError, match=r"'field' parameter .* Got 'premise' instead"):
        ds.texts("premise")


def test_failed_dataframe_load_does_not_mutate_the_frame():
    df = pd.DataFrame({"sentence1": ["a", "b"], "sentence2": ["c", "d"], "gold_label": ["x", "y"]})
    before = df.copy()
    with pytest.raises(LabelError, match=re.escape("unknown label 'x'")):
        spurious.load_dataset(df, "nli")
    pd.testing.assert_frame_equal(df, before)
