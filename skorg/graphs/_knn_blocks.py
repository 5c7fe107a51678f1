"""Cityblock (L1) nearest neighbours in blocks: exact block search, merge, NN-descent, recall.

The k-NN path of the questionnaire searches the rows of the tree-EMD features (L1 metric).
Everything here works on blocks of rows, so that the same functions serve an in-memory
array and a Dask array:

- :func:`l1_knn_block` (exact): the nearest rows of a block of reference rows for a block of
  query rows, merged into the queries' current lists. A pair's distance does not depend on
  the blocking, so any split of the queries and references, merged in any order, gives the
  same lists bit for bit.
- :func:`merge_knn_lists` (exact): the union of two sets of lists, the ``k`` smallest kept.
- :func:`l1_knn_descent` (approximate): nearest-neighbour descent from lists of random
  blocks (each row searched exactly among the rows of its blocks), then rounds in which
  every row compares the neighbours of its neighbours (and of the rows that list it).
- :func:`l1_knn_recall`: the recall of lists against the exact search on sampled rows.

Lists are pairs ``(dist, idx)`` of shape (n, k), float64 and int64, sorted by
``(distance, index)``; an empty slot is ``(+inf, -1)``. Distances are computed from the
features in float32 runs of 512 (float64 for float64 features): they rank the neighbours;
the k-NN graph recomputes the distances of its edges in float64.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np

from .._kernels import _knn_l1 as _k
from .._validation import check_int_seed

__all__ = [
    "empty_knn_lists",
    "l1_cross_distances",
    "l1_knn_block",
    "l1_knn_descent",
    "l1_knn_recall",
    "merge_knn_lists",
]


def empty_knn_lists(n_rows, k):
    """Empty neighbour lists of ``n_rows`` rows: ``(+inf, -1)`` in every slot."""
    return np.full((n_rows, k), np.inf), np.full((n_rows, k), -1, dtype=np.int64)


def _features(F):
    F = np.asarray(F)
    if F.dtype not in (np.float32, np.float64):
        F = F.astype(np.float64)
    return np.ascontiguousarray(F)


def _ids(ids, n, offset=0):
    if ids is None:
        return np.arange(offset, offset + n, dtype=np.int64)
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    if ids.shape != (n,):
        raise ValueError(f"ids must have shape ({n},), got {ids.shape}.")
    return ids


def l1_knn_block(Q, F, k=None, *, query_ids=None, reference_ids=None, lists=None):
    """Exact L1 nearest neighbours among the rows of F for every row of Q (a block search).

    Parameters
    ----------
    Q : ndarray of shape (n_queries, n_features)
        float32 or float64 (the precision of the distances, see the module notes).
    F : ndarray of shape (n_references, n_features)
        Same dtype as Q.
    k : int, optional
        Neighbours per query; needed without ``lists``.
    query_ids, reference_ids : ndarray of int, optional
        Global row ids (default ``arange``); a reference with the query's id is skipped.
    lists : tuple (dist, idx), optional
        The queries' current lists, updated in place and returned (from an earlier block).

    Returns
    -------
    dist : ndarray of shape (n_queries, k), float64
    idx : ndarray of shape (n_queries, k), int64

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.graphs import l1_knn_block
    >>> F = np.array([[0.0], [1.0], [3.0], [7.0]])
    >>> l1_knn_block(F, F, 1)[1].ravel()
    array([1, 0, 1, 2])
    """
    Q, F = _features(Q), _features(F)
    if Q.ndim != 2 or F.ndim != 2 or Q.shape[1] != F.shape[1]:
        raise ValueError(f"Q and F must be 2-D with as many columns, got {Q.shape}, {F.shape}.")
    F = F.astype(Q.dtype, copy=False)
    if lists is None:
        if isinstance(k, bool) or not isinstance(k, Integral) or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}.")
        lists = empty_knn_lists(Q.shape[0], int(k))
    dist, idx = lists
    if dist.shape[0] != Q.shape[0] or dist.shape != idx.shape:
        raise ValueError(f"lists must be two arrays of shape ({Q.shape[0]}, k).")
    q_ids = _ids(query_ids, Q.shape[0])
    r_ids = _ids(reference_ids, F.shape[0])
    if Q.shape[1] == 0:  # no features: every distance is 0
        Q, F = np.zeros((Q.shape[0], 1), Q.dtype), np.zeros((F.shape[0], 1), Q.dtype)
    if Q.shape[0] and F.shape[0]:
        _k.knn_l1_cross(Q, F, q_ids, r_ids, -1.0, dist, idx)
    return dist, idx


def l1_cross_distances(Q, F):
    """All L1 distances between the rows of Q and those of F, float64 (the runs of
    :func:`l1_knn_block`: exact for float64 features, about 1e-7 relative for float32).

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.graphs import l1_cross_distances
    >>> l1_cross_distances(np.array([[0.0, 1.0]]), np.array([[1.0, 1.0], [3.0, -1.0]]))
    array([[1., 5.]])
    """
    Q, F = _features(Q), _features(F)
    if Q.ndim != 2 or F.ndim != 2 or Q.shape[1] != F.shape[1]:
        raise ValueError(f"Q and F must be 2-D with as many columns, got {Q.shape}, {F.shape}.")
    out = np.zeros((Q.shape[0], F.shape[0]))
    if Q.size and F.size:
        _k.cross_l1_tiled(Q, F.astype(Q.dtype, copy=False), -1.0, out)
    return out


def merge_knn_lists(a, b):
    """The ``k`` smallest of the union of two sets of lists (``k`` that of ``a``), exact.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.graphs import merge_knn_lists
    >>> a = (np.array([[1.0, 4.0]]), np.array([[3, 5]]))
    >>> b = (np.array([[2.0, 4.0]]), np.array([[7, 2]]))
    >>> merge_knn_lists(a, b)[1]
    array([[3, 7]])
    """
    dist, idx = (np.array(a[0], dtype=np.float64), np.array(a[1], dtype=np.int64))
    db = np.ascontiguousarray(b[0], dtype=np.float64)
    ib = np.ascontiguousarray(b[1], dtype=np.int64)
    if db.shape[0] != dist.shape[0]:
        raise ValueError("the two sets of lists must have as many rows.")
    _k.merge_lists(dist, idx, db, ib)
    return dist, idx


def _random_blocks(n, block, rng):
    """A random partition of range(n) into blocks of about ``block`` rows (sorted within)."""
    n_blocks = max(1, round(n / block))
    perm = rng.permutation(n)
    return [np.sort(part) for part in np.array_split(perm, n_blocks)]


def l1_knn_descent(
    F, k, *, block_size=512, n_hubs=512, max_rounds=10, delta=0.001, random_state=None
):
    """Approximate L1 nearest neighbours of every row of F (blocks, hubs, then descent).

    Parameters
    ----------
    F : ndarray of shape (n, n_features)
    k : int
    block_size : int, default=512
        Rows per block of a random partition: every row starts from its exact lists among
        the rows of its block.
    n_hubs : int, default=512
        Every row is then searched exactly among the ``n_hubs`` rows listed most often (ties
        to the smaller index). In high dimension the nearest neighbours of most rows are a
        few common rows (hubs) that a local search reaches slowly; elsewhere this costs
        O(n n_hubs) distances and changes little.
    max_rounds : int, default=10
        Rounds of descent: every row compares its neighbours and the rows that list it with
        one another (a local join); stops earlier once fewer than ``delta * n * k`` entries
        changed.
    delta : float, default=0.001
    random_state : int, RandomState or None, default=None
        Seed of the partition (None: 0).

    Returns
    -------
    dist, idx : ndarray of shape (n, k)
        Sorted lists (see the module notes); exact when ``n <= block_size``. Cost
        O(n (block_size + n_hubs + max_rounds * (2 k)^2)) distances, memory O(n k) beyond F.

    References
    ----------
    W. Dong, M. Charikar, K. Li, "Efficient k-nearest neighbor graph construction for generic
    similarity measures", WWW 2011. M. Radovanovic, A. Nanopoulos, M. Ivanovic, "Hubs in
    space: popular nearest neighbors in high-dimensional data", JMLR 11 (2010).

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.graphs import l1_knn_descent
    >>> F = np.arange(10.0)[:, None]
    >>> l1_knn_descent(F, 2)[1][4]
    array([3, 5])
    """
    F = _features(F)
    n = F.shape[0]
    for name, value in (("k", k), ("block_size", block_size), ("n_hubs", n_hubs)):
        if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    if isinstance(max_rounds, bool) or not isinstance(max_rounds, Integral) or max_rounds < 0:
        raise ValueError(f"max_rounds must be a non-negative integer, got {max_rounds!r}.")
    k = min(int(k), max(n - 1, 1))
    rng = np.random.default_rng(check_int_seed(random_state))
    if n <= block_size:  # one block: the exact search
        return l1_knn_block(F, F, k)
    dist, idx = empty_knn_lists(n, k)
    for rows in _random_blocks(n, block_size, rng):
        part = (dist[rows], idx[rows])
        l1_knn_block(F[rows], F[rows], query_ids=rows, reference_ids=rows, lists=part)
        dist[rows], idx[rows] = part
    in_degree = np.bincount(idx[idx >= 0], minlength=n)
    hubs = np.sort(np.argsort(-in_degree, kind="stable")[: min(n_hubs, n)]).astype(np.int64)
    for lo in range(0, n, 4096):  # blocks of queries: the lists are updated in place
        part = (dist[lo : lo + 4096], idx[lo : lo + 4096])
        l1_knn_block(
            F[lo : lo + 4096], F[hubs], query_ids=np.arange(lo, min(lo + 4096, n)),
            reference_ids=hubs, lists=part,
        )  # fmt: skip
    for r in range(max_rounds):
        changed = _k.descent_round(F, dist, idx, -1.0, int(rng.integers(2**62)) + r)
        if changed <= delta * n * k:
            break
    return dist, idx


def l1_knn_recall(F, idx, n_samples=256, random_state=None):
    """Recall of the lists ``idx`` of the rows of F against the exact search on sampled rows.

    The fraction of the exact ``k`` nearest neighbours (ties at the ``k``-th distance count as
    found) of ``n_samples`` random rows that the lists hold.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.graphs import l1_knn_recall
    >>> F = np.arange(10.0)[:, None]
    >>> l1_knn_recall(F, np.array([[1, 2]] + [[i - 1, i + 1] for i in range(1, 9)] + [[8, 7]]))
    1.0
    """
    F = _features(F)
    idx = np.asarray(idx)
    n, k = idx.shape
    rng = np.random.default_rng(check_int_seed(random_state))
    rows = np.sort(rng.choice(n, size=min(n, n_samples), replace=False)).astype(np.int64)
    d_exact, _ = l1_knn_block(F[rows], F, k, query_ids=rows)
    mine = np.full(idx[rows].shape, np.inf)
    _k.candidate_l1(F, rows, np.ascontiguousarray(idx[rows], dtype=np.int64), -1.0, mine)
    # a listed row is a true neighbour when it is no farther than the exact k-th distance
    # (the same runs of float32 sums: equal distances compare equal up to their rounding)
    kth = d_exact[:, -1:]
    tol = 1e-6 * np.maximum(kth, 1e-300)
    hits = (mine <= kth + tol) & (idx[rows] >= 0)
    return float(hits.sum() / hits.size)
