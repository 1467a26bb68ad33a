"""spurious.stats: the bootstrap of threshold splits (known answers, draws, validation)."""

from __future__ import annotations

import numpy as np
import pytest

from spurious.evaluate.prediction_bias import prediction_bias
from spurious.exceptions import ParameterError
from spurious.stats import SplitBootstrap, bootstrap_interval, safe_ratio, split_bootstrap

FAST = {"n_trials": 50, "sample_size": 200}


def test_group_sizes_and_means_are_exact() -> None:
    attr = np.array([3.0, 1.0, 2.0, 2.0, 5.0, 4.0])
    values = np.array([[1.0, 0.0, 1.0, 0.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0, 1.0, 1.0]])
    sb = split_bootstrap(values, attr, [1.0, 2.0, 4.5], n_trials=10, sample_size=3)
    assert isinstance(sb, SplitBootstrap)
    assert sb.n_low.tolist() == [1, 3, 5] and sb.n_high.tolist() == [5, 3, 1]
    np.testing.assert_array_equal(sb.low_mean, [[0.0, 1 / 3, 0.6], [0.0, 0.0, 0.2]])
    np.testing.assert_array_equal(sb.high_mean, [[0.8, 1.0, 1.0], [0.4, 2 / 3, 1.0]])


def test_constant_groups_give_exact_intervals_and_margin() -> None:
    attr = np.arange(1000) % 10
    sb = split_bootstrap((attr <= 4).astype(float), attr, [4.0], **FAST)
    assert sb.low_q[0, 0].tolist() == [1.0, 1.0] and sb.high_q[0, 0].tolist() == [0.0, 0.0]
    assert sb.low_boot[0, 0] == 1.0 and sb.high_boot[0, 0] == 0.0
    assert sb.margin.tolist() == [[1.0]]  # intervals 1 apart: bias 1


def test_overlapping_intervals_give_a_negative_margin() -> None:
    rng = np.random.default_rng(0)
    attr = rng.integers(0, 2, 4000).astype(float)
    same = (rng.random(4000) < 0.5).astype(float)  # no dependence on the attribute
    sb = split_bootstrap(same, attr, [0.0], **FAST)
    assert sb.margin[0, 0] < 0


def test_is_the_core_of_prediction_bias_with_the_same_draws() -> None:
    rng = np.random.default_rng(1)
    attr = rng.integers(0, 10, 3000).astype(float)
    correct = (rng.random(3000) < np.where(attr > 6, 0.4, 0.8)).astype(float)
    sb = split_bootstrap(correct, attr, [2.0, 6.0], random_state=7, **FAST)
    res = prediction_bias(correct, attr, 6.0, random_state=7, **FAST)
    assert res.low.ci_low == sb.low_q[0, 1, 0] and res.high.ci_high == sb.high_q[0, 1, 1]
    assert res.margin == sb.margin[0, 1]


def test_common_random_numbers_across_rows_and_thresholds() -> None:
    rng = np.random.default_rng(2)
    attr = rng.random(2000)
    a, b = (rng.random(2000) < 0.7).astype(float), (rng.random(2000) < 0.3).astype(float)
    both = split_bootstrap(np.vstack([a, b]), attr, [0.3, 0.6], **FAST)
    only_b = split_bootstrap(b, attr, [0.6], **FAST)
    # Row b at T=0.6 gets the same draws alone or beside row a and another threshold.
    np.testing.assert_array_equal(both.low_q[1, 1], only_b.low_q[0, 0])
    np.testing.assert_array_equal(both.high_boot[1, 1], only_b.high_boot[0, 0])


def test_small_groups_and_masked_thresholds_stay_nan() -> None:
    attr = np.arange(100, dtype=float)
    values = np.ones(100)
    sb = split_bootstrap(values, attr, [4.0, 50.0, 90.0], n_trials=5, sample_size=20, min_size=20)
    assert np.isnan(sb.low_q[0, 0]).all() and np.isfinite(sb.low_q[0, 1]).all()
    assert np.isnan(sb.high_q[0, 2]).all()
    masked = split_bootstrap(
        values, attr, [40.0, 50.0], n_trials=5, sample_size=20, only=[True, False]
    )
    assert np.isfinite(masked.low_boot[0, 0]) and np.isnan(masked.low_boot[0, 1])
    # Without replacement a group needs sample_size distinct examples.
    no_rep = split_bootstrap(values, attr, [10.0, 50.0], n_trials=5, sample_size=20, replace=False)
    assert np.isnan(no_rep.low_boot[0, 0]) and no_rep.low_boot[0, 1] == 1.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_trials": 1}, r"'n_trials' parameter of split_bootstrap must be an int"),
        ({"sample_size": 0}, r"'sample_size' parameter of split_bootstrap"),
        ({"quantiles": (0.9, 0.1)}, r"0 <= q_low < q_high <= 1"),
        ({"quantiles": 0.5}, r"must be a pair"),
        ({"random_state": np.random.RandomState(0)}, r"must be an int or None"),
        ({"only": [True]}, r"'only' must have one entry per threshold"),
    ],
)
def test_bad_parameters_are_refused(kwargs: dict, match: str) -> None:
    with pytest.raises(ParameterError, match=match):
        split_bootstrap(np.ones(10), np.arange(10.0), [4.0, 5.0], **kwargs)


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ParameterError, match="shape"):
        split_bootstrap(np.ones((2, 5)), np.arange(4.0), [1.0])
    with pytest.raises(ParameterError, match="free of NaN"):
        split_bootstrap(np.array([1.0, np.nan]), np.arange(2.0), [0.0])


def test_paired_bootstrap_interval_and_safe_ratio() -> None:
    est, lo, hi = bootstrap_interval(
        lambda a, b, axis=-1: safe_ratio(a.mean(axis=axis), b.mean(axis=axis)),
        [np.ones(100), np.full(100, 2.0)],
        n_resamples=50,
    )
    assert (est, lo, hi) == (0.5, 0.5, 0.5)
    assert np.isnan(safe_ratio(1.0, 0.0))


@pytest.mark.parametrize("fn", ["bootstrap_interval", "bootstrap_of_means"])
def test_large_bootstraps_run_in_batches_with_the_same_interval(monkeypatch, fn):
    import spurious.stats.bootstrap as boot

    x = np.random.default_rng(0).normal(size=5000)  # continuous: resamples the rows
    stat = (lambda a, axis=-1: a.mean(axis=axis)) if fn == "bootstrap_interval" else (lambda m: m)
    whole = getattr(boot, fn)(stat, [x], n_resamples=400, random_state=1)
    monkeypatch.setattr(boot, "_MAX_RESAMPLED", 5000 * 7)  # batches of 7 resamples
    batched = getattr(boot, fn)(stat, [x], n_resamples=400, random_state=1)
    assert batched[0] == whole[0]
    se = x.std() / np.sqrt(len(x))
    # Same bootstrap law, drawn in pieces: the bounds agree within Monte-Carlo error.
    assert abs(batched[1] - whole[1]) < 0.5 * se and abs(batched[2] - whole[2]) < 0.5 * se
    assert batched[1] < x.mean() < batched[2]
