"""How much the minority marking depends on its seed (``stability_seeds``): known answers
by hand, a planted stable structure, and a structureless one whose marking is a draw."""

from __future__ import annotations

import numpy as np
import pytest

from spurious.data import Dataset
from spurious.data.synthetic import make_nli_artifacts
from spurious.detectors.minority import MinorityExamples
from spurious.detectors.minority.stability import (
    marking_stability,
    stability_note,
    stability_seeds_of,
)
from spurious.exceptions import ParameterError


@pytest.fixture(scope="module")
def split():
    return make_nli_artifacts(n=600, artifact_rate=0.9, random_state=0).dataset.split(
        0.3, random_state=0
    )


def _shuffled(ds: Dataset, seed: int) -> Dataset:
    frame = ds.frame.drop(columns=["label_id"]).copy()
    frame["label"] = np.random.default_rng(seed).permutation(frame["label"].to_numpy())
    return Dataset.from_frame(frame, ds.task, label_names=ds.label_names)


def test_overlap_and_frequency_by_hand():
    a = np.array([1, 1, 1, 0, 0, 0, 0, 0, 0, 0], bool)
    b = np.array([1, 1, 0, 1, 0, 0, 0, 0, 0, 0], bool)
    c = np.array([0, 0, 0, 0, 1, 1, 1, 0, 0, 0], bool)
    m, freq = marking_stability([a, b, c], [a, b, c])
    # Pairs: a-b share 2 of 4, a-c and b-c nothing.
    assert m["marking_jaccard_mean"] == pytest.approx((0.5 + 0 + 0) / 3)
    assert m["marking_jaccard_min"] == 0.0
    # Independent random sets holding 30% of the items each: 0.09 / 0.51.
    assert m["marking_jaccard_chance"] == pytest.approx(0.09 / 0.51)
    assert m["stability_n_seeds"] == 3.0
    assert m["anti_biased_fraction_train_min"] == m["anti_biased_fraction_train_max"] == 0.3
    assert freq.tolist() == pytest.approx(
        [2 / 3, 2 / 3, 1 / 3, 1 / 3, 1 / 3, 1 / 3, 1 / 3, 0, 0, 0]
    )
    same, freq_same = marking_stability([a, a], [a, a])
    assert same["marking_jaccard_mean"] == 1.0 and freq_same.tolist() == a.astype(float).tolist()


def test_the_note_speaks_only_below_half_overlap():
    m = {
        "stability_n_seeds": 3.0,
        "marking_jaccard_mean": 0.3,
        "marking_jaccard_chance": 0.1,
        "anti_biased_fraction_train_min": 0.1,
        "anti_biased_fraction_train_max": 0.2,
    }
    note = stability_note(m)
    assert "30% of their examples" in note and "random sets of the same sizes: 10%" in note
    assert stability_note({**m, "marking_jaccard_mean": 0.8}) is None
    assert stability_note({"purity_gain": 0.2}) is None  # not measured: nothing claimed


def test_seeds_follow_the_analysis_seed():
    assert stability_seeds_of(5, 2) == [6, 7]


def test_a_seed_free_clustering_is_marked_alike_by_every_seed(split):
    """Ward on the input as it is uses no seed: every seed marks the same set (Jaccard 1),
    every example is marked by all seeds or none, and nothing is noted."""
    train, test = split
    kwargs = dict(features="bow", view="hypothesis_only", clustering="ward", n_clusters=4,
                  task_epochs=0, minority_rule="not_majority")  # fmt: skip
    res = MinorityExamples(**kwargs, stability_seeds=2).run(train, test)
    m = res.metrics
    assert m["stability_n_seeds"] == 3.0
    assert m["marking_jaccard_mean"] == m["marking_jaccard_min"] == 1.0
    assert m["marking_jaccard_chance"] < 0.5
    freq = res.scores["marked_frequency"].to_numpy()
    assert np.array_equal(freq, res.scores["anti_biased"].to_numpy().astype(float))
    assert not any("depends on the seed" in n for n in res.details["notes"])
    # The analysis' own marks stay its seed's.
    plain = MinorityExamples(**kwargs).run(train, test)
    assert res.marks.equals(plain.marks)
    assert res.scores["anti_biased"].equals(plain.scores["anti_biased"])
    assert "marked_frequency" not in plain.scores and "marking_jaccard_mean" not in plain.metrics


def test_without_structure_the_marking_is_a_draw_and_the_report_says_so(split):
    """Shuffled labels on a label-agnostic representation: k-means from other seeds finds
    other clusters, the marked sets overlap little, and a note says so."""
    train, test = split
    s_train, s_test = _shuffled(train, 1), _shuffled(test, 2)
    res = MinorityExamples(
        features="bow", clustering="kmeans", n_clusters=10, task_epochs=0, stability_seeds=3
    ).run(s_train, s_test)
    m = res.metrics
    assert m["marking_jaccard_mean"] < 0.5
    freq = res.scores["marked_frequency"].to_numpy()
    assert ((freq > 0) & (freq < 1)).mean() > 0.2  # many examples marked by some seeds only
    assert len(freq) == len(s_test) and set(np.unique(freq)) <= {0, 0.25, 0.5, 0.75, 1}
    notes = " ".join(res.details["notes"])
    assert "The marked set depends on the seed" in notes and "marked_frequency" in notes
    assert "depends on the seed" in res.headline["verdict"]


def test_same_seed_same_stability(split):
    train, test = split
    kwargs = dict(features="bow", clustering="kmeans", n_clusters=5, task_epochs=0,
                  stability_seeds=2, random_state=3)  # fmt: skip
    a = MinorityExamples(**kwargs).run(train, test)
    b = MinorityExamples(**kwargs).run(train, test)
    keys = [k for k in a.metrics if k.startswith(("marking_", "stability_"))]
    assert keys and all(a.metrics[k] == b.metrics[k] for k in keys)
    assert a.scores["marked_frequency"].equals(b.scores["marked_frequency"])


def test_a_negative_count_names_the_argument():
    with pytest.raises(ParameterError, match="'stability_seeds' parameter"):
        MinorityExamples(stability_seeds=-1).validate_params()
