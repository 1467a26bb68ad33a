"""The shared paths an audit runs on its feature matrices hold no array-sized temporaries
(issue 24, goal 1: 550k pairs within 8 GiB) and compute what they computed before."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from spurious.exceptions import FeatureError
from spurious.features import pair_features as pf
from spurious.models.torch_loop import zscore
from spurious.stats import bootstrap
from spurious.utils.matrix import all_finite, check_features, condensed_euclidean


def _peak_bytes(fn, *args):
    """Peak bytes numpy allocated while ``fn(*args)`` ran (numpy reports to tracemalloc)."""
    tracemalloc.start()
    try:
        out = fn(*args)
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_zscore_matches_float64_moments_across_blocks():
    rng = np.random.default_rng(0)
    X = (rng.normal(size=(1000, 7)) * [1, 2, 3, 4, 5, 6, 0] + 100).astype(np.float32)
    mean, std = zscore(X, block=64)  # 16 blocks, the last one partial
    X64 = X.astype(np.float64)
    np.testing.assert_allclose(mean, X64.mean(0), rtol=1e-7)
    np.testing.assert_allclose(std[:6], X64.std(0)[:6], rtol=1e-6)
    assert std[6] == 1.0  # a constant column is left unscaled
    assert mean.dtype == std.dtype == np.float32
    m2, s2 = zscore(X, block=10_000)  # one block: the same numbers
    np.testing.assert_allclose(m2, mean, rtol=1e-7)
    np.testing.assert_allclose(s2, std, rtol=1e-7)


def test_zscore_allocates_a_block_not_a_copy():
    X = np.ones((40_000, 256), dtype=np.float32)  # 41 MB
    _, peak = _peak_bytes(zscore, X)
    assert peak < X.nbytes / 3, peak  # one block (~8 MB); X.std(axis=0) made a 41 MB copy


def test_zscore_refuses_no_rows():
    with pytest.raises(ValueError, match="at least one row"):
        zscore(np.zeros((0, 3), dtype=np.float32))


@pytest.mark.parametrize(
    ("value", "expected"),
    [(1.0, True), (np.nan, False), (np.inf, False), (-np.inf, False), (3e38, True)],
)
def test_all_finite_decides_like_isfinite(value, expected):
    X = np.ones((50, 4), dtype=np.float32)
    X[7, 2] = value
    if value == 3e38:
        X[:] = 3e38  # the float32 sum overflows; float64 does not, and the values are finite
    assert all_finite(X) is expected
    assert all_finite(X) == bool(np.isfinite(X).all())


def test_check_features_still_names_the_first_bad_row():
    X = np.ones((10, 3), dtype=np.float32)
    X[4, 1] = np.nan
    X[8, 0] = np.inf
    with pytest.raises(FeatureError, match=r"2 NaN/inf value.*row 4"):
        check_features(X, 10)


def test_all_finite_allocates_nothing_array_sized():
    X = np.ones((20_000, 256), dtype=np.float32)
    ok, peak = _peak_bytes(all_finite, X)
    assert ok and peak < X.nbytes / 8, peak  # np.isfinite(X) holds 5 MB of booleans


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("block_entries", [1, 97, 1 << 23])
def test_condensed_distances_equal_pdist_in_any_blocking(dtype, block_entries):
    from scipy.spatial.distance import pdist

    rng = np.random.default_rng(0)
    X = (rng.normal(size=(61, 7)) * 10 + 100).astype(dtype)  # a large common offset
    X[5] = X[4]  # rounding around a zero distance must not give a NaN
    got = condensed_euclidean(X, block_entries=block_entries)
    want = pdist(X.astype(np.float64))
    assert got.dtype == np.float64 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-5)
    assert np.isfinite(got).all() and got.min() >= 0.0


@pytest.mark.parametrize("n", [0, 1, 2])
def test_condensed_distances_of_few_rows(n):
    X = np.arange(2 * n, dtype=np.float32).reshape(n, 2)
    assert condensed_euclidean(X).tolist() == ([] if n < 2 else [np.sqrt(8.0)])


def test_condensed_distances_hold_one_block_beside_the_result():
    X = np.random.default_rng(0).normal(size=(3000, 16)).astype(np.float32)
    out, peak = _peak_bytes(lambda: condensed_euclidean(X, block_entries=1 << 18))
    # The result (36 MB) and a float64 copy of X (0.4 MB) and one 2 MB block, never n x n.
    assert peak < out.nbytes + 8 * 2**20, (peak, out.nbytes)


def test_pair_features_equal_hstack_across_blocks(monkeypatch):
    monkeypatch.setattr(pf, "_PAIR_BLOCK", 7)
    rng = np.random.default_rng(1)
    tu, tv = (
        rng.normal(size=(30, 5)).astype(np.float32),
        rng.normal(size=(20, 5)).astype(np.float32),
    )
    iu, iv = rng.integers(0, 30, 101), rng.integers(0, 20, 101)
    u, v = tu[iu], tv[iv]
    expected = np.hstack([u, v, np.abs(u - v), u * v])
    out = pf.pair_features(tu, iu, tv, iv)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, expected)  # the same float32 operations: same bits


def test_pair_features_hold_little_beside_the_result(monkeypatch):
    monkeypatch.setattr(pf, "_PAIR_BLOCK", 2048)
    rng = np.random.default_rng(2)
    table = rng.normal(size=(500, 64)).astype(np.float32)
    rows = rng.integers(0, 500, 40_000)
    out, peak = _peak_bytes(pf.pair_features, table, rows, table, rows)
    # The result (41 MB) plus one block's gathers (2 MB); the hstack held u, v, u - v,
    # |u - v| and u * v beside it (+100%).
    assert peak < 1.15 * out.nbytes, (peak, out.nbytes)


def test_bootstrap_batches_give_the_same_interval(monkeypatch):
    x = np.random.default_rng(3).normal(size=3000)
    mean = lambda v, axis=-1: v.mean(axis=axis)  # noqa: E731
    whole = bootstrap.bootstrap_interval(mean, [x], n_resamples=200)
    monkeypatch.setattr(bootstrap, "_MAX_RESAMPLED", 3000 * 7)  # batches of 7 resamples
    batched = bootstrap.bootstrap_interval(mean, [x], n_resamples=200)
    assert batched == whole


@pytest.mark.parametrize("precondition", ["covariance", "pooled"])
def test_hessian_sample_in_chunks_fits_the_same_classifiers(monkeypatch, precondition):
    """AFLite's preconditioner sums its Hessian sample chunk by chunk (at zero, the Gram
    of the covariance start; after the pooled fit, the curvature-weighted products)."""
    pytest.importorskip("torch")
    from spurious.models.batched import BatchedLogisticRegression
    from spurious.models.batched import start as st

    rng = np.random.default_rng(4)
    X = rng.normal(size=(600, 12)).astype(np.float32) + 2.0
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.5, size=600) > 2.0).astype(int)
    y[X[:, 2] > 2.8] = 2
    train_idx = np.stack([rng.choice(600, 300, replace=False) for _ in range(4)])
    model = BatchedLogisticRegression(precondition=precondition, device="cpu")
    whole = model.fit_predict(X, y, train_idx, 3)
    theta_whole = model.coef_.copy() if hasattr(model, "coef_") else None
    monkeypatch.setattr(st, "_HESSIAN_CHUNK", 37)  # many chunks, the last one partial
    chunked = model.fit_predict(X, y, train_idx, 3)
    assert (whole == chunked).mean() > 0.995
    if theta_whole is not None:
        np.testing.assert_allclose(model.coef_, theta_whole, atol=1e-3)


def test_reading_an_input_allocates_its_size_not_the_limit(tmp_path):
    from spurious.utils.io import read_input_bytes

    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"a": 1}\n' * 1000)
    data, peak = _peak_bytes(lambda: read_input_bytes(path, what="DATA"))
    assert data == path.read_bytes()
    assert peak < 1_000_000, peak  # read(limit + 1) allocated the 4 GiB limit up front


def test_an_input_that_grew_past_the_limit_is_refused(tmp_path, monkeypatch):
    import os

    from spurious.exceptions import DataFormatError
    from spurious.utils import io as sio

    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"x" * 100)
    real_fstat = os.fstat
    # The size seen when reading starts is smaller than what is read (the file grew).
    monkeypatch.setattr(
        sio.os, "fstat", lambda fd: os.stat_result((*real_fstat(fd)[:6], 10, *real_fstat(fd)[7:]))
    )
    assert sio.read_input_bytes(path, what="DATA", max_bytes=200) == b"x" * 100
    with pytest.raises(DataFormatError):
        sio.read_input_bytes(path, what="DATA", max_bytes=50)


def test_bootstrap_holds_a_bounded_batch(monkeypatch):
    """1,000 resamples of 30k examples: numpy allocated 480 MB drawn in one batch (a cap
    of 50M values), 240 MB in batches of at most 10M values (the default now)."""
    x = np.random.default_rng(5).normal(size=30_000)
    mean = lambda v, axis=-1: v.mean(axis=axis)  # noqa: E731
    batched, peak = _peak_bytes(bootstrap.bootstrap_interval, mean, [x])
    monkeypatch.setattr(bootstrap, "_MAX_RESAMPLED", 50_000_000)
    whole, peak_whole = _peak_bytes(bootstrap.bootstrap_interval, mean, [x])
    assert batched == whole
    assert peak < 300e6 < peak_whole, (peak, peak_whole)


def test_digests_of_a_strided_view_equal_those_of_its_copy_without_copying_it_whole():
    from spurious.utils.hashing import array_digest, c_order_chunks

    X = np.random.default_rng(0).normal(size=(5000, 64)).astype(np.float32)
    view = X[:, 16:48]  # a column block: not C-contiguous
    assert array_digest(view) == array_digest(np.ascontiguousarray(view))
    assert array_digest(X) == array_digest(X.copy())
    chunks = list(c_order_chunks(view, chunk_bytes=4096))
    assert len(chunks) == -(-5000 // 32)  # 32 rows of 128 bytes a chunk
    assert max(c.nbytes for c in chunks) <= 4096
    assert b"".join(chunks) == np.ascontiguousarray(view).tobytes()
    assert [c.nbytes for c in c_order_chunks(X)] == [X.nbytes]  # contiguous: its own buffer


def test_a_column_block_goes_to_torch_without_a_copy_and_fits_the_same():
    pytest.importorskip("torch")
    from spurious.models.linear import cross_fit_proba, to_torch

    rng = np.random.default_rng(0)
    wide = rng.normal(size=(600, 40)).astype(np.float32)
    block = wide[:, 10:20]  # strided: a one-field view of a pair-feature matrix
    y = (block[:, 0] + 0.3 * rng.normal(size=600) > 0).astype(int)
    assert to_torch(block).data_ptr() == block.ctypes.data  # no copy
    assert to_torch(wide[:, ::2]).is_contiguous()  # other strides are copied
    folds = np.arange(600) % 3
    np.testing.assert_array_equal(
        cross_fit_proba(block, y, folds, 2), cross_fit_proba(block.copy(), y, folds, 2)
    )
