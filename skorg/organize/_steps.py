"""Steps of the questionnaire: the EMD's precision, reuse of unchanged steps, tree methods,
the slices' Euclidean geometry, and the Haar-compression objective that selects trees."""

from __future__ import annotations

import math
from numbers import Real

import numpy as np
import scipy.sparse as sp

from .._blas import serial_blas
from ._ordering import _smoothest_order, leaf_order
from ._presets import ORGANIZER_TREE_METHODS, SELECT_KEEP
from ._sparse import SPARSE_TREE_METHODS

__all__: list[str] = []

# emd_dtype="auto": float32 features for the EMD steps whose pairwise sums take at least this
# many inner-loop steps (m^2 / 2 times the number of features), float64 below. On the
# reference and benchmark runs float32 has left every tree unchanged (153 of 153), and from
# this size on it saves tenths of a second per step; smaller steps keep float64's exactness.
_AUTO_FLOAT32_WORK = 1 << 28


def _per_axis(value, n_axes, name, positive=False):
    items = value if np.ndim(value) == 1 else [value]
    if any(isinstance(v, (str, bytes, bool, np.bool_)) or v is None for v in items):
        raise TypeError(f"{name} must be a number or a sequence of numbers, got {value!r}.")
    if np.ndim(value) > 1 or (np.ndim(value) == 1 and len(value) != n_axes):
        raise ValueError(
            f"{name} must be a number or a sequence of {n_axes} numbers, got {value!r}."
        )
    values = np.broadcast_to(np.asarray(value, dtype=np.float64), (n_axes,))
    if not np.all(np.isfinite(values)) or (positive and np.any(values <= 0)):
        kind = "positive numbers" if positive else "finite numbers"
        raise ValueError(f"{name} must hold {kind}, got {value!r}.")
    return [float(v) for v in values]


def _unfold(X, axis):
    """The mode unfolding along ``axis``: one row per slice (a sparse matrix as CSR rows)."""
    if sp.issparse(X):  # a matrix
        return X if axis == 0 else X.T.tocsr()
    return np.moveaxis(X, axis, 0).reshape(X.shape[axis], -1)


def _emd_feature_dtype(emd_dtype, shape, axis, others):
    """The EMD features' dtype of one step (``"auto"`` resolved by the step's size)."""
    if emd_dtype != "auto":
        return np.dtype(emd_dtype)
    n_features = math.prod(t.n_nodes for t in others if t is not None)
    work = shape[axis] ** 2 * n_features // 2
    return np.dtype(np.float32 if work >= _AUTO_FLOAT32_WORK else np.float64)


def _same_trees(key_a, key_b):
    """Whether two steps read the same trees (tuples with None for unused axes), tree for
    tree, leaf orders included."""
    if key_a is None or len(key_a) != len(key_b):
        return False
    return all(
        (a is None and b is None) or (a is not None and b is not None and a == b)
        for a, b in zip(key_a, key_b)
    )


def _tree_methods(value, ndim, sparse, default=False):
    """One tree method per axis, checked (the default one is "flexible" on sparse axes)."""
    if isinstance(value, (list, tuple)):
        if len(value) != ndim:
            raise ValueError(
                f"tree_method must be one method or a sequence of {ndim} (one per axis), "
                f"got {len(value)}."
            )
        methods = list(value)
    else:
        methods = [value] * ndim
    for axis, m in enumerate(methods):
        if not callable(m) and m not in ORGANIZER_TREE_METHODS:
            raise ValueError(
                f"tree_method must be one of {ORGANIZER_TREE_METHODS} or a callable, got {m!r} "
                f"for axis {axis}."
            )
        if sparse[axis] and m != "flexible" and default:
            methods[axis] = "flexible"
        elif sparse[axis] and m not in SPARSE_TREE_METHODS:
            raise ValueError(
                f"axis {axis} takes the sparse k-NN path, whose k-NN graph builds the trees "
                f"{SPARSE_TREE_METHODS} only; got tree_method={m!r}. Use affinity_mode='dense' "
                "or one of those."
            )
    return methods


def _select_margin(value):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, Real) or not 0 <= value < 1:
        raise ValueError(f"tree_params['select_margin'] must be a number in [0, 1), got {value!r}.")
    return float(value)


def _emd_feature_count(shape, others, axis):
    """The number of tree-EMD features of one slice along ``axis`` (the product, over the
    other axes, of their trees' node counts, or of the axis length where there is no tree)."""
    n_features = 1
    for a, tree in enumerate(others):
        if a != axis:
            n_features *= tree.n_nodes if tree is not None else shape[a]
    return n_features


def _emd_points_fit(n_points, n_features):
    """Whether ``n_points`` rows of ``n_features`` EMD features fit in the memory budget
    (the features, their pairwise distances and a copy)."""
    from .._validation import memory_budget

    return 8 * n_points * n_features * 3 <= memory_budget()


def _emd_points(Xe, others, axis, alphas, betas, n_jobs):
    """The tree-EMD features of the axis's slices (their l1 distances are the tree EMD), or
    None when they would not fit in the memory budget (Ward then uses the slices alone)."""
    from ..metrics import tree_emd_embedding

    if not _emd_points_fit(Xe.shape[axis], _emd_feature_count(Xe.shape, others, axis)):
        return None
    return tree_emd_embedding(
        Xe, others, axis=axis, alphas=alphas, betas=betas, dtype=np.float64, n_jobs=n_jobs
    )


# relative difference below which two objective values or path lengths count as equal
_TIE = 1e-9


def _euclidean_distances(slices):
    """Symmetric Euclidean distances between the rows of a dense or sparse matrix.

    From the Gram matrix (BLAS, and no densified copy of a sparse X), so that the dense and
    the sparse path compute the same numbers in the same way. BLAS runs on one thread: the
    same bits (each entry is summed by one thread either way), and no OpenBLAS workers left
    spinning against the kernels that follow (see :func:`skorg._blas.serial_blas`).
    """
    from sklearn.metrics.pairwise import euclidean_distances

    with serial_blas():
        E = euclidean_distances(slices)
    E = 0.5 * (E + E.T)
    np.fill_diagonal(E, 0.0)
    return E


def _ward_tree(euclid):
    """Ward's tree of points given by their Euclidean distances (exact Ward, see
    :func:`~skorg.trees.hierarchical_tree` with ``points``)."""
    from scipy.cluster.hierarchy import linkage
    from scipy.spatial.distance import squareform

    from ..trees import PartitionTree

    if euclid.shape[0] == 1:
        return PartitionTree([0], [[0]])
    top = float(euclid.max())
    condensed = squareform(euclid / top if top > 0 else euclid, checks=False)
    return PartitionTree.from_linkage(linkage(condensed, method="ward"))


def _shortest_order(tree, distances, euclid):
    """Of the single-linkage optimal leaf orderings of the tree EMD and of the Euclidean
    distances between the slices, the one whose path through the slices (the sum of the
    Euclidean distances between neighbours) is shorter; a tie goes to the tree EMD's."""
    candidates = [leaf_order(tree, distances, "emd_olo"), leaf_order(tree, euclid, "emd_olo")]
    lengths = [float(euclid[o[:-1], o[1:]].sum()) for o in candidates]
    # a tie (within rounding: an order and its reverse have the same path) keeps the first,
    # so that rescaled data, whose distances differ in the last bits, gets the same order
    return candidates[1] if lengths[1] < lengths[0] * (1 - _TIE) else candidates[0]


def _final_orders(trees, distances, sparse, ordering, distances_of_slices, slices_of=None):
    """The organized order of every axis (``distances_of_slices(axis)``: the Euclidean
    distances between the axis's slices, for ``"shortest"`` and ``"smoothest"``;
    ``slices_of(axis)``: the slices, unfolded, for ``"smoothest"``)."""
    if ordering not in ("shortest", "smoothest"):
        return [
            leaf_order(t, None if sp_axis else d, ordering)
            for t, d, sp_axis in zip(trees, distances, sparse)
        ]
    orders = []
    for axis, (t, d, sp_axis) in enumerate(zip(trees, distances, sparse)):
        if sp_axis or d is None:
            orders.append(leaf_order(t, None, "emd_olo"))
        elif ordering == "smoothest" and t.n_points >= 3:
            orders.append(_smoothest_order(t, d, distances_of_slices(axis), slices_of(axis)))
        else:
            orders.append(_shortest_order(t, d, distances_of_slices(axis)))
    return orders


# arrays up to this size take the NumPy Haar path of the selection (no compilation)
_NUMPY_HAAR_MAX = 1 << 18


def _haar_along(Y, tree, axis):
    """Haar coefficients of Y along ``axis`` (in some fixed order, which the norms and the
    compression errors below do not see).

    On a binary tree (one-child chains allowed) every coefficient is
    ``sqrt(|A| |B| / (|A| + |B|)) (mean_A - mean_B)`` for the two children of a folder, plus
    ``sqrt(n) mean`` at the root: on small arrays these are computed here from prefix sums
    in NumPy, so that a first fit compiles no Haar kernel. Larger arrays, and trees with
    wider folders, go through the compiled transform (several times faster per element)
    along ``axis`` in place of the layout: its coefficients do not depend on the layout, and
    a contiguous copy with the axis last cost 2 to 15 times the transform itself.
    """
    if Y.size > _NUMPY_HAAR_MAX or not tree.is_binary:
        from ..transforms import haar_transform

        return haar_transform(Y, tree, axis=axis)
    moved = np.moveaxis(Y, axis, 0)
    rest = moved.shape[1:]
    Z = moved.reshape(moved.shape[0], -1)[tree.leaf_order]
    prefix = np.zeros((Z.shape[0] + 1, Z.shape[1]))
    np.cumsum(Z, axis=0, out=prefix[1:])
    split = np.flatnonzero(tree.n_children == 2)
    a = tree.child_ptr[split]  # children are consecutive node ids
    b = a + 1
    sum_a = prefix[tree.end[a]] - prefix[tree.start[a]]
    sum_b = prefix[tree.end[b]] - prefix[tree.start[b]]
    na, nb = tree.size[a].astype(float)[:, None], tree.size[b].astype(float)[:, None]
    coefs = np.empty((split.shape[0] + 1, Z.shape[1]))
    coefs[0] = prefix[-1] / np.sqrt(Z.shape[0])
    coefs[1:] = (sum_a * nb - sum_b * na) / np.sqrt(na * nb * (na + nb))
    return np.moveaxis(coefs.reshape(coefs.shape[0], *rest), 0, axis)


def _partial_transform(X, trees, axis):
    """X scaled to largest magnitude 1 with its Haar transform along every axis but ``axis``
    (None: that axis untransformed), and the l2 norm of the scaled X."""
    if sp.issparse(X):
        X = X.toarray()
    top = float(np.abs(X).max())
    if top == 0:
        return None
    Xs = X / top
    Y = Xs
    for a, tree in enumerate(trees):
        if a != axis and tree is not None:
            Y = _haar_along(Y, tree, a)
    return Y, float(np.sqrt(np.sum(Xs * Xs)))


def _compression_error_along(partial, tree, axis):
    """Relative l2 error of keeping the ``SELECT_KEEP`` largest Haar coefficients of X on
    the trees behind ``partial`` with ``tree`` on ``axis`` (the basis is orthonormal, so it
    is the l2 norm of the dropped coefficients over that of X)."""
    if partial is None:
        return 0.0
    Y, norm = partial
    coefs = np.abs(_haar_along(Y, tree, axis)).ravel()
    k = max(1, round(SELECT_KEEP * coefs.size))
    return _dropped_norm(coefs, k) / norm


def _dropped_norm(coefs, k):
    """The l2 norm of all but the ``k`` largest of the magnitudes ``coefs``.

    The sum of squares is NumPy's (einsum), not BLAS's: a threaded BLAS dot splits the sum
    between threads (its bits then depend on their number) and, on a busy machine, waits
    for them to wake (milliseconds per call, more than the rest of the selection step).
    """
    dropped = np.partition(coefs, coefs.size - k)[: coefs.size - k]
    return float(np.sqrt(np.einsum("i,i->", dropped, dropped)))


def _objective(X, trees):
    """Normalized Haar l1 norm of X on all trees: ``||H X||_1 / ||X||_2`` (lower is sparser).

    The ratio does not depend on the units of X (X is divided by its largest magnitude before
    any square); an all-zero X counts as 0. None in ``trees``: that axis untransformed.
    """
    partial = _partial_transform(X, trees, None)
    if partial is None:
        return 0.0
    Y, norm = partial
    return float(np.abs(Y).sum() / norm)
