"""Inputs are regular files of a bounded size, and text is read as JSON means it (issue 26,
items 10 and 17).

A FIFO blocks whoever opens it until a writer comes, ``/dev/zero`` never ends, a file of
many gigabytes is read whole: every input (DATA, --eval, --predictions, --features-npy,
--ids, --attributes, --annotations, --config) is refused before it is opened, in one line
naming the argument, exit 2, no run folder, inputs untouched. A ``save_to_disk`` folder's
``state.json`` may only name files inside the folder. JSONL lines end at ``\\n`` only
(U+2028 and U+0085 are valid raw inside a JSON string), and the train/eval overlap
compares texts in Unicode NFC.
"""

from __future__ import annotations

import json
import os
import signal
import unicodedata

import numpy as np
import pytest
from click.testing import CliRunner

from spurious.cli import main
from spurious.data.synthetic import make_nli_artifacts
from spurious.exceptions import DataFormatError, FeatureError, ParameterError

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs POSIX FIFOs")

FAST = ["--partitions", "4", "--max-rounds", "1", "--features", "bow"]


@pytest.fixture(autouse=True)
def no_hang():
    """A regression that blocks on a FIFO fails after 30 s instead of hanging the suite."""

    def fail(signum, frame):
        raise TimeoutError("blocked reading an input: a FIFO or device was opened")

    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("bounds")
    train, dev = make_nli_artifacts(n=200, artifact_rate=0.9, random_state=3).dataset.split(0.3)
    for name, ds in (("train", train), ("dev", dev)):
        ds.frame[["id", "premise", "hypothesis", "label"]].to_json(
            d / f"{name}.jsonl", orient="records", lines=True
        )
    np.save(d / "X.npy", np.zeros((len(train), 4), dtype=np.float32))
    (d / "ids.txt").write_text("\n".join(train.ids) + "\n")
    (d / "preds.jsonl").write_text(
        "".join(json.dumps({"id": i, "prediction": "neutral"}) + "\n" for i in dev.ids)
    )
    (d / "config.json").write_text(
        json.dumps(
            {
                "inputs": {"data": str(d / "train.jsonl"), "task": "nli"},
                "analyses": {"partial_input": {"n_folds": 2}},
            }
        )
    )
    os.mkfifo(d / "pipe.json")
    os.mkfifo(d / "pipe.npy")
    os.mkfifo(d / "pipe.txt")
    os.mkfifo(d / "pipe.jsonl")
    (d / "folder.json").mkdir()
    # A save_to_disk folder whose state.json names a file outside it.
    hf = d / "hf"
    hf.mkdir()
    (hf / "state.json").write_text(json.dumps({"_data_files": [{"filename": "../X.npy"}]}))
    (hf / "dataset_info.json").write_text("{}")
    return d


def _snapshot(d):
    # Regular files only: reading the FIFOs would block.
    return {p: p.read_bytes() for p in d.rglob("*") if p.is_file()}


TRAIN = "{d}/train.jsonl"
AUDIT = ["audit", "{d}/dev.jsonl", "--task", "nli", "--only", "prediction_bias"]
BAD = [
    # (argv, the argument the line names, what it says)
    (["leakage", "{d}/pipe.jsonl", "--task", "nli"], "DATA", "FIFO"),
    (["leakage", "/dev/zero", "--task", "nli", "--format", "jsonl"], "DATA", "character device"),
    (["leakage", TRAIN, "--task", "nli", "--eval", "{d}/pipe.jsonl"], "--eval", "FIFO"),
    (["aflite", TRAIN, "--task", "nli", *FAST, "--features-npy", "{d}/pipe.npy"],
     "--features-npy", "FIFO"),
    (["aflite", TRAIN, "--task", "nli", *FAST, "--features-npy", "/dev/zero"],
     "--features-npy", "character device"),
    (["aflite", TRAIN, "--task", "nli", *FAST, "--features-npy", "{d}/X.npy", "--ids",
      "{d}/pipe.txt"], "--ids", "FIFO"),
    ([*AUDIT, "--predictions", "{d}/pipe.json"], "--predictions", "FIFO"),
    ([*AUDIT, "--predictions", "/dev/zero"], "--predictions", "character device"),
    ([*AUDIT, "--predictions", "{d}/folder.json"], "--predictions", "is a directory"),
    ([*AUDIT, "--attributes", "{d}/pipe.jsonl"], "--attributes", "FIFO"),
    ([*AUDIT, "--annotations", "{d}/pipe.jsonl"], "--annotations", "FIFO"),
    (["run", "--config", "{d}/pipe.json"], "--config", "FIFO"),
    (["leakage", "{d}/hf", "--task", "nli"], "state.json", "outside the dataset folder"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "name", "message"), BAD, ids=[f"case{i}" for i in range(len(BAD))]
)
def test_special_inputs_are_refused_before_anything(files, tmp_path, args, name, message):
    before = _snapshot(files)
    out = tmp_path / "run"
    argv = [a.format(d=files) for a in args]
    r = CliRunner().invoke(main, [*argv, "--out", str(out)])
    assert r.exit_code == 2, r.output
    assert r.output.strip().startswith("error:") and len(r.output.strip().splitlines()) == 1
    assert name in r.output and message in r.output, r.output
    assert not out.exists()
    assert _snapshot(files) == before


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (["leakage", TRAIN, "--task", "nli"], "DATA"),
        ([*AUDIT, "--predictions", "{d}/preds.jsonl"], "--predictions"),
        (["run", "--config", "{d}/config.json"], "--config"),
    ],
)
def test_a_file_over_the_limit_is_refused_with_the_way_out(files, tmp_path, args, name):
    before = _snapshot(files)
    out = tmp_path / "run"
    argv = [a.format(d=files) for a in args]
    r = CliRunner().invoke(
        main, [*argv, "--out", str(out)], env={"SPURIOUS_MAX_INPUT_BYTES": "100"}
    )
    assert r.exit_code == 2, r.output
    assert r.output.strip().startswith("error:") and len(r.output.strip().splitlines()) == 1
    assert name in r.output and "more than the 100 bytes" in r.output, r.output
    assert "SPURIOUS_MAX_INPUT_BYTES" in r.output
    assert not out.exists()
    assert _snapshot(files) == before


def test_the_limit_can_be_raised_and_is_checked(files, tmp_path, monkeypatch):
    from spurious.data import load_dataset
    from spurious.utils.io import max_input_bytes

    monkeypatch.setenv("SPURIOUS_MAX_INPUT_BYTES", "1M")
    assert max_input_bytes("data") == 1 << 20
    assert len(load_dataset(files / "train.jsonl", "nli")) == 140
    monkeypatch.setenv("SPURIOUS_MAX_INPUT_BYTES", "lots")
    with pytest.raises(ParameterError, match=r"\$SPURIOUS_MAX_INPUT_BYTES .* got 'lots'"):
        load_dataset(files / "train.jsonl", "nli")


# -- the Python API: the same checks, the same kind of one-line errors ---------------------


def _api_cases(d):
    from spurious.data import load_dataset
    from spurious.data.annotations import read_annotations
    from spurious.data.predictions import load_predictions
    from spurious.features.precomputed import PrecomputedFeaturizer
    from spurious.inputs import read_attributes
    from spurious.runner import read_config

    ds = load_dataset(d / "train.jsonl", "nli")
    names = ["entailment", "neutral", "contradiction"]
    npy = PrecomputedFeaturizer({"full": str(d / "pipe.npy")})
    ids = PrecomputedFeaturizer({"full": str(d / "X.npy")}, ids=str(d / "pipe.txt"))
    return [
        (lambda: load_dataset(d / "pipe.jsonl", "nli"), DataFormatError, "FIFO"),
        (lambda: load_predictions(d / "pipe.json", ds), DataFormatError, "Prediction file"),
        (lambda: load_predictions("/dev/zero", ds, format="json"), DataFormatError, "device"),
        (lambda: read_attributes(d / "pipe.jsonl"), DataFormatError, "--attributes"),
        (lambda: read_annotations(d / "pipe.jsonl", names), DataFormatError, "annotations"),
        (lambda: read_config(d / "pipe.json"), DataFormatError, "--config"),
        (lambda: npy.transform(ds, "full"), FeatureError, "precomputed features file"),
        (lambda: ids.transform(ds, "full"), FeatureError, "precomputed ids file"),
        (lambda: load_dataset(d / "hf", "nli"), DataFormatError, "outside the dataset folder"),
    ]


def test_api_readers_refuse_special_files(files):
    before = _snapshot(files)
    for i, (call, error, message) in enumerate(_api_cases(files)):
        with pytest.raises(error, match=r"not a regular file|outside") as info:
            call()
        assert message in str(info.value), (i, str(info.value))
        assert "\n" not in str(info.value)
    assert _snapshot(files) == before


def test_a_state_json_link_out_of_the_folder_is_refused(files, tmp_path):
    from spurious.data.readers import hf_disk_shards

    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "data-00000.arrow").symlink_to(files / "X.npy")
    (hf / "state.json").write_text(json.dumps({"_data_files": [{"filename": "data-00000.arrow"}]}))
    with pytest.raises(DataFormatError, match=r"'data-00000\.arrow', which lies outside"):
        hf_disk_shards(hf)
    (hf / "state.json").write_text(json.dumps({"_data_files": [{"filename": "/etc/passwd"}]}))
    with pytest.raises(DataFormatError, match="'/etc/passwd', which lies outside"):
        hf_disk_shards(hf)


def test_a_real_save_to_disk_folder_still_loads(tmp_path):
    datasets = pytest.importorskip("datasets")
    from spurious.data import load_dataset

    rows = {"premise": ["a b", "c d"], "hypothesis": ["x", "y"], "label": [0, 2]}
    datasets.Dataset.from_dict(rows).save_to_disk(str(tmp_path / "hf"))
    ds = load_dataset(tmp_path / "hf", "nli")
    assert ds.frame["label"].tolist() == ["entailment", "contradiction"]


# -- text: JSONL line ends and Unicode normalisation (item 17) -----------------------------

ODD = ["line\u2028separator", "next\u0085line", "para\u2029graph", "form\x0cfeed"]


def _rows():
    return [
        {"id": f"r{i}", "premise": f"{odd} {i}", "hypothesis": "h", "label": lab}
        for i, (odd, lab) in enumerate(zip(ODD * 2, ["entailment", "neutral"] * 4, strict=True))
    ]


def test_jsonl_with_raw_line_separators_in_strings_loads(tmp_path):
    from spurious.actions.records import read_json_records
    from spurious.data import load_dataset

    raw, escaped = tmp_path / "raw.jsonl", tmp_path / "escaped.jsonl"
    raw.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in _rows()))
    escaped.write_text("".join(json.dumps(r) + "\n" for r in _rows()))
    assert "\u2028" in raw.read_text(encoding="utf-8")  # raw, as JSON allows
    a, b = load_dataset(raw, "nli"), load_dataset(escaped, "nli")
    assert len(a) == 8
    assert a.frame["premise"].tolist() == [r["premise"] for r in _rows()]
    assert a.frame[["id", "premise", "label"]].equals(b.frame[["id", "premise", "label"]])
    assert [int(r) for r in a.source.rows] == list(range(8))
    # Writers re-read the same records the loader saw (write_filtered, resample).
    assert read_json_records(raw, "jsonl")[0] == _rows()
    # Windows line ends and a last line without a newline count too.
    crlf = tmp_path / "crlf.jsonl"
    crlf.write_text("\r\n".join(json.dumps(r, ensure_ascii=False) for r in _rows()))
    assert load_dataset(crlf, "nli").frame["premise"].tolist() == a.frame["premise"].tolist()


def test_predictions_and_annotations_with_raw_separators_load(tmp_path):
    from spurious.data import load_dataset
    from spurious.data.annotations import read_annotations
    from spurious.data.predictions import load_predictions

    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in _rows()))
    ds = load_dataset(data, "nli")
    preds = tmp_path / "m.jsonl"
    preds.write_text(
        "".join(
            json.dumps({"id": r["id"], "prediction": r["label"], "note": "a\u2028b"},
                       ensure_ascii=False) + "\n"
            for r in _rows()
        )
    )  # fmt: skip
    expected = [list(ds.label_names).index(r["label"]) for r in _rows()]
    assert load_predictions(preds, ds).values.tolist() == expected
    ann = tmp_path / "a.jsonl"
    ann.write_text(
        "".join(
            json.dumps({"id": r["id"], "annotator_labels": ["neutral"], "premise": r["premise"]},
                       ensure_ascii=False) + "\n"
            for r in _rows()
        )
    )  # fmt: skip
    frame = read_annotations(ann, ["entailment", "neutral", "contradiction"])
    assert len(frame) == 8


def _nli(rows):
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def test_eval_rows_equal_up_to_unicode_normalisation_are_overlap(tmp_path):
    from spurious.inputs import load_inputs

    nfc = [
        {"premise": f"Café n°{i} à Zürich", "hypothesis": f"Crème brûlée {i}", "label": lab}
        for i, lab in enumerate(["entailment", "neutral", "contradiction"] * 4)
    ]
    train = tmp_path / "train.jsonl"
    train.write_text(_nli(nfc))
    nfd = [{k: unicodedata.normalize("NFD", v) for k, v in r.items()} for r in nfc[:3]]
    assert nfd[0]["premise"] != nfc[0]["premise"]  # different code points, same text
    other = [{"premise": "Other", "hypothesis": f"text {i}", "label": "neutral"} for i in range(3)]
    dev = tmp_path / "dev.jsonl"
    dev.write_text(_nli(nfd + other))
    inputs = {"data": str(train), "eval": str(dev), "task": "nli"}
    ctx = load_inputs(inputs, progress=False)
    assert any("3 of 6 evaluation rows have the same text" in w for w in ctx.warnings)
    # The user's text is kept as written: only the comparison is normalised.
    assert ctx.eval.frame["premise"].tolist()[:3] == [r["premise"] for r in nfd]
    ctx = load_inputs({**inputs, "drop_overlap": True}, progress=False)
    assert ctx.eval.frame["premise"].tolist() == ["Other"] * 3
