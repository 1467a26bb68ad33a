"""Prediction files that miss some of the dataset's ids (issue 13, item 3).

The official SQuAD v1.1 evaluator scores an unanswered question 0; so do we, with a
warning that gives the count, ``PredictionSet.n_missing`` recording it, and
``on_missing="error"`` to refuse such files.
"""

from __future__ import annotations

import json
import logging

import numpy as np
import pandas as pd
import pytest

from spurious import load_dataset
from spurious.data.dataset import Dataset
from spurious.data.predictions import align_predictions, load_predictions
from spurious.exceptions import ParameterError, SchemaError
from spurious.stats.metrics import example_scores
from tests.conftest import shared_data

N_REMOVED = 246  # the count of the real file that could not be scored (issue 13)


@pytest.fixture(scope="module")
def squad_dev() -> Dataset:
    return load_dataset(shared_data("squad", "dev-v1.1.json"), "qa")


@pytest.fixture(scope="module")
def bert_base() -> dict[str, str]:
    path = shared_data("predictions", "squad", "bert-base-uncased.json")
    return json.loads(path.read_text(encoding="utf-8"))


def test_real_file_with_ids_removed_scores_them_as_wrong(
    squad_dev, bert_base, tmp_path, caplog
) -> None:
    rng = np.random.default_rng(0)
    removed = set(rng.choice(sorted(bert_base), size=N_REMOVED, replace=False).tolist())
    path = tmp_path / "bert-base-partial.json"
    path.write_text(json.dumps({k: v for k, v in bert_base.items() if k not in removed}))

    with caplog.at_level(logging.WARNING, logger="spurious.data.predictions"):
        partial = load_predictions(path, squad_dev)
    assert f"{N_REMOVED} of the 10570 example(s)" in caplog.text
    assert "scored as wrong" in caplog.text
    assert partial.n_missing == N_REMOVED
    assert set(squad_dev.ids[partial.missing]) == removed

    # The official evaluator: the full file's per-question scores, 0 where unanswered.
    full = load_predictions(
        shared_data("predictions", "squad", "bert-base-uncased.json"), squad_dev
    )
    assert full.n_missing == 0
    for metric in ("em", "f1"):
        expected = example_scores(squad_dev, full, metric)
        expected[partial.missing] = 0.0
        got = example_scores(squad_dev, partial, metric)
        np.testing.assert_array_equal(got, expected)
    # EM 66.58 on the full file (README of the shared data); lower by the lost answers.
    em_full = 100 * example_scores(squad_dev, full, "em").mean()
    em_partial = 100 * example_scores(squad_dev, partial, "em").mean()
    assert round(em_full, 2) == 66.58
    assert em_partial < em_full

    with pytest.raises(SchemaError, match=f"{N_REMOVED} of the dataset's 10570 id"):
        load_predictions(path, squad_dev, on_missing="error")


def _text_ds() -> Dataset:
    frame = pd.DataFrame(
        {"id": ["a", "b", "c"], "text": ["good", "bad", "meh"], "label": ["pos", "neg", "pos"]}
    )
    return Dataset.from_frame(frame, "text")


def test_missing_classification_prediction_is_never_right(caplog) -> None:
    ds = _text_ds()
    with caplog.at_level(logging.WARNING, logger="spurious.data.predictions"):
        p = align_predictions({"a": "pos", "b": "neg"}, ds, name="m")
    assert "1 of the 3 example(s)" in caplog.text
    assert p.values.tolist()[:2] == [ds.label_names.index("pos"), ds.label_names.index("neg")]
    assert p.values[2] == -1 and p.missing.tolist() == [False, False, True]
    np.testing.assert_array_equal(example_scores(ds, p), [1.0, 1.0, 0.0])


def test_unknown_ids_and_wrong_files_are_still_errors() -> None:
    ds = _text_ds()
    with pytest.raises(SchemaError, match="not in the dataset"):
        align_predictions({"a": "pos", "b": "neg", "zz": "pos"}, ds)
    with pytest.raises(SchemaError, match="3 of the dataset's 3 id"):  # covers nothing
        align_predictions({}, ds)
    with pytest.raises(ParameterError, match="'on_missing' parameter"):
        align_predictions({"a": "pos"}, ds, on_missing="ignore")


def test_complete_predictions_have_no_missing_and_no_warning(caplog) -> None:
    ds = _text_ds()
    with caplog.at_level(logging.WARNING, logger="spurious.data.predictions"):
        p = align_predictions({"a": 0, "b": 1, "c": 0}, ds, on_missing="error")
    assert p.n_missing == 0 and not p.missing.any()
    assert caplog.text == ""
