"""Sparse features (bag of words, tf-idf): each classifier on its own rows and columns.

A group's training rows form one block-diagonal CSR matrix (``torch`` CSR with int32
indices, on CPU and CUDA), block ``j`` holding classifier ``j``'s ``t`` rows on only the
columns they touch (:class:`_SparseGroup`), so a gradient costs two sparse products of
``2 nnz(rows) r`` FLOPs: no ``N / t`` overhead and no scatter. When a partition has fewer
rows than columns (AFLite's partitions on a vocabulary: 982 SNLI pairs touch ~4,200 of
8,939 bag-of-words columns) L-BFGS runs in the rows' coordinates ``W = X_j^T A``, the
same iterates with vectors of ``2 (t + 1) r`` entries. L-BFGS's vector work over the
vocabulary-sized weights had dominated (the earlier path, every classifier on all ``d``
columns, was no faster than scikit-learn per partition); it is now 5-9x faster on SNLI
bag of words and tf-idf (``bench/bench_aflite_sparse.py``, whose JSON logs what was
tried).

Sparse features run plain L-BFGS from zero (scikit-learn's own start, with the usual
``s'y / y'y`` scaling), whatever ``precondition`` says. The dense preconditioner (the
Hessian at the pooled solution, ``(d+1) r`` squared) is out of reach at vocabulary sizes
(35,760 columns: 10 GB per class block), and its diagonal (Jacobi), tried on SNLI bag of
words (t = 982, 32 classifiers), took more iterations than no preconditioner (median 63
from the pooled start and 72 from zero, against 43) and 4x the gradient evaluations; a
start from the pooled solution alone took as many iterations as zero (47 vs 43) and
would leave the rows' span. Prediction blocks are sliced in SciPy, since torch cannot
index CSR rows.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp

from spurious.models.batched.backend import _torch
from spurious.models.batched.objective import logit_residual


class _SparseX:
    """A CSR feature matrix (float32, sorted indices) where the model holds its features.

    Quacks like the dense tensor where the model reads it (``shape``, ``dtype``, ``nnz``);
    groups take their rows from :attr:`csr` (:class:`_SparseGroup`), predictions take
    row blocks (:meth:`block`).
    """

    def __init__(self, X: sp.csr_matrix, device: Any) -> None:
        torch = _torch()
        self.csr = sp.csr_matrix(X, dtype=np.float32)
        self.csr.sort_indices()
        self.device = device
        self.shape = tuple(int(s) for s in self.csr.shape)
        self.dtype = torch.float32
        self.nnz = int(self.csr.nnz)

    def block(self, lo: int, hi: int) -> Any:
        """Rows ``lo:hi`` as a torch CSR tensor (for prediction blocks)."""
        return _torch_csr(self.csr[lo:hi], self.device)


class _SparseGroup:
    """A group of ``g`` classifiers on sparse features, each on its own rows and columns.

    Classifier ``j`` sees the ``t`` rows ``X_j`` of its partition, which touch ``d_j``
    columns. The gradient of a weight whose column ``X_j`` never touches is ``lambda W``,
    so from L-BFGS's zero start it stays exactly zero (every direction is a combination
    of gradients): those weights are dropped, and classifier ``j`` runs on its own
    columns only (padded with inert zeros to the group's largest ``d_j``), the same
    iterates in fewer coordinates.

    When the rows are fewer than the columns (``2 (t + 1) < d_j + 1``, AFLite's
    small partitions on a vocabulary) the iterates are also carried in the rows'
    coordinates: every gradient is ``(X_j^T C, c)``, so every iterate is
    ``W = X_j^T A`` with an intercept ``b``. A vector is stored as ``[A; b; K A; b]``
    with ``K = X_j X_j^T`` applied on the fly, and L-BFGS's inner products become
    ``<A, K A'> + b b'``: the same iterates (in exact arithmetic) with vectors of
    ``2 (t + 1) r`` instead of ``(d_j + 1) r`` entries; the logits ``X_j W = K A`` are
    read off the vector, and each evaluation costs two sparse products (``X_j^T C``,
    which is also the weight gradient for the stopping rule, and ``X_j`` times it).
    """

    #: L-BFGS memory and two-loop recursion in float32 (see :class:`~spurious.models.
    #: batched.lbfgs._History`): they only shape the search direction, while steps are
    #: accepted and stopped on float64 gradients (as the dense preconditioner is applied
    #: in float32); half the memory traffic of the recursion, which dominates here.
    history_dtype = "float32"

    #: ``"auto"``: the rows' coordinates when ``2 (t + 1) < d_j + 1``, else the own
    #: columns; ``"rows"`` or ``"columns"`` force one (both are exact; for benchmarks).
    layout = "auto"

    #: Fit the intercept of the centred rows ``x - mean(X_j)`` (``b' = b + mean W``): the
    #: same minimiser in fewer iterations where all rows share frequent words (SNLI bag
    #: of words: 42 evaluations instead of 59; tf-idf: 41 instead of 44). Off: the
    #: stopping point moves within ``tol``, which flips a few borderline predictions,
    #: and AFLite's random slices amplify that (removed sets of the 600-pair planted set:
    #: Jaccard 0.44 and 0.28 against the uncentred fit, whose sets are the earlier
    #: solver's). An option for callers who prefer speed to continuity.
    centre = False

    def __init__(self, data: Any, tidx: np.ndarray, basis: Any, mask: Any, scale: float) -> None:
        torch = _torch()
        x: _SparseX = data.x32
        self.data = data
        self.g, self.t = (int(s) for s in tidx.shape)
        g, t, d = self.g, self.t, x.shape[1]
        rows = x.csr[tidx.reshape(-1)]  # (g t, d): classifier j's rows are block j
        owner = np.repeat(np.repeat(np.arange(g, dtype=np.int64), t), np.diff(rows.indptr))
        keys, inverse = np.unique(owner * d + rows.indices, return_inverse=True)
        key_owner = keys // d
        counts = np.bincount(key_owner, minlength=g)
        self.d_loc = d_loc = max(int(counts.max()), 1)
        local = np.arange(len(keys)) - np.concatenate([[0], np.cumsum(counts)[:-1]])[key_owner]
        # Global column of each local one; padding points at a discarded extra column d.
        cols = np.full((g, d_loc), d, dtype=np.int64)
        cols[key_owner, local] = keys % d
        self.cols = torch.from_numpy(cols + np.arange(g)[:, None] * (d + 1)).to(data.device)
        block = sp.csr_matrix(
            (rows.data, (key_owner * d_loc + local)[inverse], rows.indptr),
            shape=(g * t, g * d_loc),
        )
        self.x, self.xt = _torch_csr(block, data.device), _torch_csr(block.T.tocsr(), data.device)
        self.kernel = self.layout == "rows" or (self.layout == "auto" and 2 * (t + 1) < d_loc + 1)
        a = 2 * (t + 1) if self.kernel else d_loc + 1
        self.shape = (g, a, data.r)
        self.basis = basis  # (g, k, r) float32
        self.basis_t = basis.transpose(1, 2).contiguous()  # (g, r, k)
        self.basis_t64 = self.basis_t.to(torch.float64)
        self.mask = mask  # (g, k, 1) with 0 / -inf, or None
        self.y = data.y[torch.from_numpy(tidx).to(data.device)][:, None, :]  # (g, 1, t)
        self.minus_one = torch.full((g, 1, t), -1.0, device=data.device)
        self.scale = scale
        self.n_evals = {"float32": 0, "bfloat16": 0}
        # Column means of each classifier's rows (g, d_loc, 1), for the centred intercept.
        self.mean = None
        if self.centre:
            ones = torch.full((g * t, 1), 1.0 / t, device=data.device)
            self.mean = (self.xt @ ones).view(g, d_loc, 1).to(torch.float64)

    def _weights(self, coef: Any) -> Any:
        """``X_j^T coef_j`` of every classifier, (g, d_loc, r) float32."""
        g, r = self.g, self.data.r
        return (self.xt @ coef.reshape(g * self.t, r).to(_torch().float32)).view(g, self.d_loc, r)

    def gradient(self, theta: Any, low: bool = False) -> tuple[Any, Any]:
        """Gradient (g, a, r) float64 at ``theta`` (this group's layout, see the class
        docstring) and its max-abs in the original class space (g,)."""
        torch = _torch()
        g, t, r, d_loc, lam = self.g, self.t, self.data.r, self.d_loc, self.data.lam
        self.n_evals["float32"] += 1
        if self.kernel:
            bias = theta[:, t, :]
            z = theta[:, t + 1 : 2 * t + 1, :]  # K A: the logits of W = X_j^T A
            if self.centre:  # (x - mean) W: the rows' mean logit
                bias = bias - z.mean(1)
        else:
            W, bias = theta[:, :d_loc, :], theta[:, d_loc, :]
            z = (self.x @ W.reshape(g * d_loc, r).to(torch.float32)).view(g, t, r)
            if self.centre:
                bias = bias - (self.mean * W).sum(1)
        z = z.transpose(1, 2).to(torch.float32, copy=True).contiguous()
        z += bias.to(torch.float32)[:, :, None]
        grad_r = logit_residual(self, z)  # (g, r, t)
        grad = torch.empty(self.shape, dtype=torch.float64, device=self.data.device)
        grad_b = grad_r.sum(2, dtype=torch.float64)
        if self.kernel:
            coef = grad[:, :t, :]
            coef.copy_(grad_r.transpose(1, 2))
            if self.centre:  # (x - mean)^T G = X^T (G - mean(G))
                coef -= (grad_b / t)[:, None, :]
            coef.add_(theta[:, :t, :], alpha=lam)
            grad_w = self._weights(coef)  # X_j^T (G + lam A): the weight gradient
            grad[:, t, :] = grad_b
            grad[:, t + 1 : 2 * t + 1, :] = (self.x @ grad_w.view(g * d_loc, r)).view(g, t, r)
            grad[:, 2 * t + 1, :] = grad_b
        else:
            rows = grad_r.transpose(1, 2).reshape(g * t, r)
            grad_w = (self.xt @ rows.contiguous()).view(g, d_loc, r)
            grad[:, :d_loc, :] = grad_w
            grad[:, :d_loc, :] += lam * W
            if self.centre:
                grad[:, :d_loc, :] -= self.mean * grad_b[:, None, :]
            grad[:, d_loc, :] = grad_b
            grad_w = grad[:, :d_loc, :]
        # Stopping rule: the max-abs gradient of the original (W, b) in class space; the
        # centred intercept's weight gradient is that minus mean * d/db.
        if self.centre:
            grad_w = grad_w + (self.mean * grad_b[:, None, :]).to(grad_w.dtype)
        # in float32 where grad_w was computed so (a float64 copy cost 10% of a fit)
        stop = torch.maximum(
            torch.bmm(grad_w, self.basis_t.to(grad_w.dtype)).abs().amax(dim=(1, 2)),
            torch.bmm(grad_b[:, None, :], self.basis_t64).abs().amax(dim=(1, 2)),
        ).to(torch.float64)
        return grad, stop

    def dot(self, u: Any, v: Any) -> Any:
        """L-BFGS's inner product (g,) of flat vectors in this group's layout."""
        torch = _torch()
        if not self.kernel:
            return torch.linalg.vecdot(u, v)
        half = u.shape[1] // 2
        return torch.linalg.vecdot(u[:, :half], v[:, half:])

    def l1(self, p: Any) -> Any:
        """The 1-norm (g,) of flat vectors ``p`` in the original weights and intercept."""
        if not self.kernel:
            return p.abs().sum(1)
        t = self.t
        p = p.view(self.shape)
        return self._weights(p[:, :t, :]).abs().sum((1, 2)) + p[:, t, :].abs().sum(1)

    def full_theta(self, theta: Any) -> Any:
        """``theta`` (this group's layout) as weights on every column and the intercept,
        (g, d + 1, r) float64."""
        torch = _torch()
        g, r, d = self.g, self.data.r, self.data.d
        if self.kernel:
            w, bias = self._weights(theta[:, : self.t, :]), theta[:, self.t, :]
        else:
            w, bias = theta[:, : self.d_loc, :], theta[:, self.d_loc, :]
        if self.centre:  # back to the intercept of the uncentred rows
            bias = bias - (self.mean * w.to(torch.float64)).sum(1)
        full = torch.zeros(g * (d + 1), r, dtype=torch.float64, device=self.data.device)
        full.index_copy_(0, self.cols.reshape(-1), w.reshape(-1, r).to(torch.float64))
        full = full.view(g, d + 1, r)  # the padding wrote zeros into the intercept row
        full[:, d, :] = bias
        return full


def _torch_csr(X: sp.csr_matrix, device: Any) -> Any:
    """``X`` as a float32 torch CSR tensor; int32 indices where they fit (CSR @ dense
    ran 30% faster with them than with int64 on SNLI bag-of-words blocks)."""
    torch = _torch()
    X = sp.csr_matrix(X, dtype=np.float32)
    index = np.int32 if max(X.nnz, *X.shape) < 2**31 else np.int64
    with warnings.catch_warnings():
        # torch calls its CSR support "beta" and warns once per process; the products
        # used here (CSR @ dense) are covered by the tests.
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        warnings.filterwarnings("ignore", message="Sparse invariant checks")
        return torch.sparse_csr_tensor(
            torch.from_numpy(X.indptr.astype(index)),
            torch.from_numpy(X.indices.astype(index)),
            torch.from_numpy(np.ascontiguousarray(X.data)),
            size=X.shape,
            device=device,
        )


def is_sparse(X: Any) -> bool:
    return isinstance(X, _SparseX)


def matmul(X: Any, W: Any) -> Any:
    """``X @ W`` (N, c) for a dense tensor or a :class:`_SparseX` ``X`` and dense ``W``."""
    if isinstance(X, _SparseX):
        return _torch_csr(X.csr, X.device) @ W.contiguous()
    return X @ W
