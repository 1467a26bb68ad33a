"""The fairness analysis (paper 004 Sec. 5): known answers for every statistic."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from spurious.analysis import get_analysis
from spurious.context import RunContext
from spurious.data.predictions import align_predictions
from spurious.data.synthetic import make_nli_artifacts
from spurious.evaluate.fairness import (
    accuracy_matrix,
    agreement_by_stage,
    correctness,
    family_rank_change,
    gold_agreement,
    label_entropy,
    rank_agreement,
    ranks,
    read_label_counts,
)
from spurious.evaluate.fairness.agreement import counts_from_lists
from spurious.exceptions import ParameterError
from spurious.report.sections.fairness import fairness_section
from spurious.results import Result

# 6 examples, 3 models, one adversary with 2 seeds.
GOLD = np.array([0, 1, 2, 0, 1, 2])
PREDS = [
    np.array([0, 1, 2, 0, 1, 2]),  # a: all correct
    np.array([0, 1, 2, 1, 2, 0]),  # b: correct on 0-2
    np.array([1, 2, 0, 0, 1, 2]),  # c: correct on 3-5
]
# stage codes: 0 first round, 1 later, 2 AF-selected
STAGES = np.array([[0, 0, 1, 2, 2, 2], [0, 1, 2, 2, 2, 2]])


def test_matrix_known_answer():
    correct = correctness(PREDS, GOLD)
    m = accuracy_matrix(correct, {"adv": STAGES == 2}, models=["a", "b", "c"], n_bootstrap=0)
    assert m.adversaries == ["none", "adv"]
    # none: a 6/6, b 3/6, c 3/6
    np.testing.assert_allclose(m.accuracy[:, 0], [1.0, 0.5, 0.5])
    # adv seed 0 selects {3,4,5}: a 1, b 0, c 1; seed 1 selects {2,3,4,5}: a 1, b 1/4, c 3/4
    np.testing.assert_allclose(m.accuracy[:, 1], [1.0, 0.125, 0.875])
    np.testing.assert_allclose(
        m.seed_sd[:, 1], [0.0, np.std([0, 0.25], ddof=1), np.std([1, 0.75], ddof=1)]
    )
    np.testing.assert_allclose(m.n_selected, [6.0, 3.5])
    assert ranks(m.accuracy[:, 0]).tolist() == [1.0, 2.5, 2.5]
    assert ranks(m.accuracy[:, 1]).tolist() == [1.0, 3.0, 2.0]


def test_matrix_bootstrap_brackets_the_estimate_and_is_seeded():
    rng = np.random.default_rng(0)
    correct = rng.random((3, 200)) < [[0.8], [0.6], [0.4]]
    sel = {"adv": rng.random((2, 200)) < 0.3}
    a = accuracy_matrix(correct, sel, n_bootstrap=200, random_state=1)
    b = accuracy_matrix(correct, sel, n_bootstrap=200, random_state=1)
    np.testing.assert_array_equal(a.boot, b.boot)
    assert np.all(a.ci_low <= a.accuracy + 1e-9) and np.all(a.accuracy <= a.ci_high + 1e-9)


def test_kendall_identical_and_reversed():
    acc = np.array([0.9, 0.7, 0.5, 0.3])
    same = rank_agreement(acc, acc - 0.2)
    assert same["kendall_tau"] == pytest.approx(1.0) and same["spearman"] == pytest.approx(1.0)
    rev = rank_agreement(acc, acc[::-1])
    assert rev["kendall_tau"] == pytest.approx(-1.0) and rev["spearman"] == pytest.approx(-1.0)
    # bootstrap interval of an identical ranking is [1, 1]
    boot = np.tile(acc, (20, 1))
    r = rank_agreement(acc, acc, boot, boot)
    assert r["kendall_tau_ci_low"] == r["kendall_tau_ci_high"] == pytest.approx(1.0)


def test_family_rank_change():
    changes = family_rank_change(
        {"m1": 1.0, "m2": 2.0, "m3": 3.0},
        {"a1": {"m1": 3.0, "m2": 1.0, "m3": 2.0}, "a2": {"m1": 1.0, "m2": 2.0, "m3": 3.0}},
        {"m1": "bert", "a1": "bert", "m3": "lstm", "a2": "lstm"},
    )
    assert changes == {("m1", "a1"): 2.0, ("m3", "a2"): 0.0}


def test_agreement_by_stage_known_answer():
    ann = [
        ["e"] * 5,
        ["e"] * 4 + ["n"],
        ["n", "n", "n", "e", "c"],
        None,
        ["c"] * 3 + ["e"] * 2,
        ["c"] * 5,
    ]
    gold = ["e", "e", "n", "c", "c", "c"]
    agree = gold_agreement(counts_from_lists(ann), gold)
    np.testing.assert_allclose(agree, [1.0, 0.8, 0.6, np.nan, 0.6, 1.0])
    ent = label_entropy(counts_from_lists(ann))
    assert ent[0] == 0.0 and ent[1] == pytest.approx(-(0.8 * np.log2(0.8) + 0.2 * np.log2(0.2)))
    stages = np.array([[0, 0, 2, 2, 2, 1]])
    r = agreement_by_stage(agree, stages, n_bootstrap=0)
    assert r[0]["mean"] == pytest.approx(0.9)  # examples 0, 1
    assert r[1]["mean"] == pytest.approx(1.0)  # example 5
    assert r[2]["mean"] == pytest.approx(0.6)  # examples 2, 4 (3 has no annotations)
    assert r[2]["n"] == 2.0


def test_read_label_counts_chaosnli(tmp_path):
    f = tmp_path / "chaos.jsonl"
    f.write_text(
        json.dumps({"uid": "x", "label_counter": {"e": 60, "n": 30, "c": 10}})
        + "\n"
        + json.dumps({"id": "y", "annotator_labels": ["neutral", "neutral"]})
        + "\n"
    )
    got = read_label_counts(f, ["entailment", "neutral", "contradiction"])
    assert got == {"x": {"entailment": 60.0, "neutral": 30.0, "contradiction": 10.0},
                   "y": {"neutral": 2.0}}  # fmt: skip
    f.write_text(json.dumps({"uid": "x", "label_counter": {"q": 1}}) + "\n")
    with pytest.raises(ValueError, match="'q'"):
        read_label_counts(f, ["entailment", "neutral", "contradiction"])
    f.write_text("\n")
    assert read_label_counts(f, ["entailment", "neutral", "contradiction"]) == {}
    f.write_text(json.dumps({"annotator_labels": ["neutral"]}) + "\n")
    with pytest.raises(ValueError, match="example 1 has no 'id'"):
        read_label_counts(f, ["entailment", "neutral", "contradiction"])


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"seeds": []}, "seeds"),
        ({"seeds": [0, 0]}, "seeds"),
        ({"n_bootstrap": -1}, "n_bootstrap"),
        ({"confidence": 1.5}, "confidence"),
        ({"adversaries": []}, "adversaries"),
        ({"adversaries": {"none": "bow"}}, "adversaries"),
        ({"families": {"a": 1}}, "families"),
    ],
)
def test_parameter_errors_name_the_argument(params, name):
    cls = get_analysis("fairness")
    with pytest.raises(ParameterError, match=f"'{name}'"):
        cls(**params).validate_params()


def test_aflite_params_may_not_set_mode():
    from spurious.evaluate.fairness import run_adversaries

    tr, ev = make_nli_artifacts(n=120, random_state=0).dataset.split(0.3)
    with pytest.raises(ParameterError, match="'aflite_params'"):
        run_adversaries(
            RunContext(tr, ev, progress=False), ["bow"], [0], aflite_params={"mode": "train"}
        )


def _context(n=360):
    train, test = make_nli_artifacts(n=n, random_state=0).dataset.split(0.3)
    names = np.array(test.label_names, dtype=object)
    rng = np.random.default_rng(0)
    preds = []
    for k, noise in enumerate((0.1, 0.3, 0.5)):
        lab = test.labels.copy()
        flip = rng.random(len(lab)) < noise
        lab[flip] = rng.integers(0, test.n_classes, flip.sum())
        preds.append(
            align_predictions(dict(zip(test.ids, names[lab], strict=True)), test, name=f"m{k}")
        )
    frame = test.frame.copy()
    frame["annotator_labels"] = [[names[y]] * 4 + [names[(y + 1) % 3]] for y in test.labels]
    from spurious.data.dataset import Dataset

    test = Dataset.from_frame(frame, "nli", label_names=test.label_names, name=test.name)
    return RunContext(train, test, predictions=preds, progress=False)


def test_end_to_end_on_synthetic_data():
    ctx = _context()
    cls = get_analysis("fairness")
    res = cls(**{**cls.fast_params, "families": {"m0": "lex", "bow": "lex"}}).run(context=ctx)
    m, s = res.metrics, res.scores
    assert len(s) == len(ctx.eval) and list(s["id"]) == list(ctx.eval.ids)
    assert m["accuracy/m0/none"] > m["accuracy/m2/none"]
    for a in ("bow", "tfidf"):
        total = sum(m[f"{s}_fraction/{a}"] for s in ("first_round", "later", "selected"))
        assert total == pytest.approx(1.0)
    assert m["agreement_all"] == pytest.approx(0.8)
    assert "family_rank_change/m0/bow" in m
    assert res.details["score"] == "accuracy" and not any(k.startswith("acc_") for k in m)
    assert s["fairness_score"].between(0, 1).all()
    assert (s["is_fairness_issue"] == (s["fairness_score"] >= 0.5)).all()
    assert res.details["verdict"]
    html = fairness_section(res).html_body
    assert "Kendall" in html and "data:image" in html and "Random subsets" in html


def test_section_escapes_text():
    r = Result(
        "fairness",
        pd.DataFrame({"id": ["<i>x</i>"], "fairness_score": [0.5]}),
        {"mean_accuracy/none": 0.7, "chance": 1 / 3},
        details={
            "verdict": "<script>alert(1)</script>",
            "models": ["<b>m</b>"],
            "adversary_order": ["bow"],
            "matrix": [{"model": "<b>m</b>", "adversary": "none", "accuracy": 0.7}],
            "ranking": [{"adversary": "<u>bow</u>", "kendall_tau": 1.0}],
        },
    )
    html = str(fairness_section(r).html_body)
    assert "<script>alert" not in html and "&lt;script&gt;" in html
    assert "<b>m</b>" not in html and "<u>bow</u>" not in html


@pytest.mark.slow
def test_cli_fairness(tmp_path):
    from click.testing import CliRunner

    from spurious.cli import main

    ctx = _context(240)
    tr, ev = tmp_path / "train.jsonl", tmp_path / "dev.jsonl"
    for ds, path in ((ctx.train, tr), (ctx.eval, ev)):
        ds.frame[["id", "premise", "hypothesis", "label"]].to_json(
            path, orient="records", lines=True
        )
    files = []
    for p in ctx.predictions:
        f = tmp_path / f"{p.name}.jsonl"
        pd.DataFrame({"id": p.ids, "prediction": p.values}).to_json(f, orient="records", lines=True)
        files.append(str(f))
    out = tmp_path / "run"
    res = CliRunner().invoke(
        main,
        [
            "fairness",
            str(tr),
            "--task",
            "nli",
            "--eval",
            str(ev),
            "--predictions",
            *files,
            "--adversary",
            "bow",
            "--seeds",
            "0",
            "--family",
            "m0=lex",
            "--family",
            "bow=lex",
            "--set",
            "fairness.n_bootstrap=20",
            "--set",
            "fairness.aflite_params={n_partitions: 8, train_size: 0.3, max_rounds: 2}",
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    assert (out / "fairness" / "metrics.json").exists() and (out / "report.html").exists()


# -- the headline follows the verdict API: an interval and a null test -----------------------
def _ladder(n=2000, seed=0):
    """Four models 0.9 / 0.8 / 0.7 / 0.6 accurate, independently per example."""
    rng = np.random.default_rng(seed)
    return rng.random((4, n)) < np.array([[0.9], [0.8], [0.7], [0.6]])


def test_random_subset_null_separates_planted_reordering_from_chance():
    from spurious.evaluate.fairness.ranking import random_subset_null

    correct = _ladder()
    full = correct.mean(axis=1)
    # planted: an adversary keeping the examples the strong models get wrong and the
    # weak ones right reverses the ranking
    planted = (~correct[0] & correct[3]) | (~correct[1] & correct[2])
    tau_planted = rank_agreement(full, correct[:, planted].mean(axis=1))["kendall_tau"]
    assert tau_planted < 0
    null = random_subset_null(correct, planted.sum(), tau_planted, n_draws=300)
    assert null["p_value"] < 0.01 and null["null_tau_median"] == 1.0
    # control: a random subset of the same size keeps the ranking; p is large
    rand = np.random.default_rng(1).permutation(correct.shape[1])[: planted.sum()]
    tau_rand = rank_agreement(full, correct[:, rand].mean(axis=1))["kendall_tau"]
    assert random_subset_null(correct, len(rand), tau_rand, n_draws=300)["p_value"] > 0.2
    # same seed, same draws
    again = random_subset_null(correct, planted.sum(), tau_planted, n_draws=300)
    assert again == null


def _tau_result(tau, lo, hi, p):
    m = {"min_kendall_tau": tau, "min_kendall_tau_ci_low": lo, "min_kendall_tau_ci_high": hi,
         "min_kendall_tau_null_p": p, "mean_accuracy/none": 0.7, "mean_accuracy/a": 0.5}  # fmt: skip
    return Result("fairness", pd.DataFrame({"id": ["x"]}), m,
                  details={"adversary_order": ["a"]})  # fmt: skip


@pytest.mark.parametrize(
    ("tau", "lo", "hi", "p", "severity", "inconclusive"),
    [
        (-0.2, -0.5, 0.0, 0.001, "high", False),  # effect interval [1.0, 1.5]
        (-0.2, -0.5, 0.0, 0.40, "none", False),  # random subsets reorder as much
        (0.3, -0.5, 0.9, 0.001, "low", True),  # effect [0.1, 1.5], significant: inconclusive
        (0.7, 0.55, 0.8, 0.01, "low", False),  # effect [0.2, 0.45]: low to moderate
        (1.0, 1.0, 1.0, 1.0, "none", False),
    ],
)
def test_headline_severity_rests_on_interval_and_null(tau, lo, hi, p, severity, inconclusive):
    cls = get_analysis("fairness")
    h = cls().headline(_tau_result(tau, lo, hi, p))
    assert h["severity"] == severity
    assert h["evidence"]["basis"] == "interval+null_test"
    assert h["evidence"]["null"] == "random subsets of the AF-selected size"
    if severity == "low" and not inconclusive:
        assert h["inconclusive"] is True  # [0.2, 0.45] spans low to moderate
    else:
        assert h["inconclusive"] is inconclusive


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_shuffled_labels_never_give_a_moderate_or_high_verdict(seed):
    ctx = _context()
    rng = np.random.default_rng(seed)
    ev = ctx.eval
    frame = ev.frame.copy()
    frame["label"] = np.array(ev.label_names, dtype=object)[rng.permutation(ev.labels)]
    from spurious.data.dataset import Dataset

    shuffled = Dataset.from_frame(frame, "nli", label_names=ev.label_names, name=ev.name)
    names = np.array(ev.label_names, dtype=object)
    preds = [
        align_predictions(dict(zip(p.ids, names[p.values], strict=True)), shuffled, name=p.name)
        for p in ctx.predictions
    ]
    sctx = RunContext(ctx.train, shuffled, predictions=preds, progress=False)
    cls = get_analysis("fairness")
    res = cls(**{**cls.fast_params, "n_bootstrap": 200}).run(context=sctx)
    h = res.headline
    assert h["severity"] in ("none", "low", "info"), h
    assert "min_kendall_tau_null_p" in res.metrics


def test_an_adversary_with_several_representation_seeds():
    from spurious.evaluate.fairness import run_adversaries
    from spurious.evaluate.fairness.adversaries import stage_arrays

    ctx = _context(240)
    params = {"n_partitions": 8, "train_size": 0.3, "slice_size": 0.1, "max_rounds": 2}
    runs = run_adversaries(ctx, {"lex": ["bow", "tfidf"]}, [0, 1], aflite_params=params)
    assert [(r.representation, r.seed) for r in runs] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert stage_arrays(runs)["lex"].shape == (4, len(ctx.eval))
    # representation 0 is bow itself: the same stages as a plain "bow" adversary
    alone = run_adversaries(ctx, {"b": "bow"}, [0, 1], aflite_params=params)
    np.testing.assert_array_equal(stage_arrays(runs)["lex"][:2], stage_arrays(alone)["b"])
    cls = get_analysis("fairness")
    res = cls(adversaries={"lex": ["bow", "tfidf"]}, seeds=[0], aflite_params=params,
              n_bootstrap=20).run(context=ctx)  # fmt: skip
    assert [r["representation"] for r in res.details["runs"]] == [0, 1]
    assert res.details["families"]["lex"] == "lexical"
    with pytest.raises(ParameterError, match="non-empty list"):
        run_adversaries(ctx, {"lex": []}, [0], aflite_params=params)
