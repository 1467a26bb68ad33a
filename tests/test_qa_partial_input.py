"""qa_partial_input: question-only and passage-only QA baselines (answer-sentence selection)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from spurious.context import RunContext
from spurious.data import Dataset
from spurious.data.synthetic import make_nli_artifacts
from spurious.data.synthetic_qa import make_qa_artifacts
from spurious.detectors.qa_partial_input import QAPartialInput
from spurious.detectors.qa_partial_input.inputs import grouped_folds
from spurious.exceptions import AnalysisError, ParameterError
from spurious.features.qa_sentences import answer_sentences
from spurious.features.qa_views import sentence_view_blocks
from spurious.plan import audit_plan
from spurious.report.sections import build_section

FAST = {"n_bootstrap": 200, "n_components": 4}


def _qa(artifact: str = "position", rate: float = 1.0, n: int = 200, seed: int = 1) -> Dataset:
    return make_qa_artifacts(n=n, artifact=artifact, artifact_rate=rate, random_state=seed).dataset


def _relocated(ds: Dataset, seed: int) -> Dataset:
    """The same questions with each answer moved to a uniformly drawn sentence (shuffled gold)."""
    rng = np.random.default_rng(seed)
    frame = ds.frame.copy()
    answers, starts = [], []
    for context in frame["context"]:
        sents = context.split(". ")
        j = int(rng.integers(len(sents)))
        start = sum(len(s) + 2 for s in sents[:j]) + len("The ")
        answers.append([context[start:].split()[0]])
        starts.append([start])
    frame["answers"], frame["answer_starts"] = answers, starts
    return Dataset.from_frame(frame, "qa", name="relocated")


@pytest.fixture(scope="module")
def planted():
    return QAPartialInput(**FAST).run(_qa(), progress=False)


def test_answer_always_first_is_found_by_passage_only(planted):
    m = planted.metrics
    # Contexts of 3-6 sentences (uniform): chance = mean(1/3, 1/4, 1/5, 1/6) = 0.2375.
    assert m["chance"] == pytest.approx(np.mean([1 / 3, 1 / 4, 1 / 5, 1 / 6]), abs=0.03)
    # The answer is always in the first sentence: position alone (and so the passage)
    # finds every one of them; the full probe too.
    assert m["accuracy_position_only"] == 1.0 and m["accuracy_passage_only"] == 1.0
    assert m["delta_chance_passage_only_ci_low"] > 0.6
    assert m["p_value"] == pytest.approx(1 / 21) and m["null_accuracy_mean"] < 0.35
    assert m["answer_in_first_sentence"] == 1.0 and m["n_unlocated"] == 0
    # Nothing beyond the position prior: the passage adds nothing to it.
    assert m["delta_position_passage_only"] == 0.0
    h = planted.headline
    assert h["severity"] == "high" and h["evidence"]["basis"] == "interval+null_test"
    assert "position alone 100.0%" in h["text"]
    assert planted.details["judged_view"] in ("passage_only", "question_only")
    assert planted.details["folds_grouped_by"] == "title"
    assert planted.details["answer_positions"]["share"][0] == 1.0
    s = planted.scores
    assert list(s.columns[:3]) == ["id", "gold_sentence", "n_sentences"]
    assert (s["gold_sentence"] == 0).all() and s["is_qa_partial_input_issue"].all()


def test_no_cue_and_shuffled_gold_give_no_finding():
    """Sentences are exchangeable: neither partial view beats chance, only the full one."""
    clean = QAPartialInput(**FAST).run(_qa("none", 0.0, n=240), progress=False)
    assert clean.headline["severity"] in ("none", "low")
    assert clean.metrics["accuracy_full"] > 0.9  # the question, read against the sentences
    for seed in (0, 1):
        res = QAPartialInput(**FAST).run(_relocated(_qa(), seed), progress=False)
        assert res.headline["severity"] in ("none", "low"), res.headline
        assert res.metrics["delta_chance_passage_only_ci_low"] < 0.05
        assert not res.scores["is_qa_partial_input_issue"].any() or (
            res.metrics[f"delta_chance_{res.details['judged_view']}_ci_low"] > 0
        )


def test_known_answer_on_a_hand_made_case():
    """Two-sentence contexts, the answer always in sentence 1: every number is exact."""
    rows = []
    for i in range(40):
        a, b = f"item{i}", f"other{i}"
        rows.append(
            {
                "id": f"q{i}",
                "title": f"t{i % 8}",
                "question": f"What is thing {i}?",
                "context": f"The thing is {a}. The rest is {b}.",
                "answers": [a],
            }
        )
    ds = Dataset.from_frame(pd.DataFrame(rows), "qa")
    cands = answer_sentences(ds)
    assert cands.label.tolist() == [0] * 40 and cands.n_sentences.tolist() == [2] * 40
    res = QAPartialInput(views=["passage_only", "position_only"], n_bootstrap=50).run(
        ds, progress=False
    )
    m = res.metrics
    assert m["chance"] == 0.5 and m["majority_accuracy"] == 1.0
    assert m["accuracy_position_only"] == 1.0 and m["delta_chance_position_only"] == 0.5
    assert m["delta_maj_passage_only"] == 0.0 and m["n_eval"] == 40
    assert m["n_train"] == 32  # 40 questions, 5 folds: 32 per fold


def test_view_blocks_keep_question_and_passage_apart():
    ds = _qa(n=30)
    cands = answer_sentences(ds)
    blocks = sentence_view_blocks(cands, ds.frame["question"].tolist(), n_components=4)
    cols = {v: set(b.columns) for v, b in blocks.items()}
    assert cols["position_only"] == {"is_first", "is_last", "relative_position", "log_position"}
    assert cols["position_only"] < cols["passage_only"] and cols["position_only"] < cols["full"]
    # no question in the passage-only view, no sentence content in the question-only view
    assert not any("question" in c or "overlap" in c for c in cols["passage_only"])
    assert not any("sentence_pc" in c or c.startswith("cue_") for c in cols["question_only"])
    assert {"unigram_overlap", "bm25", "when_x_year"} <= cols["full"]
    assert (cols["passage_only"] | cols["question_only"]) <= cols["full"]
    for b in blocks.values():
        assert b.X.shape == (30, cands.max_candidates * b.n_features)


def test_folds_keep_articles_together():
    ds = _qa(n=60)
    fold_of, by = grouped_folds(ds.frame, np.arange(60), 5, 0)
    assert by == "title"
    per_title = pd.Series(fold_of).groupby(ds.frame["title"].to_numpy()).nunique()
    assert (per_title == 1).all() and len(set(fold_of)) == 5
    one_article = ds.frame.assign(title="same")
    assert grouped_folds(one_article, np.arange(60), 5, 0)[1] == "context"


def test_evaluation_split_and_unlocated_answers():
    train, test = _qa(n=200, seed=2), _qa(n=60, seed=3)
    frame = test.frame.copy()
    frame.loc[0, "answers"] = ["not in the context"]
    frame.loc[0, "answer_starts"] = None
    test = Dataset.from_frame(frame, "qa", name="with-unlocated")
    res = QAPartialInput(**FAST).run(train, test, progress=False)
    assert res.details["mode"] == "eval_split" and res.details["folds_grouped_by"] is None
    assert set(res.scores["id"]) == set(test.ids)
    m = res.metrics
    assert m["n_unlocated"] == 1 and m["n_eval"] == 59 and m["n_train"] == 200
    first = res.scores.iloc[0]
    assert first["gold_sentence"] == -1 and first["pred_passage_only"] == -1
    assert np.isnan(first["qa_partial_input_score"]) and not first["is_qa_partial_input_issue"]
    assert res.headline["severity"] == "high"


def test_parameters_requirements_and_plan():
    with pytest.raises(ParameterError, match="'views'"):
        QAPartialInput(views=["full", "position_only"]).validate_params()
    with pytest.raises(ParameterError, match="'n_permutations'"):
        QAPartialInput(n_permutations=5).validate_params()
    nli = make_nli_artifacts(n=60, random_state=0).dataset
    assert QAPartialInput().unmet(RunContext(nli, progress=False)) == [
        "applies to tasks ['qa'], not 'nli'"
    ]
    with pytest.raises(AnalysisError, match="needs at least 20 questions"):
        QAPartialInput().run(_qa(n=12), progress=False)
    assert "qa_partial_input" in audit_plan(task="qa", profile="quick")
    assert "qa_partial_input" not in audit_plan(task="nli")


def test_section_shows_views_and_answer_positions(planted):
    html = str(build_section(planted).html_body)
    for text in ("passage-only", "question-only", "position-only", "Position alone", "chance"):
        assert text in html
    assert html.count("data:image/svg") >= 2  # accuracy per view; answer positions
