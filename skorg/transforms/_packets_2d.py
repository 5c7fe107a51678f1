"""The 2-D (non-separable) time-frequency adapted Haar-Walsh basis of a matrix: the eGHWT
search over the product of the two trees' dictionaries, and its transforms."""

from __future__ import annotations

import numpy as np

from .._validation import pow2_scale
from ._haar import _check_data, _check_trees
from ._packet_basis import WaveletPacketBasis, _int_vector, parse_cost
from ._packet_core import _callable_costs, _reported_cost
from ._packet_plan import get_packet_plan
from ._packet_tiling_2d import MAX_TILE_PAIRS, _Axis, check_size, search_tiling_2d
from ._packets import (
    inverse_wavelet_packet_transform,
    wavelet_packet_dictionary,
    wavelet_packet_transform,
)

__all__ = [
    "WaveletPacketTiling2D",
    "best_wavelet_packet_tiling_2d",
    "inverse_wavelet_packet_transform_2d",
    "wavelet_packet_transform_2d",
]


class WaveletPacketTiling2D:
    """An orthonormal basis of matrices drawn from the 2-D Haar-Walsh packet dictionary.

    Entry ``k`` is the product of the row tree's dictionary entry ``(levels[k, 0],
    positions[k, 0])`` and the column tree's ``(levels[k, 1], positions[k, 1])`` (levels and
    positions as in :func:`~skorg.transforms.wavelet_packet_info`);
    :func:`wavelet_packet_transform_2d` returns the coefficients in this order. Unlike a
    pair of 1-D bases (:func:`multi_best_wavelet_packet_basis`), the split of one axis may
    differ from place to place of the other.

    Parameters
    ----------
    levels, positions : array-like of int of shape (n_rows * n_columns, 2)
    cost : float, optional
        The cost of the data the search chose it on.

    Attributes
    ----------
    levels, positions : ndarray of int of shape (n_entries, 2)
    n_entries : int

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import best_wavelet_packet_tiling_2d
    >>> tiling = best_wavelet_packet_tiling_2d(np.ones((2, 2)), [dyadic_tree(2)] * 2)
    >>> tiling.n_entries, round(tiling.cost, 6)
    (4, 2.0)
    """

    def __init__(self, levels, positions, *, cost=None):
        levels = _pairs_array(levels, "levels")
        positions = _pairs_array(positions, "positions")
        if levels.shape != positions.shape:
            raise ValueError(
                f"levels and positions must have the same shape, got {levels.shape} and "
                f"{positions.shape}."
            )
        self.levels, self.positions = levels, positions
        self.cost = None if cost is None else float(cost)
        self._checked_for = None  # the trees it was found or checked a tiling of
        for arr in (self.levels, self.positions):
            arr.flags.writeable = False

    @property
    def n_entries(self):
        return int(self.levels.shape[0])

    def to_array(self):
        """The entries as an (n_entries, 4) int array of rows ``(level0, position0,
        level1, position1)``."""
        return np.column_stack(
            [self.levels[:, 0], self.positions[:, 0], self.levels[:, 1], self.positions[:, 1]]
        )

    @classmethod
    def from_array(cls, array):
        """A tiling from the rows of :meth:`to_array`."""
        array = np.asarray(array)
        if array.ndim != 2 or array.shape[1] != 4:
            raise ValueError(
                f"array must have shape (n_entries, 4) of (level0, position0, level1, "
                f"position1) rows, got {array.shape}."
            )
        return cls(array[:, [0, 2]], array[:, [1, 3]])

    def __eq__(self, other):
        if not isinstance(other, WaveletPacketTiling2D):
            return NotImplemented
        return np.array_equal(self.levels, other.levels) and np.array_equal(
            self.positions, other.positions
        )

    def __hash__(self):
        return hash((self.levels.tobytes(), self.positions.tobytes()))

    def __repr__(self):
        pairs = np.unique(self.levels, axis=0).shape[0]
        return f"WaveletPacketTiling2D(n_entries={self.n_entries}, level pairs={pairs})"

    def __getstate__(self):
        return {
            "levels": np.array(self.levels),
            "positions": np.array(self.positions),
            "cost": self.cost,
        }

    def __setstate__(self, state):
        self.__init__(state["levels"], state["positions"], cost=state["cost"])


def _pairs_array(values, name):
    arr = np.asarray(values)
    if arr.ndim != 2 or arr.shape[1] != 2 or arr.shape[0] < 1:
        raise ValueError(f"{name} must have shape (n_entries, 2), got {arr.shape}.")
    return np.stack([_int_vector(arr[:, 0], name), _int_vector(arr[:, 1], name)], axis=1)


def _check_matrix(X, trees, name):
    X, peak = _check_data(X, name, min_ndim=2)
    if X.ndim != 2:
        raise ValueError(f"{name} must be a matrix (2-D), got shape {X.shape}.")
    trees = _check_trees(trees, X, allow_none=False)
    return X, trees, peak


def _level_basis(n, j):
    return WaveletPacketBasis(np.full(n, j), np.arange(n), name=f"level {j}")


def _check_tiling(tiling, trees, plans, name="basis"):
    """The entries must lie in the dictionaries and tile the plane exactly once (a basis):
    checked by a search over them (as costly as the search itself), once per tiling and
    pair of trees (a tiling's entries cannot change)."""
    if not isinstance(tiling, WaveletPacketTiling2D):
        raise TypeError(
            f"{name} must be a WaveletPacketTiling2D (from best_wavelet_packet_tiling_2d), got "
            f"{type(tiling).__name__}."
        )
    held = tiling._checked_for
    if held is not None and held[0] is trees[0] and held[1] is trees[1]:
        return
    n0, n1 = plans[0].n, plans[1].n
    if tiling.n_entries != n0 * n1:
        raise ValueError(
            f"{name} has {tiling.n_entries} entries; a basis of {n0} x {n1} matrices has {n0 * n1}."
        )
    for ax, plan in enumerate(plans):
        lv, pos = tiling.levels[:, ax], tiling.positions[:, ax]
        if lv.min() < 0 or lv.max() >= plan.n_levels or pos.min() < 0 or pos.max() >= plan.n:
            raise ValueError(
                f"{name}'s axis-{ax} entries must have levels in [0, {plan.n_levels}) and "
                f"positions in [0, {plan.n}), the tree's dictionary."
            )
    # exactly one tiling among the entries: the search with cost 0 on them, 1 elsewhere,
    # finds a tiling of cost 0, and there are as many entries as a tiling has
    L1 = plans[1].n_levels
    flat = ((tiling.levels[:, 0] * n0 + tiling.positions[:, 0]) * L1 + tiling.levels[:, 1]) * n1
    flat = flat + tiling.positions[:, 1]
    if np.unique(flat).shape[0] != flat.shape[0]:
        raise ValueError(f"{name} lists an entry twice.")
    axes = [_Axis(p) for p in plans]
    check_size(axes, n0, n1, MAX_TILE_PAIRS)

    def missing(j0):  # (L1, n0, n1): 0 on the entries of row level j0, 1 elsewhere
        out = np.ones((L1, n0, n1))
        mine = tiling.levels[:, 0] == j0
        out[tiling.levels[mine, 1], tiling.positions[mine, 0], tiling.positions[mine, 1]] = 0.0
        return out

    _, value = search_tiling_2d(axes, missing)
    if value != 0.0:
        raise ValueError(f"{name}'s entries are not a tiling of the 2-D dictionary (not a basis).")
    tiling._checked_for = tuple(trees)


def _costs(kind, power, func, values):
    a = np.abs(values)
    if func is not None:
        return _callable_costs(func, values)
    if kind == 0:
        return a
    if kind == 1:
        return np.where(a > 0, a**power, 0.0)
    e = a * a
    return np.where(e > 0, -e * np.log(np.where(e > 0, e, 1.0)), 0.0)


def best_wavelet_packet_tiling_2d(X, trees, *, cost="l1", max_tile_pairs=MAX_TILE_PAIRS):
    """The 2-D time-frequency tiling of the Haar-Walsh packets in which a matrix is sparsest.

    Parameters
    ----------
    X : array-like of shape (n_rows, n_columns)
    trees : sequence of two PartitionTree
        The row tree and the column tree.
    cost : {"l1", "entropy"}, float or callable, default="l1"
        As in :func:`best_wavelet_packet_basis`.
    max_tile_pairs : int, default=2**27
        The most pairs of 1-D tiles the search may take (it holds two bytes for each; see
        Notes). Past it, or past the memory budget, a ``MemoryError`` is raised before
        anything is allocated.

    Returns
    -------
    tiling : WaveletPacketTiling2D
        Its ``cost``: the cost of X in it (as :func:`best_wavelet_packet_basis` reports it),
        never above that of any separable basis (up to the relative ``1e-12`` within which
        costs tie and the first split wins, so that rounding cannot pick among equal
        tilings): every pair of 1-D tilings, among them the results of
        :func:`multi_best_wavelet_packet_basis`, is one of the 2-D tilings.

    Notes
    -----
    A 1-D *tile* of the time-frequency search (see :func:`best_wavelet_packet_basis`,
    ``direction="time-frequency"``) is the span of the entries of one tag in one region;
    a 2-D tile is a pair of them, and splits in time or in frequency along either axis.
    The best tiling is found bottom up over all pairs, as Lindberg and Villemoes [1]_ do for
    dyadic Haar-Walsh tilings of images and Shao and Saito [2]_ for the 2-D eGHWT. With
    ``T_k`` tiles on axis ``k`` (at most ``n_k L_k (L_k + 1) / 2`` for ``L_k`` levels, about
    ``2 n_k L_k`` on a balanced tree) it takes ``O(T_0 T_1)`` time and about ``2 T_0 T_1``
    bytes, plus the best costs of two levels of axis-0 tiles, ``8 (T_0(j) + T_0(j - 1))
    T_1`` bytes (twice that at the peak), and the 2-D dictionary of one row level,
    ``8 n_0 n_1 (L_0 + L_1 + 3)``; the whole is checked against the memory budget before the
    search starts. On balanced trees: 0.6 s at 64 x 64, 3 s and a peak of 76 MiB at
    256 x 256, 12 s and 355 MiB at 512 x 512 (``8.5 x 10^7`` tile pairs, within the default
    limit); 1024 x 1024 has ``4.2 x 10^8`` tile pairs, past it (measured on a shared 2-core
    machine). Deep trees (linkage trees) reach the limit at smaller sizes. The data are
    scaled by a power of two first, so the choice does not depend on the units.

    References
    ----------
    .. [1] Lindberg, Villemoes, "Image compression with adaptive Haar-Walsh tilings", Wavelet
       Applications in Signal and Image Processing VIII, SPIE 4119 (2000).
    .. [2] Shao, Saito, "The extended generalized Haar-Walsh transform and applications",
       2021.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import best_wavelet_packet_tiling_2d, wavelet_packet_transform_2d
    >>> X = np.outer([1.0, 1.0, 1.0, 1.0], [1.0, -1.0, 1.0, -1.0])  # one Walsh product
    >>> trees = [dyadic_tree(4)] * 2
    >>> tiling = best_wavelet_packet_tiling_2d(X, trees)
    >>> round(tiling.cost, 6)
    4.0
    >>> int(np.sum(np.abs(wavelet_packet_transform_2d(X, trees, tiling)) > 1e-12))
    1
    """
    X, trees, peak = _check_matrix(X, trees, "X")
    if isinstance(max_tile_pairs, bool) or not isinstance(max_tile_pairs, (int, np.integer)):
        raise TypeError(f"max_tile_pairs must be a positive integer, got {max_tile_pairs!r}.")
    if max_tile_pairs < 1:
        raise ValueError(f"max_tile_pairs must be a positive integer, got {max_tile_pairs!r}.")
    kind, power, func = parse_cost(cost)
    plans = [get_packet_plan(t) for t in trees]
    axes = [_Axis(p) for p in plans]
    n0, n1 = X.shape
    check_size(axes, n0, n1, int(max_tile_pairs))
    scale = pow2_scale(X, always=True, peak=peak)
    Y = np.asarray(X, dtype=np.float64) * scale
    energy = float(np.sum(Y * Y))
    rows = wavelet_packet_dictionary(Y, trees[0], axis=0)  # (L0, n0, n1)

    def leaf_costs(j0):
        # the 2-D dictionary of row level j0: (L1, n0, n1)
        return _costs(kind, power, func, wavelet_packet_dictionary(rows[j0], trees[1], axis=1))

    chosen, value = search_tiling_2d(axes, leaf_costs)
    levels = np.concatenate(
        [
            np.column_stack([np.full(p0.shape, j0), np.full(p0.shape, j1)])
            for j0, j1, p0, p1 in chosen
        ]
    )
    positions = np.concatenate([np.column_stack([p0, p1]) for _, _, p0, p1 in chosen])
    order = np.lexsort((positions[:, 1], positions[:, 0], levels[:, 1], levels[:, 0]))
    tiling = WaveletPacketTiling2D(
        levels[order], positions[order], cost=_reported_cost(cost, value, scale, energy)
    )
    tiling._checked_for = tuple(trees)  # a tiling by construction
    return tiling


def wavelet_packet_transform_2d(X, trees, basis):
    """The coefficients of a matrix in a 2-D Haar-Walsh tiling.

    Parameters
    ----------
    X : array-like of shape (n_rows, n_columns)
    trees : sequence of two PartitionTree
    basis : WaveletPacketTiling2D

    Returns
    -------
    C : ndarray of shape (n_rows * n_columns,)
        The coefficient of entry ``k`` of ``basis`` at index ``k``; float32 for float32
        data, else float64.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import WaveletPacketTiling2D, wavelet_packet_transform_2d
    >>> delta = WaveletPacketTiling2D([[1, 1]] * 4, [[0, 0], [0, 1], [1, 0], [1, 1]])
    >>> # the finest level: the points in the packet order (here [1, 0], see wavelet_packet_info)
    >>> wavelet_packet_transform_2d(np.arange(4.0).reshape(2, 2), [dyadic_tree(2)] * 2, delta)
    array([3., 2., 1., 0.])
    """
    X, trees, _ = _check_matrix(X, trees, "X")
    plans = [get_packet_plan(t) for t in trees]
    _check_tiling(basis, trees, plans)
    out = np.empty(basis.n_entries, dtype=X.dtype)
    n0, n1 = X.shape
    for j0 in np.unique(basis.levels[:, 0]):
        along0 = wavelet_packet_transform(X, trees[0], _level_basis(n0, j0), axis=0)
        here = np.flatnonzero(basis.levels[:, 0] == j0)
        for j1 in np.unique(basis.levels[here, 1]):
            sel = here[basis.levels[here, 1] == j1]
            both = wavelet_packet_transform(along0, trees[1], _level_basis(n1, j1), axis=1)
            out[sel] = both[basis.positions[sel, 0], basis.positions[sel, 1]]
    return out


def inverse_wavelet_packet_transform_2d(C, trees, basis):
    """A matrix from its coefficients in a 2-D Haar-Walsh tiling (inverse of
    :func:`wavelet_packet_transform_2d`).

    Parameters
    ----------
    C : array-like of shape (n_rows * n_columns,)
    trees : sequence of two PartitionTree
    basis : WaveletPacketTiling2D

    Returns
    -------
    X : ndarray of shape (n_rows, n_columns)

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import WaveletPacketTiling2D, inverse_wavelet_packet_transform_2d
    >>> delta = WaveletPacketTiling2D([[1, 1]] * 4, [[0, 0], [0, 1], [1, 0], [1, 1]])
    >>> inverse_wavelet_packet_transform_2d(np.arange(4.0), [dyadic_tree(2)] * 2, delta)
    array([[3., 2.],
           [1., 0.]])
    """
    C, _ = _check_data(C, "C")
    if C.ndim != 1:
        raise ValueError(f"C must be a vector of coefficients (1-D), got shape {C.shape}.")
    trees = list(trees)
    if len(trees) != 2:
        raise ValueError(f"Expected two trees (rows, columns), got {len(trees)}.")
    shape = tuple(getattr(t, "n_points", -1) for t in trees)
    _check_trees(trees, np.empty(shape if min(shape) >= 0 else (0, 0)), allow_none=False)
    plans = [get_packet_plan(t) for t in trees]
    _check_tiling(basis, trees, plans)
    if C.shape[0] != basis.n_entries:
        raise ValueError(f"C has {C.shape[0]} coefficients; basis has {basis.n_entries} entries.")
    n0, n1 = shape
    out = np.zeros((n0, n1), dtype=np.float64)
    for j0 in np.unique(basis.levels[:, 0]):
        here = np.flatnonzero(basis.levels[:, 0] == j0)
        level0 = np.zeros((n0, n1), dtype=np.float64)
        for j1 in np.unique(basis.levels[here, 1]):
            sel = here[basis.levels[here, 1] == j1]
            M = np.zeros((n0, n1), dtype=np.float64)
            M[basis.positions[sel, 0], basis.positions[sel, 1]] = C[sel]
            level0 += inverse_wavelet_packet_transform(M, trees[1], _level_basis(n1, j1), axis=1)
        out += inverse_wavelet_packet_transform(level0, trees[0], _level_basis(n0, j0), axis=0)
    return out.astype(C.dtype, copy=False)
