"""Bases of the Haar-Walsh packet dictionary: the specification object, its checks and the
best-basis searches (Coifman-Wickerhauser, in both directions)."""

from __future__ import annotations

import math
from numbers import Real

import numpy as np

from .._kernels import _packets as _kernels

__all__ = ["WaveletPacketBasis"]


class WaveletPacketBasis:
    """An orthonormal basis drawn from the Haar-Walsh packet dictionary of a tree.

    The basis lists its ``n`` dictionary entries ``(level, position)`` in the order in which
    :func:`~skorg.transforms.wavelet_packet_transform` returns their coefficients. Level 0
    is the coarsest (the whole tree), position ``p`` of a level runs along its regions end
    to end, each region's entries by increasing frequency tag (see
    :func:`~skorg.transforms.wavelet_packet_info`).

    Parameters
    ----------
    levels, positions : array-like of int of shape (n_points,)
        The dictionary entries of the basis, in coefficient order.
    name : str, default="custom"
        What the basis is (``"haar"``, ``"walsh"``, ``"delta"``, ``"best"``, ...).
    cost : float, optional
        The additive cost of the data the basis was chosen on, when a search chose it.
    direction : str, optional
        ``"coarse-to-fine"`` (a union of regions, each with all its tags) or
        ``"fine-to-coarse"`` (a union of tags, each over all regions of a level) for a basis
        a search chose.

    Attributes
    ----------
    levels, positions : ndarray of int of shape (n_points,)
    n_points : int

    Examples
    --------
    >>> from skorg.transforms import WaveletPacketBasis, wavelet_packet_basis
    >>> from skorg.trees import dyadic_tree
    >>> basis = wavelet_packet_basis(dyadic_tree(4), "haar")
    >>> basis.to_array()
    array([[0, 0],
           [0, 1],
           [1, 3],
           [1, 1]])
    >>> WaveletPacketBasis.from_array(basis.to_array(), name="haar") == basis
    True
    """

    def __init__(self, levels, positions, *, name="custom", cost=None, direction=None):
        levels = _int_vector(levels, "levels")
        positions = _int_vector(positions, "positions")
        if levels.shape != positions.shape:
            raise ValueError(
                f"levels and positions must have the same length, got {levels.shape[0]} and "
                f"{positions.shape[0]}."
            )
        if levels.shape[0] < 1:
            raise ValueError("A basis needs at least one entry.")
        self.levels = levels
        self.positions = positions
        self.name = str(name)
        self.cost = None if cost is None else float(cost)
        self.direction = direction
        for arr in (self.levels, self.positions):
            arr.flags.writeable = False

    @property
    def n_points(self):
        return int(self.levels.shape[0])

    def to_array(self):
        """The entries as an (n_points, 2) int array of ``(level, position)`` rows."""
        return np.column_stack([self.levels, self.positions])

    @classmethod
    def from_array(cls, array, *, name="custom"):
        """A basis from the rows ``(level, position)`` of :meth:`to_array`."""
        array = np.asarray(array)
        if array.ndim != 2 or array.shape[1] != 2:
            raise ValueError(
                f"array must have shape (n_points, 2) of (level, position) rows, got {array.shape}."
            )
        return cls(array[:, 0], array[:, 1], name=name)

    def __len__(self):
        return self.n_points

    def __eq__(self, other):
        if not isinstance(other, WaveletPacketBasis):
            return NotImplemented
        return np.array_equal(self.levels, other.levels) and np.array_equal(
            self.positions, other.positions
        )

    def __hash__(self):
        return hash((self.levels.tobytes(), self.positions.tobytes()))

    def __repr__(self):
        depth = ", ".join(
            f"{int(lv)}: {int(c)}" for lv, c in zip(*np.unique(self.levels, return_counts=True))
        )
        return (
            f"WaveletPacketBasis(name={self.name!r}, n_points={self.n_points}, "
            f"per level={{{depth}}})"
        )

    def __getstate__(self):
        return {
            "levels": np.array(self.levels),
            "positions": np.array(self.positions),
            "name": self.name,
            "cost": self.cost,
            "direction": self.direction,
        }

    def __setstate__(self, state):
        self.__init__(
            state["levels"],
            state["positions"],
            name=state["name"],
            cost=state["cost"],
            direction=state["direction"],
        )


def _int_vector(values, name):
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D integer array, got shape {arr.shape}.")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}.")
    return np.array(arr, dtype=np.intp)


# ---------------------------------------------------------------------- checks
def _chosen_mask(plan, basis, name="basis"):
    if not isinstance(basis, WaveletPacketBasis):
        raise TypeError(
            f"{name} must be a WaveletPacketBasis (from wavelet_packet_basis or "
            f"best_wavelet_packet_basis), got {type(basis).__name__}."
        )
    n, n_levels = plan.n, plan.n_levels
    if basis.n_points != n:
        raise ValueError(f"{name} has {basis.n_points} entries but the tree has {n} points.")
    lv, pos = basis.levels, basis.positions
    if lv.min() < 0 or lv.max() >= n_levels or pos.min() < 0 or pos.max() >= n:
        raise ValueError(
            f"{name} has entries outside the dictionary of this tree ({n_levels} levels of "
            f"{n} positions)."
        )
    chosen = np.zeros((n_levels, n), dtype=bool)
    chosen[lv, pos] = True
    if int(chosen.sum()) != n:
        raise ValueError(f"{name} lists a dictionary entry twice.")
    return chosen


def _covers_once(chosen, groups, n_groups, parents, finest, sizes):
    """Whether ``chosen`` is a union of whole groups (regions or tags) that cover every leaf
    group of the group tree exactly once (``parents[j]``: the group at the parent level of
    each group of level ``j``; ``finest``: the level of the tree's leaves)."""
    n_levels = chosen.shape[0]
    whole = []
    for j in range(n_levels):
        count = np.bincount(groups[j][chosen[j]], minlength=n_groups[j])
        full = count == sizes[j]
        if np.any((count > 0) & ~full):
            return False
        whole.append(full)
    anc = np.arange(n_groups[finest])
    hits = whole[finest].astype(np.intp)
    step = -1 if finest == n_levels - 1 else 1
    j = finest
    while 0 <= j + step < n_levels:
        anc = parents[j][anc]
        j += step
        hits += whole[j][anc]
    return bool(np.all(hits == 1))


def _region_tree(plan):
    n_groups = [r.shape[0] for r in plan.region_start]
    sizes = [e - s for s, e in zip(plan.region_start, plan.region_end)]
    return plan.region_of, n_groups, plan.region_parent, sizes


def _tag_tree(plan):
    n_groups = [int(t) for t in plan.n_tags]
    sizes = [np.bincount(plan.tag[j], minlength=n_groups[j]) for j in range(plan.n_levels)]
    # the fine-to-coarse tree climbs from level 0 to the finest level: the parent of a tag of
    # level j is plan.tag_parent[j] (a tag of level j + 1)
    parents = [*plan.tag_parent, None]
    return plan.tag, n_groups, parents, sizes


def check_basis(plan, basis, name="basis"):
    """The (n_levels, n) mask of ``basis`` after checking that it is a basis of the plan's
    dictionary: a union of whole regions covering the points once (coarse-to-fine), or a
    union of whole tags covering the frequencies once (fine-to-coarse)."""
    chosen = _chosen_mask(plan, basis, name)
    groups, n_groups, parents, sizes = _region_tree(plan)
    if _covers_once(chosen, groups, n_groups, parents, plan.n_levels - 1, sizes):
        return chosen
    groups, n_groups, parents, sizes = _tag_tree(plan)
    if _covers_once(chosen, groups, n_groups, parents, 0, sizes):
        return chosen
    from ._packet_tiling import covers_tiling

    if covers_tiling(plan, chosen):
        return chosen
    raise ValueError(
        f"{name} is not an orthonormal basis of the tree's dictionary: its entries must tile "
        "the dictionary (whole regions covering every point once, whole frequency tags, or "
        "a time-frequency tiling; see the user guide, 'Wavelet packets and best bases')."
    )


# ---------------------------------------------------------------------- costs
COSTS = ("l1", "entropy")


def parse_cost(cost):
    """``(kind, power, callable)`` of a cost argument."""
    if callable(cost):
        return None, 1.0, cost
    if isinstance(cost, str):
        if cost == "l1":
            return _kernels.COST_L1, 1.0, None
        if cost == "entropy":
            return _kernels.COST_ENTROPY, 1.0, None
        raise ValueError(f"cost must be 'l1', 'entropy', a positive p or a callable, got {cost!r}.")
    if isinstance(cost, Real) and not isinstance(cost, bool):
        p = float(cost)
        if not (math.isfinite(p) and 0.0 < p <= 64.0):
            raise ValueError(f"cost as an l^p exponent must lie in (0, 64], got {cost!r}.")
        if p == 1.0:
            return _kernels.COST_L1, 1.0, None
        return _kernels.COST_LP, p, None
    raise TypeError(
        f"cost must be 'l1', 'entropy', a positive exponent p (l^p) or a callable, got "
        f"{type(cost).__name__}."
    )


DIRECTIONS = ("both", "coarse-to-fine", "fine-to-coarse", "time-frequency")


# ---------------------------------------------------------------------- searches
def search_regions(plan, table):
    """Best union of regions: ``(chosen mask, cost)``, searching from the finest regions up
    (the coarse-to-fine dictionary); ties keep the coarser region."""
    n_levels = plan.n_levels
    last = n_levels - 1
    rcost = [np.add.reduceat(table[j], plan.region_start[j]) for j in range(n_levels)]
    keep = [None] * n_levels
    keep[last] = np.ones(rcost[last].shape[0], dtype=bool)
    best = rcost[last]
    for j in range(last - 1, -1, -1):
        below = np.bincount(plan.region_parent[j + 1], weights=best, minlength=rcost[j].shape[0])
        keep[j] = rcost[j] <= below
        best = np.where(keep[j], rcost[j], below)
    chosen = np.zeros((n_levels, plan.n), dtype=bool)
    active = np.ones(1, dtype=bool)
    for j in range(n_levels):
        take = active & keep[j]
        chosen[j] = take[plan.region_of[j]]
        if j < last:
            active = (active & ~keep[j])[plan.region_parent[j + 1]]
    return chosen, float(best[0])


def search_tags(plan, table):
    """Best union of tags: ``(chosen mask, cost)``, searching from the coarsest level's tags
    toward the finest level (the fine-to-coarse dictionary); ties keep the finer level."""
    n_levels = plan.n_levels
    last = n_levels - 1
    gcost = [
        np.bincount(plan.tag[j], weights=table[j], minlength=plan.n_tags[j])
        for j in range(n_levels)
    ]
    keep = [None] * n_levels
    keep[0] = np.ones(gcost[0].shape[0], dtype=bool)
    best = gcost[0]
    for j in range(1, n_levels):
        below = np.bincount(plan.tag_parent[j - 1], weights=best, minlength=gcost[j].shape[0])
        keep[j] = gcost[j] <= below
        best = np.where(keep[j], gcost[j], below)
    chosen = np.zeros((n_levels, plan.n), dtype=bool)
    active = np.ones(gcost[last].shape[0], dtype=bool)
    for j in range(last, -1, -1):
        take = active & keep[j]
        chosen[j] = take[plan.tag[j]]
        if j > 0:
            active = (active & ~keep[j])[plan.tag_parent[j - 1]]
    return chosen, float(best.sum())


def mask_to_basis(chosen, **kwargs):
    """The basis of a mask, its entries by level, then position."""
    levels, positions = np.nonzero(chosen)
    return WaveletPacketBasis(levels, positions, **kwargs)
