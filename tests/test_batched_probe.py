"""BatchedLogisticRegression: AFLite's batched model family agrees with scikit-learn.

The reference is what public AFLite code runs per partition, but converged: a fresh
``LogisticRegression(C=C)`` fitted on each partition's rows, in float64 and to a tiny
tolerance, predicting the rows it did not train on.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

from spurious.exceptions import FeatureError, LabelError, ParameterError
from spurious.models.batched import CONVERGED, BatchedLogisticRegression
from spurious.models.partition import PartitionModel


def aflite_like(n=3000, d=64, k=3, artifact_frac=0.15, seed=0):
    """Embedding-like features (power-law spectrum, random rotation), modest class means,
    and an artifact subset of easy rows (a strong class-specific shift)."""
    rng = np.random.default_rng(seed)
    std = np.arange(1, d + 1) ** -0.5
    y = rng.integers(0, k, size=n)
    means = rng.normal(size=(k, d)) * std * (1.5 / np.sqrt(2 * d))
    z = rng.normal(size=(n, d)) * std + means[y]
    artifact = rng.random(n) < artifact_frac
    dirs = rng.choice(d, size=3, replace=False)
    shift = np.zeros((k, d))
    shift[:, dirs] = rng.normal(size=(k, 3)) * 1.5 * std[dirs]
    z[artifact] += shift[y[artifact]]
    rot = np.linalg.qr(rng.normal(size=(d, d)))[0]
    X = (z @ rot.T + 0.3 * rng.normal(size=d) * std[0]).astype(np.float32)
    flip = rng.random(n) < 0.05
    y[flip] = rng.integers(0, k, size=int(flip.sum()))
    return X, y.astype(np.int64), artifact


def partitions(n, m, t, seed=1):
    rng = np.random.default_rng(seed)
    return np.stack([np.sort(rng.choice(n, size=t, replace=False)) for _ in range(m)])


def predictability(pred, y, train_idx):
    """p(i) = correct held-out predictions / times held out."""
    m, n = pred.shape
    held = np.ones((m, n), dtype=bool)
    held[np.arange(m)[:, None], train_idx] = False
    return ((pred == y) & held).sum(0) / np.maximum(held.sum(0), 1)


def top_k(p, k, tau=0.75):
    """AFLite's slice: up to k rows of highest p with p >= tau (ties by row index)."""
    order = np.argsort(-p, kind="stable")[:k]
    return set(order[p[order] >= tau].tolist())


def sklearn_predictions(X, y, train_idx, C=1.0):
    """Converged scikit-learn, one fresh model per partition (float64, tiny tol)."""
    X64 = X.astype(np.float64)
    out = np.empty((len(train_idx), len(X)), dtype=np.int16)
    with threadpool_limits(1):
        for j, rows in enumerate(train_idx):
            clf = LogisticRegression(C=C, max_iter=20_000, tol=1e-10).fit(X64[rows], y[rows])
            assert clf.n_iter_.max() < 20_000, "the reference did not converge"
            out[j] = clf.predict(X64)
    return out


@pytest.fixture(scope="module", params=[64, 384], ids=lambda d: f"d{d}")
def problem(request):
    d = request.param
    X, y, artifact = aflite_like(n=3000, d=d)
    train_idx = partitions(3000, 32, 750)
    return X, y, artifact, train_idx, sklearn_predictions(X, y, train_idx)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_predictability_agrees_with_converged_sklearn(problem, dtype):
    X, y, artifact, train_idx, ref_pred = problem
    model = BatchedLogisticRegression(device="cpu", dtype=dtype)
    pred = model.fit_predict(X, y, train_idx, n_classes=3)
    assert pred.shape == (32, 3000) and pred.dtype == np.int16
    assert (model.status_ == CONVERGED).all()
    p_ours, p_ref = predictability(pred, y, train_idx), predictability(ref_pred, y, train_idx)
    assert spearmanr(p_ours, p_ref).statistic >= 0.99
    ours, ref = top_k(p_ours, 300), top_k(p_ref, 300)
    assert len(ref) > 100  # the planted artifact rows make a real top slice
    assert len(ours & ref) / len(ours | ref) >= 0.9
    # Almost every single prediction agrees, not just the scores.
    assert (pred == ref_pred).mean() > 0.995
    # The artifact subset is what AFLite would remove first.
    assert p_ours[artifact].mean() > p_ours[~artifact].mean() + 0.1


def test_weights_match_sklearn_multinomial_and_binary():
    X, y, _ = aflite_like(n=1200, d=32)
    idx = partitions(1200, 3, 400, seed=3)
    # Partition 2 sees only classes 0 and 2: scikit-learn then fits a binary model.
    keep = np.flatnonzero(y != 1)
    idx[2] = np.sort(np.random.default_rng(0).choice(keep, 400, replace=False))
    model = BatchedLogisticRegression(C=0.5, tol=1e-7, max_iter=500, device="cpu")
    pred = model.fit_predict(X, y, idx, n_classes=3)
    for j in range(3):
        ref = LogisticRegression(C=0.5, max_iter=20_000, tol=1e-12).fit(
            X[idx[j]].astype(np.float64), y[idx[j]]
        )
        scale = np.abs(ref.coef_).max()
        if j < 2:
            np.testing.assert_allclose(model.coef_[j], ref.coef_, atol=1e-3 * scale)
        else:
            assert not (pred[j] == 1).any()  # the absent class is never predicted
            assert model.intercept_[j, 1] == -np.inf
            np.testing.assert_allclose(model.coef_[j, 2], ref.coef_[0], atol=1e-3 * scale)
            np.testing.assert_allclose(model.coef_[j, 0], 0.0)
        assert (pred[j] == ref.predict(X)).mean() > 0.995


def test_two_classes_matches_sklearn_binary():
    X, y, _ = aflite_like(n=1000, d=16, k=2)
    idx = partitions(1000, 4, 300)
    model = BatchedLogisticRegression(tol=1e-7, max_iter=500, device="cpu")
    pred = model.fit_predict(X, y, idx, n_classes=2)
    for j in range(4):
        ref = LogisticRegression(max_iter=10_000, tol=1e-12).fit(X[idx[j]].astype(float), y[idx[j]])
        np.testing.assert_allclose(
            model.coef_[j, 1], ref.coef_[0], atol=1e-3 * np.abs(ref.coef_).max()
        )
        assert (pred[j] == ref.predict(X)).mean() > 0.995


def test_repeated_training_rows_count_twice():
    X, y, _ = aflite_like(n=600, d=8)
    idx = np.random.default_rng(0).integers(0, 600, size=(2, 300))  # with replacement
    model = BatchedLogisticRegression(tol=1e-7, max_iter=500, device="cpu")
    model.fit_predict(X, y, idx, n_classes=3)
    for j in range(2):
        ref = LogisticRegression(max_iter=10_000, tol=1e-12).fit(X[idx[j]].astype(float), y[idx[j]])
        np.testing.assert_allclose(model.coef_[j], ref.coef_, atol=1e-3 * np.abs(ref.coef_).max())


def test_deterministic():
    X, y, _ = aflite_like(n=2000, d=48)
    idx = partitions(2000, 12, 500)
    a = BatchedLogisticRegression(device="cpu")
    b = BatchedLogisticRegression(device="cpu")
    np.testing.assert_array_equal(a.fit_predict(X, y, idx, 3), b.fit_predict(X, y, idx, 3))
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.fit_predict(X, y, idx, 3), b.fit_predict(X, y, idx, 3))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_chunk_invariance_is_exact(dtype):
    X, y, _ = aflite_like(n=2000, d=48)
    idx = partitions(2000, 16, 500)
    full = BatchedLogisticRegression(device="cpu", dtype=dtype)
    all_pred = full.fit_predict(X, y, idx, 3)
    head = BatchedLogisticRegression(device="cpu", dtype=dtype)
    np.testing.assert_array_equal(head.fit_predict(X, y, idx[:8], 3), all_pred[:8])
    np.testing.assert_array_equal(head.coef_, full.coef_[:8])
    # Chunks that start at a multiple of chunk_size match exactly wherever they start.
    small = BatchedLogisticRegression(device="cpu", dtype=dtype, chunk_size=4)
    ref = small.fit_predict(X, y, idx, 3)
    ref_coef = small.coef_
    for lo, hi in [(0, 8), (8, 16), (4, 12), (12, 13)]:
        part = BatchedLogisticRegression(device="cpu", dtype=dtype, chunk_size=4)
        np.testing.assert_array_equal(part.fit_predict(X, y, idx[lo:hi], 3), ref[lo:hi])
        np.testing.assert_array_equal(part.coef_, ref_coef[lo:hi])


def test_single_partition_and_separate_predict_rows():
    X, y, _ = aflite_like(n=800, d=24)
    idx = partitions(800, 1, 300)
    model = BatchedLogisticRegression(device="cpu")
    pred = model.fit_predict(X, y, idx, 3, X_predict=X[:50])
    assert pred.shape == (1, 50) and pred.dtype == np.int16
    ref = LogisticRegression(max_iter=10_000, tol=1e-10).fit(X[idx[0]].astype(float), y[idx[0]])
    assert (pred[0] == ref.predict(X[:50])).mean() >= 0.98
    assert model.n_iter_.shape == (1,) and model.status_[0] == CONVERGED


def test_protocol_config_and_float_conversion():
    model = BatchedLogisticRegression(C=2.0, chunk_size=8, dtype="bfloat16")
    assert isinstance(model, PartitionModel)
    config = json.loads(json.dumps(model.config()))
    assert config["C"] == 2.0 and config["chunk_size"] == 8 and config["dtype"] == "bfloat16"
    assert model.group_size == 8
    assert BatchedLogisticRegression().group_size >= 1
    X, y, _ = aflite_like(n=300, d=6)
    idx = partitions(300, 2, 100)
    ro = X.astype(np.float64)  # float64 and read-only, as Ray hands it out
    ro.flags.writeable = False
    pred = BatchedLogisticRegression(device="cpu").fit_predict(ro, y, idx, 3)
    np.testing.assert_array_equal(
        pred, BatchedLogisticRegression(device="cpu").fit_predict(X, y, idx, 3)
    )


@pytest.mark.parametrize(
    ("kwargs", "error", "name"),
    [
        ({"X": np.zeros(10, dtype=np.float32)}, FeatureError, "X"),
        ({"X": np.full((10, 3), np.nan, dtype=np.float32)}, FeatureError, "X"),
        ({"y": np.zeros(9, dtype=np.int64)}, ParameterError, "y"),
        ({"y": np.full(10, 3)}, LabelError, "y"),
        ({"y": np.zeros(10, dtype=np.float64)}, LabelError, "y"),
        ({"train_idx": np.zeros(5, dtype=np.int64)}, ParameterError, "train_idx"),
        ({"train_idx": np.full((2, 3), 10)}, ParameterError, "train_idx"),
        ({"train_idx": np.zeros((2, 3), dtype=np.float64)}, ParameterError, "train_idx"),
        ({"train_idx": np.zeros((0, 3), dtype=np.int64)}, ParameterError, "train_idx"),
        ({"n_classes": 1}, ParameterError, "n_classes"),
        ({"n_classes": 2.0}, ParameterError, "n_classes"),
        ({"X_predict": np.zeros((4, 2), dtype=np.float32)}, ParameterError, "X_predict"),
    ],
)
def test_input_validation_names_the_argument(kwargs, error, name):
    args = {
        "X": np.random.default_rng(0).normal(size=(10, 3)).astype(np.float32),
        "y": np.arange(10) % 3,
        "train_idx": np.array([[0, 1, 2, 3, 4, 5], [4, 5, 6, 7, 8, 9]]),
        "n_classes": 3,
    }
    args.update(kwargs)
    with pytest.raises(error, match=name):
        BatchedLogisticRegression(device="cpu").fit_predict(**args)


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("C", 0.0),
        ("max_iter", -1),
        ("tol", -1.0),
        ("dtype", "float16"),
        ("device", "tpu"),
        ("chunk_size", 0),
    ],
)
def test_invalid_hyperparameters_name_the_parameter(param, value):
    X = np.zeros((4, 2), dtype=np.float32)
    with pytest.raises(ParameterError, match=param):
        BatchedLogisticRegression(**{param: value}).fit_predict(X, np.arange(4) % 2, [[0, 1]], 2)


# -- one shared start for many calls (AFLite rounds), threads --------------------------


def test_shared_start_is_what_a_call_builds_and_is_reusable():
    import pickle

    from spurious.models.batched import SharedStart

    X, y, _ = aflite_like(n=2000, d=48)
    idx = partitions(2000, 16, 500)
    model = BatchedLogisticRegression(device="cpu", chunk_size=4)
    # A call builds its own start for its own m classifiers (n_fits=m).
    start = model.shared_start(X, y, 500, 3, n_fits=len(idx))
    assert isinstance(start, SharedStart) and start.theta.shape == (49, 2)
    # The same start a call builds for itself: bitwise the same predictions and weights.
    own = model.fit_predict(X, y, idx, 3)
    own_coef = model.coef_
    assert not model.stats_["shared_start"]["reused"]
    given = model.fit_predict(X, y, idx, 3, start=pickle.loads(pickle.dumps(start)))
    assert model.stats_["shared_start"]["reused"]
    np.testing.assert_array_equal(given, own)
    np.testing.assert_array_equal(model.coef_, own_coef)
    # AFLite's later rounds: a subset of the rows, with the start built on all of them;
    # still scikit-learn's minimisers, and chunk-invariant.
    keep = np.sort(np.random.default_rng(3).choice(2000, 1400, replace=False))
    sub_idx = partitions(1400, 8, 500, seed=4)
    sub = model.fit_predict(X[keep], y[keep], sub_idx, 3, start=start)
    assert (model.status_ == CONVERGED).all()
    ref = sklearn_predictions(X[keep], y[keep], sub_idx)
    assert (sub == ref).mean() > 0.995
    part = model.fit_predict(X[keep], y[keep], sub_idx[4:], 3, start=start)
    np.testing.assert_array_equal(part, sub[4:])


def test_shared_start_for_another_problem_is_refused():
    X, y, _ = aflite_like(n=600, d=12)
    idx = partitions(600, 2, 150)
    model = BatchedLogisticRegression(device="cpu")
    start = model.shared_start(X, y, 100, 3)
    with pytest.raises(ParameterError, match=r"t 100 != 150"):
        model.fit_predict(X, y, idx, 3, start=start)
    with pytest.raises(ParameterError, match="n_features"):
        model.fit_predict(X[:, :6], y, idx, 3, start=model.shared_start(X, y, 150, 3))
    with pytest.raises(ParameterError, match=r"C 1\.0 != 2\.0"):
        BatchedLogisticRegression(device="cpu", C=2.0).fit_predict(
            X, y, idx, 3, start=model.shared_start(X, y, 150, 3)
        )
    with pytest.raises(ParameterError, match="SharedStart"):
        model.fit_predict(X, y, idx, 3, start="nope")


def test_small_groups_give_the_same_bits_on_any_thread_count():
    """Small groups run one intra-op thread each (in parallel over groups), so the thread
    setting changes the speed, not the result."""
    import torch

    X, y, _ = aflite_like(n=2000, d=48)
    idx = partitions(2000, 12, 500)
    before = torch.get_num_threads()
    one = BatchedLogisticRegression(device="cpu", chunk_size=4, num_threads=1)
    pred_one = one.fit_predict(X, y, idx, 3)
    four = BatchedLogisticRegression(device="cpu", chunk_size=4, num_threads=4)
    np.testing.assert_array_equal(four.fit_predict(X, y, idx, 3), pred_one)
    np.testing.assert_array_equal(four.coef_, one.coef_)
    assert four.stats_["timings_s"]["group_workers"] == 3
    assert torch.get_num_threads() == before


def test_auto_precondition_takes_the_cheap_start_for_few_fits_on_small_data():
    """``precondition="auto"``: the covariance start (one Hessian at zero) when few
    classifiers use it on small X, the pooled start for many fits, an unknown number or
    large X; the minimisers agree to the tolerance either way."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 29)).astype(np.float32)
    y = np.argmax(X[:, :3] + rng.normal(scale=0.5, size=(600, 3)), axis=1)
    idx = np.stack([rng.choice(600, 200, replace=False) for _ in range(4)])
    model = BatchedLogisticRegression(device="cpu", tol=1e-6)
    few = model.shared_start(X, y, 200, 3, n_fits=4)  # 3 * 4 < d + 1 = 30
    many = model.shared_start(X, y, 200, 3, n_fits=10)
    unknown = model.shared_start(X, y, 200, 3)
    assert few.stats["precondition"] == "covariance" and not few.theta.any()
    assert many.stats["precondition"] == "pooled" and many.theta.any()
    assert unknown.stats["precondition"] == "pooled"

    class LowThreshold(BatchedLogisticRegression):
        covariance_max_rows = 500  # X's 600 rows count as large

    big = LowThreshold(device="cpu")
    assert big.shared_start(X, y, 200, 3, n_fits=4).stats["precondition"] == "pooled"
    a = model.fit_predict(X, y, idx, 3, start=few)
    b = model.fit_predict(X, y, idx, 3, start=many)
    assert (a == b).mean() > 0.99
    fixed = BatchedLogisticRegression(device="cpu", precondition="pooled")
    assert fixed.shared_start(X, y, 200, 3, n_fits=1).stats["precondition"] == "pooled"
