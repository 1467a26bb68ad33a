"""Cartography of multiple-choice items: the option scorer's dynamics, maps and skip reasons."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import spurious
from spurious.context import RunContext
from spurious.data.synthetic_mcq import make_mcq_artifacts
from spurious.detectors.cartography import Cartography, default_partial_view
from spurious.detectors.cartography.mcq import above_chance
from spurious.exceptions import AnalysisError, ParameterError
from spurious.models.dynamics import option_dynamics, permute_gold_within_counts
from spurious.report import build_section

pytest.importorskip("torch")

FAST = {"features": "lexical", "epochs": 4, "null_permutations": 0}


@pytest.fixture(scope="module")
def planted():
    """300 items of 3-5 options, the gold the longest option in half of them."""
    synthetic = make_mcq_artifacts(
        n=300, n_options=(3, 5), artifact="length", artifact_rate=0.5, random_state=0
    )
    train, test = synthetic.dataset.split(0.3, random_state=0)
    return synthetic, train, test


@pytest.fixture(scope="module")
def result(planted):
    _, train, test = planted
    return Cartography(**FAST).run(train, test)


def _is_planted(synthetic, ids) -> np.ndarray:
    flag = dict(zip(synthetic.dataset.ids, synthetic.has_artifact, strict=True))
    return np.array([flag[i] for i in ids], dtype=bool)


def test_planted_items_are_easy_to_learn(planted, result):
    synthetic = planted[0]
    scores = result.scores
    cue = _is_planted(synthetic, scores["id"])
    easy = scores["region"].to_numpy() == "easy_to_learn"
    # The easy third holds planted items only; the others are at chance, never easy.
    assert easy[cue].mean() > 0.5 and easy[~cue].mean() < 0.05
    assert scores["confidence"][cue].mean() > scores["confidence"][~cue].mean() + 0.4
    easy_cue = scores[cue & easy]
    assert easy_cue["confidence"].min() > 0.7 and easy_cue["variability"].mean() < 0.1
    # Anti-biased (hardest) items are the ones without the cue.
    assert not (scores["anti_biased"].to_numpy() & cue).any()
    assert result.details["views"] == {"full": "full", "partial": "choices_only"}
    assert set(scores["n_options"]) <= {3, 4, 5}


def test_eval_split_dynamics_come_from_the_model_trained_on_train(planted):
    synthetic, train, test = planted
    ctx = RunContext(train, test, progress=False)
    dyn = ctx.artifact("training_dynamics", features="lexical", epochs=3)
    assert dyn.splits() == ["train", "eval"] and dyn.meta["task"] == "mcq"
    assert sorted(dyn.ids("eval")) == sorted(test.ids)
    ev = dyn.of("eval")
    # Gold and predictions are option positions; logits one per real option of the item.
    k = dict(zip(test.ids, test.frame["options"].map(len), strict=True))
    assert (ev["logits"].map(len) == ev["id"].map(k)).all()
    assert (ev["gold"] < ev["id"].map(k)).all() and (ev["pred"] < ev["id"].map(k)).all()
    last = ev[ev["epoch"] == ev["epoch"].max()].set_index("id").loc[list(test.ids)]
    cue = _is_planted(synthetic, test.ids)
    assert last["correct"][cue].mean() > 0.9  # the cue generalises to unseen items
    assert last["p_gold"][~cue].mean() < 0.5


def test_same_seed_same_dynamics_other_seed_other_dynamics():
    rng = np.random.default_rng(1)
    X = np.concatenate([np.ones((60, 3, 1)), rng.normal(size=(60, 3, 4))], axis=2)
    X[:20, 2] = 0.0  # 20 items with two options (padding block)
    y = np.where(np.arange(60) < 20, 1, 2)
    kw = {"n_features": 5, "epochs": 3, "hidden_size": 8}
    a = option_dynamics(X.reshape(60, 15), y, random_state=3, **kw)
    b = option_dynamics(X.reshape(60, 15), y, random_state=3, **kw)
    c = option_dynamics(X.reshape(60, 15), y, random_state=4, **kw)
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a["p_gold"], c["p_gold"])
    # Padding takes no probability: a 2-option item's two probabilities sum to 1.
    two = np.array(a["logits"].iloc[0])
    assert len(two) == 2 and a["pred"][a["logits"].map(len) == 2].max() <= 1


def test_the_provider_is_deterministic(planted):
    _, train, test = planted
    frames = [
        RunContext(train, test, progress=False)
        .artifact("training_dynamics", features="lexical", view="choices_only", epochs=2)
        .frame
        for _ in range(2)
    ]
    pd.testing.assert_frame_equal(*frames)


def test_option_dynamics_checks_its_inputs():
    X = np.ones((4, 6))
    X[0, 3] = 0.0  # two blocks of 3 columns; item 0's block B is padding
    with pytest.raises(ParameterError, match=r"'y_train'.*real option.*row 0"):
        option_dynamics(X, [1, 0, 0, 0], n_features=3)
    with pytest.raises(ParameterError, match=r"'X_train'.*n_features=4"):
        option_dynamics(X, [0, 0, 0, 0], n_features=4)
    with pytest.raises(ParameterError, match=r"'n_features'.*got 1"):
        option_dynamics(X, [0, 0, 0, 0], n_features=1)
    bad = X.copy()
    bad[1, 0] = 0.5
    with pytest.raises(ParameterError, match="Column 0"):
        option_dynamics(bad, [0, 0, 0, 0], n_features=3)
    with pytest.raises(ParameterError, match="'model' parameter of option_dynamics"):
        option_dynamics(X, [0, 0, 0, 0], n_features=3, model="svm")


def test_chance_is_per_item():
    assert above_chance([0.5, 0.25, 0.6], [0.5, 0.25, 0.2]) == pytest.approx([0, 0, 0.5])
    # Without any cue, an item with 2 options (chance 1/2) is not easy for that alone.
    synthetic = make_mcq_artifacts(n=300, n_options=(2, 5), artifact="none", random_state=2)
    res = Cartography(**FAST, partial_view=None).run(synthetic.dataset)
    two = res.scores["n_options"].to_numpy() == 2
    easy = res.scores["region"].to_numpy() == "easy_to_learn"
    assert 0 < two.sum() < len(two)
    assert easy[two].mean() < 0.6  # raw confidence would put every 2-option item in it
    y = permute_gold_within_counts([0, 1, 1, 2, 3], [2, 2, 2, 4, 4], np.random.default_rng(0))
    assert (y[:3] < 2).all() and sorted(y[3:]) == [2, 3]


def test_permuted_label_null_and_held_out_folds(planted):
    synthetic, train, _ = planted
    res = Cartography(features="lexical", epochs=3, null_permutations=1).run(train)
    m = res.metrics
    assert {"spearman_confidence", "spearman_confidence_null", "spearman_excess"} <= set(m)
    assert -1 <= m["spearman_confidence_null"] <= 1
    held = Cartography(**FAST, partial_view=None, held_out_folds=2).run(train)
    cue = _is_planted(synthetic, held.scores["id"])
    assert held.scores["confidence"][cue].mean() > held.scores["confidence"][~cue].mean()


def test_views_features_and_paths_are_checked_on_mcq(planted):
    _, train, test = planted
    assert default_partial_view(train.task) == "choices_only"
    with pytest.raises(ParameterError, match=r"'features'.*'lexical'.*got 'bow'"):
        Cartography(features="bow", epochs=2).run(train, test)
    with pytest.raises(ParameterError, match=r"'view'.*choices_only.*got 'hypothesis_only'"):
        Cartography(features="lexical", view="hypothesis_only").run(train, test)
    with pytest.raises(AnalysisError, match=r"finetune.*does not score the options"):
        Cartography(path="finetune", features="lexical").run(train, test)


def test_lexical_is_refused_outside_multiple_choice():
    from spurious.data.synthetic import make_nli_artifacts

    ds = make_nli_artifacts(n=60, random_state=0).dataset
    with pytest.raises(ParameterError, match="'lexical', the option cues"):
        Cartography(features="lexical", epochs=2).run(ds)


def test_section_renders_options_of_mc_examples(result):
    html = build_section(result).html_body
    assert "choices_only" in html and "A) " in html and "option scorer" in html


def test_other_data_analyses_say_why_they_skip_mcq(planted, tmp_path):
    synthetic, _, _ = planted
    run = spurious.run(
        synthetic.dataset,
        analyses={"peco": {}, "minority": {}, "pvi": {}},
        out=tmp_path / "run",
        progress=False,
    )
    reasons = {name: run[name].error for name in ("peco", "minority", "pvi")}
    assert all(run[name].status == "skipped" for name in reasons), reasons
    assert "mc_leakage" in reasons["peco"] and "not independent samples" in reasons["peco"]
    assert "cartography" in reasons["minority"] and "mc_cues" in reasons["minority"]
    assert "mc_leakage" in reasons["pvi"] and "cartography" in reasons["pvi"]
    for why in reasons.values():
        assert "does not score the options" not in why  # the generic reason is replaced
