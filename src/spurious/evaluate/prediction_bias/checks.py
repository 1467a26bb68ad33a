"""The inputs of :func:`~spurious.evaluate.prediction_bias.bias_table`, checked.

Every check runs before any bootstrap, in a fixed order, and its error names the
argument: the table's own options (:func:`check_options`), the predictions and the
reference model (:func:`check_predictions`), the heuristics' values matched by id
(:func:`align_attributes`) and the fixed thresholds (:func:`check_thresholds`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from spurious.exceptions import ParameterError, SchemaError
from spurious.utils.validation import Interval, StrOptions, check_params

if TYPE_CHECKING:  # pragma: no cover
    from spurious.data.dataset import Dataset
    from spurious.data.predictions import PredictionSet

__all__ = ["align_attributes", "check_options", "check_predictions", "check_thresholds"]


def check_options(
    *,
    shared_threshold: bool,
    natural: bool,
    min_annotator_coverage: float,
    metric: str | None,
    adapt_sample_size: bool,
    n_permutations: int,
) -> None:
    """The options of the table beyond the bootstrap's (those are checked by the search)."""
    check_params(
        {
            "shared_threshold": ["boolean"],
            "natural": ["boolean"],
            "min_annotator_coverage": [Interval(Real, 0, 1, closed="both")],
            "metric": [StrOptions({"f1", "em", "accuracy"}), None],
            "adapt_sample_size": ["boolean"],
            "n_permutations": [Interval(Integral, 0, None, closed="left")],
        },
        {
            "shared_threshold": shared_threshold,
            "natural": natural,
            "min_annotator_coverage": min_annotator_coverage,
            "metric": metric,
            "adapt_sample_size": adapt_sample_size,
            "n_permutations": n_permutations,
        },
        "bias_table",
    )


def check_predictions(
    dataset: Dataset, predictions: Sequence[PredictionSet], reference: str | None
) -> tuple[list[PredictionSet], list[str], str]:
    """The predictions (at least one, distinct names, aligned to ``dataset``), their
    names and the reference model's name (default: the first)."""
    preds = list(predictions)
    if not preds:
        raise ParameterError("The 'predictions' parameter must hold at least one PredictionSet.")
    names = [p.name for p in preds]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ParameterError(
            f"The 'predictions' must have distinct names; {dup} appear more than once. "
            "Rename the files or pass name= to load_predictions."
        )
    ref = names[0] if reference is None else reference
    if ref not in names:
        raise ParameterError(
            f"The 'reference' parameter must be one of the model names {names}. Got {reference!r}."
        )
    ids = dataset.ids
    for p in preds:
        if len(p.ids) != len(ids) or not np.array_equal(np.asarray(p.ids, dtype=object), ids):
            raise SchemaError(
                f"Predictions {p.name!r} are aligned to different examples than dataset "
                f"{dataset.name!r}; load them with load_predictions(path, dataset)."
            )
    return preds, names, ref


def align_attributes(
    attributes: pd.DataFrame, dataset: Any, heuristics: Sequence[str] | None
) -> tuple[pd.DataFrame, list[str]]:
    """The ``heuristics`` columns of ``attributes`` as floats, in ``dataset``'s order."""
    if not isinstance(attributes, pd.DataFrame) or "id" not in attributes.columns:
        raise ParameterError(
            "The 'attributes' parameter must be a DataFrame with an 'id' column and one "
            f"column per heuristic. Got {type(attributes).__name__}"
            + (
                f" with columns {list(attributes.columns)}."
                if isinstance(attributes, pd.DataFrame)
                else "."
            )
        )
    cols = [c for c in attributes.columns if c != "id"]
    h_names = list(heuristics) if heuristics is not None else cols
    missing_cols = [h for h in h_names if h not in attributes.columns]
    if missing_cols or not h_names:
        raise ParameterError(
            f"The 'heuristics' parameter must name columns of 'attributes' ({cols}). "
            f"Got {list(h_names)}."
        )
    frame = attributes.assign(id=attributes["id"].map(str)).set_index("id")
    if not frame.index.is_unique:
        dup = frame.index[frame.index.duplicated()].unique()
        raise SchemaError(f"'attributes' has duplicated ids, e.g. {list(dup[:5])}.")
    ids = dataset.ids
    missing = [i for i in ids if i not in frame.index]
    if missing:
        raise SchemaError(
            f"'attributes' lacks {len(missing)} of the {len(ids)} ids of {dataset.name!r} "
            f"(e.g. {missing[:5]}); compute the heuristics on the same dataset."
        )
    frame = frame.loc[list(ids), h_names]
    for h in h_names:
        try:
            frame[h] = pd.to_numeric(frame[h], errors="raise").astype(np.float64)
        except (TypeError, ValueError):
            raise SchemaError(
                f"'attributes' column {h!r} must be numeric; got dtype {frame[h].dtype}."
            ) from None
    return frame.reset_index(drop=True), h_names


def check_thresholds(
    thresholds: Mapping[str, float] | None, h_names: Sequence[str]
) -> dict[str, float]:
    """The fixed thresholds, by heuristic; each must name one of ``h_names``."""
    fixed = dict(thresholds or {})
    unknown = sorted(set(fixed) - set(h_names))
    if unknown:
        raise ParameterError(
            f"The 'thresholds' parameter names unknown heuristic(s) {unknown}; heuristics: {h_names}."
        )
    return fixed
