"""Class bases: how a classifier's free logits map to the class logits."""

from __future__ import annotations

import math

import numpy as np


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
