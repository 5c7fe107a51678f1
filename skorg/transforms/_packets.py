"""The generalized Haar-Walsh wavelet packets on partition trees: dictionary, transforms and
best bases, along one axis or separably along several."""

from __future__ import annotations

import numpy as np

from .._validation import check_memory, pow2_scale
from ._haar import (
    _check_axis,
    _check_data,
    _check_tree,
    _check_tree_matches,
    haar_transform,
    inverse_haar_transform,
)
from ._packet_basis import (
    WaveletPacketBasis,
    check_basis,
)
from ._packet_core import (
    _apply,
    _check_buffers,
    _is_haar,
    _kernels_for,
    _rows,
    _search,
    _step,
    _tmp,
    _unrows,
)
from ._packet_plan import get_packet_plan
from ._packet_slot_apply import slot_dictionary

__all__ = [
    "best_wavelet_packet_basis",
    "inverse_wavelet_packet_transform",
    "wavelet_packet_basis",
    "wavelet_packet_basis_matrix",
    "wavelet_packet_dictionary",
    "wavelet_packet_info",
    "wavelet_packet_transform",
]

_KINDS = ("haar", "walsh", "delta")


def _prepare(X, tree, axis, name="X"):
    """Checked ``(X, axis, plan, scale)``: ``scale`` a power of two that brings data of
    extreme magnitude into the range where the sums cannot overflow (1.0 otherwise)."""
    X, peak = _check_data(X, name)
    axis = _check_axis(axis, X.ndim)
    _check_tree(tree)
    _check_tree_matches(tree, X, axis)
    return X, axis, get_packet_plan(tree), pow2_scale(X, peak=peak)


# ---------------------------------------------------------------------- public functions
def wavelet_packet_basis(tree, kind="haar"):
    """A named member of the Haar-Walsh packet dictionary of a tree.

    Parameters
    ----------
    tree : PartitionTree
    kind : {"haar", "walsh", "delta"}, default="haar"
        - ``"haar"``: the tree Haar basis, its entries in the canonical order of
          :func:`haar_transform` (so :func:`wavelet_packet_transform` returns the same
          coefficients);
        - ``"walsh"``: every entry of level 0 (the whole tree split into all its
          frequencies: the Walsh basis on a perfect dyadic tree);
        - ``"delta"``: the finest level (the points themselves, in the packet order).

    Returns
    -------
    basis : WaveletPacketBasis

    Examples
    --------
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import wavelet_packet_basis
    >>> wavelet_packet_basis(dyadic_tree(4), "walsh").to_array()[:, 0]
    array([0, 0, 0, 0])
    """
    _check_tree(tree)
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}.")
    plan = get_packet_plan(tree)
    n = plan.n
    if kind == "haar":
        return WaveletPacketBasis(plan.haar_levels, plan.haar_positions, name="haar")
    level = 0 if kind == "walsh" else plan.n_levels - 1
    return WaveletPacketBasis(np.full(n, level), np.arange(n), name=kind)


def wavelet_packet_info(tree):
    """Where every entry of the Haar-Walsh packet dictionary of a tree lives.

    Parameters
    ----------
    tree : PartitionTree

    Returns
    -------
    info : dict
        Arrays of shape (n_levels, n_points), indexed by ``(level, position)``:

        - ``"tag"``: the frequency tag, as its rank among the tags present at the level
          (0: the region's average; 1: its Haar vector; higher: more sign changes), which
          on a perfect dyadic tree is the tag itself;
        - ``"region"``: the region's index within its level;
        - ``"region_start"``, ``"region_end"``: its slice of ``"packet_order"``: the vector
          is supported on the points ``packet_order[region_start:region_end]``;

        and ``"packet_order"`` (shape (n_points,)): the points in the order in which every
        region is contiguous (the finest level's entry ``p`` is point ``packet_order[p]``).

    Examples
    --------
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import wavelet_packet_info
    >>> wavelet_packet_info(dyadic_tree(4))["tag"]
    array([[0, 1, 2, 3],
           [0, 1, 0, 1],
           [0, 0, 0, 0]])
    """
    _check_tree(tree)
    plan = get_packet_plan(tree)
    starts = np.stack([plan.region_start[j][plan.region_of[j]] for j in range(plan.n_levels)])
    ends = np.stack([plan.region_end[j][plan.region_of[j]] for j in range(plan.n_levels)])
    return {
        "tag": plan.tag.copy(),
        "region": plan.region_of.copy(),
        "region_start": starts,
        "region_end": ends,
        "packet_order": plan.order.copy(),
    }


def wavelet_packet_dictionary(X, tree, *, axis=-1):
    """Every coefficient of the Haar-Walsh packet dictionary of X along one axis.

    Parameters
    ----------
    X : array-like of shape (..., n_points, ...)
    tree : PartitionTree
    axis : int, default=-1

    Returns
    -------
    D : ndarray of shape (n_levels,) + X.shape
        ``D[j]`` along ``axis`` holds level ``j`` of the dictionary (positions as in
        :func:`wavelet_packet_info`); float32 for float32 data, else float64.

    Raises
    ------
    MemoryError
        Before allocating, when the ``n_levels`` copies of X exceed the memory budget.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import wavelet_packet_dictionary
    >>> wavelet_packet_dictionary(np.array([1.0, 1.0, 3.0, 3.0]), dyadic_tree(4)).round(6)
    array([[4.      , 2.      , 0.      , 0.      ],
           [4.242641, 0.      , 1.414214, 0.      ],
           [3.      , 3.      , 1.      , 1.      ]])
    """
    X, axis, plan, scale = _prepare(X, tree, axis)
    B = X.size // plan.n
    # the output, and its copy where the axis lies between others (no 2-D view of it)
    copies = 2 if 0 < axis < X.ndim - 1 else 1
    check_memory(
        plan.n * B * (copies * X.itemsize * plan.n_levels + 8),
        f"The Haar-Walsh packet dictionary of {B} vectors of {plan.n} values "
        f"({plan.n_levels} levels)",
    )
    return slot_dictionary(X, plan, axis, scale)


def _dictionary_by_level(X, tree, axis=-1):
    """:func:`wavelet_packet_dictionary` level by level (the reference of the in-place
    path: the same values, bit for bit)."""
    X, axis, plan, scale = _prepare(X, tree, axis)
    rows = _rows(X, plan, axis, scale)
    K = _kernels_for(rows)
    out = np.empty((plan.n_levels, *X.shape), dtype=X.dtype)
    last = plan.n_levels - 1
    tmp = _tmp(plan, rows.shape[1])
    for j in range(last, -1, -1):
        if j < last:
            _step(K, rows, plan, j, tmp)
        out[j] = _unrows(rows, X.shape, axis, X.dtype, scale)
    return out


def wavelet_packet_transform(X, tree, basis, *, axis=-1):
    """Coefficients of X along one axis in a basis of the Haar-Walsh packet dictionary.

    Parameters
    ----------
    X : array-like of shape (..., n_points, ...)
        Real data; float32 stays float32, any other real dtype becomes float64.
    tree : PartitionTree
    basis : WaveletPacketBasis or {"haar", "walsh", "delta"}
        A basis of the tree's dictionary, e.g. from :func:`best_wavelet_packet_basis`.
    axis : int, default=-1

    Returns
    -------
    C : ndarray of the shape of X
        Along ``axis``, the coefficient of basis entry ``k`` at index ``k``.

    See Also
    --------
    inverse_wavelet_packet_transform, best_wavelet_packet_basis, haar_transform

    Notes
    -----
    The generalized Haar-Walsh transform [1]_ on the binary version of the tree (see the
    user guide: a folder of ``m`` children sorted as for the tree Haar basis splits into
    child 1 against the rest, child 2 against the rest of that, ...). The dictionary's
    level ``j + 1`` holds, for every region of binary depth ``j + 1``, its coefficients
    by increasing frequency tag; a region of depth ``j`` with children ``A, B`` combines the
    coefficients of equal tag ``l``: for ``l = 0`` into the region's average and its Haar
    vector (weights ``sqrt(|A| / |R|)``, ``sqrt(|B| / |R|)``), for ``l > 0`` into their sum
    and difference over ``sqrt(2)`` (tags ``2l``, ``2l + 1``); a tag present in one child
    only is kept as tag ``2l``. Every level is an orthonormal transform of the data, each
    costs O(n) per vector, and a basis is read off the levels it uses: O(n depth) in all.

    References
    ----------
    .. [1] Irion, Saito, "The generalized Haar-Walsh transform", IEEE Statistical Signal
       Processing Workshop, 2014.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import haar_transform, wavelet_packet_transform
    >>> x, tree = np.array([1.0, 1.0, 3.0, 3.0]), dyadic_tree(4)
    >>> wavelet_packet_transform(x, tree, "haar").round(6)
    array([4., 2., 0., 0.])
    >>> y = np.array([1.0, -1.0, 1.0, -1.0])  # one Walsh vector, two Haar vectors
    >>> wavelet_packet_transform(y, tree, "walsh").round(6)
    array([ 0.,  0.,  0., -2.])
    >>> haar_transform(y, tree).round(6)
    array([ 0.      ,  0.      , -1.414214, -1.414214])
    """
    X, axis, plan, scale = _prepare(X, tree, axis)
    basis = _resolve_basis(tree, basis)
    check_basis(plan, basis)
    if _is_haar(plan, basis):  # the dedicated transform: the same coefficients, faster
        return haar_transform(X, tree, axis=axis)
    return _apply(X, plan, basis, axis, scale, inverse=False)


def inverse_wavelet_packet_transform(C, tree, basis, *, axis=-1):
    """Data from its coefficients in a wavelet packet basis (inverse of
    :func:`wavelet_packet_transform`).

    Parameters
    ----------
    C : array-like of shape (..., n_points, ...)
    tree : PartitionTree
    basis : WaveletPacketBasis or {"haar", "walsh", "delta"}
    axis : int, default=-1

    Returns
    -------
    X : ndarray of the shape of C

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import inverse_wavelet_packet_transform
    >>> inverse_wavelet_packet_transform(np.array([4.0, 2.0, 0, 0]), dyadic_tree(4), "haar")
    array([1., 1., 3., 3.])
    """
    C, axis, plan, scale = _prepare(C, tree, axis, "C")
    basis = _resolve_basis(tree, basis)
    check_basis(plan, basis)
    if _is_haar(plan, basis):
        return inverse_haar_transform(C, tree, axis=axis)
    return _apply(C, plan, basis, axis, scale, inverse=True)


def _resolve_basis(tree, basis):
    if isinstance(basis, str):
        return wavelet_packet_basis(tree, basis)
    return basis


def best_wavelet_packet_basis(X, tree, *, axis=-1, cost="l1", direction="both"):
    """The basis of the Haar-Walsh packet dictionary in which X is sparsest.

    Parameters
    ----------
    X : array-like of shape (..., n_points, ...)
        One vector, or many along ``axis`` (their costs are summed: one basis for all).
    tree : PartitionTree
    axis : int, default=-1
    cost : {"l1", "entropy"}, float or callable, default="l1"
        The additive cost of a coefficient ``c``: ``|c|``; ``"entropy"``: the
        Coifman-Wickerhauser entropy ``-sum (c^2 / E) log(c^2 / E)`` with ``E`` the data's
        energy (the same in every basis); a positive float ``p``: ``|c|^p``; a callable:
        maps an array of coefficients to an array of their costs (the same shape).
    direction : {"both", "coarse-to-fine", "fine-to-coarse", "time-frequency"}, \
default="both"
        ``"coarse-to-fine"``: the best union of regions, each with all its tags (searched
        from the finest regions up); ``"fine-to-coarse"``: the best union of tags, each over
        all the regions of its level (searched from the coarsest level down; the Haar and
        Walsh bases are among these); ``"both"``: the cheaper of the two;
        ``"time-frequency"``: the best of all the tilings that split every tile in time
        (regions) or in frequency (tags), which includes both families (the extended
        GHWT search of Shao and Saito [3]_), never costlier than ``"both"``.

    Returns
    -------
    basis : WaveletPacketBasis
        Its entries by level, then position; ``basis.cost`` the cost of X in it: the l1 or
        l^p norm of the coefficients, ``(sum |c|^p)^(1/p)`` (data units), the entropy, or
        the sum of a callable's costs; never above the cost of the Haar basis for
        ``"both"`` and ``"fine-to-coarse"``.

    Notes
    -----
    The Coifman-Wickerhauser search [1]_: every subspace of the dictionary's tree keeps
    its own coefficients when they cost no more than the best bases of its two halves,
    which is optimal for an additive cost; the two directions are those of Irion and
    Saito [2]_. The costs of the whole dictionary are accumulated a block of columns at a
    time (at most 2 MiB), every level computed in place from the one below, never the
    dictionary in memory, in O(n depth) per vector. The data are scaled by a power of two
    first, so the choice does not depend on the units. For matrices, see also
    :func:`best_wavelet_packet_tiling_2d` (the non-separable 2-D tiling).

    References
    ----------
    .. [1] Coifman, Wickerhauser, "Entropy-based algorithms for best basis selection",
       IEEE Trans. Information Theory 38 (1992).
    .. [2] Irion, Saito, "The generalized Haar-Walsh transform", IEEE SSP 2014.
    .. [3] Shao, Saito, "The extended generalized Haar-Walsh transform and applications",
       2021.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import best_wavelet_packet_basis
    >>> x = np.array([1.0, -1.0, 1.0, -1.0])
    >>> basis = best_wavelet_packet_basis(x, dyadic_tree(4))
    >>> round(basis.cost, 6), basis.direction
    (2.0, 'coarse-to-fine')
    """
    X, axis, plan, _ = _prepare(X, tree, axis)
    _check_buffers(plan, X.size // plan.n, "The best wavelet packet basis search")
    return _search(_rows(X, plan, axis), plan, cost, direction)


def wavelet_packet_basis_matrix(tree, basis):
    """A wavelet packet basis as a dense orthonormal matrix (for inspection and tests).

    Parameters
    ----------
    tree : PartitionTree
    basis : WaveletPacketBasis or {"haar", "walsh", "delta"}

    Returns
    -------
    matrix : ndarray of shape (n_points, n_points)
        Column ``k`` is basis vector ``k`` indexed by point, so
        ``wavelet_packet_transform(x, tree, basis) == matrix.T @ x``.

    Examples
    --------
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import wavelet_packet_basis_matrix
    >>> (wavelet_packet_basis_matrix(dyadic_tree(2), "haar") * 2**0.5).round(6)
    array([[ 1., -1.],
           [ 1.,  1.]])
    """
    _check_tree(tree)
    n = tree.n_points
    check_memory(3 * 8 * n * n, f"The dense basis matrix of {n} points")
    return inverse_wavelet_packet_transform(np.eye(n), tree, basis, axis=0)
