"""The fairness analysis on extractive QA (answer-sentence selection) and inferred families."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import brentq
from scipy.special import expit

from spurious.analysis import get_analysis
from spurious.context import RunContext
from spurious.data import Dataset
from spurious.data.predictions import align_predictions
from spurious.evaluate.fairness.families import adversary_family, model_family, resolve_families
from spurious.evaluate.fairness.qa import (
    answer_agreement,
    answer_sentences,
    article_halves,
    candidate_features,
    run_qa_adversaries,
)
from spurious.evaluate.fairness.ranking import family_rank_change
from spurious.exceptions import ParameterError
from spurious.models.conditional_logit import ConditionalLogit
from spurious.stats.metrics import qa_scores

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
SQUAD = SHARED / "squad" / "dev-v1.1.json"
SQUAD_PREDS = SHARED / "predictions" / "squad"


# -- the conditional logit --------------------------------------------------------------
def test_conditional_logit_known_optimum():
    # Two questions, two candidates, one feature; the right candidate has x=1, the other 0.
    # NLL(w) = 2 log(1 + e^-w) + l2/2 w^2, so the optimum solves l2 w = 2 sigmoid(-w).
    X = np.array([[1, 1.0, 1, 0.0], [1, 0.0, 1, 1.0]])
    y = np.array([0, 1])
    model = ConditionalLogit(2, l2=1.0, tol=1e-20)
    w = model._fit(X.reshape(2, 2, 2), y)
    expected = brentq(lambda v: v - 2 * expit(-v), 0, 5, xtol=1e-14)
    assert w[0] == pytest.approx(expected, abs=1e-9)
    assert model.fit_predict(X, y, np.array([[0, 1]]), 2).tolist() == [[0, 1]]


def test_conditional_logit_never_picks_padding():
    # The training data make the feature's weight positive; row 2's only real candidate
    # scores negative, below the padding block's 0, and must still be chosen.
    X = np.array([[1, 1.0, 1, -1.0], [1, -1.0, 1, 1.0], [1, -5.0, 0, 0.0]])
    pred = ConditionalLogit(2).fit_predict(X, np.array([0, 1, 0]), np.array([[0, 1]]), 2)
    assert pred.tolist() == [[0, 1, 0]]


def test_conditional_logit_errors_name_the_argument():
    X = np.ones((2, 5))
    with pytest.raises(ParameterError, match=r"'X' parameter .* n_features=2"):
        ConditionalLogit(2).fit_predict(X, np.zeros(2, int), np.array([[0]]), 2)
    X = np.array([[1, 1.0, 0, 0.0], [1, 0.0, 1, 1.0]])
    with pytest.raises(ParameterError, match=r"'y' parameter .* padding"):
        ConditionalLogit(2).fit_predict(X, np.array([1, 1]), np.array([[0, 1]]), 2)


# -- sentence labels and agreement ---------------------------------------------------------
def _qa(rows: list[dict]) -> Dataset:
    return Dataset.from_frame(pd.DataFrame(rows), "qa")


def test_answer_sentence_labels_by_hand():
    context = "Dr. Who met Ann in 1999. Then Bob came. The U.S. Army left in May."
    ds = _qa(
        [
            {"question": "When?", "context": context, "answers": ["1999"], "answer_starts": [19]},
            # two annotators; the first answer (and its start) decides
            {
                "question": "Who came?",
                "context": context,
                "answers": ["Bob", "Ann"],
                "answer_starts": [30, 12],
            },
            {"question": "Left?", "context": context, "answers": ["May"], "answer_starts": [63]},
        ]
    )
    c = answer_sentences(ds)
    assert c.text[:3] == [
        "Dr. Who met Ann in 1999.",
        "Then Bob came.",
        "The U.S. Army left in May.",
    ]
    assert c.label.tolist() == [0, 1, 2]
    assert c.n_sentences.tolist() == [3, 3, 3] and c.max_candidates == 3


def test_answer_agreement_and_halves():
    agree = answer_agreement([["The Broncos", "Broncos", "Denver"], ["a"], ["x", "y"]])
    np.testing.assert_allclose(agree, [0.5, np.nan, 0.0])
    halves = article_halves(["a", "b", "c", "d", "a"], random_state=3)
    assert halves[0] == halves[4] and np.bincount(halves[:4]).tolist() == [2, 2]


# -- AFLite on a planted cue ----------------------------------------------------------------
def _planted(cue: str, n: int = 160, seed: int = 0) -> tuple[Dataset, np.ndarray]:
    """Contexts of 4 sentences of 4 words each (equal lengths: length is no cue); in the
    cued half the answer sentence is the first one (cue="first") or shares a planted word
    with the question (cue="word")."""
    rng = np.random.default_rng(seed)
    rows, cued = [], np.arange(n) % 2 == 0
    for i in range(n):
        sents = [[f"Xa{rng.integers(10**6)}", *(f"w{v}" for v in rng.integers(50, size=3))]
                 for _ in range(4)]  # fmt: skip
        if cue == "first":
            pos = 0 if cued[i] else int(rng.integers(1, 4))
        else:
            pos = int(rng.integers(0, 4))
        sents[pos][1] = f"ans{i}"
        if cue == "word" and cued[i]:
            sents[pos][2] = "zorblax"
        context = " ".join(" ".join(s) + "." for s in sents)
        question = f"What is q{i}" + (" zorblax?" if cue == "word" and cued[i] else "?")
        rows.append({"id": f"q{i}", "question": question, "context": context,
                     "answers": [f"ans{i}"], "answer_starts": [context.index(f"ans{i}")],
                     "title": f"t{i % 16}"})  # fmt: skip
    return _qa(rows), cued


# Uncued questions: with cue="first" the position model always guesses sentence 0, never
# their answer; with cue="word" nothing points at their answer, so a classifier's guess is
# right for about 1 in 4 (4 sentences) and some reach p >= tau by luck.
@pytest.mark.parametrize(
    ("cue", "adversary", "bound"), [("first", "qa_position", 0.15), ("word", "qa_lexical", 0.45)]
)
def test_planted_cue_is_filtered(cue, adversary, bound):
    ds, cued = _planted(cue)
    runs, info = run_qa_adversaries(
        ds, [adversary], [0],
        aflite_params={"n_partitions": 16, "train_size": 0.3, "slice_size": 0.1, "tau": 0.75},
    )  # fmt: skip
    filtered = runs[0].stages < 2
    assert info["n_not_staged"] == 0 and len(info["folds"]) == 2
    assert filtered[cued].mean() == 1.0  # every cued question is predictable
    assert filtered[~cued].mean() <= bound  # the rest mostly survive


def test_qa_adversaries_reject_classification_specs_and_params():
    ds, _ = _planted("first", n=40)
    with pytest.raises(ParameterError, match="'adversaries' parameter: 'bow'"):
        run_qa_adversaries(ds, ["bow"], [0])
    with pytest.raises(ParameterError, match="'aflite_params' parameter may not set 'model'"):
        run_qa_adversaries(ds, ["qa_position"], [0], aflite_params={"model": "logistic"})


# -- the analysis on a real SQuAD subset ------------------------------------------------------
@pytest.mark.skipif(not SQUAD.is_file(), reason="SQuAD dev not available")
def test_fairness_on_real_squad_subset():
    from spurious import load_dataset

    full = load_dataset(SQUAD, "qa")
    titles = full.frame["title"].unique()[:2]
    ds = full.subset(np.flatnonzero(full.frame["title"].isin(titles)))
    keep = set(ds.ids)
    preds = []
    for m in ("electra-base", "bert-base-uncased", "bert-tiny"):
        raw = json.loads((SQUAD_PREDS / f"{m}.json").read_text())
        preds.append(align_predictions({k: v for k, v in raw.items() if k in keep}, ds, name=m))
    ctx = RunContext(ds, predictions=preds, progress=False)
    params = {"n_partitions": 8, "train_size": 0.3, "slice_size": 0.1, "max_rounds": 2}
    res = get_analysis("fairness")(
        adversaries=["qa_position", "qa_lexical"], seeds=[0], aflite_params=params,
        n_bootstrap=20,
    ).run(context=ctx)  # fmt: skip
    m, d = res.metrics, res.details
    answers = [list(a) for a in ds.frame["answers"]]
    for p in preds:  # "none" = SQuAD F1 / EM (0-1) on the full subset
        assert m[f"f1/{p.name}/none"] == pytest.approx(np.mean(qa_scores(p.values, answers)))
        assert m[f"em/{p.name}/none"] == pytest.approx(np.mean(qa_scores(p.values, answers, "em")))
    assert m["f1/electra-base/none"] > m["f1/bert-tiny/none"]
    assert np.isnan(m["chance"]) and d["score"] == "f1" and d["score_name"] == "SQuAD F1 (0-1)"
    assert {"f1", "em"} <= set(d["matrix"][0]) | set(d["matrix_em"][0])
    for a in ("qa_position", "qa_lexical"):
        total = sum(m[f"{s}_fraction/{a}"] for s in ("first_round", "later", "selected"))
        assert total == pytest.approx(1.0)
        assert 0 <= m[f"agreement_selected/{a}"] <= 1
    assert (
        d["families"]["electra-base"] == "electra-base" and "electra-base" in d["families_inferred"]
    )
    assert "cross-fitted" in d["qa"]["protocol"] and len(res.scores) == len(ds)


def test_fairness_requires_no_eval_split_for_qa():
    ds, _ = _planted("first", n=40)
    cls = get_analysis("fairness")
    assert cls().unmet(RunContext(ds, progress=False)) == [
        "needs model predictions (--predictions)"
    ]
    p = align_predictions(dict(zip(ds.ids, ["x"] * len(ds), strict=True)), ds, name="m")
    assert cls().unmet(RunContext(ds, predictions=[p], progress=False)) == []
    with pytest.raises(ParameterError, match="must use only"):
        cls(adversaries=["qa_position", "bow"]).check(RunContext(ds, predictions=[p]))


# -- families inferred from the run ---------------------------------------------------------
def test_families_inferred_from_specs_names_and_finetune_folders(tmp_path):
    ft = tmp_path / "ft"
    (ft / "model").mkdir(parents=True)
    (ft / "metrics.json").write_text(json.dumps({"config": {"model": "minilm"}}))
    hf = tmp_path / "electra-small-discriminator"
    hf.mkdir()
    (hf / "config.json").write_text(json.dumps({"model_type": "electra"}))
    meta_only = tmp_path / "ft2"
    (meta_only / "model").mkdir(parents=True)
    (meta_only / "model" / "spurious_finetune.json").write_text(
        json.dumps({"base_model": "sentence-transformers/all-MiniLM-L6-v2"})
    )
    assert adversary_family("bow") == adversary_family("tfidf") == "lexical"
    assert adversary_family("minilm") == "all-minilm-l6-v2"
    assert adversary_family(f"finetuned:{ft}") == "all-minilm-l6-v2"
    assert adversary_family(f"finetuned:{meta_only}") == "all-minilm-l6-v2"
    # the folder name names the checkpoint; model_type alone ("electra") would not
    assert adversary_family(str(hf)) == "electra-small"
    assert model_family("bert-tiny") == "bert-tiny" and model_family("logreg-bow") == "lexical"
    # a prediction file written next to a training-engine output names its base model
    assert model_family("preds", ft / "preds.jsonl") == "all-minilm-l6-v2"
    assert model_family("lstm") is None
    fam, inferred = resolve_families(
        {"ft": "mine"}, {"bow": "bow", "ft": f"finetuned:{ft}"}, ["mlp-minilm", "lstm"]
    )
    assert fam == {"ft": "mine", "bow": "lexical", "mlp-minilm": "all-minilm-l6-v2"}
    assert inferred == ["bow", "mlp-minilm"]


@pytest.mark.parametrize(
    ("name", "family"),
    [
        # paper 004 Table 5's checkpoints: one family per pretrained checkpoint
        ("roberta-large", "roberta-large"),
        ("roberta-base", "roberta-base"),
        ("xlm-roberta-large", "xlm-roberta-large"),  # not "roberta"
        ("FacebookAI/xlm-roberta-base", "xlm-roberta-base"),
        ("nyu-mll/roberta-base-1B-1", "roberta-base-1b-1"),  # MiniBERTa, not roberta-base
        ("nyu-mll/roberta-med-small-1M-1", "roberta-med-small-1m-1"),
        ("MiniBERTa-B-1B", "roberta-base-1b"),
        ("facebook/bart-large", "bart-large"),  # BART gets a family
        ("bart-base-snli", "bart-base"),
        ("microsoft/deberta-v3-base", "deberta-v3-base"),
        ("microsoft/deberta-base", "deberta-base"),
        ("google/electra-large-discriminator", "electra-large"),
        ("albert-xxlarge-v2", "albert-xxlarge-v2"),
        ("bert-large-uncased", "bert-large-uncased"),
        ("distilbert-base-uncased", "distilbert-base-uncased"),  # not "bert-base"
        ("distilroberta-base", "distilroberta-base"),  # not "roberta-base"
        ("sentence-transformers/all-MiniLM-L6-v2", "all-minilm-l6-v2"),
        ("mlp256-minilm-s0", "all-minilm-l6-v2"),
        # an architecture without a size names no checkpoint; words only match whole
        ("roberta", None),
        ("my-bart", None),
        ("elbow-net", None),
        ("mdeberta-v3-base", None),
    ],
)
def test_families_are_exact_pretrained_checkpoints(name, family):
    from spurious.evaluate.fairness.families import family_of_name

    assert family_of_name(name) == family


def test_same_architecture_different_checkpoints_are_not_one_family():
    # Fig. 4 compares a model with an adversary built on the same pretrained model: an
    # XLM-R or MiniBERTa adversary must not make RoBERTa-large "fall in its own family".
    fam, _ = resolve_families(
        None,
        {"xlmr": "xlm-roberta-large", "minib": "nyu-mll/roberta-base-1B-1", "rl": "roberta-large"},
        ["roberta-large-s0", "bart-large-s0"],
    )
    assert fam["roberta-large-s0"] == fam["rl"]
    assert fam["xlmr"] != fam["rl"] and fam["minib"] != fam["rl"]
    assert fam["bart-large-s0"] == "bart-large"
    changes = family_rank_change(
        {"roberta-large-s0": 1.0, "bart-large-s0": 2.0},
        {a: {"roberta-large-s0": 2.0, "bart-large-s0": 1.0} for a in ("xlmr", "minib", "rl")},
        fam,
    )
    assert changes == {("roberta-large-s0", "rl"): 1.0}


def test_inferred_families_feed_the_rank_change():
    from tests.test_fairness import _context

    ctx = _context()
    names = np.array(ctx.eval.label_names, dtype=object)
    ctx.predictions = [
        align_predictions(
            dict(zip(p.ids, names[p.values], strict=True)), ctx.eval, name=f"logreg-bow-{k}"
        )
        for k, p in enumerate(ctx.predictions)
    ]
    cls = get_analysis("fairness")
    res = cls(**{**cls.fast_params, "adversaries": ["bow"], "seeds": [0]}).run(context=ctx)
    assert set(res.details["families_inferred"]) == {"bow", *(p.name for p in ctx.predictions)}
    assert "family_rank_change/logreg-bow-0/bow" in res.metrics
    assert "families inferred" in res.details["verdict"]


@pytest.mark.slow
def test_cli_fairness_on_qa_without_eval(tmp_path):
    from click.testing import CliRunner

    from spurious.cli import main

    ds, _ = _planted("first", n=80)
    data = tmp_path / "qa.jsonl"
    ds.frame[["id", "question", "context", "answers", "answer_starts", "title"]].to_json(
        data, orient="records", lines=True
    )
    gold = ds.frame.set_index("id")["answers"].map(lambda a: a[0])
    files = []
    for name, right in (("electra-good", 1.0), ("bert-half", 0.5)):
        preds = {
            i: (g if k < right * len(gold) else "wrong") for k, (i, g) in enumerate(gold.items())
        }
        f = tmp_path / f"{name}.json"
        f.write_text(json.dumps(preds))
        files.append(str(f))
    out = tmp_path / "run"
    res = CliRunner().invoke(
        main,
        ["fairness", str(data), "--task", "qa", "--predictions", *files,
         "--adversary", "qa_position", "--seeds", "0", "--set", "fairness.n_bootstrap=20",
         "--set", "fairness.aflite_params={n_partitions: 8, train_size: 0.3, max_rounds: 2}",
         "--out", str(out)],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    metrics = json.loads((out / "fairness" / "metrics.json").read_text())
    assert metrics["f1/electra-good/none"] == pytest.approx(1.0)
    assert (out / "report.html").exists()


def test_qa_heuristic_marks_the_sentence_with_the_asked_entity_type():
    """spaCy's NER finds the PERSON that a Who-question asks for in the second sentence
    only; a When-question's DATE lies in the first sentence only."""
    pytest.importorskip("spacy")
    context = "The bridge opened in March 1932. Its engineer was John Bradfield."
    ds = Dataset.from_frame(
        pd.DataFrame(
            {
                "question": ["Who was the engineer of the bridge?", "When did the bridge open?"],
                "context": [context, context],
                "answers": [["John Bradfield"], ["March 1932"]],
            }
        ),
        "qa",
    )
    cands = answer_sentences(ds)
    F, names = candidate_features(cands, list(ds.texts("question")), "qa_heuristic")
    if "cue_person" not in names:
        pytest.skip("no spaCy English model installed (regex cues in use)")
    col = dict(zip(names, F.T, strict=True))
    assert cands.label.tolist() == [1, 0]
    assert col["cue_person"].tolist() == [0.0, 1.0, 0.0, 1.0]
    assert col["cue_date_time"].tolist() == [1.0, 0.0, 1.0, 0.0]
    # Candidates 0-1 belong to the Who-question, 2-3 to the When-question.
    assert col["expected_type_cue"].tolist() == [0.0, 1.0, 1.0, 0.0]
    assert col["who_x_person"].tolist() == [0.0, 1.0, 0.0, 0.0]


def test_classification_adversaries_on_qa_are_replaced_with_one_warning(caplog):
    ds, _ = _planted("first", n=40)
    p = align_predictions(dict(zip(ds.ids, ["x"] * len(ds), strict=True)), ds, name="m")
    ctx = RunContext(ds, predictions=[p], progress=False)
    fairness = get_analysis("fairness")(
        adversaries=["bow", "tfidf"],  # the audit's quick profile: not QA representations
        seeds=[0],
        aflite_params={"n_partitions": 4, "train_size": 8, "max_rounds": 1},
        n_bootstrap=10,
    )
    with caplog.at_level("WARNING", logger="spurious"):
        fairness.check(ctx)
        fairness.run(context=ctx)
    said = [r for r in caplog.records if "are not QA adversaries" in r.getMessage()]
    assert len(said) == 1
