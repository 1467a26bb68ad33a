"""What one AFLite run filters with: the sizes, the feature matrices and the groups.

:func:`resolve_sizes` turns ``train_size`` / ``slice_size`` / ``target_size`` into the
paper's (t, k, n) against the initial size, with the errors a user can act on;
:func:`filter_features` builds (or checks) the feature matrices of the training split
and, in evaluation-set mode, of the evaluation split; :func:`group_codes` and
:func:`stack_splits` give the loop its group codes and its one active matrix.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from spurious.context import RunContext
from spurious.data.dataset import Dataset
from spurious.detectors.aflite.algorithm import resolve_size
from spurious.exceptions import AnalysisError, ParameterError
from spurious.features import check_features, make_featurizer
from spurious.views import get_view


def is_array_features(features: Any) -> bool:
    """``True`` when ``features`` is a matrix (or a pair of them), not a featurizer spec."""
    f = features
    return isinstance(f, np.ndarray) or sp.issparse(f) or isinstance(f, tuple)


def resolve_sizes(
    train_size: int | float,
    slice_size: int | float,
    target_size: int | float | None,
    selection: str,
    n0: int,
    n_classes: int,
) -> tuple[int, int, int]:
    """(t, k, n) resolved against the initial size ``n0``; clear errors when unusable."""
    t = resolve_size(train_size, n0, "train_size")
    k = 1 if selection == "greedy_one" else resolve_size(slice_size, n0, "slice")
    n = resolve_size(target_size, n0, "target_size")
    if t < max(n_classes, 2):
        raise AnalysisError(
            f"train_size resolves to t={t} training examples per classifier for a dataset "
            f"of {n0}; at least {max(n_classes, 2)} (one per class) are needed. Pass a "
            "larger train_size (an int is an absolute count)."
        )
    if n0 - t < 1:
        raise AnalysisError(
            f"train_size t={t} leaves no held-out examples in a dataset of {n0} "
            f"(|S| - t = {n0 - t}); AFLite needs t < |D|."
        )
    if n is None:
        n = t
    elif n >= n0:
        # Filtering stops once at most n examples remain: n >= |D| runs no round and would
        # report "nothing predictable" without having looked.
        raise ParameterError(
            f"The 'target_size' parameter (--target-size) resolves to n={n}, but the data "
            f"hold |D|={n0} examples: AFLite stops when at most n remain, so it would run no "
            f"round. Pass a target size below {n0} (or leave it out: tau decides)."
        )
    elif n <= t:
        raise AnalysisError(
            f"target_size n={n} must be larger than train_size t={t} (Algorithm 1 needs "
            "t < n: every classifier must hold out at least one example)."
        )
    return t, k, n


def filter_features(
    ctx: RunContext, features: Any, view_name: str, eval_mode: bool
) -> tuple[Any, Any | None, dict[str, Any]]:
    """``(X_train, X_eval or None, featurizer config)`` of the representation filtered with."""
    train = ctx.train
    eval_dataset = ctx.eval if eval_mode else None
    view = get_view(train.task, view_name)
    f = features
    if isinstance(f, tuple):
        if eval_dataset is None or len(f) != 2:
            raise ParameterError(
                "The 'features' parameter as a tuple must be (X_train, X_eval) and needs "
                f"mode='eval' with an evaluation split. Got a tuple of {len(f)} with "
                f"{'an' if eval_dataset is not None else 'no'} evaluation split."
            )
        X_tr = check_features(f[0], len(train), "features[0] (training split)")
        X_ev = check_features(f[1], len(eval_dataset), "features[1] (evaluation split)")
        return X_tr, X_ev, {"featurizer": "arrays"}
    if isinstance(f, np.ndarray) or sp.issparse(f):
        if eval_dataset is not None:
            raise ParameterError(
                "With an evaluation split, pass features=(X_train, X_eval) or a "
                "PrecomputedFeaturizer with ids; a single matrix covers one split."
            )
        return check_features(f, len(train), "features"), None, {"featurizer": "array"}
    # Through the run context: a representation another analysis of the run already
    # built (same featurizer and view) is reused, not recomputed.
    X_tr = ctx.features(f, view.name, split="train")
    X_ev = None if eval_dataset is None else ctx.features(f, view.name, split="eval")
    return X_tr, X_ev, make_featurizer(f).config()


def group_codes(dataset: Dataset, group_by: str | None) -> np.ndarray:
    """Dense int codes of the rows' groups (every row its own group without ``group_by``)."""
    groups = dataset.group_keys(group_by)
    return (
        pd.factorize(pd.Series(groups, dtype=object))[0].astype(np.int64)
        if groups is not None
        else np.arange(len(dataset), dtype=np.int64)
    )


def stack_splits(
    X_tr: Any, X_ev: Any | None, dataset: Dataset, eval_dataset: Dataset | None
) -> tuple[Any, np.ndarray]:
    """The active rows' matrix and labels: the training rows, then the evaluation rows."""
    if X_ev is not None:
        X = sp.vstack([X_tr, X_ev], format="csr") if sp.issparse(X_tr) else np.vstack([X_tr, X_ev])
        y = np.concatenate([dataset.labels, eval_dataset.labels])
    else:
        # A writable copy: some model families (torch) refuse read-only label arrays.
        X, y = X_tr, np.array(dataset.labels, dtype=np.int64)
    return X, y
