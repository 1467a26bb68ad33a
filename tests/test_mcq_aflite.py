"""AFLite and paper 004's fairness study on multiple-choice items (issue 22, part 5).

Synthetic items with a planted length cue (the gold is the longest option) in half of
them: AFLite on lexical option blocks with a conditional logit must remove mostly the
planted items, leave items whose options no longer give the answer away, find nothing
without a cue, and the fairness study must rank a model that only exploits the cue
below a guesser once the adversaries filter.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import spurious
from spurious.actions import write_filtered
from spurious.context import RunContext
from spurious.data import load_dataset
from spurious.data.predictions import align_predictions
from spurious.data.synthetic_mcq import make_mcq_artifacts
from spurious.detectors.aflite import AFLite
from spurious.detectors.aflite.algorithm import sample_partitions
from spurious.detectors.aflite.baselines import predictability_beyond_null
from spurious.detectors.aflite.mcq import option_choice_accuracy
from spurious.evaluate.fairness.analysis import Fairness
from spurious.evaluate.fairness.mcq import item_halves, mc_adversary
from spurious.exceptions import ParameterError
from spurious.features.mcq import OptionFeaturizer
from spurious.models.conditional_logit import ConditionalLogit

FAST = {"features": "lexical", "n_partitions": 24, "train_size": 0.2, "slice_size": 0.05}


@pytest.fixture(scope="module")
def planted():
    return make_mcq_artifacts(
        n=500, n_options=(3, 5), artifact="length", artifact_rate=0.5, random_state=0
    )


@pytest.fixture(scope="module")
def planted_result(planted):
    return AFLite(**FAST).run(planted.dataset, progress=False)


def test_aflite_removes_the_planted_items(planted, planted_result):
    res = planted_result
    assert res.status == "ok", res.error
    removed = res.scores["is_aflite_issue"].to_numpy()
    precision = planted.has_artifact[removed].mean()
    recall = removed[planted.has_artifact].mean()
    assert precision > 0.8 > 0.5 == planted.has_artifact.mean(), precision
    assert recall > 0.8, recall
    # The verdict: the options alone predict the gold beyond re-drawn golds.
    assert res.headline["severity"] in ("moderate", "high")
    assert res.details["predictability"]["chosen"] == "choices_only"
    assert res.metrics["baseline_share_null_choices_only"] < 0.05
    k = planted.dataset.frame["options"].map(len).to_numpy()
    assert res.metrics["chance"] == pytest.approx((1 / k).mean())
    assert res.metrics["chance_kept"] == pytest.approx((1 / k[~removed]).mean())
    assert res.details["featurizer"]["view"] == "full"
    assert res.details["model"]["model"] == "conditional_logit"
    # The report shows each example's options, lettered.
    assert res.details["removed_examples"][0]["options"].startswith("A) ")


def test_choices_only_accuracy_of_the_kept_items_falls_to_chance(planted, planted_result):
    ds = planted.dataset
    kept = np.flatnonzero(~planted_result.scores["is_aflite_issue"].to_numpy())
    before = option_choice_accuracy(ds)
    after = option_choice_accuracy(ds.subset(kept))
    assert before["beyond_chance"] > 0.25, before
    assert after["beyond_chance"] < 0.05, after
    assert after["n"] == len(kept)


def test_no_cue_no_finding():
    s = make_mcq_artifacts(n=400, n_options=(3, 5), artifact="none", random_state=1)
    res = AFLite(**FAST).run(s.dataset, progress=False)
    assert res.status == "ok", res.error
    assert res.headline["severity"] == "none", res.headline
    assert res.metrics["removed_fraction"] < 0.05
    assert res.metrics["predictable_share"] < 0.05


def test_null_redraws_gold_within_items_not_across():
    # Items of 2-5 options: a permutation of golds across items points at padding, which
    # the conditional logit refuses; re-drawing within items never does.
    s = make_mcq_artifacts(n=200, n_options=(2, 5), artifact="length", random_state=2)
    ds = s.dataset
    blocks = OptionFeaturizer("lexical").fit(ds).transform(ds, "choices_only")
    parts = sample_partitions(np.arange(len(ds)), 60, 4, np.random.default_rng(0))
    model = ConditionalLogit(blocks.n_features)
    k = ds.frame["options"].map(len).to_numpy()
    out = predictability_beyond_null(blocks.X, ds.labels, *parts, model=model, n_options=k)
    assert out["share"] > out["share_null"] + 0.3
    with pytest.raises(ParameterError, match="padding block"):
        predictability_beyond_null(blocks.X, ds.labels, *parts, model=model)


def test_eval_mode_filters_the_evaluation_items(planted):
    s = make_mcq_artifacts(
        n=700, n_options=(3, 5), artifact="length", artifact_rate=0.5, random_state=3
    )
    idx = np.arange(700)
    train, ev = s.dataset.subset(idx[:450]), s.dataset.subset(idx[450:])
    res = AFLite(mode="eval", **FAST).run(train, ev, progress=False)
    assert res.status == "ok", res.error
    assert list(res.scores["id"]) == list(ev.ids)
    removed = res.scores["is_aflite_issue"].to_numpy()
    assert s.has_artifact[450:][removed].mean() > 0.7
    assert res.metrics["n_eval"] == 250
    assert 0.2 < res.metrics["chance"] < 0.34


def test_choices_only_view_is_its_own_baseline(planted):
    res = AFLite(**FAST, view="choices_only", max_rounds=1).run(planted.dataset, progress=False)
    assert res.details["predictability"]["chosen"] == "main"
    assert res.details["featurizer"]["view"] == "choices_only"


def test_runs_through_the_runner_and_opts_in(planted):
    run = spurious.run(planted.dataset, analyses={"aflite": {**FAST, "max_rounds": 1}},
                       progress=False)  # fmt: skip
    assert run["aflite"].status == "ok", run["aflite"].error
    # bow / tfidf mean the lexical option cues on MC items, and the config says so
    assert AFLite(**{**FAST, "features": "tfidf"}, max_rounds=1, n_shuffles=0).run(
        planted.dataset, progress=False
    ).details["featurizer"] == {**run["aflite"].details["featurizer"], "requested": "tfidf"}


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"view": "hypothesis_only"}, "'view'"),
        ({"model": "linear-svm"}, "'model'"),
        ({"baseline_view": "premise_only"}, "'baseline_view'"),
    ],
)
def test_clear_errors_on_mc(planted, params, match):
    with pytest.raises(ParameterError, match=match):
        AFLite(**{**FAST, **params}).run(planted.dataset, progress=False)


def test_lexical_is_refused_on_other_tasks():
    from spurious.data.synthetic import make_nli_artifacts

    with pytest.raises(ParameterError, match=r"'features'.*multiple-choice"):
        AFLite(**FAST).run(make_nli_artifacts(n=100).dataset, progress=False)


def test_write_filtered_round_trip(tmp_path, planted, planted_result):
    f = planted.dataset.frame
    rows = [{"id": i, "question": q, "choices": list(o), "answer": int(y)}
            for i, q, o, y in zip(f["id"], f["question"], f["options"], f["label_id"], strict=True)]  # fmt: skip
    src = tmp_path / "items.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ds = load_dataset(src, "mcq")
    res = AFLite(**FAST, n_shuffles=0).run(ds, progress=False)
    kept = ~res.scores["is_aflite_issue"].to_numpy()
    for suffix in ("jsonl", "parquet"):
        out = write_filtered(ds, res, tmp_path / f"kept.{suffix}")
        back = load_dataset(out, "mcq")
        assert list(back.ids) == list(ds.ids[kept])
        assert back.frame["options"].tolist() == ds.frame["options"][kept].tolist()
        assert (back.labels == ds.labels[kept]).all()


# -- fairness ------------------------------------------------------------------------------


def _models(s):
    """A model right exactly on the planted items (wrong elsewhere) and a uniform guesser."""
    ds = s.dataset
    rng = np.random.default_rng(0)
    k = ds.frame["options"].map(len).to_numpy()
    wrong = (ds.labels + 1 + (rng.random(len(ds)) * (k - 1)).astype(int)) % k
    cue = np.where(s.has_artifact, ds.labels, wrong)
    guess = (rng.random(len(ds)) * k).astype(int)
    letters = np.array(list("ABCDEFGHIJ"))
    return [
        align_predictions(dict(zip(ds.ids, letters[p], strict=True)), ds, name=n)
        for n, p in (("cue_model", cue), ("guesser", guess))
    ]


FAIR = {
    "adversaries": ["lexical:choices_only", "lexical:full"],
    "seeds": [0],
    "aflite_params": {"n_partitions": 16, "train_size": 0.2, "slice_size": 0.05},
    "n_bootstrap": 50,
}


def test_fairness_matrix_on_mc_items(planted):
    ctx = RunContext(planted.dataset, predictions=_models(planted), progress=False)
    res = Fairness(**FAIR).run(context=ctx)
    assert res.status == "ok", res.error
    m = res.metrics
    assert m["chance"] == pytest.approx(np.mean(1 / planted.dataset.frame["options"].map(len)))
    # Unfiltered the cue model is right on the planted half and beats the guesser; on
    # every AF-selected set the planted items are gone and it falls below the guesser.
    assert m["accuracy/cue_model/none"] > m["accuracy/guesser/none"] + 0.15
    for adv in ("lexical_choices_only", "lexical_full"):
        assert m[f"accuracy/cue_model/{adv}"] < 0.15 < m[f"accuracy/guesser/{adv}"]
        assert m[f"rank/cue_model/{adv}"] == 2 and m["rank/cue_model/none"] == 1
    assert m["min_kendall_tau"] == -1.0
    assert res.details["mcq"]["protocol"].startswith("cross-fitted halves")
    assert res.details["mcq"]["features"]["lexical_full"]["view"] == "full"


def test_fairness_with_a_training_split():
    s = make_mcq_artifacts(n=600, n_options=4, artifact="length", artifact_rate=0.5, random_state=4)
    idx = np.arange(600)
    train, ev = s.dataset.subset(idx[:300]), s.dataset.subset(idx[300:])
    sub = type(s)(ev, s.has_artifact[300:], s.params)
    ctx = RunContext(train, ev, predictions=_models(sub), progress=False)
    res = Fairness(**{**FAIR, "adversaries": ["lexical:choices_only"]}).run(context=ctx)
    assert res.status == "ok", res.error
    assert res.details["mcq"]["protocol"].startswith("AFLite's classifiers train on the training")
    assert res.metrics["chance"] == 0.25
    m = res.metrics
    assert m["accuracy/cue_model/lexical_choices_only"] < m["accuracy/guesser/lexical_choices_only"]


def test_fairness_mc_adversary_specs(planted):
    assert mc_adversary("minilm:choices_only") == ("minilm", "choices_only")
    assert mc_adversary("lexical", "choices_only") == ("lexical", "choices_only")
    with pytest.raises(ParameterError, match="'adversaries'"):
        mc_adversary("bow:full")
    # Classification adversaries alone (the quick profile) fall back to the MC defaults;
    # mixed with MC ones they are refused.
    f = Fairness(adversaries=["bow", "tfidf"])
    assert list(f._adversary_specs(False, mc=True)) == [
        "lexical_choices_only", "lexical_full", "minilm_choices_only", "minilm_full"
    ]  # fmt: skip
    ctx = RunContext(planted.dataset, predictions=_models(planted), progress=False)
    assert Fairness().unmet(ctx) == []
    with pytest.raises(ParameterError, match="multiple-choice"):
        Fairness(adversaries=["bow", "lexical:full"]).check(ctx)


def test_item_halves_balance_groups():
    frame = pd.DataFrame({
        "question": [f"q{i}" for i in range(40)],
        "options": [["a", "b", "c"]] * 40,
        "label": ["A"] * 40,
        "group": ["x"] * 10 + ["y"] * 30,
    })  # fmt: skip
    ds = spurious.data.Dataset.from_frame(frame, "mcq")
    half = item_halves(ds, 0)
    assert np.bincount(half[:10]).tolist() == [5, 5]
    assert np.bincount(half[10:]).tolist() == [15, 15]
