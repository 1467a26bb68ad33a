"""Device and precision helpers: the lazy torch import and shared tensors.

Thread counts are :func:`spurious.models.runtime.torch_threads`'s.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from spurious.models.runtime.threads import import_torch


def _torch():
    return import_torch("BatchedLogisticRegression")


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
