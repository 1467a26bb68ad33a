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
from spurious.schema import expand_metric_doc_key


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
    # Every metric and score column the option adds is documented.
    documented = {k for key in MinorityExamples.metric_docs for k in expand_metric_doc_key(key)}
    assert set(m) <= documented, set(m) - documented
    assert set(res.scores.columns) <= set(MinorityExamples.score_columns)
    assert m["marking_jaccard_chance"] < 0.5
    freq = res.scores["marked_frequency"].to_numpy()
    assert np.array_equal(freq, res.scores["anti_biased"].to_numpy().astype(float))
    assert not any("depends on the seed" in n for n in res.details["notes"])
    # The analysis' own marks stay its seed's.
    plain = MinorityExamples(**kwargs).run(train, test)
    own = res.marks[res.marks["definition"] == "minority"].drop(columns="score")
    assert own.reset_index(drop=True).equals(plain.marks)
    assert res.scores["anti_biased"].equals(plain.scores["anti_biased"])
    assert "marked_frequency" not in plain.scores and "marking_jaccard_mean" not in plain.metrics
    # Every seed marks the same set, so the consensus definition is that set.
    by_def = {
        d: t.set_index(["split", "id"])["anti_biased"] for d, t in res.marks.groupby("definition")
    }
    assert set(by_def) == {"minority", "minority_consensus"}
    assert by_def["minority_consensus"].equals(by_def["minority"])
    assert set(plain.marks["definition"]) == {"minority"}


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


def test_the_consensus_definition_amplifies_at_minoritys_size(split):
    """The consensus marks carry their marked share as a score, so amplification
    q-matches them to the seed's own minority count: a split of the examples most seeds
    mark, the same size as one seed's."""
    from spurious.actions.amplify import amplify

    train, test = split
    s_train, s_test = _shuffled(train, 1), _shuffled(test, 2)
    analysis = MinorityExamples(
        features="bow", clustering="kmeans", n_clusters=10, task_epochs=0, stability_seeds=3
    )
    assert analysis.mark_definitions(train.task) == ["minority", "minority_consensus"]
    assert MinorityExamples().mark_definitions(train.task) == ["minority"]
    res = analysis.run(s_train, s_test)
    cons = res.marks[res.marks["definition"] == "minority_consensus"]
    scored = cons[cons["split"] == "eval"].set_index("id")["score"]
    freq = res.scores.set_index("id")["marked_frequency"]
    assert np.allclose(scored.loc[freq.index].to_numpy(), freq.to_numpy())
    as_marked = cons[cons["split"] == "train"]
    assert res.metrics["anti_biased_fraction_train_consensus"] == as_marked["anti_biased"].mean()
    assert (as_marked["anti_biased"] == (as_marked["score"] >= 0.5)).all()

    amp = amplify(s_train, s_test, res)
    n_minority = int(res.metrics["n_anti_biased_train"])
    sizes = {d: int(m.sum()) for d, (_r, m) in amp.definitions["minority_consensus"].splits.items()}
    assert sizes["train.anti_biased"] == n_minority
    assert amp.definitions["minority_consensus"].matching["matched_to"] == "minority"
    # The re-thresholded consensus keeps the most often marked examples.
    train_marks = as_marked.set_index("id")
    kept = train_marks.loc[
        list(amp.dataset("minority_consensus", "train.anti_biased").ids), "score"
    ]
    dropped = train_marks.loc[list(amp.dataset("minority_consensus", "train.biased").ids), "score"]
    assert kept.min() >= dropped.max()
