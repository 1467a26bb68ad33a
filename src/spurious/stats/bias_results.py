"""The types the prediction-bias functions take and return.

:class:`BootstrapOptions` holds the bootstrap and search settings every function of
:mod:`spurious.stats.bias_search` (and
:func:`~spurious.evaluate.prediction_bias.bias_table`) accepts; :class:`GroupStats`,
:class:`BiasResult` and :class:`NaturalBiasResult` are what they return: one side of a
split, one model's bias at one threshold, and the minimum over annotators. They are
re-exported by :mod:`spurious.stats.bias_search`, where users import them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from numbers import Real
from typing import Any

import pandas as pd

from spurious.stats.split_bootstrap import check_bootstrap_params
from spurious.utils.validation import Interval, check_params

__all__ = ["BiasResult", "BootstrapOptions", "GroupStats", "NaturalBiasResult"]

_STEP_CONSTRAINTS: dict[str, list[Any]] = {
    "step": [Interval(Real, 0, None, closed="neither"), None],
}


@dataclass(frozen=True)
class BootstrapOptions:
    """The bootstrap and search settings every prediction-bias function takes.

    :func:`~spurious.stats.bias_search.prediction_bias`,
    :func:`~spurious.stats.bias_search.threshold_search`,
    :func:`~spurious.stats.bias_search.natural_bias` and
    :func:`~spurious.evaluate.prediction_bias.bias_table` accept these as keyword
    arguments (``**options``), check them once and record them in their results.

    Attributes
    ----------
    n_trials : int, default=100
        Bootstrap resamples per group.
    sample_size : int, default=800
        Examples drawn per resample.
    quantiles : (float, float), default=(0.025, 0.975)
        ``(q_low, q_high)`` of the bootstrap means.
    step : float, optional
        Search grid step (default 1, or 0.1 for attributes within ``[0, 1]``); no
        effect at a fixed threshold.
    replace : bool, default=True
        Draw with replacement (a bootstrap). ``False`` draws ``sample_size`` distinct
        examples, as the authors' code does; it needs groups of at least that size.
    random_state : int or None, default=0
        Seed of the resampling.

    Examples
    --------
    >>> BootstrapOptions(n_trials=20).checked()
    {'n_trials': 20, 'sample_size': 800, 'quantiles': (0.025, 0.975), 'random_state': 0, 'replace': True, 'step': None}
    """

    n_trials: int = 100
    sample_size: int = 800
    quantiles: tuple[float, float] = (0.025, 0.975)
    step: float | None = None
    replace: bool = True
    random_state: int | None = 0

    def checked(self) -> dict[str, Any]:
        """The options validated and normalised (plain ints, a float pair), as a dict."""
        params = check_bootstrap_params(
            self.n_trials,
            self.sample_size,
            self.quantiles,
            self.random_state,
            self.replace,
            owner="prediction_bias",
        )
        check_params(_STEP_CONSTRAINTS, {"step": self.step}, "prediction_bias")
        return {**params, "step": None if self.step is None else float(self.step)}


@dataclass(frozen=True)
class GroupStats:
    """One side of a split: its size, mean score and bootstrap interval.

    Attributes
    ----------
    n : int
        Examples in the group.
    mean : float
        Mean per-example score over the whole group (the group's performance).
    boot_mean : float
        Mean of the bootstrap means.
    ci_low, ci_high : float
        The ``q_low`` / ``q_high`` quantiles of the bootstrap means (``E^down``, ``E^up``).
    """

    n: int
    mean: float
    boot_mean: float
    ci_low: float
    ci_high: float


@dataclass
class BiasResult:
    """Prediction bias of one model for one heuristic at one threshold.

    Attributes
    ----------
    bias : float
        ``max(0, margin)``, in the metric's units (``[0, 1]``). NaN when no threshold
        gives two groups large enough to bootstrap.
    margin : float
        ``max(E1_low - E2_high, E2_low - E1_high)``; negative when the intervals overlap.
    threshold : float
        ``T``: the low group is ``attribute <= T``, the high group ``attribute > T``.
    low, high : GroupStats
        The groups ``X1`` (``<= T``) and ``X2`` (``> T``).
    valid : bool
        Both groups hold at least ``2 * sample_size`` examples.
    validity : {"strict", "relaxed", "fixed", "invalid"}
        How the threshold was chosen: a valid search candidate, the relaxed rule (groups
        of at least ``sample_size``), given by the caller, or no usable candidate.
    n_excluded : int
        Examples left out because their attribute or score is missing (NaN).
    curve : pandas.DataFrame or None
        Threshold search only: one row per candidate (``threshold``, ``n_low``,
        ``n_high``, ``low_mean``, ``low_ci_low``, ``low_ci_high``, ``high_mean``,
        ``high_ci_low``, ``high_ci_high``, ``margin``, ``bias``, ``valid``); bootstrap
        columns are NaN where a group is smaller than ``sample_size``.
    params : dict
        The bootstrap settings.
    """

    bias: float
    margin: float
    threshold: float
    low: GroupStats
    high: GroupStats
    valid: bool
    validity: str
    n_excluded: int = 0
    curve: pd.DataFrame | None = None
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def worse_group(self) -> str | None:
        """``"low"`` or ``"high"``: the group with the lower mean score."""
        if not (math.isfinite(self.low.mean) and math.isfinite(self.high.mean)):
            return None
        return "low" if self.low.mean < self.high.mean else "high"

    @property
    def worse_performance(self) -> float:
        """Mean score of the worse group (the paper reports it beside the bias)."""
        g = self.worse_group
        return float("nan") if g is None else getattr(self, g).mean

    @property
    def gap(self) -> float:
        """Signed difference of the group means, ``low.mean - high.mean``."""
        return self.low.mean - self.high.mean

    def to_dict(self, curve: bool = False) -> dict[str, Any]:
        """A flat JSON-ready summary (the curve as a list of records when ``curve``)."""
        out: dict[str, Any] = {
            "bias": self.bias,
            "margin": self.margin,
            "threshold": self.threshold,
            "valid": self.valid,
            "validity": self.validity,
            "worse_group": self.worse_group,
            "worse_performance": self.worse_performance,
            "gap": self.gap,
            "n_excluded": self.n_excluded,
        }
        for side in ("low", "high"):
            for k, v in asdict(getattr(self, side)).items():
                out[f"{side}_{k}" if k != "n" else f"n_{side}"] = v
        if curve and self.curve is not None:
            out["curve"] = self.curve.to_dict(orient="list")
        return out


@dataclass
class NaturalBiasResult:
    """Natural ("human") prediction bias: the minimum over annotators.

    Attributes
    ----------
    bias : float
        ``min_k bias_k`` over the annotators used.
    annotator : int or None
        Index of the annotator reaching the minimum.
    per_annotator : dict of int to BiasResult
        Each annotator's prediction bias at the same threshold.
    """

    bias: float
    annotator: int | None
    per_annotator: dict[int, BiasResult]

    @property
    def worse_performance(self) -> float:
        """The worse group's mean score of the annotator reaching the minimum."""
        if self.annotator is None:
            return float("nan")
        return self.per_annotator[self.annotator].worse_performance
