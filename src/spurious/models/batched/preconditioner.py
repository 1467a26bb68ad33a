"""The initial inverse Hessian of L-BFGS, and the SPD inverse that builds it."""

from __future__ import annotations

from typing import Any

from spurious.exceptions import ParameterError
from spurious.models.batched.backend import _torch


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
