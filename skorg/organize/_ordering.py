"""Leaf-ordering strategies: from trees and learned distances to one order per axis."""

from __future__ import annotations

import numpy as np
from scipy.cluster.hierarchy import leaves_list, linkage, optimal_leaf_ordering
from scipy.spatial.distance import squareform

from .._validation import check_finite_array, pow2_scale

__all__ = ["ORDERINGS", "leaf_order"]

ORDERINGS = ("tree", "tree_olo", "emd_olo")


def leaf_order(tree, distances=None, strategy="emd_olo"):
    """Order the points of one axis.

    Parameters
    ----------
    tree : PartitionTree
        The axis tree (its leaf order is the ``"tree"`` strategy).
    distances : ndarray of shape (n_points, n_points), optional
        The learned distances of the axis (tree EMD). Needed by the
        ``"tree_olo"`` and ``"emd_olo"`` strategies; without them the tree
        order is returned.
    strategy : {"tree", "tree_olo", "emd_olo"}
        - ``"tree"``: the flexible tree's depth-first order (children by
          decreasing mean of the first diffusion eigenvector; the original
          rule).
        - ``"tree_olo"``: the same tree, with subtrees flipped by optimal
          leaf ordering (multi-way folders binarized as chains) to minimize
          the distance between neighbouring leaves; the order follows the
          tree's folders.
        - ``"emd_olo"``: single-linkage clustering of the learned distances
          with Bar-Joseph's optimal leaf ordering (SciPy); the order need
          not follow the tree's folders. Single linkage follows a 1-D chain
          of neighbours, which is what an ordering recovers; on shuffled
          smooth matrices it beat average and complete linkage on the same
          distances (see ``examples/plot_organize_shuffled_matrix.py``).

    Returns
    -------
    order : ndarray of shape (n_points,)

    Notes
    -----
    The distances are divided by their largest value (a power of two, so exactly) before
    SciPy's optimal leaf ordering, whose results stop being optimal for distances above
    about 1e8 or below about 1e-200: the order does not depend on the units of the data.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.organize import leaf_order
    >>> from skorg.trees import dyadic_tree
    >>> x = np.array([0.0, 3.0, 1.0, 2.0])
    >>> leaf_order(dyadic_tree(4), np.abs(np.subtract.outer(x, x)) * 1e9).tolist()
    [1, 3, 2, 0]
    """
    from .._validation import check_tree_for_axis
    from ..trees import PartitionTree

    if not isinstance(strategy, str) or strategy not in ORDERINGS:
        raise ValueError(f"Unknown ordering strategy={strategy!r}; expected one of {ORDERINGS}.")
    if not isinstance(tree, PartitionTree):
        raise TypeError(f"tree must be a skorg.trees.PartitionTree, got {type(tree).__name__}.")
    if distances is not None:
        distances = check_finite_array(distances, "distances", ndim=2, min_rows=1)
        if distances.shape[0] != distances.shape[1]:
            raise ValueError(f"distances must be square, got shape {distances.shape}.")
        check_tree_for_axis(tree, distances.shape[0], "tree", "points in distances")
        if np.any(distances < 0):
            raise ValueError("distances must be non-negative.")
    if strategy == "tree" or distances is None or tree.n_points < 3:
        return np.asarray(tree.leaf_order).copy()
    if strategy == "emd_olo":
        return _optimal_leaf_order(distances)
    return _tree_optimal_order(tree, distances)


def _unit_distances(distances):
    """Symmetrized distances with largest value in [0.5, 1) (exact power-of-two scaling)."""
    d = np.asarray(distances, dtype=np.float64)
    d = d * pow2_scale(d, always=True)
    d = 0.5 * (d + d.T)
    np.fill_diagonal(d, 0.0)
    return d


def _optimal_leaf_order(distances):
    d = _unit_distances(distances)
    condensed = squareform(d, checks=False)
    Z = linkage(condensed, method="single")
    Z = optimal_leaf_ordering(Z, condensed)
    return leaves_list(Z).astype(np.intp)


def _tree_optimal_order(tree, distances):
    """Optimal leaf ordering restricted to the tree's folders.

    Every multi-way folder is binarized as a left-leaning chain of its
    children (in the tree's order), then Bar-Joseph's optimal leaf ordering
    flips subtrees to minimize the sum of distances between neighbouring
    leaves. Every folder stays contiguous.
    """
    d = _unit_distances(distances)
    n = tree.n_points
    cluster = np.full(tree.n_nodes, -1, dtype=np.intp)
    leaves = tree.level_nodes(tree.n_levels - 1)
    cluster[leaves] = tree.leaf_order[tree.start[leaves]]
    rows = []
    top = tree.n_levels - 1
    for node in range(tree.n_nodes - 1, -1, -1):
        kids = tree.children(node)
        if kids.shape[0] == 0:
            continue
        current = cluster[kids[0]]
        m = kids.shape[0]
        for k, child in enumerate(kids[1:], start=1):
            # heights grow with the level and along the chain, so the linkage is monotone
            height = (top - tree.level[node]) + 0.5 * k / m
            size = tree.end[kids[k]] - tree.start[kids[0]]
            rows.append([current, cluster[child], height, size])
            current = n + len(rows) - 1
        cluster[node] = current
    Z = np.asarray(rows, dtype=np.float64)
    Z = optimal_leaf_ordering(Z, squareform(d, checks=False))
    return leaves_list(Z).astype(np.intp)
