"""A fast, deterministic multinomial logistic-regression probe in PyTorch.

Full-batch L-BFGS on ``mean cross-entropy + ||W||^2 / (2 C n)`` (n = total sample weight), which is scikit-learn's
``LogisticRegression(C=C)`` objective divided by ``C n`` (same minimiser), so the two agree
at convergence. The intercept is not penalised (as in scikit-learn). Dense float32 and
scipy CSR inputs are supported; weights start at zero, so a fit has no randomness. Dense
fits are preconditioned by the features' covariance (:func:`_preconditioner`): on sentence
embeddings the plain iteration stopped at ``max_iter`` short of the minimiser.

:func:`cross_fit_proba` fits the probes of k folds in one such run (one column block of
the weights per fold), for out-of-fold probabilities at the cost of about one fit.
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from spurious.exceptions import ParameterError
from spurious.models.runtime.hardware import auto_device, check_device
from spurious.models.runtime.threads import import_torch
from spurious.utils.matrix import Matrix, check_features
from spurious.utils.threads import kernel_threads, limit_threads
from spurious.utils.validation import Interval, StrOptions, check_params


def _torch():
    # The message reaches users of a core install: name the probe that needs no extra.
    return import_torch("The logistic probe (probe='sklearn-logistic' needs no extra)")


def to_torch(X: Matrix, device: str = "cpu"):
    """A float32 torch tensor (dense, or sparse CSR) sharing memory where possible.

    Sparse indices are int32 when they fit (the usual case): a CSR product then moves
    a third less memory and runs ~1.7x faster on CPU than with int64 indices.
    """
    torch = _torch()
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float32)
        small = max(X.shape) < 2**31 - 1 and X.nnz < 2**31 - 1
        index = np.int32 if small else np.int64
        with warnings.catch_warnings():
            # CSR support is "beta" in torch, but matmul and its backward are stable.
            warnings.simplefilter("ignore", UserWarning)
            return torch.sparse_csr_tensor(
                torch.from_numpy(X.indptr.astype(index, copy=False)),
                torch.from_numpy(X.indices.astype(index, copy=False)),
                torch.from_numpy(X.data),
                size=X.shape,
                check_invariants=False,
            ).to(device)
    X = np.asarray(X)
    row_major = X.ndim == 2 and X.strides[1] == 4 and X.strides[0] >= 4 * X.shape[1]
    if not (X.dtype == np.float32 and row_major):
        X = np.ascontiguousarray(X, dtype=np.float32)
    # else: a block of a wider matrix's columns (a one-field view of the pair features)
    # is used in place: torch's products take its row stride, as BLAS's leading dimension.
    with warnings.catch_warnings():
        # A read-only array (a Ray object, a memory map) is fine: no caller writes to it.
        warnings.filterwarnings("ignore", "The given NumPy array is not writable", UserWarning)
        return torch.from_numpy(X).to(device)


class LogisticProbe(ClassifierMixin, BaseEstimator):
    """Multinomial logistic regression trained full-batch with L-BFGS (PyTorch).

    Parameters
    ----------
    C : float, default=1.0
        Inverse L2 strength, as in scikit-learn's ``LogisticRegression``.
    max_iter : int, default=200
        Maximum L-BFGS iterations.
    tol : float, default=1e-7
        Stop when the max-abs gradient falls below ``tol`` (for dense ``X``, the gradient
        in the preconditioned coordinates: see :func:`_preconditioner`).
    device : {"cpu", "cuda", "auto"}, default="cpu"
        ``"auto"``: CUDA when available, or the run's device inside
        :func:`spurious.models.runtime.use_device`.
    fit_intercept : bool, default=True

    Attributes
    ----------
    coef_ : ndarray of shape (n_classes, n_features)
    intercept_ : ndarray of shape (n_classes,)
    classes_ : ndarray
    n_iter_ : int

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [0.1], [0.9], [1.0]], dtype=np.float32)
    >>> probe = LogisticProbe(C=10.0).fit(X, [0, 0, 1, 1])
    >>> probe.predict(X).tolist()
    [0, 0, 1, 1]
    """

    _parameter_constraints: ClassVar[dict] = {
        "C": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "device": [StrOptions({"cpu", "cuda", "auto"})],
        "fit_intercept": ["boolean"],
    }

    def __init__(
        self,
        C: float = 1.0,
        max_iter: int = 200,
        tol: float = 1e-7,
        device: str = "cpu",
        fit_intercept: bool = True,
    ) -> None:
        self.C = C
        self.max_iter = max_iter
        self.tol = tol
        self.device = device
        self.fit_intercept = fit_intercept

    def _device(self) -> str:
        if self.device == "auto":  # the run's device (spurious.models.runtime.use_device)
            return auto_device()
        return self.device

    def fit(self, X: Matrix, y, sample_weight=None) -> LogisticProbe:
        """Fit on features ``X`` and integer or string labels ``y``."""
        check_params(self._parameter_constraints, self.get_params(deep=False), type(self).__name__)
        torch = _torch()
        X = check_features(X, None, "X")
        y = np.asarray(y)
        if y.shape[0] != X.shape[0]:
            raise ParameterError(f"X has {X.shape[0]} rows but y has {y.shape[0]} labels.")
        self.classes_, y_idx = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ParameterError(
                f"LogisticProbe needs at least 2 classes in y; got {self.classes_.tolist()}."
            )
        n, d = X.shape
        k = len(self.classes_)
        dev = self._device()
        Xt = to_torch(X, dev)
        # X^T is needed for the gradient; for sparse input a CSR copy of the transpose
        # makes X^T @ G as fast as X @ W (autograd through a CSR matmul is much slower).
        XT = to_torch(X.T.tocsr(), dev) if sp.issparse(X) else None
        yt = torch.from_numpy(y_idx.astype(np.int64)).to(dev)
        w = (
            torch.ones(n, device=dev)
            if sample_weight is None
            else torch.as_tensor(np.asarray(sample_weight, dtype=np.float32), device=dev)
        )
        W, b, self.n_iter_ = _fit_softmax(
            Xt,
            XT,
            yt,
            w[None, :],
            k,
            C=self.C,
            max_iter=self.max_iter,
            tol=self.tol,
            fit_intercept=self.fit_intercept,
        )
        self.coef_ = W.T.cpu().numpy().astype(np.float32)
        self.intercept_ = b.cpu().numpy().astype(np.float32)
        self.n_features_in_ = d
        return self

    def decision_function(self, X: Matrix) -> np.ndarray:
        """Class logits, shape ``(n, n_classes)``."""
        check_is_fitted(self, "coef_")
        X = check_features(X, None, "X")
        if X.shape[1] != self.n_features_in_:
            raise ParameterError(
                f"X has {X.shape[1]} features, but the probe was fitted on {self.n_features_in_}."
            )
        return np.asarray(X @ self.coef_.T) + self.intercept_

    def predict_proba(self, X: Matrix) -> np.ndarray:
        """Class probabilities (softmax of the logits)."""
        from scipy.special import softmax

        return softmax(self.decision_function(X).astype(np.float64), axis=1)

    def predict(self, X: Matrix) -> np.ndarray:
        """Most probable class."""
        return self.classes_[np.argmax(self.decision_function(X), axis=1)]


#: Feature dimension up to which dense fits are preconditioned (a (d, d) Cholesky factor
#: in float64: 128 MiB at 4,096; wider dense matrices run plain L-BFGS).
PRECONDITION_MAX_DIM = 4096


def _preconditioner(Xt, k: int, lam: float, centre: bool):
    """``(mu, L)`` for a dense fit: the rows' mean (zeros without an intercept) and the
    lower Cholesky factor of ``Cov(X) / k + lam I``, estimated on a strided subsample.

    That matrix is, per class column, the objective's Hessian at the zero start up to
    the class coupling; L-BFGS on ``V = L^T W`` over centred features sees it as the
    identity. Sentence embeddings share a large mean and have variances spread over
    orders of magnitude, so the plain iteration crawls: on the pair features of 100k
    SNLI-like pairs (1,536-d, 5 folds) it stopped at ``max_iter`` = 200, its out-of-fold
    p_gold 0.008 from the minimiser's on average (0.08 at most; 1.8% of argmaxes
    differ), where the preconditioned one reached the minimiser in 24 iterations, 6.2x
    faster (384-d hypothesis-only: 20 iterations, 9.0x;
    ``bench/bench_probe_precondition.py``). Only the path to
    the minimiser changes: the objective, penalty on the original weights included, is
    the same. ``None`` when ``d`` exceeds :data:`PRECONDITION_MAX_DIM` or the factor
    cannot be formed.
    """
    torch = _torch()
    n, d = Xt.shape
    if d > PRECONDITION_MAX_DIM:
        return None
    # A fixed strided subsample (a pure function of X: deterministic): at least 4 d rows
    # for the (d, d) estimate, the cost of a few evaluations, 512 MiB in float64 at most.
    rows = min(n, 16384)
    S = Xt[:: max(1, n // rows)][:rows].to(torch.float64)
    mu = S.mean(0) if centre else torch.zeros(d, dtype=torch.float64, device=Xt.device)
    S -= mu
    M = S.T @ S / (S.shape[0] * k)
    # lam alone can be ~1e-6 of M's scale: a little more on the diagonal keeps the factor
    # well conditioned (it only shapes the path, never the minimiser).
    M.diagonal().add_(max(lam, 1e-6 * float(M.diagonal().mean())))
    L, info = torch.linalg.cholesky_ex(M)
    if int(info) != 0 or not bool(torch.isfinite(L).all()):
        return None
    return mu.to(torch.float32), L.to(torch.float32)


def _fit_softmax(
    Xt, XT, yt, w, k: int, *, C: float, max_iter: int, tol: float, fit_intercept: bool
):
    """``K`` L2-regularised softmax regressions on the same rows, one per row of the
    weights ``w`` (shape ``(K, n)``), minimised together by one full-batch L-BFGS.

    The objectives are independent (fit ``f`` owns columns ``f k .. (f + 1) k - 1`` of
    ``W``), so the joint minimiser is each fit's own and the stopping rule (max-abs
    gradient ``<= tol``) holds for every fit; each L-BFGS iteration streams ``X`` once
    for all ``K`` fits, which is what makes cross-fitting on large data cheap (the
    products are memory-bound). Dense ``X`` is preconditioned (:func:`_preconditioner`):
    the iteration runs on ``V = L^T W`` with the features centred (the intercept absorbs
    the mean), and the stopping rule applies to ``V``'s gradient; sparse ``X`` runs in
    the original weights. Returns ``W`` of shape ``(d, K k)``, ``b`` of shape ``(K k,)``
    and the iterations run.
    """
    torch = _torch()
    K, n = w.shape
    dev = Xt.device
    # sklearn's objective is C * sum(w_i CE_i) + ||W||^2 / 2; dividing by C * sum(w)
    # gives a weighted mean CE plus ||W||^2 / (2 C sum(w)): same minimiser, O(1) scale.
    w_sum = w.sum(1)
    w = (w / w_sum[:, None]).contiguous()
    lam = (1.0 / (C * w_sum)).repeat_interleave(k)  # per column of W
    # Class-major (K, k, n) layout: the softmax reduces over k = 2-5 classes, which on
    # the row-major (n, K k) logits is a strided reduction several times slower.
    onehot_t = torch.nn.functional.one_hot(yt, k).to(torch.float32).T.contiguous()
    # One thread (spurious.utils.threads, "probe"): a fit is many small operations,
    # and 2 intra-op threads on 2 shared cores took 8x (dense) to 25x (bag of words)
    # the wall time of one (bench/results/threads.json).
    with torch.no_grad(), limit_threads(kernel_threads("probe")):
        pre = None if XT is not None else _preconditioner(Xt, k, float(lam.min()), fit_intercept)
        d = Xt.shape[1]
        mu = pre[0] if pre is not None else torch.zeros(d, device=dev)
        V = torch.zeros(d, K * k, device=dev)  # W = L^{-T} V (W = V unpreconditioned)
        b = torch.zeros(K * k, device=dev)

        def weights(V):
            if pre is None:
                return V
            return torch.linalg.solve_triangular(pre[1].T, V, upper=True)

        def closure():
            # Loss and gradient in closed form (softmax cross-entropy), with the
            # features centred by mu (b then is the intercept of the centred features):
            # dL/dW = X^T ((P - Y) * w) - mu^T sum((P - Y) * w) + lam W,
            # dL/db = sum((P - Y) * w), dL/dV = L^{-1} dL/dW.
            W = weights(V)
            logits_t = ((Xt @ W).T.contiguous() + (b - mu @ W)[:, None]).view(K, k, n)
            logp_t = logits_t - torch.logsumexp(logits_t, dim=1, keepdim=True)
            loss = -(w[:, None, :] * onehot_t * logp_t).sum() + 0.5 * (lam * W * W).sum()
            G_t = (logp_t.exp_() - onehot_t).mul_(w[:, None, :]).view(K * k, n)
            g_b = G_t.sum(1)
            # Sparse: X^T (a CSR copy) @ G. Dense: G^T X streams X row-major once;
            # X.T @ G is ~8x slower here.
            XtG = XT @ G_t.T.contiguous() if XT is not None else (G_t @ Xt).T
            g_W = XtG - mu[:, None] * g_b[None, :] + lam * W
            if pre is not None:
                g_W = torch.linalg.solve_triangular(pre[1], g_W, upper=False)
            V.grad = g_W.contiguous()
            if fit_intercept:
                b.grad = g_b
            return loss

        opt = torch.optim.LBFGS(
            [V, b] if fit_intercept else [V],
            lr=1.0,
            max_iter=max_iter,
            tolerance_grad=tol,
            tolerance_change=1e-12,
            history_size=20,
            line_search_fn="strong_wolfe",
        )
        opt.step(closure)
        W = weights(V)
        b = b - mu @ W  # the intercept of the original features
    return W, b, int(opt.state[opt._params[0]].get("n_iter", 0))


def cross_fit_proba(
    X: Matrix,
    y,
    fold_of,
    n_classes: int,
    *,
    C: float = 1.0,
    max_iter: int = 200,
    tol: float = 1e-7,
    device: str = "cpu",
    block: int = 8192,
) -> np.ndarray | None:
    """Out-of-fold class probabilities of :class:`LogisticProbe`, every fold's probe
    fitted in one L-BFGS run over the shared ``X`` (no copy of any fold's rows).

    Row ``i`` gets the probabilities of the probe fitted on the rows of every other
    fold; each probe converges to the minimiser :class:`LogisticProbe` converges to on
    those rows (the same objective and stopping rule, see :func:`_fit_softmax`).

    Parameters
    ----------
    X : array-like or scipy CSR of shape (n, d)
    y : array-like of shape (n,)
        Label ids in ``range(n_classes)``.
    fold_of : array-like of shape (n,)
        Fold id of every row.
    n_classes : int
        Columns of the result (label ids absent from ``y`` get probability 0).
    C, max_iter, tol, device
        As for :class:`LogisticProbe` (``device="auto"``: the run's device, or CUDA when
        available).
    block : int, default=8192
        Rows per prediction product (bounds memory: a block of 8192 x 1536 float32 rows
        is 50 MB; at 65536, three conditions side by side held 0.6 GB of row copies).

    Returns
    -------
    ndarray of shape (n, n_classes), or None
        ``None`` when some fold's training rows miss a class of ``y`` (its probe would
        know fewer classes than the others; fit that fold on its own instead).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 3)).astype(np.float32)
    >>> y = (X[:, 0] > 0).astype(int)
    >>> proba = cross_fit_proba(X, y, np.arange(300) % 5, 2)
    >>> proba.shape, bool(((proba.argmax(1) == y).mean() > 0.9))
    ((300, 2), True)
    """
    torch = _torch()
    check_device(device, "'device' argument of cross_fit_proba")
    X = check_features(X, None, "X")
    y, fold_of = np.asarray(y), np.asarray(fold_of)
    if y.shape[0] != X.shape[0] or fold_of.shape[0] != X.shape[0]:
        raise ParameterError(
            f"X has {X.shape[0]} rows but y has {y.shape[0]} labels and fold_of "
            f"{fold_of.shape[0]} entries."
        )
    classes, y_idx = np.unique(y, return_inverse=True)
    folds = np.unique(fold_of)
    for f in folds:
        if len(np.unique(y_idx[fold_of != f])) < len(classes) or len(classes) < 2:
            return None
    k = len(classes)
    dev = LogisticProbe(device=device)._device()
    Xt = to_torch(X, dev)
    XT = to_torch(X.T.tocsr(), dev) if sp.issparse(X) else None
    yt = torch.from_numpy(y_idx.astype(np.int64)).to(dev)
    w = torch.from_numpy(np.stack([fold_of != f for f in folds]).astype(np.float32)).to(dev)
    W, b, _ = _fit_softmax(Xt, XT, yt, w, k, C=C, max_iter=max_iter, tol=tol, fit_intercept=True)
    del Xt, XT
    coef = W.T.cpu().numpy().astype(np.float32).reshape(len(folds), k, -1)
    intercept = b.cpu().numpy().astype(np.float32).reshape(len(folds), k)
    from scipy.special import softmax

    out = np.zeros((X.shape[0], n_classes))
    cols = classes.astype(int)
    for j, f in enumerate(folds):
        rows = np.flatnonzero(fold_of == f)
        for s in range(0, len(rows), block):
            part = rows[s : s + block]
            # As LogisticProbe.predict_proba: float32 logits, a float64 softmax.
            logits = np.asarray(X[part] @ coef[j].T) + intercept[j]
            out[np.ix_(part, cols)] = softmax(logits.astype(np.float64), axis=1)
    return out
