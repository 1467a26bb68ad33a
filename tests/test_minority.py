"""Minority examples (paper 002 Sec. 3, App. C): known answers, planted signals, scaling route."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import adjusted_rand_score

from spurious.context import RunContext
from spurious.data.synthetic import make_nli_artifacts
from spurious.detectors.minority import (
    MinorityExamples,
    choose_rule,
    find_minority_examples,
    homogeneity_stats,
    label_counts,
    minority_labels,
    purity_null,
)
from spurious.exceptions import AnalysisError, ParameterError
from spurious.models.clustering import (
    MLPEmbedding,
    auto_n_pseudo_labels,
    kmeans_clustering,
    nearest_neighbor_assign,
    ward_clustering,
)
from spurious.report import build_section

CENTERS = np.array([[0.0, 0.0], [20.0, 0.0], [0.0, 20.0], [20.0, 20.0]])


def _blobs(n_per: int = 25, seed: int = 0, spread: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Four well-separated blobs; blob b has majority label b % 3 (labels 0, 1, 2, 0)."""
    rng = np.random.default_rng(seed)
    X = np.concatenate([rng.normal(c, spread, size=(n_per, 2)) for c in CENTERS])
    y = np.repeat([0, 1, 2, 0], n_per)
    return X.astype(np.float32), y


def _plant(y: np.ndarray, n_per: int) -> tuple[np.ndarray, np.ndarray]:
    """Relabel a few rows of each blob: these (and only these) are minority examples."""
    y = y.copy()
    planted = np.array([0, 1, n_per + 3, 2 * n_per + 5, 2 * n_per + 6, 3 * n_per + 9])
    y[planted] = (y[planted] + 1) % 3
    return y, planted


# ---------------------------------------------------------------------------------------
# Known answers
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["ward", "kmeans", "deepcluster"])
def test_separated_blobs_give_exactly_the_planted_minority_marks(method):
    X, y0 = _blobs(40)
    y, planted = _plant(y0, 40)
    kw = {"n_pseudo_labels": 8, "hidden_size": 32, "epochs": 5} if method == "deepcluster" else {}
    out = find_minority_examples(X, y, method=method, n_clusters=4, random_state=0, **kw)
    assert np.flatnonzero(out.train_anti_biased).tolist() == planted.tolist()
    # Clusters are the blobs, numbered by size (all equal: by first row).
    assert adjusted_rand_score(np.repeat(np.arange(4), 40), out.train_clusters) == 1.0
    assert out.majority[out.train_clusters[[0, 40, 80, 120]]].tolist() == [0, 1, 2, 0]
    assert out.counts.sum() == len(y)


def test_eval_examples_take_their_nearest_training_neighbours_cluster():
    X, y0 = _blobs(30)
    y, _ = _plant(y0, 30)
    # Query points near each blob centre, with the majority label or not.
    Xq = CENTERS + np.array([[0.3, -0.2]])
    yq = np.array([0, 2, 2, 1])  # blob 0 majority 0 (biased), blob 1 majority 1 (anti) ...
    out = find_minority_examples(X, y, Xq, yq, method="ward", n_clusters=4)
    expected_cluster = out.train_clusters[[0, 30, 60, 90]]
    assert out.eval_clusters.tolist() == expected_cluster.tolist()
    assert out.eval_anti_biased.tolist() == [False, True, False, True]
    # The neighbour is the true nearest training point.
    d = np.linalg.norm(X[None, :, :] - Xq[:, None, :], axis=2)
    assert out.eval_neighbor.tolist() == d.argmin(axis=1).tolist()
    np.testing.assert_allclose(out.eval_distance, d.min(axis=1), rtol=1e-5)


def test_nearest_neighbor_assign_by_hand():
    lab, nn, dist = nearest_neighbor_assign(
        [[0, 0], [3, 0], [10, 0]], ["a", "b", "c"], [[1, 0], [2.5, 0], [9, 9]]
    )
    assert lab.tolist() == ["a", "b", "c"] and nn.tolist() == [0, 1, 2]
    np.testing.assert_allclose(dist, [1.0, 0.5, np.hypot(1, 9)])


def test_minority_rules_by_hand():
    counts = label_counts([0] * 6 + [1] * 5, [0, 0, 0, 1, 1, 2, 1, 1, 1, 0, 0], 2, 3)
    assert counts.tolist() == [[3, 2, 1], [2, 3, 0]]
    assert minority_labels(counts).tolist() == [[False, True, True], [True, False, True]]
    # Footnote 10: the least frequent label only (an absent label counts 0).
    assert minority_labels(counts, "least_frequent").tolist() == [
        [False, False, True],
        [False, False, True],
    ]
    # Majority ties go to the lower label id; an empty cluster has no minority label.
    assert minority_labels([[2, 2, 1], [0, 0, 0]]).tolist() == [
        [False, True, True],
        [False, False, False],
    ]


def test_least_frequent_variant_marks_a_subset():
    X, y0 = _blobs(40, seed=1)
    rng = np.random.default_rng(0)
    y = y0.copy()
    flip = rng.choice(len(y), 30, replace=False)
    y[flip] = rng.integers(0, 3, size=30)
    both = find_minority_examples(X, y, method="ward", n_clusters=4)
    least = find_minority_examples(
        X, y, method="ward", n_clusters=4, minority_rule="least_frequent"
    )
    assert (least.train_clusters == both.train_clusters).all()
    assert not (least.train_anti_biased & ~both.train_anti_biased).any()  # a subset
    # Exactly the examples whose label is their cluster's rarest.
    rarest = least.counts.argmin(axis=1)
    expected = (y == rarest[least.train_clusters]) & (y != least.majority[least.train_clusters])
    assert least.train_anti_biased.tolist() == expected.tolist()
    assert least.train_anti_biased.sum() < both.train_anti_biased.sum()


def test_homogeneity_stats_by_hand():
    s = homogeneity_stats([[95, 5], [80, 20], [60, 40]])
    assert s["mean_majority_share"] == pytest.approx((0.95 + 0.8 + 0.6) / 3)
    assert s["n_clusters_minority_over_10pct"] == 2.0
    assert s["weighted_majority_share"] == pytest.approx(235 / 300)
    assert s["base_majority_share"] == pytest.approx(235 / 300)


def test_auto_pseudo_labels_rule():
    assert auto_n_pseudo_labels(67_349, 10) == 1496  # SST-2: paper's ~1500
    assert auto_n_pseudo_labels(10_000, 10) == 222
    assert auto_n_pseudo_labels(10**6, 10) == 1500
    assert auto_n_pseudo_labels(100, 10) == 20
    assert auto_n_pseudo_labels(15, 10) == 15


# ---------------------------------------------------------------------------------------
# Determinism
# ---------------------------------------------------------------------------------------
def test_same_seed_same_clusters_and_marks():
    X, y0 = _blobs(30, spread=6.0)  # overlapping: the seed matters
    y, _ = _plant(y0, 30)
    kw = {"method": "deepcluster", "n_clusters": 5, "n_pseudo_labels": 12, "hidden_size": 16}
    a = find_minority_examples(X, y, random_state=3, **kw)
    b = find_minority_examples(X, y, random_state=3, **kw)
    assert (a.train_clusters == b.train_clusters).all()
    assert (a.train_anti_biased == b.train_anti_biased).all()
    np.testing.assert_array_equal(a.train_embedding, b.train_embedding)
    c = find_minority_examples(X, y, random_state=4, **kw)
    assert not np.array_equal(a.train_embedding, c.train_embedding)


# ---------------------------------------------------------------------------------------
# The scalable route
# ---------------------------------------------------------------------------------------
def _clustered(n: int, d: int = 32, k: int = 8, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(k, d)) * 6
    return (centers[rng.integers(0, k, n)] + rng.normal(size=(n, d))).astype(np.float32)


def test_approximate_ward_agrees_with_exact_on_easy_data():
    X = _clustered(3000)
    exact = ward_clustering(X, 8, route="exact")
    approx = ward_clustering(X, 8, route="approximate", n_preclusters=100)
    assert exact.route == "exact" and approx.route == "approximate"
    assert adjusted_rand_score(exact.labels, approx.labels) > 0.99
    assert approx.info["n_preclusters"] <= 100 and approx.info["n_replicas"] == 3000
    # auto picks the exact route below the threshold and the approximate one above.
    assert ward_clustering(X, 8, exact_max_samples=2000, n_preclusters=100).route == "approximate"
    assert ward_clustering(X, 8).route == "exact"


def test_count_weighting_reproduces_ward_on_duplicated_points():
    # Points that are copies of a few centroids: Ward on the count-weighted centroids must
    # give exactly Ward on all points (the pre-clusters are the distinct points).
    rng = np.random.default_rng(0)
    base = rng.normal(size=(60, 5)).astype(np.float32) * 3
    X = np.repeat(base, rng.integers(1, 12, size=60), axis=0)
    exact = ward_clustering(X, 6, route="exact")
    approx = ward_clustering(X, 6, route="approximate", n_preclusters=60)
    assert adjusted_rand_score(exact.labels, approx.labels) == 1.0


def test_ward_matches_scikit_learn():
    from sklearn.cluster import AgglomerativeClustering

    X = _clustered(500, d=8, k=5, seed=2) + np.random.default_rng(1).normal(size=(500, 8)) * 3
    ours = ward_clustering(X, 5).labels
    ref = AgglomerativeClustering(n_clusters=5, linkage="ward").fit_predict(X)
    assert adjusted_rand_score(ours, ref) == 1.0


def test_kmeans_switches_to_minibatch_above_the_threshold():
    X = _clustered(2000)
    assert kmeans_clustering(X, 8).route == "lloyd"
    mb = kmeans_clustering(X, 8, exact_max_samples=1000)
    assert mb.route == "minibatch"
    assert adjusted_rand_score(kmeans_clustering(X, 8).labels, mb.labels) > 0.99


# ---------------------------------------------------------------------------------------
# The analysis on planted text data
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def split():
    return make_nli_artifacts(n=600, artifact_rate=0.9, random_state=0).dataset.split(
        0.3, random_state=0
    )


def test_planted_cue_clusters_into_a_contradiction_cluster(split):
    """A hypothesis-only bag-of-words representation gathers the planted cue's examples in
    a cluster whose majority is the cue's label: they are biased, the others mostly not."""
    train, test = split
    res = MinorityExamples(
        features="bow",
        view="hypothesis_only",
        clustering="ward",
        n_clusters=4,
        task_epochs=0,
        minority_rule="not_majority",
    ).run(train, test)
    has_cue = train.frame["hypothesis"].str.contains("Nobody").to_numpy()
    ctx = RunContext(train, test, progress=False)
    X = ctx.features("bow", "hypothesis_only", split="train")
    out = find_minority_examples(X, train.labels, method="ward", n_clusters=4)
    cue_cluster = np.bincount(out.train_clusters[has_cue]).argmax()
    assert train.label_names[out.majority[cue_cluster]] == "contradiction"
    assert out.counts[cue_cluster].max() / out.counts[cue_cluster].sum() > 0.9
    assert out.train_anti_biased[has_cue].mean() < 0.2
    assert out.train_anti_biased[~has_cue].mean() > 0.4
    # Scores and marks of the analysis agree with the matrices.
    marks = res.marks
    train_marks = marks[marks["split"] == "train"].set_index("id")["anti_biased"]
    assert train_marks.loc[list(train.ids)].tolist() == out.train_anti_biased.tolist()
    assert set(marks["definition"]) == {"minority"}
    assert len(marks) == len(train) + len(test)
    assert res.scores["is_minority_issue"].equals(res.scores["anti_biased"])
    assert res.metrics["n_anti_biased_eval"] == res.scores["anti_biased"].sum()
    assert (res.scores["minority_score"] > 1 - res.scores["cluster_majority_share"] - 1e-12).all()


def test_analysis_default_deepcluster_and_report(split):
    train, test = split
    res = MinorityExamples(features="bow", compare_methods=True, n_examples=2).run(train, test)
    m = res.metrics
    assert m["n_clusters"] == 10 and m["n_pseudo_labels"] == auto_n_pseudo_labels(len(train), 10)
    assert 0 <= m["anti_biased_fraction_train"] <= 1
    assert {"kmeans_mean_minority_share", "ward_mean_minority_share"} <= set(m)
    assert set(res.details["comparison"]) == {"deepcluster", "ward", "kmeans"}
    assert sum(c["n_train"] for c in res.details["clusters"]) == len(train)
    html = str(build_section(res).html_body)
    assert "Label homogeneity by clustering method" in html and "Cluster 0" in html


def test_report_escapes_dataset_text(split):
    train, test = split
    frame = test.frame.copy()
    frame.loc[frame.index[0], "hypothesis"] = "<script>alert(1)</script>"
    from spurious.data import Dataset

    evil = Dataset.from_frame(frame, "nli", label_names=test.label_names)
    res = MinorityExamples(features="bow", n_examples=200, clustering="kmeans").run(train, evil)
    html = str(build_section(res).html_body)
    assert "<script>alert(1)" not in html and "&lt;script&gt;" in html


def test_without_eval_split_the_training_split_is_scored(split):
    train, _ = split
    res = MinorityExamples(features="bow", clustering="kmeans", n_clusters=3).run(train)
    assert len(res.scores) == len(train) and "nn_distance" not in res.scores
    assert set(res.marks["split"]) == {"train"}
    assert res.metrics["anti_biased_fraction"] == res.metrics["anti_biased_fraction_train"]


# ---------------------------------------------------------------------------------------
# Errors name the argument
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"n_clusters": 1}, "'n_clusters' parameter"),
        ({"clustering": "dbscan"}, "'clustering' parameter"),
        ({"minority_rule": "rarest"}, "'minority_rule' parameter"),
        ({"n_pseudo_labels": "many"}, "'n_pseudo_labels' parameter"),
        ({"ward_route": "fast"}, "'ward_route' parameter"),
        ({"layer": -2}, "'layer' parameter"),
        ({"features": "no_such_featurizer"}, "'features' parameter"),
    ],
)
def test_parameter_errors_name_the_argument(params, match):
    with pytest.raises(ParameterError, match=match):
        MinorityExamples(**params).validate_params()


def test_function_errors_name_the_argument():
    X, y = _blobs(5)
    with pytest.raises(ParameterError, match="'n_clusters'"):
        find_minority_examples(X, y, n_clusters=100)
    with pytest.raises(ParameterError, match="'y_train'"):
        find_minority_examples(X, y[:-1])
    with pytest.raises(ParameterError, match="'n_pseudo_labels'"):
        find_minority_examples(X, y, n_pseudo_labels=1000)
    with pytest.raises(ParameterError, match="'route'"):
        ward_clustering(X, 2, route="fast")
    with pytest.raises(ParameterError, match="'X_query'"):
        nearest_neighbor_assign(X, y, np.zeros((2, 3)))
    with pytest.raises(ParameterError, match="'pseudo_labels'"):
        MLPEmbedding().fit(X, y[:3])
    with pytest.raises(ParameterError, match="'rule'"):
        minority_labels([[1, 2]], "rarest")


def test_too_few_training_examples_is_a_clear_error(split):
    train, _ = split
    tiny = train.subset(np.arange(4))
    with pytest.raises(AnalysisError, match="n_clusters=10"):
        MinorityExamples(features="bow").run(tiny)


def test_marks_table_is_long_format(split):
    train, test = split
    res = MinorityExamples(features="bow", clustering="kmeans", n_clusters=3).run(train, test)
    assert list(res.marks.columns)[:4] == ["id", "split", "definition", "anti_biased"]
    eval_marks = res.marks[res.marks["split"] == "eval"]
    pd.testing.assert_series_equal(
        eval_marks["anti_biased"].reset_index(drop=True),
        res.scores["anti_biased"].reset_index(drop=True),
        check_names=False,
    )


def test_task_model_makes_the_clusters_label_aware(split):
    """Paper 002 clusters a model trained on the task; without that step frozen features
    cluster by content and every cluster is label-balanced (as measured on SNLI)."""
    train, _ = split
    ctx = RunContext(train, progress=False)
    X = ctx.features("bow", "full", split="train")
    plain = find_minority_examples(X, train.labels, method="kmeans", n_clusters=6)
    tuned = find_minority_examples(X, train.labels, method="kmeans", n_clusters=6, task_epochs=10)
    gain = [
        homogeneity_stats(o.counts)["weighted_majority_share"]
        - homogeneity_stats(o.counts)["base_majority_share"]
        for o in (plain, tuned)
    ]
    assert gain[1] > gain[0] + 0.2
    assert tuned.info["task_model"]["epochs"] == 10
    with pytest.raises(ParameterError, match="'task_epochs'"):
        find_minority_examples(X, train.labels, task_epochs=-1)


# ---------------------------------------------------------------------------------------
# Footnote 10's switch and the purity test (issue 19 item 10)
# ---------------------------------------------------------------------------------------
def test_choose_rule_switches_above_forty_percent_by_hand():
    # 8 of 20 marked by "all but the majority": exactly 40% is not "more than 40%".
    assert choose_rule([[6, 2, 2], [6, 2, 2]]) == ("not_majority", pytest.approx(0.4))
    # 9 of 20: 45% > 40%.
    assert choose_rule([[5, 3, 2], [6, 2, 2]]) == ("least_frequent", pytest.approx(0.45))
    assert choose_rule([[5, 3, 2]], max_share=0.6)[0] == "not_majority"
    assert choose_rule([[5, 3, 2]], "not_majority")[0] == "not_majority"
    with pytest.raises(ParameterError, match="'rule' argument"):
        choose_rule([[1, 1]], "rarest")


def test_auto_rule_switches_when_marking_exceeds_forty_percent():
    """Labels unrelated to the blobs: 'all but the majority' marks ~60%, so footnote 10's
    rule applies and the marks are exactly those of least_frequent."""
    X, _ = _blobs(40, seed=2)
    y = np.random.default_rng(0).integers(0, 3, size=len(X))
    auto = find_minority_examples(X, y, method="ward", n_clusters=4, minority_rule="auto")
    least = find_minority_examples(
        X, y, method="ward", n_clusters=4, minority_rule="least_frequent"
    )
    both = find_minority_examples(X, y, method="ward", n_clusters=4, minority_rule="not_majority")
    assert both.train_anti_biased.mean() > 0.4
    assert auto.info["minority_rule"]["used"] == "least_frequent"
    assert auto.info["minority_rule"]["switched"] is True
    assert auto.info["minority_rule"]["not_majority_share_train"] == pytest.approx(
        both.train_anti_biased.mean()
    )
    assert auto.train_anti_biased.tolist() == least.train_anti_biased.tolist()
    assert auto.train_anti_biased.mean() < both.train_anti_biased.mean()


def test_auto_rule_keeps_sec3_rule_below_forty_percent():
    X, y0 = _blobs(40)
    y, planted = _plant(y0, 40)
    out = find_minority_examples(X, y, method="ward", n_clusters=4, minority_rule="auto")
    assert out.info["minority_rule"]["used"] == "not_majority"
    assert out.info["minority_rule"]["switched"] is False
    assert np.flatnonzero(out.train_anti_biased).tolist() == planted.tolist()


def test_purity_null_detects_planted_clusters_and_not_shuffled_labels():
    clusters = np.repeat([0, 1, 2, 3], 50)
    y = np.repeat([0, 1, 2, 0], 50)
    y[::10] = (y[::10] + 1) % 3  # 10% minority per cluster
    planted = purity_null(clusters, y, 4, 3, n_permutations=199, random_state=0)
    assert planted["purity"] == pytest.approx(0.9)
    assert planted["purity_p_value"] == pytest.approx(1 / 200)
    assert planted["purity_excess"] > 0.3
    p_values = [
        purity_null(clusters, np.random.default_rng(s).permutation(y), 4, 3, n_permutations=199)[
            "purity_p_value"
        ]
        for s in range(20)
    ]
    # Under the null the p-value is uniform: about 1 in 20 below 0.05, never most of them.
    assert np.mean(np.array(p_values) <= 0.05) <= 0.2
    assert np.median(p_values) > 0.2


def _shuffled(ds, seed):
    from spurious.data import Dataset

    frame = ds.frame.drop(columns=["label_id"]).copy()
    frame["label"] = np.random.default_rng(seed).permutation(frame["label"].to_numpy())
    return Dataset.from_frame(frame, ds.task, label_names=ds.label_names)


def test_shuffled_labels_switch_rule_and_warn_about_purity(split):
    """Clusters of a label-agnostic representation with shuffled labels: the footnote 10
    switch applies, the purity warning is raised, and both reach the report."""
    train, test = split
    s_train, s_test = _shuffled(train, 1), _shuffled(test, 2)
    res = MinorityExamples(features="bow", clustering="ward", task_epochs=0).run(s_train, s_test)
    m = res.metrics
    assert m["not_majority_share_train"] > 0.4
    assert m["least_frequent_rule"] == 1.0
    assert res.details["minority_rule"]["used"] == "least_frequent"
    assert m["anti_biased_fraction_train"] < m["not_majority_share_train"]
    notes = " ".join(res.details["notes"])
    # The purity warning, whichever way it is worded (a gain under 5 points, or a larger
    # gain that the permutation test cannot tell from chance).
    assert "footnote 10" in notes and "the clusters say little about the labels" in notes
    assert m["purity_p_value"] > 0.05
    head = res.headline
    assert head["severity"] == "info"
    assert head["evidence"]["basis"] == "null_test"
    assert head["evidence"]["p_value"] == pytest.approx(m["purity_p_value"])
    assert "least-frequent rule" in head["text"] and "base rate" in head["text"]
    html = str(build_section(res).html_body)
    assert "footnote 10" in html and "Cluster purity" in html


def test_planted_clusters_keep_sec3_rule_without_warning(split):
    train, test = split
    res = MinorityExamples(
        features="bow", view="hypothesis_only", clustering="ward", n_clusters=4, task_epochs=0
    ).run(train, test)
    m = res.metrics
    assert m["purity_p_value"] < 0.01 and m["purity_excess"] > 0.05
    assert not any("say little about the labels" in n for n in res.details["notes"])
    assert m["weighted_majority_share"] - m["base_majority_share"] == pytest.approx(
        m["purity_gain"]
    )
