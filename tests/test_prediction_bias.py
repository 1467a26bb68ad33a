"""Prediction bias (Algorithm 1), threshold search (App. C), natural bias, bias_table."""

from __future__ import annotations

import logging
import math
import time

import numpy as np
import pandas as pd
import pytest

from spurious.data import Dataset
from spurious.data.predictions import align_predictions
from spurious.evaluate.prediction_bias import (
    adapted_sample_size,
    bias_table,
    candidate_thresholds,
    natural_bias,
    prediction_bias,
    split_capacity,
    threshold_search,
)
from spurious.exceptions import ParameterError, SchemaError
from spurious.report.sections import build_section
from spurious.results import DetectorResult

FAST = {"n_trials": 50, "sample_size": 200}


# -- known answers ------------------------------------------------------------------------
def test_all_correct_vs_all_wrong_is_bias_one():
    attr = np.arange(2000) % 10
    correct = (attr <= 4).astype(float)
    res = prediction_bias(correct, attr, threshold=4, **FAST)
    assert res.bias == 1.0 and res.margin == 1.0
    assert (res.low.n, res.high.n) == (1000, 1000)
    assert (res.low.ci_low, res.low.ci_high, res.high.ci_low, res.high.ci_high) == (1, 1, 0, 0)
    assert res.worse_group == "high" and res.worse_performance == 0.0
    assert res.validity == "fixed" and res.valid  # both groups >= 2 x 200


def test_constant_groups_give_the_exact_gap():
    # Every bootstrap mean of a constant group is that constant: bias = 0.9 - 0.4.
    attr = np.r_[np.zeros(500), np.ones(700)]
    score = np.r_[np.full(500, 0.4), np.full(700, 0.9)]
    res = prediction_bias(score, attr, threshold=0, **FAST)
    assert res.bias == pytest.approx(0.5) and res.gap == pytest.approx(-0.5)
    assert res.worse_group == "low" and res.worse_performance == pytest.approx(0.4)
    # The formula is symmetric in the groups.
    flipped = prediction_bias(score, -attr, threshold=-0.5, **FAST)
    assert flipped.bias == pytest.approx(0.5) and flipped.worse_group == "high"


def test_bias_is_the_gap_between_the_returned_quantiles():
    rng = np.random.default_rng(1)
    attr = rng.integers(0, 10, 5000)
    correct = (rng.random(5000) < np.where(attr > 4, 0.55, 0.7)).astype(float)
    res = prediction_bias(correct, attr, threshold=4)
    lo, hi = res.low, res.high
    expected = max(0.0, lo.ci_low - hi.ci_high, hi.ci_low - lo.ci_high)
    assert res.bias == pytest.approx(expected) and res.bias > 0.05
    # Default: 100 trials of 800 -> the 2.5% quantile of a mean of 800 Bernoulli(p).
    for g in (lo, hi):
        half = 1.96 * np.sqrt(g.mean * (1 - g.mean) / 800)
        assert g.ci_low == pytest.approx(g.mean - half, abs=0.015)
        assert g.ci_high == pytest.approx(g.mean + half, abs=0.015)
        assert g.boot_mean == pytest.approx(g.mean, abs=0.01)


def test_without_replacement_a_group_of_sample_size_has_no_spread():
    attr = np.r_[np.zeros(200), np.ones(300)]
    score = np.random.default_rng(0).random(500)
    res = prediction_bias(score, attr, threshold=0, replace=False, **FAST)
    assert res.low.ci_low == pytest.approx(res.low.mean)
    assert res.low.ci_high == pytest.approx(res.low.mean)


# -- threshold search ---------------------------------------------------------------------
def test_planted_threshold_is_found():
    rng = np.random.default_rng(0)
    attr = rng.integers(0, 11, 8000).astype(float)
    correct = (rng.random(8000) < np.where(attr > 5, 0.35, 0.85)).astype(float)
    res = threshold_search(correct, attr, n_trials=100, sample_size=800)
    assert res.threshold == 5.0 and res.validity == "strict"
    assert res.bias > 0.4 and res.worse_group == "high"
    curve = res.curve
    assert curve["threshold"].tolist() == list(np.arange(0.0, 10.0))
    assert curve.loc[curve["bias"].idxmax(), "threshold"] == 5.0
    # Candidates outside the validity interval are never chosen.
    assert not curve.loc[curve["threshold"] == 9.0, "valid"].item()


def test_null_case_has_no_bias_and_a_valid_threshold():
    rng = np.random.default_rng(3)
    attr = rng.random(10000)
    correct = (rng.random(10000) < 0.7).astype(float)
    res = threshold_search(correct, attr)
    assert res.bias == 0.0 and res.margin < 0
    assert res.valid and res.validity == "strict"
    assert min(res.low.n, res.high.n) >= 1600
    valid = res.curve[res.curve["valid"]]
    assert (valid["bias"] == 0).all()


def test_validity_interval_excludes_small_groups():
    # The real cut (attr > 8) leaves ~1000 of 10000 examples: below 2 x 800.
    rng = np.random.default_rng(0)
    attr = rng.integers(0, 10, 10000).astype(float)
    correct = (rng.random(10000) < np.where(attr > 8, 0.2, 0.8)).astype(float)
    res = threshold_search(correct, attr)
    assert res.validity == "strict" and res.threshold < 8
    assert min(res.low.n, res.high.n) >= 1600
    cut = res.curve.set_index("threshold")
    assert not cut.loc[8.0, "valid"] and cut.loc[8.0, "bias"] > res.bias


def test_relaxed_rule_when_no_strictly_valid_threshold_separates():
    # n = 2400 with samples of 800: no split leaves 1600 on both sides.
    attr = np.repeat(np.arange(6.0), 400)
    correct = (attr >= 3).astype(float)
    res = threshold_search(correct, attr)
    assert res.validity == "relaxed" and not res.valid
    assert res.threshold == 2.0 and res.bias == 1.0


def test_no_usable_threshold(caplog):
    attr = np.arange(1000.0)
    with caplog.at_level(logging.WARNING):
        res = threshold_search(np.ones(1000), attr)
    assert res.validity == "invalid" and np.isnan(res.bias) and np.isnan(res.threshold)
    assert "no threshold leaves 800" in caplog.text


def test_candidate_grid():
    assert candidate_thresholds([0.05, 0.93]).tolist() == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6,
                                                            0.7, 0.8, 0.9]  # fmt: skip
    assert candidate_thresholds([-2, 1.5, 3]).tolist() == [-2.0, -1.0, 0.0, 1.0, 2.0]
    assert candidate_thresholds([4, 4, np.nan]).size == 0
    assert candidate_thresholds([0, 10], step=2.5).tolist() == [0.0, 2.5, 5.0, 7.5]


def test_seeded_missing_values_and_errors():
    rng = np.random.default_rng(2)
    attr = rng.integers(0, 10, 3000).astype(float)
    correct = rng.random(3000)
    a = prediction_bias(correct, attr, 4, random_state=7, **FAST)
    b = prediction_bias(correct, attr, 4, random_state=7, **FAST)
    c = prediction_bias(correct, attr, 4, random_state=8, **FAST)
    assert a.to_dict() == b.to_dict() and a.low.ci_low != c.low.ci_low
    attr_nan = attr.copy()
    attr_nan[:10] = np.nan
    assert prediction_bias(correct, attr_nan, 4, **FAST).n_excluded == 10
    with pytest.raises(ParameterError, match="'sample_size' parameter"):
        prediction_bias(correct, attr, 4, sample_size=0)
    with pytest.raises(ParameterError, match="q_low < q_high"):
        prediction_bias(correct, attr, 4, quantiles=(0.9, 0.1))
    with pytest.raises(ParameterError, match="one group"):
        prediction_bias(correct, attr, 99)
    with pytest.raises(ParameterError, match="same length"):
        prediction_bias(correct[:5], attr)


def test_bootstrap_options_are_checked_once_with_shared_defaults():
    attr = np.arange(2000) % 10
    correct = (attr <= 4).astype(float)
    # One set of defaults (the paper's 100 x 800, quantiles .025/.975) for every function.
    res = prediction_bias(correct, attr, threshold=4)
    assert res.params == {"n_trials": 100, "sample_size": 800, "quantiles": [0.025, 0.975],
                          "random_state": 0, "replace": True, "step": None}  # fmt: skip
    for call in (
        lambda: prediction_bias(correct, attr, 4, n_trial=5),
        lambda: threshold_search(correct, attr, n_trial=5),
        lambda: natural_bias(correct[None, :], attr, 4, n_trial=5),
    ):
        with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['n_trial'\]"):
            call()
    with pytest.raises(ParameterError, match="'step' parameter of prediction_bias"):
        threshold_search(correct, attr, step=0)


def test_natural_bias_is_the_minimum_over_annotators():
    attr = np.arange(4000) % 10
    biased = (attr <= 5).astype(float)
    humans = np.vstack([biased, np.ones(4000), np.full(4000, np.nan)])
    r = natural_bias(humans, attr, 5, **FAST)
    assert r.bias == 0.0 and r.annotator == 1
    # The third annotator answered nothing: below the coverage floor, ignored.
    assert sorted(r.per_annotator) == [0, 1]
    assert r.per_annotator[0].bias == 1.0


# -- across models ------------------------------------------------------------------------
def _toy_qa(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    ids = [f"q{i}" for i in range(n)]
    attr = rng.integers(0, 10, n).astype(float)
    # Three annotators who agree except that the third misses on 10% of questions.
    third = np.where(rng.random(n) < 0.1, "other", "gold")
    frame = pd.DataFrame(
        {
            "id": ids,
            "question": ["q"] * n,
            "context": ["c"] * n,
            "answers": [["gold", "gold", t] for t in third],
        }
    )
    ds = Dataset.from_frame(frame, "qa", name="toy")
    right_low = rng.random(n) < np.where(attr > 6, 0.3, 0.9)  # biased model
    right_any = rng.random(n) < 0.6  # unbiased model
    preds = [
        align_predictions(dict(zip(ids, np.where(right_low, "gold", "x"), strict=True)), ds, name="biased"),
        align_predictions(dict(zip(ids, np.where(right_any, "gold", "x"), strict=True)), ds, name="fair"),
    ]  # fmt: skip
    attributes = pd.DataFrame({"id": ids[::-1], "h": attr[::-1], "noise": rng.random(n)[::-1]})
    return ds, preds, attributes


def test_bias_table_shared_threshold(tmp_path):
    ds, preds, attributes = _toy_qa()
    res = bias_table(ds, preds, attributes, metric="em", **FAST)
    m = res.metrics
    assert res.analysis == "prediction_bias"
    assert m["threshold/h"] == 6.0 and m["bias/biased/h"] > 0.4
    assert m["bias/fair/h"] < 0.05 and m["natural_bias/h"] == 0.0
    assert m["worse_group_em/biased/h"] == pytest.approx(0.3, abs=0.05)
    assert m["n_low/h"] + m["n_high/h"] == 4000
    assert m["em/fair"] == pytest.approx(0.6, abs=0.03)  # the mean EM, 0-1
    assert not any(k.startswith(("overall_", "bias_biased")) for k in m)
    # Scores are keyed by id in dataset order, with the attribute realigned by id.
    s = res.scores
    assert s["id"].tolist() == ds.ids.tolist()
    assert {"attr_h", "score_biased", "score_fair", "score_annotator0", "group_h"} <= set(s)
    assert (s["group_h"] == np.where(s["attr_h"] <= 6, "low", "high")).all()
    row = next(r for r in res.details["table"] if r["model"] == "biased" and r["heuristic"] == "h")
    assert row["n_low"] == m["n_low/h"] and row["validity"] == "strict"
    assert set(res.details["curves"]["h"]["bias"]) == {"biased", "fair", "human"}
    # The vectorised multi-model sweep equals the single-model function (same draws).
    single = prediction_bias(s["score_fair"].to_numpy(), s["attr_h"].to_numpy(), 6.0, **FAST)
    assert m["bias/fair/h"] == pytest.approx(single.bias)
    assert row["low_ci_low"] == pytest.approx(
        prediction_bias(
            s["score_biased"].to_numpy(), s["attr_h"].to_numpy(), 6.0, **FAST
        ).low.ci_low
    )
    # Round trip through the on-disk form, and the report section renders with plots.
    res.save(tmp_path / "pb")
    back = DetectorResult.load(tmp_path / "pb", expected_fingerprints={"eval": ds.fingerprint})
    assert back.metrics["bias/biased/h"] == m["bias/biased/h"]
    import spurious.report.sections.prediction_bias  # noqa: F401

    section = build_section(back)
    assert section.status == "ok" and "data:image/svg+xml" in section.html_body
    assert "human" in section.html_body and "biased" in section.html_body


def test_bias_table_own_thresholds_reference_and_fixed():
    ds, preds, attributes = _toy_qa(seed=1)
    own = bias_table(ds, preds, attributes, heuristics=["h"], shared_threshold=False, **FAST)
    assert own.metrics["threshold/biased/h"] == 6.0
    assert "threshold/h" not in own.metrics and "natural_bias/biased/h" in own.metrics
    ref = bias_table(ds, preds, attributes, reference="fair", metric="f1", **FAST)
    assert ref.params["reference"] == "fair"
    fixed = bias_table(ds, preds, attributes, thresholds={"h": 3}, natural=False, **FAST)
    assert fixed.metrics["threshold/h"] == 3.0 and "natural_bias/h" not in fixed.metrics
    with pytest.raises(ParameterError, match="reference"):
        bias_table(ds, preds, attributes, reference="nope")
    with pytest.raises(ParameterError, match="distinct names"):
        bias_table(ds, [preds[0], preds[0]], attributes)
    with pytest.raises(SchemaError, match="lacks 1 of the 4000 ids"):
        bias_table(ds, preds, attributes.iloc[1:])


def test_sweep_is_vectorised_and_fast():
    rng = np.random.default_rng(0)
    n = 10000
    attr = rng.integers(0, 60, n).astype(float)
    start = time.perf_counter()
    for _ in range(3):
        threshold_search((rng.random(n) < 0.7).astype(float), attr)
    # 3 x 60 candidates x 2 groups x 100 x 800 draws; a Python loop per resample takes minutes.
    assert time.perf_counter() - start < 10


def test_monte_carlo_spread_is_reported_beside_every_bias():
    """The bias moves with the bootstrap seed; its sd is measured and reported (issue 13)."""
    ds, preds, attributes = _toy_qa()
    res = bias_table(ds, preds, attributes, metric="em", n_trials=100, sample_size=400)
    m = res.metrics
    for name in ("biased", "fair"):
        sd = m[f"bias_mc_sd/{name}/h"]
        assert np.isfinite(sd) and 0 <= sd < 0.03
    # The sd is what it says: biases at other seeds scatter by about that much.
    s = res.scores
    others = [
        prediction_bias(
            s["score_biased"].to_numpy(), s["attr_h"].to_numpy(), 6.0,
            n_trials=100, sample_size=400, random_state=seed,
        ).bias
        for seed in range(1, 9)
    ]  # fmt: skip
    assert np.std(others, ddof=1) == pytest.approx(m["bias_mc_sd/biased/h"], rel=1.5, abs=0.004)
    # Same seed, same spread: it is reproducible.
    again = bias_table(ds, preds, attributes, metric="em", n_trials=100, sample_size=400)
    assert again.metrics["bias_mc_sd/biased/h"] == m["bias_mc_sd/biased/h"]
    # Too few trials: a warning that says how large a difference is noise.
    few = bias_table(ds, preds, attributes, metric="em", n_trials=5, sample_size=50)
    assert any("Raise n_trials" in w for w in few.details["warnings"])


# -- group sizes for few-valued heuristics (issue 19, item 15) ------------------------------
@pytest.mark.parametrize(
    ("attribute", "sample_size", "capacity", "adapted"),
    [
        (np.r_[np.zeros(9655), np.ones(187)], 800, (187, 0.0), 93),  # negation, SNLI dev
        (np.repeat([0.0, 1.0, 2.0], [9600, 200, 42]), 800, (242, 0.0), 121),  # 0 vs 1-2
        (np.arange(9842.0), 800, (4921, 4920.0), 800),  # enough on both sides: unchanged
        (np.r_[np.zeros(100), np.ones(15)], 800, (15, 0.0), None),  # < 2 x 10: undefined
        (np.full(50, 3.0), 800, (0, math.nan), None),  # constant: nothing to split
    ],
)
def test_adapted_sample_size_known_answers(attribute, sample_size, capacity, adapted):
    smaller, cut = split_capacity(attribute)
    assert smaller == capacity[0]
    assert cut == capacity[1] or (math.isnan(cut) and math.isnan(capacity[1]))
    assert adapted_sample_size(attribute, sample_size) == adapted


@pytest.fixture(scope="module")
def snli_negation_model():
    """SNLI dev with a planted model: 50% right on negated hypotheses, 90% elsewhere."""
    from spurious import load_dataset
    from spurious.heuristics import compute_heuristics
    from tests.conftest import shared_data

    ds = load_dataset(shared_data("snli", "dev.jsonl"), "nli")
    names = ["negation_in_hypothesis", "all_words_in_premise", "is_subsequence"]
    attr = compute_heuristics(ds, names)
    neg = attr["negation_in_hypothesis"].to_numpy() > 0
    right = np.random.default_rng(0).random(len(ds)) < np.where(neg, 0.5, 0.9)
    pred = np.where(right, ds.labels, (ds.labels + 1) % 3)
    return ds, align_predictions(dict(zip(ds.ids, pred, strict=True)), ds, name="m"), attr


def test_few_valued_heuristics_on_snli_dev_get_a_size_that_defines_them(snli_negation_model):
    """At the paper's 800, negation, all_words_in_premise and is_subsequence are undefined on
    SNLI dev; the table says why and which size would define them, and adapts by default."""
    ds, model, attr = snli_negation_model
    names = ["negation_in_hypothesis", "all_words_in_premise", "is_subsequence"]
    fixed = bias_table(ds, [model], attr, n_trials=50, sample_size=800)
    for h in names:
        smaller, _ = split_capacity(attr[h].to_numpy())
        assert math.isnan(fixed.metrics[f"bias/m/{h}"])
        why = fixed.details["undefined"][h]
        assert f"leaves {smaller} example(s) on its smaller side" in why
        assert f"--sample-size {smaller // 2}" in why
    adapted = bias_table(ds, [model], attr, n_trials=50, sample_size=800, adapt_sample_size=True)
    assert adapted.details["undefined"] == {}
    for h in names:
        smaller, _ = split_capacity(attr[h].to_numpy())
        assert adapted.metrics[f"sample_size/{h}"] == smaller // 2
        assert "instead of 800" in adapted.details["sample_size_notes"][h]
    # The planted gap (0.9 vs 0.5) is found where it was planted, and only there.
    assert adapted.metrics["bias/m/negation_in_hypothesis"] > 0.1
    assert adapted.metrics["worse_group_accuracy/m/negation_in_hypothesis"] == pytest.approx(
        0.5, abs=0.1
    )
    assert adapted.metrics["bias/m/all_words_in_premise"] == 0.0


# -- the headline's evidence (issue 19: verdicts rest on an interval or a null test) -------
def _headline(ds, preds, attributes, **kw):
    from spurious.evaluate.prediction_bias.analysis import PredictionBias

    analysis = PredictionBias(**kw)
    res = bias_table(ds, preds, attributes, metric="em", natural=False,
                     n_permutations=analysis.n_permutations, **FAST)  # fmt: skip
    return analysis.headline(res), res


def test_permutation_null_known_answers():
    ds, preds, attributes = _toy_qa()
    res = bias_table(ds, preds, attributes, metric="em", n_permutations=19, **FAST)
    null = res.details["null"]
    # A planted 0.9 vs 0.3 gap: no permutation comes near it, p = 1 / (1 + 19).
    assert null["observed"] == pytest.approx(max(res.metrics["bias/biased/h"], 0.0))
    assert null["p_value"] == pytest.approx(1 / 20) and null["q95"] < 0.05
    fair = bias_table(ds, preds[1:], attributes, metric="em", n_permutations=19, **FAST)
    assert fair.metrics["max_bias"] == 0.0 and fair.metrics["max_bias_null_p_value"] == 1.0


def test_headline_rests_on_the_monte_carlo_interval_and_the_permutation_test():
    ds, preds, attributes = _toy_qa()
    head, res = _headline(ds, preds, attributes)
    assert head["severity"] == "high" and not head["inconclusive"]
    ev = head["evidence"]
    assert ev["basis"] == "interval+null_test" and ev["p_value"] <= 0.05
    lo, hi = ev["interval"]
    bias, sd = res.metrics["bias/biased/h"], res.metrics["bias_mc_sd/biased/h"]
    assert lo < bias < hi and hi - lo == pytest.approx(2 * 2.776 * sd, rel=1e-3)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_shuffled_scores_never_give_a_moderate_or_high_verdict(seed):
    """The biased model's scores shuffled across examples: the heuristic says nothing."""
    ds, preds, attributes = _toy_qa(n=1500, seed=seed)
    rng = np.random.default_rng(100 + seed)
    shuffled = [
        align_predictions(dict(zip(ds.ids, rng.permutation(p.values), strict=True)), ds,
                          name=p.name)
        for p in preds
    ]  # fmt: skip
    head, _ = _headline(ds, shuffled, attributes)
    assert head["severity"] not in ("moderate", "high"), head


def test_quick_profile_says_which_spacy_heuristics_it_left_out(caplog):
    import json

    from spurious import load_dataset
    from spurious.analysis import get_analysis
    from spurious.context import RunContext
    from spurious.heuristics import HEURISTICS, list_heuristics
    from tests.conftest import shared_data

    full = load_dataset(shared_data("squad", "dev-v1.1.json"), "qa")
    ds = full.subset(np.arange(600))
    keep = set(ds.ids)
    preds = []
    for m in ("electra-base", "bert-tiny"):
        raw = json.loads(shared_data("predictions", "squad", f"{m}.json").read_text())
        preds.append(align_predictions({k: v for k, v in raw.items() if k in keep}, ds, name=m))
    ctx = RunContext(ds, predictions=preds, progress=False)
    spacy_ones = [n for n in list_heuristics("qa") if HEURISTICS[n].requires_spacy]
    quick = get_analysis("prediction_bias")(
        **get_analysis("prediction_bias").profiles["quick"], n_trials=20, sample_size=100
    )
    with caplog.at_level("WARNING", logger="spurious"):
        res = quick.run(context=ctx)
    assert res.details["heuristics_left_out"] == spacy_ones and spacy_ones
    assert "left out the spaCy heuristics" in res.summary
    assert sum("left out the spaCy heuristics" in r.getMessage() for r in caplog.records) == 1
    named = get_analysis("prediction_bias")(
        no_spacy=True, heuristics=["answer_length"], n_trials=20, sample_size=100
    ).run(context=ctx)
    assert "heuristics_left_out" not in named.details  # the user chose the heuristics
