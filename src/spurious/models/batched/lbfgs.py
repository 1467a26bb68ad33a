"""The solver core: batched L-BFGS with one line search per classifier, and its status codes."""

from __future__ import annotations

import math
from typing import Any

from spurious.models.batched.backend import _torch
from spurious.models.batched.objective import _Group
from spurious.models.batched.preconditioner import _Preconditioner

# L-BFGS line search: accept a step when the directional derivative phi'(a) lies in
# [-_C2, _C3] * |phi'(0)| (Wolfe curvature condition, plus a bound on overshooting that
# keeps phi(a) < phi(0) for near-quadratic phi).
_C2, _C3 = 0.9, 0.5
_MAX_LINE_SEARCH = 25

# Optimisation status codes (``status_``).
RUNNING, CONVERGED, MAX_ITER, LINE_SEARCH_FAILED = 0, 1, 2, 3
STATUS_NAMES = {
    RUNNING: "running",
    CONVERGED: "converged",
    MAX_ITER: "max_iter",
    LINE_SEARCH_FAILED: "line_search_failed",
}


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
    # The slots are a list of (g, D) tensors, so that a new pair rotates the list and
    # overwrites the oldest slot in place; only the rows of running classifiers that got
    # no new pair are moved back (see ``push``). Shifting the whole (history, g, D)
    # history with cat + where cost ~3 passes over 45 MB per iteration at D = 17,880
    # (bag of words) and dominated the run time there.
    s_hist = [torch.zeros(g, D, dtype=f64, device=dev) for _ in range(history)]
    y_hist = [torch.zeros(g, D, dtype=f64, device=dev) for _ in range(history)]
    rho = torch.zeros(history, g, dtype=f64, device=dev)
    used = 0  # slots holding at least one classifier's pair

    def push(hist, vec, stay):
        """Rotate ``hist`` by one slot, ``vec`` newest; rows ``stay`` keep their history.

        Rows of finished classifiers are left inconsistent: their directions are never
        used again.
        """
        oldest = hist[-1]
        kept = oldest[stay].clone() if len(stay) else None
        oldest.copy_(vec)
        hist = [oldest, *hist[:-1]]
        if kept is not None:
            for i in range(history - 1):
                hist[i][stay] = hist[i + 1][stay]
            hist[-1][stay] = kept
        return hist

    def direction(grad):
        q = grad.clone()
        alphas = []
        for i in range(used):
            alpha_i = rho[i] * dot(s_hist[i], q)
            # in place, without a temporary (the two-loop recursion's vector work
            # dominates when D is a vocabulary size)
            q.addcmul_(alpha_i[:, None], y_hist[i], value=-1.0)
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
            q.addcmul_((alphas[i] - beta)[:, None], s_hist[i])
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
            stay = torch.nonzero(~done & ~upd).squeeze(1)
            s_hist = push(s_hist, s_vec, stay)
            y_hist = push(y_hist, y_vec, stay)
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
                gone = torch.nonzero(reset).squeeze(1)
                for hist in (s_hist, y_hist):
                    for slot in hist:
                        slot[gone] = 0.0
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
