"""The PyTorch logistic probe agrees with scikit-learn's converged LogisticRegression."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression

from spurious.exceptions import ParameterError
from spurious.models import LogisticProbe, make_probe
from spurious.models.sklearn_adapter import predict_proba


def _data(n=1500, d=40, k=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    W = rng.normal(size=(d, k))
    y = np.argmax(X @ W + rng.gumbel(size=(n, k)), axis=1)
    return X, y


@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
def test_matches_sklearn_dense(C):
    X, y = _data()
    ours = LogisticProbe(C=C, max_iter=500).fit(X, y)
    ref = LogisticRegression(C=C, max_iter=5000, tol=1e-10).fit(X, y)
    assert np.abs(ours.predict_proba(X) - ref.predict_proba(X)).max() < 2e-3
    assert (ours.predict(X) == ref.predict(X)).mean() > 0.995
    np.testing.assert_allclose(ours.coef_, ref.coef_, atol=2e-2 * np.abs(ref.coef_).max())


def test_matches_sklearn_sparse_and_dense_agree():
    X, y = _data(d=60)
    Xs = sp.csr_matrix(np.where(np.abs(X) > 1.0, X, 0.0))
    dense = LogisticProbe().fit(Xs.toarray(), y)
    sparse = LogisticProbe().fit(Xs, y)
    ref = LogisticRegression(max_iter=5000, tol=1e-10).fit(Xs, y)
    assert np.abs(sparse.predict_proba(Xs) - ref.predict_proba(Xs)).max() < 2e-3
    assert np.abs(sparse.predict_proba(Xs) - dense.predict_proba(Xs)).max() < 1e-3


def test_sparse_input_uses_int32_indices_and_weighted_fit_matches_sklearn():
    """The CSR fast path (int32 indices, class-major softmax) with sample
    weights: the same minimiser as scikit-learn's weighted LogisticRegression."""
    from spurious.models.linear import to_torch

    X, y = _data(d=30, k=4, seed=3)
    Xs = sp.csr_matrix(np.where(np.abs(X) > 0.7, X, 0.0))
    assert to_torch(Xs).crow_indices().dtype.itemsize == 4
    w = np.random.default_rng(0).uniform(0.2, 3.0, len(y))
    ours = LogisticProbe(C=0.5).fit(Xs, y, sample_weight=w)
    ref = LogisticRegression(C=0.5, max_iter=5000, tol=1e-10).fit(Xs, y, sample_weight=w)
    assert np.abs(ours.predict_proba(Xs) - ref.predict_proba(Xs)).max() < 2e-3


def test_deterministic_and_string_labels():
    X, y = _data()
    names = np.array(["a", "b", "c"])[y]
    p1 = LogisticProbe().fit(X, names)
    p2 = LogisticProbe().fit(X, names)
    np.testing.assert_array_equal(p1.coef_, p2.coef_)
    assert set(p1.predict(X)) <= {"a", "b", "c"}
    assert p1.classes_.tolist() == ["a", "b", "c"]


def test_sample_weight_zero_drops_rows():
    X, y = _data(n=600)
    w = np.ones(len(y))
    w[300:] = 0.0
    weighted = LogisticProbe().fit(X, y, sample_weight=w)
    head = LogisticProbe().fit(X[:300], y[:300])
    assert np.abs(weighted.predict_proba(X) - head.predict_proba(X)).max() < 1e-3


def test_bad_params_and_inputs():
    X, y = _data(n=50)
    with pytest.raises(ParameterError, match="The 'C' parameter of LogisticProbe"):
        LogisticProbe(C=0).fit(X, y)
    with pytest.raises(ParameterError, match="at least 2 classes"):
        LogisticProbe().fit(X, np.zeros(50))
    with pytest.raises(ParameterError, match="50 rows but y has 49"):
        LogisticProbe().fit(X, y[:49])
    with pytest.raises(ParameterError, match="fitted on 40"):
        LogisticProbe().fit(X, y).predict(X[:, :10])


def test_make_probe_and_decision_function_fallback():
    X, y = _data(n=300)
    svm = make_probe("linear-svm").fit(X, y)
    proba = predict_proba(svm, X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert (proba.argmax(1) == svm.predict(X)).all()
    with pytest.raises(ParameterError, match="'probe' parameter"):
        make_probe("nope")
    with pytest.raises(ParameterError, match="'probe' parameter"):
        make_probe(object())


@pytest.mark.parametrize("sparse", [False, True])
def test_cross_fit_proba_matches_each_fold_fitted_by_sklearn(sparse):
    """Every fold's probe, fitted together, converges to scikit-learn's converged fit on
    the other folds' rows; labels absent from y get probability 0."""
    from spurious.models.linear import cross_fit_proba

    X, y = _data(n=1200, d=30)
    if sparse:
        X = sp.csr_matrix(np.where(np.abs(X) > 0.8, X, 0.0))
    fold_of = np.random.default_rng(1).integers(0, 4, len(y))
    y_ids = np.where(y == 2, 3, y)  # label id 2 unused, 4 ids in all
    proba = cross_fit_proba(X, y_ids, fold_of, 4)
    assert proba.shape == (1200, 4) and np.all(proba[:, 2] == 0)
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-6)
    for f in range(4):
        train, test = fold_of != f, fold_of == f
        ref = LogisticRegression(max_iter=5000, tol=1e-10).fit(X[train], y_ids[train])
        got = proba[test][:, [0, 1, 3]]
        assert np.abs(got - ref.predict_proba(X[test])).max() < 2e-3


def test_cross_fit_proba_defers_when_a_fold_misses_a_class():
    from spurious.models.linear import cross_fit_proba

    X, y = _data(n=300, d=5)
    fold_of = np.arange(300) % 3
    y[fold_of != 0] = np.where(y[fold_of != 0] == 2, 1, y[fold_of != 0])  # class 2: fold 0 only
    assert cross_fit_proba(X, y, fold_of, 3) is None
    with pytest.raises(ParameterError, match="fold_of"):
        cross_fit_proba(X, y, fold_of[:10], 3)


def _embedding_like(n=3000, d=60, seed=0):
    """Sentence-embedding geometry: a large common mean and variances spread over three
    orders of magnitude, with the label depending on every direction."""
    rng = np.random.default_rng(seed)
    scales = np.logspace(-3, 0, d)
    Z = rng.normal(size=(n, d))
    y = np.argmax(Z @ rng.normal(size=(d, 3)) + rng.gumbel(size=(n, 3)), axis=1)
    return (0.8 + Z * scales).astype(np.float32), y


def test_ill_conditioned_features_reach_sklearns_minimiser(monkeypatch):
    """The preconditioned fit reaches scikit-learn's converged minimiser in a few dozen
    iterations; the plain iteration (the old path) stops at max_iter short of it."""
    from spurious.models import linear

    X, y = _embedding_like()
    ref = LogisticRegression(max_iter=100_000, tol=1e-12).fit(X.astype(np.float64), y)
    ours = LogisticProbe().fit(X, y)
    assert ours.n_iter_ < 100
    assert np.abs(ours.predict_proba(X) - ref.predict_proba(X)).max() < 2e-3
    monkeypatch.setattr(linear, "PRECONDITION_MAX_DIM", 0)
    plain = LogisticProbe().fit(X, y)
    assert plain.n_iter_ == 200  # the planted difficulty: max_iter, not the tolerance
    assert np.abs(plain.predict_proba(X) - ref.predict_proba(X)).max() > 5e-3


def test_cross_fit_on_ill_conditioned_features_matches_each_fold():
    from spurious.models.linear import cross_fit_proba

    X, y = _embedding_like(n=2000, d=40, seed=1)
    fold_of = np.arange(len(y)) % 4
    proba = cross_fit_proba(X, y, fold_of, 3)
    for f in range(4):
        train, test = fold_of != f, fold_of == f
        ref = LogisticRegression(max_iter=100_000, tol=1e-12).fit(
            X[train].astype(np.float64), y[train]
        )
        assert np.abs(proba[test] - ref.predict_proba(X[test])).max() < 2e-3


@pytest.mark.parametrize("n,d", [(30, 100), (200, 5)])
def test_preconditioner_edge_cases_still_reach_the_minimiser(n, d):
    """More columns than rows, a constant and an all-zero column: the covariance is
    singular, the preconditioner stays well defined (its jitter shapes only the path)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d)).astype(np.float32)
    X[:, 0], X[:, 1] = 3.0, 0.0
    y = rng.integers(0, 3, n)
    ref = LogisticRegression(max_iter=100_000, tol=1e-12).fit(X.astype(np.float64), y)
    ours = LogisticProbe().fit(X, y)
    assert np.abs(ours.predict_proba(X) - ref.predict_proba(X)).max() < 2e-3
