"""Criteria for how well an order of the rows/columns recovers a hidden one."""

from __future__ import annotations

import numpy as np
from scipy.stats import spearmanr

from .._validation import check_finite_array

__all__ = ["neumann_stress", "order_spearman"]


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
    order = np.asarray(order)
    true_order = np.asarray(true_order)
    if order.shape != true_order.shape or order.ndim != 1:
        raise ValueError("order and true_order must be 1-D arrays of the same length.")
    found = np.empty(order.shape[0])
    found[order] = np.arange(order.shape[0])
    truth = np.empty(order.shape[0])
    truth[true_order] = np.arange(order.shape[0])
    return float(abs(spearmanr(found, truth).statistic))


def neumann_stress(X):
    """Sum of squared differences between neighbouring entries, both axes.

    Lower means smoother in the given order; compare orders of the same
    matrix (e.g. divide by the stress in the true order).

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.metrics import neumann_stress
    >>> float(neumann_stress(np.array([[0.0, 1.0], [1.0, 2.0]])))
    4.0
    """
    X = check_finite_array(X, "X", ndim=2, min_rows=1)
    return float(np.sum(np.diff(X, axis=0) ** 2) + np.sum(np.diff(X, axis=1) ** 2))
