"""The 2-D (non-separable) time-frequency tiling search of the Haar-Walsh packets.

A 2-D tile is a pair of 1-D tiles, one per axis (:mod:`._packet_tiling`): the span of the
products of their entries. A pair of single entries is one coefficient of the 2-D
dictionary, ``D[j0, p0, j1, p1]`` (the matrix at level ``j0`` of the dictionary along the
rows and ``j1`` along the columns). Any other pair splits in up to four ways: in time or in
frequency along axis 0 (when its axis-0 tile is not one entry), or along axis 1. The best
tiling is found bottom up as in one dimension (Shao and Saito, "The extended generalized
Haar-Walsh transform and applications", 2021, its 2-D version; Lindberg and Villemoes,
"Image compression with adaptive Haar-Walsh tilings", 2000), and read off top down.

The tiles of one axis are grouped by ``(j, a)``, a *layer*; the search runs over pairs of
layers, each an array of ``T0(j0, a0) x T1(j1, a1)`` tile pairs. It holds one split code and
one flag per tile pair (``2 T0 T1`` bytes for ``T_k`` tiles on axis ``k``, at most
``n_k L_k (L_k + 1) / 2`` and about ``2 n_k L_k`` on a balanced tree), the best costs of the
axis-0 layers of two levels only, and the 2-D dictionary of one axis-0 level at a time
(:func:`search_memory`, checked against the budget before the search starts).
"""

from __future__ import annotations

import numpy as np

from .._validation import check_memory
from ._packet_tiling import _links, _tiles

__all__: list[str] = []

# codes of the splits of a tile pair; -1: one coefficient. The first of the cheapest wins,
# and costs within TIE (relative) of each other tie: many tilings cost exactly the same
# (a carried singleton has the same coefficients on two levels) but their sums are rounded
# differently, so a strict comparison would let the data's units pick among them
TIME_0, FREQ_0, TIME_1, FREQ_1 = 0, 1, 2, 3
TIE = 1e-12

# the most tile pairs a search takes: 512 x 512 on balanced trees (8.5e7 pairs, 12 s and a
# peak of 355 MiB measured on a shared 2-core machine); 1024 x 1024 has 4.2e8
MAX_TILE_PAIRS = 1 << 27


class _Axis:
    """The tiles of one axis: the layers in the search's order (level up, then the region
    level down), their sizes, and the grouping of every split's children by parent."""

    def __init__(self, plan):
        self.plan = plan
        self.inv, self.rep = _tiles(plan)
        self.time, self.freq = _links(plan, self.inv, self.rep)
        L = plan.n_levels
        self.layers = [(j, a) for j in range(L) for a in range(j, -1, -1)]
        self.size = {key: self.rep[key].shape[0] for key in self.layers}
        self.n_tiles = int(sum(self.size.values()))
        # children of (j, a) split in time: the tiles of (j, a + 1), grouped by parent; in
        # frequency: those of (j - 1, a)
        self.groups = {}
        for j, a in self.layers:
            if a < j:
                self.groups[j, a, "time"] = _grouping(self.time[j, a + 1])
                self.groups[j, a, "freq"] = _grouping(self.freq[j - 1, a])

    def level_width(self, j):
        return sum(self.size[j, a] for a in range(j + 1))


def _grouping(parent_of):
    """(order, starts): the children sorted by parent (stably), and where each parent's run
    starts (every parent has at least one child)."""
    order = np.argsort(parent_of, kind="stable")
    sorted_parents = parent_of[order]
    starts = np.flatnonzero(np.r_[True, sorted_parents[1:] != sorted_parents[:-1]])
    return order, starts


def _sum_children(child, grouping, axis):
    order, starts = grouping
    return np.add.reduceat(np.take(child, order, axis=axis), starts, axis=axis)


def tile_pairs(axes):
    return axes[0].n_tiles * axes[1].n_tiles


def search_memory(axes, n0, n1):
    """Bytes the search holds at its peak (see the module docstring)."""
    a0, a1 = axes
    L0, L1 = a0.plan.n_levels, a1.plan.n_levels
    widest = max(a0.level_width(j) + (a0.level_width(j - 1) if j else 0) for j in range(L0))
    # the split codes and flags, the frontier of best costs twice (the sums of the children
    # are made beside it), the dictionaries of X along the rows and of one row level
    return 2 * a0.n_tiles * a1.n_tiles + 16 * widest * a1.n_tiles + 8 * n0 * n1 * (L0 + L1 + 3)


def search_tiling_2d(axes, leaf_costs):
    """Best 2-D tiling: ``(chosen, value)``, ``chosen`` a list of ``(j0, j1, p0, p1)``
    arrays (the entries of the level pair ``(j0, j1)``), ``value`` the summed cost.

    ``leaf_costs(j0)``: the cost of every coefficient of axis-0 level ``j0``, an array of
    shape ``(L1, n0, n1)`` indexed by ``(j1, position0, position1)``.
    """
    ax0, ax1 = axes
    L0 = ax0.plan.n_levels
    best, code = {}, {}
    for l0 in ax0.layers:
        j0, a0 = l0
        if a0 == j0:
            # the rows of the layer: the single entries of level j0 (one tile each)
            costs = leaf_costs(j0)
            for old in [k for k in best if k[0][0] < j0 - 1]:
                del best[old]
        for l1 in ax1.layers:
            j1, a1 = l1
            options = []
            if a0 < j0:
                options.append(
                    (TIME_0, _sum_children(best[(j0, a0 + 1), l1], ax0.groups[j0, a0, "time"], 0))
                )
                options.append(
                    (FREQ_0, _sum_children(best[(j0 - 1, a0), l1], ax0.groups[j0, a0, "freq"], 0))
                )
            if a1 < j1:
                options.append(
                    (TIME_1, _sum_children(best[l0, (j1, a1 + 1)], ax1.groups[j1, a1, "time"], 1))
                )
                options.append(
                    (FREQ_1, _sum_children(best[l0, (j1 - 1, a1)], ax1.groups[j1, a1, "freq"], 1))
                )
            if not options:
                rep0, rep1 = ax0.rep[l0], ax1.rep[l1]
                best[l0, l1] = costs[j1][np.ix_(rep0, rep1)]
                code[l0, l1] = np.full((rep0.shape[0], rep1.shape[0]), -1, dtype=np.int8)
                continue
            value = options[0][1]
            which = np.full(value.shape, options[0][0], dtype=np.int8)
            for c, v in options[1:]:
                cheaper = v < value - TIE * np.abs(value)
                value = np.where(cheaper, v, value)
                which[cheaper] = c
            best[l0, l1] = value
            code[l0, l1] = which
    root0, root1 = (L0 - 1, 0), (ax1.plan.n_levels - 1, 0)
    total = float(best[root0, root1][0, 0])
    return _read_off(axes, code, root0, root1), total


def _read_off(axes, code, root0, root1):
    """Top down: a tile pair is in the tiling when a parent split it off."""
    ax0, ax1 = axes
    L0, L1 = ax0.plan.n_levels, ax1.plan.n_levels
    active = {}
    chosen = []
    for l0 in reversed(ax0.layers):
        j0, a0 = l0
        for l1 in reversed(ax1.layers):
            j1, a1 = l1
            on = np.zeros((ax0.size[l0], ax1.size[l1]), dtype=bool)
            if l0 == root0 and l1 == root1:
                on[:] = True
            if a0 >= 1:  # split in time along axis 0 from (j0, a0 - 1)
                p = (j0, a0 - 1), l1
                on |= (active[p] & (code[p] == TIME_0))[ax0.time[j0, a0], :]
            if j0 + 1 < L0:  # split in frequency along axis 0 from (j0 + 1, a0)
                p = (j0 + 1, a0), l1
                on |= (active[p] & (code[p] == FREQ_0))[ax0.freq[j0, a0], :]
            if a1 >= 1:
                p = l0, (j1, a1 - 1)
                on |= (active[p] & (code[p] == TIME_1))[:, ax1.time[j1, a1]]
            if j1 + 1 < L1:
                p = l0, (j1 + 1, a1)
                on |= (active[p] & (code[p] == FREQ_1))[:, ax1.freq[j1, a1]]
            active[l0, l1] = on
            if a0 == j0 and a1 == j1:
                i0, i1 = np.nonzero(on)
                if i0.shape[0]:
                    p0, p1 = ax0.rep[l0][i0], ax1.rep[l1][i1]
                    chosen.append((j0, j1, p0, p1))
    return chosen


def check_size(axes, n0, n1, max_tile_pairs):
    """Refuse, before anything is allocated, a search past the tile-pair limit or the
    memory budget."""
    pairs = tile_pairs(axes)
    if pairs > max_tile_pairs:
        raise MemoryError(
            f"The 2-D time-frequency tiling search of a {n0} x {n1} matrix has "
            f"{axes[0].n_tiles} x {axes[1].n_tiles} = {pairs} pairs of tiles, more than "
            f"max_tile_pairs={max_tile_pairs} (the search takes about 4 bytes and 150 ns per "
            f"pair); raise it, or use the separable "
            f"multi_best_wavelet_packet_basis(X, trees, direction='time-frequency')."
        )
    check_memory(
        search_memory(axes, n0, n1),
        f"The 2-D time-frequency tiling search of a {n0} x {n1} matrix ({pairs} tile pairs)",
    )
