"""The cross-bias matrix of paper 001 (Fig. 6/7), ``cross_bias=True`` of ``debiasing``.

Each heuristic in turn is the *targeted* bias: its biased segment of the training split
trains the bias model (:func:`~spurious.models.debias.bias.heuristic_bias`) and RESAM
balances it. Every method is trained against that bias on the fast path, and its change
in prediction bias is measured on every heuristic against the plain model's bias.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from spurious.artifacts.bias import heuristic_sample_size, train_heuristic
from spurious.context import RunContext
from spurious.evaluate.debiasing.measures import bias_at
from spurious.evaluate.debiasing.training import fit_fast, resam_rows
from spurious.exceptions import ParameterError
from spurious.models.debias.bias import heuristic_bias, out_of_fold_proba, rescale_bias
from spurious.models.debias.losses import LOSSES

__all__ = ["cross_bias_matrix"]


def cross_bias_matrix(
    ctx: RunContext,
    X: Any,
    y: np.ndarray,
    X_eval: Any,
    y_eval: np.ndarray,
    *,
    h_eval: pd.DataFrame,
    names: Sequence[str],
    thresholds: Mapping[str, float],
    methods: Sequence[str],
    opts: dict[str, Any],
    seed: int,
    metrics: Mapping[str, float],
    loss_params: Mapping[str, dict[str, Any]],
    rescale: Mapping[str, float | None],
    n_trials: int,
) -> dict[str, Any]:
    """Fig. 6/7: rows = targeted heuristic, columns = measured; cells = bias change.

    Parameters
    ----------
    ctx : RunContext
        The run (the targeted heuristic's values on the training split).
    X, y, X_eval, y_eval
        Frozen features and labels of the training and evaluation splits.
    h_eval : pandas.DataFrame
        The measured heuristics on the evaluation split.
    names : sequence of str
        The heuristics, each targeted and each measured.
    thresholds : mapping of str to float
        Each heuristic's threshold from the plain model's search.
    methods : sequence of str
        ``plain`` first; every other method gets a row.
    opts : dict
        Training options of the fast path (``epochs``, ``hidden_size``, ``n_classes``).
    seed : int
    metrics : mapping of str to float
        The analysis's metrics so far (``bias_plain_<h>``, the reference of each change).
    loss_params, rescale : mapping by method
        Explicit loss parameters and the bias probabilities' rescaling bound.
    n_trials : int
        Bootstrap resamples of each prediction-bias estimate.

    Returns
    -------
    dict
        ``{method: {targeted: {measured: bias change}}}``; a targeted heuristic without a
        usable split of the training data has no entry.
    """
    reference = out_of_fold_proba(X, y, random_state=seed, **opts).argmax(1) == y
    matrix: dict[str, dict[str, dict[str, float]]] = {}
    for target in names:
        attr = train_heuristic(ctx, target)
        try:
            b_train, _ = heuristic_bias(
                X, y, attr, reference_correct=reference.astype(float), random_state=seed,
                search_options={"sample_size": heuristic_sample_size(attr)},
                **opts,
            )  # fmt: skip
        except ParameterError:
            continue  # no usable split of this heuristic on the training data
        for m in methods[1:]:
            if m == "resam":
                rows = resam_rows(attr, thresholds.get(target), seed)
                run = fit_fast(X, y, X_eval, y_eval, "plain", None, None, rows, opts, seed)
            else:
                b = rescale_bias(b_train, rescale[m])
                teacher = None
                if LOSSES.get(m).needs_teacher:
                    plain = fit_fast(X, y, X_eval, y_eval, "plain", None, None, None, opts, seed)
                    teacher = plain["model"].predict_proba(X)
                run = fit_fast(X, y, X_eval, y_eval, m, b, teacher, None, opts, seed,
                               loss_params.get(m))  # fmt: skip
            row = matrix.setdefault(m, {}).setdefault(target, {})
            for measured in names:
                value = bias_at(run["correct"], h_eval[measured], thresholds.get(measured),
                                n_trials, seed)  # fmt: skip
                row[measured] = value - metrics.get(f"bias_plain_{measured}", np.nan)
    return matrix
