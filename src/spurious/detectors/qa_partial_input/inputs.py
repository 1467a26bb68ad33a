"""The inputs of ``qa_partial_input``: candidate sentences, view blocks, labels and folds.

A QA split becomes answer-sentence selection
(:func:`~spurious.features.qa_sentences.answer_sentences`); with an evaluation split the
two splits' candidates are featurised together (the vectorizers are unsupervised, so
this leaks no label, and both splits get the same columns and number of blocks), then
cut apart. Questions whose answer could not be located in their context get no label
and are left out of fitting and scoring (and counted). Cross-fitting keeps every
article's questions in one fold (:func:`grouped_folds`): the questions of one passage
share its sentences, so a passage-only probe that saw a sibling question's answer
sentence could "find" it again by memory rather than by a cue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from spurious.data.dataset import Dataset
from spurious.detectors.mcq_leakage.fitting import ProbeInputs, item_folds
from spurious.exceptions import AnalysisError
from spurious.features.qa_sentences import answer_sentences
from spurious.features.qa_views import sentence_view_blocks

__all__ = ["GROUP_COLUMNS", "QAInputs", "build_inputs", "describe_positions", "grouped_folds"]

#: Columns that group questions for cross-fitting, coarsest first (article, paragraph).
GROUP_COLUMNS = ("title", "group", "context")


@dataclass
class QAInputs:
    """Everything the probes need, for the questions with a located answer.

    Attributes
    ----------
    views : dict of str to ProbeInputs
        Each view's blocks of the training questions (and of the evaluation questions).
    y_train, y : ndarray of int64
        Gold sentence of the located training questions, and of the located scored ones.
    k_train, k : ndarray of int64
        Sentences per context of the same questions.
    located : ndarray of bool
        Per scored question (every row of the scored split): whether its answer was located.
    gold, n_sentences : ndarray of int64
        Per scored question: gold sentence (-1: not located) and sentences.
    columns : dict of str to list of str
        Each view's feature names.
    train_rows : ndarray of int64
        Rows of the training split with a located answer (the rows of ``y_train``).
    """

    views: dict[str, ProbeInputs]
    y_train: np.ndarray
    y: np.ndarray
    k_train: np.ndarray
    k: np.ndarray
    located: np.ndarray
    gold: np.ndarray
    n_sentences: np.ndarray
    columns: dict[str, list[str]]
    train_rows: np.ndarray


def _questions(ds: Dataset) -> list[str]:
    return ds.frame["question"].astype(str).tolist()


def build_inputs(
    train: Dataset,
    eval: Dataset | None,
    views: list[str],
    *,
    n_components: int,
    random_state: int,
) -> QAInputs:
    """Candidates of ``train`` (and ``eval``), each view's packed blocks, labels, sizes.

    Examples
    --------
    >>> from spurious.data.synthetic_qa import make_qa_artifacts
    >>> ds = make_qa_artifacts(n=30, random_state=0).dataset
    >>> inp = build_inputs(ds, None, ["position_only"], n_components=2, random_state=0)
    >>> inp.views["position_only"].n_features, len(inp.y), bool(inp.located.all())
    (5, 30, True)
    """
    cands = answer_sentences(train)
    n_train = len(train)
    questions = _questions(train)
    if eval is not None:
        cands = cands.concat(answer_sentences(eval))
        questions += _questions(eval)
    blocks = sentence_view_blocks(
        cands, questions, views, n_components=n_components, random_state=random_state
    )
    label, n_sent = cands.label, cands.n_sentences
    tr = np.flatnonzero(label[:n_train] >= 0)
    scored = np.arange(n_train) if eval is None else n_train + np.arange(len(eval))
    located = label[scored] >= 0
    ev = scored[located]
    probe_views = {
        v: ProbeInputs(b.X[tr], b.n_features, None if eval is None else b.X[ev])
        for v, b in blocks.items()
    }
    if eval is None:
        y, k = label[tr], n_sent[tr]
    else:
        y, k = label[ev], n_sent[ev]
    return QAInputs(
        views=probe_views,
        y_train=label[tr],
        y=y,
        k_train=n_sent[tr],
        k=k,
        located=located,
        gold=label[scored],
        n_sentences=n_sent[scored],
        columns={v: b.columns for v, b in blocks.items()},
        train_rows=tr,
    )


def grouped_folds(
    frame: pd.DataFrame, rows: np.ndarray, n_folds: int, seed: int | None
) -> tuple[np.ndarray, str]:
    """The test fold of each of ``rows``, whole groups dealt into ``n_folds`` folds.

    The groups are the first of :data:`GROUP_COLUMNS` with at least ``n_folds`` distinct
    values among ``rows`` (articles, else paragraphs, else contexts); the groups are
    shuffled with ``seed`` and dealt round-robin (:func:`~spurious.detectors.mcq_leakage.fitting.item_folds`).

    Returns
    -------
    fold_of : ndarray of int64
    grouped_by : str
        The column used.

    Examples
    --------
    >>> f = pd.DataFrame({"title": list("aabbccdd"), "context": list("abcdefgh")})
    >>> fold_of, by = grouped_folds(f, np.arange(8), 2, 0)
    >>> by, bool((fold_of[::2] == fold_of[1::2]).all())
    ('title', True)
    """
    for col in GROUP_COLUMNS:
        if col not in frame:
            continue
        codes, uniques = pd.factorize(frame[col].iloc[rows].astype(str))
        if len(uniques) >= n_folds:
            return item_folds(len(uniques), n_folds, seed)[codes], col
    raise AnalysisError(
        f"qa_partial_input cross-fits with n_folds={n_folds} and needs at least {n_folds} "
        f"distinct contexts among the {len(rows)} questions with a located answer; pass "
        "more questions, a smaller n_folds or an evaluation split."
    )


def describe_positions(gold: np.ndarray, n_bins: int = 10) -> dict[str, Any]:
    """Share of located answers in each sentence position (the last bin: that or later).

    Examples
    --------
    >>> describe_positions(np.array([0, 0, 1, -1, 12]), n_bins=3)
    {'positions': ['1', '2', '3+'], 'share': [0.5, 0.25, 0.25]}
    """
    g = np.asarray(gold)
    g = g[g >= 0]
    counts = np.bincount(np.minimum(g, n_bins - 1), minlength=n_bins).astype(float)
    share = (counts / max(len(g), 1)).tolist()
    names = [str(j + 1) for j in range(n_bins - 1)] + [f"{n_bins}+"]
    return {"positions": names, "share": share}
