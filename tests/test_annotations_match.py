"""Annotation files matched to a dataset by id or by text (issue 19, item 17).

Real data: the first 1,288 lines of the original SNLI dev file carry five annotator
labels and SNLI's pairID; the shared SNLI dev copy has neither ids nor annotations, so
its rows get content-hash ids and only the texts can match. ChaosNLI's layout (``uid``,
``label_counter`` with label initials, texts under ``example``) is written from the same
lines. A file that matches too little is refused instead of giving a silent NaN.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
from click.testing import CliRunner

from spurious import load_dataset
from spurious.cli import main
from spurious.data.annotations import match_annotations, read_annotations
from spurious.exceptions import ParameterError, SchemaError
from spurious.inputs import load_inputs
from tests.conftest import shared_data

ORIGINAL = ("snli", "snli_1.0_dev_first1288.jsonl")
# The file holds 1,289 lines despite its name; the 16 with gold label "-" are not in the copy.
N_LINES, N_NO_GOLD = 1289, 16


@pytest.fixture(scope="module")
def snli_dev():
    return load_dataset(shared_data("snli", "dev.jsonl"), "nli")


@pytest.fixture(scope="module")
def original_lines():
    text = shared_data(*ORIGINAL).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def chaos_file(original_lines, tmp_path_factory):
    """The same annotations in ChaosNLI's layout, keyed by pairID."""
    path = tmp_path_factory.mktemp("chaos") / "chaosNLI_snli.jsonl"
    with path.open("w") as fh:
        for r in original_lines:
            counter = Counter(lab[0] for lab in r["annotator_labels"])
            fh.write(json.dumps({
                "uid": r["pairID"], "label_counter": dict(counter),
                "example": {"uid": r["pairID"], "premise": r["sentence1"],
                            "hypothesis": r["sentence2"]},
            }) + "\n")  # fmt: skip
    return path


def test_original_snli_annotations_match_the_id_less_copy_by_text(snli_dev, original_lines):
    m = match_annotations(shared_data(*ORIGINAL), snli_dev)
    assert m.by == "text" and m.n_file == N_LINES and m.n_matched == N_LINES - N_NO_GOLD
    assert "1,273 of the 1,289 annotated examples" in m.summary
    # Known answers: a matched row carries exactly its line's five labels.
    first = original_lines[0]
    pairs = zip(snli_dev.frame["premise"], snli_dev.frame["hypothesis"], strict=True)
    row = next(
        k for k, pair in enumerate(pairs) if pair == (first["sentence1"], first["sentence2"])
    )
    assert m.counts[row] == {k: float(v) for k, v in Counter(first["annotator_labels"]).items()}
    assert sum(m.counts[row].values()) == 5


@pytest.mark.parametrize(
    ("data", "by"),
    [(("snli", "dev.jsonl"), "text"), (ORIGINAL, "id")],  # content-hash ids vs pairID ids
)
def test_chaosnli_layout_matches_by_text_or_by_id(data, by, chaos_file, original_lines):
    ds = load_dataset(shared_data(*data), "nli")
    m = match_annotations(chaos_file, ds)
    assert m.by == by and m.n_matched == N_LINES - N_NO_GOLD
    names = set(ds.label_names)
    assert all(set(c) <= names for c in m.counts if c)  # initials became label names
    expected = sum(len(r["annotator_labels"]) for r in original_lines if r["gold_label"] != "-")
    assert sum(sum(c.values()) for c in m.counts if c) == expected


@pytest.mark.parametrize(
    ("rows", "min_match", "error"),
    [
        ("no_texts_other_ids", 0.5, r"only 0 of the file's 4 .*by id 0; by text: the file has none"),
        ("no_texts_other_ids", 0.0, r"only 0 of the file's 4"),  # nothing matched: never silent
        ("half_known", 0.9, r"only 2 of the file's 4 .* fewer than min_match=0.9"),
        ("half_known", 0.5, None),
    ],
)  # fmt: skip
def test_too_few_matches_are_refused_with_the_counts(rows, min_match, error, snli_dev, tmp_path):
    ids = ["zz1", "zz2", "zz3", "zz4"]
    if rows == "half_known":
        ids[:2] = snli_dev.ids[:2].tolist()
    path = tmp_path / "ann.jsonl"
    path.write_text(
        "".join(json.dumps({"id": i, "annotator_labels": ["neutral"] * 3}) + "\n" for i in ids)
    )
    if error is None:
        m = match_annotations(path, snli_dev, min_match=min_match)
        assert m.by == "id" and m.n_matched == 2 and m.n_annotated == 2
    else:
        with pytest.raises(SchemaError, match=error):
            match_annotations(path, snli_dev, min_match=min_match)


def test_parameters_and_labels_are_checked(snli_dev, tmp_path):
    path = tmp_path / "ann.jsonl"
    path.write_text(json.dumps({"id": "a", "label_counter": {"x": 3}}) + "\n")
    with pytest.raises(ValueError, match=r"label 'x' is not one of"):
        read_annotations(path, snli_dev.label_names)
    with pytest.raises(ParameterError, match="'min_match' parameter"):
        match_annotations(path, snli_dev, min_match=1.5)
    with pytest.raises(ParameterError, match="'by' parameter"):
        match_annotations(path, snli_dev, by="order")


def test_run_inputs_attach_annotations_and_say_how_many_matched(chaos_file):
    inputs = {"data": str(shared_data("snli", "dev.jsonl")), "task": "nli",
              "annotations": str(chaos_file)}  # fmt: skip
    ctx = load_inputs(inputs, progress=False)
    labels = ctx.target.frame["annotator_labels"]
    assert int(labels.map(len).gt(0).sum()) == N_LINES - N_NO_GOLD
    assert any("1,273 of the 1,289 annotated examples" in w for w in ctx.warnings)
    with pytest.raises(SchemaError, match="min_match=1"):
        load_inputs({**inputs, "annotations_min_match": 1.0}, progress=False)


def test_fairness_command_refuses_unmatched_annotations_before_any_work(tmp_path):
    data = shared_data("cad_snli", "original", "dev.tsv")
    ev = shared_data("cad_snli", "original", "test.tsv")
    ann = tmp_path / "ann.jsonl"
    ann.write_text(json.dumps({"id": "nope", "annotator_labels": ["neutral"]}) + "\n")
    preds = tmp_path / "m.jsonl"
    ids = load_dataset(ev, "nli").ids
    preds.write_text("".join(json.dumps({"id": i, "prediction": 0}) + "\n" for i in ids))
    res = CliRunner().invoke(main, ["fairness", str(data), "--task", "nli", "--eval", str(ev),
                                    "--predictions", str(preds), "--annotations", str(ann),
                                    "--out", str(tmp_path / "run")])  # fmt: skip
    assert res.exit_code == 2
    assert "only 0 of the file's 1 annotated example(s)" in res.output
    assert not (tmp_path / "run" / "manifest.json").exists()


def test_api_attaches_annotations_to_an_in_memory_dataset(snli_dev, chaos_file):
    import spurious

    with pytest.raises(SchemaError, match="min_match=1"):
        spurious.run(snli_dev, annotations=chaos_file, annotations_min_match=1.0,
                     analyses=["prediction_bias"], progress=False)  # fmt: skip
    run = spurious.run(snli_dev, annotations=chaos_file, analyses=["prediction_bias"],
                       progress=False)  # fmt: skip
    labels = run.context.train.frame["annotator_labels"]
    assert int(labels.map(len).gt(0).sum()) == N_LINES - N_NO_GOLD


def test_fairness_refuses_annotations_that_match_no_example(tmp_path):
    """The analysis' own ``annotations`` parameter goes through the same matching: a file
    keyed by ids the data does not have is refused instead of giving agreement NaN."""
    from spurious.context import RunContext
    from spurious.data.synthetic import make_nli_artifacts
    from spurious.evaluate.fairness.analysis import Fairness
    from spurious.exceptions import SpuriousError

    ds = make_nli_artifacts(n=60, random_state=0).dataset
    path = tmp_path / "ann.jsonl"
    rows = [{"id": f"other-{i}", "annotator_labels": ["neutral"] * 3} for i in range(20)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(SpuriousError, match="match"):
        Fairness(annotations=str(path))._annotation_counts(RunContext(ds, ds, progress=False))
