"""k-nearest-neighbour graphs and affinities: the sparse path for long axes.

The dense path holds an (m, m) affinity per axis. Here each point keeps only its
``n_neighbors`` nearest neighbours, found by an existing engine (pynndescent when installed and
the axis is long, scikit-learn's exact brute force otherwise), and the affinity is stored as a
symmetric sparse matrix with the same values as the dense one on the kept pairs.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp

from .._kernels import _sparse as _k
from .._validation import (
    SAFE_EXPONENT,
    check_finite_array,
    check_int_seed,
    scale_rows,
    scaled_copy,
)

__all__ = ["knn_affinity", "knn_indices", "knn_l1_affinity"]

# Above this many points the approximate searches (skorg's L1 descent, pynndescent for the
# Euclidean metric; O(m) and O(m^1.14)) replace the exact O(m^2) search.
_EXACT_MAX = 8192
# Random pairs used to estimate the median of all m^2 distances.
_MEDIAN_SAMPLE = 20_000


def _check_int(value, name, low=1):
    if isinstance(value, bool) or not isinstance(value, Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}.")
    return int(value)


def knn_indices(
    Z, n_neighbors, *, metric="euclidean", backend="auto", random_state=None, n_jobs=None
):
    """Indices of the ``n_neighbors`` nearest rows of every row of Z (itself excluded).

    Parameters
    ----------
    Z : ndarray of shape (n_points, n_features)
    n_neighbors : int
        Capped at ``n_points - 1``.
    metric : {"euclidean", "manhattan"}, default="euclidean"
    backend : {"auto", "exact", "descent", "pynndescent"}, default="auto"
        ``"exact"`` is the brute-force search (scikit-learn's ``NearestNeighbors`` for
        ``"euclidean"``, skorg's blocked cityblock search :func:`l1_knn_block` for
        ``"manhattan"``); ``"descent"`` (``"manhattan"`` only) is skorg's
        :func:`l1_knn_descent` (approximate, O(n) distances in all; its
        recall is measured by :func:`l1_knn_recall`); ``"pynndescent"`` is pynndescent's
        nearest-neighbour descent (approximate, an optional dependency). ``"auto"``:
        ``"manhattan"`` takes the exact search up to 8192 points and ``"descent"`` above;
        ``"euclidean"`` takes pynndescent above 8192 points when it is installed, else the
        exact search.
    random_state : int, RandomState or None, default=None
        Seed of pynndescent (None: 0).
    n_jobs : int, optional
        Threads of the search.

    Returns
    -------
    indices : ndarray of shape (n_points, n_neighbors)
        Nearest first; ties in the exact backend go to the smaller index.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.metrics import knn_indices
    >>> knn_indices(np.array([[0.0], [1.0], [3.0], [7.0]]), 1).ravel()
    array([1, 0, 1, 2])
    """
    Z = check_finite_array(Z, "Z", ndim=2, min_rows=1, dtype=None)
    # neighbours do not change when all coordinates are scaled: scaled exactly so that the
    # squared distances cannot overflow or underflow
    Z, _ = scaled_copy(Z, limit=40 if Z.dtype == np.float32 else SAFE_EXPONENT)
    if metric not in ("euclidean", "manhattan"):
        raise ValueError(f"metric must be 'euclidean' or 'manhattan', got {metric!r}.")
    if backend not in ("auto", "exact", "descent", "pynndescent"):
        raise ValueError(
            f"backend must be 'auto', 'exact', 'descent' or 'pynndescent', got {backend!r}."
        )
    if backend == "descent" and metric != "manhattan":
        raise ValueError("backend='descent' needs metric='manhattan'.")
    n = Z.shape[0]
    k = min(_check_int(n_neighbors, "n_neighbors"), n - 1)
    if k < 1:
        return np.empty((n, 0), dtype=np.intp)
    if backend == "auto" and metric == "manhattan":
        backend = "descent" if n > _EXACT_MAX else "exact"
    if metric == "manhattan" and backend in ("exact", "descent"):
        from ._knn_blocks import l1_knn_block, l1_knn_descent

        F = Z if Z.dtype in (np.float32, np.float64) else Z.astype(np.float64)
        if backend == "exact":
            dist, idx = l1_knn_block(F, F, k)
        else:
            dist, idx = l1_knn_descent(F, k, random_state=random_state)
        return _drop_self(idx, dist, k)
    if backend == "auto":
        backend = "exact"
        if n > _EXACT_MAX:
            try:
                import pynndescent  # noqa: F401
            except ImportError:
                pass
            else:
                backend = "pynndescent"
    if backend == "pynndescent":
        from pynndescent import NNDescent

        index = NNDescent(
            Z,
            metric=metric,
            n_neighbors=k + 1,
            random_state=check_int_seed(random_state),
            n_jobs=n_jobs,
            low_memory=True,
            compressed=True,
        )
        idx, dist = index.neighbor_graph
        return _drop_self(idx, dist, k)
    from sklearn.neighbors import NearestNeighbors

    nn = NearestNeighbors(n_neighbors=k + 1, metric=metric, algorithm="brute", n_jobs=n_jobs)
    dist, idx = nn.fit(Z).kneighbors(Z)
    return _drop_self(idx, dist, k)


def _drop_self(idx, dist, k):
    """Remove each point from its own list (duplicates may put it anywhere); stable by distance."""
    n = idx.shape[0]
    idx = np.asarray(idx, dtype=np.int64)
    dist = np.asarray(dist, dtype=np.float64)
    not_self = (idx != np.arange(n)[:, None]) & (idx >= 0)
    # order kept pairs by (distance, index) so ties break the same way in every backend
    key_d = np.where(not_self, dist, np.inf)
    key_i = np.where(not_self, idx, np.iinfo(np.int64).max)
    order = np.lexsort((key_i, key_d), axis=1)[:, :k]
    out = np.take_along_axis(idx, order, axis=1)
    bad = ~np.take_along_axis(not_self, order, axis=1)
    if bad.any():  # fewer than k valid neighbours found: repeat the nearest one
        out = np.where(bad, out[:, :1], out)
    return out.astype(np.intp)


def _edges(indices):
    """Unique undirected pairs (i < j) of the kNN lists (union of i -> j and j -> i)."""
    n, k = indices.shape
    rows = np.repeat(np.arange(n, dtype=np.int64), k)
    cols = indices.ravel().astype(np.int64)
    keep = rows != cols
    lo = np.minimum(rows[keep], cols[keep])
    hi = np.maximum(rows[keep], cols[keep])
    key = np.unique(lo * n + hi)
    return (key // n).astype(np.intp), (key % n).astype(np.intp)


def _symmetric(n, ei, ej, values, diagonal, drop_zeros=True):
    """Symmetric CSR matrix with ``values`` on (ei, ej) and (ej, ei) and the given diagonal."""
    if drop_zeros:
        keep = values != 0
        ei, ej, values = ei[keep], ej[keep], values[keep]
    diag = np.arange(n, dtype=np.intp)
    rows = np.concatenate([ei, ej, diag])
    cols = np.concatenate([ej, ei, diag])
    vals = np.concatenate([values, values, np.broadcast_to(diagonal, (n,))])
    M = sp.csr_matrix((vals, (rows, cols)), shape=(n, n))
    M.sort_indices()
    return M


def knn_affinity(
    X,
    *,
    kind="cosine",
    n_neighbors=15,
    threshold=0.0,
    absolute=False,
    gaussian_neighbors=5,
    epsilon=1.0,
    backend="auto",
    random_state=None,
    n_jobs=None,
):
    """Sparse initial affinity between the rows of X on their k-nearest-neighbour graph.

    The values on the kept pairs equal those of :func:`cosine_affinity`,
    :func:`correlation_affinity` or :func:`gaussian_affinity` (float64, recomputed exactly
    for every pair); all other pairs are 0.

    Parameters
    ----------
    X : array-like of shape (n_points, n_features)
    kind : {"cosine", "correlation", "gaussian"}, default="cosine"
        Cosine neighbours are Euclidean neighbours of the normalized rows (centered first for
        ``"correlation"``); Gaussian neighbours are Euclidean neighbours of the rows.
    n_neighbors : int, default=15
        Neighbours per point; the graph keeps the union of the lists.
    threshold : float or None, default=0.0
        Cosine and correlation: values below it are dropped (None keeps them).
    absolute : bool, default=False
        Cosine: use ``|cos|``.
    gaussian_neighbors, epsilon : int and float
        Gaussian: ``sigma_i`` is ``epsilon`` times the median distance to the
        ``gaussian_neighbors`` nearest points (the point itself counted), as in
        :func:`gaussian_affinity`; needs ``gaussian_neighbors <= n_neighbors + 1``.
    backend, random_state, n_jobs
        As in :func:`knn_indices`.

    Returns
    -------
    affinity : scipy.sparse.csr_matrix of shape (n_points, n_points)
        Symmetric; diagonal 1.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.metrics import knn_affinity
    >>> A = knn_affinity(np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]), n_neighbors=1)
    >>> A.toarray().round(3)
    array([[1.   , 0.707, 0.   ],
           [0.707, 1.   , 0.707],
           [0.   , 0.707, 1.   ]])
    """
    X = check_finite_array(X, "X", ndim=2, min_rows=1, dtype=None)
    if kind not in ("cosine", "correlation", "gaussian"):
        raise ValueError(f"kind must be 'cosine', 'correlation' or 'gaussian', got {kind!r}.")
    n = X.shape[0]
    knn = dict(backend=backend, random_state=random_state, n_jobs=n_jobs)
    if kind == "gaussian":
        g = _check_int(gaussian_neighbors, "gaussian_neighbors")
        if g > n_neighbors + 1:
            raise ValueError(
                f"gaussian_neighbors ({g}) must be at most n_neighbors + 1 ({n_neighbors + 1})."
            )
        if not (isinstance(epsilon, Real) and np.isfinite(epsilon) and epsilon > 0):
            raise ValueError(f"epsilon must be a positive number, got {epsilon!r}.")
        idx = knn_indices(X, n_neighbors, **knn)
        d_near = np.sqrt(
            _k.edge_sqeuclidean(X, np.repeat(np.arange(n), idx.shape[1]), idx.ravel())
        ).reshape(idx.shape)
        d_near = np.hstack([np.zeros((n, 1)), d_near])[:, : min(g, n)]
        sigma = epsilon * np.median(d_near, axis=1)
        sigma[sigma == 0] = 1.0
        ei, ej = _edges(idx)
        sq = _k.edge_sqeuclidean(X, ei, ej)
        vals = 0.5 * (np.exp(-sq / sigma[ei] ** 2) + np.exp(-sq / sigma[ej] ** 2))
        return _symmetric(n, ei, ej, vals, 1.0)
    if threshold is not None and (
        isinstance(threshold, bool) or not isinstance(threshold, Real) or np.isnan(threshold)
    ):
        raise ValueError(f"threshold must be a number or None, got {threshold!r}.")
    X = scale_rows(X)  # cosines do not change when a row is scaled; its squares must not overflow
    U = X.astype(np.float64) if kind == "cosine" else X - X.mean(axis=1, keepdims=True)
    norms = np.sqrt(np.einsum("ij,ij->i", U, U))
    U = U / np.where(norms > 0, norms, 1.0)[:, None]
    idx = knn_indices(U.astype(np.float32) if X.dtype == np.float32 else U, n_neighbors, **knn)
    ei, ej = _edges(idx)
    cos = np.clip(_k.edge_dot(U, ei, ej), -1.0, 1.0)
    if absolute:
        cos = np.abs(cos)
    if threshold is not None:
        cos[cos < threshold] = 0.0
    return _symmetric(n, ei, ej, cos, 1.0)


def _median_distance(F, rng):
    """Median of all n^2 L1 distances between the rows of F (zero diagonal included).

    Exact up to 1024 rows; above, the matching quantile of 20,000 random off-diagonal pairs
    (the n zeros of the diagonal shift the median of the n^2 entries to the quantile
    ``(n / 2 - 1) / (n - 1)`` of the off-diagonal ones).
    """
    n = F.shape[0]
    if n <= 1024:
        ei, ej = np.triu_indices(n, 1)
        d = _k.edge_l1(F, ei.astype(np.intp), ej.astype(np.intp))
        return float(np.median(np.concatenate([np.zeros(n), d, d])))
    a = rng.integers(0, n, _MEDIAN_SAMPLE)
    b = (a + rng.integers(1, n, _MEDIAN_SAMPLE)) % n
    d = _k.edge_l1(F, a.astype(np.intp), b.astype(np.intp))
    return float(np.quantile(d, (0.5 * n - 1.0) / (n - 1.0)))


def knn_l1_affinity(F, epsilon, n_neighbors, backend="auto", random_state=None, n_jobs=None):
    """L1 distances and the dual affinity ``exp(-d / (epsilon * median d))`` on the k-NN graph
    of the rows of F (unchecked: F is a finite float array, epsilon a positive number).

    Returns the sparse distances (explicit zeros kept, diagonal 0), the sparse affinity
    (diagonal 1) and the median m of all n^2 distances (see :func:`knn_tree_emd_affinity`).
    """
    n = F.shape[0]
    idx = knn_indices(
        F, n_neighbors, metric="manhattan", backend=backend, random_state=random_state,
        n_jobs=n_jobs,
    )  # fmt: skip
    ei, ej = _edges(idx)
    d = _k.edge_l1(F, ei, ej)
    med = _median_distance(F, np.random.default_rng(check_int_seed(random_state)))
    if med == 0:
        med = 1.0
    distances = _symmetric(n, ei, ej, d, 0.0, drop_zeros=False)
    affinity = _symmetric(n, ei, ej, np.exp(-d / (epsilon * med)), 1.0)
    return distances, affinity, med
