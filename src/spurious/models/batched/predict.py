"""Predictions of a fitted group of classifiers: one GEMM per block of rows, then argmax."""

from __future__ import annotations

from typing import Any

import numpy as np

from spurious.models.batched.backend import _torch
from spurious.models.batched.sparse import is_sparse


def _predict(theta: Any, basis: Any, mask: Any, xp: Any, block: int) -> np.ndarray:
    """Labels (g, M) of every classifier of a group on every row of ``xp`` (float32;
    dense, or a :class:`~spurious.models.batched.sparse._SparseX`)."""
    torch = _torch()
    g, a, r = theta.shape
    d = a - 1
    wt = theta[:, :d, :].transpose(1, 2).reshape(g * r, d).to(torch.float32)
    b = theta[:, d, :].to(torch.float32)[:, :, None]
    n_rows = int(xp.shape[0])
    out = np.empty((g, n_rows), dtype=np.int16)
    for lo in range(0, n_rows, block):
        if is_sparse(xp):
            z = (xp.block(lo, lo + block) @ wt.T.contiguous()).T.reshape(g, r, -1) + b
        else:
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
