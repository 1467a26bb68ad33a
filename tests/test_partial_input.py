"""partial_input: hand-computed metrics, planted leakage found, per-example outputs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from spurious.data import Dataset
from spurious.data.synthetic import make_nli_artifacts
from spurious.detectors import PartialInput
from spurious.detectors.partial_input import leakage_metrics
from spurious.exceptions import AnalysisError, ParameterError

Y = np.array([0, 0, 1, 1, 2, 2])
FULL = np.array([0, 0, 1, 2, 2, 2])  # 5/6 correct
HYP = np.array([0, 1, 1, 2, 0, 2])  # 3/6 correct; agrees with FULL on rows 0, 2, 3, 5


def test_leakage_metrics_known_answers():
    m = leakage_metrics(Y, {"full": FULL, "hypothesis_only": HYP}, majority=0, n_resamples=200)
    assert m["accuracy_full"] == pytest.approx(5 / 6)
    assert m["accuracy_hypothesis_only"] == pytest.approx(0.5)
    assert m["majority_accuracy"] == pytest.approx(2 / 6)  # frequency of label 0, not its index
    assert m["delta_maj_hypothesis_only"] == pytest.approx(0.5 - 2 / 6)  # Eq. 4
    assert m["recovery_hypothesis_only"] == pytest.approx(0.5 / (5 / 6))  # Eq. 5
    assert m["nba_hypothesis_only"] == pytest.approx(4 / 6)  # Eq. 7
    # Eq. 8: of the 4 agreements, rows 0, 2, 5 are also correct (row 3 agrees on a wrong 2).
    assert m["nbr_hypothesis_only"] == pytest.approx(3 / 4)
    assert m["max_delta_maj"] == pytest.approx(1 / 6)


def test_leakage_metrics_intervals_bracket_estimate_and_are_seeded():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 2000)
    full = np.where(rng.random(2000) < 0.8, y, (y + 1) % 3)
    hyp = np.where(rng.random(2000) < 0.6, y, (y + 2) % 3)
    a = leakage_metrics(y, {"full": full, "h": hyp}, 0, n_resamples=300, random_state=1)
    b = leakage_metrics(y, {"full": full, "h": hyp}, 0, n_resamples=300, random_state=1)
    assert a == b
    for name in ("accuracy_full", "accuracy_h", "delta_maj_h", "recovery_h", "nba_h", "nbr_h"):
        assert a[f"{name}_ci_low"] <= a[name] <= a[f"{name}_ci_high"], name
    # Binomial standard error of accuracy ~ sqrt(.6*.4/2000) = 0.011 -> 95% width ~ 0.043.
    width = a["accuracy_h_ci_high"] - a["accuracy_h_ci_low"]
    assert 0.03 < width < 0.06


def test_nbr_undefined_when_no_agreement_is_nan():
    y = np.array([0, 1, 0, 1])
    m = leakage_metrics(
        y, {"full": np.array([0, 1, 0, 1]), "h": np.array([1, 0, 1, 0])}, 0, n_resamples=50
    )
    assert m["nba_h"] == 0.0
    assert np.isnan(m["nbr_h"])


def test_planted_cue_is_found_with_eval_split(nli_split):
    train, test = nli_split
    res = PartialInput(n_resamples=200).run(train, test)
    m = res.metrics
    # The cue makes hypothesis-only beat the majority guess; premise-only stays at chance.
    assert m["delta_maj_hypothesis_only_ci_low"] > 0.1
    assert abs(m["delta_maj_premise_only"]) < 0.08
    assert m["accuracy_full"] > 0.9  # the cross-field lexical block learns the relation
    assert res.details["leakiest_condition"] == "hypothesis_only"
    # Per example: one row per test example, flagged rows carry the cue far more often.
    s = res.scores
    assert len(s) == len(test) and s["id"].tolist() == test.ids.tolist()
    has_cue = test.frame["hypothesis"].str.lower().str.contains("nobody").to_numpy()
    flagged = s["is_partial_input_issue"].to_numpy()
    assert flagged.sum() > 10
    assert has_cue[flagged].mean() > 0.9
    # Ranking by partial_input_score recovers the cue rows (AUC well above chance).
    from sklearn.metrics import roc_auc_score

    assert roc_auc_score(has_cue, s["partial_input_score"]) > 0.85
    for c in ("full", "premise_only", "hypothesis_only"):
        assert s[f"p_gold_{c}"].between(0, 1).all()
        assert (s[f"correct_{c}"] == (s[f"pred_{c}"] == s["label"])).all()


def test_no_cue_no_leakage():
    synth = make_nli_artifacts(n=900, artifact_rate=0.0, random_state=3)
    train, test = synth.dataset.split(0.3, random_state=0)
    m = PartialInput(n_resamples=200).run(train, test).metrics
    assert m["delta_maj_hypothesis_only_ci_low"] < 0.03
    assert m["delta_maj_hypothesis_only"] < 0.08


def test_cross_fit_without_eval_scores_every_example():
    data = make_nli_artifacts(n=600, artifact_rate=0.9, random_state=1).dataset
    res = PartialInput(n_folds=3, n_resamples=100, conditions=["hypothesis_only"]).run(data)
    assert len(res.scores) == len(data)
    assert res.metrics["n_train"] == 400
    assert res.metrics["delta_maj_hypothesis_only"] > 0.1
    assert "premise_only" not in {c["view"] for c in res.details["conditions"]}
    assert res.details["mode"] == "3-fold"


def test_other_probe_and_bow_features(nli_split):
    train, test = nli_split
    res = PartialInput(features="bow", probe="sklearn-logistic", n_resamples=100).run(train, test)
    assert res.metrics["delta_maj_hypothesis_only"] > 0.1


def test_errors():
    text = Dataset.from_frame(
        pd.DataFrame({"text": ["a", "b", "c", "d"], "label": ["x", "y", "x", "y"]}), "text"
    )
    with pytest.raises(AnalysisError, match="two or more text fields"):
        PartialInput().run(text)
    with pytest.raises(ParameterError, match="'n_folds' parameter of PartialInput"):
        PartialInput(n_folds=1).run(text)
    small = make_nli_artifacts(n=30, random_state=0).dataset
    with pytest.raises(AnalysisError, match="rarest has"):
        PartialInput(n_folds=20).run(small)
    with pytest.raises(AnalysisError, match="partial views only"):
        PartialInput(conditions=["full"]).run(small)


def test_encoder_features_find_the_cue(nli_split, tmp_path, monkeypatch):
    """MiniLM pair features [u, v, |u-v|, u*v]: full input learns the relation, cue leaks."""
    monkeypatch.setenv("SPURIOUS_CACHE_DIR", str(tmp_path / "cache"))
    train, test = nli_split
    res = PartialInput(features="minilm", n_resamples=100).run(train, test)
    m = res.metrics
    assert m["delta_maj_hypothesis_only_ci_low"] > 0.05
    assert m["accuracy_full"] > m["accuracy_hypothesis_only"]
    assert abs(m["delta_maj_premise_only"]) < 0.1
    assert res.details["featurizer"]["featurizer"] == "minilm"
    assert any((tmp_path / "cache").rglob("*.npy"))  # embeddings were cached on disk


@pytest.mark.parametrize("seed", range(3))
def test_leakage_metric_identities_on_random_predictions(seed):
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from hypothesis.extra.numpy import arrays

    labels = arrays(np.int64, st.integers(5, 60), elements=st.integers(0, 2))

    @settings(max_examples=30, deadline=None, derandomize=True, database=None)
    @given(labels, st.integers(0, 2**16))
    def check(y, noise_seed):
        rng = np.random.default_rng(noise_seed + seed)
        full = np.where(rng.random(len(y)) < 0.7, y, rng.integers(0, 3, len(y)))
        hyp = np.where(rng.random(len(y)) < 0.5, y, rng.integers(0, 3, len(y)))
        m = leakage_metrics(y, {"full": full, "h": hyp}, 0, n_resamples=20)
        a_ssc, a_psc = (hyp == y).mean(), (full == y).mean()
        agree = hyp == full
        for k in ("accuracy_h", "nba_h", "majority_accuracy", "accuracy_full"):
            assert 0.0 <= m[k] <= 1.0
        assert m["delta_maj_h"] == pytest.approx(a_ssc - (y == 0).mean())
        if a_psc > 0:
            assert m["recovery_h"] * a_psc == pytest.approx(a_ssc)
        if agree.any():
            # NBR * NBA = share of examples where SSC, PSC and gold all agree.
            assert m["nbr_h"] * m["nba_h"] == pytest.approx((agree & (hyp == y)).mean())

    check()


def test_fine_tuned_mode_parameters_are_checked_before_any_work(nli_split):
    train, test = nli_split
    with pytest.raises(AnalysisError, match="needs an evaluation split"):
        PartialInput(model="finetune").run(train)
    with pytest.raises(ParameterError, match="must not set 'view'"):
        PartialInput(model="finetune", finetune={"view": "full"}).run(train, test)
    with pytest.raises(ParameterError, match=r"unknown parameter\(s\) \['epochz'\]"):
        PartialInput(model="finetune", finetune={"epochz": 1}).run(train, test)
    with pytest.raises(ParameterError, match="'model' parameter of PartialInput"):
        PartialInput(model="bert").run(train, test)
    with pytest.raises(ParameterError, match="'tra_alignment' parameter"):
        PartialInput(model="finetune", tra_alignment="left").run(train, test)


def test_leakage_score_combines_only_the_leaking_conditions(nli_split):
    """Issue 19 item 5: premise-only does not leak, so it must not raise the score."""
    from sklearn.metrics import roc_auc_score

    train, test = nli_split
    res = PartialInput(n_resamples=200).run(train, test)
    m, s = res.metrics, res.scores
    assert m["delta_maj_premise_only_ci_low"] <= 0 < m["delta_maj_hypothesis_only_ci_low"]
    assert res.details["leaky_conditions"] == ["hypothesis_only"]
    assert m["n_leaky_conditions"] == 1
    np.testing.assert_array_equal(s["partial_input_score"], s["p_gold_hypothesis_only"])
    # The old rule (max over every partial input) ranks the planted rows worse.
    has_cue = test.frame["hypothesis"].str.lower().str.contains("nobody").to_numpy()
    old = np.maximum(s["p_gold_premise_only"], s["p_gold_hypothesis_only"])
    assert roc_auc_score(has_cue, s["partial_input_score"]) >= roc_auc_score(has_cue, old)
    # Flags come from the leaking condition only.
    hyp_sure = s["correct_hypothesis_only"] & (s["p_gold_hypothesis_only"] >= 0.9)
    np.testing.assert_array_equal(s["is_partial_input_issue"], hyp_sure)
    # The headline's evidence is the Delta_maj interval against the majority guess.
    ev = res.headline["evidence"]
    assert ev["basis"] == "interval" and ev["null"] == "the majority guess"
    assert ev["interval"] == pytest.approx(
        [m["delta_maj_hypothesis_only_ci_low"], m["delta_maj_hypothesis_only_ci_high"]]
    )
    assert res.headline["severity"] in ("moderate", "high")


def test_shuffled_labels_leak_nowhere_and_flag_nothing(nli_split):
    train, test = nli_split
    rng = np.random.default_rng(0)

    def shuffled(ds: Dataset) -> Dataset:
        frame = ds.frame.copy()
        frame["label"] = frame["label"].to_numpy()[rng.permutation(len(frame))]
        return Dataset.from_frame(frame, ds.task, label_names=ds.label_names)

    res = PartialInput(n_resamples=200).run(shuffled(train), shuffled(test))
    s = res.scores
    assert res.details["leaky_conditions"] == []
    assert not s["is_partial_input_issue"].any()
    worst = res.details["leakiest_condition"]
    np.testing.assert_array_equal(s["partial_input_score"], s[f"p_gold_{worst}"])
    assert res.headline["severity"] in ("none", "low")
