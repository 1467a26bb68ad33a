"""A conditional-logit model as AFLite's model family: choose one candidate per row.

Each row of ``X`` holds ``K`` candidate blocks of ``n_features`` columns
(``X.reshape(n, K, n_features)``); the label is the index of the right candidate. The
first column of a block says whether the candidate exists (1) or is padding (0). One
weight vector ``w`` is shared by every candidate, and a row's candidates compete through
a softmax over their scores ``z_k . w`` (McFadden's conditional logit; for extractive QA
the candidates are a context's sentences, see :mod:`spurious.evaluate.fairness.qa`).

Training is Newton's method on the L2-penalised log-likelihood (convex, so the optimum
is unique; float64, no randomness), one fit per partition. The indicator column is
dropped from the scores: it is constant over a row's real candidates, so it could not
change the softmax.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np

from spurious.exceptions import ParameterError

__all__ = ["ConditionalLogit"]


class ConditionalLogit:
    """Shared-weight softmax over each row's candidates, fitted per partition (a PartitionModel).

    Parameters
    ----------
    n_features : int
        Columns per candidate block, the indicator column included (>= 2).
    l2 : float, default=1.0
        Ridge penalty ``l2 / 2 * ||w||^2`` on the summed log-likelihood (separable data,
        e.g. a planted cue, would otherwise send ``w`` to infinity).
    max_iter : int, default=50
        Newton steps per fit.
    tol : float, default=1e-10
        Stop when half the squared Newton decrement falls below it.

    Examples
    --------
    >>> # 2 rows, 2 candidates, one feature (+ the indicator): the right one has x = 1
    >>> X = np.array([[1, 1.0, 1, 0.0], [1, 0.0, 1, 1.0]])
    >>> y = np.array([0, 1])
    >>> ConditionalLogit(2).fit_predict(X, y, np.array([[0, 1]]), 2).tolist()
    [[0, 1]]
    """

    def __init__(
        self, n_features: int, l2: float = 1.0, max_iter: int = 50, tol: float = 1e-10
    ) -> None:
        self.n_features = n_features
        self.l2 = l2
        self.max_iter = max_iter
        self.tol = tol

    def _check(self, X: np.ndarray) -> int:
        d = self.n_features
        if not isinstance(d, Integral) or d < 2:
            raise ParameterError(
                "The 'n_features' parameter of ConditionalLogit must be an int >= 2 (the "
                f"indicator column and at least one feature). Got {d!r} instead."
            )
        if not isinstance(self.l2, Real) or self.l2 <= 0:
            raise ParameterError(
                f"The 'l2' parameter of ConditionalLogit must be a float > 0. Got {self.l2!r}."
            )
        if X.ndim != 2 or X.shape[1] % d:
            raise ParameterError(
                f"The 'X' parameter of ConditionalLogit must be 2-d with a multiple of "
                f"n_features={d} columns (K candidate blocks). Got shape {X.shape} instead."
            )
        return X.shape[1] // d

    def fit_predict(
        self,
        X: np.ndarray,
        y: np.ndarray,
        train_idx: np.ndarray,
        n_classes: int,
        X_predict: np.ndarray | None = None,
    ) -> np.ndarray:
        """Fit one model per row of ``train_idx``; predict the best candidate of every row.

        Parameters
        ----------
        X : ndarray of shape (N, K * n_features)
        y : ndarray of shape (N,)
            Index of the right candidate, in ``[0, K)``; it must be a real candidate.
        train_idx : ndarray of shape (m, t)
        n_classes : int
            Unused (the number of candidates is ``K``); kept for the PartitionModel protocol.
        X_predict : ndarray of shape (M, K * n_features), optional

        Returns
        -------
        ndarray of int16, shape (m, M)
        """
        return self._scores(X, y, train_idx, X_predict).argmax(axis=2).astype(np.int16)

    def fit_predict_proba(
        self,
        X: np.ndarray,
        y: np.ndarray,
        train_idx: np.ndarray,
        X_predict: np.ndarray | None = None,
    ) -> np.ndarray:
        """Fit one model per row of ``train_idx``; each candidate's probability per row.

        The same fits as :meth:`fit_predict`, whose predictions are the argmax of these
        probabilities over a row's real candidates.

        Parameters
        ----------
        X : ndarray of shape (N, K * n_features)
        y : ndarray of shape (N,)
            Index of the right candidate, in ``[0, K)``; it must be a real candidate.
        train_idx : ndarray of shape (m, t)
        X_predict : ndarray of shape (M, K * n_features), optional

        Returns
        -------
        ndarray of float64, shape (m, M, K)
            The softmax over each row's real candidates; padding candidates get 0.

        Examples
        --------
        >>> X = np.array([[1, 1.0, 1, 0.0], [1, 0.0, 1, 1.0]])
        >>> p = ConditionalLogit(2).fit_predict_proba(X, np.array([0, 1]), np.array([[0, 1]]))
        >>> p.shape, bool((p[0].argmax(axis=1) == [0, 1]).all()), p[0].sum(axis=1).round(6).tolist()
        ((1, 2, 2), True, [1.0, 1.0])
        """
        scores = self._scores(X, y, train_idx, X_predict)
        # A stable softmax over the real candidates (every row has at least one).
        scores -= scores.max(axis=2, keepdims=True)
        e = np.exp(scores)
        return e / e.sum(axis=2, keepdims=True)

    def _scores(
        self, X: np.ndarray, y: np.ndarray, train_idx: np.ndarray, X_predict: np.ndarray | None
    ) -> np.ndarray:
        """Scores ``(m, M, K)`` of one fit per row of ``train_idx``; padding gets ``-inf``."""
        X = np.asarray(X, dtype=np.float64)
        K = self._check(X)
        Xp = X if X_predict is None else np.asarray(X_predict, dtype=np.float64)
        d = self.n_features
        Z = X.reshape(len(X), K, d)
        y = np.asarray(y, dtype=np.int64)
        W = np.stack([self._fit(Z[rows], y[rows]) for rows in np.asarray(train_idx)])  # (m, d-1)
        Zp = Xp.reshape(len(Xp), K, d)
        scores = np.einsum("nkd,md->mnk", Zp[:, :, 1:], W, optimize=True)
        scores[:, ~(Zp[:, :, 0] > 0)] = -np.inf
        return scores

    def _fit(self, Z: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Newton's method with backtracking on the penalised negative log-likelihood."""
        valid = Z[:, :, 0] > 0
        if not valid[np.arange(len(y)), y].all():
            bad = int(np.flatnonzero(~valid[np.arange(len(y)), y])[0])
            raise ParameterError(
                f"The 'y' parameter of ConditionalLogit must point at a real candidate; "
                f"training row {bad} has label {int(y[bad])}, a padding block."
            )
        # Only real candidates, flattened row by row (contiguous segments per row).
        C = Z[:, :, 1:][valid]  # (n_cand, p)
        starts = np.concatenate([[0], np.cumsum(valid.sum(axis=1))[:-1]])
        chosen = C[starts + y]  # (t, p): positions of the labels within the flat list
        seg = np.repeat(np.arange(len(y)), valid.sum(axis=1))
        p_dim = C.shape[1]
        target = chosen.sum(axis=0)

        def objective(w: np.ndarray) -> tuple[float, np.ndarray]:
            s = C @ w
            smax = np.maximum.reduceat(s, starts)
            e = np.exp(s - smax[seg])
            norm = np.add.reduceat(e, starts)
            lse = np.log(norm) + smax
            nll = float(lse.sum() - (chosen @ w).sum() + 0.5 * self.l2 * (w @ w))
            return nll, e / norm[seg]

        w = np.zeros(p_dim)
        f, prob = objective(w)
        for _ in range(int(self.max_iter)):
            mean = np.add.reduceat(C * prob[:, None], starts)  # (t, p): E_p[z] per row
            grad = mean.sum(axis=0) - target + self.l2 * w
            hess = (C * prob[:, None]).T @ C - mean.T @ mean + self.l2 * np.eye(p_dim)
            step = np.linalg.solve(hess, grad)
            decrement = float(grad @ step)
            if decrement / 2 < self.tol:
                break
            # Backtracking (Armijo): the full step is taken near the optimum.
            lr = 1.0
            while lr > 1e-8:
                w_new = w - lr * step
                f_new, prob_new = objective(w_new)
                if f_new <= f - 1e-4 * lr * decrement:
                    break
                lr /= 2
            else:
                break
            w, f, prob = w_new, f_new, prob_new
        return w

    def config(self) -> dict[str, Any]:
        """JSON description (provenance, AFLite checkpoints)."""
        return {
            "model": "conditional_logit",
            "n_features": int(self.n_features),
            "l2": float(self.l2),
            "max_iter": int(self.max_iter),
            "tol": float(self.tol),
        }
