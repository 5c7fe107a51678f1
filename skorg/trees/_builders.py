"""Simple tree builders: balanced dyadic trees and trees from SciPy linkage."""

from __future__ import annotations

import numpy as np

from ._partition_tree import PartitionTree, _check_permutation

__all__ = ["dyadic_tree", "linkage_tree"]


def dyadic_tree(order):
    """Balanced binary (dyadic) tree on a given leaf order.

    Every folder is split into halves (the left half gets the extra point when
    the size is odd) until singletons remain; a singleton reached early
    continues as a one-child chain down to the leaf level. For ``n`` a power
    of two this is the usual dyadic tree with ``log2(n) + 1`` levels.

    Parameters
    ----------
    order : int or array-like of shape (n_points,)
        The number of points (identity order) or the leaf order.

    Returns
    -------
    tree : PartitionTree

    Examples
    --------
    >>> from skorg.trees import dyadic_tree
    >>> dyadic_tree(8).level_sizes()
    array([1, 2, 4, 8])
    >>> dyadic_tree([2, 0, 1]).leaf_order
    array([2, 0, 1])
    """
    if np.ndim(order) == 0:
        n = int(order)
        if n < 1:
            raise ValueError(f"dyadic_tree needs at least one point, got {n}.")
        order = np.arange(n)
    order = _check_permutation(order, np.asarray(order).shape[0], "order")
    n = order.shape[0]
    bounds = [np.array([0])]
    segments = [(0, n)]
    while any(e - s > 1 for s, e in segments):
        nxt = []
        for s, e in segments:
            if e - s > 1:
                mid = s + (e - s + 1) // 2
                nxt.extend([(s, mid), (mid, e)])
            else:
                nxt.append((s, e))
        segments = nxt
        bounds.append(np.array([s for s, _ in segments]))
    if n == 1:
        bounds = [np.array([0])]
    return PartitionTree(order, bounds)


def linkage_tree(X, *, method="average", metric="euclidean", optimal_ordering=True):
    """Binary tree from SciPy agglomerative clustering of the rows of X.

    A baseline builder: ``scipy.cluster.hierarchy.linkage`` followed by
    :meth:`PartitionTree.from_linkage`.

    Parameters
    ----------
    X : array-like of shape (n_points, n_features)
    method, metric : str
        Passed to :func:`scipy.cluster.hierarchy.linkage`.
    optimal_ordering : bool, default=True
        Reorder the leaves with Bar-Joseph's optimal leaf ordering.

    Returns
    -------
    tree : PartitionTree
    """
    from scipy.cluster.hierarchy import linkage

    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 2:
        raise ValueError(f"X must be 2-D with at least two rows, got shape {X.shape}.")
    Z = linkage(X, method=method, metric=metric, optimal_ordering=optimal_ordering)
    return PartitionTree.from_linkage(Z)
