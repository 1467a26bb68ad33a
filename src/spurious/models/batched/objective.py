"""The objective of a group of classifiers: its gradient through two shared GEMMs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from spurious.models.batched.backend import _torch


@dataclass
class _Data:
    """Everything shared by all groups of one ``fit_predict`` call."""

    x32: Any  # (N, d) float32 features, on the device (dense, or a sparse._SparseX)
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


class _Group:
    """A fixed-size group of ``g`` classifiers evaluated with shared GEMMs (dense
    features; sparse ones use :class:`~spurious.models.batched.sparse._SparseGroup`).

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
        grad_r = logit_residual(self, z)  # (g, r, t)
        rows = grad_r.transpose(1, 2).reshape(g * t, r).to(X.dtype)
        grad = torch.empty(g, d + 1, r, dtype=torch.float64, device=data.device)
        buf = self._buffer(X.dtype)
        if self.has_repeats:
            buf.zero_()
            buf.index_add_(0, self.flat, rows)
        else:
            buf.index_copy_(0, self.flat, rows)
        grad_w = buf.view(n, g * r).T @ X  # (g*r, d); streams X row-major once
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


def logit_residual(group: Any, z: Any) -> Any:
    """``basis^T (softmax(basis z + mask) - onehot(y)) * scale``: the gradient of the mean
    cross-entropy with respect to each classifier's free logits ``z`` (g, r, t), shared by
    the dense and the sparse groups (which differ only in how ``z`` is computed)."""
    torch = _torch()
    logits = torch.bmm(group.basis, z)  # (g, k, t)
    if group.mask is not None:
        logits += group.mask
    prob = torch.softmax(logits, dim=1)
    prob.scatter_add_(1, group.y, group.minus_one)  # p - onehot(y)
    return torch.bmm(group.basis_t, prob).mul_(group.scale)  # (g, r, t)
