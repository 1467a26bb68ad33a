"""PVI (Ethayarajh et al. 2022): known answers, planted artifacts, shuffled labels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from spurious.context import RunContext
from spurious.data import Dataset
from spurious.data.synthetic import make_nli_artifacts
from spurious.detectors.partial_input import PartialInput
from spurious.detectors.pvi import PVI, null_probabilities, pointwise_v_information
from spurious.exceptions import AnalysisError, ParameterError
from spurious.report import build_section
from spurious.results import Result


def test_pvi_known_answers():
    # log2(1/0.5) = 1 bit gained; the prior itself = 0; half the prior = -1 bit.
    pvi = pointwise_v_information(
        np.array([1.0, 0.5, 0.125, 0.75]), np.array([0.5, 0.5, 0.25, 0.25])
    )
    np.testing.assert_allclose(pvi, [1.0, 0.0, -1.0, np.log2(3)])
    # A zero probability is clipped, not -inf.
    assert np.isfinite(pointwise_v_information(np.array([0.0]), np.array([0.5]))).all()


def test_null_model_is_the_training_folds_prior():
    y = np.array([0, 0, 0, 1, 1, 2])
    fold_of = np.array([0, 0, 1, 1, 2, 2])
    # Row 0 (fold 0) is scored by a model trained on rows 2..5: labels 0,1,1,2 -> p(0)=1/4.
    # Row 3 (fold 1) by rows 0,1,4,5: labels 0,0,1,2 -> p(1)=1/4.
    # Row 5 (fold 2) by rows 0..3: labels 0,0,0,1 -> p(2)=0.
    got = null_probabilities(y, 3, y, fold_of=fold_of)
    np.testing.assert_allclose(got, [1 / 4, 1 / 4, 2 / 4, 1 / 4, 1 / 4, 0.0])
    # Train -> eval: the training split's prior.
    np.testing.assert_allclose(null_probabilities(y, 3, np.array([2, 0])), [1 / 6, 3 / 6])


def _tiny() -> tuple[Dataset, Dataset]:
    train = Dataset.from_frame(
        pd.DataFrame(
            {
                "premise": ["a", "b", "c", "d"],
                "hypothesis": ["w", "x", "y", "z"],
                "label": ["entailment", "entailment", "entailment", "contradiction"],
            }
        ),
        "nli",
    )
    test = Dataset.from_frame(
        pd.DataFrame(
            {
                "premise": ["e", "f"],
                "hypothesis": ["u", "v"],
                "label": ["entailment", "contradiction"],
            }
        ),
        "nli",
    )
    return train, test


def test_hand_computed_v_information_from_given_probabilities():
    """With the partial-input probabilities fixed by hand, every number is known."""
    train, test = _tiny()
    ctx = RunContext(train, test, progress=False)
    scores = pd.DataFrame(
        {
            "id": test.ids,
            # prior of train: entailment 3/4, neutral 0, contradiction 1/4
            "p_gold_full": [0.75, 0.5],  # PVI 0 and +1
            "p_gold_premise_only": [0.375, 0.25],  # PVI -1 and 0
            "p_gold_hypothesis_only": [1.0, 1.0],  # PVI log2(4/3) and +2
            "partial_input_score": [1.0, 1.0],
        }
    )
    params = PVI(n_resamples=20).to_config()
    ctx.results["partial_input"] = Result("partial_input", scores, {}, params=params)
    res = PVI(n_resamples=20).run(context=ctx)
    assert res.details["reused_partial_input"] is True
    m = res.metrics
    assert m["v_info_full"] == pytest.approx(0.5)
    assert m["v_info_premise_only"] == pytest.approx(-0.5)
    assert m["v_info_hypothesis_only"] == pytest.approx((np.log2(4 / 3) + 2) / 2)
    h = -(0.75 * np.log2(0.75) + 0.25 * np.log2(0.25))
    assert m["label_entropy"] == pytest.approx(h)
    assert m["share_negative_premise_only"] == pytest.approx(0.5)
    np.testing.assert_allclose(res.scores["pvi_hypothesis_only"], [np.log2(4 / 3), 2.0])
    assert res.scores["pvi_score"].tolist() == res.scores["pvi_hypothesis_only"].tolist()
    # issue_bits=1: only the contradiction row's hypothesis gives 2 bits.
    assert res.scores["is_pvi_issue"].tolist() == [False, True]
    assert res.details["headline_condition"] == "hypothesis_only"
    per_label = res.details["per_label"]["full"]
    assert per_label["contradiction"]["mean"] == pytest.approx(1.0)


@pytest.fixture(scope="module")
def planted():
    return make_nli_artifacts(n=600, artifact_rate=0.8, label_noise=0.05, random_state=3)


@pytest.fixture(scope="module")
def planted_result(planted):
    return PVI(features="bow", n_resamples=100, random_state=0).run(planted.dataset, progress=False)


def test_planted_artifact_raises_hypothesis_only_pvi_on_planted_rows(planted, planted_result):
    pvi = planted_result.scores["pvi_hypothesis_only"].to_numpy()
    contradiction = (planted.dataset.frame["label"] == "contradiction").to_numpy()
    # Among contradictions (the planted label), the cue's rows stand out.
    auc = roc_auc_score(planted.has_artifact[contradiction], pvi[contradiction])
    assert auc > 0.9
    assert pvi[planted.has_artifact].mean() > 1.0  # the label prior is ~1/3: up to 1.58 bits
    m = planted_result.metrics
    assert m["v_info_hypothesis_only_ci_low"] > 0.05
    # Premises carry nothing by construction: their interval covers 0 or lies below it.
    assert m["v_info_premise_only_ci_low"] < 0.02
    assert planted_result.headline["severity"] in ("moderate", "high")
    flagged = planted_result.scores["is_pvi_issue"].to_numpy()
    assert flagged[planted.has_artifact].mean() > 0.8


def test_negative_full_pvi_marks_mislabelled_rows(planted, planted_result):
    """The paper's use: low PVI finds label errors (here planted with label_noise)."""
    full = planted_result.scores["pvi_full"].to_numpy()
    assert roc_auc_score(planted.is_mislabeled, -full) > 0.7


def _shuffled(ds: Dataset, seed: int) -> Dataset:
    frame = ds.frame.drop(columns=["label_id"]).copy()
    frame["label"] = np.random.default_rng(seed).permutation(frame["label"].to_numpy())
    return Dataset.from_frame(frame, ds.task, label_names=ds.label_names)


@pytest.mark.parametrize("seed", [0, 1])
def test_shuffled_labels_give_no_v_information(planted, seed):
    res = PVI(n_resamples=100, random_state=0).run(_shuffled(planted.dataset, seed), progress=False)
    for c in ("full", "premise_only", "hypothesis_only"):
        # Out of fold, a model of noise does no better than the prior (it overfits: < 0).
        assert res.metrics[f"v_info_{c}"] < 0.03
        assert res.metrics[f"v_info_{c}_ci_low"] < 0.01
    assert res.headline["severity"] == "none"


def test_reuses_partial_input_and_matches_its_own_fit(planted):
    data = planted.dataset.subset(np.arange(300))
    ctx = RunContext(data, progress=False)
    ctx.results["partial_input"] = PartialInput(features="bow", n_resamples=20).run(context=ctx)
    reused = PVI(features="bow", n_resamples=20).run(context=ctx)
    own = PVI(features="bow", n_resamples=20).run(data, progress=False)
    assert reused.details["reused_partial_input"] and not own.details["reused_partial_input"]
    pd.testing.assert_frame_equal(reused.scores, own.scores)
    # The leakage score is p_gold of the same probes: PVI ranks examples alike.
    assert reused.metrics["spearman_partial_input"] > 0.8
    # Different settings are not reused.
    other = PVI(features="bow", n_folds=3, n_resamples=20).run(context=ctx)
    assert not other.details["reused_partial_input"]


def test_train_to_eval_split_and_one_field_task():
    train, test = make_nli_artifacts(n=400, artifact_rate=0.9, random_state=1).dataset.split(
        0.3, random_state=0
    )
    res = PVI(features="bow", n_resamples=50).run(train, test, progress=False)
    assert len(res.scores) == len(test) and res.details["mode"] == "eval_split"
    assert res.metrics["v_info_hypothesis_only"] > 0.1

    frame = pd.DataFrame(
        {
            "text": ["good fun", "great joy", "bad day", "awful mess"] * 25,
            "label": ["pos", "pos", "neg", "neg"] * 25,
        }
    )
    text = Dataset.from_frame(frame, "text")
    one = PVI(features="bow", n_resamples=50).run(text, progress=False)
    assert one.details["partial_conditions"] == []
    assert one.headline["severity"] == "info"
    assert one.metrics["v_info_full"] > 0.5  # the words give the label away
    assert not one.scores["is_pvi_issue"].any()


def test_errors_name_the_parameter():
    with pytest.raises(ParameterError, match="n_folds"):
        PVI(n_folds=1).validate_params()
    with pytest.raises(ParameterError, match="model"):
        PVI(model="nope").validate_params()
    train, _ = _tiny()
    with pytest.raises(AnalysisError, match="n_folds=5"):
        PVI(features="bow").run(train, progress=False)


def test_report_section_renders(planted_result):
    section = build_section(planted_result)
    assert section.status == "ok"
    body = str(section.html_body)
    assert "V-information" in body and "possibly mislabelled" in body


@pytest.mark.slow
def test_fine_tuned_path_shares_the_partial_input_models(tmp_path_factory):
    """model='finetune': g_x is the engine's fine-tune per condition (a tiny random BERT
    here), built once per run and shared with partial_input."""
    from tests.conftest import make_tiny_bert

    tiny = make_tiny_bert(tmp_path_factory.mktemp("tiny-bert-pvi"))
    train, dev = make_nli_artifacts(n=160, artifact_rate=0.9, random_state=0).dataset.split(
        0.25, random_state=0
    )
    finetune = {"model": tiny, "epochs": 1, "batch_size": 16, "precision": "fp32"}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPURIOUS_CACHE_DIR", str(tmp_path_factory.mktemp("finetune-cache")))
        ctx = RunContext(train, dev, progress=False)
        kw = {"model": "finetune", "finetune": finetune, "conditions": ["hypothesis_only"]}
        ctx.results["partial_input"] = PartialInput(n_resamples=20, tra_examples=0, **kw).run(
            context=ctx
        )
        res = PVI(n_resamples=20, **kw).run(context=ctx)
        assert res.details["reused_partial_input"] and res.details["model"] == "finetune"
        own = PVI(n_resamples=20, **kw).run(context=RunContext(train, dev, progress=False))
    built = [k for k in ctx.timings if k.startswith("trained_model:")]
    assert len(built) == 2  # full and hypothesis_only, once each
    np.testing.assert_allclose(res.scores["pvi_full"], own.scores["pvi_full"], atol=1e-5)
    assert np.isfinite(res.scores["pvi_hypothesis_only"]).all()
    with pytest.raises(AnalysisError, match="evaluation split"):
        PVI(**kw).run(train, progress=False)
