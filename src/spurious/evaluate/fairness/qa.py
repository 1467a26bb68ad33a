"""Paper 004's adversarial filtering adapted to extractive QA (a deviation: the paper
filters classification sets only).

Questions are reduced to answer-sentence selection
(:mod:`~spurious.features.qa_sentences`: the candidates, the label, the features
of each QA adversary); a question is *predictable* when the adversary's classifiers (a
conditional logit, :class:`~spurious.models.conditional_logit.ConditionalLogit`: one
weight vector shared by the candidates, softmax over the question's sentences) pick its
answer sentence. :func:`run_qa_adversaries` runs AFLite on them.

With no training split (SQuAD's training set is not available offline), the data is
split by article (``title``) into two halves with a seed and **cross-fitted**: AFLite's
classifiers train on one half and filter the other, then the halves swap, so every
question gets a stage from classifiers that never saw its article.

Evaluated models are scored per question by SQuAD F1 and EM (max over the gold answers,
official normalisation, :func:`spurious.stats.metrics.qa_scores`). Annotator agreement is
the share of the *other* annotators' answers that equal the first answer after SQuAD's
normalisation (:func:`answer_agreement`), a cheap analogue of SNLI's agreement with gold.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from spurious.data.dataset import Dataset
from spurious.evaluate.fairness.adversaries import (
    PAPER_TABLE3,
    STAGES,
    AdversaryRun,
    adversary_names,
)
from spurious.exceptions import ParameterError
from spurious.features.qa_sentences import (
    QA_ADVERSARIES,
    SentenceCandidates,
    answer_sentences,
    candidate_features,
    pack_candidates,
)
from spurious.stats.metrics import normalize_answer
from spurious.utils.progress import step_bar

logger = logging.getLogger(__name__)

__all__ = [
    "QA_ADVERSARIES",
    "SentenceCandidates",
    "answer_agreement",
    "answer_counts",
    "answer_sentences",
    "article_halves",
    "candidate_features",
    "pack_candidates",
    "run_qa_adversaries",
]


def answer_agreement(answers: Sequence[Sequence[str]]) -> np.ndarray:
    """Share of the other annotators' answers equal to the first (SQuAD normalisation).

    NaN where a question has fewer than two answers.

    Examples
    --------
    >>> answer_agreement([["The Broncos", "broncos", "Denver"], ["x"]]).tolist()
    [0.5, nan]
    """
    out = np.full(len(answers), np.nan)
    for i, a in enumerate(answers):
        a = list(a) if a is not None else []
        if len(a) >= 2:
            first = normalize_answer(a[0])
            out[i] = float(np.mean([normalize_answer(o) == first for o in a[1:]]))
    return out


def answer_counts(answers: Sequence[Sequence[str]]) -> list[dict[str, float] | None]:
    """Normalised answer -> count per question (for the entropy of the answers).

    Examples
    --------
    >>> answer_counts([["The Broncos", "broncos", "Denver"], []])
    [{'broncos': 2.0, 'denver': 1.0}, None]
    """
    out: list[dict[str, float] | None] = []
    for a in answers:
        c = Counter(normalize_answer(x) for x in (a if a is not None else []))
        out.append({k: float(v) for k, v in c.items()} or None)
    return out


def article_halves(titles: Sequence[str], random_state: int = 0) -> np.ndarray:
    """Assign each article (title) to half 0 or 1 at random; equal numbers of articles.

    Examples
    --------
    >>> h = article_halves(["a", "a", "b", "c", "d"], random_state=0)
    >>> h[0] == h[1], sorted(np.bincount(h[[0, 2, 3, 4]]).tolist())
    (np.True_, [2, 2])
    """
    codes, uniques = pd.factorize(pd.Series(list(titles), dtype=object))
    order = np.random.default_rng(random_state).permutation(len(uniques))
    half_of = np.zeros(len(uniques), dtype=np.int64)
    half_of[order[len(uniques) // 2 :]] = 1
    return half_of[codes]


def _class_dataset(
    ids: np.ndarray, questions: np.ndarray, labels: np.ndarray, groups: np.ndarray, K: int
) -> Dataset:
    """Questions as a K-class dataset (label = answer sentence) that AFLite can filter."""
    frame = pd.DataFrame(
        {"id": ids, "text": questions, "label": [f"s{k}" for k in labels], "group": groups}
    )
    return Dataset.from_frame(frame, "text", label_names=[f"s{k}" for k in range(K)])


def run_qa_adversaries(
    dataset: Dataset,
    adversaries: Sequence[str] | Mapping[str, str],
    seeds: Sequence[int],
    *,
    aflite_params: Mapping[str, Any] | None = None,
    train: Dataset | None = None,
    split_seed: int = 0,
    l2: float = 1.0,
    progress: bool = False,
) -> tuple[list[AdversaryRun], dict[str, Any]]:
    """AFLite (evaluation-set mode) on answer-sentence selection, per adversary and seed.

    Parameters
    ----------
    dataset : Dataset
        The QA set to filter.
    adversaries : list or mapping name -> one of :data:`QA_ADVERSARIES`
    seeds : sequence of int
        AFLite seeds.
    aflite_params : mapping, optional
        AFLite hyperparameters (default :data:`PAPER_TABLE3`; sizes are fractions of the
        training side).
    train : Dataset, optional
        A QA training split for AFLite's classifiers. Without it, ``dataset`` is split by
        article into two halves (``split_seed``) and cross-fitted.
    split_seed : int
        Seed of the article halves.
    l2 : float
        Ridge penalty of the conditional logit.
    progress : bool
        A progress bar over the AFLite runs (adversary x seed x fold), and spaCy's parse
        of the contexts for ``qa_heuristic``.

    Returns
    -------
    runs : list of AdversaryRun
        Stages of ``dataset``'s questions (-1: no located answer, not staged).
    info : dict
        ``protocol``, ``n_candidates``, ``max_candidates``, ``features`` per adversary,
        ``halves`` (questions per half) and ``sentence_position_baseline`` (share of
        questions whose answer is in the first sentence).

    Examples
    --------
    >>> import pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({"question": [f"q{i}" for i in range(40)],
    ...     "context": ["Ann saw Bob. Cy left."] * 40, "answers": [["Cy"] if i % 4 == 0 else ["Bob"]
    ...     for i in range(40)], "title": [f"t{i % 5}" for i in range(40)]}), "qa")
    >>> runs, info = run_qa_adversaries(ds, ["qa_position"], [0],
    ...     aflite_params={"n_partitions": 4, "train_size": 8, "max_rounds": 1})
    >>> # position alone picks sentence 0: its 30 questions are filtered, the 10 others kept
    >>> runs[0].stages.tolist().count(0), runs[0].stages.tolist().count(2)
    (30, 10)
    """
    from spurious.detectors.aflite import AFLite
    from spurious.models.conditional_logit import ConditionalLogit

    params = dict(PAPER_TABLE3 if aflite_params is None else aflite_params)
    for reserved in ("mode", "features", "model", "random_state", "view"):
        if reserved in params:
            raise ParameterError(
                f"The 'aflite_params' parameter may not set {reserved!r} for QA adversaries; "
                "it is set per adversary and seed."
            )
    names = adversary_names(adversaries)
    for name, spec in names.items():
        if spec not in QA_ADVERSARIES:
            raise ParameterError(
                f"The 'adversaries' parameter: {name!r} is {spec!r}; a QA dataset needs one "
                f"of {list(QA_ADVERSARIES)}."
            )
    whole = dataset if train is None else _concat(train, dataset)
    n_eval = len(dataset)
    offset = len(whole) - n_eval  # evaluation rows are the last n_eval of `whole`
    cands = answer_sentences(whole)
    K = cands.max_candidates
    f = whole.frame
    questions = f["question"].astype(str).to_numpy(dtype=object)
    groups = (f["group"] if "group" in f else f["context"]).astype(str).to_numpy(dtype=object)
    ids = np.asarray(whole.ids, dtype=object)
    labelled = cands.label >= 0
    folds, protocol = _folds(f, labelled, offset, cross_fit=train is None, split_seed=split_seed)
    side = [(_class_dataset(ids[a], questions[a], cands.label[a], groups[a], K),
             _class_dataset(ids[b], questions[b], cands.label[b], groups[b], K)) for a, b in folds]  # fmt: skip
    info: dict[str, Any] = {
        "protocol": protocol,
        "task_reduction": "answer-sentence selection (label = sentence holding the first "
        "gold answer's start; conditional logit over the context's sentences)",
        "n_candidates": len(cands.text),
        "max_candidates": K,
        "mean_candidates": float(cands.n_sentences.mean()),
        "n_not_staged": int((~labelled[offset:]).sum()),
        "folds": [{"n_train": len(a), "n_eval": len(b)} for a, b in folds],
        "answer_in_first_sentence": float((cands.label[offset:][labelled[offset:]] == 0).mean()),
        "features": {},
    }
    runs: list[AdversaryRun] = []
    bar = step_bar("fairness: QA adversary runs", len(names) * len(seeds) * len(folds),
                   enabled=progress, unit="run")  # fmt: skip
    for name, spec in names.items():
        t0 = time.perf_counter()
        bar.set_postfix_str(f"{name}: features")
        F, feat_names = candidate_features(cands, questions, spec, progress=progress)
        X = pack_candidates(cands, F)
        build_s = time.perf_counter() - t0
        info["features"][name] = {"spec": spec, "names": feat_names, "seconds": round(build_s, 2)}
        model = ConditionalLogit(1 + F.shape[1], l2=l2)
        for seed in seeds:
            start = time.perf_counter()
            stages = np.full(n_eval, -1, dtype=np.int8)
            n_rounds: list[int] = []
            metrics: dict[str, float] = {}
            for (a, b), (ds_tr, ds_ev) in zip(folds, side, strict=True):
                bar.set_postfix_str(f"{name} seed {seed} fold {len(n_rounds) + 1}/{len(folds)}")
                # Only the filtering is used; a label permutation would also be meaningless
                # here (labels index each question's own candidate sentences). Its rounds
                # show below our line.
                res = AFLite(
                    mode="eval", features=(X[a], X[b]), model=model, random_state=int(seed),
                    **{"n_shuffles": 0, **params},
                ).run(ds_tr, ds_ev, progress=progress)  # fmt: skip
                stage = res.scores.set_index("id")["stage"].reindex(ids[b])
                stages[b - offset] = stage.map({s: i for i, s in enumerate(STAGES)}).to_numpy()
                n_rounds.append(int(res.metrics.get("n_rounds", 0)))
                for k, v in res.metrics.items():
                    metrics[f"fold{len(n_rounds) - 1}_{k}"] = v
                bar.update(1)
            seconds = time.perf_counter() - start + (build_s if seed == seeds[0] else 0.0)
            runs.append(
                AdversaryRun(name, spec, int(seed), stages, max(n_rounds), seconds, metrics)
            )
            logger.info(
                "QA adversary %s seed %d: %d of %d AF-selected (%.1fs)",
                name, seed, int((stages == 2).sum()), n_eval, seconds,
            )  # fmt: skip
    bar.close()
    return runs, info


def _folds(
    frame: pd.DataFrame, labelled: np.ndarray, offset: int, *, cross_fit: bool, split_seed: int
) -> tuple[list[tuple[np.ndarray, np.ndarray]], str]:
    """AFLite's (train rows, filtered rows) pairs over the labelled questions, and the
    protocol in words: two swapped article halves, or the training split then the
    evaluation split (its rows from ``offset`` on)."""
    if cross_fit:
        titles = frame["title"] if "title" in frame else frame["context"]
        half = article_halves(titles.astype(str).tolist(), split_seed)
        folds = [(np.flatnonzero((half != h) & labelled), np.flatnonzero((half == h) & labelled))
                 for h in (0, 1)]  # fmt: skip
        protocol = (
            f"cross-fitted halves: articles split at random (seed {split_seed}) into two "
            "halves; AFLite's classifiers train on one half and filter the other, then swap"
        )
        return folds, protocol
    tr_rows = np.flatnonzero(labelled[:offset])
    folds = [(tr_rows, offset + np.flatnonzero(labelled[offset:]))]
    return folds, (
        "AFLite's classifiers train on the training split and filter the evaluation split"
    )


def _concat(train: Dataset, eval: Dataset) -> Dataset:
    cols = [c for c in ("id", "question", "context", "answers", "answer_starts", "title", "group")
            if c in train.frame and c in eval.frame]  # fmt: skip
    frame = pd.concat([train.frame[cols], eval.frame[cols]], ignore_index=True)
    if frame["id"].duplicated().any():
        raise ParameterError(
            "The QA training and evaluation splits share ids; fairness needs distinct ids."
        )
    return Dataset.from_frame(frame, "qa", name=f"{train.name}+{eval.name}")
