"""Batched logistic regression: AFLite's ``m`` linear classifiers fitted together.

:class:`BatchedLogisticRegression` implements :class:`~spurious.models.partition.PartitionModel`.
Classifier ``j`` minimises scikit-learn's ``LogisticRegression(C=C)`` objective on the rows
``train_idx[j]`` (divided by ``C t``, the same minimiser)::

    mean_i CE(x_i W_j + b_j, y_i) + ||W_j||^2 / (2 C t)

with an unpenalised intercept. Multinomial when a classifier's training rows hold three or
more classes; binary (one weight vector, as scikit-learn does) when they hold two.

Design
------
* **One matmul for many classifiers.** A group of ``chunk_size`` classifiers is evaluated
  with one GEMM ``X @ W_group`` (``W_group`` is ``d x chunk_size*(k-1)``) over all ``N``
  rows; each classifier then gathers the logits of its own ``t`` rows, and its gradient
  rows are scattered into a zero ``N x chunk_size*(k-1)`` matrix so that a second GEMM
  ``G^T X`` gives every classifier's gradient. This spends ``N/t`` times the minimal FLOPs
  but runs at dense GEMM speed. Per-classifier gathers (``t x d @ d x (k-1)``) would be
  memory-bound: this machine streams ~10 GB/s, i.e. ~1.3 s per evaluation for gathering
  ``m t d`` floats at the paper's SNLI scale, against ~2 s of float32 GEMM that also
  does the work. Gathered copies of the rows are never materialised; memory beyond ``X``
  is O(N chunk_size k) plus the O((d k)^2) preconditioner.
* **k-1 logits per classifier.** The minimiser has zero-sum class weights (the loss is
  invariant to adding a vector to every class, the penalty is not), so weights live in an
  orthonormal zero-sum basis: ``k-1`` GEMM columns per classifier instead of ``k``, same
  objective. A classifier whose rows hold two classes is binary (scikit-learn's binary
  objective, one weight vector); absent classes are never predicted.
* **Optimiser.** Full-batch L-BFGS (float64 state, history 10) per classifier, batched
  with masks: each classifier has its own history, step and line search and stops on its
  own when the max-abs gradient of its objective, in the original parameters ``(W, b)``
  and class space, is at most ``tol`` (scikit-learn's ``gtol`` for ``lbfgs``) or after
  ``max_iter`` iterations. The line search brackets the zero of the directional
  derivative (secant steps; accepts ``-0.9 <= phi'(a)/|phi'(0)| <= 0.5``) and never
  compares loss values, which are too coarse once logits are rounded to bfloat16.
* **Preconditioning and warm start.** A *pooled* model (the same objective, same
  ``lambda = 1/(C t)``, fitted on a fixed strided subsample of ``X``) gives a shared
  starting point; the exact Hessian of the objective at the pooled solution, estimated on
  ``hessian_rows`` rows, gives a shared preconditioner: every classifier runs L-BFGS with
  that Hessian's inverse as its initial inverse Hessian ``H0`` (the same iterates as
  plain L-BFGS in coordinates where that Hessian is the identity, at one ``(D, D)``
  product per iteration, in float32, where a change of variables costs two per
  evaluation; rescaling ``H0`` by ``s'y/y'y`` made iteration counts erratic).
  Classifiers trained on random subsets of the same data start close to their solution
  and see nearly that Hessian, so a handful of iterations suffice (5-8 at the benchmark
  settings against 40-100+ for scikit-learn). Start and preconditioner depend on ``X``,
  ``y``, ``t`` and the hyperparameters only, never on which classifiers are fitted, and
  the penalty stays on the original weights, so each minimiser is scikit-learn's.
* **One start for many calls.** Building the start (pooled fit, Hessian GEMMs, a
  Cholesky inverse of a ``(D, D)`` matrix) cost 50-57% of an AFLite round at 10k x 1,536
  although a round changes ~2% of the rows. :meth:`~BatchedLogisticRegression.shared_start`
  builds it once as a :class:`SharedStart` (plain arrays) that ``fit_predict(...,
  start=...)`` reuses; AFLite builds it once per run on the initial data D. A start
  computed on D is still close for later rounds (7-8 iterations per classifier in
  round 21 of SNLI dev as in round 1), and being a fixed function of the inputs it keeps
  results chunk-invariant and a resumed run exact.
* **Threads.** On CPU, groups whose forward + gradient GEMM is small (under
  :attr:`~BatchedLogisticRegression.parallel_groups_below` FLOPs, e.g. 10k x 1,536)
  run in parallel, whole groups on worker threads with one intra-op thread each; larger
  groups run one after another with every thread inside the GEMMs. L-BFGS on a group is
  hundreds of small float64 operations per iteration, and torch's intra-op threads
  synchronise on each: on 2 busy cores (load 4-7) a round at 10k x 1,536 took 5-19 s
  with torch's default 2 intra-op threads against 0.9-2.0 s with one, and the pooled
  start 18.6 s against 6.4 s. A small group's arithmetic is therefore that of a
  one-thread run whatever the machine's thread count.
* **Chunk invariance.** Classifiers are processed in fixed groups of ``chunk_size``
  consecutive rows of ``train_idx`` (the last group padded with inert copies), and every
  tensor operation has the same shape in every group, so a classifier's result depends
  only on its own rows, its position in its group, ``X`` and ``y``. Calling
  ``fit_predict`` on ``train_idx[a:b]`` with ``a`` a multiple of ``chunk_size`` therefore
  returns exactly (bitwise) the rows ``a:b`` of the full call. A split elsewhere moves a
  classifier to another column of the GEMM, and MKL's float32 GEMM rounds a column
  differently depending on its position and on the number of columns, so executors
  should split at multiples of :attr:`group_size` (``spurious.detectors.aflite`` does).
  Bitwise equality also assumes the same device and dtype, the same start (built per
  call on the same ``X``, or the same :class:`SharedStart`), and, for large groups only,
  the same torch thread count.
* **Precision.** ``dtype="float32"`` (default) runs everything in float32 (float64
  optimiser state). ``"bfloat16"`` trains on a centred bfloat16 copy of ``X`` (GEMMs
  with float32 accumulation, ~2.7x the float32 rate on CPUs with AVX512-BF16); its
  gradients carry ~1e-5 rounding noise, which the original-space stopping rule multiplies
  by the features' common mean (embeddings have a large one), so in bfloat16 ``tol``
  applies to the gradient w.r.t. the centred features' weights (same minimiser).
  Predictions are always made in float32.
* **Devices.** ``device="cuda"`` runs the same code with every tensor on the GPU.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(200, 5)).astype(np.float32)
>>> y = (X[:, 0] > 0).astype(np.int64)
>>> train_idx = np.stack([rng.permutation(200)[:50] for _ in range(4)])
>>> model = BatchedLogisticRegression(device="cpu")
>>> pred = model.fit_predict(X, y, train_idx, n_classes=2)
>>> pred.shape, pred.dtype.name
((4, 200), 'int16')
>>> bool((pred == y).mean() > 0.9)
True
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np

from spurious.exceptions import LabelError, ParameterError, missing_dependency
from spurious.features.base import check_features
from spurious.utils.validation import Interval, StrOptions, check_params

logger = logging.getLogger(__name__)

#: Classifiers per internal group when ``chunk_size=None``. A constant (not derived from
#: ``m``) so that chunks of a split ``train_idx`` line up with the groups of the full call.
DEFAULT_CHUNK_SIZE = 32

# L-BFGS line search: accept a step when the directional derivative phi'(a) lies in
# [-_C2, _C3] * |phi'(0)| (Wolfe curvature condition, plus a bound on overshooting that
# keeps phi(a) < phi(0) for near-quadratic phi).
_C2, _C3 = 0.9, 0.5
_MAX_LINE_SEARCH = 25
# Rows for the covariance (Hessian at zero) that preconditions the pooled fit.
_ZERO_HESSIAN_ROWS = 4096

# Optimisation status codes (``status_``).
RUNNING, CONVERGED, MAX_ITER, LINE_SEARCH_FAILED = 0, 1, 2, 3
STATUS_NAMES = {
    RUNNING: "running",
    CONVERGED: "converged",
    MAX_ITER: "max_iter",
    LINE_SEARCH_FAILED: "line_search_failed",
}


def _torch():
    try:
        import torch
    except ImportError:
        raise missing_dependency("torch", "torch", "BatchedLogisticRegression") from None
    return torch


def zero_sum_basis(k: int) -> np.ndarray:
    """Orthonormal basis ``(k, k-1)`` of the vectors whose entries sum to zero (Helmert).

    Examples
    --------
    >>> Q = zero_sum_basis(3)
    >>> np.allclose(Q.T @ Q, np.eye(2)), np.allclose(Q.sum(0), 0)
    (True, True)
    """
    Q = np.zeros((k, k - 1))
    for c in range(1, k):
        Q[:c, c - 1] = 1.0
        Q[c, c - 1] = -float(c)
        Q[:, c - 1] /= math.sqrt(c * (c + 1))
    return Q


def class_basis(present: np.ndarray, r: int) -> np.ndarray:
    """Map ``(k, r)`` from a classifier's ``r`` free logits to the ``k`` class logits.

    scikit-learn fits a classifier on the classes present in its training rows: a
    multinomial model (zero-sum weights, an orthonormal basis) for three or more classes,
    a binary model (one weight vector; the logit of the larger class against 0) for two,
    nothing for one. Unused columns are zero.

    Examples
    --------
    >>> class_basis(np.array([True, False, True]), 2)
    array([[0., 0.],
           [0., 0.],
           [1., 0.]])
    """
    k = present.size
    idx = np.flatnonzero(present)
    basis = np.zeros((k, r))
    if len(idx) == 2:
        basis[idx[1], 0] = 1.0
    elif len(idx) >= 3:
        basis[idx, : len(idx) - 1] = zero_sum_basis(len(idx))
    return basis


@dataclass
class _Data:
    """Everything shared by all groups of one ``fit_predict`` call."""

    x32: Any  # (N, d) float32 features, on the device
    x_low: Any  # (N, d) bfloat16 copy of x32 - mean, or None (float32 training)
    mean: Any  # (d,) float32 centring vector of x_low, or None
    y: Any  # (N,) int64 labels
    n_classes: int
    r: int  # free logits per classifier: k-1 (k>=3) or 1 (k=2)
    lam: float  # 1 / (C t)
    device: Any

    @property
    def n(self) -> int:
        return int(self.x32.shape[0])

    @property
    def d(self) -> int:
        return int(self.x32.shape[1])


class _Preconditioner:
    """The initial inverse Hessian ``H0 = H^{-1}`` of L-BFGS, from a Hessian estimate ``H``.

    L-BFGS with ``H0 = H^{-1}`` is L-BFGS with an identity ``H0`` in the coordinates in
    which ``H`` is the identity (same iterates in exact arithmetic), at one product with
    ``H^{-1}`` per iteration instead of two changes of variables per evaluation. ``H^{-1}``
    is dense ``(D, D)`` when the parameter count ``D = (d+1) r`` is small enough, else
    block-diagonal over the ``r`` logits (``(r, d+1, d+1)``, class coupling ignored), or
    ``None`` (the identity). It is applied in float32: it only shapes the search
    direction, while steps are accepted and stopped on float64 gradients.
    """

    def __init__(self, hinv: Any, blocked: bool) -> None:
        self.hinv = hinv
        self.blocked = blocked

    def apply(self, q: Any, shape: tuple[int, int, int]) -> Any:
        """``H0 q`` for ``q`` (g, D) float64 (parameters laid out as ``shape`` (g, a, r))."""
        if self.hinv is None:
            return q
        g, a, r = shape
        q32 = q.to(self.hinv.dtype)
        if not self.blocked:
            out = q32 @ self.hinv
        else:
            out = (q32.view(g, a, r).permute(2, 0, 1) @ self.hinv).permute(1, 2, 0)
        return out.reshape(g, a * r).to(q.dtype)


@dataclass(frozen=True)
class SharedStart:
    """Starting point and preconditioner shared by every classifier of a model.

    Built by :meth:`BatchedLogisticRegression.shared_start` on one matrix and passed to
    any number of :meth:`~BatchedLogisticRegression.fit_predict` calls (``start=``),
    which then skip building their own. AFLite builds it once per run on the initial
    training set D, so every round reuses it: rounds change only ~2% of the rows, and a
    start computed on D is a fixed function of the inputs, so results stay independent
    of chunking and a run resumed from a checkpoint stays exact. Plain NumPy arrays:
    picklable, so executors can ship it to workers once.

    Attributes
    ----------
    theta : ndarray of shape (d + 1, r)
        Pooled solution (weights, then intercept) in the free logits; zero without pooling.
    hinv : ndarray or None
        Inverse of the Hessian estimate (float32): ``(D, D)`` with ``D = (d+1) r``, or
        ``(r, d+1, d+1)`` when ``blocked``; ``None`` without preconditioning.
    blocked : bool
        Block-diagonal preconditioner (class coupling ignored).
    ref_present : ndarray of shape (n_classes,)
        Classes present in the pooled rows (classifiers with the same classes start
        from ``theta``; others from zero).
    key : dict
        What it was built for (features, classes, t and the hyperparameters it depends
        on); ``fit_predict`` refuses a start built for something else.
    stats : dict
        Rows, gradient evaluations, FLOPs and seconds spent building it.
    """

    theta: np.ndarray
    hinv: np.ndarray | None
    blocked: bool
    ref_present: np.ndarray
    key: dict[str, Any]
    stats: dict[str, Any]


class _Group:
    """A fixed-size group of ``g`` classifiers evaluated with shared GEMMs.

    After the GEMMs, each classifier's rows are laid out ``(g, classes, rows)``, so the
    softmax over the classes runs along contiguous memory.
    """

    def __init__(
        self,
        data: _Data,
        tidx: Any,
        basis: Any,
        mask: Any,
        scale: float,
        w_ref: Any = None,
        z_ref: Any = None,
        standard: Any = None,
    ) -> None:
        torch = _torch()
        self.data = data
        self.g, self.t = (int(s) for s in tidx.shape)
        g = self.g
        # Row (i, j) of the (N*g, r) view of the (N, g*r) logits of all classifiers.
        col = torch.arange(g, device=data.device)[:, None]
        self.flat = (tidx * g + col).reshape(-1)  # (g*t,)
        self.basis = basis  # (g, k, r) float32
        self.basis_t = basis.transpose(1, 2).contiguous()  # (g, r, k)
        self.basis_t64 = self.basis_t.to(torch.float64)
        self.mask = mask  # (g, k, 1) with 0 / -inf, or None
        self.y = data.y[tidx][:, None, :]  # (g, 1, t)
        self.minus_one = torch.full((g, 1, self.t), -1.0, device=data.device)
        self.scale = scale  # 1 / rows per classifier: the loss is a mean
        # GEMM operands are offsets from a reference solution w_ref (for the classifiers
        # that start there): the offsets and their logits stay small, so rounding them
        # to bfloat16 costs little absolute precision. z_ref = X w_ref in float32.
        self.w_ref = None
        self.z0 = None
        if w_ref is not None and bool(standard.any()):
            on = standard.to(torch.float64)[:, None, None]
            self.w_ref = w_ref[None, :, :] * on  # (g, d, r) float64
            self.z0 = (z_ref[:, tidx].permute(1, 0, 2) * on.to(torch.float32)).contiguous()
        # Rows repeated inside one classifier's training set (sampling with replacement)
        # must add up, which index_copy_ would not do. (index_add_ is deterministic on
        # CPU; on CUDA it uses atomics, so repeated rows there are not bitwise stable.
        # AFLite's partitions never repeat a row.)
        sorted_idx = torch.sort(tidx, dim=1).values
        self.has_repeats = bool((sorted_idx[:, 1:] == sorted_idx[:, :-1]).any())
        self._buffers: dict[Any, Any] = {}
        self.n_evals = {"float32": 0, "bfloat16": 0}

    def _buffer(self, dtype: Any) -> Any:
        # The scatter target is written at the same positions every evaluation, so it
        # is zeroed once; everything else stays zero.
        if dtype not in self._buffers:
            torch = _torch()
            shape = (self.data.n * self.g, self.data.r)
            self._buffers[dtype] = torch.zeros(shape, dtype=dtype, device=self.data.device)
        return self._buffers[dtype]

    def gradient(self, theta: Any, low: bool) -> tuple[Any, Any]:
        """Gradient (g, d+1, r) float64 of each classifier's objective at ``theta``, and
        its max-abs in the original class space (g,) (the stopping criterion).

        ``low``: GEMMs in bfloat16 on the centred copy of ``X``.
        """
        torch = _torch()
        data, g, t, r, d, n = self.data, self.g, self.t, self.data.r, self.data.d, self.data.n
        X = data.x_low if low else data.x32
        self.n_evals["bfloat16" if low else "float32"] += 1
        W = theta[:, :d, :]
        delta = W if self.w_ref is None else W - self.w_ref
        bias = theta[:, d, :]
        if low:
            # x W = (x - mean) delta + mean delta + x w_ref
            bias = bias + torch.einsum("d,gdr->gr", data.mean.to(torch.float64), delta)
        w_op = delta.permute(1, 0, 2).reshape(d, g * r).to(X.dtype)
        logits_all = X @ w_op  # (N, g*r): every classifier's logits on every row
        z = logits_all.view(n * g, r).index_select(0, self.flat)  # its own rows
        z = z.view(g, t, r).transpose(1, 2).to(torch.float32, copy=True).contiguous()
        if self.z0 is not None:
            z += self.z0
        z += bias.to(torch.float32)[:, :, None]
        logits = torch.bmm(self.basis, z)  # (g, k, t)
        if self.mask is not None:
            logits += self.mask
        prob = torch.softmax(logits, dim=1)
        prob.scatter_add_(1, self.y, self.minus_one)  # p - onehot(y)
        grad_r = torch.bmm(self.basis_t, prob).mul_(self.scale)  # (g, r, t)
        rows = grad_r.transpose(1, 2).reshape(g * t, r).to(X.dtype)
        buf = self._buffer(X.dtype)
        if self.has_repeats:
            buf.zero_()
            buf.index_add_(0, self.flat, rows)
        else:
            buf.index_copy_(0, self.flat, rows)
        grad_w = buf.view(n, g * r).T @ X  # (g*r, d); streams X row-major once
        grad = torch.empty(g, d + 1, r, dtype=torch.float64, device=data.device)
        grad[:, :d, :] = grad_w.view(g, r, d).transpose(1, 2)
        grad[:, :d, :] += data.lam * W
        grad[:, d, :] = grad_r.sum(2, dtype=torch.float64)
        # Stopping criterion: max-abs gradient in the class space (g, d+1, k). In float32
        # it is taken in the original weights, as scikit-learn does. In bfloat16 it is
        # taken w.r.t. the weights of the centred features (what ``grad`` holds here):
        # the original one adds mean * (intercept gradient), which multiplies the
        # intercept's rounding noise by the features' common mean.
        stop = torch.bmm(grad, self.basis_t64).abs().amax(dim=(1, 2))
        if low:
            grad[:, :d, :] += data.mean.to(torch.float64)[None, :, None] * grad[:, d : d + 1, :]
        return grad, stop


def _lbfgs(
    group: _Group,
    start: Any,
    precond: _Preconditioner,
    active: Any,
    *,
    max_iter: int,
    tol: float,
    history: int,
    first_step: str,
    low: bool,
    scale_h0: bool,
) -> tuple[Any, Any, Any]:
    """Batched L-BFGS with an independent line search per classifier.

    Minimises over ``theta`` (g, d+1, r) from ``start``, with the initial inverse
    Hessian ``precond`` (see :class:`_Preconditioner`). Returns ``theta``, iterations
    (g,) and status codes (g,). ``scale_h0``: scale the initial inverse Hessian by
    ``s'y / y'y`` (standard L-BFGS); without it ``H0`` is used as is, right when it is
    a good Hessian estimate (one step's curvature ratio would mis-scale all other
    directions).
    """
    torch = _torch()
    dev = start.device
    g, a, r = start.shape
    D = a * r
    f64 = torch.float64

    def evaluate(x):
        grad, gmax = group.gradient(x.view(g, a, r), low)
        return grad.reshape(g, D), gmax

    def dot(u, v):
        return (u * v).sum(1)

    x = start.reshape(g, D).to(f64, copy=True)
    gx, gmax = evaluate(x)
    n_iter = torch.zeros(g, dtype=torch.long, device=dev)
    status = torch.full((g,), RUNNING, dtype=torch.long, device=dev)
    status = torch.where(active & (gmax <= tol), CONVERGED, status)
    if max_iter == 0:
        status = torch.where(active & (status == RUNNING), MAX_ITER, status)
    done = ~active | (status != RUNNING)

    # History newest first (slot 0); unused slots are zero with rho = 0, which makes
    # them no-ops in the two-loop recursion, so classifiers need no per-slot masks.
    s_hist = torch.zeros(history, g, D, dtype=f64, device=dev)
    y_hist = torch.zeros(history, g, D, dtype=f64, device=dev)
    rho = torch.zeros(history, g, dtype=f64, device=dev)
    used = 0  # slots holding at least one classifier's pair

    def direction(grad):
        q = grad.clone()
        alphas = []
        for i in range(used):
            alpha_i = rho[i] * dot(s_hist[i], q)
            q -= alpha_i[:, None] * y_hist[i]
            alphas.append(alpha_i)
        q = precond.apply(q, (g, a, r))
        if scale_h0 and used:
            yy = dot(y_hist[0], y_hist[0])
            known = (rho[0] > 0) & (yy > 0)
            # Initial Hessian gamma * H0 with gamma = s'y / y'y of the newest pair.
            gamma = torch.where(known, 1.0 / (rho[0] * torch.where(known, yy, 1.0)), 1.0)
            q *= gamma[:, None]
        for i in reversed(range(used)):
            beta = rho[i] * dot(y_hist[i], q)
            q += (alphas[i] - beta)[:, None] * s_hist[i]
        return -q

    p = direction(gx)
    slope0 = dot(gx, p)
    if first_step == "unit":
        step = torch.ones(g, dtype=f64, device=dev)
    else:
        # Unpreconditioned start: scale the first step like torch/scipy (1 / ||g||_1).
        step = torch.clamp(1.0 / p.abs().sum(1).clamp_min(1e-300), max=1.0)
    lo_a = torch.zeros(g, dtype=f64, device=dev)
    lo_d = slope0.clone()
    hi_a = torch.full((g,), math.inf, dtype=f64, device=dev)
    hi_d = torch.zeros(g, dtype=f64, device=dev)
    n_ls = torch.zeros(g, dtype=torch.long, device=dev)

    while not bool(done.all()):
        trial = torch.where(done[:, None], x, x + step[:, None] * p)
        g_t, gmax_t = evaluate(trial)
        slope = dot(g_t, p)
        finite = torch.isfinite(g_t).all(1)
        bound = slope0.abs()
        ok = ((slope >= -_C2 * bound) & (slope <= _C3 * bound)) | (gmax_t <= tol)
        accept = ~done & ok & finite
        reject = ~done & ~accept

        # Rejected: shrink the bracket [lo, hi] around the zero of phi'(a) and try the
        # secant root (extrapolate while no overshoot has been seen).
        over = reject & (~finite | (slope > _C3 * bound))
        short = reject & ~over
        hi_a = torch.where(over, step, hi_a)
        hi_d = torch.where(over, torch.where(finite, slope, math.inf), hi_d)
        lo_a = torch.where(short, step, lo_a)
        lo_d = torch.where(short, slope, lo_d)
        width = hi_a - lo_a
        denom = hi_d - lo_d
        usable = (denom > 0) & torch.isfinite(hi_d)
        secant = lo_a - lo_d * width / torch.where(usable, denom, 1.0)
        inside = torch.where(
            usable,
            torch.minimum(torch.maximum(secant, lo_a + 0.1 * width), hi_a - 0.1 * width),
            lo_a + 0.5 * width,
        )
        grow = lo_d - slope0
        extra = lo_a * (-slope0) / torch.where(grow > 0, grow, 1.0)
        extra = torch.where(grow > 0, extra, 10.0 * lo_a)
        extra = torch.minimum(torch.maximum(extra, 2.0 * lo_a), 10.0 * lo_a)
        step = torch.where(reject, torch.where(torch.isfinite(hi_a), inside, extra), step)
        n_ls = n_ls + reject.long()
        status = torch.where(reject & (n_ls >= _MAX_LINE_SEARCH), LINE_SEARCH_FAILED, status)

        # Accepted: L-BFGS update with the pair (s, y) when its curvature is positive.
        s_vec = trial - x
        y_vec = g_t - gx
        sy = dot(s_vec, y_vec)
        upd = accept & (sy > 1e-12 * torch.sqrt(dot(s_vec, s_vec) * dot(y_vec, y_vec)))
        if bool(upd.any()):
            m3 = upd[None, :, None]
            s_hist = torch.where(m3, torch.cat([s_vec[None], s_hist[:-1]]), s_hist)
            y_hist = torch.where(m3, torch.cat([y_vec[None], y_hist[:-1]]), y_hist)
            rho_new = torch.cat([(1.0 / torch.where(upd, sy, 1.0))[None], rho[:-1]])
            rho = torch.where(upd[None, :], rho_new, rho)
            used = min(history, used + 1)
        x = torch.where(accept[:, None], trial, x)
        gx = torch.where(accept[:, None], g_t, gx)
        n_iter = n_iter + accept.long()
        status = torch.where(accept & (gmax_t <= tol), CONVERGED, status)
        status = torch.where(accept & (status == RUNNING) & (n_iter >= max_iter), MAX_ITER, status)
        done = done | (status != RUNNING)

        renew = accept & ~done
        if bool(renew.any()):
            p_new = direction(gx)
            slope_new = dot(gx, p_new)
            # Not a descent direction (numerical trouble): forget the history and
            # restart from the preconditioned gradient.
            reset = renew & ~(slope_new < 0)
            if bool(reset.any()):
                p_reset = -precond.apply(gx, (g, a, r))
                p_new = torch.where(reset[:, None], p_reset, p_new)
                slope_new = torch.where(reset, dot(gx, p_reset), slope_new)
                s_hist = torch.where(reset[None, :, None], 0.0, s_hist)
                y_hist = torch.where(reset[None, :, None], 0.0, y_hist)
                rho = torch.where(reset[None, :], 0.0, rho)
            p = torch.where(renew[:, None], p_new, p)
            slope0 = torch.where(renew, slope_new, slope0)
            step = torch.where(renew, 1.0, step)
            lo_a = torch.where(renew, 0.0, lo_a)
            lo_d = torch.where(renew, slope_new, lo_d)
            hi_a = torch.where(renew, math.inf, hi_a)
            hi_d = torch.where(renew, 0.0, hi_d)
            n_ls = torch.where(renew, 0, n_ls)

    return x.view(g, a, r), n_iter, status


class BatchedLogisticRegression:
    """Many L2-regularised logistic regressions, one per partition, fitted in one batch.

    Implements :class:`~spurious.models.partition.PartitionModel` for AFLite: classifier
    ``j`` is fitted on ``X[train_idx[j]]`` and predicts every row of ``X_predict``. Each
    converges to the minimiser of scikit-learn's ``LogisticRegression(C=C)`` on its rows;
    see the module docstring for the algorithm.

    Parameters
    ----------
    C : float, default=1.0
        Inverse L2 strength, as in scikit-learn (penalty ``||W||^2 / 2`` against
        ``C * sum of losses``; the intercept is not penalised).
    max_iter : int, default=100
        Maximum L-BFGS iterations per classifier.
    tol : float, default=1e-4
        Stop a classifier when the max-abs gradient of its objective (mean loss +
        ``||W||^2 / (2 C t)``, in the original weights and intercepts) is ``<= tol``:
        scikit-learn's stopping rule for ``solver="lbfgs"``.
    device : {"auto", "cpu", "cuda"}, default="auto"
        ``"auto"`` is CUDA when ``torch.cuda.is_available()``.
    dtype : {"float32", "bfloat16"}, default="float32"
        Precision of ``X`` and the GEMM operands during training (accumulation and the
        optimiser are float32/float64; predictions are float32). In bfloat16, ``tol``
        applies to the gradient w.r.t. the weights of the centred features (see the
        module docstring).
    chunk_size : int, optional
        Classifiers per internal group (default :data:`DEFAULT_CHUNK_SIZE`). Results are
        bitwise identical when a caller splits ``train_idx`` at multiples of it.
    history_size : int, default=10
        L-BFGS memory.
    precondition : {"pooled", "covariance", "none"}, default="pooled"
        ``"pooled"``: start every classifier from a pooled model fitted on a subsample of
        ``X`` and precondition with the Hessian there. ``"covariance"``: start from zero,
        precondition with the Hessian at zero (a covariance whitening). ``"none"``: plain
        L-BFGS from zero (for comparison).
    pooled_rows : int, optional
        Rows (a fixed stride through ``X``) for the pooled model; default
        ``min(N, max(32768, 3 t))``. More rows put the start closer to every classifier's
        solution.
    hessian_rows : int, optional
        Rows (a subset of those) for the Hessian estimate; default
        ``max(4096, min(64 (d + 1), 2.5 t))``. Its relative sampling error, about
        ``sqrt(d / rows)``, sets how far each classifier's preconditioned problem is from
        the identity (at the SNLI setting 65536 rows gave 8 evaluations, 32768 gave 12;
        at 10k x 1,536 with t = 984, 4096 rows gave the 8 iterations of 8192 in half the
        time, 2048 gave 10).
    predict_block : int, default=65536
        Rows of ``X_predict`` per prediction GEMM (bounds memory).
    num_threads : int, optional
        CPU threads (default ``torch.get_num_threads()``): worker threads for small
        groups, intra-op threads for large ones (see the module docstring, "Threads").

    Attributes
    ----------
    coef_ : ndarray of shape (m, n_classes, d)
        Class weights of each classifier after ``fit_predict`` (zero-sum like
        scikit-learn's multinomial ``coef_``; for a binary fit the row of the first
        present class is zero and that of the second is scikit-learn's ``coef_[0]``).
    intercept_ : ndarray of shape (m, n_classes)
        Intercepts; ``-inf`` for classes absent from a classifier's training rows.
    n_iter_ : ndarray of shape (m,)
        L-BFGS iterations per classifier.
    status_ : ndarray of shape (m,)
        ``1`` converged, ``2`` hit ``max_iter``, ``3`` line search failed (see
        :data:`STATUS_NAMES`).
    stats_ : dict
        Timings, gradient evaluations and GEMM FLOPs of the last call.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 4)).astype(np.float32)
    >>> y = np.argmax(X[:, :3], axis=1)
    >>> idx = np.stack([rng.choice(300, 100, replace=False) for _ in range(3)])
    >>> model = BatchedLogisticRegression(C=1.0, device="cpu")
    >>> model.fit_predict(X, y, idx, n_classes=3).shape
    (3, 300)
    >>> model.status_.tolist()
    [1, 1, 1]
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "C": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "device": [StrOptions({"auto", "cpu", "cuda"})],
        "dtype": [StrOptions({"float32", "bfloat16"})],
        "chunk_size": [Interval(Integral, 1, None, closed="left"), None],
        "history_size": [Interval(Integral, 1, None, closed="left")],
        "precondition": [StrOptions({"pooled", "covariance", "none"})],
        "pooled_rows": [Interval(Integral, 1, None, closed="left"), None],
        "hessian_rows": [Interval(Integral, 1, None, closed="left"), None],
        "predict_block": [Interval(Integral, 1, None, closed="left")],
        "num_threads": [Interval(Integral, 1, None, closed="left"), None],
    }

    #: Forward + gradient GEMM FLOPs of one group below which groups run in parallel on
    #: one thread each instead of one after another on every thread (see ``_threading``).
    parallel_groups_below: ClassVar[float] = 1e10

    #: Above this many parameters per classifier the Hessian preconditioner ignores the
    #: coupling between logits (block-diagonal), bounding its memory and Cholesky cost.
    max_dense_hessian: ClassVar[int] = 6144

    def __init__(
        self,
        C: float = 1.0,
        max_iter: int = 100,
        tol: float = 1e-4,
        device: str = "auto",
        dtype: str = "float32",
        chunk_size: int | None = None,
        history_size: int = 10,
        precondition: str = "pooled",
        pooled_rows: int | None = None,
        hessian_rows: int | None = None,
        predict_block: int = 65536,
        num_threads: int | None = None,
    ) -> None:
        self.C = C
        self.max_iter = max_iter
        self.tol = tol
        self.device = device
        self.dtype = dtype
        self.chunk_size = chunk_size
        self.history_size = history_size
        self.precondition = precondition
        self.pooled_rows = pooled_rows
        self.hessian_rows = hessian_rows
        self.predict_block = predict_block
        self.num_threads = num_threads

    # -- public API ------------------------------------------------------------------

    @property
    def group_size(self) -> int:
        """Classifiers per internal group (split ``train_idx`` at multiples of this)."""
        return DEFAULT_CHUNK_SIZE if self.chunk_size is None else int(self.chunk_size)

    def config(self) -> dict[str, Any]:
        """JSON description (for provenance and checkpoints)."""
        return {
            "model": "batched-logistic",
            "C": float(self.C),
            "max_iter": int(self.max_iter),
            "tol": float(self.tol),
            "device": self.device,
            "dtype": self.dtype,
            "chunk_size": self.group_size,
            "history_size": int(self.history_size),
            "precondition": self.precondition,
            "pooled_rows": self.pooled_rows,
            "hessian_rows": self.hessian_rows,
            # 2: one start per run (shared_start), H0 = H^-1 in float32, group threads.
            "version": 2,
        }

    def shared_start(self, X: np.ndarray, y: np.ndarray, t: int, n_classes: int) -> SharedStart:
        """The starting point and preconditioner for classifiers of ``t`` rows of ``X``.

        ``fit_predict`` builds one per call unless given one (``start=``); build it once
        and pass it to every call that fits classifiers on (subsets of) the same data,
        e.g. every AFLite round. It depends on ``X``, ``y``, ``t`` and the
        hyperparameters only.

        Parameters
        ----------
        X : ndarray of shape (N, d)
            Features the pooled model is fitted on (a fixed strided subsample of them).
        y : ndarray of shape (N,)
            Integer label ids in ``[0, n_classes)``.
        t : int
            Training rows per classifier (sets the penalty ``1 / (C t)``).
        n_classes : int
            Number of classes (>= 2).

        Returns
        -------
        SharedStart

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(300, 4)).astype(np.float32)
        >>> y = np.argmax(X[:, :3], axis=1)
        >>> model = BatchedLogisticRegression(device="cpu")
        >>> start = model.shared_start(X, y, t=100, n_classes=3)
        >>> idx = np.stack([rng.choice(300, 100, replace=False) for _ in range(3)])
        >>> bool((model.fit_predict(X, y, idx, 3, start=start)
        ...       == model.fit_predict(X, y, idx, 3, start=start)).all())
        True
        """
        check_params(self._parameter_constraints, self._params(), type(self).__name__)
        if isinstance(t, bool) or not isinstance(t, Integral) or t < 1:
            raise ParameterError(f"t must be an int >= 1; got {t!r}.")
        X, y, _, n_classes, _ = _validate(X, y, np.zeros((1, 1), np.int64), n_classes, None)
        intra_op, _ = self._threading(X.shape[0], X.shape[1], n_classes)
        with _threads(intra_op):
            data = self._make_data(X, y, n_classes, int(t))
            return self._shared_start(data, int(t))

    def fit_predict(
        self,
        X: np.ndarray,
        y: np.ndarray,
        train_idx: np.ndarray,
        n_classes: int,
        X_predict: np.ndarray | None = None,
        *,
        start: SharedStart | None = None,
    ) -> np.ndarray:
        """Fit classifier ``j`` on ``X[train_idx[j]]``; predict every row of ``X_predict``.

        Parameters
        ----------
        X : ndarray of shape (N, d)
            Features (converted to float32 if needed; must be finite).
        y : ndarray of shape (N,)
            Integer label ids in ``[0, n_classes)``.
        train_idx : ndarray of shape (m, t)
            Row indices into ``X`` of each classifier's training rows.
        n_classes : int
            Number of classes (>= 2).
        X_predict : ndarray of shape (M, d), optional
            Rows to predict (default ``X``).
        start : SharedStart, optional
            A start from :meth:`shared_start` with the same ``t``, features and classes;
            default: one built on this call's ``X``.

        Returns
        -------
        ndarray of shape (m, M), int16
            Predicted label ids.
        """
        check_params(self._parameter_constraints, self._params(), type(self).__name__)
        t0 = time.perf_counter()
        X, y, train_idx, n_classes, X_predict = _validate(X, y, train_idx, n_classes, X_predict)
        intra_op, workers = self._threading(X.shape[0], X.shape[1], n_classes)
        with _threads(intra_op):
            return self._fit_predict(X, y, train_idx, n_classes, X_predict, start, workers, t0)

    def _fit_predict(self, X, y, train_idx, n_classes, X_predict, start, workers, t0) -> np.ndarray:
        torch = _torch()
        timings: dict[str, float] = {}
        m, t = train_idx.shape
        k = n_classes
        data = self._make_data(X, y, k, t)
        device, r = data.device, data.r
        timings["setup"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        present = np.zeros((m, k), dtype=bool)
        labels = y[train_idx]
        for c in range(k):
            present[:, c] = (labels == c).any(axis=1)
        if start is None:
            start = self._shared_start(data, t)
            start_stats = dict(start.stats, reused=False)
        else:
            self._check_start(start, data, t)
            start_stats = {"reused": True}
        theta_ref, ref_present = start.theta, start.ref_present
        precond = _Preconditioner(
            None if start.hinv is None else torch.from_numpy(start.hinv).to(device),
            start.blocked,
        )
        w_ref = z_ref = None
        if theta_ref.any():
            w_ref = torch.from_numpy(theta_ref[:-1]).to(device)  # (d, r) float64
            z_ref = (data.x32 @ w_ref.to(torch.float32)).T.contiguous()  # (r, N)
        timings["shared_start"] = time.perf_counter() - t0

        g = self.group_size
        n_groups = -(-m // g)
        theta_all = np.zeros((m, data.d + 1, r))
        basis_all = np.zeros((m, k, r))
        n_iter = np.zeros(m, dtype=np.int64)
        status = np.zeros(m, dtype=np.int64)
        out = np.empty((m, X_predict.shape[0]), dtype=np.int16)
        xp32 = data.x32 if X_predict is X else _shared_tensor(X_predict, device)
        evals = {"float32": 0, "bfloat16": 0}
        t_train = t_pred = 0.0

        def fit_group(q: int) -> tuple[int, float, float, dict[str, int]]:
            lo, hi = q * g, min(m, (q + 1) * g)
            real = hi - lo
            # Pad the last group to g with inert copies of its first classifier, so that
            # every group has the same shapes (the bitwise chunk-invariance guarantee).
            rows = np.concatenate([np.arange(lo, hi), np.full(g - real, lo)])
            pres = present[rows]
            basis_np = np.stack([class_basis(p, r) for p in pres])
            basis = torch.from_numpy(basis_np).to(device, torch.float32)
            standard = (pres == ref_present[None, :]).all(axis=1)
            theta0 = np.where(standard[:, None, None], theta_ref[None], 0.0)
            mask = None
            if not pres.all():
                mask_np = np.where(pres, 0.0, -np.inf)[:, :, None]
                mask = torch.from_numpy(mask_np).to(device, torch.float32)
            ts = time.perf_counter()
            group = _Group(
                data,
                torch.from_numpy(train_idx[rows]).to(device),
                basis,
                mask,
                scale=1.0 / t,
                w_ref=w_ref,
                z_ref=z_ref,
                standard=torch.from_numpy(standard).to(device),
            )
            theta, it, st = _lbfgs(
                group,
                torch.from_numpy(theta0).to(device),
                precond,
                torch.from_numpy(np.arange(g) < real).to(device),
                max_iter=int(self.max_iter),
                tol=float(self.tol),
                history=int(self.history_size),
                first_step="scaled" if self.precondition == "none" else "unit",
                low=data.x_low is not None,
                scale_h0=self.precondition == "none",
            )
            n_evals = dict(group.n_evals)
            del group
            tp = time.perf_counter()
            pred = _predict(theta, basis, mask, xp32, int(self.predict_block))
            out[lo:hi] = pred[:real]
            theta_all[lo:hi] = theta[:real].cpu().numpy()
            basis_all[lo:hi] = basis_np[:real]
            n_iter[lo:hi] = it[:real].cpu().numpy()
            status[lo:hi] = st[:real].cpu().numpy()
            logger.debug(
                "group %d/%d: %d classifiers, iterations %s",
                q + 1,
                n_groups,
                real,
                n_iter[lo:hi].tolist(),
            )
            return q, tp - ts, time.perf_counter() - tp, n_evals

        t0 = time.perf_counter()
        workers = min(workers, n_groups)
        if workers > 1:
            # Small groups: whole groups in parallel, one intra-op thread each (see
            # _threading); each group's arithmetic is that of a one-thread run.
            with ThreadPoolExecutor(
                workers,
                thread_name_prefix="spurious-batched",
                initializer=torch.set_num_threads,
                initargs=(1,),
            ) as pool:
                results = list(pool.map(fit_group, range(n_groups)))
            # set_num_threads in a worker also sets torch's default for new threads.
            torch.set_num_threads(1)
        else:
            results = [fit_group(q) for q in range(n_groups)]
        for _, t_fit, t_p, n_evals in results:
            t_train += t_fit
            t_pred += t_p
            for key, value in n_evals.items():
                evals[key] += value
        timings["train"] = t_train
        timings["predict"] = t_pred
        timings["groups_wall"] = time.perf_counter() - t0
        timings["group_workers"] = workers

        self._store(theta_all, basis_all, present, n_iter, status)
        n, d, n_pred = data.n, data.d, X_predict.shape[0]
        per_eval = 2.0 * 2.0 * n * d * g * r  # forward + gradient GEMM of one group
        D = (d + 1) * r
        precond_per_eval = 2.0 * g * (D * D if not precond.blocked else D * (d + 1))
        self.stats_ = {
            "timings_s": timings,
            "gradient_evals": evals,
            "iterations": {"median": float(np.median(n_iter)), "max": int(n_iter.max())},
            "groups": n_groups,
            "group_size": g,
            "shared_start": start_stats,
            "flops": {
                "train_gemm": {key: per_eval * v for key, v in evals.items()},
                "shared_start_gemm": start_stats.get("gemm_flops", 0.0)
                + (2.0 * n * d * r if w_ref is not None else 0.0),
                "predict_gemm": 2.0 * n_pred * d * g * r * n_groups,
                "preconditioner": precond_per_eval * sum(evals.values()),
            },
            "device": str(device),
            "dtype": self.dtype,
        }
        bad = int((status != CONVERGED).sum())
        if bad:
            logger.warning(
                "BatchedLogisticRegression: %d of %d classifiers did not reach tol=%g "
                "(statuses %s); increase max_iter or tol.",
                bad,
                m,
                self.tol,
                {STATUS_NAMES[int(s)]: int((status == s).sum()) for s in np.unique(status)},
            )
        return out

    # -- internals -------------------------------------------------------------------

    def _params(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._parameter_constraints}

    def _device(self) -> str:
        torch = _torch()
        if self.device == "auto":
            return "cuda" if torch.cuda.is_available() else "cpu"
        if self.device == "cuda" and not torch.cuda.is_available():
            raise ParameterError(
                "The 'device' parameter of BatchedLogisticRegression is 'cuda' but torch "
                "reports no CUDA device."
            )
        return self.device

    def _threading(self, n: int, d: int, k: int) -> tuple[int, int]:
        """``(intra-op threads, group workers)`` for a problem of ``n`` rows, ``d``
        features and ``k`` classes on CPU (see the module docstring, "Threads").

        Small groups (forward + gradient GEMM under :attr:`parallel_groups_below` FLOPs)
        run whole groups in parallel, one intra-op thread each: their many small
        float64 operations gain nothing from intra-op threads and lose much to their
        synchronisation when the machine is busy. Large groups run one after another
        with every thread inside the GEMMs.
        """
        torch = _torch()
        total = int(self.num_threads) if self.num_threads else int(torch.get_num_threads())
        if self._device() != "cpu":
            return total, 1
        r = 1 if k == 2 else k - 1
        if 4.0 * n * d * self.group_size * r < self.parallel_groups_below:
            return 1, total
        return total, 1

    def _subsamples(self, n: int, t: int, d: int) -> tuple[np.ndarray, np.ndarray]:
        """Fixed strided row subsets of X for the pooled model and the Hessian estimate.

        They depend on ``N``, ``t`` and ``d`` only, so every chunk of a split call uses
        the same rows.
        """
        n_pool = max(32768, 3 * t) if self.pooled_rows is None else int(self.pooled_rows)
        n_pool = min(n, n_pool)
        pool_rows = np.unique(np.linspace(0, n - 1, n_pool).round().astype(np.int64))
        if self.hessian_rows is None:
            # The estimate need not beat the classifiers' own sampling error ~sqrt(d/t).
            n_hess = max(4096, min(64 * (d + 1), int(2.5 * t)))
        else:
            n_hess = int(self.hessian_rows)
        n_hess = min(len(pool_rows), n_hess)
        pick = np.unique(np.linspace(0, len(pool_rows) - 1, n_hess).round().astype(np.int64))
        return pool_rows, pool_rows[pick]

    def _make_data(self, X: np.ndarray, y: np.ndarray, k: int, t: int) -> _Data:
        """Tensors shared by every group of a call (validated inputs)."""
        torch = _torch()
        device = torch.device(self._device())
        data = _Data(
            x32=_shared_tensor(X, device),
            x_low=None,
            mean=None,
            y=torch.from_numpy(y).to(device),
            n_classes=k,
            r=1 if k == 2 else k - 1,
            lam=1.0 / (float(self.C) * t),
            device=device,
        )
        if self.dtype == "bfloat16":
            # Centre before rounding: bfloat16 keeps 8 bits relative to each value, and
            # embeddings carry a large common mean that would swamp the signal.
            pool_rows, _ = self._subsamples(data.n, t, data.d)
            data.mean = data.x32[torch.from_numpy(pool_rows).to(device)].mean(0)
            data.x_low = _centred_bf16(data.x32, data.mean)
        return data

    def _start_key(self, d: int, k: int, t: int) -> dict[str, Any]:
        """What a :class:`SharedStart` must match to be used by a call."""
        keys = ("C", "dtype", "precondition", "pooled_rows", "hessian_rows")
        return {"n_features": d, "n_classes": k, "t": t, **{n: getattr(self, n) for n in keys}}

    def _check_start(self, start: SharedStart, data: _Data, t: int) -> None:
        if not isinstance(start, SharedStart):
            raise ParameterError(
                f"start must be a SharedStart from shared_start(); got {type(start).__name__}."
            )
        want = self._start_key(data.d, data.n_classes, t)
        if start.key != want:
            diff = sorted(n for n in want if start.key.get(n) != want[n])
            raise ParameterError(
                "start was built for another problem or model: "
                + ", ".join(f"{n} {start.key.get(n)!r} != {want[n]!r}" for n in diff)
                + ". Build it with shared_start() on the same features, t and classes."
            )

    def _shared_start(self, data: _Data, t: int) -> SharedStart:
        """Starting point and preconditioner shared by all classifiers, and their cost.

        Depends on ``X``, ``y``, ``t`` and the hyperparameters only, never on which
        classifiers are fitted (chunk invariance).
        """
        t_start = time.perf_counter()
        theta, precond, ref_present, stats = self._pooled_start(data, t)
        stats["seconds"] = time.perf_counter() - t_start
        return SharedStart(
            theta=theta,
            hinv=None if precond.hinv is None else precond.hinv.cpu().numpy(),
            blocked=precond.blocked,
            ref_present=ref_present,
            key=self._start_key(data.d, data.n_classes, t),
            stats=stats,
        )

    def _pooled_start(
        self, data: _Data, t: int
    ) -> tuple[np.ndarray, _Preconditioner, np.ndarray, dict[str, Any]]:
        """Pooled solution, preconditioner, classes present in the pooled rows, cost."""
        pool_rows, hess_rows = self._subsamples(data.n, t, data.d)
        torch = _torch()
        d, r, k, dev = data.d, data.r, data.n_classes, data.device
        y_np = data.y.cpu().numpy()
        ref_present = np.bincount(y_np[pool_rows], minlength=k) > 0
        basis = class_basis(ref_present, r)
        theta = np.zeros((d + 1, r))
        stats: dict[str, Any] = {
            "gradient_evals": {"float32": 0, "bfloat16": 0},
            "pooled_rows": 0,
            "hessian_rows": 0,
            "gemm_flops": 0.0,
        }
        if self.precondition == "none":
            return theta, _Preconditioner(None, blocked=False), ref_present, stats
        # At zero the Hessian is a covariance (one GEMM); a smaller sample will do for
        # the pooled fit, which is cheap to iterate.
        zero_rows = pool_rows[:: max(1, len(pool_rows) // _ZERO_HESSIAN_ROWS)]
        if self.precondition == "covariance":
            zero_rows = hess_rows
        x_0 = data.x32[torch.from_numpy(zero_rows).to(dev)]
        precond = self._hessian_precond(x_0, theta, basis, ref_present, data)
        del x_0
        stats["gemm_flops"] += 2.0 * len(zero_rows) * (d + 1) ** 2
        if self.precondition == "covariance":
            stats["hessian_rows"] = len(zero_rows)
            return theta, precond, ref_present, stats
        # The pooled model: the classifiers' objective (same lambda = 1/(C t)) on a fixed
        # subsample; the classifiers start from its solution.
        rows_t = torch.from_numpy(pool_rows).to(dev)
        pool = _Data(
            x32=data.x32[rows_t],
            x_low=None if data.x_low is None else data.x_low[rows_t],
            mean=data.mean,
            y=data.y[rows_t],
            n_classes=k,
            r=r,
            lam=data.lam,
            device=dev,
        )
        mask = None
        if not ref_present.all():
            mask_np = np.where(ref_present, 0.0, -np.inf)[None, :, None]
            mask = torch.from_numpy(mask_np).to(dev, torch.float32)
        group = _Group(
            pool,
            torch.arange(len(pool_rows), device=dev)[None],
            torch.from_numpy(basis[None]).to(dev, torch.float32),
            mask,
            scale=1.0 / len(pool_rows),
        )
        theta_t, it, st = _lbfgs(
            group,
            torch.zeros(1, d + 1, r, dtype=torch.float64, device=dev),
            precond,
            torch.ones(1, dtype=torch.bool, device=dev),
            max_iter=int(self.max_iter),
            tol=float(self.tol),
            history=int(self.history_size),
            first_step="unit",
            low=data.x_low is not None,
            scale_h0=False,
        )
        logger.debug(
            "pooled model on %d rows: %d iterations (%s)",
            len(pool_rows),
            int(it[0]),
            STATUS_NAMES[int(st[0])],
        )
        theta = theta_t[0].cpu().numpy()
        x_h = data.x32[torch.from_numpy(hess_rows).to(dev)]
        precond = self._hessian_precond(x_h, theta, basis, ref_present, data)
        n_pairs = r if precond.blocked else r * (r + 1) // 2
        pool_evals = sum(group.n_evals.values())
        stats.update(
            gradient_evals=dict(group.n_evals),
            pooled_rows=len(pool_rows),
            hessian_rows=len(hess_rows),
            pooled_iterations=int(it[0]),
        )
        stats["gemm_flops"] += 4.0 * len(pool_rows) * d * r * pool_evals
        stats["gemm_flops"] += 2.0 * n_pairs * len(hess_rows) * (d + 1) ** 2
        return theta, precond, ref_present, stats

    def _hessian_precond(
        self,
        x: Any,
        theta: np.ndarray,
        basis: np.ndarray,
        present: np.ndarray,
        data: _Data,
    ) -> _Preconditioner:
        """Inverse of the objective's Hessian at ``theta`` on rows ``x`` (a preconditioner)."""
        torch = _torch()
        d, r, dev = data.d, data.r, data.device
        n_rows = int(x.shape[0])
        xt = torch.cat([x, torch.ones(n_rows, 1, device=dev)], 1)  # (n, d+1)
        th = torch.from_numpy(theta).to(dev, torch.float32)
        bas = torch.from_numpy(basis).to(dev, torch.float32)  # (k, r)
        logits = (xt @ th) @ bas.T
        if not present.all():
            absent = torch.from_numpy(np.where(present, 0.0, -np.inf)).to(dev, torch.float32)
            logits = logits + absent
        prob = torch.softmax(logits, dim=1)  # (n, k)
        proj = prob @ bas  # (n, r): B^T p
        D = (d + 1) * r
        blocked = self.max_dense_hessian < D
        # Curvature of one row in the r free logits: B^T (diag(p) - p p^T) B.
        pairs = [(c, e) for c in range(r) for e in range(c, r) if not blocked or c == e]
        curv = {
            (c, e): (prob * bas[:, c] * bas[:, e]).sum(1) - proj[:, c] * proj[:, e]
            for c, e in pairs
        }
        H = torch.zeros(d + 1, r, d + 1, r, dtype=torch.float64, device=dev)
        if not theta.any():
            # At zero every row has the same curvature: H = (X~^T X~ / n) kron A, one GEMM.
            gram = (xt.T @ xt).to(torch.float64) / n_rows
            for (c, e), a in curv.items():
                H[:, c, :, e] = gram * float(a[0])
                H[:, e, :, c] = gram * float(a[0])
        else:
            for (c, e), a in curv.items():
                block = ((xt * (a / n_rows)[:, None]).T @ xt).to(torch.float64)
                H[:, c, :, e] = block
                H[:, e, :, c] = block
        live = torch.from_numpy(np.abs(basis).sum(0) > 0).to(dev)
        diag = torch.full((d + 1, r), data.lam, dtype=torch.float64, device=dev)
        # Unused logits (classes absent) have no curvature: any positive value will do.
        diag[d] = torch.where(live, 0.0, 1.0).to(torch.float64)
        idx = torch.arange(d + 1, device=dev)
        for c in range(r):
            H[idx, c, idx, c] += diag[:, c]
        if blocked:
            hinv = _inverse_spd(torch.stack([H[:, c, :, c] for c in range(r)]))
        else:
            hinv = _inverse_spd(H.reshape(D, D))
        return _Preconditioner(hinv.to(torch.float32), blocked=blocked)

    def _store(self, theta, basis, present, n_iter, status) -> None:
        d = theta.shape[1] - 1
        full = np.einsum("mar,mkr->mka", theta, basis)  # (m, k, d+1)
        self.coef_ = full[:, :, :d].astype(np.float32)
        intercept = full[:, :, d]
        self.intercept_ = np.where(present, intercept, -np.inf).astype(np.float32)
        self.n_iter_ = n_iter
        self.status_ = status


@contextlib.contextmanager
def _threads(n: int | None):
    """Run the block with ``n`` torch intra-op threads (``None``: as set), then restore."""
    torch = _torch()
    old = torch.get_num_threads()
    if n is None or n == old:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def _shared_tensor(array: np.ndarray, device: Any) -> Any:
    """A tensor view of ``array`` (no copy on CPU), which is never written to.

    Ray hands out read-only arrays; torch warns about those because it cannot promise
    not to write, and copying a large feature matrix only to silence that is wasteful.
    """
    torch = _torch()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return torch.from_numpy(array).to(device)


def _centred_bf16(x: Any, mean: Any, block: int = 65536) -> Any:
    """``bfloat16(x - mean)`` computed in row blocks (no float32 temporary of x's size)."""
    torch = _torch()
    out = torch.empty(x.shape, dtype=torch.bfloat16, device=x.device)
    for lo in range(0, int(x.shape[0]), block):
        out[lo : lo + block] = x[lo : lo + block] - mean
    return out


def _inverse_spd(H: Any) -> Any:
    """``H^{-1}`` of a symmetric positive definite ``H`` (float64, through its Cholesky
    factor), with a jitter retry for a near-singular ``H``."""
    torch = _torch()
    eye = torch.eye(H.shape[-1], dtype=H.dtype, device=H.device)
    jitter = 0.0
    scale = float(torch.diagonal(H, dim1=-2, dim2=-1).abs().max())
    for _ in range(6):
        L, info = torch.linalg.cholesky_ex(H + jitter * scale * eye)
        if int(info.max()) == 0:
            return torch.cholesky_inverse(L)
        jitter = 1e-10 if jitter == 0.0 else jitter * 100
    raise ParameterError(
        "BatchedLogisticRegression: the Hessian estimate is not positive definite."
    )


def _predict(theta: Any, basis: Any, mask: Any, xp: Any, block: int) -> np.ndarray:
    """Labels (g, M) of every classifier of a group on every row of ``xp`` (float32)."""
    torch = _torch()
    g, a, r = theta.shape
    d = a - 1
    wt = theta[:, :d, :].transpose(1, 2).reshape(g * r, d).to(torch.float32)
    b = theta[:, d, :].to(torch.float32)[:, :, None]
    n_rows = int(xp.shape[0])
    out = np.empty((g, n_rows), dtype=np.int16)
    for lo in range(0, n_rows, block):
        z = (wt @ xp[lo : lo + block].T).view(g, r, -1) + b
        logits = torch.bmm(basis, z)  # (g, k, rows)
        if mask is not None:
            logits += mask
        out[:, lo : lo + block] = _argmax_classes(logits).cpu().numpy()
    return out


def _argmax_classes(logits: Any) -> Any:
    """``logits.argmax(dim=1)`` as int16 for (g, k, rows): k vectorised passes, about 3x
    faster than torch's reduction over a short middle dimension; ties go to the first
    class, as in ``argmax``."""
    torch = _torch()
    best = logits[:, 0]
    label = torch.zeros(best.shape, dtype=torch.int16, device=logits.device)
    for c in range(1, int(logits.shape[1])):
        value = logits[:, c]
        label = torch.where(value > best, c, label)
        best = torch.maximum(best, value)
    return label


def _validate(X, y, train_idx, n_classes, X_predict):
    """Check and normalise the arguments of ``fit_predict``."""
    if isinstance(n_classes, bool) or not isinstance(n_classes, Integral) or n_classes < 2:
        raise ParameterError(f"n_classes must be an int >= 2; got {n_classes!r}.")
    n_classes = int(n_classes)
    X = check_features(X, None, "X")
    n = X.shape[0]
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ParameterError(
            f"y must be a 1-D array of {n} labels (one per row of X); got shape {y.shape}."
        )
    if not np.issubdtype(y.dtype, np.integer):
        raise LabelError(f"y must hold integer label ids; got dtype {y.dtype}.")
    if n and (y.min() < 0 or y.max() >= n_classes):
        bad = int(y[(y < 0) | (y >= n_classes)][0])
        raise LabelError(f"y must hold label ids in [0, n_classes={n_classes}); found {bad}.")
    train_idx = np.asarray(train_idx)
    if train_idx.ndim != 2 or train_idx.shape[0] < 1 or train_idx.shape[1] < 1:
        raise ParameterError(
            f"train_idx must be a 2-D array (m classifiers, t rows) with m, t >= 1; got shape {train_idx.shape}."
        )
    if not np.issubdtype(train_idx.dtype, np.integer):
        raise ParameterError(
            f"train_idx must hold integer row indices; got dtype {train_idx.dtype}."
        )
    if train_idx.min() < 0 or train_idx.max() >= n:
        raise ParameterError(f"train_idx must hold row indices in [0, {n}) (rows of X).")
    if X_predict is None:
        X_predict = X
    else:
        X_predict = check_features(X_predict, None, "X_predict")
        if X_predict.shape[1] != X.shape[1]:
            raise ParameterError(
                f"X_predict must have the {X.shape[1]} columns of X; got {X_predict.shape[1]}."
            )
    # Copies (small): torch wants writable arrays, and callers' arrays stay untouched.
    return X, np.array(y, dtype=np.int64), np.array(train_idx, dtype=np.int64), n_classes, X_predict
