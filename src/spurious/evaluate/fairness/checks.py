"""What the fairness study would refuse, checked before any work (its ``check()``).

The models' names (one matrix row each), the AFLite parameters its adversaries use, the
article halves a QA set without a training split is cross-fitted on, and, on a
classification run, every adversary's AFLite (its representation and sizes) against the
data: all of it fails here, before the run directory exists, instead of after the first
adversaries ran.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from spurious.evaluate.fairness.adversaries import (
    RESERVED_AFLITE_PARAMS,
    check_adversaries,
    check_aflite_params,
)
from spurious.exceptions import ParameterError

if TYPE_CHECKING:  # pragma: no cover
    from spurious.context import RunContext
    from spurious.data.dataset import Dataset

__all__ = ["check_article_halves", "check_model_names", "check_study"]


def check_model_names(models: Sequence[str]) -> None:
    """The matrix has one row per model: names (prediction files' stems) must differ.

    Examples
    --------
    >>> check_model_names(["a", "b"])
    >>> check_model_names(["a", "a"])
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: fairness needs distinct model names (the prediction files' stems); ['a'] appear more than once. Rename the files.
    """
    dup = sorted({m for m in models if list(models).count(m) > 1})
    if dup:
        raise ParameterError(
            f"fairness needs distinct model names (the prediction files' stems); {dup} "
            "appear more than once. Rename the files."
        )


def check_article_halves(dataset: Dataset) -> None:
    """Cross-fitting needs two article halves: at least two articles (titles, else contexts).

    Examples
    --------
    >>> import pandas as pd
    >>> from spurious.data.dataset import Dataset
    >>> ds = Dataset.from_frame(pd.DataFrame({"question": ["q1", "q2"], "context": ["c", "c"],
    ...     "answers": [["c"], ["c"]]}), "qa", name="one")
    >>> check_article_halves(ds)
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: fairness on a QA set without a training split cross-fits two halves of its articles, but 'one' has 1 article (by its contexts). Pass a QA training split as DATA and this set as --eval, or a set of two or more articles.
    """
    frame = dataset.frame
    by = "title" if "title" in frame else "context"
    n = int(frame[by].astype(str).nunique())
    if n < 2:
        what = "titles" if by == "title" else "contexts"
        raise ParameterError(
            "fairness on a QA set without a training split cross-fits two halves of its "
            f"articles, but {dataset.name!r} has {n} article (by its {what}). Pass a QA "
            "training split as DATA and this set as --eval, or a set of two or more articles."
        )


def check_study(
    ctx: RunContext,
    adversaries: Mapping[str, Any],
    seeds: Sequence[int],
    *,
    aflite_params: Mapping[str, Any] | None,
    view: str,
    qa: bool,
    mc: bool,
) -> None:
    """Model names; on QA and multiple choice the AFLite parameters (their adversaries set
    the model themselves) and the article halves; on classification every adversary."""
    check_model_names([p.name for p in ctx.predictions])
    if qa or mc:
        check_aflite_params(aflite_params, (*RESERVED_AFLITE_PARAMS, "model"))
        if qa and ctx.eval is None:
            check_article_halves(ctx.target)
        return
    if ctx.eval is not None:
        check_adversaries(ctx, adversaries, seeds, aflite_params=aflite_params, view=view)
