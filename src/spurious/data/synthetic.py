"""Planted-artifact generators whose ground truth is known.

Two generators, used by tests (quality floors) and by the built-in demo, which must
not depend on downloaded data:

- :func:`make_nli_artifacts`: NLI-like text from templates, where the label depends
  only on the premise-hypothesis relation, plus a controllable cue word planted in the
  hypotheses of one label (the "annotation artifact" of NLI datasets).
- :func:`make_concentric_circles`: the 2-D concentric circles of paper 000 (AFLite,
  Sec. 3 and App. A.3) with class-specific Gaussian bias features on 75% of each class.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np
import pandas as pd

from spurious.data.dataset import Dataset
from spurious.data.tasks import get_task
from spurious.exceptions import ParameterError
from spurious.utils.limits import MAX_SYNTHETIC_ROWS
from spurious.utils.validation import Interval, StrOptions, check_params

__all__ = [
    "CIRCLE_SEPARATIONS",
    "SyntheticCircles",
    "SyntheticNLI",
    "make_concentric_circles",
    "make_nli_artifacts",
]

_NLI_LABELS: tuple[str, ...] = tuple(get_task("nli").default_labels or ())


def _rng(random_state: int | np.random.Generator | None) -> np.random.Generator:
    # A Generator passed in is used as is (the caller owns its state); an int or None
    # seeds a fresh one. Global numpy state is never touched.
    if isinstance(random_state, np.random.Generator):
        return random_state
    return np.random.default_rng(random_state)


_RANDOM_STATE = [Interval(Integral, 0, None, closed="left"), np.random.Generator, None]


# =====================================================================================
# NLI with a planted cue
# =====================================================================================

# The lexicon is built so that a hypothesis can always be paired with a premise of any
# label: subjects are pairwise exclusive (contradiction by subject), verbs are pairwise
# exclusive (contradiction by action), places are indoor or outdoor (contradiction by
# place, which survives generalising a place to "indoors"/"outdoors"), and the details
# (adjectives, clothing) are mutually compatible (neutral = an unverifiable detail).
_SUBJECTS = ("man", "woman", "boy", "girl")
_GENERAL_SUBJECT = "person"
_ACTIONS: dict[str, tuple[str, ...]] = {
    "eating": ("an apple", "a sandwich", "a slice of pizza", "some soup"),
    "playing": ("a guitar", "the piano", "a violin", "the drums"),
    "reading": ("a book", "a newspaper", "a magazine", "a letter"),
    "riding": ("a bicycle", "a horse", "a skateboard", "a scooter"),
    "painting": ("a fence", "a picture", "a wall", "a portrait"),
    "washing": ("a car", "the dishes", "a dog", "a window"),
    "throwing": ("a ball", "a frisbee", "a stick", "a pillow"),
}
_PLACES: dict[str, tuple[str, ...]] = {
    "outdoors": ("in a park", "on a beach", "on a busy street", "in a garden", "in a field"),
    "indoors": ("in a kitchen", "in a library", "in an office", "in a classroom", "in a hall"),
}
_ADJECTIVES = ("tall", "smiling", "tired", "cheerful", "barefoot", "curly-haired")
_CLOTHES = ("a red hat", "a blue jacket", "sunglasses", "a striped scarf", "a backpack")
_DETAILS: tuple[tuple[str, str], ...] = tuple(
    [("adj", a) for a in _ADJECTIVES] + [("wear", c) for c in _CLOTHES]
)

# How often a hypothesis slot is stated more generally than the premise states it. The
# same for every label, so generalisation words carry no label information by themselves.
_P_GENERAL_SUBJECT = 0.2
_P_DROP_OBJECT = 0.3
_P_GENERAL_PLACE = 0.3
# How often a premise carries a second detail the hypothesis does not mention.
_P_EXTRA_DETAIL = 0.5

# Natural carriers for the paper-style negation cues. Each keeps the hypothesis' meaning
# (so the label stays right for every label the cue is planted into) and is used for all
# labels alike, so the cue word is the only thing that differs.
_CUE_TEMPLATES = {
    "nobody": "Nobody doubts that {h}",
    "never": "It has never been clearer that {h}",
    "not": "It is not surprising that {h}",
    "no": "No doubt {h}",
}

_WORD = re.compile(r"[a-z]+")


def _nli_vocabulary() -> set[str]:
    words: list[str] = [*_SUBJECTS, _GENERAL_SUBJECT, *_ADJECTIVES, *_ACTIONS, *_PLACES]
    for group in (*_ACTIONS.values(), *_PLACES.values(), _CLOTHES):
        words.extend(group)
    words += ["a", "an", "is", "wearing", "and"]
    return set(_WORD.findall(" ".join(words).lower()))


def _article(word: str) -> str:
    return "An" if word[0] in "aeiou" else "A"


def _sentence(
    subject: str,
    details: list[tuple[str, str]],
    verb: str,
    obj: str | None,
    place: str,
) -> str:
    adjs = [w for kind, w in details if kind == "adj"]
    clothes = [w for kind, w in details if kind == "wear"]
    noun = " ".join([*adjs, subject])
    parts = [_article(noun), noun]
    if clothes:
        parts.append("wearing " + " and ".join(clothes))
    parts += ["is", verb]
    if obj is not None:
        parts.append(obj)
    parts.append(place)
    return " ".join(parts) + "."


def _plant_cue(hypothesis: str, cue: str) -> str:
    template = _CUE_TEMPLATES.get(cue.lower(), cue.capitalize() + ", {h}")
    return template.format(h=hypothesis[0].lower() + hypothesis[1:])


@dataclass(frozen=True, eq=False)
class SyntheticNLI:
    """Output of :func:`make_nli_artifacts`.

    Attributes
    ----------
    dataset : Dataset
        A validated ``nli`` dataset (``premise``, ``hypothesis``, ``label``).
    has_artifact : numpy.ndarray of bool, shape (n,)
        True exactly where the cue word was planted in the hypothesis.
    params : dict
        The generator's arguments (JSON-serialisable).
    is_mislabeled : numpy.ndarray of bool, shape (n,)
        True where ``label_noise`` replaced the label the pair was written for.
    """

    dataset: Dataset
    has_artifact: np.ndarray
    params: dict[str, Any]
    is_mislabeled: np.ndarray


def make_nli_artifacts(
    n: int = 3000,
    artifact_label: str = "contradiction",
    artifact_rate: float = 0.6,
    cue: str = "nobody",
    leak_rate: float = 0.0,
    label_noise: float = 0.0,
    random_state: int | np.random.Generator | None = 0,
) -> SyntheticNLI:
    """Generate template NLI pairs with a cue word planted in one label's hypotheses.

    Every hypothesis reads "A [detail] subject [wearing ...] is verb-ing [object]
    place." and is drawn from the same distribution for every label; the premise is then
    written for the label:

    - *entailment*: the hypothesis restates or generalises the premise (the premise
      may name a more specific subject, object or place, and add a detail);
    - *neutral*: the hypothesis adds a detail (an adjective or a piece of clothing)
      that the premise does not mention;
    - *contradiction*: the premise has a different subject, a different action, or an
      indoor place where the hypothesis says outdoor (or vice versa).

    Premises, too, have the same distribution for every label. So without the cue,
    hypothesis-only and premise-only models are at chance, and the label is a function
    of the relation between the two sentences only: a full-input model needs features
    that compare them (for example the hypothesis words missing from the premise);
    purely additive bag-of-words features of the concatenation cannot learn it.

    The cue is planted, with a meaning-preserving carrier ("Nobody doubts that ..."),
    into exactly ``round(artifact_rate * k)`` of the ``k`` hypotheses of
    ``artifact_label`` and into ``round(leak_rate * k')`` of the ``k'`` hypotheses of
    every other label, so it is predictive but, with a leak, not perfect.

    Parameters
    ----------
    n : int, default=3000
        Number of pairs; labels are balanced (counts differ by at most one).
    artifact_label : {"entailment", "neutral", "contradiction"}, default="contradiction"
        The label whose hypotheses carry the cue.
    artifact_rate : float in [0, 1], default=0.6
        Fraction of ``artifact_label`` hypotheses that carry the cue.
    cue : str, default="nobody"
        One word of ASCII letters, not in the generator's vocabulary. ``"nobody"``,
        ``"never"``, ``"not"`` and ``"no"`` (negation words, the artifacts found in
        SNLI) get a natural carrier sentence; other words are prefixed ("Cue, a man...").
    leak_rate : float in [0, 1], default=0.0
        Fraction of the other labels' hypotheses that also carry the cue.
    label_noise : float in [0, 1), default=0.0
        Fraction of rows whose label is replaced by a different, random label after
        the pair was written (annotation errors); see ``is_mislabeled``.
    random_state : int, numpy.random.Generator or None, default=0
        Seed of the generator's own ``numpy.random.Generator``.

    Returns
    -------
    SyntheticNLI
        ``dataset`` (ids ``"nli-00000"``...), ``has_artifact``, ``params`` and
        ``is_mislabeled``.

    Examples
    --------
    >>> out = make_nli_artifacts(n=6, artifact_rate=1.0, random_state=0)
    >>> out.dataset.label_names
    ('entailment', 'neutral', 'contradiction')
    >>> bool((out.dataset.frame["label"][out.has_artifact] == "contradiction").all())
    True
    >>> out.dataset.frame["hypothesis"][out.has_artifact].tolist()[:1]
    ['Nobody doubts that a boy wearing a red hat is painting in a field.']
    """
    check_params(
        {
            "n": [Interval(Integral, 3, MAX_SYNTHETIC_ROWS, closed="both")],
            "artifact_label": [StrOptions(set(_NLI_LABELS))],
            "artifact_rate": [Interval(Real, 0, 1, closed="both")],
            "cue": [str],
            "leak_rate": [Interval(Real, 0, 1, closed="both")],
            "label_noise": [Interval(Real, 0, 1, closed="left")],
            "random_state": _RANDOM_STATE,
        },
        {
            "n": n,
            "artifact_label": artifact_label,
            "artifact_rate": artifact_rate,
            "cue": cue,
            "leak_rate": leak_rate,
            "label_noise": label_noise,
            "random_state": random_state,
        },
        "make_nli_artifacts",
    )
    if not re.fullmatch(r"[A-Za-z]+", cue) or cue.lower() in _nli_vocabulary():
        raise ParameterError(
            "The 'cue' parameter of make_nli_artifacts must be one word of ASCII letters "
            f"that the generator's templates never use. Got {cue!r} instead."
        )
    rng = _rng(random_state)

    # Balanced labels in random order.
    labels = np.resize(np.arange(3), n)
    rng.shuffle(labels)

    premises, hypotheses = [], []
    for lab in labels:
        p, h = _nli_pair(_NLI_LABELS[lab], rng)
        premises.append(p)
        hypotheses.append(h)

    # Exact counts (not Bernoulli draws), so the planted rate is the one asked for.
    has_artifact = np.zeros(n, dtype=bool)
    for k, name in enumerate(_NLI_LABELS):
        rate = artifact_rate if name == artifact_label else leak_rate
        rows = np.flatnonzero(labels == k)
        has_artifact[rng.choice(rows, size=round(rate * len(rows)), replace=False)] = True
    for i in np.flatnonzero(has_artifact):
        hypotheses[i] = _plant_cue(hypotheses[i], cue)

    # Label noise comes last: the pair (and its cue) was written for the true label.
    is_mislabeled = np.zeros(n, dtype=bool)
    noisy = rng.choice(n, size=round(label_noise * n), replace=False)
    is_mislabeled[noisy] = True
    observed = labels.copy()
    observed[noisy] = (labels[noisy] + rng.integers(1, 3, size=len(noisy))) % 3

    width = len(str(n - 1))
    frame = pd.DataFrame(
        {
            "id": [f"nli-{i:0{width}d}" for i in range(n)],
            "premise": premises,
            "hypothesis": hypotheses,
            "label": [_NLI_LABELS[k] for k in observed],
        }
    )
    dataset = Dataset.from_frame(frame, "nli", label_names=_NLI_LABELS, name="synthetic_nli")
    params = {
        "n": int(n),
        "artifact_label": artifact_label,
        "artifact_rate": float(artifact_rate),
        "cue": cue,
        "leak_rate": float(leak_rate),
        "label_noise": float(label_noise),
        "random_state": random_state if isinstance(random_state, int | None) else "Generator",
    }
    return SyntheticNLI(dataset, has_artifact, params, is_mislabeled)


def _nli_pair(label: str, rng: np.random.Generator) -> tuple[str, str]:
    """One (premise, hypothesis) pair written for ``label``.

    The hypothesis is drawn first, without looking at the label; the premise is then
    built to stand in the required relation to it. Every construction keeps the
    premise's marginal distribution label-independent as well (a contradicting subject,
    verb or place is uniform over the alternatives, a neutral premise's details are a
    uniform draw from the details the hypothesis does not use).
    """

    def pick(seq: tuple[Any, ...] | list[Any]) -> Any:
        return seq[int(rng.integers(len(seq)))]

    # -- hypothesis (label-independent) -------------------------------------------
    subject = pick(_SUBJECTS)
    verb = pick(list(_ACTIONS))
    obj = pick(_ACTIONS[verb])
    kind = pick(list(_PLACES))
    place = pick(_PLACES[kind])
    detail = pick(_DETAILS)
    general_subject = rng.random() < _P_GENERAL_SUBJECT
    drop_object = rng.random() < _P_DROP_OBJECT
    general_place = rng.random() < _P_GENERAL_PLACE
    hypothesis = _sentence(
        _GENERAL_SUBJECT if general_subject else subject,
        [detail],
        verb,
        None if drop_object else obj,
        kind if general_place else place,
    )

    # -- premise (written for the label) ------------------------------------------
    # A generalised hypothesis slot is stated specifically in the premise; the draws
    # above already are those specific values.
    p_subject, p_verb, p_obj, p_place = subject, verb, obj, place
    others = [d for d in _DETAILS if d != detail]
    extra = [pick(others)] if rng.random() < _P_EXTRA_DETAIL else []
    if label == "neutral":
        # The hypothesis' detail is unverifiable: the premise has other details only.
        idx = rng.choice(len(others), size=1 + len(extra), replace=False)
        p_details = [others[i] for i in idx]
    else:
        p_details = [detail, *extra]
        order = rng.permutation(len(p_details))
        p_details = [p_details[i] for i in order]
    if label == "contradiction":
        # A subject conflict needs a specific hypothesis subject ("person" conflicts
        # with nobody); a verb or place conflict survives any generalisation.
        slots = ["verb", "place"] if general_subject else ["subject", "verb", "place"]
        slot = pick(slots)
        if slot == "subject":
            p_subject = pick([s for s in _SUBJECTS if s != subject])
        elif slot == "verb":
            p_verb = pick([v for v in _ACTIONS if v != verb])
            p_obj = pick(_ACTIONS[p_verb])
        else:
            p_place = pick(_PLACES["indoors" if kind == "outdoors" else "outdoors"])
    premise = _sentence(p_subject, p_details, p_verb, p_obj, p_place)
    return premise, hypothesis


# =====================================================================================
# Concentric circles with bias features (paper 000, Sec. 3)
# =====================================================================================

#: The four class separations of paper 000 (Fig. 2, Table 7), largest first. Here the
#: separation is the gap between the two rings' radii: the outer ring has radius 1 and
#: the inner one ``1 - separation``, both blurred by isotropic Gaussian noise
#: (``noise=0.2``). With that noise an RBF SVM on the two coordinates reaches about
#: 0.97 / 0.96 / 0.93 / 0.85 (so the largest separation is the easiest, as in the
#: paper), while a linear model on them stays at chance.
CIRCLE_SEPARATIONS: tuple[float, ...] = (0.8, 0.7, 0.6, 0.4)


@dataclass(frozen=True, eq=False)
class SyntheticCircles:
    """Output of :func:`make_concentric_circles`.

    Attributes
    ----------
    X : numpy.ndarray of float32, shape (n, 2 + n_bias_features)
        Columns 0-1 are the 2-D coordinates; the rest are bias features (for biased
        rows) or pure noise (for the others).
    y : numpy.ndarray of int64, shape (n,)
        Observed labels: 0 = outer ring, 1 = inner ring (after any flips).
    is_biased : numpy.ndarray of bool, shape (n,)
        True where the bias features were drawn from the class-specific Gaussian.
    params : dict
        The generator's arguments.
    is_flipped : numpy.ndarray of bool, shape (n,)
        True where the label was flipped (only biased rows are flipped). The bias
        features of a flipped row follow its observed (flipped) label by default, its
        original class with ``flipped_bias="original"``; its coordinates always stay in
        its original ring.
    """

    X: np.ndarray
    y: np.ndarray
    is_biased: np.ndarray
    params: dict[str, Any]
    is_flipped: np.ndarray


def make_concentric_circles(
    n: int = 5000,
    separation: float = 0.8,
    bias_fraction: float = 0.75,
    n_bias_features: int = 2,
    flip_fraction: float = 0.0,
    random_state: int | np.random.Generator | None = 0,
    *,
    noise: float = 0.2,
    bias_shift: float = 1.0,
    flipped_bias: str = "observed",
) -> SyntheticCircles:
    """Two concentric rings (label = ring) with class-specific bias features.

    Reproduces the synthetic data of paper 000 (AFLite), Sec. 3: a linear model cannot
    separate the rings, an RBF SVM can; bias features drawn from one Gaussian per class
    are added to ``bias_fraction`` of each class (noise features for the rest), which
    makes the task largely solvable by a linear model. For the largest separation the
    paper also flips the labels of some biased samples (``flip_fraction``), "making the
    data slightly adversarial even to the RBF", and reports that AFLite "removes most of
    the flipped examples".

    The paper does not say whether a flipped sample's bias features follow its new
    label or its original class. Only the first makes both statements hold, and it is
    the default (``flipped_bias="observed"``): such a point sits in the other class's
    ring (the coordinates contradict its label, which is what hurts the RBF model) while
    its bias features agree with its label, so the linear models inside AFLite predict
    it from the bias and AFLite removes it as *predictable* (70% of the flipped rows on
    average in ``bench/aflite_synthetic.py``). With ``flipped_bias="original"`` (the
    construction of earlier releases: the labels are flipped after the bias features
    are drawn) the bias features contradict the label too, the point is
    *unpredictable*, and AFLite keeps almost all of them.

    Parameters
    ----------
    n : int, default=5000
        Number of points; the classes are balanced (class 0 gets the odd one).
    separation : float in (0, 1), default=0.8
        Gap between the rings' radii (outer radius 1, inner ``1 - separation``); the
        paper's four levels are :data:`CIRCLE_SEPARATIONS`.
    bias_fraction : float in [0, 1], default=0.75
        Fraction of each class that gets class-specific bias features (exact count per
        class, rounded).
    n_bias_features : int >= 1, default=2
        Number of bias (or noise) feature columns appended to the coordinates.
    flip_fraction : float in [0, 1], default=0.0
        Fraction of the biased rows of each class whose label is flipped.
    random_state : int, numpy.random.Generator or None, default=0
        Seed of the generator's own ``numpy.random.Generator``.
    noise : float >= 0, default=0.2
        Standard deviation of the isotropic Gaussian blur of the coordinates.
    bias_shift : float > 0, default=1.0
        Bias features are ``N(+bias_shift, 1)`` for class 1 and ``N(-bias_shift, 1)``
        for class 0 in every bias column; noise features are ``N(0, 1)``. With the
        defaults a logistic regression on all columns reaches about 0.82 (the paper's
        Table 7 reports 0.74-0.84).
    flipped_bias : {"observed", "original"}, default="observed"
        Which class the bias features of a flipped row point to: its observed
        (flipped) label, or its original class (see above). Both draw the same random
        numbers, so the two differ only in the bias columns of the flipped rows.

    Returns
    -------
    SyntheticCircles
        ``X``, ``y``, ``is_biased``, ``params`` and ``is_flipped``, rows in random order.

    Examples
    --------
    >>> data = make_concentric_circles(n=100, separation=CIRCLE_SEPARATIONS[-1])
    >>> data.X.shape, data.X.dtype, int(data.is_biased.sum())
    ((100, 4), dtype('float32'), 76)
    >>> int(data.y.sum())
    50
    """
    check_params(
        {
            "n": [Interval(Integral, 2, MAX_SYNTHETIC_ROWS, closed="both")],
            "separation": [Interval(Real, 0, 1, closed="neither")],
            "bias_fraction": [Interval(Real, 0, 1, closed="both")],
            "n_bias_features": [Interval(Integral, 1, None, closed="left")],
            "flip_fraction": [Interval(Real, 0, 1, closed="both")],
            "random_state": _RANDOM_STATE,
            "noise": [Interval(Real, 0, None, closed="left")],
            "bias_shift": [Interval(Real, 0, None, closed="neither")],
            "flipped_bias": [StrOptions({"observed", "original"})],
        },
        {
            "n": n,
            "separation": separation,
            "bias_fraction": bias_fraction,
            "n_bias_features": n_bias_features,
            "flip_fraction": flip_fraction,
            "random_state": random_state,
            "noise": noise,
            "bias_shift": bias_shift,
            "flipped_bias": flipped_bias,
        },
        "make_concentric_circles",
    )
    rng = _rng(random_state)
    y = np.repeat(np.array([0, 1], dtype=np.int64), [n - n // 2, n // 2])
    rng.shuffle(y)

    radius = np.where(y == 0, 1.0, 1.0 - separation)
    angle = rng.uniform(0.0, 2.0 * np.pi, size=n)
    coords = np.column_stack([radius * np.cos(angle), radius * np.sin(angle)])
    coords += rng.normal(0.0, noise, size=(n, 2))

    is_biased = np.zeros(n, dtype=bool)
    for c in (0, 1):
        rows = np.flatnonzero(y == c)
        is_biased[rng.choice(rows, size=round(bias_fraction * len(rows)), replace=False)] = True
    extra = rng.normal(0.0, 1.0, size=(n, n_bias_features))

    # Flips are drawn per class so the observed classes stay balanced (a skewed class
    # prior alone would let a linear model beat chance on the coordinates).
    is_flipped = np.zeros(n, dtype=bool)
    for c in (0, 1):
        rows = np.flatnonzero(is_biased & (y == c))
        is_flipped[rng.choice(rows, size=round(flip_fraction * len(rows)), replace=False)] = True
    y_obs = np.where(is_flipped, 1 - y, y)
    # The shift is added after every draw, so both constructions consume the generator
    # identically ("original" reproduces earlier releases bit for bit).
    bias_class = y_obs if flipped_bias == "observed" else y
    extra[is_biased] += np.where(bias_class[is_biased] == 1, bias_shift, -bias_shift)[:, None]

    params = {
        "n": int(n),
        "separation": float(separation),
        "bias_fraction": float(bias_fraction),
        "n_bias_features": int(n_bias_features),
        "flip_fraction": float(flip_fraction),
        "random_state": random_state if isinstance(random_state, int | None) else "Generator",
        "noise": float(noise),
        "bias_shift": float(bias_shift),
        "flipped_bias": flipped_bias,
    }
    X = np.column_stack([coords, extra]).astype(np.float32)
    return SyntheticCircles(X, y_obs, is_biased, params, is_flipped)
