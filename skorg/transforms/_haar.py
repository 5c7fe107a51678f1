"""Orthonormal Haar bases on partition trees and their fast transforms."""

from __future__ import annotations

import math

import numpy as np

from .._validation import finite_peak
from ..trees import PartitionTree
from ._haar_dispatch import _FLOAT32, _FLOAT64, _along, _apply_along, _multi, _plain_along
from ._haar_plan import _get_plan

__all__ = [
    "bihaar_transform",
    "haar_basis",
    "haar_coefficient_info",
    "haar_support",
    "haar_transform",
    "inverse_bihaar_transform",
    "inverse_haar_transform",
    "inverse_multi_haar_transform",
    "inverse_trihaar_transform",
    "multi_haar_transform",
    "trihaar_transform",
]


# ---------------------------------------------------------------------- validation
def _check_tree(tree, name="tree"):
    if not isinstance(tree, PartitionTree):
        raise TypeError(f"{name} must be a skorg.trees.PartitionTree, got {type(tree).__name__}.")
    return tree


def _check_array(X, name="X", min_ndim=1):
    """A finite float32/float64 array (other real dtypes become float64)."""
    return _check_data(X, name, min_ndim)[0]


def _check_data(X, name="X", min_ndim=1):
    """:func:`_check_array` and ``max |X|`` (found by the finiteness check, kept for scaling)."""
    if hasattr(X, "tocsr") and hasattr(X, "nnz"):  # scipy.sparse, without importing it
        raise TypeError(
            f"{name} is a sparse matrix ({type(X).__name__}); the Haar transforms need a dense "
            f"array: pass {name}.toarray()."
        )
    X = np.asarray(X)
    if X.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {X.dtype}.")
    if X.dtype != _FLOAT64 and X.dtype != _FLOAT32:
        X = X.astype(np.float64)
    if X.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimension(s), got shape {X.shape}.")
    if X.size == 0:
        raise ValueError(f"{name} is empty (shape {X.shape}); every axis needs at least one entry.")
    # one compiled pass at every size: half the cost of NumPy's two reductions even on a
    # few values, and no temporary of the size of X (a transform compiles kernels anyway)
    peak = finite_peak(X, compiled_from=_PEAK_COMPILED_FROM)
    if not math.isfinite(peak):
        raise ValueError(
            f"{name} contains NaN or infinity; the Haar transform needs finite values."
        )
    return X, peak


def _check_axis(axis, ndim):
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"axis must be an integer, got {axis!r}.")
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of range for an array with {ndim} dimension(s).")
    return axis % ndim


def _check_tree_matches(tree, X, axis, name="tree"):
    if tree.n_points != X.shape[axis]:
        raise ValueError(
            f"{name} has {tree.n_points} points but axis {axis} of the data has length "
            f"{X.shape[axis]}; the tree must be built on that axis."
        )


def _check_trees(trees, X, allow_none=True):
    trees = list(trees)
    if len(trees) != X.ndim:
        raise ValueError(
            f"Expected one tree per axis: {X.ndim} for data of shape {X.shape}, got {len(trees)}."
        )
    for ax, tree in enumerate(trees):
        if tree is None and allow_none:
            continue
        _check_tree(tree, f"trees[{ax}]")
        _check_tree_matches(tree, X, ax, f"trees[{ax}]")
    return trees


_PEAK_COMPILED_FROM = 1


def _check_out(out, X, name="out"):
    """``out`` when it can hold the transform of X: an ndarray of X's shape and dtype."""
    if out is None:
        return None
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{name} must be a NumPy array or None, got {type(out).__name__}.")
    if out.shape != X.shape or out.dtype != X.dtype:
        raise ValueError(
            f"{name} must have the shape and dtype of the result, {X.shape} {X.dtype}; got "
            f"{out.shape} {out.dtype}."
        )
    if not out.flags.writeable:
        raise ValueError(f"{name} is read-only; pass a writeable array.")
    return out


# ---------------------------------------------------------------------- 1-D
def haar_transform(X, tree, *, axis=-1, order="bfs", out=None):
    """Haar coefficients of X along one axis, on a partition tree.

    Parameters
    ----------
    X : array-like of shape (..., n_points, ...)
        Real data; float32 stays float32, any other real dtype becomes float64.
    tree : PartitionTree
        A tree on the ``n_points`` entries of axis ``axis``.
    axis : int, default=-1
        The axis to transform (every other index is a separate vector).
    order : {"bfs", "reference"}, default="bfs"
        Coefficient order. ``"bfs"``: psi_0, then the folders by node id (level by level,
        left to right along the leaf order), ``i`` within a folder. ``"reference"``: the
        folders of each level by the smallest point index they hold, as in the reference
        implementation.
    out : ndarray, optional
        Where to write the result: an array of X's shape and of the result's dtype
        (float32 for float32 data, else float64), returned. It may be X itself. Reusing one
        array across calls spares the operating system's page clearing of a fresh result,
        which costs more than the transform on arrays of tens of megabytes; an ``out`` that
        shares memory with X, or is laid out neither in C order nor (for Fortran-ordered X)
        in Fortran order, is filled from a temporary.

    Returns
    -------
    C : ndarray of the shape of X
        ``C`` along ``axis`` holds the coefficients ``<x, psi_k>`` in coefficient order;
        ``out`` when given.

    See Also
    --------
    inverse_haar_transform, haar_basis, haar_coefficient_info, multi_haar_transform

    Notes
    -----
    psi_0 is the constant ``1 / sqrt(n)``. A folder with ``m >= 2`` children, sorted by
    size descending (ties: the child later in the leaf order first), has ``m - 1``
    vectors; vector ``i`` is ``+M_i / N_i`` on child ``i`` and ``-s_i / N_i`` on the
    sorted children after it, with ``s_i`` the size of child ``i``, ``M_i`` the size of
    the children after it and ``N_i = sqrt(s_i M_i (s_i + M_i))``; one-child folders and
    leaves add no vector. The coefficients come from folder sums accumulated bottom-up over
    the folders of two or more children (a one-child folder, which the level representation
    puts on every level a branch skips, holds its child's sum), so the cost is O(n) per
    vector whatever the depth, and no basis matrix is formed [1]_ [2]_.

    The memory access follows the layout: long vectors along a short trailing run (rows of a
    C-ordered matrix) are transformed one at a time in cache, in parallel over vectors (or,
    for fewer vectors than threads, over subtrees), and on perfect binary trees rows of up
    to 256 values a block of rows at a time, each level one loop over the pairs of all the
    block's rows, which lie end to end; across rows whole rows (up to 4096
    values) are combined, subtree by subtree so that the level buffers stay in cache, and on
    perfect binary trees so are rows of as few as 8 values (a middle axis before a short
    one);
    Fortran-ordered input is transformed as its transpose, without a copy, and
    gives Fortran-ordered output. On a perfect binary tree in ``"bfs"`` order the folder
    sums of a level are the pairwise sums of the level below (the lifting scheme), as for
    PyWavelets' ``wavedec(x, "haar")``, whose coefficients these are up to the sign of each
    detail. Every path does the same floating-point operations, so the coefficients do not
    depend on the layout or the number of threads. Working memory besides the output: per
    thread, at most about ``2 MB + n min(B, 4096) / 2`` bytes across rows (two L2-sized level
    buffers and the sums of subtrees of at least 32 leaves, for ``B`` values per row) and
    ``40 n`` bytes (plus ``16`` per tree node) along rows; the 64-lane blocks used for short
    vectors and general trees across rows hold ``512`` bytes per internal folder.

    References
    ----------
    .. [1] Gavish, Nadler, Coifman, "Multiscale wavelets on trees, graphs and high
       dimensional data", ICML 2010.
    .. [2] Coifman, Gavish, "Harmonic analysis of digital data bases", 2011.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import haar_transform
    >>> haar_transform(np.array([1.0, 1.0, 3.0, 3.0]), dyadic_tree(4)).round(6)
    array([4., 2., 0., 0.])
    """
    C = _plain_along(X, tree, axis, order, False, out)
    if C is not None:
        return C
    X, peak = _check_data(X)
    axis = _check_axis(axis, X.ndim)
    _check_tree(tree)
    _check_tree_matches(tree, X, axis)
    out = _check_out(out, X)
    return _along(X, _get_plan(tree, order), axis, inverse=False, peak=peak, out=out)


def inverse_haar_transform(C, tree, *, axis=-1, order="bfs", out=None):
    """Data from its Haar coefficients along one axis (inverse of :func:`haar_transform`).

    Parameters
    ----------
    C : array-like of shape (..., n_points, ...)
        Coefficients in the order given by ``order``.
    tree : PartitionTree
    axis : int, default=-1
    order : {"bfs", "reference"}, default="bfs"
    out : ndarray, optional
        Where to write the result, as in :func:`haar_transform`.

    Returns
    -------
    X : ndarray of the shape of C
        ``X = sum_k C_k psi_k`` along ``axis``; ``out`` when given.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import inverse_haar_transform
    >>> inverse_haar_transform(np.array([4.0, 2.0, 0.0, 0.0]), dyadic_tree(4)).round(6)
    array([1., 1., 3., 3.])
    """
    X = _plain_along(C, tree, axis, order, True, out)
    if X is not None:
        return X
    C, peak = _check_data(C, "C")
    axis = _check_axis(axis, C.ndim)
    _check_tree(tree)
    _check_tree_matches(tree, C, axis)
    out = _check_out(out, C)
    return _along(C, _get_plan(tree, order), axis, inverse=True, peak=peak, out=out)


# ---------------------------------------------------------------------- N-D
def multi_haar_transform(X, trees, *, order="bfs"):
    """Haar transform along several axes: one tree per axis (the tensor-product basis).

    Parameters
    ----------
    X : array-like of shape (n_0, n_1, ...)
    trees : sequence of PartitionTree or None
        One entry per axis of X; ``None`` leaves that axis as it is.
    order : {"bfs", "reference"}, default="bfs"

    Returns
    -------
    C : ndarray of the shape of X
        ``C[a, b, ...] = <X, psi_a (x) psi_b (x) ...>``.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import multi_haar_transform
    >>> C = multi_haar_transform(np.ones((2, 4)), [dyadic_tree(2), dyadic_tree(4)])
    >>> C.round(6)
    array([[2.828427, 0.      , 0.      , 0.      ],
           [0.      , 0.      , 0.      , 0.      ]])
    """
    X, peak = _check_data(X)
    trees = _check_trees(trees, X)
    return _multi(X, trees, order, inverse=False, peak=peak)


def inverse_multi_haar_transform(C, trees, *, order="bfs"):
    """Inverse of :func:`multi_haar_transform`.

    Parameters
    ----------
    C : array-like of shape (n_0, n_1, ...)
    trees : sequence of PartitionTree or None
    order : {"bfs", "reference"}, default="bfs"

    Returns
    -------
    X : ndarray of the shape of C

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import inverse_multi_haar_transform
    >>> C = np.zeros((2, 2)); C[0, 0] = 2.0
    >>> inverse_multi_haar_transform(C, [dyadic_tree(2), dyadic_tree(2)]).round(6)
    array([[1., 1.],
           [1., 1.]])
    """
    C, peak = _check_data(C, "C")
    trees = _check_trees(trees, C)
    return _multi(C, trees, order, inverse=True, peak=peak)


def _check_ndim(X, ndim, func):
    if X.ndim != ndim:
        raise ValueError(f"{func} needs X as a {ndim}-D array, got shape {X.shape}.")


def bihaar_transform(X, row_tree, col_tree, *, order="bfs"):
    """Bi-Haar coefficients ``H_r^T X H_c`` of a matrix on a row tree and a column tree.

    Parameters
    ----------
    X : array-like of shape (n_rows, n_cols)
    row_tree, col_tree : PartitionTree
    order : {"bfs", "reference"}, default="bfs"

    Returns
    -------
    C : ndarray of shape (n_rows, n_cols)

    See Also
    --------
    multi_haar_transform, inverse_bihaar_transform

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import bihaar_transform
    >>> bihaar_transform(np.eye(2), dyadic_tree(2), dyadic_tree(2)).round(6)
    array([[1., 0.],
           [0., 1.]])
    """
    X, peak = _check_data(X)
    _check_ndim(X, 2, "bihaar_transform")
    trees = _check_trees([row_tree, col_tree], X)
    return _multi(X, trees, order, inverse=False, peak=peak)


def inverse_bihaar_transform(C, row_tree, col_tree, *, order="bfs"):
    """Matrix from its bi-Haar coefficients: ``H_r C H_c^T``.

    Parameters
    ----------
    C : array-like of shape (n_rows, n_cols)
    row_tree, col_tree : PartitionTree
    order : {"bfs", "reference"}, default="bfs"

    Returns
    -------
    X : ndarray of shape (n_rows, n_cols)

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import inverse_bihaar_transform
    >>> inverse_bihaar_transform(np.eye(2), dyadic_tree(2), dyadic_tree(2)).round(6)
    array([[1., 0.],
           [0., 1.]])
    """
    C, peak = _check_data(C, "C")
    _check_ndim(C, 2, "inverse_bihaar_transform")
    trees = _check_trees([row_tree, col_tree], C)
    return _multi(C, trees, order, inverse=True, peak=peak)


def trihaar_transform(X, tree0, tree1, tree2, *, order="bfs"):
    """Tri-Haar coefficients of a 3-tensor: the tree Haar transform along each axis.

    A thin wrapper of :func:`multi_haar_transform` for 3-D arrays.

    Parameters
    ----------
    X : array-like of shape (n_0, n_1, n_2)
    tree0, tree1, tree2 : PartitionTree or None
        Trees on the three axes (``None`` leaves an axis as it is).
    order : {"bfs", "reference"}, default="bfs"

    Returns
    -------
    C : ndarray of shape (n_0, n_1, n_2)

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import trihaar_transform
    >>> round(float(trihaar_transform(np.ones((2, 2, 2)), *[dyadic_tree(2)] * 3)[0, 0, 0]), 6)
    2.828427
    """
    X, peak = _check_data(X)
    _check_ndim(X, 3, "trihaar_transform")
    trees = _check_trees([tree0, tree1, tree2], X)
    return _multi(X, trees, order, inverse=False, peak=peak)


def inverse_trihaar_transform(C, tree0, tree1, tree2, *, order="bfs"):
    """Inverse of :func:`trihaar_transform`.

    Parameters
    ----------
    C : array-like of shape (n_0, n_1, n_2)
    tree0, tree1, tree2 : PartitionTree or None
    order : {"bfs", "reference"}, default="bfs"

    Returns
    -------
    X : ndarray of shape (n_0, n_1, n_2)

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import inverse_trihaar_transform
    >>> C = np.zeros((2, 2, 2)); C[0, 0, 0] = 2.0 ** 1.5
    >>> inverse_trihaar_transform(C, *[dyadic_tree(2)] * 3).round(6).ravel()
    array([1., 1., 1., 1., 1., 1., 1., 1.])
    """
    C, peak = _check_data(C, "C")
    _check_ndim(C, 3, "inverse_trihaar_transform")
    trees = _check_trees([tree0, tree1, tree2], C)
    return _multi(C, trees, order, inverse=True, peak=peak)


# ---------------------------------------------------------------------- basis and metadata
def haar_basis(tree, *, order="bfs"):
    """The Haar basis of a tree as a dense orthonormal matrix.

    For inspection and tests; the transforms never form it.

    Parameters
    ----------
    tree : PartitionTree
    order : {"bfs", "reference"}, default="bfs"

    Returns
    -------
    basis : ndarray of shape (n_points, n_points)
        Column ``k`` is ``psi_k`` indexed by point, so ``haar_transform(x) == basis.T @ x``.

    Examples
    --------
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import haar_basis
    >>> (haar_basis(dyadic_tree(2)) * 2**0.5).round(6)
    array([[ 1., -1.],
           [ 1.,  1.]])
    """
    _check_tree(tree)
    eye = np.eye(tree.n_points)
    return _apply_along(eye, _get_plan(tree, order), 1, inverse=True).T.copy()


def haar_coefficient_info(tree, *, order="bfs"):
    """Where every Haar coefficient of a tree lives, in coefficient order.

    Parameters
    ----------
    tree : PartitionTree
    order : {"bfs", "reference"}, default="bfs"

    Returns
    -------
    info : dict of ndarray of shape (n_points,)
        - ``"node"``: the folder (node id) of the vector, the root (0) for psi_0;
        - ``"level"``: the level of that folder (root 0);
        - ``"rank"``: position ``i`` of the '+' child among the sorted children, -1 for psi_0;
        - ``"plus_node"``: node id of the '+' child, -1 for psi_0;
        - ``"plus_size"``, ``"minus_size"``: ``s_i`` and ``M_i`` (``n`` and 0 for psi_0);
        - ``"support"``: ``s_i + M_i``, the number of points where the vector is non-zero
          (``n`` for psi_0).

    Examples
    --------
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import haar_coefficient_info
    >>> haar_coefficient_info(dyadic_tree(4))["support"]
    array([4, 4, 2, 2])
    """
    _check_tree(tree)
    plan = _get_plan(tree, order)
    n = tree.n_points
    node = np.r_[0, plan.tree_cnode].astype(np.intp)
    plus_size = np.r_[n, plan.plus_size].astype(np.intp)
    minus_size = np.r_[0, plan.minus_size].astype(np.intp)
    return {
        "node": node,
        "level": np.asarray(tree.level)[node].astype(np.intp),
        "rank": np.r_[-1, plan.rank].astype(np.intp),
        "plus_node": np.r_[-1, plan.tree_cplus].astype(np.intp),
        "plus_size": plus_size,
        "minus_size": minus_size,
        "support": plus_size + minus_size,
    }


def haar_support(tree, *, order="bfs"):
    """Support size of every Haar basis vector of a tree, in coefficient order.

    Parameters
    ----------
    tree : PartitionTree
    order : {"bfs", "reference"}, default="bfs"

    Returns
    -------
    support : ndarray of int of shape (n_points,)

    Examples
    --------
    >>> from skorg.trees import PartitionTree
    >>> from skorg.transforms import haar_support
    >>> haar_support(PartitionTree.from_levels([[0, 0, 0], [0, 1, 2]]))
    array([3, 3, 2])
    """
    _check_tree(tree)
    plan = _get_plan(tree, order)
    return np.r_[tree.n_points, plan.plus_size + plan.minus_size].astype(np.intp)
