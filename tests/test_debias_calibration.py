"""Issue 19 items 6-9: a calibrated bias model, LearnedMixin+H's entropy weight per number
of classes, the hard subset from the user, and the debiasing headline's interval."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("torch")

from spurious.exceptions import DataFormatError, ParameterError
from spurious.models.debias.bias import fit_bias_model, out_of_fold_proba
from spurious.models.debias.calibration import (
    apply_temperature,
    calibration_metrics,
    expected_calibration_error,
    fit_temperature,
    negative_log_likelihood,
)
from spurious.models.debias.losses import default_entropy_penalty


# -- calibration: known answers -------------------------------------------------------
def test_ece_against_a_hand_checked_example():
    # 5 bins of width 0.2. Rows and their bins by top-label confidence:
    #   0.95, 0.85 -> (0.8, 1.0]: right, wrong  -> acc 0.5, conf 0.90, gap 0.40, 2 rows
    #   0.70       -> (0.6, 0.8]: right         -> acc 1.0, conf 0.70, gap 0.30, 1 row
    #   0.50, 0.45 -> (0.4, 0.6]: wrong, right  -> acc 0.5, conf 0.475, gap 0.025, 2 rows
    # ECE = (2 * 0.40 + 1 * 0.30 + 2 * 0.025) / 5 = 0.23
    p = np.array(
        [[0.95, 0.05, 0.0], [0.85, 0.15, 0.0], [0.1, 0.7, 0.2], [0.5, 0.3, 0.2], [0.3, 0.25, 0.45]]
    )
    y = np.array([0, 1, 1, 2, 2])
    assert expected_calibration_error(p, y, n_bins=5) == pytest.approx(0.23)
    # One bin: |accuracy - mean confidence| over all rows = |0.6 - 0.69|.
    assert expected_calibration_error(p, y, n_bins=1) == pytest.approx(0.09)
    # NLL by hand: -mean(log [0.95, 0.15, 0.7, 0.2, 0.45]).
    nll = -np.mean(np.log([0.95, 0.15, 0.7, 0.2, 0.45]))
    assert negative_log_likelihood(p, y) == pytest.approx(nll)
    m = calibration_metrics(p, y, n_bins=5)
    assert m["accuracy"] == pytest.approx(0.6) and m["confidence"] == pytest.approx(0.69)


def test_a_perfectly_calibrated_model_has_zero_ece_and_temperature_one():
    # Confidence 0.8 everywhere, right on exactly 80% of the rows.
    p = np.tile([0.8, 0.1, 0.1], (100, 1))
    y = np.r_[np.zeros(80, int), np.ones(10, int), np.full(10, 2)]
    assert expected_calibration_error(p, y) == pytest.approx(0.0, abs=1e-12)
    assert fit_temperature(p, y) == pytest.approx(1.0, abs=1e-3)


def test_temperature_scaling_flattens_an_overconfident_model_and_sharpens_a_timid_one():
    rng = np.random.default_rng(0)
    n, k = 3000, 3
    y = rng.integers(0, k, n)
    # A planted bias model that is right 60% of the time but says p = 0.95 for its guess.
    guess = np.where(rng.random(n) < 0.6, y, (y + rng.integers(1, k, n)) % k)
    over = np.full((n, k), 0.025)
    over[np.arange(n), guess] = 0.95
    t = fit_temperature(over, y)
    after = apply_temperature(over, t)
    assert t > 1.5
    assert expected_calibration_error(after, y) < 0.02 < 0.3 < expected_calibration_error(over, y)
    assert negative_log_likelihood(after, y) < negative_log_likelihood(over, y)
    np.testing.assert_array_equal(after.argmax(1), over.argmax(1))  # accuracy unchanged
    assert after.max(1).mean() == pytest.approx(0.6, abs=0.02)
    # The same guesses said with p = 0.4: under-confident, so T < 1.
    timid = np.full((n, k), 0.3)
    timid[np.arange(n), guess] = 0.4
    assert fit_temperature(timid, y) < 1.0


def test_calibration_checks_its_inputs():
    with pytest.raises(ParameterError, match="shape"):
        expected_calibration_error(np.ones((3, 2)) / 2, np.array([0, 1]))
    with pytest.raises(ParameterError, match="class indices"):
        negative_log_likelihood(np.ones((2, 2)) / 2, np.array([0, 2]))
    with pytest.raises(ParameterError, match="temperature"):
        apply_temperature(np.ones((2, 2)) / 2, 0.0)


# -- the bias model on its own budget ------------------------------------------------
def _weak_signal(n: int, rng: np.random.Generator, flip: float = 0.45):
    """40-d features; the label follows feature 0's sign, flipped on ``flip`` of rows."""
    X = rng.normal(size=(n, 40)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    y = np.where(rng.random(n) < flip, 1 - y, y)
    return X, y


@pytest.mark.slow
def test_early_stopped_calibrated_bias_model_is_better_calibrated_than_the_main_budget():
    rng = np.random.default_rng(0)
    X, y = _weak_signal(1500, rng)
    X_eval, y_eval = _weak_signal(1500, rng)
    # The main model's budget (what the bias model had before): 10 epochs, 256 units.
    main_budget = out_of_fold_proba(X, y, n_classes=2, epochs=10, hidden_size=256)
    before = calibration_metrics(main_budget, y)
    fit = fit_bias_model(X, y, X_eval, n_classes=2, max_epochs=10, hidden_size=256)
    assert before["confidence"] > before["accuracy"] + 0.1  # overconfident, as in issue 19
    assert fit.temperature >= 1.0
    assert fit.metrics["oof_ece"] < before["ece"] / 2
    assert fit.metrics["oof_nll"] < before["nll"]
    assert fit.metrics["oof_ece"] <= fit.metrics["oof_ece_before"] + 1e-9
    assert fit.epochs <= 10 and len(fit.fold_epochs) == 5
    # Held out (T fitted on the training split's out-of-fold rows only): calibrated too.
    assert expected_calibration_error(fit.eval_probs, y_eval) < 0.06
    assert expected_calibration_error(fit.eval_probs, y_eval) < expected_calibration_error(
        fit.eval_probs_before, y_eval
    ) + 1e-9 or fit.temperature == pytest.approx(1.0, abs=0.05)


def test_bias_model_on_shuffled_labels_is_near_uniform():
    rng = np.random.default_rng(1)
    X, _ = _weak_signal(900, rng, flip=0.0)
    y = rng.integers(0, 3, 900)  # no signal at all
    fit = fit_bias_model(X, y, X[:50], n_classes=3, max_epochs=8, hidden_size=64)
    assert fit.train_probs.max(1).mean() < 0.42  # ~1/3: it knows it knows nothing
    assert fit.metrics["oof_ece"] < 0.06
    assert fit.metrics["oof_nll"] == pytest.approx(math.log(3), abs=0.03)


def test_bias_model_is_seeded_and_checks_its_budget():
    rng = np.random.default_rng(2)
    X, y = _weak_signal(400, rng)
    opts = {"n_classes": 2, "max_epochs": 2, "hidden_size": 16, "random_state": 5}
    a = fit_bias_model(X, y, X[:20], **opts)
    b = fit_bias_model(X, y, X[:20], **opts)
    np.testing.assert_array_equal(a.train_probs, b.train_probs)
    np.testing.assert_array_equal(a.eval_probs, b.eval_probs)
    no_t = fit_bias_model(X, y, None, **{**opts, "calibrate": False})
    assert no_t.temperature == 1.0 and no_t.eval_probs is None
    with pytest.raises(ParameterError, match="max_epochs"):
        fit_bias_model(X, y, n_classes=2, max_epochs=0)


# -- LearnedMixin+H's entropy weight ---------------------------------------------------
def test_entropy_penalty_rule_keeps_the_papers_penalty_scale():
    # 0.4 at QA's 384 positions; H * ln K (the largest penalty) is the same for every K.
    assert default_entropy_penalty(384) == pytest.approx(0.4)
    for k in (2, 3, 10, 100):
        assert default_entropy_penalty(k) * math.log(k) == pytest.approx(
            0.4 * math.log(k) ** 2 / math.log(384)
        )
        assert default_entropy_penalty(k) == pytest.approx(0.4 * math.log(k) / math.log(384))
    assert default_entropy_penalty(2) < default_entropy_penalty(3) < 0.1
    with pytest.raises(ParameterError, match="n_classes"):
        default_entropy_penalty(1)


# -- the analysis: hard subset, bias-model report, headline -------------------------------
def _splits(shuffle: bool = False, n: int = 900):
    from spurious.data import Dataset
    from spurious.data.synthetic import make_nli_artifacts

    ds = make_nli_artifacts(n=n, artifact_rate=0.9, random_state=0).dataset
    if shuffle:  # the same texts, the labels permuted: no signal left to debias
        frame = ds.frame[list(ds.task.text_fields)].copy()
        frame["label"] = np.random.default_rng(0).permutation(
            np.asarray(ds.label_names, dtype=object)[ds.labels]
        )
        ds = Dataset.from_frame(frame, ds.task.name, label_names=ds.label_names)
    return ds.split(0.3, random_state=0)


def _run(train, test, **params):
    from spurious.evaluate.debiasing import Debiasing

    return Debiasing(**{**Debiasing.fast_params, **params}).run(train, test, progress=False)


@pytest.fixture(scope="module")
def planted_result():
    train, test = _splits()
    return train, test, _run(train, test, methods=["plain", "poe", "learned_mixin_h"])


def test_analysis_reports_the_calibrated_bias_model(planted_result):
    _, _, res = planted_result
    m = res.metrics
    for key in ("accuracy", "ece", "nll", "confidence"):
        assert m[f"bias_model_{key}"] >= 0.0 and m[f"bias_model_{key}_before"] >= 0.0
        assert f"bias_model_oof_{key}" in m and f"bias_model_oof_{key}_before" in m
    assert m["bias_model_temperature"] > 0 and m["bias_model_epochs"] >= 1
    # Temperature scaling does not move the argmax: same accuracy before and after.
    assert m["bias_model_accuracy"] == pytest.approx(m["bias_model_accuracy_before"])
    assert m["entropy_penalty"] == pytest.approx(default_entropy_penalty(3))
    assert res.details["loss_params"]["learned_mixin_h"]["entropy_penalty"] == pytest.approx(
        default_entropy_penalty(3)
    )
    # The default hard subset is named for what it is.
    what = res.details["hard_definition"]
    assert what.startswith("evaluation rows a hypothesis-only bias model of accuracy")
    assert f"{m['bias_model_accuracy']:.3f}" in what
    assert m["n_hard"] == float(res.scores["hard"].sum())


def test_headline_rests_on_an_interval_of_the_hard_gain(planted_result):
    from spurious.evaluate.debiasing import Debiasing

    _, _, res = planted_result
    m = res.metrics
    assert m["best_hard_gain_low"] <= m["best_hard_gain"] <= m["best_hard_gain_high"]
    h = Debiasing().headline(res)
    assert h["evidence"]["basis"] == "interval"
    assert h["evidence"]["interval"] == [m["best_hard_gain_low"], m["best_hard_gain_high"]]
    assert "hypothesis-only bias model" in h["evidence"]["measured"]
    assert h["severity"] == Debiasing.verdict_scale._severity(m["best_hard_gain_low"])


def test_explicit_entropy_penalty_and_hard_subset_from_a_file(planted_result, tmp_path):
    from spurious.models.debias.subsets import load_hard_subset

    train, test, _ = planted_result
    ids = [str(i) for i in test.ids]
    chosen = set(ids[::3])
    (tmp_path / "hard.txt").write_text("\n".join(ids[::3]) + "\nnot-an-id\n")
    res = _run(
        train, test, methods=["plain", "learned_mixin_h"], entropy_penalty=0.25,
        hard_subset=f"file:{tmp_path / 'hard.txt'}",
    )  # fmt: skip
    assert res.metrics["entropy_penalty"] == 0.25
    assert res.scores["hard"].tolist() == [i in chosen for i in ids]
    assert res.metrics["n_hard"] == len(chosen)
    assert "listed in hard.txt (1 listed ids not in the split)" in res.details["hard_definition"]
    # Flags per id (0/1, any order) give the same subset.
    flags = pd.DataFrame({"id": ids[::-1], "hard": [int(i in chosen) for i in ids[::-1]]})
    flags.to_csv(tmp_path / "flags.csv", index=False)
    mask, what = load_hard_subset(f"file:{tmp_path / 'flags.csv'}", test)
    assert mask.tolist() == res.scores["hard"].tolist() and "flagged 'hard'" in what


def test_hard_subset_from_an_earlier_runs_marks(planted_result, tmp_path):
    from spurious.models.debias.subsets import load_hard_subset

    _, test, _ = planted_result
    ids = [str(i) for i in test.ids]
    anti = [i % 4 == 0 for i in range(len(ids))]
    marks = pd.DataFrame(
        {"id": ids * 2, "split": ["eval"] * len(ids) + ["train"] * len(ids),
         "definition": "minority", "anti_biased": anti + [False] * len(ids)}
    )  # fmt: skip
    marks.to_parquet(tmp_path / "marks.parquet", index=False)
    mask, what = load_hard_subset(f"marks:{tmp_path / 'marks.parquet'}", test)
    assert mask.tolist() == anti and "'minority'" in what
    with pytest.raises(ParameterError, match="no evaluation marks of definition"):
        load_hard_subset(f"marks:{tmp_path / 'marks.parquet'}#cartography", test)


def test_hard_subset_errors_name_the_problem(planted_result, tmp_path):
    from spurious.evaluate.debiasing import Debiasing
    from spurious.models.debias.subsets import load_hard_subset

    _, test, _ = planted_result
    ids = [str(i) for i in test.ids]
    (tmp_path / "none.txt").write_text("x\ny\n")
    with pytest.raises(DataFormatError, match="none is an id of the evaluation split"):
        load_hard_subset(f"file:{tmp_path / 'none.txt'}", test)
    pd.DataFrame({"id": ids[:5], "hard": [1, 0, 1, 0, 1]}).to_csv(tmp_path / "few.csv")
    with pytest.raises(DataFormatError, match=r"lacks \d+ of the evaluation split"):
        load_hard_subset(f"file:{tmp_path / 'few.csv'}", test)
    pd.DataFrame({"id": ids, "hard": 2}).to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(DataFormatError, match=r"row 1 .* must be 0 or 1"):
        load_hard_subset(f"file:{tmp_path / 'bad.csv'}", test)
    with pytest.raises(ParameterError, match="hard_subset"):
        Debiasing(hard_subset="hard.txt").validate_params()
    with pytest.raises(ParameterError, match="does not exist"):
        load_hard_subset("file:/no/such/file.txt", test)


def test_shuffled_labels_never_give_a_moderate_or_high_verdict():
    from spurious.evaluate.debiasing import Debiasing

    train, test = _splits(shuffle=True)
    res = _run(train, test, methods=["plain", "poe", "reweight", "learned_mixin_h"])
    h = Debiasing().headline(res)
    assert h["severity"] in ("none", "low", "info")
    # The bias model knows it knows nothing: near 1/3 confident after calibration.
    assert res.metrics["bias_model_confidence"] < 0.45


def test_hard_gain_is_corrected_for_answering_off_the_bias_models_class():
    from spurious.evaluate.debiasing import Debiasing
    from spurious.evaluate.debiasing.measures import chance_correct as _chance_correct
    from spurious.evaluate.debiasing.measures import hard_gain as _hard_gain

    rng = np.random.default_rng(0)
    n = 3000
    y = rng.integers(0, 3, n)
    bias_pred = np.zeros(n, dtype=int)  # the bias model always says class 0
    hard = y != bias_pred
    plain = np.zeros(n, dtype=int)  # plain training repeats it: 0 on every hard row
    label_blind = rng.integers(1, 3, n)  # avoids class 0, knows nothing else
    informed = np.where(hard, y, 0)  # right on every hard row

    def run(pred):
        return {"pred": pred, "correct": (pred == y).astype(float),
                "chance": _chance_correct(pred, y, hard, 3, bias_pred)}  # fmt: skip

    # Known answers: on a hard row the label is 1 or 2 (balanced), so a label-blind
    # answer of 1 or 2 is right half of the time, an answer of 0 never.
    chance = run(label_blind)["chance"]
    assert chance[hard] == pytest.approx(0.5, abs=0.03) and (chance[~hard] == 0).all()
    blind = _hard_gain({"plain": [run(plain)], "blind": [run(label_blind)]}, hard, seed=0)
    assert blind["best_hard_gain_raw"] == pytest.approx(0.5, abs=0.03)  # looks like a gain
    assert abs(blind["best_hard_gain"]) < 0.04  # but is not one
    assert blind["best_hard_gain_low"] < 0.01
    scale = Debiasing.verdict_scale
    assert scale._severity(blind["best_hard_gain_low"]) in ("none", "low")
    real = _hard_gain({"plain": [run(plain)], "informed": [run(informed)]}, hard, seed=0)
    assert real["best_hard_gain"] == pytest.approx(0.5, abs=0.03)
    assert scale._severity(real["best_hard_gain_low"]) == "high"
    # A given subset: the chance level is the subset's label distribution.
    sub = np.arange(n) < 1000
    pi = np.bincount(y[sub], minlength=3) / sub.sum()
    np.testing.assert_allclose(_chance_correct(plain, y, sub, 3)[sub], pi[0])
