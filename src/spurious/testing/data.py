"""The inputs the contract checks run on, built once per process and shared by the checks.

:class:`Inputs` holds a train and an eval split, the predictions of two made-up models
and a shared :class:`~spurious.context.RunContext` (features and heuristics built once
for every check), with fresh and label-shuffled contexts on the same rows.
:func:`default_inputs` builds it on the synthetic NLI data
(:func:`spurious.data.synthetic.make_nli_artifacts`) on first use; an analysis that
applies to multiple-choice items only gets synthetic items with a planted length cue
(:func:`spurious.data.synthetic_mcq.make_mcq_artifacts`) instead, and one of extractive
QA only synthetic questions whose answer is often in the first sentence
(:func:`spurious.data.synthetic_qa.make_qa_artifacts`) (:func:`default_inputs_for`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from spurious.data.dataset import Dataset
from spurious.data.mcq import option_counts
from spurious.data.predictions import PredictionSet, align_predictions

if TYPE_CHECKING:  # pragma: no cover
    from spurious.analysis import Analysis
    from spurious.context import RunContext

__all__ = [
    "Data",
    "Inputs",
    "default_inputs",
    "default_inputs_for",
    "model_predictions",
    "synthetic_task",
    "tiny_dataset",
]

#: What ``data`` may be: ``None`` (the built-in synthetic NLI data), a labelled
#: :class:`~spurious.data.Dataset` (split 70/30) or a ``(train, eval)`` pair.
Data = Dataset | tuple[Dataset, Dataset] | None


@dataclass
class Inputs:
    """Train and eval splits, two models' predictions and a shared context, built once."""

    train: Dataset
    eval: Dataset
    predictions: list[PredictionSet]
    _shared: RunContext | None = None
    _shuffled: dict[int, tuple[Dataset, Dataset, list[PredictionSet]]] = field(default_factory=dict)

    @classmethod
    def build(cls, data: Data, task: str = "nli") -> Inputs:
        """Inputs on ``data``; without data, on synthetic data of ``task`` ("nli", "mcq",
        "qa")."""
        if data is None and task == "qa":
            from spurious.data.synthetic_qa import make_qa_artifacts

            qa = make_qa_artifacts(n=300, artifact_rate=0.6, random_state=5)
            train, test = qa.dataset.split(0.3, random_state=0)
        elif data is None and task == "mcq":
            from spurious.data.synthetic_mcq import make_mcq_artifacts

            items = make_mcq_artifacts(n=300, artifact="length", artifact_rate=0.6, random_state=5)
            train, test = items.dataset.split(0.3, random_state=0)
        elif data is None:
            from spurious.data.synthetic import make_nli_artifacts

            synthetic = make_nli_artifacts(n=300, artifact_rate=0.8, random_state=5)
            train, test = synthetic.dataset.split(0.3, random_state=0)
        elif isinstance(data, Dataset):
            train, test = data.split(0.3, random_state=0)
        else:
            train, test = data
        for what, ds in (("train", train), ("eval", test)):
            if not isinstance(ds, Dataset):
                raise TypeError(
                    f"data must be a spurious Dataset or a (train, eval) pair of them; the "
                    f"{what} split is a {type(ds).__name__}."
                )
        return cls(train, test, model_predictions(test))

    def context(self) -> RunContext:
        """The shared context: features and heuristics are built once for every check."""
        if self._shared is None:
            self._shared = self.fresh()
        return self._shared

    def fresh(self) -> RunContext:
        """A new context on the same inputs (nothing built yet, no earlier results)."""
        from spurious.context import RunContext

        return RunContext(self.train, self.eval, predictions=self.predictions, progress=False)

    def shuffled(self, seed: int) -> RunContext:
        """A new context on the same rows with permuted labels (train and eval)."""
        from spurious.context import RunContext

        if seed not in self._shuffled:
            s_train = _shuffled(self.train, 10 + seed)
            s_test = _shuffled(self.eval, 20 + seed)
            # The models learned the real task (their predictions follow the unshuffled
            # labels), so against the shuffled gold labels they are right at chance.
            preds = [
                align_predictions(dict(zip(p.ids, p.values, strict=True)), s_test, name=p.name)
                for p in self.predictions
            ]
            self._shuffled[seed] = (s_train, s_test, preds)
        s_train, s_test, preds = self._shuffled[seed]
        return RunContext(s_train, s_test, predictions=preds, progress=False)


@functools.cache
def default_inputs(task: str = "nli") -> Inputs:
    """The inputs on the built-in synthetic data of ``task`` ("nli", "mcq" or "qa"), built
    once per process."""
    return Inputs.build(None, task)


def synthetic_task(analysis: Analysis) -> str:
    """The synthetic data the checks of ``analysis`` run on: ``"mcq"`` for an analysis of
    multiple-choice items only (it would be skipped on NLI), ``"qa"`` for one of extractive
    QA only, else ``"nli"``.

    Examples
    --------
    >>> from spurious.analysis import get_analysis
    >>> synthetic_task(get_analysis("atlas")())
    'nli'
    """
    tasks = analysis.requirements().tasks
    if tasks is None or "nli" in tasks:
        return "nli"
    return "mcq" if "mcq" in tasks else "qa" if "qa" in tasks else "nli"


def default_inputs_for(analysis: Analysis) -> Callable[[], Inputs]:
    """``inputs()`` for the checks of ``analysis``: the shared synthetic data it can run on."""
    return functools.partial(default_inputs, synthetic_task(analysis))


def model_predictions(test: Dataset) -> list[PredictionSet]:
    """The predictions of two made-up models on ``test`` (none when it has no labels)."""
    if not test.task.has_labels:
        return []
    return [_predictions(test, "model_a", 0.2, 0), _predictions(test, "model_b", 0.4, 1)]


def _predictions(test: Dataset, name: str, noise: float, seed: int) -> PredictionSet:
    # A model that is right on most examples, wrong more often on short last fields
    # (short hypotheses in NLI): a bias the evaluations can find.
    rng = np.random.default_rng(seed)
    last = test.frame[test.task.text_fields[-1]].astype(str)
    short = last.str.split().str.len().to_numpy() < 6
    wrong = rng.random(len(test)) < np.where(short, 2 * noise, noise)
    # A wrong answer is another class; for multiple choice, another of the item's options.
    n_choices = option_counts(test.frame) if test.task.multiple_choice else test.n_classes
    labels = np.where(wrong, (test.labels + 1) % n_choices, test.labels)
    names = np.asarray(test.label_names, dtype=object)
    return align_predictions(dict(zip(test.ids, names[labels], strict=True)), test, name=name)


def _shuffled(ds: Dataset, seed: int) -> Dataset:
    """The same rows and ids with the labels permuted: any association with the text is gone.

    Multiple-choice items get their gold re-drawn uniformly among their own options (a
    permutation across items could name an option an item does not have), so no option
    or position cue is left. Extractive QA questions get as answer the first word of a
    sentence of their context drawn uniformly (not a word drawn uniformly, which would
    favour long sentences), so neither position nor content says where it is."""
    frame = ds.frame.drop(columns=["label_id"], errors="ignore").copy()
    rng = np.random.default_rng(seed)
    if ds.task.name == "qa":
        frame["answers"], frame["answer_starts"] = _random_answers(frame["context"], rng)
    elif ds.task.multiple_choice:
        k = option_counts(ds.frame)
        frame["label"] = (rng.random(len(k)) * k).astype(np.int64)
    else:
        frame["label"] = rng.permutation(frame["label"].to_numpy())
    return Dataset.from_frame(
        frame, ds.task, label_names=ds.label_names, name=f"{ds.name}-shuffled"
    )


def _random_answers(contexts: pd.Series, rng: np.random.Generator) -> tuple[list, list]:
    """Per context: the first word of a uniformly drawn sentence, and its offset."""
    from spurious.heuristics.qa import sentence_starts

    answers, starts = [], []
    for context in contexts.astype(str):
        bounds = sentence_starts(context)
        ends = [*bounds[1:], len(context)]
        j = int(rng.integers(len(bounds)))
        word = re.search(r"\w+", context[bounds[j] : ends[j]])
        start = bounds[j] + (word.start() if word else 0)
        answers.append([word.group() if word else context[bounds[j] : ends[j]].strip()])
        starts.append([start])
    return answers, starts


def tiny_dataset(ds: Dataset) -> Dataset:
    """Two examples of ``ds`` (of two different labels when it has labels)."""
    frame = ds.frame
    if ds.task.has_labels:
        first = np.unique(ds.labels, return_index=True)[1][:2]
        frame = frame.iloc[np.sort(first)].drop(columns=["label_id"], errors="ignore")
    else:
        frame = frame.iloc[:2]
    return Dataset.from_frame(
        frame.reset_index(drop=True), ds.task, label_names=ds.label_names, name="two-examples"
    )
