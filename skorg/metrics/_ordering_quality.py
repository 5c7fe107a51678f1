"""Criteria for how well an order of the rows/columns recovers a hidden one."""

from __future__ import annotations

import numpy as np
from scipy.stats import spearmanr

from .._validation import check_finite_array, scaled_copy, unscale

__all__ = ["neumann_stress", "order_spearman"]


def _check_order(order, name):
    """A permutation of 0..n-1 as an intp array (integers only; floats must be whole)."""
    arr = np.asarray(order)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of indices, got shape {arr.shape}.")
    if arr.size and arr.dtype.kind not in "iu":
        if arr.dtype.kind != "f" or not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise TypeError(f"{name} must hold integer indices, got dtype {arr.dtype}.")
    arr = arr.astype(np.intp)
    if not np.array_equal(np.sort(arr), np.arange(arr.shape[0])):
        raise ValueError(
            f"{name} must be a permutation of 0..{arr.shape[0] - 1} (each index once)."
        )
    return arr


def order_spearman(order, true_order):
    """Absolute Spearman correlation between a recovered and the true order.

    Parameters
    ----------
    order : array-like of shape (n,)
        Indices left to right, as found (e.g. ``org.row_order_``).
    true_order : array-like of shape (n,)
        Indices sorted by the hidden coordinate.

    Returns
    -------
    rho : float
        1 when the order equals the true order or its reverse.

    Examples
    --------
    >>> from skorg.metrics import order_spearman
    >>> order_spearman([3, 2, 1, 0], [0, 1, 2, 3])
    1.0
    """
    order = _check_order(order, "order")
    true_order = _check_order(true_order, "true_order")
    if order.shape != true_order.shape:
        raise ValueError(
            f"order and true_order must have the same length, got {order.shape[0]} and "
            f"{true_order.shape[0]}."
        )
    if order.shape[0] < 2:
        raise ValueError(f"order needs at least 2 entries for a correlation, got {order.shape[0]}.")
    found = np.empty(order.shape[0])
    found[order] = np.arange(order.shape[0])
    truth = np.empty(order.shape[0])
    truth[true_order] = np.arange(order.shape[0])
    return float(abs(spearmanr(found, truth).statistic))


def neumann_stress(X):
    """Sum of squared differences between neighbouring entries, both axes.

    Lower means smoother in the given order; compare orders of the same
    matrix (e.g. divide by the stress in the true order). It grows as the square of
    the magnitude of X: a stress beyond the float range (X near 1e154 or above, with many
    entries) raises a ValueError naming the largest magnitude for which it is finite.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.metrics import neumann_stress
    >>> float(neumann_stress(np.array([[0.0, 1.0], [1.0, 2.0]])))
    4.0
    """
    X = check_finite_array(X, "X", ndim=2, min_rows=1)
    # homogeneous of degree 2: computed on X scaled exactly, so the squares cannot overflow
    # (and a stress beyond the float range is refused, naming the magnitude that fits)
    X, scale = scaled_copy(X)
    stress = float(np.sum(np.diff(X, axis=0) ** 2) + np.sum(np.diff(X, axis=1) ** 2))
    return float(unscale(stress, scale, X, degree=2, what="The Neumann stress"))
