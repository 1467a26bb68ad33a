"""PECO (paper 003 Sec. 3.2): known answers, invariances, baselines and planted leakage."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import spurious
from spurious.data import Dataset
from spurious.data.synthetic import make_nli_artifacts
from spurious.detectors.peco import (
    Peco,
    auto_n_clusters,
    cluster_divergences,
    peco_area,
    peco_curve,
    permutation_scores,
    sweep,
)
from spurious.detectors.peco.score import label_counts, seed_bootstrap_interval
from spurious.exceptions import ParameterError
from spurious.report import build_section

FAST = {
    "features": "bow",
    "n_clusters": 10,
    "n_components": 10,
    "n_seeds": 2,
    "n_bootstrap": 30,
    "n_permutations": 30,
    "projection": "none",
}


# ---------------------------------------------------------------------------------------
# Divergences and the area, by hand
# ---------------------------------------------------------------------------------------
def test_divergences_of_a_toy_clustering_by_hand():
    # Global: 6 A, 3 B, 3 C -> (1/2, 1/4, 1/4). Cluster 0: 4 A, 0 B, 0 C; cluster 1: 2 A,
    # 3 B, 3 C over 8.
    counts = np.array([[4, 0, 0], [2, 3, 3]])
    l2 = cluster_divergences(counts, "l2")
    expected_0 = ((1 - 0.5) ** 2 + 0.25**2 + 0.25**2) / 3
    expected_1 = ((0.25 - 0.5) ** 2 + (0.375 - 0.25) ** 2 * 2) / 3
    np.testing.assert_allclose(l2, [expected_0, expected_1])
    kl = cluster_divergences(counts, "kl")
    np.testing.assert_allclose(
        kl, [np.log(2), 0.25 * np.log(0.5) + 2 * 0.375 * np.log(0.375 / 0.25)]
    )


def test_any_number_of_classes_and_absent_classes_are_left_out():
    # Five classes, one never used: C counts the four present.
    counts = np.array([[5, 0, 0, 0, 0], [0, 5, 0, 0, 0], [0, 0, 5, 0, 0], [0, 0, 0, 5, 0]])
    l2 = cluster_divergences(counts, "l2")
    np.testing.assert_allclose(l2, ((0.75**2 + 3 * 0.25**2) / 4,) * 4)
    # An empty cluster is dropped, not scored.
    assert len(cluster_divergences(np.r_[counts, [[0, 0, 0, 0, 0]]], "l2")) == 4


def test_eq12_area_is_the_exact_integral():
    s = np.array([0.4, 0.0, 0.1])
    # Sorted 0, 0.1, 0.4: 2/3 of clusters above t on [0, 0.1), 1/3 on [0.1, 0.4).
    assert peco_area(s) == pytest.approx(100 * (0.1 * 2 / 3 + 0.3 * 1 / 3))
    assert peco_area(s) == pytest.approx(100 * (s.mean() - s.min()))
    # A fine Riemann sum of the curve over [min, max] converges to it.
    t = np.linspace(s.min(), s.max(), 200_001)
    riemann = 100 * np.trapezoid(peco_curve(s, t), t)
    assert riemann == pytest.approx(peco_area(s), rel=1e-4)
    assert peco_area(np.array([0.2, 0.2, 0.2])) == 0.0
    assert np.isnan(peco_area(np.array([])))


def test_reference_curve_reproduces_the_20_step_sum():
    s = np.array([0.01, 0.06, 0.3])
    # thresholds 0, 0.05, ..., 0.95: fractions 1, 2/3, then 1/3 at 0.10-0.25, 0 from 0.30.
    assert peco_area(s, "reference") == pytest.approx(100 * (1 + 2 / 3 + 4 / 3) / 20)
    # Table 5's floor: any divergences in (0, 0.05] score exactly 100/20.
    assert peco_area(np.array([0.001, 0.02, 0.05]), "reference") == pytest.approx(5.0)
    # It approximates 100 * mean(s) from above on a 0.05 grid.
    rng = np.random.default_rng(0)
    for _ in range(20):
        s = rng.uniform(0, 0.9, size=30)
        assert 100 * s.mean() <= peco_area(s, "reference") <= 100 * s.mean() + 5.0 + 1e-9
    with pytest.raises(ParameterError, match="'integral'"):
        peco_area(s, "trapezoid")


def test_shuffled_baseline_and_basic_interval():
    clusters = np.repeat(np.arange(10), 40)
    leaky = clusters % 3  # every cluster label-pure
    null = permutation_scores([clusters], leaky, 10, 3, n_permutations=200, random_state=0)
    counts = label_counts(clusters, leaky, 10, 3)
    observed = peco_area(cluster_divergences(counts, "l2"))
    # The permutation null sits far below a perfectly leaky clustering ...
    assert null.scores["l2"].max() < observed or observed == 0.0
    # ... and its mean sorted divergences are small, increasing, one per cluster.
    ms = null.mean_sorted["l2"]
    assert len(ms) == 10 and np.all(np.diff(ms) >= 0) and ms[-1] < 0.05
    # Seeds 1.0 and 2.0, bootstrap deviations -0.1 / 0 / +0.1 around each seed's median.
    reps = np.array([[5.1, 7.2], [5.0, 7.1], [4.9, 7.0]])
    assert seed_bootstrap_interval(np.array([1.0, 2.0]), reps, 1.0) == (0.9, 2.1)


def test_auto_k_scales_with_the_data():
    assert [auto_n_clusters(n) for n in (500, 2_000, 9_842, 50_000)] == [10, 10, 49, 100]


# ---------------------------------------------------------------------------------------
# The analysis
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def planted():
    return make_nli_artifacts(n=1500, artifact_rate=0.9, random_state=0).dataset


@pytest.fixture(scope="module")
def result(planted):
    return Peco(**FAST).run(planted, progress=False)


def test_planted_artifact_scores_far_above_its_shuffled_baseline(result, planted):
    m = result.metrics
    for d in ("l2", "kl"):
        assert m[f"peco_{d}"] > 3 * m[f"peco_{d}_baseline_q95"]
        assert m[f"peco_{d}_p_value"] < 0.05
        assert m[f"peco_{d}_ci_low"] <= m[f"peco_{d}"] <= m[f"peco_{d}_ci_high"]
        assert m[f"peco_{d}_excess_ci_low"] <= m[f"peco_{d}_excess"]
        assert m[f"peco_{d}_seed_min"] <= m[f"peco_{d}"] <= m[f"peco_{d}_seed_max"]
    assert m["n_biased_clusters"] >= 1 and m["share_in_biased_regions"] > 0
    # The cue's examples sit in biased regions labelled with the region's dominant label.
    cue = np.array(["nobody" in h.lower() for h in planted.texts("hypothesis")])
    assert cue.sum() > 100
    assert result.scores["is_peco_issue"].to_numpy()[cue].mean() > 0.9
    assert result.headline["severity"] == "high" and not result.headline["inconclusive"]
    assert result.headline["evidence"]["basis"] == "interval+null_test"


def test_stronger_plant_scores_higher():
    def score(rate: float) -> float:
        ds = make_nli_artifacts(n=1500, artifact_rate=rate, random_state=1).dataset
        return Peco(**FAST).run(ds, progress=False).metrics["peco_l2_excess"]

    weak, strong = score(0.3), score(0.9)
    assert strong > weak > 0


def test_shuffled_labels_score_like_the_baseline(planted, result):
    # Labels shuffled in the data: PECO should look like its own permutation baseline
    # (p-values spread over [0, 1], excess near 0), far below the planted data's excess.
    frame = planted.to_pandas()
    p_values, excess = [], []
    for seed in range(8):
        labels = np.random.default_rng(seed).permutation(frame["label"].to_numpy())
        shuffled = Dataset.from_frame(frame.assign(label=labels), "nli")
        m = Peco(**{**FAST, "n_bootstrap": 0}).run(shuffled, progress=False).metrics
        p_values.append(m["peco_l2_p_value"])
        excess.append(m["peco_l2_excess"])
    assert np.median(p_values) > 0.1 and np.mean(np.array(p_values) < 0.05) <= 3 / 8
    assert abs(np.mean(excess)) < 0.05 * result.metrics["peco_l2_excess"]


def test_invariant_to_example_order_and_class_names(planted, result):
    frame = planted.to_pandas()
    shuffled_rows = Dataset.from_frame(frame.sample(frac=1.0, random_state=5), "nli")
    other = Peco(**FAST).run(shuffled_rows, progress=False)
    for key, value in result.metrics.items():
        assert other.metrics[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
    a = result.scores.set_index("id")
    b = other.scores.set_index("id").loc[a.index]
    np.testing.assert_array_equal(a["cluster"], b["cluster"])
    # Relabelling the classes (a permutation of the label names) changes nothing.
    relabel = {"entailment": "neutral", "neutral": "contradiction", "contradiction": "entailment"}
    renamed = Dataset.from_frame(frame.assign(label=frame["label"].map(relabel)), "nli")
    m = Peco(**FAST).run(renamed, progress=False).metrics
    for d in ("l2", "kl"):
        assert m[f"peco_{d}"] == pytest.approx(result.metrics[f"peco_{d}"], rel=1e-9)


def test_scores_and_details(result, planted):
    s = result.scores
    assert s["id"].tolist() == list(planted.ids)
    assert s["cluster"].between(0, 9).all()
    sizes = s.groupby("cluster").size()
    assert (s["cluster_size"] == s["cluster"].map(sizes)).all()
    assert (
        s["in_biased_region"] == (s["divergence_l2"] > result.metrics["region_threshold"])
    ).all()
    assert (s["is_peco_issue"] <= s["in_biased_region"]).all()
    # The authors' rule by default: a sum of squares above 0.25 = Eq. 11 above 0.25 / 3.
    assert result.metrics["region_threshold"] == pytest.approx(0.25 / 3)
    d = result.details
    assert d["view"] == "hypothesis_only" and len(d["clusters"]) == 10
    assert sum(c["size"] for c in d["clusters"]) == len(planted)
    for region in d["regions"]:
        assert region["examples"] and all("hypothesis" in e for e in region["examples"])
    assert len(d["seed_scores"]["l2"]) == 2


def test_same_seed_same_result_other_seed_differs(planted):
    a = Peco(**FAST, random_state=3).run(planted, progress=False)
    b = Peco(**FAST, random_state=3).run(planted, progress=False)
    pd.testing.assert_frame_equal(a.scores, b.scores)
    assert a.metrics == b.metrics


def test_sweep_table_matches_single_fits(planted):
    res = Peco(**{**FAST, "run_sweep": True}).run(planted, progress=False)
    table = pd.DataFrame(res.details["sweep"])
    assert set(table["k"]) == {10, 25, 50, 100}
    assert set(table["n_components"]) == {"none", "50", "100"}
    assert len(table) == 4 * 3 * 2
    assert (table["excess"] == table["peco"] - table["baseline"]).all()
    direct = sweep(np.eye(4), np.array([0, 1, 0, 1]), 2, ks=(2,), components=(None,))
    assert len(direct) == 2 and set(direct["divergence"]) == {"l2", "kl"}


def test_parameters_and_sizes_are_checked(planted):
    with pytest.raises(ParameterError, match="n_clusters"):
        Peco(**{**FAST, "n_clusters": 1000}).run(planted.subset(np.arange(100)), progress=False)
    with pytest.raises(ParameterError, match="'divergence'"):
        Peco(divergence="js").run(planted, progress=False)
    with pytest.raises(ParameterError, match="'view'"):
        Peco(**{**FAST, "view": "claim"}).run(planted, progress=False)
    with pytest.raises(ParameterError, match="evaluation split"):
        Peco(**{**FAST, "features": "psc"}).run(planted, progress=False)
    auto = Peco(**{**FAST, "n_clusters": "auto"}).run(planted, progress=False)
    assert auto.metrics["n_clusters"] == 10


def test_cartography_in_the_same_run_gives_the_fig8_comparison(planted):
    train, test = planted.split(0.4, random_state=0)
    run = spurious.run(
        train,
        eval=test,
        # Threshold between the cue's pure clusters (0.22) and the rest (~0.04).
        analyses={
            "cartography": {"features": "bow", "epochs": 3},
            "peco": {**FAST, "region_rule": "eq11", "region_threshold": 0.1},
        },
        progress=False,
    )
    res = run["peco"]
    carto = res.details["cartography"]
    n_biased = int(res.scores["in_biased_region"].sum())
    assert sum(carto["biased"]) == n_biased and sum(carto["other"]) == len(test) - n_biased
    assert 0 < n_biased < len(test)
    m = res.metrics
    assert 0 <= m["confidence_biased"] <= 1 and 0 <= m["confidence_mwu_p"] <= 1
    # The cue makes its (biased-region) examples easy for the full-input model too.
    assert m["confidence_biased"] > m["confidence_other"]
    alone = Peco(**FAST).run(train, test, progress=False)
    assert "cartography" not in alone.details


def test_section_renders_curve_map_regions_and_escapes_text():
    frame = make_nli_artifacts(n=600, artifact_rate=0.9, random_state=0).dataset.to_pandas()
    frame.loc[frame.index[:300], "hypothesis"] = (
        "<script>alert(1)</script> nobody " + frame["hypothesis"].iloc[:300]
    )
    ds = Dataset.from_frame(frame, "nli")
    res = Peco(**{**FAST, "projection": "pca", "run_sweep": True}).run(ds, progress=False)
    html = str(build_section(res).html_body)
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;" in html or res.metrics["n_biased_clusters"] == 0
    for needle in ("PECO curve", "Biased regions", "sweep"):
        assert needle in html
