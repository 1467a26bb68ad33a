"""Planted-artifact generators: determinism, exact ground truth, and quality floors."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import recall_score
from sklearn.model_selection import train_test_split
from sklearn.svm import SVC

from spurious.data import Dataset
from spurious.data.synthetic import (
    CIRCLE_SEPARATIONS,
    SyntheticCircles,
    SyntheticNLI,
    make_concentric_circles,
    make_nli_artifacts,
)
from spurious.exceptions import ParameterError

WORD = re.compile(r"[a-z]+")
LABELS = ("entailment", "neutral", "contradiction")
INDOOR_NOUNS = {"kitchen", "library", "office", "classroom", "hall"}


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


# -- NLI: structure and ground truth ------------------------------------------------


def test_nli_output_is_a_validated_balanced_dataset():
    out = make_nli_artifacts(n=301, random_state=0)
    assert isinstance(out, SyntheticNLI)
    ds = out.dataset
    assert isinstance(ds, Dataset)
    assert ds.task.name == "nli"
    assert ds.label_names == LABELS
    assert len(ds) == 301
    counts = np.bincount(ds.labels, minlength=3)
    assert counts.max() - counts.min() <= 1
    assert ds.ids[0] == "nli-000" and len(set(ds.ids)) == 301
    assert out.has_artifact.dtype == bool and out.has_artifact.shape == (301,)
    assert out.params["n"] == 301 and out.params["cue"] == "nobody"


def test_nli_same_seed_same_output_different_seed_different():
    a = make_nli_artifacts(n=200, leak_rate=0.1, label_noise=0.1, random_state=3)
    b = make_nli_artifacts(n=200, leak_rate=0.1, label_noise=0.1, random_state=3)
    c = make_nli_artifacts(n=200, leak_rate=0.1, label_noise=0.1, random_state=4)
    assert a.dataset.fingerprint == b.dataset.fingerprint
    assert a.dataset.frame.equals(b.dataset.frame)
    np.testing.assert_array_equal(a.has_artifact, b.has_artifact)
    np.testing.assert_array_equal(a.is_mislabeled, b.is_mislabeled)
    assert a.dataset.fingerprint != c.dataset.fingerprint
    # Ids depend only on the row number, so they match across seeds.
    np.testing.assert_array_equal(a.dataset.ids, c.dataset.ids)


def test_nli_uses_own_generator_not_global_state():
    # The legacy global state is what must stay untouched, so it is used on purpose.
    np.random.seed(0)  # noqa: NPY002
    before = np.random.random()  # noqa: NPY002
    np.random.seed(0)  # noqa: NPY002
    make_nli_artifacts(n=60, random_state=1)
    make_concentric_circles(n=60, random_state=1)
    assert np.random.random() == before  # noqa: NPY002
    gen = make_nli_artifacts(n=60, random_state=np.random.default_rng(1))
    assert gen.dataset.fingerprint == make_nli_artifacts(n=60, random_state=1).dataset.fingerprint


@pytest.mark.parametrize(
    ("label", "rate", "leak", "cue"),
    [
        ("contradiction", 0.6, 0.0, "nobody"),
        ("entailment", 1.0, 0.25, "never"),
        ("neutral", 0.3, 0.05, "not"),
        ("contradiction", 0.5, 0.5, "honestly"),
    ],
)
def test_nli_cue_present_exactly_where_has_artifact(label, rate, leak, cue):
    out = make_nli_artifacts(
        n=600, artifact_label=label, artifact_rate=rate, leak_rate=leak, cue=cue, random_state=2
    )
    frame = out.dataset.frame
    has_cue = np.array([cue in words(h) for h in frame["hypothesis"]])
    np.testing.assert_array_equal(has_cue, out.has_artifact)
    assert not any(cue in words(p) for p in frame["premise"])
    # Exact planted counts per label (200 rows each).
    per_label = {lab: int(out.has_artifact[frame["label"] == lab].sum()) for lab in LABELS}
    for lab in LABELS:
        assert per_label[lab] == round((rate if lab == label else leak) * 200)


def test_nli_without_leak_only_the_artifact_label_carries_the_cue():
    out = make_nli_artifacts(n=300, artifact_label="neutral", artifact_rate=0.7, random_state=5)
    labels = out.dataset.frame["label"].to_numpy()
    assert set(labels[out.has_artifact]) == {"neutral"}
    assert out.has_artifact.sum() == 70


def test_nli_label_noise_only_changes_labels_of_marked_rows():
    clean = make_nli_artifacts(n=300, random_state=9)
    noisy = make_nli_artifacts(n=300, label_noise=0.1, random_state=9)
    # Noise is drawn last, so the texts are the same pairs.
    for col in ("premise", "hypothesis"):
        assert clean.dataset.frame[col].equals(noisy.dataset.frame[col])
    changed = clean.dataset.labels != noisy.dataset.labels
    np.testing.assert_array_equal(changed, noisy.is_mislabeled)
    assert noisy.is_mislabeled.sum() == 30
    assert not clean.is_mislabeled.any()


def test_nli_pairs_follow_the_label_semantics():
    # Entailment: every hypothesis word is in the premise, apart from generalisations.
    # Neutral: exactly the hypothesis' one detail is new. Contradiction: something in
    # the subject, action or place is new.
    out = make_nli_artifacts(n=600, artifact_rate=0.0, random_state=1)
    general = {"person", "outdoors", "indoors"}
    for p, h, lab in out.dataset.frame[["premise", "hypothesis", "label"]].itertuples(index=False):
        new = set(words(h)) - set(words(p))
        if lab == "entailment":
            assert new <= general, (p, h)
        elif lab == "neutral":
            assert new - general, (p, h)
        else:
            # A generalised place ("outdoors") contradicts a premise place of the other kind.
            place_conflict = ("outdoors" in new and set(words(p)) & INDOOR_NOUNS) or (
                "indoors" in new and not set(words(p)) & INDOOR_NOUNS
            )
            assert new - general or place_conflict, (p, h)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"artifact_label": "maybe"}, "'artifact_label' parameter of make_nli_artifacts"),
        ({"artifact_rate": 1.5}, "'artifact_rate' parameter"),
        ({"leak_rate": -0.1}, "'leak_rate' parameter"),
        ({"label_noise": 1.0}, "'label_noise' parameter"),
        ({"n": 2}, "'n' parameter"),
        ({"cue": "two words"}, "Got 'two words' instead"),
        ({"cue": "man"}, "Got 'man' instead"),
        ({"random_state": "seed"}, "'random_state' parameter"),
    ],
)
def test_nli_bad_parameters(kwargs, needle):
    with pytest.raises(ParameterError, match=re.escape(needle)):
        make_nli_artifacts(**kwargs)


# -- NLI: quality floors -------------------------------------------------------------


def _new_words(premise: str, hypothesis: str) -> str:
    seen = set(words(premise))
    return " ".join(w for w in words(hypothesis) if w not in seen) or "_none_"


def _bow_accuracy(out: SyntheticNLI, parts: tuple[str, ...]) -> tuple[float, float]:
    """Held-out accuracy and artifact-label recall of a bag-of-words logistic regression.

    ``parts`` picks the inputs: "h" (hypothesis), "p" (premise), "new" (hypothesis words
    absent from the premise, the simplest feature that compares the two sentences).
    """
    ds = out.dataset
    cols = {
        "h": ds.texts("hypothesis"),
        "p": ds.texts("premise"),
        "new": [
            _new_words(p, h)
            for p, h in zip(ds.texts("premise"), ds.texts("hypothesis"), strict=True)
        ],
    }
    idx_tr, idx_te = train_test_split(
        np.arange(len(ds)), test_size=0.3, random_state=0, stratify=ds.labels
    )
    blocks_tr, blocks_te = [], []
    for part in parts:
        texts = np.array(cols[part], dtype=object)
        vec = CountVectorizer(binary=True).fit(texts[idx_tr])
        blocks_tr.append(vec.transform(texts[idx_tr]))
        blocks_te.append(vec.transform(texts[idx_te]))
    y = ds.labels
    model = LogisticRegression(max_iter=1000).fit(sp.hstack(blocks_tr).tocsr(), y[idx_tr])
    pred = model.predict(sp.hstack(blocks_te).tocsr())
    target = LABELS.index(out.params["artifact_label"])
    recall = recall_score(y[idx_te], pred, labels=[target], average=None)[0]
    return float((pred == y[idx_te]).mean()), float(recall)


@pytest.fixture(scope="module")
def nli_clean() -> SyntheticNLI:
    return make_nli_artifacts(n=3000, artifact_rate=0.0, random_state=0)


def test_nli_without_cue_partial_inputs_are_at_chance(nli_clean):
    hyp_acc, _ = _bow_accuracy(nli_clean, ("h",))
    prem_acc, _ = _bow_accuracy(nli_clean, ("p",))
    assert hyp_acc < 0.40  # measured 0.33 (chance 1/3)
    assert prem_acc < 0.40


def test_nli_full_input_model_learns_the_relation(nli_clean):
    full_acc, _ = _bow_accuracy(nli_clean, ("p", "h", "new"))
    assert full_acc > 0.85  # measured 0.95


def test_nli_cue_makes_hypothesis_only_model_succeed():
    out = make_nli_artifacts(n=3000, artifact_rate=0.8, random_state=0)
    hyp_acc, recall = _bow_accuracy(out, ("h",))
    assert hyp_acc > 0.5  # measured 0.59; about 1/3 + 0.8/3 is reachable
    assert recall > 0.7  # measured 0.78 (the cue's 0.8 is the ceiling)


def test_nli_leak_weakens_but_keeps_the_cue():
    strong = _bow_accuracy(make_nli_artifacts(n=3000, artifact_rate=0.8, random_state=1), ("h",))
    leaky = _bow_accuracy(
        make_nli_artifacts(n=3000, artifact_rate=0.8, leak_rate=0.3, random_state=1), ("h",)
    )
    assert 0.4 < leaky[0] < strong[0]


# -- Circles: structure and ground truth ----------------------------------------------


def test_circle_separations_are_the_papers_four_levels():
    assert CIRCLE_SEPARATIONS == (0.8, 0.7, 0.6, 0.4)


def test_circles_shapes_balance_and_bias_counts():
    data = make_concentric_circles(n=1001, n_bias_features=3, random_state=0)
    assert isinstance(data, SyntheticCircles)
    assert data.X.shape == (1001, 5) and data.X.dtype == np.float32
    assert data.y.dtype == np.int64 and set(np.unique(data.y)) == {0, 1}
    assert np.bincount(data.y).tolist() == [501, 500]
    assert data.is_biased[data.y == 0].sum() == round(0.75 * 501)
    assert data.is_biased[data.y == 1].sum() == round(0.75 * 500)
    assert not data.is_flipped.any()
    assert data.params["separation"] == 0.8


def test_circles_geometry_and_bias_means():
    data = make_concentric_circles(n=20000, separation=0.6, noise=0.0, random_state=1)
    radius = np.hypot(data.X[:, 0], data.X[:, 1])
    np.testing.assert_allclose(radius[data.y == 0], 1.0, atol=1e-5)
    np.testing.assert_allclose(radius[data.y == 1], 0.4, atol=1e-5)
    bias = data.X[:, 2:]
    for c, mean in ((0, -1.0), (1, 1.0)):
        biased = bias[data.is_biased & (data.y == c)]
        np.testing.assert_allclose(biased.mean(axis=0), mean, atol=0.05)
    np.testing.assert_allclose(bias[~data.is_biased].mean(axis=0), 0.0, atol=0.05)


@pytest.mark.parametrize("flipped_bias", ["observed", "original"])
def test_circles_flips_only_biased_rows(flipped_bias):
    clean = make_concentric_circles(n=2000, random_state=4)
    flipped = make_concentric_circles(
        n=2000, flip_fraction=0.1, random_state=4, flipped_bias=flipped_bias
    )
    # Same draws: the coordinates never move, and only flipped rows' bias columns may.
    np.testing.assert_array_equal(clean.X[:, :2], flipped.X[:, :2])
    np.testing.assert_array_equal(clean.X[~flipped.is_flipped], flipped.X[~flipped.is_flipped])
    for c in (0, 1):
        biased = clean.is_biased & (clean.y == c)
        assert flipped.is_flipped[biased].sum() == round(0.1 * biased.sum())
    np.testing.assert_array_equal(np.bincount(flipped.y), np.bincount(clean.y))
    assert not (flipped.is_flipped & ~flipped.is_biased).any()
    np.testing.assert_array_equal(clean.y != flipped.y, flipped.is_flipped)
    assert flipped.params["flipped_bias"] == flipped_bias


def test_circles_flipped_rows_bias_follows_the_observed_label_by_default():
    kw = {"n": 20000, "flip_fraction": 0.2, "random_state": 5}
    new = make_concentric_circles(**kw)
    old = make_concentric_circles(**kw, flipped_bias="original")
    f = new.is_flipped
    np.testing.assert_array_equal(f, old.is_flipped)
    np.testing.assert_array_equal(new.y, old.y)
    # Bias shift +1 for class 1, -1 for class 0: a flipped row's bias mean is +-1 with
    # the sign of its observed label (default) or of its original class (option).
    sign = np.where(new.y[f] == 1, 1.0, -1.0)[:, None]
    np.testing.assert_allclose((new.X[f, 2:] * sign).mean(axis=0), 1.0, atol=0.05)
    np.testing.assert_allclose((old.X[f, 2:] * sign).mean(axis=0), -1.0, atol=0.05)
    # The bias columns differ by exactly 2 * bias_shift on flipped rows, nowhere else.
    np.testing.assert_allclose(np.abs(new.X[f, 2:] - old.X[f, 2:]), 2.0, atol=1e-5)
    # The coordinates keep the original ring: a flipped row sits in the other class's ring.
    radius = np.hypot(new.X[:, 0], new.X[:, 1])
    assert radius[f & (new.y == 1)].mean() > 0.9 > radius[~f & (new.y == 1)].mean()


def test_circles_determinism():
    a = make_concentric_circles(n=500, random_state=7)
    b = make_concentric_circles(n=500, random_state=7)
    c = make_concentric_circles(n=500, random_state=8)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    np.testing.assert_array_equal(a.is_biased, b.is_biased)
    assert not np.array_equal(a.X, c.X)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"separation": 1.0}, "'separation' parameter of make_concentric_circles"),
        ({"separation": 0}, "'separation' parameter"),
        ({"bias_fraction": 1.2}, "'bias_fraction' parameter"),
        ({"n_bias_features": 0}, "'n_bias_features' parameter"),
        ({"flip_fraction": -1}, "'flip_fraction' parameter"),
        ({"n": 1}, "'n' parameter"),
        ({"noise": -0.1}, "'noise' parameter"),
        ({"flipped_bias": "new"}, "'flipped_bias' parameter"),
    ],
)
def test_circles_bad_parameters(kwargs, needle):
    with pytest.raises(ParameterError, match=re.escape(needle)):
        make_concentric_circles(**kwargs)


# -- Circles: quality floors (paper 000, Sec. 3 / Table 7) ----------------------------


def _circle_scores(separation: float, flip_fraction: float = 0.0) -> dict[str, float]:
    data = make_concentric_circles(
        n=4000, separation=separation, flip_fraction=flip_fraction, random_state=0
    )
    X_tr, X_te, y_tr, y_te = train_test_split(
        data.X, data.y, test_size=0.3, random_state=0, stratify=data.y
    )

    def score(model, cols):
        return float(model.fit(X_tr[:, cols], y_tr).score(X_te[:, cols], y_te))

    xy, all_cols = slice(0, 2), slice(None)
    return {
        "linear_2d": score(LogisticRegression(), xy),
        "rbf_2d": score(SVC(), xy),
        "linear_biased": score(LogisticRegression(), all_cols),
        "rbf_biased": score(SVC(), all_cols),
    }


@pytest.fixture(scope="module")
def circle_scores() -> dict[float, dict[str, float]]:
    return {s: _circle_scores(s) for s in CIRCLE_SEPARATIONS}


@pytest.mark.parametrize("separation", CIRCLE_SEPARATIONS)
def test_circles_need_a_nonlinear_model_unless_biased(circle_scores, separation):
    s = circle_scores[separation]
    assert s["linear_2d"] < 0.6  # measured 0.49-0.51: a line cannot separate rings
    assert s["rbf_2d"] > 0.8  # measured 0.83-0.97
    assert s["linear_biased"] > 0.75  # measured 0.81; the bias makes it linear
    assert s["rbf_biased"] > 0.85


def test_circles_larger_separation_is_easier(circle_scores):
    rbf = [circle_scores[s]["rbf_2d"] for s in CIRCLE_SEPARATIONS]
    assert rbf[0] > 0.93
    assert all(a >= b - 0.01 for a, b in itertools.pairwise(rbf))
    assert rbf[0] - rbf[-1] > 0.08


def test_circles_flips_hurt_even_the_rbf_model(circle_scores):
    flipped = _circle_scores(CIRCLE_SEPARATIONS[0], flip_fraction=0.1)
    assert flipped["rbf_biased"] < circle_scores[CIRCLE_SEPARATIONS[0]]["rbf_biased"] - 0.03
    assert flipped["linear_2d"] < 0.6
