"""Debiasing objectives (paper 001 Sec. 4.4, App. B.2; 002 Sec. 6): hand computations,
bias sources, and less reliance on a planted shortcut than plain cross-entropy."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")

from spurious.data import Dataset  # noqa: E402
from spurious.exceptions import DataFormatError, ParameterError  # noqa: E402
from spurious.models.debias.bias import (  # noqa: E402
    heuristic_bias,
    load_bias_file,
    out_of_fold_proba,
    rescale_bias,
    shallow_bias,
)
from spurious.models.debias.fast import train_fast  # noqa: E402
from spurious.models.debias.losses import LOSSES, LearnedMixin, make_loss  # noqa: E402

# A tiny batch: 2 examples, 3 classes.
LOGITS = np.array([[1.0, 0.0, -1.0], [0.5, 0.5, 0.0]])
LABELS = np.array([0, 2])
BIAS = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
TEACHER = np.array([[0.6, 0.3, 0.1], [0.2, 0.2, 0.6]])


def _log_softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def _call(name: str, **kwargs) -> float:
    loss = make_loss(name, hidden_size=2) if "mixin" in name else make_loss(name)
    t = {k: torch.tensor(v, dtype=torch.float32) for k, v in kwargs.items()}
    return float(loss(torch.tensor(LOGITS, dtype=torch.float32), torch.tensor(LABELS), **t))


def test_every_loss_is_registered():
    assert set(LOSSES.names()) == {
        "plain", "poe", "learned_mixin", "learned_mixin_h", "conf_reg", "reweight",
    }  # fmt: skip


def test_plain_and_product_of_experts_by_hand():
    rows = np.arange(2)
    plain = -_log_softmax(LOGITS)[rows, LABELS].mean()
    assert _call("plain") == pytest.approx(plain, rel=1e-6)
    combined = _log_softmax(LOGITS) + np.log(BIAS)
    poe = -_log_softmax(combined)[rows, LABELS].mean()
    assert _call("poe", bias_probs=BIAS) == pytest.approx(poe, rel=1e-6)


def test_learned_mixin_and_entropy_penalty_by_hand():
    rows = np.arange(2)
    hidden = np.array([[1.0, -1.0], [0.5, 2.0]])
    w, c = np.array([0.3, -0.2]), 0.1
    g = np.log1p(np.exp(hidden @ w + c))[:, None]  # softplus
    scaled = g * np.log(BIAS)
    expected = -_log_softmax(_log_softmax(LOGITS) + scaled)[rows, LABELS].mean()
    p = np.exp(_log_softmax(scaled))
    entropy = -(p * np.log(p)).sum(axis=1).mean()
    for h_weight in (0.0, 0.4):
        lm = LearnedMixin(hidden_size=2, entropy_penalty=h_weight)
        with torch.no_grad():
            lm.gate.weight.copy_(torch.tensor(w[None, :], dtype=torch.float32))
            lm.gate.bias.fill_(c)
        got = lm(
            torch.tensor(LOGITS, dtype=torch.float32),
            torch.tensor(LABELS),
            bias_probs=torch.tensor(BIAS, dtype=torch.float32),
            hidden=torch.tensor(hidden, dtype=torch.float32),
        )
        assert float(got.detach()) == pytest.approx(expected + h_weight * entropy, rel=1e-5)
    assert make_loss("learned_mixin_h", hidden_size=2).entropy_penalty == 0.4
    # With the number of classes, paper 001's QA value is scaled: 0.4 * ln 3 / ln 384.
    three = make_loss("learned_mixin_h", hidden_size=2, n_classes=3).entropy_penalty
    assert three == pytest.approx(0.4 * math.log(3) / math.log(384))


def test_confidence_regularization_by_hand_exponentiates_once():
    beta = BIAS[np.arange(2), LABELS]  # bias probability of the gold label: 0.7, 0.8
    scaled = TEACHER ** (1 - beta)[:, None]
    scaled /= scaled.sum(axis=1, keepdims=True)
    expected = -(scaled * _log_softmax(LOGITS)).sum(axis=1).mean()
    assert _call("conf_reg", bias_probs=BIAS, teacher_probs=TEACHER) == pytest.approx(
        expected, rel=1e-5
    )
    # Exponentiating the teacher's probabilities again (exp(t) ** (1 - beta)) gives a
    # different, flatter target: the test would catch that slip.
    wrong = np.exp(TEACHER) ** (1 - beta)[:, None]
    wrong /= wrong.sum(axis=1, keepdims=True)
    assert not np.allclose(wrong, scaled, atol=1e-3)


def test_reweighting_by_hand():
    # sum(w * CE) / sum(w), as Clark et al.'s and Utama et al.'s ReweightBaseline.
    # Weights 1 - 0.7 = 0.3 and 1 - 0.8 = 0.2; CE of row 0 = -log softmax([1, 0, -1])[0]
    # = 0.40761, of row 1 = -log softmax([.5, .5, 0])[2] = 1.45802 (by hand, 5 digits).
    ce = np.array([0.40761, 1.45802])
    np.testing.assert_allclose(-_log_softmax(LOGITS)[np.arange(2), LABELS], ce, atol=1e-5)
    expected = (0.3 * 0.40761 + 0.2 * 1.45802) / 0.5  # = 0.82777, not the batch mean 0.20694
    assert _call("reweight", bias_probs=BIAS) == pytest.approx(expected, abs=2e-5)
    # Equal weights: plain cross-entropy, whatever the weight (the loss keeps CE's scale).
    for b_gold in (0.0, 0.5, 0.9):
        flat = np.full((2, 3), (1 - b_gold) / 2)
        flat[np.arange(2), LABELS] = b_gold
        assert _call("reweight", bias_probs=flat) == pytest.approx(_call("plain"), rel=1e-6)
    # A fully biased example (weight 0) drops out: the loss is the other one's CE.
    one = BIAS.copy()
    one[0] = [1.0, 0.0, 0.0]
    assert _call("reweight", bias_probs=one) == pytest.approx(ce[1], abs=2e-5)


def test_losses_say_what_they_miss():
    with pytest.raises(ParameterError, match="bias_probs"):
        _call("poe")
    with pytest.raises(ParameterError, match="teacher_probs"):
        _call("conf_reg", bias_probs=BIAS)
    with pytest.raises(ParameterError, match="hidden_size"):
        make_loss("learned_mixin")
    with pytest.raises(ParameterError, match="Unknown loss 'focal'"):
        make_loss("focal")


# ---------------------------------------------------------------------------------------
# Bias sources
# ---------------------------------------------------------------------------------------
def test_rescaling_keeps_a_distribution_inside_the_interval():
    p = np.array([[1.0, 0.0, 0.0], [0.2, 0.3, 0.5]])
    r = rescale_bias(p, 0.8)
    np.testing.assert_allclose(r.sum(axis=1), 1.0)
    assert r.max() <= 0.8 + 0.2 / 3 + 1e-12 and r.min() >= 0.2 / 3 - 1e-12
    np.testing.assert_array_equal(rescale_bias(p, None), p)
    with pytest.raises(ParameterError, match="'x'"):
        rescale_bias(p, 1.5)


def test_bias_file_is_aligned_by_id_and_checked(tmp_path):
    ds = Dataset.from_frame(
        pd.DataFrame({"id": ["a", "b"], "text": ["x", "y"], "label": ["neg", "pos"]}), "text"
    )
    good = tmp_path / "bias.csv"
    good.write_text("id,neg,pos\nb,0.2,0.6\na,1,0\n")
    np.testing.assert_allclose(load_bias_file(good, ds), [[1, 0], [0.25, 0.75]])
    missing = tmp_path / "missing.jsonl"
    missing.write_text('{"id": "a", "probs": [0.5, 0.5]}\n')
    with pytest.raises(DataFormatError, match="lacks 1"):
        load_bias_file(missing, ds)
    short = tmp_path / "short.jsonl"
    short.write_text('{"id": "a", "probs": [1.0]}\n{"id": "b", "probs": [0.5, 0.5]}\n')
    with pytest.raises(DataFormatError, match="row 1"):
        load_bias_file(short, ds)


def _planted(n: int, cue_rate: float, rng: np.random.Generator, anti: bool = False):
    """3 classes; a one-hot cue (features 0-2) that agrees with the label at ``cue_rate``
    (never, when ``anti``), a noisy true signal (3-5) and noise (6-9)."""
    y = rng.integers(0, 3, n)
    signal = np.eye(3)[y] * 1.2 + rng.normal(size=(n, 3))
    if anti:
        cue = (y + rng.integers(1, 3, n)) % 3
    else:
        cue = np.where(rng.random(n) < cue_rate, y, rng.integers(0, 3, n))
    X = np.c_[np.eye(3)[cue] * 2, signal, rng.normal(size=(n, 4))].astype(np.float32)
    return X, y, cue


def test_shallow_and_heuristic_bias_models_pick_up_the_shortcut():
    rng = np.random.default_rng(0)
    X, y, cue = _planted(1500, 0.8, rng)
    shallow = shallow_bias(X, y, n_classes=3, n_examples=300, epochs=3)
    assert (shallow.argmax(1) == cue).mean() > 0.6
    # Heuristic: the cue's agreement flag as h(x); the segment where a reference does
    # better is the biased one.
    attribute = (cue == y).astype(float)
    probs, info = heuristic_bias(
        X,
        y,
        attribute,
        n_classes=3,
        reference_correct=(cue == y).astype(float),
        search_options={"sample_size": 100},
    )
    assert info["side"] == "high" and info["n_segment"] == int(attribute.sum())
    assert (probs.argmax(1) == cue).mean() > 0.9
    oof = out_of_fold_proba(X[:, :3], y, n_classes=3, epochs=3)
    assert oof.shape == (1500, 3) and (oof.argmax(1) == cue).mean() > 0.9


@pytest.fixture(scope="module")
def planted_runs():
    """Follow-the-cue rate on anti-shortcut test data (cue never the gold label)."""
    rng = np.random.default_rng(0)
    X, y, _ = _planted(3000, 0.6, rng)
    Xa, _, cue_a = _planted(2000, 0.0, rng, anti=True)
    bias = out_of_fold_proba(X[:, :3], y, n_classes=3, epochs=5)  # cue-only bias model
    plain = train_fast(X, y, epochs=10)
    teacher = plain.predict_proba(X)
    rates = {}
    for name in LOSSES.names():
        kw = {} if name == "plain" else {"bias_probs": bias}
        if name == "conf_reg":
            kw["teacher_probs"] = teacher
        model = train_fast(X, y, loss=name, epochs=10, **kw)
        rates[name] = float((model.predict(Xa) == cue_a).mean())
    return rates


@pytest.mark.parametrize("name", ["poe", "learned_mixin", "learned_mixin_h", "reweight"])
def test_debiasing_follows_the_planted_shortcut_far_less(planted_runs, name):
    assert planted_runs["plain"] > 0.45
    assert planted_runs[name] < planted_runs["plain"] - 0.2


def test_confidence_regularization_follows_it_less(planted_runs):
    # A smaller effect, as Utama et al. (2020a) report: it keeps in-distribution accuracy.
    assert planted_runs["conf_reg"] < planted_runs["plain"] - 0.02


def test_fast_training_is_seeded_and_checks_its_inputs():
    rng = np.random.default_rng(1)
    X, y, _ = _planted(400, 0.6, rng)
    a = train_fast(X, y, epochs=2, random_state=3).predict_proba(X)
    b = train_fast(X, y, epochs=2, random_state=3).predict_proba(X)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ParameterError, match="bias_probs"):
        train_fast(X, y, loss="poe")
    with pytest.raises(ParameterError, match="shape"):
        train_fast(X, y, loss="poe", bias_probs=np.ones((3, 3)) / 3)
    # RESAM-style row repeats are trained on as given.
    rows = np.r_[np.arange(400), np.arange(50)]
    assert train_fast(X, y, epochs=1, sample_weight_rows=rows).epoch_losses
    assert math.isfinite(train_fast(X, y, epochs=1).epoch_losses[0])


def test_bias_models_score_other_splits_with_the_model_they_return():
    rng = np.random.default_rng(2)
    X, y, cue = _planted(600, 0.8, rng)
    probs, model = shallow_bias(X, y, n_classes=3, n_examples=200, return_model=True)
    np.testing.assert_array_equal(probs, shallow_bias(X, y, n_classes=3, n_examples=200))
    np.testing.assert_array_equal(model.predict_proba(X), probs)
    attribute = (cue == y).astype(float)
    p, info, m = heuristic_bias(
        X, y, attribute, n_classes=3, threshold=0.5, side="high", return_model=True
    )
    np.testing.assert_array_equal(m.predict_proba(X), p)
    assert info["n_segment"] == int(attribute.sum())


@pytest.mark.parametrize("bias_model", ["shallow", "heuristic:hypothesis_length"])
def test_debiasing_analysis_with_other_bias_models(bias_model):
    from spurious.data.synthetic import make_nli_artifacts
    from spurious.evaluate.debiasing import Debiasing

    train, test = make_nli_artifacts(n=600, artifact_rate=0.9, random_state=0).dataset.split(
        0.3, random_state=0
    )
    res = Debiasing(
        **{**Debiasing.fast_params, "bias_model": bias_model, "methods": ["plain", "poe"]}
    ).run(train, test, progress=False)
    assert res.details["bias_model"]["kind"] == bias_model.split(":")[0]
    assert 0.0 <= res.metrics["bias_model_accuracy"] <= 1.0
    assert res.metrics["n_hard"] == float(res.scores["hard"].sum())
