"""The time-frequency adapted best basis of the Haar-Walsh packets (the eGHWT search).

A *tile* ``(j, a, r, g)`` is the span of the level-``j`` entries of tag ``g`` that lie in
region ``r`` of level ``a <= j`` (positions are the same coordinates on every level, so the
region of level ``a`` holding entry ``(j, p)`` is ``region_of[a, p]``). A tile with
``a == j`` is one entry. A tile with ``a < j`` splits two ways into tiles of the same span:
in *time*, into the tiles ``(j, a + 1, r', g)`` of the regions ``r'`` of level ``a + 1``
inside ``r``; in *frequency*, into the tiles ``(j - 1, a, r, g')`` of the tags ``g'`` made
from ``g`` (the butterflies between levels ``j`` and ``j - 1`` act inside the regions of
level ``j - 1``, which lie inside ``r``). The whole space is the tile ``(J, 0, 0, 0)``. Both
searches of :mod:`skorg.transforms._packet_basis` choose among a part of these tilings
(regions: time splits, then frequency splits to the bottom; tags: frequency splits first);
this search takes the best of all of them (Shao and Saito, "The extended generalized
Haar-Walsh transform and applications", 2021), by the same bottom-up rule. Only tiles that
hold entries are listed: at most ``n (j + 1)`` for level ``j``, ``n L (L + 1) / 2`` in all
for ``L`` levels (``O(n log^2 n)`` on a balanced tree).
"""

from __future__ import annotations

import numpy as np

from .._validation import check_memory

__all__: list[str] = []


def _tiles(plan):
    """For every ``(j, a)``: the tile of every position of level ``j`` (``inv``) and one
    position per tile (``rep``)."""
    L, n = plan.n_levels, plan.n
    check_memory(
        24 * n * L * (L + 1) // 2,
        f"The time-frequency tiles of a {n}-point dictionary of {L} levels",
    )
    inv, rep = {}, {}
    for j in range(L):
        T = int(plan.n_tags[j])
        for a in range(j + 1):
            key = plan.region_of[a] * T + plan.tag[j]
            _, first, where = np.unique(key, return_index=True, return_inverse=True)
            inv[j, a] = where.reshape(-1)
            rep[j, a] = first
    return inv, rep


def _links(plan, inv, rep):
    """Parent tiles: ``time[j, a]`` maps the tiles of ``(j, a)`` (``a >= 1``) to those of
    ``(j, a - 1)``; ``freq[j, a]`` those of ``(j, a)`` (``j < L - 1``) to ``(j + 1, a)``."""
    L = plan.n_levels
    time, freq = {}, {}
    for j in range(L):
        for a in range(j + 1):
            p = rep[j, a]
            if a >= 1:
                time[j, a] = inv[j, a - 1][p]
            if j + 1 < L:
                # the tag of level j + 1 that tag g of level j is made from, same region
                parent_tag = plan.tag_parent[j][plan.tag[j][p]]
                T = int(plan.n_tags[j + 1])
                key = plan.region_of[a][p] * T + parent_tag
                # the parent tile's key among those of (j + 1, a): found through any of its
                # positions, the representative's key table
                rkey = plan.region_of[a][rep[j + 1, a]] * T + plan.tag[j + 1][rep[j + 1, a]]
                freq[j, a] = np.searchsorted(rkey, key)
    return time, freq


def search_tiling(plan, table):
    """Best time-frequency tiling: ``(chosen mask, cost)``; ties keep the time split."""
    L = plan.n_levels
    inv, rep = _tiles(plan)
    time, freq = _links(plan, inv, rep)
    best, by_time = {}, {}
    for j in range(L):
        for a in range(j, -1, -1):
            if a == j:
                best[j, a] = table[j][rep[j, a]]
                continue
            m = rep[j, a].shape[0]
            t = np.bincount(time[j, a + 1], weights=best[j, a + 1], minlength=m)
            f = np.bincount(freq[j - 1, a], weights=best[j - 1, a], minlength=m)
            by_time[j, a] = t <= f
            best[j, a] = np.where(by_time[j, a], t, f)
    # top down: a tile is taken when its time parent split in time or its frequency parent
    # in frequency (levels from the finest, the regions' levels from the root)
    chosen = np.zeros((L, plan.n), dtype=bool)
    active = {}
    for j in range(L - 1, -1, -1):
        for a in range(j + 1):
            on = np.zeros(rep[j, a].shape[0], dtype=bool)
            if j == L - 1 and a == 0:
                on[:] = True  # the whole space
            if a >= 1:
                on |= (active[j, a - 1] & by_time[j, a - 1])[time[j, a]]
            if j + 1 < L:
                on |= (active[j + 1, a] & ~by_time[j + 1, a])[freq[j, a]]
            active[j, a] = on
            if a == j:
                chosen[j, rep[j, a][on]] = True
    return chosen, float(best[L - 1, 0][0])


def covers_tiling(plan, chosen):
    """Whether the entries of ``chosen`` (n of them, distinct) tile the whole space."""
    L = plan.n_levels
    inv, rep = _tiles(plan)
    time, freq = _links(plan, inv, rep)
    covered = {}
    for j in range(L):
        for a in range(j, -1, -1):
            if a == j:
                covered[j, a] = chosen[j][rep[j, a]]
                continue
            m = rep[j, a].shape[0]
            t_missing = np.bincount(time[j, a + 1], weights=~covered[j, a + 1], minlength=m)
            f_missing = np.bincount(freq[j - 1, a], weights=~covered[j - 1, a], minlength=m)
            covered[j, a] = (t_missing == 0) | (f_missing == 0)
    return bool(covered[L - 1, 0][0])
