"""PECO verdicts rest on evidence (issue 19 items 1-4): the authors' reference computation,
single-text tasks, intervals over seeds and examples, shuffled-label controls, region rules."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from spurious.context import RunContext
from spurious.data import Dataset
from spurious.data.synthetic import make_nli_artifacts
from spurious.detectors.peco import Peco, cluster_divergences
from spurious.detectors.peco.score import (
    cluster_null_divergences,
    peco_area,
    peco_from_counts,
    reference_divergences,
)
from spurious.exceptions import AnalysisError, ParameterError

FAST = {
    "features": "bow",
    "n_clusters": 10,
    "n_components": 10,
    "n_seeds": 2,
    "n_bootstrap": 30,
    "n_permutations": 30,
    "projection": "none",
}


def _shuffled(ds: Dataset, seed: int) -> Dataset:
    frame = ds.to_pandas()
    labels = np.random.default_rng(seed).permutation(frame["label"].to_numpy())
    return Dataset.from_frame(frame.assign(label=labels), ds.task.name)


# ---------------------------------------------------------------------------------------
# Item 4: the authors' computation, by hand
# ---------------------------------------------------------------------------------------
def test_reference_divergences_and_curve_by_hand():
    # Global (6, 3, 3) / 12 = (1/2, 1/4, 1/4); cluster 0 = (1, 0, 0), cluster 1 = (2, 3, 3) / 8.
    counts = np.array([[4, 0, 0], [2, 3, 3]])
    l2 = reference_divergences(counts, "l2")
    np.testing.assert_allclose(l2, [0.25 + 2 * 0.0625, 0.0625 + 2 * 0.125**2])  # 0.375, 0.09375
    # No 1/C: C times Eq. 11.
    np.testing.assert_allclose(l2, 3 * cluster_divergences(counts, "l2"))
    # KL(p_G || p_i) in bits; a label missing from a cluster counts log2(p_G / 1e-30).
    kl = reference_divergences(counts, "kl")
    missing = 0.5 * np.log2(0.5) + 2 * 0.25 * (np.log2(0.25) - np.log2(1e-30))
    assert kl[0] == pytest.approx(missing)
    assert kl[1] == pytest.approx(0.5 * np.log2(2) + 2 * 0.25 * np.log2(0.25 / 0.375))
    # ... which is not our KL(p_i || p_G) in nats.
    assert cluster_divergences(counts, "kl")[1] != pytest.approx(kl[1])
    # L2 curve, thresholds 0, 0.05, ..., 0.95: 2 clusters above 0 and 0.05, 1 above
    # 0.10-0.35 (6 thresholds): (2 + 2 + 6) / 2 / 20 = 0.25 -> 25.0 on Table 5's scale.
    assert peco_from_counts(counts, "l2", "reference") == pytest.approx(25.0)
    # KL curve, thresholds 0, 0.25, ..., 4.75 bits: 2 above 0, then 1 above the 19 others;
    # Table 5 prints it as a fraction: (2 + 19) / 2 / 20.
    assert peco_from_counts(counts, "kl", "reference") == pytest.approx(0.525)
    # Table 5's floors: 5.0 (L2) and 0.05 (KL) when every cluster diverges a little.
    tiny = np.array([0.001, 0.01, 0.04])
    assert peco_area(tiny, "reference", divergence="l2") == pytest.approx(5.0)
    assert peco_area(tiny, "reference", divergence="kl") == pytest.approx(0.05)


def test_reported_reference_is_the_authors_computation_on_the_first_clusters():
    ds = make_nli_artifacts(n=600, artifact_rate=0.9, random_state=2).dataset
    res = Peco(**{**FAST, "n_seeds": 1}).run(ds, progress=False)
    counts = np.array(
        [[c["counts"][n] for n in res.details["label_names"]] for c in res.details["clusters"]]
    )
    for d in ("l2", "kl"):
        assert res.metrics[f"peco_{d}_reference"] == pytest.approx(
            peco_area(reference_divergences(counts, d), "reference", divergence=d)
        )


# ---------------------------------------------------------------------------------------
# Item 1: no elicited sentence, no PECO
# ---------------------------------------------------------------------------------------
def test_single_text_task_is_skipped_with_the_reason():
    rng = np.random.default_rng(0)
    words = np.array(["good", "bad", "fine", "awful", "great", "dull"])
    frame = pd.DataFrame(
        {
            "text": [" ".join(rng.choice(words, 5)) for _ in range(200)],
            "label": rng.choice(["pos", "neg"], 200),
        }
    )
    ds = Dataset.from_frame(frame, "text")
    why = Peco(**FAST).unmet(RunContext(ds, progress=False))
    assert len(why) == 1 and "elicited sentence of a pair" in why[0]
    assert "learnable" in why[0]
    with pytest.raises(AnalysisError, match="elicited sentence"):
        Peco(**FAST).run(ds, progress=False)


def test_a_view_of_the_whole_pair_is_refused():
    ds = make_nli_artifacts(n=300, random_state=0).dataset
    with pytest.raises(ParameterError, match="partial input"):
        Peco(**{**FAST, "view": "full"}).run(ds, progress=False)
    with pytest.raises(ParameterError, match="partial input"):
        Peco(**{**FAST, "view": ["premise", "hypothesis"]}).run(ds, progress=False)


# ---------------------------------------------------------------------------------------
# Item 2: severity from an interval and a null test
# ---------------------------------------------------------------------------------------
def test_shuffled_labels_never_give_a_moderate_or_high_verdict():
    planted = make_nli_artifacts(n=900, artifact_rate=0.9, random_state=0).dataset
    severities = []
    for seed in range(8):
        res = Peco(**FAST).run(_shuffled(planted, seed), progress=False)
        h = res.headline
        severities.append(h["severity"])
        assert h["evidence"]["null"] == "shuffled labels"
        assert h["evidence"]["interval"] is not None and h["evidence"]["p_value"] is not None
    assert all(s in ("none", "low") for s in severities), severities
    assert severities.count("none") >= 6


def test_planted_strong_artifact_is_high_on_its_interval():
    planted = make_nli_artifacts(n=900, artifact_rate=0.9, random_state=0).dataset
    res = Peco(**FAST).run(planted, progress=False)
    m, h = res.metrics, res.headline
    assert h["severity"] == "high" and not h["inconclusive"]
    assert h["evidence"]["interval"] == [m["peco_l2_excess_ci_low"], m["peco_l2_excess_ci_high"]]
    assert m["peco_l2_excess_ci_low"] >= Peco.verdict_scale.high


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_intervals_contain_their_estimates_on_a_small_weak_set(seed):
    # The CAD case: 400 pairs, k = 10, a weak cue; the basic interval used to lie below
    # the raw score there.
    ds = make_nli_artifacts(n=400, artifact_rate=0.15, random_state=seed).dataset
    res = Peco(**{**FAST, "n_seeds": 3, "n_bootstrap": 60}).run(ds, progress=False)
    m = res.metrics
    for d in ("l2", "kl"):
        assert 0 <= m[f"peco_{d}_ci_low"] <= m[f"peco_{d}"] <= m[f"peco_{d}_ci_high"]
        assert m[f"peco_{d}_excess_ci_low"] <= m[f"peco_{d}_excess"]
        assert m[f"peco_{d}_excess"] <= m[f"peco_{d}_excess_ci_high"]
        # The interval covers the seeds: at least as wide as their excesses' range.
        seeds = np.asarray(res.details["seed_scores"][d])
        assert m[f"peco_{d}_ci_high"] - m[f"peco_{d}_ci_low"] >= np.ptp(seeds) - 1e-9


def test_reference_integral_is_judged_by_the_permutation_test_alone():
    planted = make_nli_artifacts(n=600, artifact_rate=0.9, random_state=0).dataset
    res = Peco(**{**FAST, "integral": "reference"}).run(planted, progress=False)
    h = res.headline
    assert h["evidence"]["basis"] == "null_test" and h["severity"] == "low"


# ---------------------------------------------------------------------------------------
# Item 3: biased regions
# ---------------------------------------------------------------------------------------
def test_cluster_null_divergences_match_a_direct_permutation():
    clusters = np.repeat(np.arange(3), [5, 10, 15])
    labels = np.arange(30) % 3
    null = cluster_null_divergences(clusters, labels, 3, 3, n_permutations=4, random_state=7)
    rng = np.random.default_rng(7)
    from spurious.detectors.peco.score import label_counts

    for row in null:
        counts = label_counts(clusters, rng.permutation(labels), 3, 3)
        np.testing.assert_allclose(row, cluster_divergences(counts, "l2"))


def test_rules_flag_as_many_clusters_as_their_null_under_shuffled_labels():
    # Small clusters (n = 400, k = 40): a fixed threshold flags clusters by chance (the
    # old 0.2**2 / C many, the authors' 0.25 a few), the null rule about alpha * k; for
    # every rule the count with shuffled labels is close to what it flags on its own null.
    base = make_nli_artifacts(n=400, artifact_rate=0.9, random_state=3).dataset
    params = {**FAST, "n_clusters": 40, "n_bootstrap": 0, "n_permutations": 60, "n_seeds": 1}
    observed = {"eq11": [], "authors": [], "null": []}
    expected = {"eq11": [], "authors": [], "null": []}
    for seed in range(6):
        ds = _shuffled(base, seed)
        for rule in observed:
            m = Peco(**params, region_rule=rule).run(ds, progress=False).metrics
            observed[rule].append(m["n_biased_clusters"])
            expected[rule].append(m["n_biased_clusters_null"])
    assert np.mean(expected["eq11"]) > 10 and np.mean(expected["authors"]) > 1
    assert np.mean(expected["null"]) <= 0.05 * 40 + 0.5
    for rule in observed:
        gap = abs(np.mean(observed[rule]) - np.mean(expected[rule]))
        assert gap <= 0.25 * np.mean(expected[rule]) + 1.0, (rule, observed, expected)


def test_null_rule_flags_a_planted_cluster():
    planted = make_nli_artifacts(n=1200, artifact_rate=0.9, random_state=0).dataset
    res = Peco(**{**FAST, "region_rule": "null", "n_permutations": 100}).run(
        planted, progress=False
    )
    m = res.metrics
    cue = np.array(["nobody" in h.lower() for h in planted.texts("hypothesis")])
    assert res.scores["is_peco_issue"].to_numpy()[cue].mean() > 0.9
    assert m["n_biased_clusters"] > m["n_biased_clusters_null"] + 1
    assert "region_threshold" not in m
    flagged = [c for c in res.details["clusters"] if c["biased"]]
    assert flagged and all(c["p_value"] <= 0.05 for c in flagged)


def test_region_rules_and_thresholds():
    ds = make_nli_artifacts(n=600, artifact_rate=0.9, random_state=1).dataset
    default = Peco(**FAST).run(ds, progress=False)
    ours = Peco(**FAST, region_rule="eq11").run(ds, progress=False)
    assert default.metrics["region_threshold"] == pytest.approx(0.25 / 3)  # 0.0833
    assert ours.metrics["region_threshold"] == pytest.approx(0.2**2 / 3)  # 0.0133
    # The lower threshold flags at least the clusters the authors' rule flags.
    assert ours.metrics["n_biased_clusters"] >= default.metrics["n_biased_clusters"]
    custom = Peco(**FAST, region_threshold=0.5).run(ds, progress=False)
    assert custom.metrics["region_threshold"] == pytest.approx(0.5 / 3)
    with pytest.raises(ParameterError, match="region_rule"):
        Peco(**FAST, region_rule="loose").run(ds, progress=False)
