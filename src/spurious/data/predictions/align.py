"""Alignment of ``{id: prediction}`` to a dataset's rows: coverage, missing ids, values.

:func:`align_predictions` checks that the predicted ids are the dataset's (an unknown id
is an error; a missing one is scored as wrong unless ``on_missing="error"``) and builds
the :class:`~spurious.data.predictions.PredictionSet` in the dataset's row order.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np

from spurious.data.dataset import Dataset
from spurious.data.predictions.base import KINDS, PredictionSet, check_choice
from spurious.data.predictions.kinds import infer_kind, prediction_values, warn_if_gold
from spurious.exceptions import SchemaError

# The logger keeps the name it had before predictions.py became a package, so logging
# configuration that targets it (and the CLI's "%(name)s" prefix) is unchanged.
logger = logging.getLogger("spurious.data.predictions")

__all__ = ["align_predictions"]

#: Ids shown in a mismatch error.
_SHOW = 5


def align_predictions(
    predictions: Mapping[Any, Any],
    dataset: Dataset,
    *,
    name: str = "model",
    source: str | None = None,
    on_missing: str = "wrong",
    kind: str = "auto",
) -> PredictionSet:
    """Align ``{id: prediction}`` to ``dataset``'s row order.

    Parameters
    ----------
    predictions : mapping
        Example id -> answer text (QA) or label name / label id (classification), a
        correctness flag (``kind="correctness"``; JSON booleans are recognised), or
        probabilities (a list in the dataset's label order or ``{label: p}``).
        Ids are compared as strings. Multiple choice (task ``mcq``): a letter or 0-based
        option index within the item's options, or a list of per-option scores of the
        item's own length (``{letter: score}`` too); see :func:`load_predictions`.
    dataset : Dataset
    name : str
        Model name.
    source : str, optional
        Where the predictions came from (recorded only).
    on_missing : {"wrong", "error"}, default="wrong"
        Dataset examples without a prediction: ``"wrong"`` scores them as wrong (an
        always-wrong value, flagged in :attr:`PredictionSet.missing`) and logs a warning
        with their count, as the official SQuAD v1.1 evaluator scores an unanswered
        question 0; ``"error"`` raises :class:`~spurious.exceptions.SchemaError`. A
        prediction whose id is not in the dataset, or a file that covers none of the
        dataset's ids (the wrong file), is an error either way.
    kind : {"auto", "labels", "correctness", "probabilities"}, default="auto"
        See :func:`load_predictions`.

    Returns
    -------
    PredictionSet

    Examples
    --------
    >>> import pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({"id": [1, 2], "text": ["good", "bad"],
    ...                                        "label": ["pos", "neg"]}), "text")
    >>> align_predictions({"1": "pos", "2": 1}, ds).values.tolist()  # names or ids
    [1, 1]
    >>> p = align_predictions({"1": "pos"}, ds)  # id 2 unanswered: scored as wrong
    >>> p.values.tolist(), p.missing.tolist(), p.n_missing
    ([1, -1], [False, True], 1)
    >>> align_predictions({"1": True, "2": False}, ds).values.tolist()  # correctness
    [1, -1]
    >>> p = align_predictions({"1": [0.2, 0.8], "2": [0.9, 0.1]}, ds)  # label order neg, pos
    >>> p.kind, p.values.tolist()
    ('probabilities', [1, 0])

    Multiple choice: letters, indices or per-option log-probabilities, per item:

    >>> mc = Dataset.from_frame(pd.DataFrame({"id": ["q1", "q2"], "question": ["?", "?"],
    ...     "options": [["x", "y", "z"], ["u", "v"]], "label": ["B", "A"]}), "mcq")
    >>> align_predictions({"q1": "C", "q2": 0}, mc).values.tolist()
    [2, 0]
    >>> p = align_predictions({"q1": [-2.0, -0.1, -3.0], "q2": [-0.6, -0.8]}, mc)
    >>> p.values.tolist(), p.probabilities.shape
    ([1, 0], (2, 3))
    """
    check_choice("on_missing", on_missing, ("wrong", "error"), "align_predictions")
    check_choice("kind", kind, KINDS, "align_predictions")
    mapping = {str(k): v for k, v in predictions.items()}
    if len(mapping) != len(predictions):
        raise SchemaError(
            f"Predictions {name!r}: ids are duplicated once converted to strings "
            f"({len(predictions)} keys, {len(mapping)} distinct)."
        )
    ids = dataset.ids
    missing = [i for i in ids if i not in mapping]
    _check_coverage(mapping, ids, missing, dataset, name, on_missing)
    is_missing = np.fromiter((i not in mapping for i in ids), dtype=bool, count=len(ids))
    if missing:
        logger.warning(
            "Predictions %r: %d of the %d example(s) of %r have no prediction (e.g. %s); "
            "they are scored as wrong, as the official SQuAD evaluator scores an unanswered "
            "question 0 (on_missing='error' refuses such files).",
            name,
            len(missing),
            len(ids),
            dataset.name,
            missing[:_SHOW],
        )
    present = np.flatnonzero(~is_missing)
    raw = [mapping[ids[j]] for j in present]
    if kind == "auto":
        kind = infer_kind(raw)
    values, probs = prediction_values(raw, present, ids, dataset, name, kind)
    warn_if_gold(values, present, dataset, name, kind)
    return PredictionSet(
        name=name,
        values=values,
        ids=ids.copy(),
        source=source,
        missing=is_missing,
        kind=kind,
        probabilities=probs,
    )


def _check_coverage(
    mapping: Mapping[str, Any],
    ids: np.ndarray,
    missing: list[str],
    dataset: Dataset,
    name: str,
    on_missing: str,
) -> None:
    """Raise when a predicted id is unknown, none is covered, or (``"error"``) some are missing."""
    id_set = set(ids)
    extra = [k for k in mapping if k not in id_set]
    if extra or len(missing) == len(ids) > 0 or (missing and on_missing == "error"):
        parts = []
        if missing:
            parts.append(
                f"{len(missing)} of the dataset's {len(ids)} id(s) have no prediction "
                f"(e.g. {missing[:_SHOW]})"
            )
        if extra:
            parts.append(
                f"{len(extra)} predicted id(s) are not in the dataset (e.g. {extra[:_SHOW]})"
            )
        hint = (
            "Predictions must cover exactly the dataset's examples (on_missing='error')."
            if on_missing == "error" and not extra and len(missing) < len(ids)
            else "Every predicted id must be an example of the dataset; are these the "
            "predictions for another dataset? Without an id column the dataset's ids are "
            "content hashes (list them with `spurious ids DATA --task ...`); a file in the "
            "dataset's row order can be aligned with align='rows' (--align rows)."
        )
        raise SchemaError(
            f"Predictions {name!r} do not match dataset {dataset.name!r}: "
            + "; ".join(parts)
            + ". "
            + hint
        )
