"""The amplify action (paper 002): known split ids, q-matching, baseline, reinsertion, outputs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from spurious.actions.amplify import (
    amplify,
    amplify_run,
    collect_marks,
    match_marks,
    random_subset_mask,
    reinsertion_masks,
)
from spurious.cli import main
from spurious.data import load_dataset
from spurious.exceptions import DataFormatError, ParameterError
from spurious.results import Result

LABELS = ["entailment", "neutral", "contradiction"]


def _frame(prefix: str, n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": [f"{prefix}{i}" for i in range(n)],
            "premise": [f"a premise number {i}" for i in range(n)],
            "hypothesis": [f"{prefix} hypothesis {i}" for i in range(n)],
            "label": [LABELS[i % 3] for i in range(n)],
        }
    )


@pytest.fixture
def data():
    return load_dataset(_frame("t", 10), "nli"), load_dataset(_frame("e", 6), "nli")


def _marks(definition, train_anti, eval_anti, train_score=None, eval_score=None):
    rows = []
    for split, prefix, n, anti, score in (
        ("train", "t", 10, train_anti, train_score),
        ("eval", "e", 6, eval_anti, eval_score),
    ):
        for i in range(n):
            row = {"id": f"{prefix}{i}", "split": split, "definition": definition}
            row["anti_biased"] = i in anti
            row["score"] = np.nan if score is None else score[i]
            rows.append(row)
    return pd.DataFrame(rows)


# Cartography-like: scores (higher = harder); its own marks are its 3 / 2 highest.
CART_TRAIN = [0.1, 0.9, 0.2, 0.8, 0.3, 0.7, 0.0, 0.05, 0.15, 0.25]
CART_EVAL = [0.6, 0.1, 0.9, 0.2, 0.3, 0.4]


def _two_definitions():
    minority = _marks("minority", {1, 4}, {0})
    cart = _marks("cartography", {1, 3, 5}, {2, 0}, CART_TRAIN, CART_EVAL)
    return pd.concat([minority, cart], ignore_index=True)


def test_known_split_ids_and_sizes(data):
    train, test = data
    amp = amplify(train, test, _marks("minority", {1, 4}, {0}), reinsert=(0.5,))
    assert amp.ids("minority", "train.biased") == ["t0", "t2", "t3", "t5", "t6", "t7", "t8", "t9"]
    assert amp.ids("minority", "train.anti_biased") == ["t1", "t4"]
    assert amp.ids("minority", "test.anti_biased") == ["e0"]
    assert amp.ids("minority", "test.biased") == ["e1", "e2", "e3", "e4", "e5"]
    assert len(amp.ids("minority", "train.random")) == 8
    reinserted = amp.ids("minority", "train.reinserted_50")
    assert len(reinserted) == 9 and set(amp.ids("minority", "train.biased")) < set(reinserted)
    s = amp.summary()["definitions"]["minority"]["splits"]
    assert s["train.anti_biased"]["labels"] == {"entailment": 0, "neutral": 2, "contradiction": 0}
    assert s["test.anti_biased"] == {
        "from": "eval",
        "n": 1,
        "share_of_source": pytest.approx(1 / 6),
        "labels": {"entailment": 1, "neutral": 0, "contradiction": 0},
    }


def test_q_matching_gives_equal_sizes_and_the_expected_examples(data):
    train, test = data
    amp = amplify(train, test, _two_definitions(), reinsert=())
    # minority fixes 2 of 10 training examples (q = 20%); cartography takes its 2 highest
    # training scores and round(0.2 * 6) = 1 highest evaluation score.
    assert amp.ids("cartography", "train.anti_biased") == ["t1", "t3"]
    assert amp.ids("cartography", "test.anti_biased") == ["e2"]
    assert amp.ids("minority", "train.anti_biased") == ["t1", "t4"]  # the target is unchanged
    sizes = {d: len(amp.ids(d, "train.biased")) for d in amp.definitions}
    assert sizes == {"minority": 8, "cartography": 8}
    info = amp.definitions["cartography"].matching
    assert info["matched_to"] == "minority" and info["rethresholded"] and info["q"] == 0.2
    # equal sizes and one seed: one random baseline for all definitions
    assert amp.ids("minority", "train.random") == amp.ids("cartography", "train.random")


def test_explicit_q_and_no_matching(data):
    train, test = data
    amp = amplify(train, test, _two_definitions(), q=0.5, reinsert=())
    assert len(amp.ids("cartography", "train.anti_biased")) == 5
    assert len(amp.ids("cartography", "test.anti_biased")) == 3
    assert amp.ids("minority", "train.anti_biased") == ["t1", "t4"]  # no score: as marked
    raw = amplify(train, test, _two_definitions(), match_to=None, reinsert=())
    assert raw.ids("cartography", "train.anti_biased") == ["t1", "t3", "t5"]
    assert raw.ids("cartography", "test.anti_biased") == ["e0", "e2"]


def test_rethreshold_at_own_count_reproduces_cartography_marks():
    marks = collect_marks(_marks("cartography", {1, 3, 5}, {2, 0}, CART_TRAIN, CART_EVAL))
    matched, _ = match_marks(marks, q=0.3)
    pd.testing.assert_series_equal(matched["anti_biased"], marks["anti_biased"])


def test_fixed_definitions_with_different_counts_cannot_be_matched(data):
    train, test = data
    marks = pd.concat([_marks("minority", {1, 4}, {0}), _marks("other", {1}, {0})])
    with pytest.raises(ParameterError, match="cannot be matched"):
        amplify(train, test, marks)
    amp = amplify(train, test, marks, match_to=None, reinsert=())
    assert len(amp.ids("other", "train.biased")) == 9


def test_random_subset_size_and_seed():
    a = random_subset_mask(1000, 700, random_state=3)
    assert a.sum() == 700
    assert (a == random_subset_mask(1000, 700, random_state=3)).all()
    assert not (a == random_subset_mask(1000, 700, random_state=4)).all()
    with pytest.raises(ParameterError, match="'size'"):
        random_subset_mask(10, 11)


def test_reinsertion_fractions_and_nesting():
    anti = np.zeros(100, dtype=bool)
    anti[::5] = True  # 20 anti-biased
    masks = reinsertion_masks(anti, random_state=0)
    assert list(masks) == [0.1, 0.2, 0.35, 0.5, 0.7]
    assert [int((m & anti).sum()) for m in masks.values()] == [2, 4, 7, 10, 14]
    previous = ~anti
    for m in masks.values():
        assert (m[~anti]).all()  # every biased example stays
        assert (previous <= m).all()  # nested
        previous = m
    again = reinsertion_masks(anti, random_state=0)
    assert all((again[f] == masks[f]).all() for f in masks)
    with pytest.raises(ParameterError, match="'reinsert'"):
        reinsertion_masks(anti, (0.0,))


def test_bad_input_errors_name_the_argument(data, tmp_path):
    train, test = data
    marks = _marks("minority", {1, 4}, {0})
    with pytest.raises(ParameterError, match=r"'definitions'.*minority"):
        amplify(train, test, marks, definitions=["nope"])
    with pytest.raises(DataFormatError, match=r"no 'eval' rows.*--eval"):
        amplify(train, test, marks[marks["split"] == "train"])
    with pytest.raises(ParameterError, match="'eval'"):
        amplify(train, None, marks)
    bad = marks.copy()
    bad.loc[0, "id"] = "zz"
    with pytest.raises(DataFormatError, match=r"not in the data.*'zz'"):
        amplify(train, test, bad)
    with pytest.raises(ParameterError, match="'marks'"):
        amplify(train, test, Result("x", pd.DataFrame({"id": []}), {}))
    with pytest.raises(ParameterError, match="'q'"):
        amplify(train, test, marks, q=1.5)
    assert not any(tmp_path.iterdir())  # nothing written


def test_datasetdict_round_trip_and_drop_in_files(tmp_path):
    datasets = pytest.importorskip("datasets")
    src = tmp_path / "in"
    src.mkdir()
    rows = [
        {"pairID": f"p{i}", "sentence1": f"premise {i}", "sentence2": f"hyp {i}",
         "gold_label": LABELS[i % 3], "extra": i}
        for i in range(12)
    ]  # fmt: skip
    del rows[3]["extra"]  # a key absent from one row stays absent
    for name, part in (("train.jsonl", rows[:8]), ("dev.jsonl", rows[8:])):
        (src / name).write_text("".join(json.dumps(r) + "\n" for r in part))
    train = load_dataset(src / "train.jsonl", "nli")
    test = load_dataset(src / "dev.jsonl", "nli")
    marks = pd.concat(
        [
            pd.DataFrame({"id": train.ids, "split": "train", "definition": "minority",
                          "anti_biased": [i in (1, 3) for i in range(8)]}),
            pd.DataFrame({"id": test.ids, "split": "eval", "definition": "minority",
                          "anti_biased": [True, False, False, True]}),
        ]
    )  # fmt: skip
    amp = amplify(train, test, marks, eval_name="validation", reinsert=(0.5,))
    out = amp.save(tmp_path / "out", inputs=[src / "train.jsonl", src / "dev.jsonl"])

    dd = datasets.load_from_disk(str(out / "hf" / "minority"))
    assert list(dd) == [
        "train.biased", "train.anti_biased", "train.random", "train.reinserted_50",
        "validation.biased", "validation.anti_biased",
    ]  # fmt: skip
    assert dd["train.anti_biased"]["pairID"] == ["p1", "p3"]
    assert dd["validation.anti_biased"]["pairID"] == ["p8", "p11"]

    written = (out / "files" / "minority" / "train.anti_biased.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in written] == [rows[1], rows[3]]  # rows unchanged
    biased = [
        json.loads(x)
        for x in (out / "files/minority/train.biased.jsonl").read_text().split("\n")
        if x
    ]
    assert biased == [r for i, r in enumerate(rows[:8]) if i not in (1, 3)]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["definitions"]["minority"]["splits"]["train.biased"]["n"] == 6
    assert summary["provenance"]["fingerprints"]["train"] == train.fingerprint
    assert summary["params"]["random_state"] == 0 and "versions" in summary["provenance"]
    assert (out / "amplify" / "result.json").exists() and (out / "report.html").exists()

    with pytest.raises(ParameterError, match="--force"):
        amp.save(out)
    amp.save(out, force=True)  # replaces its own outputs
    with pytest.raises(ParameterError, match="other files"):  # a folder of inputs
        amp.save(src, force=True, inputs=[src / "train.jsonl"])
    with pytest.raises(ParameterError, match="never modified"):
        amp.save(tmp_path / "x", inputs=[tmp_path / "x" / "files" / "minority" / "a.jsonl"])
    assert (src / "train.jsonl").read_text().count("\n") == 8


@pytest.fixture(scope="module")
def cartography_run(tmp_path_factory):
    from spurious.runner import execute

    out = tmp_path_factory.mktemp("amp") / "run"
    config = {
        "inputs": {"synthetic": {"n": 400, "random_state": 0, "eval_fraction": 0.3}},
        "analyses": {"cartography": {"features": "bow", "epochs": 3}},
        "seed": 0,
    }
    execute(config, out=out, progress=False)
    return out


def test_cli_from_run(cartography_run, tmp_path):
    out = tmp_path / "amplified"
    runner = CliRunner()
    res = runner.invoke(main, ["amplify", "--from-run", str(cartography_run), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "train.reinserted_35" in res.output
    summary = json.loads((out / "summary.json").read_text())
    defs = summary["definitions"]
    assert set(defs) == {"cartography", "partial_input_cartography"}
    sizes = {d: v["splits"]["train.biased"]["n"] for d, v in defs.items()}
    assert len(set(sizes.values())) == 1
    n_train = summary["n_train"]
    assert sizes["cartography"] == n_train - round(0.21 * n_train)
    assert summary["source"]["run"] == str(cartography_run)
    assert (out / "hf" / "cartography" / "dataset_dict.json").exists()
    assert (out / "files" / "partial_input_cartography" / "test.anti_biased.jsonl").exists()
    html = (out / "report.html").read_text()
    assert "bias-amplified splits" in html and "cartography" in html

    again = runner.invoke(main, ["amplify", "--from-run", str(cartography_run), "--out", str(out)])
    assert again.exit_code == 2 and "--force" in again.output
    bad = runner.invoke(
        main,
        ["amplify", "--from-run", str(cartography_run), "--definition", "nope", "--out",
         str(tmp_path / "bad")],
    )  # fmt: skip
    assert bad.exit_code == 2 and "'definitions'" in bad.output
    assert not (tmp_path / "bad").exists()
    into_run = runner.invoke(
        main, ["amplify", "--from-run", str(cartography_run), "--out", str(cartography_run)]
    )
    assert into_run.exit_code == 2


def test_api_amplify_run_matches_in_memory_result(cartography_run):
    amp = amplify_run(cartography_run, reinsert=(0.2,))
    res = Result.load(cartography_run / "cartography")
    # without a fixed-size definition the marks stay as the analysis made them
    for d in ("cartography", "partial_input_cartography"):
        assert amp.ids(d, "train.anti_biased") == res.anti_biased_ids("train", d)
        assert amp.ids(d, "test.anti_biased") == res.anti_biased_ids("eval", d)


def test_cli_on_the_fly(tmp_path):
    data = tmp_path / "train.jsonl"
    ev = tmp_path / "dev.jsonl"
    from spurious.data.synthetic import make_nli_artifacts

    ds = make_nli_artifacts(n=300, random_state=1).dataset
    frame = ds.frame[["id", "premise", "hypothesis", "label"]]
    frame.iloc[:200].to_json(data, orient="records", lines=True)
    frame.iloc[200:].to_json(ev, orient="records", lines=True)
    out = tmp_path / "out"
    res = CliRunner().invoke(
        main,
        ["amplify", str(data), "--task", "nli", "--eval", str(ev), "--set",
         "cartography.features=bow", "--set", "cartography.epochs=3", "--definition",
         "cartography", "--reinsert", "0.5", "--out", str(out)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert (out / "run" / "cartography" / "marks.parquet").exists()
    written = pd.read_json(out / "files" / "cartography" / "train.biased.jsonl", lines=True)
    assert list(written.columns) == ["id", "premise", "hypothesis", "label"]
    assert len(written) == 200 - round(0.21 * 200)
    assert sorted(p.name for p in (out / "files" / "cartography").iterdir()) == [
        "test.anti_biased.jsonl", "test.biased.jsonl", "train.anti_biased.jsonl",
        "train.biased.jsonl", "train.random.jsonl", "train.reinserted_50.jsonl",
    ]  # fmt: skip


def test_helpers_in_the_package():
    import spurious.actions as actions

    assert actions.amplify is amplify
    assert Path(actions.__file__).exists()


# ---------------------------------------------------------------------------------------
# Evaluation on the splits (Table 1): another family by default, below-chance flags
# ---------------------------------------------------------------------------------------
def _marks_of(train, test, anti_train, anti_test, definition="m"):
    return pd.concat(
        [
            pd.DataFrame({"id": d.ids, "split": s, "definition": definition, "anti_biased": a})
            for d, s, a in ((train, "train", anti_train), (test, "eval", anti_test))
        ]
    )


@pytest.fixture(scope="module")
def nli_split():
    from spurious.data.synthetic import make_nli_artifacts

    return make_nli_artifacts(n=600, artifact_rate=0.8, random_state=3).dataset.split(
        0.3, random_state=0
    )


def test_default_evaluator_is_not_the_fast_paths_marking_family():
    from types import SimpleNamespace

    from spurious.actions.amplify import DEFAULT_EVALUATOR, EVALUATORS, marking_family

    for res in (
        SimpleNamespace(analysis="cartography", params={"features": "minilm"}),
        SimpleNamespace(analysis="minority", params={"features": "minilm"}),
    ):
        assert marking_family(res) == "minilm-mlp"
        assert EVALUATORS[DEFAULT_EVALUATOR].family != marking_family(res)
    assert marking_family(SimpleNamespace(analysis="cartography", params={"path": "finetune"})) == (
        "finetune"
    )


def test_a_label_removed_from_biased_training_scores_zero_and_is_flagged(nli_split):
    """Planted: every training example of label 0 is anti-biased, so the biased split has
    no label 0 and its model never predicts it; the anti-biased test is label 0 only."""
    from spurious.actions.amplify import evaluate_amplified

    train, test = nli_split
    amp = amplify(train, test, _marks_of(train, test, train.labels == 0, test.labels == 0))
    out = evaluate_amplified(amp, evaluator="bow-logreg", seeds=(1, 2), n_bootstrap=200)
    e = out["definitions"]["m"]
    assert e["biased"]["mean"] == 0.0 and e["biased"]["ci_high"] == 0.0
    assert e["n_test_anti_biased"] == int((test.labels == 0).sum())
    assert e["full"]["mean"] > 0.5  # the full model has label 0 examples to learn from
    assert e["drop_biased_minus_random"]["ci_high"] < -0.3
    assert e["drop_biased_minus_random"]["mean"] == pytest.approx(
        e["biased"]["mean"] - e["random"]["mean"]
    )
    assert "biased" in e["below_chance"] and "full" not in e["below_chance"]
    assert out["chance"] == pytest.approx(1 / 3)
    # Every result says what its intervals vary, and that the marking is not among it.
    assert "marking is held fixed" in out["interval_covers"]
    for key in ("full", "random", "biased"):
        s = e[key]
        assert s["ci_low"] - 1e-12 <= np.mean(s["per_seed"]) <= s["ci_high"] + 1e-12
    curve = e["reinsertion_curve"]
    assert curve["fraction"][0] == 0.0 and curve["fraction"][-1] == 1.0
    assert curve["accuracy"][0] == e["biased"]["mean"]


def test_random_marks_give_no_drop(nli_split):
    """Control: anti-biased examples drawn at random make train.biased another random
    subset, so biased and random training score alike on them."""
    from spurious.actions.amplify import evaluate_amplified

    train, test = nli_split
    rng = np.random.default_rng(0)
    amp = amplify(
        train,
        test,
        _marks_of(train, test, rng.random(len(train)) < 0.3, rng.random(len(test)) < 0.3),
    )
    e = evaluate_amplified(amp, evaluator="bow-logreg", seeds=(1, 2, 3), reinsertion=False)[
        "definitions"
    ]["m"]
    assert abs(e["drop_biased_minus_random"]["mean"]) < 0.08
    assert e["below_chance"] == []


def test_evaluating_with_the_marking_family_is_noted_and_below_chance_flagged(nli_split):
    """Marks = the examples a bow MLP gets wrong: the same family scores below chance on
    them even when trained on everything, and the result says why."""
    from types import SimpleNamespace

    from spurious.actions.amplify import evaluate_amplified
    from spurious.context import RunContext
    from spurious.models.dynamics import probe_dynamics

    train, test = nli_split
    ctx = RunContext(train, test, progress=False)
    X_tr, X_ev = (
        ctx.features("bow", "full", split="train"),
        ctx.features("bow", "full", split="eval"),
    )
    frame = probe_dynamics(X_tr, train.labels, X_ev, test.labels, epochs=10, random_state=1)
    last = frame[frame["epoch"] == frame["epoch"].max()]
    wrong = {s: ~last[last.split == s].sort_values("id", key=lambda c: c.astype(int))[
        "correct"
    ].to_numpy() for s in ("train", "eval")}  # fmt: skip
    amp = amplify(train, test, _marks_of(train, test, wrong["train"], wrong["eval"]))
    amp.results = {"m": SimpleNamespace(analysis="minority", params={"features": "bow"})}
    out = evaluate_amplified(amp, evaluator="bow-mlp", seeds=(1,), context=ctx, reinsertion=False)
    e = out["definitions"]["m"]
    assert e["marking_family"] == "bow-mlp" and e["same_family"]
    assert e["full"]["mean"] < out["chance"]
    assert "full" in e["below_chance"]
    notes = " ".join(e["notes"])
    assert "family that marked" in notes and "below chance" in notes


def test_evaluate_errors_name_the_argument(nli_split):
    from spurious.actions.amplify import evaluate_amplified

    train, test = nli_split
    amp = amplify(train, test, _marks_of(train, test, train.labels == 0, test.labels == 0))
    with pytest.raises(ParameterError, match="'evaluator' argument must be one of"):
        evaluate_amplified(amp, evaluator="roberta")
    with pytest.raises(ParameterError, match="'seeds' argument"):
        evaluate_amplified(amp, seeds=())
