"""The flexible tree: bottom-up multiscale diffusion clustering."""

from __future__ import annotations

from numbers import Real

import numpy as np

from .._kernels._flexible import join_round, round_distances
from .._selection import order_statistics
from ._partition_tree import PartitionTree

__all__ = ["flexible_tree"]


def flexible_tree(
    affinity, *, tree_constant=1.0, n_eigs=12, return_embedding=False, check_input=True
):
    """Flexible partition tree of an affinity (Ankenman's bottom-up tree).

    Points are joined level by level by diffusion distance at doubling
    diffusion times, with an exponential penalty that keeps folders small.
    Children of every folder are ordered by decreasing mean of the first
    non-trivial diffusion eigenvector, which makes the depth-first leaf order
    a smooth 1-D ordering of the points.

    Parameters
    ----------
    affinity : array-like of shape (n_points, n_points)
        Symmetric, non-negative affinity.
    tree_constant : float, default=1.0
        The constant c of the join penalty; larger c joins less.
    n_eigs : int, default=12
        Diffusion eigenpairs used (the trivial one included).
    return_embedding : bool, default=False
        Also return the eigenvectors and eigenvalues used.
    check_input : bool, default=True
        Validate the affinity (finite, square, symmetric, non-negative).
        Callers that built it themselves may skip the O(n^2) checks.

    Returns
    -------
    tree : PartitionTree
    psi, eigenvalues : ndarray
        Only with ``return_embedding=True``.

    Notes
    -----
    With psi, lambda from :func:`~skorg.graphs.diffusion_eigenpairs`
    (largest ``|lambda|``), round r = 0, 1, ... uses diffusion time
    ``t = 2**r``, the distance ``D_t[i, j] = ||(psi_i - psi_j) * lambda**t||``
    averaged over the points of two current nodes, and this join rule:
    ``med`` is the median of the node distances with the diagonal counted as
    ``+inf``, ``penalty = med / tree_constant``; the node whose nearest
    candidate is globally closest proposes a join; the round stops when that
    distance is at least ``med`` after one join; two singletons always join;
    otherwise clusters of sizes s, s' join iff the distance is below
    ``penalty * 2 ** (1 - s * s')``; a rejected candidate is removed. A node
    that joins nothing passes up as a one-child folder. If a round can make no
    join at all (a graph that fell apart into unreachable pieces), the
    remaining folders go straight under the root, so the loop always ends.

    References
    ----------
    W. Ankenman, "Geometry and analysis of dual networks on questionnaires",
    PhD thesis, Yale University, 2014.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import flexible_tree
    >>> x = np.linspace(0, 1, 20)
    >>> tree = flexible_tree(np.exp(-np.subtract.outer(x, x) ** 2 / 0.05))
    >>> tree.n_points, int(tree.level_sizes()[0])
    (20, 1)
    """
    from ..graphs import check_affinity, diffusion_eigenpairs

    A = check_affinity(affinity) if check_input else np.asarray(affinity, dtype=np.float64)
    if not (isinstance(tree_constant, Real) and np.isfinite(tree_constant) and tree_constant > 0):
        raise ValueError(f"tree_constant must be a positive number, got {tree_constant!r}.")
    n = A.shape[0]
    if n == 1:
        tree = PartitionTree([0], [[0]])
        return (tree, np.ones((1, 1)), np.ones(1)) if return_embedding else tree
    psi, lam = diffusion_eigenpairs(A, n_eigs, check_input=False)
    levels = _join_levels(psi, lam, float(tree_constant))
    tree = _ordered_tree(levels, psi[:, 1] if psi.shape[1] > 1 else np.zeros(n))
    return (tree, psi, lam) if return_embedding else tree


def _join_levels(psi, lam, tree_constant):
    """Folder labels per level, leaves first, root last."""
    n = psi.shape[0]
    labels = np.arange(n, dtype=np.int64)
    levels = [labels]
    n_nodes = n
    t = 1.0
    with np.errstate(under="ignore"):
        while n_nodes > 1:
            dist, tri = round_distances(_scaled_embedding(psi, lam, t), labels, n_nodes)
            node_labels, joins = join_round(dist, _symmetric_median(tri, n_nodes), tree_constant)
            if joins == 0:
                break
            labels = node_labels[labels]
            n_nodes = int(node_labels.max()) + 1
            levels.append(labels)
            t *= 2.0
    if n_nodes > 1:
        levels.append(np.zeros(n, dtype=np.int64))
    return levels[::-1]


def _scaled_embedding(psi, lam, t):
    """Diffusion coordinates at time t, rescaled by an exact power of two.

    The join rule only compares distances with each other, so a common scale
    changes nothing; rescaling keeps late rounds (large t) out of the
    denormal range, where arithmetic is slow and the original degenerates.
    Columns that cannot change any distance (the constant psi_0, and
    coordinates 1e-100 times smaller than the largest) are dropped.
    """
    log2_weight = t * np.log2(np.maximum(np.abs(lam[1:]), 1e-300))
    if log2_weight.size == 0:
        return np.zeros((psi.shape[0], 1))
    shift = np.floor(log2_weight.max())
    keep = log2_weight - shift > -330.0  # 2**-330 ~ 1e-100
    weight = np.exp2(log2_weight[keep] - shift)
    if shift > -1000:  # lam**t is representable: use it, scaled exactly
        weight = np.ldexp(np.abs(lam[1:][keep]) ** t, int(-shift))
    return np.ascontiguousarray(psi[:, 1:][:, keep] * weight)


def _median(D):
    """Median of all entries; with an infinite middle pair it is infinite (no NaN)."""
    flat = D.ravel()
    half = flat.shape[0] // 2
    if flat.shape[0] % 2:
        return float(np.partition(flat, half)[half])
    part = np.partition(flat, [half - 1, half])
    lo, hi = part[half - 1], part[half]
    return float(hi) if np.isinf(hi) else 0.5 * float(lo + hi)


def _symmetric_median(tri, m):
    """:func:`_median` of a symmetric (m, m) matrix with an infinite diagonal, from the
    strict upper triangle ``tri`` alone (which it may reorder).

    Sorted, the m^2 entries are every triangle value twice followed by the m infinite diagonal
    entries, so entry r is the (r // 2)-th smallest of ``tri`` (r < m (m - 1)) or ``+inf``; the
    selection runs on half the entries.
    """
    n_tri = tri.shape[0]
    half = (m * m) // 2
    ranks = [half] if (m * m) % 2 else [half - 1, half]
    picks = sorted({r // 2 for r in ranks if r < 2 * n_tri})
    found = dict(zip(picks, order_statistics(tri, picks))) if picks else {}
    values = [found[r // 2] if r < 2 * n_tri else np.inf for r in ranks]
    if len(values) == 1:
        return values[0]
    lo, hi = values
    return hi if np.isinf(hi) else 0.5 * (lo + hi)


def _ordered_tree(levels, psi1):
    """Tree whose children appear by decreasing mean of psi1 over their points."""
    keys = []
    for row in levels[1:]:
        sums = np.bincount(row, weights=psi1)
        counts = np.bincount(row)
        keys.append(-(sums / counts)[row])
        keys.append(row)
    leaf_order = np.lexsort(keys[::-1]) if keys else np.arange(levels[0].shape[0])
    # nested by construction, root first, singletons last; the lexsort keeps folders
    # contiguous
    return PartitionTree._from_valid_levels(np.stack(levels), leaf_order)
