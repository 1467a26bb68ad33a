"""A fast, deterministic multinomial logistic-regression probe in PyTorch.

Full-batch L-BFGS on ``mean cross-entropy + ||W||^2 / (2 C n)`` (n = total sample weight), which is scikit-learn's
``LogisticRegression(C=C)`` objective divided by ``C n`` (same minimiser), so the two agree
at convergence. The intercept is not penalised (as in scikit-learn). Dense float32 and
scipy CSR inputs are supported; weights start at zero, so a fit has no randomness.
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
    return torch.from_numpy(np.ascontiguousarray(X, dtype=np.float32)).to(device)


class LogisticProbe(ClassifierMixin, BaseEstimator):
    """Multinomial logistic regression trained full-batch with L-BFGS (PyTorch).

    Parameters
    ----------
    C : float, default=1.0
        Inverse L2 strength, as in scikit-learn's ``LogisticRegression``.
    max_iter : int, default=200
        Maximum L-BFGS iterations.
    tol : float, default=1e-7
        Stop when the max-abs gradient falls below ``tol``.
    device : {"cpu", "cuda", "auto"}, default="cpu"
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
        torch = _torch()
        if self.device == "auto":
            return "cuda" if torch.cuda.is_available() else "cpu"
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
        # sklearn's objective is C * sum(w_i CE_i) + ||W||^2 / 2; dividing by C * sum(w)
        # gives a weighted mean CE plus ||W||^2 / (2 C sum(w)): same minimiser, O(1) scale.
        w_sum = float(w.sum())
        w = w / w_sum
        # Class-major (k, n) layout: the softmax reduces over k = 2-5 classes, which on
        # the row-major (n, k) logits is a strided reduction several times slower.
        onehot_t = torch.nn.functional.one_hot(yt, k).to(torch.float32).T.contiguous()
        W = torch.zeros(d, k, device=dev)
        b = torch.zeros(k, device=dev)
        lam = 1.0 / (self.C * w_sum)
        params = [W, b] if self.fit_intercept else [W]
        opt = torch.optim.LBFGS(
            params,
            lr=1.0,
            max_iter=self.max_iter,
            tolerance_grad=self.tol,
            tolerance_change=1e-12,
            history_size=20,
            line_search_fn="strong_wolfe",
        )

        def closure():
            # Loss and gradient in closed form (softmax cross-entropy):
            # dL/dW = X^T ((P - Y) * w) + lam W, dL/db = sum((P - Y) * w).
            logits_t = (Xt @ W).T.contiguous() + b[:, None]  # (k, n)
            lse = torch.logsumexp(logits_t, dim=0)
            logp_t = logits_t - lse
            loss = -(w * (onehot_t * logp_t).sum(0)).sum() + 0.5 * lam * (W * W).sum()
            G_t = (logp_t.exp_() - onehot_t).mul_(w)  # (k, n)
            # Sparse: X^T (a CSR copy) @ G. Dense: G^T X streams X row-major once;
            # X.T @ G is ~8x slower here.
            XtG = XT @ G_t.T.contiguous() if XT is not None else (G_t @ Xt).T
            W.grad = (XtG + lam * W).contiguous()
            if self.fit_intercept:
                b.grad = G_t.sum(1)
            return loss

        # One thread (spurious.utils.threads, "probe"): a fit is many small operations,
        # and 2 intra-op threads on 2 shared cores took 8x (dense) to 25x (bag of words)
        # the wall time of one (bench/results/threads.json).
        with torch.no_grad(), limit_threads(kernel_threads("probe")):
            opt.step(closure)
        state = opt.state[opt._params[0]]
        self.n_iter_ = int(state.get("n_iter", 0))
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
