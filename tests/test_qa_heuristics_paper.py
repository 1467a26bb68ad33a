"""Paper 001's QA heuristics against the paper itself: App. C's thresholds and group sizes.

Known-answer tests of the default definitions (``word_distance`` as the reference code
reads it; ``entity_count`` scoring untyped questions 0; ``answer_length``'s two
aggregates) and, on the shared SQuAD 1.1 dev file with the BERT-base-uncased
predictions, the App. C threshold search for ``word_distance``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from spurious import load_dataset
from spurious.data.dataset import Dataset
from spurious.data.predictions import load_predictions
from spurious.evaluate.prediction_bias import (
    PAPER_QA_THRESHOLDS,
    PAPER_QA_WORSE_GROUP_SIZES,
    threshold_search,
)
from spurious.heuristics.qa import AnswerLength, EntityCount, WordDistance
from spurious.stats.metrics import example_scores
from tests.conftest import shared_data

NAN = np.nan
ADA = "Ada Lovelace was born in London in 1815. She died in 1852."
# \w+ words: Ada0 Lovelace1 was2 born3 in4 London5 in6 1815(7) She8 died9 in10 1852(11)


def qa(rows: list[tuple]) -> Dataset:
    q, c, a, s = zip(*rows, strict=True)
    frame = pd.DataFrame(
        {"question": q, "context": c, "answers": list(a), "answer_starts": list(s)}
    )
    return Dataset.from_frame(frame, "qa")


def test_word_distance_paper_definition_known_answers() -> None:
    ds = qa(
        [
            ("Where was Ada born?", ADA, ["London"], [25]),  # born@3 -> London@5: 2
            ("Who was born in London?", ADA, ["Ada Lovelace"], [0]),  # born@3 - Ada@0: 3
            ("When was ADA BORN?", ADA, ["1815"], [0]),  # case kept: no question word
            ("What did Lovelace do?", ADA, ["Lovelace was born"], [4]),  # answer's 1st word
            ("When did She die?", ADA, ["1852"], [ADA.index("1852")]),  # "She"@8 kept: 3
            ("Where did Ada die?", ADA, ["in"], [50]),  # Ada@0 - first "in"@4, not the offset
            ("Who was it?", ADA, ["London"], [25]),  # stopwords only
            ("Where was Ada born?", ADA, ["Paris"], [0]),  # answer not in the context
            ("Where was Ada born?", ADA, [], []),  # no answer
        ]
    )
    got = WordDistance().compute(ds)
    np.testing.assert_array_equal(got, [2, 3, NAN, 0, 3, 4, NAN, NAN, NAN])
    # The earlier definition: lower-cased, nearest end of the span at the offset.
    old = WordDistance(variant="nearest_end").compute(ds)
    np.testing.assert_array_equal(old, [2, 2, 4, 0, NAN, 10, NAN, NAN, NAN])


def test_word_distance_variant_is_validated() -> None:
    with pytest.raises(ValueError, match="variant"):
        WordDistance(variant="span").compute(qa([("Where?", ADA, ["London"], [25])]))


def test_answer_length_aggregates() -> None:
    ds = qa([("When?", "In May 1815.", ["May 1815", "In May 1815", "1815", "1815"], [3])])
    assert AnswerLength().compute(ds)[0] == 2
    assert AnswerLength(aggregate="mean").compute(ds)[0] == pytest.approx((2 + 3 + 1 + 1) / 4)


def test_entity_count_scores_untyped_questions_zero_by_default() -> None:
    assert EntityCount().untyped == "zero"
    assert EntityCount().get_params() == {"untyped": "zero"}


@pytest.fixture(scope="module")
def squad_bert_base():
    dev = load_dataset(shared_data("squad", "dev-v1.1.json"), "qa")
    preds = load_predictions(shared_data("predictions", "squad", "bert-base-uncased.json"), dev)
    return dev, example_scores(dev, preds, "em")


def test_word_distance_reproduces_app_c_on_squad_dev(squad_bert_base) -> None:
    """App. C: T=7, 1,651 examples in the under-performing group (above T)."""
    dev, em = squad_bert_base
    attr = WordDistance().compute(dev)
    res = threshold_search(em, attr)  # the paper's 100 x 800, quantiles .025/.975
    assert res.threshold == PAPER_QA_THRESHOLDS["word_distance"] == 7
    assert res.worse_group == "high"
    assert res.high.n == PAPER_QA_WORSE_GROUP_SIZES["word_distance"] == 1651
    assert res.validity == "strict"
    assert res.low.n == 8768  # the reference code also drops unlocatable rows (151)
    assert int(np.isnan(attr).sum()) == 151
