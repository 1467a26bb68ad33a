"""mc_leakage: partial-input leakage of multiple-choice items against chance (lexical, fast)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from spurious.data import Dataset
from spurious.data.synthetic_mcq import make_mcq_artifacts
from spurious.detectors.mcq_leakage import MCLeakage
from spurious.detectors.mcq_leakage.fitting import redraw_gold
from spurious.detectors.mcq_leakage.metrics import mc_leakage_metrics
from spurious.exceptions import ParameterError
from spurious.report.sections import build_section

FAST = {"features": "lexical", "n_bootstrap": 200}


def _items(artifact: str, n: int = 400, seed: int = 1) -> Dataset:
    return make_mcq_artifacts(n=n, artifact=artifact, artifact_rate=0.6, random_state=seed).dataset


@pytest.fixture(scope="module")
def length_result():
    return MCLeakage(**FAST).run(_items("length"), progress=False)


def test_planted_length_cue_is_found_by_choices_only_not_question_only(length_result):
    m = length_result.metrics
    # A cue in 60% of 4-option items: 0.6 + 0.4 / 4 = 0.7 right, 0.45 over chance.
    assert m["chance"] == pytest.approx(0.25)
    assert m["delta_chance_choices_only_ci_low"] > 0
    assert m["delta_chance_choices_only"] == pytest.approx(0.45, abs=0.07)
    assert abs(m["delta_chance_question_only"]) < 0.06
    assert m["delta_chance_question_only_ci_low"] < 0 < m["delta_chance_question_only_ci_high"]
    assert m["p_value"] < 0.05 and m["null_accuracy_mean"] == pytest.approx(0.25, abs=0.04)
    # The full probe gains nothing over the options alone: all of it is recovered.
    assert m["recovery_choices_only"] == pytest.approx(1.0, abs=0.1)
    h = length_result.headline
    assert h["severity"] == "high" and h["evidence"]["basis"] == "interval+null_test"
    assert h["text"].startswith("choices-only model answers ") and "vs chance 25.0%" in h["text"]


def test_scores_have_one_row_per_item_with_each_views_answer(length_result):
    s = length_result.scores
    assert list(s.columns[:3]) == ["id", "gold", "k"]
    for v in ("full", "choices_only", "question_only"):
        assert {f"pred_{v}", f"p_gold_{v}", f"correct_{v}"} <= set(s.columns)
    assert len(s) == 400 and s["k"].eq(4).all()
    assert (s["correct_choices_only"] == (s["pred_choices_only"] == s["gold"])).all()
    assert s["is_mc_leakage_issue"].any()
    assert (s.loc[s["is_mc_leakage_issue"], "mc_leakage_score"] >= 0.5).all()


def test_no_cue_gives_no_finding():
    res = MCLeakage(**FAST).run(_items("none"), progress=False)
    assert res.headline["severity"] == "none"
    assert res.metrics["delta_chance_choices_only_ci_low"] <= 0
    assert not res.scores["is_mc_leakage_issue"].any()


def test_position_cue_is_found_by_the_question_only_view():
    m = MCLeakage(**FAST).run(_items("position"), progress=False).metrics
    assert m["delta_chance_question_only_ci_low"] > 0.3
    # Always answering A is the shortcut: the majority letter matches it.
    assert m["majority_accuracy"] == pytest.approx(m["accuracy_question_only"], abs=0.03)


def test_eval_split_mode_fits_on_train_and_scores_eval():
    train, test = _items("length", n=500).split(0.3, random_state=0)
    res = MCLeakage(**FAST).run(train, test, progress=False)
    assert len(res.scores) == len(test) and set(res.scores["id"]) == set(test.ids)
    assert res.metrics["n_train"] == len(train) and res.metrics["n_eval"] == len(test)
    assert res.details["mode"] == "eval_split"
    assert res.metrics["delta_chance_choices_only_ci_low"] > 0.25


def test_per_group_table_finds_the_group_with_the_cue():
    cued = make_mcq_artifacts(n=300, artifact="length", artifact_rate=0.9, random_state=2)
    clean = make_mcq_artifacts(n=300, artifact="none", random_state=3)
    frames = []
    for name, s in (("cued", cued), ("clean", clean)):
        f = s.dataset.frame[["id", "question", "options", "label"]].copy()
        f["id"], f["group"] = name + "-" + f["id"], name
        frames.append(f)
    ds = Dataset.from_frame(pd.concat(frames, ignore_index=True), "mcq", name="two-groups")
    res = MCLeakage(**FAST).run(ds, progress=False)
    t = res.tables["groups"].set_index("group")
    assert list(res.tables["groups"]["group"]) == ["cued", "clean"]  # most leaky first
    assert t.loc["cued", "delta_chance_ci_low"] > 0.3 and t.loc["cued", "p_value"] < 0.05
    assert t.loc["clean", "delta_chance_ci_low"] < 0 < t.loc["clean", "delta_chance_ci_high"]
    assert t["n"].tolist() == [300, 300] and res.metrics["n_leaky_groups"] == 1
    assert res.details["top_groups"][0]["group"] == "cued"
    assert "group" in res.scores.columns
    html = build_section(res).html_body
    assert "Groups leaking most" in html and "cued" in html


def test_same_seed_same_metrics_and_threads_do_not_matter():
    ds = _items("token", n=240)
    a = MCLeakage(**FAST, n_threads=1).run(ds, progress=False)
    b = MCLeakage(**FAST, n_threads=2).run(ds, progress=False)
    assert a.metrics == pytest.approx(b.metrics, nan_ok=True)
    pd.testing.assert_frame_equal(a.scores, b.scores)


def test_group_names_are_escaped_in_the_report():
    frame = make_mcq_artifacts(n=120, random_state=0).dataset.frame[
        ["id", "question", "options", "label"]
    ]
    frame = frame.assign(group=np.where(np.arange(120) % 2, "<script>x</script>", "b&c"))
    res = MCLeakage(**FAST, n_permutations=0).run(Dataset.from_frame(frame, "mcq"), progress=False)
    assert np.isnan(res.metrics["p_value"]) and res.headline["evidence"]["p_value"] is None
    html = build_section(res).html_body
    assert "<script>x" not in html and "&lt;script&gt;x" in html


def test_parameters_are_checked_with_their_name():
    with pytest.raises(ParameterError, match="'views'"):
        MCLeakage(views=["hypothesis_only"]).validate_params()
    with pytest.raises(ParameterError, match="'n_permutations'"):
        MCLeakage(n_permutations=5).validate_params()
    with pytest.raises(ParameterError, match="'features'"):
        MCLeakage(features="no-such-encoder").validate_params()
    # `spurious audit --features tfidf` shares its representation: lexical cues here.
    assert MCLeakage(features="tfidf").requirements().extras == ()
    assert MCLeakage().requirements().extras  # MiniLM needs the encoder extra


def test_chance_is_the_mean_of_one_over_k_and_recovery_is_chance_corrected():
    y = np.zeros(100, dtype=int)
    k = np.r_[np.full(50, 2), np.full(50, 4)]
    full = np.where(np.arange(100) < 70, 0, 1)  # 0.70 right
    cho = np.where(np.arange(100) < 50, 0, 1)  # 0.50 right
    m = mc_leakage_metrics(y, k, {"full": full, "choices_only": cho}, 0, n_resamples=50)
    assert m["chance"] == pytest.approx(0.375)
    assert m["recovery_choices_only"] == pytest.approx((0.5 - 0.375) / (0.7 - 0.375))
    assert m["recovery_raw_choices_only"] == pytest.approx(0.5 / 0.7)
    g = redraw_gold(k, np.random.default_rng(0))
    assert ((g >= 0) & (g < k)).all()
