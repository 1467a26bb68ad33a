"""What the ``debiasing`` analysis measures on the evaluation split.

The prediction bias of paper 001 (Alg. 1) of every trained model on every heuristic, at
the threshold the plain model's search found (:func:`plain_thresholds`, fixed across
methods as in the paper; :func:`bias_at`); the per-method table of accuracy, hard and
easy accuracy, bias and training cost (:func:`summarise`); and the hard-subset gain of
the headline, corrected for what a label-blind model gains there by construction
(:func:`chance_correct`, :func:`hard_gain`, :func:`chance_corrected_gain`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from spurious.artifacts.bias import heuristic_sample_size
from spurious.stats.bias_search import prediction_bias, threshold_search

__all__ = [
    "bias_at",
    "chance_correct",
    "chance_corrected_gain",
    "hard_gain",
    "plain_thresholds",
    "summarise",
]


def bias_at(correct, attribute, threshold, n_trials, seed) -> float:
    """Prediction bias of one model's correctness at a fixed threshold (NaN: none usable)."""
    if threshold is None or not np.isfinite(threshold):
        return float("nan")
    res = prediction_bias(
        correct, np.asarray(attribute, dtype=float), threshold=threshold, n_trials=n_trials,
        random_state=seed, sample_size=heuristic_sample_size(attribute),
    )  # fmt: skip
    return float(res.bias)


def plain_thresholds(correct, h_eval, names, n_trials, seed) -> dict[str, float]:
    """Each heuristic's threshold from the plain model's search (paper 001 App. C)."""
    out = {}
    for n in names:
        res = threshold_search(
            correct, h_eval[n].to_numpy(dtype=float), n_trials=n_trials, random_state=seed,
            sample_size=heuristic_sample_size(h_eval[n]),
        )  # fmt: skip
        out[n] = float(res.threshold)
    return out


def summarise(runs, hard, h_eval, names, thresholds, n_trials, seed):
    """Per-method metrics (means and spreads over seeds) and the rows of the method table."""
    metrics: dict[str, float] = {}
    table = []
    # Wall times: the median over seeds, so one run slowed by a busy machine (or paused)
    # does not set a method's cost.
    base_time = np.median([r["train_s"] for r in runs["plain"]])
    for m, rs in runs.items():
        acc = np.array([r["correct"].mean() for r in rs])
        hard_acc = np.array([r["correct"][hard].mean() if hard.any() else np.nan for r in rs])
        easy_acc = np.array([r["correct"][~hard].mean() if (~hard).any() else np.nan for r in rs])
        metrics[f"accuracy_{m}"] = float(acc.mean())
        metrics[f"accuracy_{m}_sd"] = float(acc.std(ddof=1)) if len(acc) > 1 else 0.0
        metrics[f"hard_accuracy_{m}"] = float(np.nanmean(hard_acc))
        metrics[f"hard_accuracy_{m}_sd"] = float(hard_acc.std(ddof=1)) if len(acc) > 1 else 0.0
        metrics[f"easy_accuracy_{m}"] = float(np.nanmean(easy_acc))
        # Wall times go to the table (details), not the metrics: metrics are what a seed
        # reproduces exactly.
        t = float(np.median([r["train_s"] for r in rs]))
        curve = np.mean([r["curve"] for r in rs], axis=0)
        if len(curve):
            metrics[f"epochs_to_best_{m}"] = float(np.argmax(curve >= 0.99 * curve.max()) + 1)
        row = {
            "method": m,
            "accuracy": metrics[f"accuracy_{m}"],
            "accuracy_sd": metrics[f"accuracy_{m}_sd"],
            "hard_accuracy": metrics[f"hard_accuracy_{m}"],
            "hard_accuracy_sd": metrics[f"hard_accuracy_{m}_sd"],
            "train_s": t,
            "cost_ratio": t / base_time if base_time else None,
            "epochs_to_best": metrics.get(f"epochs_to_best_{m}"),
        }
        for h in names:
            values = [
                bias_at(r["correct"], h_eval[h], thresholds.get(h), n_trials, seed) for r in rs
            ]
            finite = [v for v in values if np.isfinite(v)]  # NaN: no usable threshold for h
            metrics[f"bias_{m}_{h}"] = float(np.mean(finite)) if finite else float("nan")
            row[f"bias_{h}"] = metrics[f"bias_{m}_{h}"]
        table.append(row)
    for m in runs:
        for h in names:
            metrics[f"bias_change_{m}_{h}"] = metrics[f"bias_{m}_{h}"] - metrics[f"bias_plain_{h}"]
    return metrics, table


def chance_correct(
    pred: np.ndarray,
    y: np.ndarray,
    hard: np.ndarray,
    n_classes: int,
    bias_pred: np.ndarray | None = None,
) -> np.ndarray:
    """Each row's expected correctness if labels were independent of the inputs.

    The hard subset is usually the bias model's errors, so a model that merely answers
    differently from the bias model gains there by construction (on shuffled labels,
    whatever moves its answers off the bias model's class "helps the hard examples").
    This is what such a label-blind model would get: with ``bias_pred`` (hard = the bias
    model's errors), ``pi(pred) / (1 - pi(b))`` when ``pred != b`` and 0 when it repeats
    the bias model's answer, ``pi`` the evaluation split's label distribution; for a
    given subset, ``pi_H(pred)``, the label distribution within the subset. Rows outside
    ``hard`` get 0.

    Examples
    --------
    Two balanced classes; on a bias error the label is the other class, so answering
    with the other class is right by construction:

    >>> y = np.array([0, 1, 0, 1]); b = np.array([1, 1, 1, 0]); hard = b != y
    >>> chance_correct(np.array([0, 0, 1, 0]), y, hard, 2, b).tolist()
    [1.0, 0.0, 0.0, 0.0]
    """
    out = np.zeros(len(y))
    if bias_pred is not None:
        pi = np.bincount(y, minlength=n_classes) / max(len(y), 1)
        rest = np.clip(1.0 - pi[bias_pred], 1e-12, None)
        e = np.where(pred != bias_pred, pi[pred] / rest, 0.0)
    else:
        pi_h = np.bincount(y[hard], minlength=n_classes) / max(int(hard.sum()), 1)
        e = pi_h[pred]
    out[hard] = e[hard]
    return out


def hard_gain(
    runs: dict[str, list[dict[str, Any]]],
    hard: np.ndarray,
    seed: int,
    n_boot: int = 2000,
    alpha: float = 0.05,
) -> dict[str, Any]:
    """The chance-corrected hard-subset gain of the method with the best lower bound.

    Per hard example, a model's score is its correctness minus its chance correctness
    (``run["chance"]``, :func:`chance_correct`; 0 when absent), averaged over seeds;
    the gain is a method's score minus plain training's (paired: the same examples,
    the same seeds). A percentile bootstrap over the hard examples gives each method's
    interval at level ``1 - alpha / M`` (Bonferroni over the M methods, since the
    headline picks one). Seed-to-seed spread is in ``hard_accuracy_<m>_sd``; with one
    seed the interval reflects the examples only.

    Examples
    --------
    Method ``a`` is right on every hard example plain training gets wrong:

    >>> hard = np.ones(200, dtype=bool)
    >>> half = np.r_[np.ones(100), np.zeros(100)]
    >>> runs = {"plain": [{"correct": half}], "a": [{"correct": np.ones(200)}],
    ...         "b": [{"correct": half}]}
    >>> g = hard_gain(runs, hard, seed=0)
    >>> g["method"], g["best_hard_gain"], bool(0.35 < g["best_hard_gain_low"] < 0.5)
    ('a', 0.5, True)
    """
    methods = [m for m in runs if m != "plain"]
    if not methods or not hard.any():
        return {"best_hard_gain": 0.0, "method": None}

    def score(rs: list[dict[str, Any]], raw: bool = False) -> np.ndarray:
        return np.mean([r["correct"] - (0.0 if raw else r.get("chance", 0.0)) for r in rs], axis=0)[
            hard
        ]

    plain, plain_raw = score(runs["plain"]), score(runs["plain"], raw=True)
    diffs = {m: score(runs[m]) - plain for m in methods}
    rng = np.random.default_rng(seed)
    n = int(hard.sum())
    idx = rng.integers(0, n, size=(n_boot, n), dtype=np.int32)  # the same for every method
    q = alpha / len(methods) / 2
    best: dict[str, Any] = {}
    for m in methods:
        boot = diffs[m][idx].mean(axis=1)
        lo, hi = np.quantile(boot, [q, 1 - q])
        if not best or lo > best["best_hard_gain_low"]:
            best = {
                "best_hard_gain": float(diffs[m].mean()),
                "best_hard_gain_low": float(lo),
                "best_hard_gain_high": float(hi),
                "best_hard_gain_raw": float((score(runs[m], raw=True) - plain_raw).mean()),
                "method": m,
            }
    best["by_method"] = {m: float(d.mean()) for m, d in diffs.items()}
    return best


def chance_corrected_gain(
    runs: dict[str, list[dict[str, Any]]],
    y: np.ndarray,
    hard: np.ndarray,
    n_classes: int,
    bias_pred: np.ndarray | None,
    seed: int,
) -> dict[str, Any]:
    """:func:`hard_gain` after giving every run its chance correctness (``run["chance"]``).

    ``bias_pred``: the bias model's answers when ``hard`` is its errors, ``None`` for a
    subset the user gave (see :func:`chance_correct`).
    """
    for rs in runs.values():
        for r in rs:
            r["chance"] = chance_correct(r["pred"], y, hard, n_classes, bias_pred)
    return hard_gain(runs, hard, seed)
