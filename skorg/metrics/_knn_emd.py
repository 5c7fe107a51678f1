"""Tree EMD on k-nearest-neighbour graphs: the sparse path of the tree metrics.

The tree EMD between slices is the L1 distance between their features
(:func:`tree_emd_embedding`), so the k-NN graph of those features carries the sparse dual
affinity (:func:`knn_tree_emd_affinity`).
"""

from __future__ import annotations

from numbers import Real

import numpy as np

from .._sparse_input import check_sparse_matrix, is_sparse
from .._validation import check_finite_array, check_tree_for_axis
from ..graphs import knn_l1_affinity

__all__ = ["knn_tree_emd_affinity", "tree_emd_embedding"]

_FEATURES = "The tree-EMD features"


def tree_emd_embedding(
    X, trees, *, axis=0, alphas=0.0, betas=1.0, dtype=np.float32, working_memory=None, n_jobs=None
):
    """Features of the slices of X along ``axis`` whose L1 distances are the multi-tree EMD.

    The tensor version of :func:`tree_emd_features`, built in blocks of slices so that the
    intermediates stay within ``working_memory``.

    Parameters
    ----------
    X : array-like of shape (n_0, ..., n_{d-1}), or sparse matrix
        A SciPy sparse matrix (d = 2) is not densified (only the features are dense).
    trees : sequence of PartitionTree
        One tree per axis with None at ``axis``, or one per other axis.
    axis : int, default=0
    alphas, betas : float or sequence of float
        As in :func:`multi_tree_emd`.
    dtype : {float32, float64}, default=float32
    working_memory : float, optional
        MiB for the intermediates of one block (None: scikit-learn's setting).
    n_jobs : int, optional
        numba threads.

    Returns
    -------
    features : ndarray of shape (n_axis, n_features)

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.spatial.distance import cdist
    >>> from skorg.metrics import multi_tree_emd, tree_emd_embedding
    >>> from skorg.trees import dyadic_tree
    >>> X = np.arange(12.0).reshape(3, 4) ** 2
    >>> trees = [None, dyadic_tree(4)]
    >>> F = tree_emd_embedding(X, trees, axis=0, dtype=np.float64)
    >>> bool(np.allclose(cdist(F, F, "cityblock"), multi_tree_emd(X, trees, axis=0)))
    True
    """
    from . import _emd_core as _emd

    sparse = is_sparse(X)
    if sparse:  # a matrix: one tree, on the axis not compared
        X = check_sparse_matrix(X, "X", min_rows=1, dtype=None)
    else:
        X = check_finite_array(X, "X", min_ndim=2, min_rows=1, dtype=None)
    dtype = _emd._feature_dtype(X, dtype)
    # the features are homogeneous of degree 1: computed on X scaled exactly when its
    # magnitude is extreme, so the folder sums cannot overflow (means of 1e308 fit, their
    # sums need not)
    X, s = _emd._in_range(X, dtype)
    ndim = X.ndim
    axis, tree_map = _emd._axis_and_trees(axis, trees, ndim)
    alpha_map = _emd._per_axis(alphas, ndim, axis, "alphas", _emd._check_real)
    beta_map = _emd._per_axis(betas, ndim, axis, "betas", _emd._check_real)
    plans = {}
    for a, tree in tree_map.items():
        check_tree_for_axis(tree, X.shape[a], f"trees[{a}]", f"entries along axis {a}")
        plan = _emd._folder_plan(tree, alpha_map[a], beta_map[a], False, None, f"trees[{a}]")
        plans[a + 1 if a < axis else a] = plan
    if sparse:
        # the folder means of the other axis as one sparse product (no dense copy of X),
        # built in float64 like the dense features
        (plan,) = plans.values()
        M = X.T.tocsr() if axis == 0 else X.tocsr()  # the tree on the rows of M
        features = (_emd._folder_matrix(plan, M.shape[0]) @ M).T.toarray()
        features = _emd._unscaled(features, s, X, _FEATURES)
        return np.ascontiguousarray(features, dtype=dtype)
    Xt = np.moveaxis(X, axis, 0)
    n = Xt.shape[0]
    n_feat = int(np.prod([plans[a][1].shape[0] for a in plans], dtype=np.int64))
    # per slice: its copy, the partial reductions (at most the larger of input and output)
    per_slice = (2 * Xt[0].size + 2 * n_feat) * np.dtype(dtype).itemsize
    budget = int(_emd._working_memory(working_memory) * 2**20)
    step = max(1, min(n, budget // max(per_slice, 1)))
    out = np.empty((n, n_feat), dtype=dtype)
    with _emd._numba_threads(n_jobs):
        for lo in range(0, n, step):
            block = np.ascontiguousarray(Xt[lo : lo + step])
            out[lo : lo + step] = _emd._features(block, plans, dtype)
    return _emd._unscaled(out, s, X, _FEATURES)


def knn_tree_emd_affinity(
    X,
    trees,
    *,
    axis=0,
    alphas=0.0,
    betas=1.0,
    epsilon=1.0,
    n_neighbors=15,
    dtype=np.float32,
    backend="auto",
    random_state=None,
    n_jobs=None,
    working_memory=None,
):
    """Tree EMD and its dual affinity on the k-nearest-neighbour graph of the slices of X.

    The sparse counterpart of ``dual_affinity(multi_tree_emd(X, trees, axis=axis))``: the tree
    EMD is the L1 distance between the rows of :func:`tree_emd_embedding`, so a standard
    cityblock nearest-neighbour search finds the pairs that carry the affinity.

    Parameters
    ----------
    X : array-like of shape (n_0, ..., n_{d-1})
    trees : sequence of PartitionTree
        One tree per axis with None at ``axis``, or one per other axis.
    axis : int, default=0
    alphas, betas : float or sequence of float, default=0.0 and 1.0
    epsilon : float, default=1.0
        Dual affinity ``exp(-d / (epsilon * median d))``.
    n_neighbors : int, default=15
    dtype : {float32, float64}, default=float32
        Precision of the features (the search); edge distances are recomputed in float64.
    backend, random_state, n_jobs
        As in :func:`~skorg.graphs.knn_indices`.
    working_memory : float, optional
        As in :func:`tree_emd_embedding`.

    Returns
    -------
    distances : scipy.sparse.csr_matrix of shape (n_axis, n_axis)
        Tree EMD on the graph's pairs (explicit zeros kept, diagonal 0).
    affinity : scipy.sparse.csr_matrix of shape (n_axis, n_axis)
        ``exp(-d / (epsilon * m))`` on the same pairs, diagonal 1.
    median : float
        m, the median of all n_axis^2 distances (zero diagonal included, as in
        :func:`dual_affinity`): exact up to 1024 slices, else estimated from 20,000 random
        pairs.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.metrics import knn_tree_emd_affinity
    >>> from skorg.trees import dyadic_tree
    >>> X = np.array([[0.0, 1.0, 2.0, 9.0], [0.0, 1.0, 2.0, 9.0]]).T
    >>> d, A, med = knn_tree_emd_affinity(X, [None, dyadic_tree(2)], n_neighbors=1)
    >>> d.toarray()  # root and two leaves: twice |x - y|
    array([[ 0.,  2.,  0.,  0.],
           [ 2.,  0.,  2.,  0.],
           [ 0.,  2.,  0., 14.],
           [ 0.,  0., 14.,  0.]])
    """
    if not (isinstance(epsilon, Real) and np.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a positive number, got {epsilon!r}.")
    F = tree_emd_embedding(
        X, trees, axis=axis, alphas=alphas, betas=betas, dtype=dtype,
        working_memory=working_memory, n_jobs=n_jobs,
    )  # fmt: skip
    return knn_l1_affinity(F, epsilon, n_neighbors, backend, random_state, n_jobs)
