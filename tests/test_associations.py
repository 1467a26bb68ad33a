"""Model-free associations: known answers, planted cues, shuffled labels, real SNLI."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from spurious import load_dataset
from spurious.data import Dataset
from spurious.data.synthetic import make_nli_artifacts
from spurious.detectors.associations import (
    Associations,
    bin_feature,
    binned_association,
    text_properties,
)
from spurious.detectors.associations import mutual_information as _mutual_information
from spurious.exceptions import AnalysisError, ParameterError
from spurious.report.sections import build_section

from .conftest import shared_data


def _shuffled(ds: Dataset, seed: int) -> Dataset:
    frame = ds.frame[list(ds.task.text_fields)].copy()
    frame["label"] = np.random.default_rng(seed).permutation(
        np.asarray(ds.label_names, dtype=object)[ds.labels]
    )
    return Dataset.from_frame(frame, ds.task.name, label_names=ds.label_names)


def _naive_oof_accuracy(bins, y, folds, n_classes):
    """The binned classifier written as a loop: the reference for the vectorised code."""
    hit = maj = 0
    for f in np.unique(folds):
        tr, te = folds != f, folds == f
        majority = np.bincount(y[tr], minlength=n_classes).argmax()
        for i in np.flatnonzero(te):
            in_bin = tr & (bins == bins[i])
            pred = (
                np.bincount(y[in_bin], minlength=n_classes).argmax() if in_bin.any() else majority
            )
            hit += pred == y[i]
            maj += majority == y[i]
    return hit / len(y), maj / len(y)


# -- known answers -----------------------------------------------------------------------
def test_bin_feature_quantiles_and_missing():
    bins, edges = bin_feature(np.arange(10, dtype=float), 2)
    assert edges.tolist() == [5.0] and bins.tolist() == [0] * 5 + [1] * 5
    bins, edges = bin_feature(np.array([1.0, 1.0, 2.0, np.nan]), 10)
    assert bins.tolist() == [0, 0, 1, 2]  # one bin per value, NaN last


def test_mutual_information_by_hand():
    assert _mutual_information(np.array([[10, 0], [0, 10]])) == pytest.approx(1.0)
    assert _mutual_information(np.array([[5, 5], [5, 5]])) == pytest.approx(0.0)


def test_oof_accuracy_matches_a_loop():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 300)
    x = np.round(rng.normal(y * 0.4, 1.0), 1)
    folds = rng.permutation(np.arange(300) % 4)
    a = binned_association(x, y, 3, folds, n_bins=6, n_permutations=19)
    bins, _ = bin_feature(x, 6)
    acc, maj = _naive_oof_accuracy(bins, y, folds, 3)
    assert a.accuracy == pytest.approx(acc) and a.majority == pytest.approx(maj)
    assert a.effect == pytest.approx(acc - maj)
    assert a.correct.mean() == pytest.approx(acc)


def test_permutation_p_value_limits():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 500)
    folds = np.arange(500) % 5
    perfect = binned_association(y.astype(float), y, 2, folds, n_permutations=199)
    assert perfect.p_value == pytest.approx(1 / 200) and perfect.effect > 0.4
    p_noise = [
        binned_association(rng.random(500), y, 2, folds, n_permutations=99, random_state=s).p_value
        for s in range(20)
    ]
    # Under the null the p-values are roughly uniform: not all small, not all large.
    assert 0.2 < np.mean(p_noise) < 0.8


def test_a_shift_that_moves_no_majority_is_still_found():
    # p(y=1) is 0.2 for low x and 0.4 for high x: label 0 is every bin's majority, so
    # the accuracy gain is 0, but the label shares differ and the MI test sees it.
    rng = np.random.default_rng(3)
    x = rng.random(3000)
    y = (rng.random(3000) < np.where(x > 0.5, 0.4, 0.2)).astype(int)
    a = binned_association(x, y, 2, np.arange(3000) % 5, n_bins=2, n_permutations=199)
    assert a.effect == pytest.approx(0.0, abs=1e-12)
    assert a.p_value == pytest.approx(1 / 200) and a.mutual_information > 0.01


def test_text_properties_count_words_punctuation_digits():
    frame = pd.DataFrame({"text": ["Hello, world! 42", "no"], "label": ["a", "b"]})
    props = text_properties(Dataset.from_frame(frame, "text"))
    assert props.loc[0].tolist() == [3.0, 2.0, 2.0] and props.loc[1].tolist() == [1.0, 0.0, 0.0]


# -- behaviour ----------------------------------------------------------------------------
def test_planted_negation_points_to_contradiction():
    ds = make_nli_artifacts(n=900, artifact_rate=0.5, random_state=0).dataset
    r = Associations(n_permutations=199).run(ds, progress=False)
    rows = {row["feature"]: row for row in r.details["features"]}
    neg = rows["negation_in_hypothesis"]
    assert neg["significant"] and neg["high_points_to"] == "contradiction"
    assert neg["effect"] > 0.1
    # hypothesis_n_words duplicates the hypothesis_length heuristic: tested once.
    assert r.details["not_tested"]["hypothesis_n_words"] == "same values as hypothesis_length"
    assert r.headline["severity"] in ("moderate", "high")
    planted = r.scores["associations_feature"].to_numpy() != ""
    assert planted.any()


def test_planted_length_cue_points_to_neutral():
    synth = make_nli_artifacts(n=900, artifact_rate=0.0, random_state=1).dataset
    frame = synth.frame[["premise", "hypothesis", "label"]].copy()
    neutral = frame["label"] == "neutral"
    frame.loc[neutral, "hypothesis"] += " while waiting for a friend who is late"
    ds = Dataset.from_frame(frame, "nli", label_names=synth.label_names)
    r = Associations(n_permutations=199).run(ds, progress=False)
    rows = {row["feature"]: row for row in r.details["features"]}
    assert rows["hypothesis_length"]["significant"]
    assert rows["hypothesis_length"]["high_points_to"] == "neutral"
    assert not rows["premise_n_words"]["significant"]


@pytest.mark.parametrize("seed", range(3))
def test_shuffled_labels_flag_nothing(seed):
    ds = _shuffled(make_nli_artifacts(n=900, artifact_rate=0.8, random_state=seed).dataset, seed)
    r = Associations(n_permutations=199, random_state=seed).run(ds, progress=False)
    assert r.metrics["n_significant"] == 0
    assert r.headline["severity"] == "none"
    assert not r.scores["is_associations_issue"].any()


def test_same_seed_same_result_and_parameters_checked():
    ds = make_nli_artifacts(n=300, random_state=2).dataset
    a = Associations(n_permutations=49).run(ds, progress=False)
    b = Associations(n_permutations=49).run(ds, progress=False)
    assert a.metrics == b.metrics
    with pytest.raises(ParameterError, match="no_such_heuristic"):
        Associations(heuristics=["no_such_heuristic"]).run(ds, progress=False)
    with pytest.raises(ParameterError, match="heuristics"):
        Associations(heuristics="all").run(ds, progress=False)
    with pytest.raises(AnalysisError, match="at least 20"):
        Associations().run(ds.subset(np.arange(10)), progress=False)


def test_single_text_task_uses_properties():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400)
    text = [
        ("great film!!! " if lab else "dull film ") + "x " * int(rng.integers(1, 5)) for lab in y
    ]
    ds = Dataset.from_frame(pd.DataFrame({"text": text, "label": y.astype(str)}), "text")
    r = Associations(n_permutations=99).run(ds, progress=False)
    rows = {row["feature"]: row for row in r.details["features"]}
    assert rows["text_n_punct"]["significant"] and rows["text_n_punct"]["high_points_to"] == "1"
    html = str(build_section(r).html_body)
    assert "text_n_punct" in html and "data:image/" in html


# -- real data ------------------------------------------------------------------------------
def test_snli_dev_known_associations():
    ds = load_dataset(shared_data("snli", "dev.jsonl"), "nli")
    r = Associations(n_permutations=200).run(ds, progress=False)
    rows = {row["feature"]: row for row in r.details["features"]}
    # Gururangan et al. 2018 Sec. 3; McCoy et al. 2019 (lexical overlap).
    assert rows["negation_in_hypothesis"]["significant"]
    assert rows["negation_in_hypothesis"]["high_points_to"] == "contradiction"
    assert rows["hypothesis_length"]["high_points_to"] == "neutral"
    assert rows["hypothesis_length"]["low_points_to"] == "entailment"
    assert rows["overlap_rate"]["high_points_to"] == "entailment"
    assert rows["overlap_rate"]["effect"] > 0.05
    assert not rows["premise_n_words"]["significant"]


# -- QA: gold answers against random spans --------------------------------------------------
def _qa(n: int, seed: int) -> Dataset:
    """Contexts of filler words with the answer right after the question's key word."""
    rng = np.random.default_rng(seed)
    filler = [f"w{i}" for i in range(40)]
    rows = []
    for i in range(n):
        key, answer = f"key{i % 7}", f"ans{i}"
        words = list(rng.choice(filler, 30))
        pos = int(rng.integers(0, 28))
        words[pos : pos + 2] = [key, answer]
        context = " ".join(words) + "."
        rows.append(
            {
                "question": f"What follows {key}?",
                "context": context,
                "answers": [answer],
                "answer_starts": [context.index(f"{key} {answer}") + len(key) + 1],
            }
        )
    return Dataset.from_frame(pd.DataFrame(rows), "qa")


def test_null_spans_keep_length_and_move_the_answer():
    from spurious.detectors.associations import null_spans

    ds = load_dataset(shared_data("squad", "dev-v1.1.json"), "qa").subset(np.arange(300))
    null = null_spans(ds, random_state=0)
    gold, rand = ds.frame, null.frame
    from spurious.heuristics.base import words

    assert all(
        len(words(a[0])) == len(words(b[0]))
        for a, b in zip(gold["answers"], rand["answers"], strict=True)
    )
    moved = [
        a[0] != b[0] for a, b in zip(gold["answer_starts"], rand["answer_starts"], strict=True)
    ]
    assert np.mean(moved) > 0.99
    for ctx, ans, start in zip(
        rand["context"], rand["answers"], rand["answer_starts"], strict=True
    ):
        assert ctx[start[0] : start[0] + len(ans[0])] == ans[0]


def test_qa_word_distance_tells_gold_from_random_spans():
    r = Associations(n_permutations=199).run(_qa(300, 0), progress=False)
    rows = {row["feature"]: row for row in r.details["features"]}
    wd = rows["word_distance"]
    assert wd["significant"] and wd["effect"] > 0.3
    # Distance 1 (the answer right after the key word) holds the gold answers.
    by_bin = {b["bin"]: b["gold answer"] for b in wd["bins"]}
    assert max(by_bin, key=by_bin.get).startswith("[1,") and max(by_bin.values()) > 0.6
    assert "answer_length" in r.details["not_tested"]
    assert len(r.scores) == 300 and r.headline["severity"] in ("moderate", "high")


@pytest.mark.slow
def test_squad_word_distance_is_the_strongest_shortcut():
    ds = load_dataset(shared_data("squad", "dev-v1.1.json"), "qa").subset(np.arange(2000))
    r = Associations(n_permutations=199).run(ds, progress=False)
    assert r.details["best"] == "word_distance"
    rows = {row["feature"]: row for row in r.details["features"]}
    assert rows["answer_sentence_rank"]["low_points_to"] == "gold answer"
