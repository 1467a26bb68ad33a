"""The shared start: a pooled model's solution and the Hessian preconditioner there."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from spurious.exceptions import ParameterError
from spurious.models.batched.backend import _torch
from spurious.models.batched.basis import class_basis
from spurious.models.batched.lbfgs import STATUS_NAMES, _lbfgs
from spurious.models.batched.objective import _Data, _Group
from spurious.models.batched.preconditioner import _inverse_spd, _Preconditioner
from spurious.models.batched.sparse import is_sparse

logger = logging.getLogger(__name__)

# Rows for the covariance (Hessian at zero) that preconditions the pooled fit.
_ZERO_HESSIAN_ROWS = 4096
#: Rows of the Hessian sample gathered and multiplied at a time (bounds its memory).
_HESSIAN_CHUNK = 8192


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
        ``(r, d+1, d+1)`` when ``blocked``; ``None`` without preconditioning (and for
        sparse features).
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


class _SharedStartMixin:
    """How :class:`~spurious.models.batched.BatchedLogisticRegression` builds, keys and
    checks its :class:`SharedStart` (uses the model's hyperparameters and
    ``max_dense_hessian``)."""

    # The model's hyperparameters this mixin reads (set by BatchedLogisticRegression).
    C: float
    dtype: str
    precondition: str
    pooled_rows: int | None
    hessian_rows: int | None
    max_iter: int
    tol: float
    history_size: int
    max_dense_hessian: ClassVar[int]
    covariance_max_rows: ClassVar[int]

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

    def _precondition(self, n: int, d: int, n_fits: int | None) -> str:
        """``precondition`` with ``"auto"`` resolved for ``n`` rows of ``X``, ``d``
        features and ``n_fits`` classifiers fitted from the start (``None``: unknown)."""
        if self.precondition != "auto":
            return str(self.precondition)
        if n > self.covariance_max_rows or n_fits is None:
            return "pooled"
        # The pooled start's extra Hessian and inverse grow as d^2-d^3, its saving (a
        # few iterations per classifier) as d: it pays from about d / 3 fits on.
        return "pooled" if 3 * n_fits >= d + 1 else "covariance"

    def _start_key(self, d: int, k: int, t: int, sparse: bool = False) -> dict[str, Any]:
        """What a :class:`SharedStart` must match to be used by a call."""
        keys = ("C", "dtype", "precondition", "pooled_rows", "hessian_rows")
        key = {"n_features": d, "n_classes": k, "t": t, **{n: getattr(self, n) for n in keys}}
        if sparse:  # no pooled start nor preconditioner: not for dense features
            key["sparse"] = True
        return key

    def _check_start(self, start: SharedStart, data: _Data, t: int) -> None:
        if not isinstance(start, SharedStart):
            raise ParameterError(
                f"start must be a SharedStart from shared_start(); got {type(start).__name__}."
            )
        want = self._start_key(data.d, data.n_classes, t, sparse=is_sparse(data.x32))
        if start.key != want:
            diff = sorted(n for n in want if start.key.get(n) != want[n])
            raise ParameterError(
                "start was built for another problem or model: "
                + ", ".join(f"{n} {start.key.get(n)!r} != {want[n]!r}" for n in diff)
                + ". Build it with shared_start() on the same features, t and classes."
            )

    def _shared_start(self, data: _Data, t: int, n_fits: int | None = None) -> SharedStart:
        """Starting point and preconditioner shared by all classifiers, and their cost.

        Depends on ``X``, ``y``, ``t`` and the hyperparameters only, never on which
        classifiers are fitted (chunk invariance).
        """
        t_start = time.perf_counter()
        theta, precond, ref_present, stats = self._pooled_start(data, t, n_fits)
        stats["seconds"] = time.perf_counter() - t_start
        return SharedStart(
            theta=theta,
            hinv=None if precond.hinv is None else precond.hinv.cpu().numpy(),
            blocked=precond.blocked,
            ref_present=ref_present,
            key=self._start_key(data.d, data.n_classes, t, sparse=is_sparse(data.x32)),
            stats=stats,
        )

    def _pooled_start(
        self, data: _Data, t: int, n_fits: int | None = None
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
        precondition = "none" if is_sparse(data.x32) else self._precondition(data.n, data.d, n_fits)
        stats["precondition"] = precondition
        if precondition == "none":
            # Sparse features: plain L-BFGS from zero (see sparse.py for why).
            return theta, _Preconditioner(None, blocked=False), ref_present, stats
        # At zero the Hessian is a covariance (one GEMM); a smaller sample will do for
        # the pooled fit, which is cheap to iterate.
        zero_rows = pool_rows[:: max(1, len(pool_rows) // _ZERO_HESSIAN_ROWS)]
        if precondition == "covariance":
            zero_rows = hess_rows
        precond = self._hessian_precond(zero_rows, theta, basis, ref_present, data)
        stats["gemm_flops"] += 2.0 * len(zero_rows) * (d + 1) ** 2
        if precondition == "covariance":
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
        precond = self._hessian_precond(hess_rows, theta, basis, ref_present, data)
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
        rows: np.ndarray,
        theta: np.ndarray,
        basis: np.ndarray,
        present: np.ndarray,
        data: _Data,
    ) -> _Preconditioner:
        """Inverse of the objective's Hessian at ``theta`` on rows ``rows`` of ``X`` (a
        preconditioner).

        The rows are gathered and multiplied ``_HESSIAN_CHUNK`` at a time, their products
        summed in float64: gathering all of them at once took three copies of the sample
        (the rows, the rows with a ones column, the rows scaled by their curvature),
        2.7 GB of the audit's peak at 550k x 1536 (100k sampled rows).
        """
        torch = _torch()
        d, r, dev = data.d, data.r, data.device
        n_rows = len(rows)
        rows_t = torch.from_numpy(np.asarray(rows, dtype=np.int64)).to(dev)
        th = torch.from_numpy(theta).to(dev, torch.float32)
        bas = torch.from_numpy(basis).to(dev, torch.float32)  # (k, r)
        absent = None
        if not present.all():
            absent = torch.from_numpy(np.where(present, 0.0, -np.inf)).to(dev, torch.float32)
        D = (d + 1) * r
        blocked = self.max_dense_hessian < D
        pairs = [(c, e) for c in range(r) for e in range(c, r) if not blocked or c == e]
        at_zero = not theta.any()
        # At zero every row has the same curvature: H = (X~^T X~ / n) kron A, one Gram.
        sums = {
            p: torch.zeros(d + 1, d + 1, dtype=torch.float64, device=dev)
            for p in (pairs[:1] if at_zero else pairs)
        }
        curv0: dict[tuple[int, int], float] = {}
        for lo in range(0, n_rows, _HESSIAN_CHUNK):
            x = data.x32[rows_t[lo : lo + _HESSIAN_CHUNK]]
            xt = torch.cat([x, torch.ones(x.shape[0], 1, device=dev)], 1)  # (n, d+1)
            del x
            logits = (xt @ th) @ bas.T
            if absent is not None:
                logits = logits + absent
            prob = torch.softmax(logits, dim=1)  # (n, k)
            proj = prob @ bas  # (n, r): B^T p
            # Curvature of one row in the r free logits: B^T (diag(p) - p p^T) B.
            curv = {
                (c, e): (prob * bas[:, c] * bas[:, e]).sum(1) - proj[:, c] * proj[:, e]
                for c, e in pairs
            }
            if at_zero:
                curv0 = {p: float(a[0]) for p, a in curv.items()}
                sums[pairs[0]] += (xt.T @ xt).to(torch.float64)
            else:
                for p, a in curv.items():
                    sums[p] += ((xt * (a / n_rows)[:, None]).T @ xt).to(torch.float64)
        H = torch.zeros(d + 1, r, d + 1, r, dtype=torch.float64, device=dev)
        for c, e in pairs:
            block = sums[pairs[0]] * (curv0[(c, e)] / n_rows) if at_zero else sums[(c, e)]
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
