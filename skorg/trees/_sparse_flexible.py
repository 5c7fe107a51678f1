"""The flexible tree on a sparse (k-nearest-neighbour) affinity graph."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp

from .._kernels._flexible import join_round
from .._kernels._sparse import folder_pair_means, sparse_join_round
from .._validation import check_int_seed
from ._flexible import _median, _ordered_tree, _scaled_embedding
from ._partition_tree import PartitionTree

__all__ = ["sparse_flexible_tree"]

# With at most this many folders left, every pair is compared (the dense join rule).
_DENSE_NODES = 256
# Random folder pairs behind the median of all pairs when there are more folders.
_MEDIAN_PAIRS = 4096


def sparse_flexible_tree(
    affinity,
    *,
    tree_constant=1.0,
    n_eigs=12,
    sample_size=32,
    random_state=None,
    eigenpairs=None,
    return_embedding=False,
):
    """Flexible partition tree of a sparse affinity: joins only along the graph's edges.

    Parameters
    ----------
    affinity : sparse matrix of shape (n_points, n_points)
        Symmetric, non-negative (e.g. :func:`~skorg.graphs.knn_affinity`). Its non-zero
        pattern is the graph whose edges link folders.
    tree_constant : float, default=1.0
    n_eigs : int, default=12
    sample_size : int, default=32
        Points per folder in a folder-to-folder mean distance: a folder larger than this is
        represented by a fixed random subset of this size.
    random_state : int, RandomState or None, default=None
        Seed of the folder subsets and of the median's pair sample (None: 0).
    eigenpairs : tuple (psi, eigenvalues), optional
        Diffusion eigenpairs to use instead of those of ``affinity`` (e.g. from
        :func:`~skorg.graphs.landmark_diffusion_eigenpairs`, which keep the geometry of a
        dense kernel); ``affinity`` then only supplies the candidate pairs.
    return_embedding : bool, default=False

    Returns
    -------
    tree : PartitionTree
    psi, eigenvalues : ndarray
        Only with ``return_embedding=True``.

    Notes
    -----
    The rule of :func:`flexible_tree` with three changes that make a round cost
    O(nnz + n_pairs * sample_size^2) instead of O(n^2): the candidate pairs of a round are the
    folder pairs linked by at least one edge of the graph (others count as ``+inf``); the mean
    distance between two folders averages over their subsets of at most ``sample_size``
    points (exact for smaller folders); the median of all m^2 folder distances (diagonal
    ``+inf``) is the matching quantile of 4,096 random folder pairs. Once at most 256 folders
    remain, every pair is compared and the dense kernel runs. The eigenpairs come from
    :func:`~skorg.graphs.sparse_diffusion_eigenpairs`.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from skorg.trees import flexible_tree, sparse_flexible_tree
    >>> x = np.linspace(0, 1, 20)
    >>> A = np.exp(-np.subtract.outer(x, x) ** 2 / 0.05)
    >>> sparse_flexible_tree(sp.csr_matrix(A)).same_partitions(flexible_tree(A))
    True
    """
    from ..graphs import check_sparse_affinity, sparse_diffusion_eigenpairs

    A = check_sparse_affinity(affinity)
    if not (isinstance(tree_constant, Real) and np.isfinite(tree_constant) and tree_constant > 0):
        raise ValueError(f"tree_constant must be a positive number, got {tree_constant!r}.")
    if isinstance(sample_size, bool) or not isinstance(sample_size, Integral) or sample_size < 1:
        raise ValueError(f"sample_size must be a positive integer, got {sample_size!r}.")
    n = A.shape[0]
    if n == 1:
        tree = PartitionTree([0], [[0]])
        return (tree, np.ones((1, 1)), np.ones(1)) if return_embedding else tree
    if eigenpairs is None:
        psi, lam = sparse_diffusion_eigenpairs(A, n_eigs)
    else:
        psi, lam = (np.asarray(a, dtype=np.float64) for a in eigenpairs)
        if psi.ndim != 2 or psi.shape[0] != n or lam.shape != (psi.shape[1],):
            raise ValueError(
                f"eigenpairs must be psi of shape ({n}, k) and eigenvalues of shape (k,), got "
                f"{psi.shape} and {lam.shape}."
            )
    graph = sp.triu(A, k=1, format="coo")
    rng = np.random.default_rng(check_int_seed(random_state))
    levels = _join_levels(
        psi,
        lam,
        float(tree_constant),
        graph.row.astype(np.int64),
        graph.col.astype(np.int64),
        int(sample_size),
        rng,
    )
    tree = _ordered_tree(levels, psi[:, 1] if psi.shape[1] > 1 else np.zeros(n))
    return (tree, psi, lam) if return_embedding else tree


def _members(labels, n_nodes, rank):
    """CSR of the points of every folder, each folder's points in the fixed random ``rank``."""
    order = np.lexsort((rank, labels))
    ptr = np.zeros(n_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(labels, minlength=n_nodes), out=ptr[1:])
    return ptr, order.astype(np.int64)


def _join_levels(psi, lam, tree_constant, ei, ej, cap, rng):
    n = psi.shape[0]
    rank = rng.permutation(n)
    labels = np.arange(n, dtype=np.int64)
    levels = [labels]
    n_nodes = n
    t = 1.0
    with np.errstate(under="ignore"):
        while n_nodes > 1:
            emb = _scaled_embedding(psi, lam, t)
            ptr, members = _members(labels, n_nodes, rank)
            if n_nodes <= _DENSE_NODES:
                pa, pb = np.triu_indices(n_nodes, 1)
                d = folder_pair_means(emb, ptr, members, cap, pa, pb)
                D = np.full((n_nodes, n_nodes), np.inf)
                D[pa, pb] = d
                D[pb, pa] = d
                D[~np.isfinite(D)] = np.inf
                node_labels, joins = join_round(D, _median(D), tree_constant)
            else:
                node_labels, joins = _sparse_round(
                    emb, labels, n_nodes, ptr, members, cap, ei, ej, tree_constant, rng
                )
            if joins == 0:
                break
            labels = node_labels[labels]
            n_nodes = int(node_labels.max()) + 1
            levels.append(labels)
            t *= 2.0
    if n_nodes > 1:
        levels.append(np.zeros(n, dtype=np.int64))
    return levels[::-1]


def _sparse_round(emb, labels, m, ptr, members, cap, ei, ej, tree_constant, rng):
    ga, gb = labels[ei], labels[ej]
    lo, hi = np.minimum(ga, gb), np.maximum(ga, gb)
    linked = lo != hi
    key = np.unique(lo[linked] * m + hi[linked])
    pa, pb = key // m, key % m
    d = folder_pair_means(emb, ptr, members, cap, pa, pb)
    d[~np.isfinite(d)] = np.inf
    # median of the m^2 entries: m of them are the +inf diagonal, so it is the quantile
    # m / (2 (m - 1)) of the off-diagonal ones
    sa = rng.integers(0, m, _MEDIAN_PAIRS)
    sb = (sa + rng.integers(1, m, _MEDIAN_PAIRS)) % m
    sample = folder_pair_means(emb, ptr, members, cap, sa, sb)
    sample[~np.isfinite(sample)] = np.inf
    q = min(0.5 * m / (m - 1.0), 1.0)
    med = float(np.quantile(sample, q)) if np.isfinite(sample).all() else _inf_quantile(sample, q)
    # candidate lists of every node, sorted by (distance, index) as the dense argmin breaks ties
    rows = np.concatenate([pa, pb])
    cols = np.concatenate([pb, pa])
    dist = np.concatenate([d, d])
    order = np.lexsort((cols, dist, rows))
    cand_ptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=m), out=cand_ptr[1:])
    return sparse_join_round(cand_ptr, cols[order], dist[order], med, tree_constant)


def _inf_quantile(sample, q):
    s = np.sort(sample)
    v = s[min(int(np.floor(q * (s.shape[0] - 1))), s.shape[0] - 1)]
    return float(v) if np.isfinite(v) else np.inf
