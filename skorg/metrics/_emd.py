"""Tree earth mover's distances (tree EMD), their tensor version and the dual affinity."""

from __future__ import annotations

import numpy as np

from .._selection import order_statistics
from .._sparse_input import check_sparse_matrix, is_sparse
from .._validation import check_finite_array, check_tree_for_axis
from ._emd_core import (
    _add_pairwise_l1,
    _check_real,
    _feature_dtype,
    _features,
    _folder_matrix,
    _folder_plan,
    _in_range,
    _multi_tree_emd,
    _numba_threads,
    _padded,
    _sparse_emd,
    _unscaled,
    _working_memory,
)

__all__ = ["dual_affinity", "multi_tree_emd", "tree_emd", "tree_emd_features"]

_FEATURES = "The tree-EMD features"


# --------------------------------------------------------------------------- public API
def tree_emd_features(
    X,
    tree,
    *,
    alpha=0.0,
    beta=1.0,
    exclude_singletons=False,
    folder_weights=None,
    dtype=None,
    n_jobs=None,
):
    """Weighted folder means of the columns of X: tree EMD is the L1 distance between rows.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_rows, n_columns)
    tree : PartitionTree
        A tree on the rows of X (``tree.n_points == n_rows``).
    alpha, beta, exclude_singletons, folder_weights, dtype, n_jobs
        As in :func:`tree_emd`.

    Returns
    -------
    features : ndarray of shape (n_columns, n_features)
        ``features[x, f] = w(F) * mean_{r in F} X[r, x]`` for every distinct folder F of nonzero
        total weight (a one-child chain is one feature carrying the summed weight of its nodes),
        so that ``scipy.spatial.distance.cdist(features, features, "cityblock")`` equals
        ``tree_emd(X, tree, ...)``.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.metrics import tree_emd_features
    >>> from skorg.trees import dyadic_tree
    >>> tree_emd_features(np.array([[1.0, 3.0], [3.0, 3.0]]), dyadic_tree(2), beta=0.0)
    array([[2., 1., 3.],
           [3., 3., 3.]])
    """
    X, plan, dtype = _check_tree_emd_input(
        X, tree, alpha, beta, exclude_singletons, folder_weights, dtype
    )
    X, s = _in_range(X, dtype)
    if is_sparse(X):
        features = (_folder_matrix(plan, X.shape[0]) @ X).T.toarray()
        return np.ascontiguousarray(_unscaled(features, s, X, _FEATURES), dtype=dtype)
    with _numba_threads(n_jobs):
        return _unscaled(_features(X, {1: plan}, dtype), s, X, _FEATURES)


def _check_tree_emd_input(X, tree, alpha, beta, exclude_singletons, folder_weights, dtype):
    if is_sparse(X):
        X = check_sparse_matrix(X, "X", min_rows=1, dtype=None)
        dtype = _feature_dtype(X, dtype)
        check_tree_for_axis(tree, X.shape[0], "tree", "rows")
        plan = _folder_plan(
            tree, _check_real(alpha, "alpha"), _check_real(beta, "beta"), exclude_singletons,
            folder_weights, "tree",
        )  # fmt: skip
        return X, plan, dtype
    X = check_finite_array(X, "X", ndim=2, min_rows=1, dtype=None)
    dtype = _feature_dtype(X, dtype)
    check_tree_for_axis(tree, X.shape[0], "tree", "rows")
    alpha = _check_real(alpha, "alpha")
    beta = _check_real(beta, "beta")
    plan = _folder_plan(tree, alpha, beta, exclude_singletons, folder_weights, "tree")
    # columns first: the compared axis leads, as in the tensor version
    return np.ascontiguousarray(X.T), plan, dtype


def tree_emd(
    X,
    tree,
    *,
    alpha=0.0,
    beta=1.0,
    exclude_singletons=False,
    folder_weights=None,
    dtype=None,
    n_jobs=None,
):
    """Tree earth mover's distances between the columns of X given a tree on its rows.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_rows, n_columns)
        Finite values. A SciPy sparse matrix is never densified: its features are built a
        block of folders at a time, each block's dense (n_columns, block) features within
        32 MB (or sklearn's ``working_memory`` if smaller); memory is then the
        (n_columns, n_columns) result, X, a sparse folder matrix of ``sum |F|`` (about
        ``n_rows x depth``) entries and one block.
    tree : PartitionTree
        A partition tree on the rows of X.
    alpha : float, default=0.0
        Level weighting: a folder at level l (root 0) weighs ``2**(-alpha * l)``; alpha > 0
        emphasizes coarse folders, alpha < 0 fine ones.
    beta : float, default=1.0
        Size weighting ``(|F| / n_rows)**beta``; beta > 0 emphasizes large folders.
    exclude_singletons : bool, default=False
        Leave out the folders of one row (the leaves and their one-child chains).
    folder_weights : array-like of shape (tree.n_nodes,), optional
        Non-negative data-driven weights multiplying the weight of each node (BFS node ids).
    dtype : {None, float32, float64}, default=None
        Precision of the folder-mean features and of the result; None keeps X's float dtype
        (float64 for other dtypes). Folder sums are always taken in float64. The float32
        path rounds the features and sums their differences in float32 runs of 512 features
        (each run added in float64) at twice the SIMD width: distances accurate to about
        1e-7 to 1e-6 relative. float32 is used only where the range allows it: for data
        whose largest magnitude lies outside about 1e-12 to 1e12 the features and the
        result are float64. Data of any magnitude is scaled exactly (by a power of two)
        before the sums, so finite data gives finite distances unless a distance itself
        exceeds the float64 range.
    n_jobs : int, optional
        Number of numba threads (-1: all); None uses numba's current setting.

    Returns
    -------
    distances : ndarray of shape (n_columns, n_columns)
        Symmetric with a zero diagonal.

    See Also
    --------
    tree_emd_features : the embedding whose cityblock distances these are.
    multi_tree_emd : the tensor version.
    dual_affinity : the affinity made from these distances.

    Notes
    -----
    For columns x and y,

    .. math::

        d(x, y) = \\sum_{F} (|F|/n)^\\beta \\, 2^{-\\alpha \\, l(F)}
        \\left| \\bar X_F(x) - \\bar X_F(y) \\right|,

    summed over all nodes F of the tree: the root (level 0), every node of a one-child chain (a
    folder that passes unchanged to the next level counts once per level, with that level's
    weight) and the leaves; :math:`\\bar X_F(x)` is the mean of column x over the rows in F.
    Folder means are prefix-sum differences along the leaf order (:math:`O(m |T|)`); the pairwise
    sum is :math:`O(m^2 |T|)` and runs in a tiled numba kernel [1]_.

    References
    ----------
    .. [1] W. Leeb, R. Coifman, "Hölder-Lipschitz norms and their duals on spaces with
       semigroups, with applications to earth mover's distance", J. Fourier Anal. Appl. (2016);
       J. Ankenman, "Geometry and analysis of dual networks on questionnaires", Yale (2014).

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.metrics import tree_emd
    >>> from skorg.trees import dyadic_tree
    >>> X = np.array([[0.0, 1.0, 1.0], [0.0, 1.0, 3.0]])
    >>> tree_emd(X, dyadic_tree(2), beta=0.0)
    array([[0., 3., 6.],
           [3., 0., 3.],
           [6., 3., 0.]])
    """
    X, plan, dtype = _check_tree_emd_input(
        X, tree, alpha, beta, exclude_singletons, folder_weights, dtype
    )
    X, s = _in_range(X, dtype)
    if is_sparse(X):
        with _numba_threads(n_jobs):
            D = _sparse_emd(X, plan, 1, dtype, _working_memory(None))
        return _unscaled(D, s, X).astype(dtype, copy=False)
    with _numba_threads(n_jobs):
        D = np.zeros((X.shape[0], X.shape[0]), dtype=np.float64)
        _add_pairwise_l1(_features(X, {1: _padded(plan)}, dtype), D)
    return _unscaled(D, s, X).astype(dtype, copy=False)


def multi_tree_emd(
    X,
    trees,
    *,
    axis=-1,
    alphas=0.0,
    betas=1.0,
    exclude_singletons=False,
    folder_weights=None,
    dtype=None,
    n_jobs=None,
    working_memory=None,
):
    """Tree EMD between the slices of a tensor along one axis, given a tree on every other axis.

    Parameters
    ----------
    X : array-like of shape (n_0, ..., n_{d-1}), d >= 2, or sparse matrix
        A SciPy sparse matrix (d = 2) is never densified (see :func:`tree_emd`).
        Finite values.
    trees : sequence of PartitionTree
        Either one entry per axis with None at ``axis``, or one tree per other axis in order.
    axis : int, default=-1
        The axis whose slices are compared.
    alphas, betas : float or sequence of float, default=0.0 and 1.0
        Level and size weighting exponents (see :func:`tree_emd`), one value for every tree or
        one per axis (same layout as ``trees``; the entry at ``axis`` is ignored).
    exclude_singletons : bool or sequence of bool, default=False
        Per tree: leave out its one-point folders.
    folder_weights : sequence of (array-like or None), optional
        Per tree: non-negative node weights (layout as ``trees``).
    dtype : {None, float32, float64}, default=None
        Precision of the features and of the result (see :func:`tree_emd`).
    n_jobs : int, optional
        Number of numba threads; None uses numba's current setting.
    working_memory : float, optional
        With three or more trees (or two, when ``64 * n_axis**2`` bytes exceed it): bound, in
        MiB, on the feature blocks held at once; None takes scikit-learn's
        ``working_memory`` setting (1024 by default). The full feature
        matrix has ``n_axis * prod(|T_i|)`` entries; it is built and consumed in chunks of
        folders of the first tree, each feature once, beside one copy of X with ``axis`` moved
        first. With two trees (a 3-tensor) the features are never stored: blocks of a few
        hundred features are made from a float64 prefix table the size of X and summed while
        in cache, so the call holds about 8 bytes per entry of X plus ``8 * 8 * n_axis**2``
        bytes, whatever this setting.

    Returns
    -------
    distances : ndarray of shape (n_axis, n_axis)

    Notes
    -----
    For a 3-tensor and ``axis=2``, with trees T0 and T1 on the first two axes,

    .. math::

        d(t, t') = \\sum_{F \\in T_0} \\sum_{G \\in T_1} w_0(F) w_1(G)
        \\left| \\bar X_{F \\times G}(t) - \\bar X_{F \\times G}(t') \\right|,

    with each tree's weights as in :func:`tree_emd`, and likewise with one sum per tree for more
    axes. Box means are taken one axis at a time (prefix sums of each slice along the first tree
    axis, then of those folder means along the next: a separable summed-area table), which is
    exact because a box mean is a mean of means over equal-size rows. The pairwise sum is
    :math:`O(n_{axis}^2 \\prod |T_i|)`, the dominant cost; the result does not depend on
    ``n_jobs`` (fixed blocking and summation order).

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.metrics import multi_tree_emd, tree_emd
    >>> from skorg.trees import dyadic_tree
    >>> X = np.arange(12.0).reshape(2, 2, 3) ** 2
    >>> multi_tree_emd(X, [dyadic_tree(2), dyadic_tree(2), None], axis=2, betas=0.0)
    array([[  0.,  90., 198.],
           [ 90.,   0., 108.],
           [198., 108.,   0.]])
    """
    if is_sparse(X):  # a matrix: one tree, on the axis not compared
        X = check_sparse_matrix(X, "X", min_rows=1, dtype=None)
    else:
        X = check_finite_array(X, "X", min_ndim=2, min_rows=1, dtype=None)
    dtype = _feature_dtype(X, dtype)
    X, s = _in_range(X, dtype)
    D = _multi_tree_emd(
        X, trees, axis, alphas, betas, exclude_singletons, folder_weights, dtype, n_jobs,
        working_memory,
    )  # fmt: skip
    return _unscaled(D, s, X).astype(dtype, copy=False)


def dual_affinity(d, *, epsilon=1.0):
    """Affinity from a distance matrix: ``exp(-d / (epsilon * median(d)))``.

    Parameters
    ----------
    d : array-like of shape (n, n)
        Non-negative distances (e.g. :func:`tree_emd`).
    epsilon : float, default=1.0
        Bandwidth relative to the median distance.

    Returns
    -------
    affinity : ndarray of shape (n, n)

    Notes
    -----
    The median runs over the full square matrix, zero diagonal included, as in the original
    questionnaire; a zero median is replaced by 1. The exponent is d, not d squared.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.metrics import dual_affinity
    >>> d = np.array([[0.0, 1.0, 4.0], [1.0, 0.0, 2.0], [4.0, 2.0, 0.0]])
    >>> dual_affinity(d).round(4)  # median(d) = 1
    array([[1.    , 0.3679, 0.0183],
           [0.3679, 1.    , 0.1353],
           [0.0183, 0.1353, 1.    ]])
    """
    d = check_finite_array(d, "d", ndim=2, min_rows=1, dtype=None)
    if d.shape[0] != d.shape[1]:
        raise ValueError(f"d must be a square distance matrix, got shape {d.shape}.")
    if np.any(d < 0):
        raise ValueError("d must hold non-negative distances.")
    epsilon = _check_real(epsilon, "epsilon")
    if epsilon <= 0:
        raise ValueError(f"epsilon must be positive, got {epsilon}.")
    return np.exp(-d / _dual_scale(epsilon, float(np.median(d))))


def _dual_scale(epsilon, med):
    """The dual affinity's bandwidth: ``epsilon * median``, with a zero median read as 1."""
    return epsilon * (med if med != 0 else 1.0)


def _symmetric_dual_affinity(d, epsilon):
    """:func:`dual_affinity` of a symmetric distance matrix with a zero diagonal (unchecked).

    Sorted, the m^2 entries are the m diagonal zeros followed by every upper-triangle value
    twice, so the median needs a partition of the triangle alone.
    """
    m = d.shape[0]
    total = m * m
    ranks = [total // 2] if total % 2 else [total // 2 - 1, total // 2]
    picks = sorted({(r - m) // 2 for r in ranks if r >= m})
    from scipy.spatial.distance import squareform

    tri = squareform(d, checks=False)  # the strict upper triangle, row by row
    # the selection may reorder its input: give it a copy, tri is needed in row order below
    found = dict(zip(picks, order_statistics(tri.copy(), picks))) if picks else {}
    values = [found[(r - m) // 2] if r >= m else 0.0 for r in ranks]
    scale = _dual_scale(epsilon, sum(values) / len(values))
    # the same elementwise expression as dual_affinity, on the triangle only, then mirrored
    A = squareform(np.exp(-tri / scale), checks=False)
    np.fill_diagonal(A, 1.0)
    return A
