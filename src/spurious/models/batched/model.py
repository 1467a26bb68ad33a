"""The model: :class:`BatchedLogisticRegression`, its parameters, config and fit loop."""

from __future__ import annotations

import logging
import time
from collections import Counter
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from spurious.exceptions import ParameterError
from spurious.models.batched.backend import _centred_bf16, _shared_tensor, _torch
from spurious.models.batched.basis import class_basis
from spurious.models.batched.inputs import _validate
from spurious.models.batched.lbfgs import CONVERGED, STATUS_NAMES, _lbfgs
from spurious.models.batched.objective import _Data, _Group
from spurious.models.batched.preconditioner import _Preconditioner
from spurious.models.batched.predict import _predict
from spurious.models.batched.sparse import _SparseGroup, _SparseX, is_sparse, matmul
from spurious.models.batched.start import SharedStart, _SharedStartMixin
from spurious.models.runtime.hardware import resolve_device
from spurious.models.runtime.threads import thread_map
from spurious.utils.threads import kernel_threads, limit_threads
from spurious.utils.validation import Interval, StrOptions, check_params

logger = logging.getLogger(__name__)

#: Classifiers per internal group when ``chunk_size=None``. A constant (not derived from
#: ``m``) so that chunks of a split ``train_idx`` line up with the groups of the full call.
DEFAULT_CHUNK_SIZE = 32


class BatchedLogisticRegression(_SharedStartMixin):
    """Many L2-regularised logistic regressions, one per partition, fitted in one batch.

    Implements :class:`~spurious.models.partition.PartitionModel` for AFLite: classifier
    ``j`` is fitted on ``X[train_idx[j]]`` and predicts every row of ``X_predict``. Each
    converges to the minimiser of scikit-learn's ``LogisticRegression(C=C)`` on its rows;
    see the package docstring for the algorithm.

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
        ``"auto"``: the run's device (:func:`spurious.models.runtime.use_device`), else
        CUDA when ``torch.cuda.is_available()``.
    dtype : {"float32", "bfloat16"}, default="float32"
        Precision of ``X`` and the GEMM operands during training (accumulation and the
        optimiser are float32/float64; predictions are float32). In bfloat16, ``tol``
        applies to the gradient w.r.t. the weights of the centred features (see the
        package docstring).
    chunk_size : int, optional
        Classifiers per internal group (default :data:`DEFAULT_CHUNK_SIZE`). Results are
        bitwise identical when a caller splits ``train_idx`` at multiples of it.
    history_size : int, default=10
        L-BFGS memory.
    precondition : {"auto", "pooled", "covariance", "none"}, default="auto"
        ``"pooled"``: start every classifier from a pooled model fitted on a subsample of
        ``X`` and precondition with the Hessian there. ``"covariance"``: start from zero,
        precondition with the Hessian at zero (a covariance whitening). ``"none"``: plain
        L-BFGS from zero (for comparison). ``"auto"``: ``"pooled"`` above
        :attr:`covariance_max_rows` rows of ``X`` or for at least ``(d + 1) / 3``
        planned fits (or an unknown number), else ``"covariance"`` (the package
        docstring, "Which start", has the measurements).
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
        groups, intra-op threads for large ones (by default capped at one more than the
        idle cores; see the package docstring, "Threads").

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
        "precondition": [StrOptions({"auto", "pooled", "covariance", "none"})],
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

    #: ``precondition="auto"`` takes the covariance start up to this many rows of ``X``.
    covariance_max_rows: ClassVar[int] = 20_000

    def __init__(
        self,
        C: float = 1.0,
        max_iter: int = 100,
        tol: float = 1e-4,
        device: str = "auto",
        dtype: str = "float32",
        chunk_size: int | None = None,
        history_size: int = 10,
        precondition: str = "auto",
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
            # 2: one start per run, H0 = H^-1 in float32, group threads; 3: "auto" start.
            "version": 3,
        }

    def shared_start(
        self, X: np.ndarray, y: np.ndarray, t: int, n_classes: int, n_fits: int | None = None
    ) -> SharedStart:
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
        n_fits : int, optional
            Classifiers that will be fitted from this start (over all calls), for
            ``precondition="auto"``; ``None``: many (the pooled start).

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
        intra_op, _ = self._threading(X.shape[0], X.shape[1], n_classes, _nnz(X))
        with limit_threads(intra_op):
            data = self._make_data(X, y, n_classes, int(t))
            return self._shared_start(data, int(t), n_fits)

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
        intra_op, workers = self._threading(X.shape[0], X.shape[1], n_classes, _nnz(X))
        with limit_threads(intra_op):
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
        start, start_stats, precond, w_ref, z_ref = self._reference(data, t, start, m)
        timings["shared_start"] = time.perf_counter() - t0

        g = self.group_size
        n_groups = -(-m // g)
        # Plain L-BFGS from zero: asked for, or sparse features (no preconditioner).
        plain = self.precondition == "none" or is_sparse(data.x32)
        theta_all = np.zeros((m, data.d + 1, r))
        basis_all = np.zeros((m, k, r))
        n_iter = np.zeros(m, dtype=np.int64)
        status = np.zeros(m, dtype=np.int64)
        out = np.empty((m, X_predict.shape[0]), dtype=np.int16)
        xp32 = data.x32 if X_predict is X else _as_tensor(X_predict, device)
        evals = {"float32": 0, "bfloat16": 0}

        def fit_group(q: int) -> tuple[int, float, float, dict[str, int], str]:
            lo, hi = q * g, min(m, (q + 1) * g)
            real = hi - lo
            # Pad the last group to g with inert copies of its first classifier, so that
            # every group has the same shapes (the bitwise chunk-invariance guarantee).
            rows = np.concatenate([np.arange(lo, hi), np.full(g - real, lo)])
            basis_np, basis, mask, standard, theta0 = _group_classes(
                present[rows], r, start, device
            )
            ts = time.perf_counter()
            group, start0 = _make_group(
                data, train_idx[rows], basis, mask, t, (w_ref, z_ref), standard, theta0
            )
            theta, it, st = _lbfgs(
                group,
                start0,
                precond,
                torch.from_numpy(np.arange(g) < real).to(device),
                max_iter=int(self.max_iter),
                tol=float(self.tol),
                history=int(self.history_size),
                first_step="scaled" if plain else "unit",
                low=data.x_low is not None,
                scale_h0=plain,
            )
            n_evals = dict(group.n_evals)
            layout = "dense"
            if isinstance(group, _SparseGroup):
                layout = "rows" if group.kernel else "columns"
                theta = group.full_theta(theta)
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
            return q, tp - ts, time.perf_counter() - tp, n_evals, layout

        t0 = time.perf_counter()
        workers = min(workers, n_groups)
        # Small groups: whole groups in parallel, one intra-op thread each (see
        # _threading); each group's arithmetic is that of a one-thread run.
        results = list(
            thread_map(fit_group, range(n_groups), workers=workers, name="spurious-batched")
        )
        layouts = Counter(layout for *_, layout in results)
        timings["train"] = sum(r[1] for r in results)
        timings["predict"] = sum(r[2] for r in results)
        for n_evals in (r[3] for r in results):
            for key, value in n_evals.items():
                evals[key] += value
        timings["groups_wall"] = time.perf_counter() - t0
        timings["group_workers"] = workers

        self._store(theta_all, basis_all, present, n_iter, status)
        self.stats_ = {
            "timings_s": timings,
            "gradient_evals": evals,
            "iterations": {"median": float(np.median(n_iter)), "max": int(n_iter.max())},
            "groups": n_groups,
            # sparse groups: on their rows' coordinates, or on their own columns
            "group_layouts": {k: v for k, v in layouts.items() if v},
            "group_size": g,
            "shared_start": start_stats,
            "flops": self._flops(data, X_predict, precond, evals, start_stats, w_ref, n_groups, t),
            "device": str(device),
            "dtype": self.dtype,
        }
        self._warn_unconverged(status)
        return out

    # -- internals -------------------------------------------------------------------

    def _reference(
        self, data: _Data, t: int, start: SharedStart | None, n_fits: int | None = None
    ) -> tuple[SharedStart, dict[str, Any], _Preconditioner, Any, Any]:
        """``(start, its stats, preconditioner, w_ref, z_ref)`` of a call: the shared start
        (built here unless given), and the reference weights with their logits on every
        row (``None`` when the start is zero)."""
        torch = _torch()
        if start is None:
            start = self._shared_start(data, t, n_fits=n_fits)
            start_stats = dict(start.stats, reused=False)
        else:
            self._check_start(start, data, t)
            start_stats = {"reused": True}
        precond = _Preconditioner(
            None if start.hinv is None else torch.from_numpy(start.hinv).to(data.device),
            start.blocked,
        )
        w_ref = z_ref = None
        if start.theta.any():
            w_ref = torch.from_numpy(start.theta[:-1]).to(data.device)  # (d, r) float64
            z_ref = matmul(data.x32, w_ref.to(torch.float32)).T.contiguous()  # (r, N)
        return start, start_stats, precond, w_ref, z_ref

    def _flops(
        self,
        data: _Data,
        X_predict: Any,
        precond: _Preconditioner,
        evals: dict[str, int],
        start_stats: dict[str, Any],
        w_ref: Any,
        n_groups: int,
        t: int,
    ) -> dict[str, Any]:
        """Floating-point operations of a call, by part (for ``stats_``)."""
        g, r = self.group_size, data.r
        n, d, n_pred = data.n, data.d, X_predict.shape[0]
        # forward + gradient GEMM of one group (sparse: one multiply-add per non-zero of
        # the classifiers' own rows, about t nnz / N each)
        entries = data.x32.nnz * t / max(n, 1) if is_sparse(data.x32) else n * d
        per_eval = 2.0 * 2.0 * entries * g * r
        D = (d + 1) * r
        precond_per_eval = 2.0 * g * (D * D if not precond.blocked else D * (d + 1))
        return {
            "train_gemm": {key: per_eval * v for key, v in evals.items()},
            "shared_start_gemm": start_stats.get("gemm_flops", 0.0)
            + (2.0 * n * d * r if w_ref is not None else 0.0),
            "predict_gemm": 2.0
            * (X_predict.nnz if sp.issparse(X_predict) else n_pred * d)
            * g
            * r
            * n_groups,
            "preconditioner": precond_per_eval * sum(evals.values()),
        }

    def _warn_unconverged(self, status: np.ndarray) -> None:
        bad = int((status != CONVERGED).sum())
        if bad:
            logger.warning(
                "BatchedLogisticRegression: %d of %d classifiers did not reach tol=%g "
                "(statuses %s); increase max_iter or tol.",
                bad,
                len(status),
                self.tol,
                {STATUS_NAMES[int(s)]: int((status == s).sum()) for s in np.unique(status)},
            )

    def _params(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._parameter_constraints}

    def _device(self) -> str:
        # "auto": the run's device (use_device), else CUDA when there; "cuda" without a
        # GPU: an error naming the parameter.
        return resolve_device(self.device)

    def _threading(self, n: int, d: int, k: int, nnz: int | None = None) -> tuple[int, int]:
        """``(intra-op threads, group workers)`` for a problem of ``n`` rows, ``d``
        features (``nnz`` non-zeros when sparse) and ``k`` classes on CPU (see the
        package docstring, "Threads").

        Small groups (forward + gradient GEMM under :attr:`parallel_groups_below` FLOPs)
        run whole groups in parallel, one intra-op thread each: their many small
        float64 operations gain nothing from intra-op threads and lose much to their
        synchronisation when the machine is busy. Large groups run one after another
        with every thread inside the GEMMs (``num_threads``, else torch's setting capped
        at one more than the idle cores: on a busy machine one thread was faster, see
        :mod:`spurious.utils.threads`).
        """
        torch = _torch()
        total = int(self.num_threads) if self.num_threads else int(torch.get_num_threads())
        if self._device() != "cpu":
            return total, 1
        r = 1 if k == 2 else k - 1
        entries = n * d if nnz is None else nnz
        if 4.0 * entries * self.group_size * r < self.parallel_groups_below:
            return kernel_threads("small_fits"), total
        return (total if self.num_threads else min(total, kernel_threads("gemm"))), 1

    def _make_data(self, X: np.ndarray, y: np.ndarray, k: int, t: int) -> _Data:
        """Tensors shared by every group of a call (validated inputs)."""
        torch = _torch()
        device = torch.device(self._device())
        if sp.issparse(X) and self.dtype == "bfloat16":
            raise ParameterError(
                "The 'dtype' parameter of BatchedLogisticRegression must be 'float32' for "
                "sparse features (bfloat16 centres X, which would densify it). Got "
                "'bfloat16' instead."
            )
        data = _Data(
            x32=_as_tensor(X, device),
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

    def _store(self, theta, basis, present, n_iter, status) -> None:
        d = theta.shape[1] - 1
        full = np.einsum("mar,mkr->mka", theta, basis)  # (m, k, d+1)
        self.coef_ = full[:, :, :d].astype(np.float32)
        intercept = full[:, :, d]
        self.intercept_ = np.where(present, intercept, -np.inf).astype(np.float32)
        self.n_iter_ = n_iter
        self.status_ = status


def _group_classes(
    pres: np.ndarray, r: int, start: SharedStart, device: Any
) -> tuple[np.ndarray, Any, Any, np.ndarray, np.ndarray]:
    """``(basis as numpy, basis, mask, standard, theta0)`` of a group's classifiers from
    their present classes ``pres`` (g, k): each classifier's class basis, the logit mask
    of its absent classes (``None`` when every class is present), whether its classes are
    those of the shared start, and its starting point (the shared start's where they are,
    else zero)."""
    torch = _torch()
    basis_np = np.stack([class_basis(p, r) for p in pres])
    basis = torch.from_numpy(basis_np).to(device, torch.float32)
    standard = (pres == start.ref_present[None, :]).all(axis=1)
    theta0 = np.where(standard[:, None, None], start.theta[None], 0.0)
    mask = None
    if not pres.all():
        mask_np = np.where(pres, 0.0, -np.inf)[:, :, None]
        mask = torch.from_numpy(mask_np).to(device, torch.float32)
    return basis_np, basis, mask, standard, theta0


def _nnz(X: Any) -> int | None:
    return int(X.nnz) if sp.issparse(X) else None


def _as_tensor(X: Any, device: Any) -> Any:
    """The dense tensor view of ``X``, or a :class:`_SparseX` for a CSR matrix."""
    return _SparseX(X, device) if sp.issparse(X) else _shared_tensor(X, device)


def _make_group(
    data: _Data,
    rows: np.ndarray,
    basis: Any,
    mask: Any,
    t: int,
    reference: tuple[Any, Any],
    standard: np.ndarray,
    theta0: np.ndarray,
) -> tuple[_Group | _SparseGroup, Any]:
    """One group's objective and its starting point: sparse features get each classifier
    on its own rows and columns, from 0; dense ones start from the shared start."""
    torch = _torch()
    device = data.device
    if is_sparse(data.x32):
        group = _SparseGroup(data, rows, basis, mask, scale=1.0 / t)
        return group, torch.zeros(group.shape, dtype=torch.float64, device=device)
    w_ref, z_ref = reference
    dense = _Group(
        data,
        torch.from_numpy(rows).to(device),
        basis,
        mask,
        scale=1.0 / t,
        w_ref=w_ref,
        z_ref=z_ref,
        standard=torch.from_numpy(standard).to(device),
    )
    return dense, torch.from_numpy(theta0).to(device)
