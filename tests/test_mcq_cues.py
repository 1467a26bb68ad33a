"""Multiple-choice cues: the heuristics on hand-built items, and ``mc_cues`` on planted signals.

Known answers: a planted length cue is found far above chance, no cue is found without
one (nor with the gold re-drawn at random), a planted position cue fails the gold-letter
chi-square, and paper 001's prediction bias singles out a model that answers with the
longest option.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from spurious.analysis import get_analysis
from spurious.context import RunContext
from spurious.data import Dataset
from spurious.data.predictions import align_predictions
from spurious.data.synthetic_mcq import make_mcq_artifacts
from spurious.detectors.mcq_cues import null_draws, position_test
from spurious.exceptions import AnalysisError, ParameterError
from spurious.heuristics import compute_heuristics, get_heuristic, list_heuristics
from spurious.heuristics.mcq import CUES, cue_picks, is_all_or_none_option, option_number
from spurious.report.sections import build_section

MC_HEURISTICS = [
    "gold_is_all_or_none_of_the_above",
    "gold_is_longest",
    "gold_is_numeric_extreme",
    "gold_is_odd_one_out",
    "gold_is_shortest",
    "gold_most_overlap",
    "gold_position",
    "option_count",
    "question_negation",
]
LETTERS = np.array(list("ABCDEFGHIJ"))


def _items(rows: list[tuple[str, list[str], str]]) -> Dataset:
    frame = pd.DataFrame(rows, columns=["question", "options", "label"])
    return Dataset.from_frame(frame, "mcq", name="hand-built")


def _values(ds: Dataset, name: str) -> list[float | None]:
    v = get_heuristic(name)().compute(ds)
    return [None if np.isnan(x) else float(x) for x in v]


def _mc_cues(ds: Dataset, **params):
    return get_analysis("mc_cues")(**params).run(ds)


# -- heuristics on hand-built items -------------------------------------------------------


def test_registry_lists_the_mc_heuristics() -> None:
    assert list_heuristics("mcq") == MC_HEURISTICS
    assert not set(MC_HEURISTICS) & set(list_heuristics("nli") + list_heuristics("qa"))


def test_length_cues_and_ties() -> None:
    ds = _items([
        ("q", ["ab", "abcd", "a"], "B"),  # gold longest
        ("q", ["ab", "abcd", "a"], "C"),  # gold shortest
        ("q", ["abcd", "wxyz", "a"], "C"),  # tie for the longest
        ("q", ["  ab  ", "abc", "xy"], "A"),  # surrounding spaces do not count: tie shortest
    ])  # fmt: skip
    assert _values(ds, "gold_is_longest") == [1.0, 0.0, None, 0.0]
    assert _values(ds, "gold_is_shortest") == [0.0, 1.0, 1.0, None]
    assert cue_picks(ds, "longest").tolist() == [1, 1, -1, 1]


def test_question_overlap_and_odd_one_out() -> None:
    ds = _items([
        ("Which metal conducts heat best?", ["wood", "a metal that conducts", "glass"], "B"),
        ("Which metal conducts heat best?", ["copper metal", "iron metal", "glass"], "C"),
        ("Pick one", ["red apple", "red apples", "quantum flux", "red appel"], "A"),
        ("Pick one", ["cat", "dog"], "A"),  # two options: no odd one out
    ])  # fmt: skip
    assert _values(ds, "gold_most_overlap") == [1.0, None, None, None]
    assert cue_picks(ds, "odd_one_out").tolist()[2:] == [2, -1]
    assert _values(ds, "gold_is_odd_one_out")[2:] == [0.0, None]


def test_all_or_none_of_the_above() -> None:
    ds = _items([
        ("q", ["x", "y", "All of the above"], "C"),
        ("q", ["x", "y", "None of these"], "A"),
        ("q", ["x", "y", "z"], "A"),
        ("q", ["x", "All of the above", "None of the above"], "C"),  # two: no single pick
    ])  # fmt: skip
    assert _values(ds, "gold_is_all_or_none_of_the_above") == [1.0, 0.0, None, 1.0]
    assert cue_picks(ds, "all_or_none_of_the_above").tolist() == [2, 2, -1, -1]
    assert is_all_or_none_option("Both A and B") and is_all_or_none_option("neither (a) nor (b)")
    assert not is_all_or_none_option("All animals breathe")


def test_numeric_extremes() -> None:
    ds = _items([
        ("q", ["4", "12", "7"], "B"),  # max
        ("q", ["4 m", "12 m", "7 m"], "C"),  # middle
        ("q", ["x", "2", "y"], "B"),  # one number only
        ("q", ["-1,000", "$5", "1/2", "cat"], "A"),  # min among three numbers
        ("q", ["2 kg", "3 kg", "5 m", "7 m"], "A"),  # two units tie: not comparable
    ])  # fmt: skip
    assert _values(ds, "gold_is_numeric_extreme") == [1.0, 0.0, None, 1.0, None]
    assert cue_picks(ds, "numeric_max").tolist() == [1, 1, -1, 1, -1]
    assert cue_picks(ds, "numeric_min").tolist() == [0, 0, -1, 0, -1]
    assert option_number("3 x 10^8 m/s") is None and option_number("25%") == (25.0, "%")


def test_item_attributes() -> None:
    ds = _items([
        ("Which is NOT a metal?", ["a", "b", "c"], "C"),
        ("All of these are metals EXCEPT", ["a", "b"], "A"),
        ("Which doesn't rust?", ["a", "b", "c", "d", "e"], "C"),
        ("Which is a metal?", ["a", "b"], "B"),
    ])  # fmt: skip
    assert _values(ds, "question_negation") == [1.0, 1.0, 1.0, 0.0]
    assert _values(ds, "gold_position") == [1.0, 0.0, 0.5, 1.0]
    assert _values(ds, "option_count") == [3.0, 2.0, 5.0, 2.0]


def test_heuristics_are_deterministic_and_checked() -> None:
    ds = make_mcq_artifacts(n=60, n_options=(2, 6), random_state=3).dataset
    before = ds.frame.copy(deep=True)
    first = compute_heuristics(ds, MC_HEURISTICS, cache_dir=False)
    second = compute_heuristics(ds, MC_HEURISTICS, cache_dir=False)
    pd.testing.assert_frame_equal(first, second)
    pd.testing.assert_frame_equal(ds.frame, before)
    for name in MC_HEURISTICS:
        cls = get_heuristic(name)
        assert cls.tasks == ("mcq",) and cls.description and cls.source
        assert first[name].dtype == np.float64
    with pytest.raises(ParameterError, match="'name' parameter of cue_picks"):
        cue_picks(ds, "loudest")
    nli = Dataset.from_frame(
        pd.DataFrame({"premise": ["a", "b"], "hypothesis": ["c", "d"], "label": [0, 1]}), "nli"
    )
    with pytest.raises(ParameterError, match="task 'mcq'"):
        cue_picks(nli, "longest")


# -- mc_cues on planted signals ------------------------------------------------------------


def test_planted_length_cue_is_found() -> None:
    syn = make_mcq_artifacts(n=600, artifact="length", artifact_rate=0.6, random_state=0)
    res = _mc_cues(syn.dataset)
    m = res.metrics
    assert m["longest_hit_rate"] > 0.6 and m["longest_chance"] == pytest.approx(0.25)
    assert m["longest_q_value"] < 0.01 and m["longest_effect_ci_low"] > 0.3
    assert res.headline["severity"] == "high"
    assert res.headline["evidence"]["basis"] == "interval+null_test"
    cues = {r["cue"] for r in res.details["cues"]}
    assert cues == {*CUES, "most_frequent_letter"}
    scores = res.scores
    assert list(scores.columns[:2]) == ["id", "gold"]
    # Nearly every planted item is answered by a significant cue.
    assert scores["is_mc_cues_issue"].to_numpy()[syn.has_artifact].mean() > 0.95
    hit = scores["hit_longest"].to_numpy()
    assert np.nanmean(hit[syn.has_artifact]) == 1.0


def test_no_cue_no_finding() -> None:
    ds = make_mcq_artifacts(n=600, artifact="none", random_state=1).dataset
    res = _mc_cues(ds)
    assert res.metrics["n_cues_significant"] == 0
    assert res.headline["severity"] == "none"
    assert res.metrics["position_p_value"] > 0.05


def test_gold_redrawn_at_random_never_gives_a_finding() -> None:
    ds = make_mcq_artifacts(n=400, n_options=(3, 5), artifact="length", random_state=2).dataset
    k = ds.frame["options"].map(len).to_numpy()
    for seed in range(3):
        frame = ds.frame.drop(columns="label_id").copy()
        frame["label"] = LETTERS[(np.random.default_rng(seed).random(len(k)) * k).astype(int)]
        res = _mc_cues(Dataset.from_frame(frame, "mcq"), n_bootstrap=200)
        assert res.headline["severity"] in ("none", "low"), res.headline


def test_planted_position_fails_the_letter_test() -> None:
    ds = make_mcq_artifacts(n=600, artifact="position", artifact_rate=0.5, random_state=0).dataset
    res = _mc_cues(ds)
    m = res.metrics
    assert m["position_p_value"] < 1e-6 and m["position_p_value_permutation"] <= 0.002
    assert res.details["position"]["majority_letter"] == "A"
    assert m["most_frequent_letter_q_value"] < 0.01
    assert m["majority_letter_accuracy_ci_low"] > m["chance"]
    assert m["letter_A_share"] > 0.5 and m["letter_A_expected_share"] == pytest.approx(0.25)


def test_letter_expectation_with_mixed_option_counts() -> None:
    k = np.array([2] * 50 + [4] * 50)
    gold = np.array([0, 1] * 25 + [0, 1, 2, 3] * 12 + [0, 1])
    out = position_test(gold, k)
    # A and B: 50 / 2 + 50 / 4 each; C and D: 50 / 4 each.
    assert out["expected"] == pytest.approx([37.5, 37.5, 12.5, 12.5])
    assert sum(out["counts"]) == 100 and out["p_value"] > 0.05
    null = null_draws(k, {"a": np.zeros(100, dtype=int)}, 500, 0)
    assert (null["letters"].sum(axis=1) == 100).all()
    assert null["letters"][:, 2:].mean(axis=0) == pytest.approx([12.5, 12.5], abs=0.6)


def test_groups_section_and_parameters() -> None:
    syn = make_mcq_artifacts(n=300, artifact="length", artifact_rate=0.6, random_state=4)
    frame = syn.dataset.frame.drop(columns="label_id").assign(
        group=np.repeat(["algebra", "<b>bio</b>", "chem"], 100)
    )
    res = _mc_cues(Dataset.from_frame(frame, "mcq"), n_bootstrap=200)
    by_group = res.tables["cues_by_group"]
    assert set(by_group["group"]) == {"algebra", "<b>bio</b>", "chem"}
    assert res.details["groups"]["significant"], "the length cue holds in every group"
    html = str(build_section(res).html_body)
    assert "longest" in html and "data:image/svg+xml" in html
    assert "<b>bio</b>" not in html  # group names are dataset text: escaped
    with pytest.raises(ParameterError, match="'cues'"):
        get_analysis("mc_cues")(cues=["loudest"]).run(syn.dataset)
    with pytest.raises(AnalysisError, match="at least 20"):
        _mc_cues(Dataset.from_frame(frame.iloc[:10], "mcq"))


# -- prediction bias on multiple choice ---------------------------------------------------


def test_prediction_bias_finds_the_longest_option_model() -> None:
    ds = make_mcq_artifacts(n=600, artifact="length", artifact_rate=0.6, random_state=0).dataset
    k = ds.frame["options"].map(len).to_numpy()
    rng = np.random.default_rng(0)
    longest = cue_picks(ds, "longest")
    longest = np.where(longest < 0, 0, longest)  # a tie: answer A
    right = rng.random(len(ds)) < 0.7
    other = (ds.labels + 1 + rng.integers(0, k - 1)) % k  # another option, at random
    preds = [
        align_predictions(dict(zip(ds.ids, LETTERS[longest], strict=True)), ds, name="longest"),
        align_predictions(
            dict(zip(ds.ids, LETTERS[np.where(right, ds.labels, other)], strict=True)),
            ds,
            name="random70",
        ),
    ]
    ctx = RunContext(ds, predictions=preds, progress=False)
    assert ctx.can_compute_heuristics()
    analysis = get_analysis("prediction_bias")(
        heuristics=["gold_is_longest", "gold_position"],
        n_trials=20,
        sample_size=50,
        n_permutations=19,
    )
    res = analysis.run(context=ctx)
    m = res.metrics
    assert m["bias/longest/gold_is_longest"] > 0.8
    assert m["bias/random70/gold_is_longest"] < 0.1
    assert res.headline["text"].startswith("longest on gold_is_longest")
