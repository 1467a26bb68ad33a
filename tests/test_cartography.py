"""Dataset cartography: regions, anti-biased examples, planted artifacts, the section."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import spurious
from spurious.context import RunContext
from spurious.data import Dataset
from spurious.data.synthetic import make_nli_artifacts
from spurious.detectors.cartography import (
    REGIONS,
    Cartography,
    anti_biased_mask,
    assign_regions,
    default_partial_view,
    top_k_count,
)
from spurious.exceptions import AnalysisError, ParameterError
from spurious.models.dynamics import TrainingDynamics
from spurious.report import build_section
from spurious.results import DetectorResult

pytest.importorskip("torch")


# ---------------------------------------------------------------------------------------
# Regions and anti-biased examples (known answers)
# ---------------------------------------------------------------------------------------
def test_regions_on_points_placed_in_each_region():
    # Nine examples: three easy (high confidence, flat), three ambiguous (high
    # variability), three hard (low confidence, flat). Thirds by rank pick them out.
    conf = [0.97, 0.95, 0.93, 0.55, 0.5, 0.45, 0.08, 0.05, 0.03]
    var = [0.01, 0.02, 0.01, 0.30, 0.35, 0.32, 0.02, 0.01, 0.02]
    regions = assign_regions(conf, var, ambiguous_fraction=1 / 3, hard_fraction=1 / 3,
                             easy_fraction=1 / 3)  # fmt: skip
    assert regions.tolist() == ["easy_to_learn"] * 3 + ["ambiguous"] * 3 + ["hard_to_learn"] * 3


def test_confidence_decides_first_and_the_middle_is_other():
    conf = [0.9, 0.5, 0.1, 0.6, 0.4]
    var = [0.40, 0.01, 0.02, 0.03, 0.35]
    # k = round(0.2 * 5) = 1 per region. The most variable example has the highest
    # confidence, so it is easy (a cue learned in the first epochs climbs fast); the
    # ambiguous one is the most variable of the rest only if it is in the top k overall.
    regions = assign_regions(conf, var, ambiguous_fraction=0.2, hard_fraction=0.2,
                             easy_fraction=0.2)  # fmt: skip
    assert regions.tolist() == ["easy_to_learn", "other", "hard_to_learn", "other", "other"]
    regions = assign_regions(conf, var, ambiguous_fraction=0.4, hard_fraction=0.2,
                             easy_fraction=0.2)  # fmt: skip
    assert regions.tolist() == ["easy_to_learn", "other", "hard_to_learn", "other", "ambiguous"]


def test_region_arguments_are_checked():
    with pytest.raises(ParameterError, match="sum to at most 1"):
        assign_regions([0.5], [0.1], hard_fraction=0.6, easy_fraction=0.6)
    with pytest.raises(ParameterError, match="equal length"):
        assign_regions([0.5, 0.2], [0.1])
    with pytest.raises(ParameterError, match="'ambiguous_fraction' argument"):
        assign_regions([0.5], [0.1], ambiguous_fraction=1.5)


def test_anti_biased_is_exactly_the_q_percent_hardest():
    rng = np.random.default_rng(0)
    conf = rng.random(200)
    for q in (0.0, 0.1, 0.21, 0.5, 1.0):
        mask = anti_biased_mask(conf, q)
        assert mask.sum() == top_k_count(q, 200) == round(q * 200)
        if 0 < mask.sum() < len(conf):
            assert conf[mask].max() < conf[~mask].min()
    # Halves round up; ties go to the earlier row.
    assert top_k_count(0.5, 5) == 3
    assert anti_biased_mask([0.2, 0.2, 0.2, 0.9], 0.5).tolist() == [True, True, False, False]
    with pytest.raises(ParameterError, match="'fraction' argument"):
        anti_biased_mask([0.1], 2.0)


def test_default_partial_views():
    from spurious.data.tasks import get_task

    assert default_partial_view(get_task("nli")) == "hypothesis_only"
    assert default_partial_view(get_task("pair")) == "text_a_only"  # paper 002: QQP's q1
    assert default_partial_view(get_task("text")) is None


# ---------------------------------------------------------------------------------------
# The analysis
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def planted():
    synth = make_nli_artifacts(n=900, artifact_rate=0.9, random_state=0)
    cue = dict(zip(synth.dataset.ids, synth.has_artifact, strict=True))
    train, test = synth.dataset.split(0.3, random_state=0)
    return train, test, cue


@pytest.fixture(scope="module")
def result(planted):
    train, test, _ = planted
    return Cartography(features="bow", epochs=5).run(train, test, progress=False)


def test_planted_cue_examples_are_easier_from_the_hypothesis(result, planted):
    _, _, cue = planted
    s = result.scores
    has_cue = s["id"].map(cue).to_numpy(dtype=bool)
    assert has_cue.sum() > 30
    conf = s["partial_confidence"].to_numpy()
    # The cue word gives the label away in the hypothesis alone.
    assert conf[has_cue].mean() > conf[~has_cue].mean() + 0.2
    assert roc_auc_score(has_cue, conf) > 0.85
    # ... so the partial-input map puts them in its easy region and almost never marks
    # them anti-biased.
    partial_easy = s["partial_region"].to_numpy() == "easy_to_learn"
    assert partial_easy[has_cue].mean() > 3 * max(partial_easy[~has_cue].mean(), 0.01)
    assert s["partial_anti_biased"].to_numpy()[has_cue].mean() < 0.05


def test_scores_metrics_and_details(result, planted):
    train, test, _ = planted
    s = result.scores
    assert s["id"].tolist() == list(test.ids)
    assert set(s["region"]) <= set(REGIONS) and set(s["partial_region"]) <= set(REGIONS)
    assert s["anti_biased"].sum() == top_k_count(0.21, len(test))
    assert (s["is_cartography_issue"] == s["anti_biased"]).all()
    np.testing.assert_allclose(s["cartography_score"], 1 - s["confidence"])
    assert s[["confidence", "correctness"]].stack().between(0, 1).all()
    assert (s["variability"] <= 0.5).all() and (s["forgetting"] >= 0).all()
    m = result.metrics
    assert sum(m[f"share_{r}"] for r in REGIONS) == pytest.approx(1.0)
    assert m["n_anti_biased"] == s["anti_biased"].sum()
    assert m["n_recordings"] == 5 and m["n_train"] == len(train)
    assert m["mean_confidence"] == pytest.approx(s["confidence"].mean())
    assert -1 <= m["spearman_confidence"] <= 1 and 0 <= m["anti_biased_jaccard"] <= 1
    assert m["n_anti_biased_train"] == top_k_count(0.21, len(train))
    d = result.details
    assert d["views"] == {"full": "full", "partial": "hypothesis_only"}
    assert d["scored_split"] == "eval"
    assert len(d["learning_curves"]["full"]["train"]) == 5
    crosstab = d["region_crosstab"]
    assert sum(sum(row.values()) for row in crosstab.values()) == len(test)
    hard = d["examples"]["full"]["hard_to_learn"]
    assert hard and "hypothesis" in hard[0] and "partial_confidence" in hard[0]
    confs = [e["confidence"] for e in hard]
    assert confs == sorted(confs)  # hardest first
    assert result.headline["label"] == "partial-input cartography"
    assert result.headline["evidence"]["basis"] == "interval+null_test"


def test_marks_cover_both_splits_and_both_definitions(result, planted, tmp_path):
    train, _, _ = planted
    assert result.definitions == ["cartography", "partial_input_cartography"]
    for definition, column in (
        ("cartography", "anti_biased"),
        ("partial_input_cartography", "partial_anti_biased"),
    ):
        eval_ids = result.anti_biased_ids("eval", definition)
        s = result.scores
        assert eval_ids == s.loc[s[column], "id"].tolist()
        train_ids = result.anti_biased_ids("train", definition)
        assert len(train_ids) == top_k_count(0.21, len(train))
        assert set(train_ids) <= set(train.ids)
    with pytest.raises(ValueError, match="several definitions"):
        result.anti_biased_ids("train")
    loaded = DetectorResult.load(result.save(tmp_path / "cartography"))
    pd.testing.assert_frame_equal(loaded.marks, result.marks)


def test_same_seed_same_map_other_seed_other_map(planted):
    train, test, _ = planted
    a = Cartography(features="bow", epochs=3, random_state=1).run(train, test, progress=False)
    b = Cartography(features="bow", epochs=3, random_state=1).run(train, test, progress=False)
    c = Cartography(features="bow", epochs=3, random_state=2).run(train, test, progress=False)
    pd.testing.assert_frame_equal(a.scores, b.scores)
    assert not np.allclose(a.scores["confidence"], c.scores["confidence"])


def test_without_eval_split_the_training_data_is_mapped(planted):
    train, _, _ = planted
    res = Cartography(features="bow", epochs=3, partial_view=None).run(train, progress=False)
    assert res.scores["id"].tolist() == list(train.ids)
    assert not any(c.startswith("partial_") for c in res.scores.columns)
    assert res.details["scored_split"] == "train" and "spearman_confidence" not in res.metrics
    assert res.headline["severity"] == "info"


def test_loaded_dynamics_give_the_same_map(planted, tmp_path):
    train, test, _ = planted
    ctx = RunContext(train, test, progress=False)
    dyn = ctx.artifact("training_dynamics", features="bow", epochs=3, random_state=0)
    dyn.save(tmp_path / "dyn")
    fast = Cartography(features="bow", epochs=3, partial_view=None).run(train, test)
    loaded = Cartography(
        features="bow", epochs=3, partial_view=None, path="load", dynamics_dir=str(tmp_path / "dyn")
    ).run(train, test)
    pd.testing.assert_frame_equal(fast.scores, loaded.scores)


def test_parameters_are_checked(planted):
    train, test, _ = planted
    with pytest.raises(ParameterError, match="sum to at most 1"):
        Cartography(hard_fraction=0.7, easy_fraction=0.5).validate_params()
    with pytest.raises(ParameterError, match="'dynamics_dir' parameter"):
        Cartography(path="load").validate_params()
    with pytest.raises(ParameterError, match=r"'model' parameter .* 'mlp' or 'linear'"):
        Cartography(model="roberta-base").validate_params()
    with pytest.raises(ParameterError, match=r"unknown fast-path option\(s\) \['momentum'\]"):
        Cartography(train_options={"momentum": 0.9}).validate_params()
    with pytest.raises(ParameterError, match=r"must not set \['epochs'\]"):
        Cartography(train_options={"epochs": 3}).validate_params()
    with pytest.raises(ParameterError, match="'path' parameter"):
        Cartography(path="gpu").validate_params()
    with pytest.raises(ParameterError, match=r"premise_onlyy"):
        Cartography(features="bow", partial_view="premise_onlyy").run(train, test)


def test_too_few_examples_fail_clearly():
    tiny = Dataset.from_frame(
        pd.DataFrame(
            {
                "premise": ["a b", "c d", "e f"],
                "hypothesis": ["g h", "i j", "k l"],
                "label": ["entailment", "neutral", "contradiction"],
            }
        ),
        "nli",
    )
    with pytest.raises(AnalysisError, match="at least 10 training examples to rank them; got 3"):
        Cartography(features="bow", epochs=2).run(tiny)


def test_text_task_maps_without_a_partial_view():
    rng = np.random.default_rng(0)
    words = np.array(["good", "bad", "fine", "awful", "great", "poor"])
    labels = rng.integers(0, 2, 80)
    texts = [" ".join(rng.choice(words[lab::2], 4)) for lab in labels]
    ds = Dataset.from_frame(
        pd.DataFrame({"text": texts, "label": np.where(labels == 1, "neg", "pos")}), "text"
    )
    res = Cartography(features="bow", epochs=3).run(ds)
    assert res.details["views"]["partial"] is None
    assert len(res.scores) == 80


# ---------------------------------------------------------------------------------------
# Run framework and report
# ---------------------------------------------------------------------------------------
def test_runs_beside_partial_input_and_scores_join_by_id(planted, tmp_path):
    train, test, _ = planted
    run = spurious.run(
        train,
        eval=test,
        analyses={
            "partial_input": {"features": "bow", "n_resamples": 50},
            "cartography": {"features": "bow", "epochs": 3},
        },
        out=tmp_path / "run",
        progress=False,
    )
    joined = run["cartography"].scores.merge(run["partial_input"].scores, on="id")
    assert len(joined) == len(test)
    # The same bag-of-words matrices served both analyses (built once per run).
    assert sum(k.startswith("features:") for k in run.context.timings) == 6
    html = (tmp_path / "run" / "report.html").read_text()
    assert "cartography" in html and "Data map" in html


def test_section_shows_maps_regions_and_escaped_examples(planted):
    train, test, _ = planted
    frame = test.frame.copy()
    frame.loc[frame.index[0], "hypothesis"] = "<script>alert(1)</script> nobody sleeps"
    test_x = Dataset.from_frame(frame, "nli", name="with-markup")
    res = Cartography(features="bow", epochs=3, n_examples=len(test_x)).run(train, test_x)
    html = str(build_section(res).html_body)
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html.count("data:image/") >= 3  # two maps and the learning curves
    for name in ("easy-to-learn", "ambiguous", "hard-to-learn"):
        assert name in html
    assert "hypothesis_only" in html


def test_section_survives_a_partial_result():
    from spurious.results import Result

    r = Result("cartography", pd.DataFrame({"id": ["a"]}), {"share_ambiguous": 0.3})
    html = str(build_section(r).html_body)
    assert "ambiguous" in html and "Traceback" not in html


def test_training_dynamics_type_is_what_the_provider_returns(planted):
    train, test, _ = planted
    dyn = RunContext(train, test, progress=False).artifact(
        "training_dynamics", features="bow", epochs=2
    )
    assert isinstance(dyn, TrainingDynamics)


# ---------------------------------------------------------------------------------------
# The headline's null, held-out dynamics, the proxy note (issue 19 items 2 and 12)
# ---------------------------------------------------------------------------------------
def _shuffled(ds: Dataset, seed: int) -> Dataset:
    frame = ds.frame.drop(columns=["label_id"]).copy()
    frame["label"] = np.random.default_rng(seed).permutation(frame["label"].to_numpy())
    return Dataset.from_frame(frame, ds.task, label_names=ds.label_names)


def test_spearman_intervals_known_answers():
    from spurious.detectors.cartography import difference_interval, spearman_interval

    lo, hi = spearman_interval(0.0, 1063)  # se = sqrt(1.06 / 1060) = 0.0316
    assert lo == pytest.approx(-np.tanh(1.959964 * 0.031623), abs=1e-4) and hi == pytest.approx(-lo)
    assert spearman_interval(0.9, 3) == (-1.0, 1.0)
    a, b = spearman_interval(0.6, 50), spearman_interval(0.6, 5000)
    assert a[0] < b[0] < 0.6 < b[1] < a[1]
    lo, hi = difference_interval(0.6, a, 0.6, a)
    assert lo < 0 < hi and lo == pytest.approx(-hi)


def test_shuffled_labels_give_no_cartography_finding(planted):
    """The two probes agree on permuted labels too (rho ~0.8); the headline's effect is the
    excess over that null, and it is not a finding."""
    train, test, _ = planted
    res = Cartography(features="bow", epochs=3).run(_shuffled(train, 1), _shuffled(test, 2))
    m = res.metrics
    assert m["spearman_confidence"] > 0.3  # the raw agreement would have been a finding
    assert m["spearman_excess_ci_low"] < 0.1
    head = res.headline
    assert head["severity"] in ("none", "low")
    assert head["evidence"]["basis"] == "interval+null_test"
    assert head["evidence"]["interval"] == pytest.approx(
        [m["spearman_excess_ci_low"], m["spearman_excess_ci_high"]]
    )


def test_planted_cue_agreement_is_mostly_the_shared_input(result):
    """The planted cue raises the agreement above the permuted-label null, but most of the
    agreement is there with permuted labels too (both probes see the hypothesis): the
    raw Spearman (~0.8) is not evidence of a shortcut, the excess is what is judged."""
    m = result.metrics
    assert m["spearman_confidence"] > m["spearman_confidence_null"] > 0.5
    assert m["spearman_excess"] == pytest.approx(
        m["spearman_confidence"] - m["spearman_confidence_null"]
    )
    assert m["spearman_excess_ci_low"] <= m["spearman_excess"] <= m["spearman_excess_ci_high"]
    assert m["spearman_excess_p_value"] < 0.5
    head = result.headline
    assert head["value"] == m["spearman_confidence"]
    assert head["evidence"]["p_value"] == m["spearman_excess_p_value"]


def test_without_null_the_headline_is_info_with_an_interval(planted):
    train, test, _ = planted
    res = Cartography(features="bow", epochs=3, null_permutations=0).run(train, test)
    assert "spearman_excess" not in res.metrics
    head = res.headline
    assert head["severity"] == "info"
    lo, hi = head["evidence"]["interval"]
    assert lo <= res.metrics["spearman_confidence"] <= hi


def test_held_out_folds_map_training_data_with_models_that_never_saw_it(planted):
    train, test, _ = planted
    inside = Cartography(features="bow", epochs=5, partial_view=None).run(train)
    held = Cartography(features="bow", epochs=5, partial_view=None, held_out_folds=2).run(train)
    assert held.scores["id"].tolist() == list(train.ids)
    assert held.details["dynamics"]["full"]["path"] == "fast"
    # A model never scores its own training examples: held-out confidence is lower.
    assert held.metrics["mean_confidence"] < inside.metrics["mean_confidence"] - 0.05
    assert any("Held-out dynamics" in n for n in held.details["notes"])
    assert any("Mapped in-sample" in n for n in inside.details["notes"])
    with pytest.raises(
        ParameterError, match=r"'held_out_folds' parameter .* without an evaluation"
    ):
        Cartography(features="bow", held_out_folds=2).run(train, test)
    with pytest.raises(ParameterError, match=r"'held_out_folds' parameter .* path='fast'"):
        Cartography(path="load", dynamics_dir="x", held_out_folds=2).validate_params()
    with pytest.raises(ParameterError, match="'held_out_folds' parameter"):
        Cartography(held_out_folds=1).validate_params()


def test_section_says_the_fast_path_is_a_proxy(result):
    html = str(build_section(result).html_body)
    assert "fast path is a proxy" in html and "path=&#39;finetune&#39;" in html
    assert "permuted labels" in html


def test_null_trainings_side_by_side_give_the_numbers_of_one_after_another(planted, monkeypatch):
    """The null maps run on one worker thread per core (Executor.map(side_by_side)); each
    training is seeded by its own draw, so the numbers equal a one-after-another run."""
    from spurious.execution import executor as executor_module

    train, test, _ = planted
    runs = {}
    for cores in (1, 4):  # 4 workers even on a 2-core machine: the threads interleave
        monkeypatch.setattr(executor_module, "available_cores", lambda n=cores: n)
        res = Cartography(features="bow", epochs=3, null_permutations=2).run(train, test)
        runs[cores] = res.metrics
    for key in ("spearman_confidence_null", "spearman_confidence_null_sd", "spearman_excess"):
        assert runs[1][key] == runs[4][key]
