"""Top-down trees: every folder split in two by the sign of its own diffusion coordinate."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._hierarchical import _geometry, _tree_from_parents
from ._partition_tree import PartitionTree

__all__ = ["bisection_tree"]


def bisection_tree(distances=None, *, affinity=None, density_normalize=True):
    """Top-down tree: every folder split in two by its own diffusion embedding.

    Parameters
    ----------
    distances : array-like of shape (n_points, n_points), optional
        Read as the affinity ``exp(-d / median d)``. Pass exactly one of ``distances`` and
        ``affinity``.
    affinity : array-like or sparse matrix of shape (n_points, n_points), optional
        Symmetric, non-negative; dense or a sparse k-nearest-neighbour graph.
    density_normalize : bool, default=True
        Coifman-Lafon normalization of each folder's Markov matrix.

    Returns
    -------
    tree : PartitionTree
        Binary. Children are ordered by their mean first diffusion coordinate, so the leaf
        order is a recursive spectral ordering.

    Notes
    -----
    A folder is split by the sign of the first non-trivial eigenvector psi_1 of the Markov
    matrix of its sub-affinity (the spectral relaxation of the normalized cut, Shi and Malik
    2000). When psi_1 leaves one side empty (duplicate points, a constant eigenvector) the
    folder is split at the median rank of psi_1 (ties by point index), so every split makes
    progress and the tree is always complete.

    References
    ----------
    J. Shi and J. Malik, "Normalized cuts and image segmentation", IEEE TPAMI 22, 2000.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import bisection_tree
    >>> x = np.array([0.0, 5.0, 0.1, 5.1, 0.2])
    >>> tree = bisection_tree(np.abs(np.subtract.outer(x, x)))
    >>> sorted(map(sorted, (tree.folder(c).tolist() for c in tree.children(0))))
    [[0, 2, 4], [1, 3]]
    """
    D, A = _geometry(distances, affinity)
    if A is None:
        off = D[~np.eye(D.shape[0], dtype=bool)]
        med = float(np.median(off)) if off.size else 0.0
        A = np.exp(-D / med) if med > 0 else np.ones_like(D)
    n = A.shape[0]
    if n == 1:
        return PartitionTree([0], [[0]])
    A = A.tocsr() if sp.issparse(A) else A
    parent = [-1] * n  # leaves first; internal nodes appended as they are split
    parent.append(-1)  # the root, id n
    order_parts = []
    stack = [(n, np.arange(n, dtype=np.intp), None)]
    while stack:
        node, idx, ref = stack.pop()
        if idx.shape[0] == 1:
            order_parts.append(idx)
            continue
        if idx.shape[0] == 2:
            flip = ref is not None and ref[1] < ref[0]
            left, right = (idx[1:], idx[:1]) if flip else (idx[:1], idx[1:])
            parts = [(left, None), (right, None)]
        else:
            parts = _split(A, idx, density_normalize, ref)
        kids = []
        for part, part_f in parts:
            if part.shape[0] == 1:
                parent[int(part[0])] = node
                kids.append((int(part[0]), part, part_f))
            else:
                parent.append(node)
                kids.append((len(parent) - 1, part, part_f))
        for child, part, part_f in reversed(kids):  # left first in the depth-first order
            stack.append((child, part, part_f))
    order = np.concatenate(order_parts)
    return _tree_from_parents(np.asarray(parent, dtype=np.intp), order)


def _split(A, idx, density_normalize, ref):
    """The two halves of folder ``idx`` with psi_1 on each; psi_1 is oriented to agree with
    ``ref`` (the parent's psi_1 on these points) so that the leaf order runs one way."""
    from ..graphs import diffusion_eigenpairs

    sub = A[idx][:, idx]
    if sp.issparse(sub):
        sub = sub.toarray()
    psi, _ = diffusion_eigenpairs(
        sub, 2, density_normalize=density_normalize, by_magnitude=False, check_input=False
    )
    f = psi[:, 1] if psi.shape[1] > 1 else np.zeros(idx.shape[0])
    if ref is not None and np.dot(f - f.mean(), ref - ref.mean()) < 0:
        f = -f
    neg = f < 0
    k = int(neg.sum())
    rank = np.lexsort((np.arange(idx.shape[0]), f))  # by psi_1, ties by position
    if k == 0 or k == idx.shape[0]:
        k = idx.shape[0] // 2
    # sorted by psi_1, the first k are the negative side (or the lower half): the folder with
    # the smaller psi_1 comes first, so the leaf order follows psi_1
    lo, hi = np.sort(rank[:k]), np.sort(rank[k:])
    return [(idx[lo], f[lo]), (idx[hi], f[hi])]
