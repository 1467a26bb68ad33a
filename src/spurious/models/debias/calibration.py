"""Calibration of a bias model: expected calibration error, NLL and temperature scaling.

A debiasing objective reads the bias model's *probabilities*, not only its argmax, so an
overconfident bias model (probability ~1 on rows it gets wrong) makes product of experts
and LearnedMixin push the main model away from the right answer there (paper 001 App.
B.2.1; Xiong et al. 2021 find that a better calibrated bias model helps). Temperature
scaling (Guo et al. 2017) fits one scalar ``T`` on held-out predictions by minimising
their negative log-likelihood and divides the log-probabilities by it; ``T > 1`` flattens
an overconfident model and leaves its argmax, hence its accuracy, unchanged.
"""

from __future__ import annotations

import numpy as np

from spurious.exceptions import ParameterError

__all__ = [
    "apply_temperature",
    "calibration_metrics",
    "expected_calibration_error",
    "fit_temperature",
    "negative_log_likelihood",
]

#: Smallest probability inside a log (a model may output exact zeros).
_EPS = 1e-12


def _check(probs: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(probs, dtype=np.float64)
    labels = np.asarray(y)
    if p.ndim != 2 or p.shape[0] != labels.shape[0] or p.shape[0] == 0:
        raise ParameterError(
            f"'probs' must have shape (n, C) with n = len(y) = {labels.shape[0]} > 0; got "
            f"{p.shape}."
        )
    if labels.min() < 0 or labels.max() >= p.shape[1]:
        raise ParameterError(
            f"'y' must hold class indices in [0, {p.shape[1] - 1}]; got values from "
            f"{labels.min()} to {labels.max()}."
        )
    return p, labels.astype(np.int64)


def expected_calibration_error(probs: np.ndarray, y: np.ndarray, n_bins: int = 15) -> float:
    """Expected calibration error of the top-label confidence (Guo et al. 2017).

    Rows are binned by their largest probability into ``n_bins`` equal-width bins of
    (0, 1] (a confidence on an edge goes to the lower bin); ECE is the mean over rows of
    ``|accuracy(bin) - mean confidence(bin)|``, i.e. the bins' gaps weighted by their
    share of rows.

    Examples
    --------
    Two rows at confidence 0.9 (one right) and two at 0.6 (both right): the gaps are
    |0.5 - 0.9| and |1.0 - 0.6|, each on half the rows.

    >>> p = np.array([[0.9, 0.1], [0.9, 0.1], [0.4, 0.6], [0.4, 0.6]])
    >>> round(expected_calibration_error(p, np.array([0, 1, 1, 1]), n_bins=10), 6)
    0.4
    """
    p, labels = _check(probs, y)
    if n_bins < 1:
        raise ParameterError(f"The 'n_bins' argument must be an int >= 1; got {n_bins!r}.")
    conf = p.max(axis=1)
    correct = (p.argmax(axis=1) == labels).astype(float)
    # Bin b holds confidences in (b / n_bins, (b + 1) / n_bins]; 0 goes to the first bin.
    bins = np.clip(np.ceil(conf * n_bins).astype(int) - 1, 0, n_bins - 1)
    total = 0.0
    for b in np.unique(bins):
        rows = bins == b
        total += rows.sum() * abs(correct[rows].mean() - conf[rows].mean())
    return float(total / len(labels))


def negative_log_likelihood(probs: np.ndarray, y: np.ndarray) -> float:
    """Mean ``-log p(gold)`` (natural log; probabilities clipped at 1e-12).

    Examples
    --------
    >>> round(negative_log_likelihood(np.array([[0.5, 0.5], [0.9, 0.1]]), np.array([0, 0])), 4)  # (ln 2 - ln 0.9) / 2
    0.3993
    """
    p, labels = _check(probs, y)
    return float(-np.log(np.clip(p[np.arange(len(labels)), labels], _EPS, None)).mean())


def apply_temperature(probs: np.ndarray, temperature: float) -> np.ndarray:
    """``softmax(log p / T)`` row-wise: ``T > 1`` flattens, ``T < 1`` sharpens.

    Examples
    --------
    >>> apply_temperature(np.array([[0.8, 0.2]]), 1.0).round(6).tolist()
    [[0.8, 0.2]]
    >>> apply_temperature(np.array([[0.8, 0.2]]), 2.0).round(4).tolist()  # sqrt(.8), sqrt(.2)
    [[0.6667, 0.3333]]
    """
    if not np.isfinite(temperature) or temperature <= 0:
        raise ParameterError(f"The 'temperature' must be a float > 0; got {temperature!r}.")
    logp = np.log(np.clip(np.asarray(probs, dtype=np.float64), _EPS, None)) / float(temperature)
    logp -= logp.max(axis=1, keepdims=True)
    out = np.exp(logp)
    return out / out.sum(axis=1, keepdims=True)


def fit_temperature(
    probs: np.ndarray, y: np.ndarray, *, bounds: tuple[float, float] = (0.05, 20.0)
) -> float:
    """The temperature ``T`` that minimises the NLL of ``softmax(log p / T)`` on ``(probs, y)``.

    ``probs`` must be held-out predictions (out-of-fold on the training split): fitted on
    the rows a model trained on, ``T`` would keep its overconfidence. The NLL is convex
    in ``1 / T``; a bounded scalar search over ``log T`` finds its minimum.

    Examples
    --------
    A model that says 0.95 but is right 70% of the time needs ``T > 1``:

    >>> p = np.tile([0.95, 0.05], (10, 1)); y = np.array([0] * 7 + [1] * 3)
    >>> t = fit_temperature(p, y)
    >>> bool(t > 1), round(float(apply_temperature(p, t)[0, 0]), 3)
    (True, 0.7)
    """
    from scipy.optimize import minimize_scalar

    p, labels = _check(probs, y)
    logp = np.log(np.clip(p, _EPS, None))

    def nll(log_t: float) -> float:
        z = logp / np.exp(log_t)
        z = z - z.max(axis=1, keepdims=True)
        log_norm = np.log(np.exp(z).sum(axis=1))
        return float((log_norm - z[np.arange(len(labels)), labels]).mean())

    lo, hi = np.log(bounds[0]), np.log(bounds[1])
    res = minimize_scalar(nll, bounds=(lo, hi), method="bounded", options={"xatol": 1e-6})
    return float(np.exp(res.x))


def calibration_metrics(probs: np.ndarray, y: np.ndarray, n_bins: int = 15) -> dict[str, float]:
    """Accuracy, mean top-label confidence, ECE and NLL of ``probs`` against ``y``.

    Examples
    --------
    >>> m = calibration_metrics(np.array([[0.9, 0.1], [0.2, 0.8]]), np.array([0, 0]))
    >>> m["accuracy"], round(m["confidence"], 2)
    (0.5, 0.85)
    """
    p, labels = _check(probs, y)
    return {
        "accuracy": float((p.argmax(axis=1) == labels).mean()),
        "confidence": float(p.max(axis=1).mean()),
        "ece": expected_calibration_error(p, labels, n_bins),
        "nll": negative_log_likelihood(p, labels),
    }
