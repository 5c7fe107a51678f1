"""The Haar-Walsh packet dictionary's plan of a tree: its binary regions, tags and butterflies.

The generalized Haar-Walsh transform needs a binary tree. A folder whose ``m >= 2``
children are sorted as the tree Haar basis sorts them (by size descending, ties: the child
later in the leaf order first), ``c_1, ..., c_m``, is split sequentially: ``c_1`` against
the rest, then ``c_2`` against the rest of that, down to ``c_{m-1}`` against ``c_m``; the
rests are the *remainder regions*. Split ``i`` of a folder is exactly the support and the
sign convention of the tree Haar vector ``psi_{F,i}``, so the Haar basis is a member of the
dictionary. One-child folders (chains) are the region of their child. Each binary split
lies one level below the previous one, so the binary depth of a region is its level in
the dictionary; a singleton reached above the deepest level is carried down unchanged.

Positions: the points are laid out in the *packet order* (the tree's depth-first order
with every folder's children in the sorted order), in which every region is a contiguous
slice. Level ``j`` of the dictionary holds ``n`` coefficients: each region of depth ``j``
(or carried singleton) on its own slice, its coefficients by increasing tag.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from .._kernels import _packets as _kernels
from .._validation import check_memory
from ._packet_slots import build_slots

# bytes per dictionary entry (level, position) of a plan while it is built: four index and
# four weight arrays for the two butterflies, the tag and the region of every entry (the
# plan keeps the butterflies of the positions that change only), and the in-place schedule
# (the slot of every entry, two slots and four weights per pair of entries)
PLAN_BYTES_PER_ENTRY = 112


@dataclass(frozen=True, eq=False)
class _PacketPlan:
    """The dictionary of one tree.

    ``order[p]``: the point at position ``p`` of the finest level. Between levels ``j`` and
    ``j + 1`` only the positions of the regions of depth ``j`` that split change (a carried
    singleton keeps its value): ``active[ptr[j]:ptr[j + 1]]``. At those positions the
    same slices of ``sa, sb, wa, wb`` build level ``j`` from level ``j + 1``, and of
    ``ia, ib, va, vb`` level ``j + 1`` from level ``j`` (positions are the same coordinates
    on every level, as every region keeps its slice). ``tag[j, p]``: the rank of the
    frequency tag of entry ``(j, p)`` among the tags of level ``j`` (the tag itself on a
    perfect dyadic tree); ``tag_parent[j][g]``: the tag at level ``j + 1`` from which tag
    ``g`` of level ``j`` is made. ``region_start[j]``, ``region_end[j]``: the regions of
    level ``j`` in position order, ``region_of[j, p]`` the region of entry ``(j, p)`` and
    ``region_parent[j][r]`` the region of level ``j - 1`` holding region ``r`` (level
    ``j >= 1``). ``haar_levels, haar_positions``: the entries of the tree Haar basis in the
    canonical coefficient order of :func:`~skorg.transforms.haar_transform`. ``slots``:
    the in-place schedule of the levels (:mod:`._packet_slots`).
    """

    n: int
    n_levels: int
    order: np.ndarray
    ptr: np.ndarray
    active: np.ndarray
    sa: np.ndarray
    sb: np.ndarray
    wa: np.ndarray
    wb: np.ndarray
    ia: np.ndarray
    ib: np.ndarray
    va: np.ndarray
    vb: np.ndarray
    tag: np.ndarray
    n_tags: np.ndarray
    tag_parent: tuple
    region_start: tuple
    region_end: tuple
    region_of: np.ndarray
    region_parent: tuple
    haar_levels: np.ndarray
    haar_positions: np.ndarray
    slots: object


def _sorted_children(tree):
    """Children of the folders of two or more children in the tree Haar order, with their
    rank in the family, the family's size and the offset of the child inside its folder."""
    n_children = tree.n_children
    parent = np.asarray(tree.parent)
    size = np.asarray(tree.size)
    kids = np.arange(1, tree.n_nodes)
    kids = kids[np.lexsort((-kids, -size[kids], parent[kids]))]
    par = parent[kids]
    group_start = np.flatnonzero(np.r_[kids.shape[0] > 0, par[1:] != par[:-1]])
    group_len = np.diff(np.r_[group_start, kids.shape[0]])
    rank = np.arange(kids.shape[0]) - np.repeat(group_start, group_len)
    csum = np.cumsum(size[kids])
    before = csum - size[kids] - np.repeat(csum[group_start] - size[kids[group_start]], group_len)
    m = n_children[par]
    return kids, par, rank, m, before


def dictionary_levels(tree):
    """The number of levels of the packet dictionary of ``tree`` (binary depth + 1)."""
    return _layout(tree)[4] + 1


def _layout(tree):
    """Packet position and binary depth of every node, and the splits (start, mid, end, depth,
    folder, rank) in the order of the sorted children."""
    kids, par, rank, m, before = _sorted_children(tree)
    n_nodes = tree.n_nodes
    offset = np.zeros(n_nodes, dtype=np.intp)
    step = np.zeros(n_nodes, dtype=np.intp)
    offset[kids] = before
    step[kids] = np.where(m >= 2, np.minimum(rank + 1, m - 1), 0)
    pstart = np.zeros(n_nodes, dtype=np.intp)
    depth = np.zeros(n_nodes, dtype=np.intp)
    parent = np.asarray(tree.parent)
    for lvl in range(1, tree.n_levels):
        nodes = tree.level_nodes(lvl)
        pstart[nodes] = pstart[parent[nodes]] + offset[nodes]
        depth[nodes] = depth[parent[nodes]] + step[nodes]
    size = np.asarray(tree.size)
    split = (m >= 2) & (rank < m - 1)
    sk, sp = kids[split], par[split]
    splits = (
        pstart[sk],
        pstart[sk] + size[sk],
        pstart[sp] + size[sp],
        depth[sp] + rank[split],
        sp,
        rank[split],
    )
    leaves = tree.level_nodes(tree.n_levels - 1)
    n_deep = int(depth[leaves].max()) if leaves.shape[0] else 0
    return pstart, depth, splits, leaves, n_deep


def _build_plan(tree):
    n = tree.n_points
    pstart, depth, splits, leaves, n_deep = _layout(tree)
    n_levels = n_deep + 1
    check_memory(
        PLAN_BYTES_PER_ENTRY * n * n_levels,
        f"The Haar-Walsh packet dictionary of a tree on {n} points with {n_levels} levels",
    )
    order = np.empty(n, dtype=np.intp)
    order[pstart[leaves]] = np.asarray(tree.leaf_order)[np.asarray(tree.start)[leaves]]
    s_start, s_mid, s_end, s_depth = splits[:4]
    by_depth = np.argsort(s_depth, kind="stable")
    split_ptr = np.searchsorted(s_depth[by_depth], np.arange(n_levels + 1))
    leaf_pos, leaf_depth = pstart[leaves], depth[leaves]
    leaf_by_depth = np.argsort(leaf_depth, kind="stable")
    leaf_ptr = np.searchsorted(leaf_depth[leaf_by_depth], np.arange(n_levels), side="right")

    n_fine = max(n_levels - 1, 0)
    sa = np.empty((n_fine, n), dtype=np.intp)
    sb = np.empty((n_fine, n), dtype=np.intp)
    wa = np.empty((n_fine, n), dtype=np.float64)
    wb = np.empty((n_fine, n), dtype=np.float64)
    tag = np.zeros((n_levels, n), dtype=np.intp)
    region_of = np.empty((n_levels, n), dtype=np.intp)
    n_tags = np.ones(n_levels, dtype=np.intp)
    tag_parent = [None] * n_fine
    region_start, region_end, region_parent = [], [], [None]
    region_mid = []
    for j in range(n_levels):
        pick = by_depth[split_ptr[j] : split_ptr[j + 1]]
        carried = leaf_pos[leaf_by_depth[: leaf_ptr[j]]]
        rs = np.concatenate([s_start[pick], carried])
        rm = np.concatenate([s_mid[pick], carried + 1])
        re = np.concatenate([s_end[pick], carried + 1])
        srt = np.argsort(rs, kind="stable")
        rs, rm, re = rs[srt], rm[srt], re[srt]
        region_start.append(rs)
        region_end.append(re)
        region_mid.append(rm)
        region_of[j] = np.repeat(np.arange(rs.shape[0]), re - rs)
        if j:
            region_parent.append(region_of[j - 1][rs])
    key = np.empty(n, dtype=np.intp)
    odd = np.zeros(n, dtype=np.bool_)  # the tags of the finest level: all 0
    present = np.zeros(2 * n + 2, dtype=bool)
    for j in range(n_levels - 2, -1, -1):
        _kernels.merge_level(
            region_start[j],
            region_mid[j],
            region_end[j],
            tag[j + 1],
            odd,
            sa[j],
            sb[j],
            wa[j],
            wb[j],
            key,
        )
        odd = (key & 1).astype(np.bool_)
        present[:] = False
        present[key] = True
        rank = np.cumsum(present) - 1
        tag[j] = rank[key]
        n_tags[j] = int(rank[-1]) + 1
        parent_tag = np.empty(n_tags[j], dtype=np.intp)
        parent_tag[tag[j]] = tag[j + 1][sa[j]]
        tag_parent[j] = parent_tag
    ia, ib, va, vb = _inverse(sa, sb, wa, wb, n)
    # keep the positions that change between levels: those of the regions that split
    active = [
        np.flatnonzero(np.repeat(region_mid[j] < region_end[j], region_end[j] - region_start[j]))
        for j in range(n_fine)
    ]
    ptr = np.zeros(n_fine + 1, dtype=np.intp)
    ptr[1:] = np.cumsum([a.shape[0] for a in active])
    flat = np.concatenate(active) if n_fine else np.zeros(0, dtype=np.intp)

    def pick(arr):
        if not n_fine:
            return np.zeros(0, dtype=arr.dtype)
        return np.ascontiguousarray(np.concatenate([arr[j][active[j]] for j in range(n_fine)]))

    sa, sb, wa, wb, ia, ib, va, vb = (pick(a) for a in (sa, sb, wa, wb, ia, ib, va, vb))
    flat = flat.astype(np.intp)
    slots = build_slots(n, n_levels, ptr, flat, sa, sb, wa, wb, region_of, region_end)
    # the tree Haar basis in the canonical order: psi_0, then the folders' splits
    haar_levels, haar_positions = _haar_entries(tree, splits, n)
    return _PacketPlan(
        n=n,
        n_levels=n_levels,
        order=order,
        ptr=ptr,
        active=flat,
        sa=sa,
        sb=sb,
        wa=wa,
        wb=wb,
        ia=ia,
        ib=ib,
        va=va,
        vb=vb,
        tag=tag,
        n_tags=n_tags,
        tag_parent=tuple(tag_parent),
        region_start=tuple(region_start),
        region_end=tuple(region_end),
        region_of=region_of,
        region_parent=tuple(region_parent),
        haar_levels=haar_levels,
        haar_positions=haar_positions,
        slots=slots,
    )


def _inverse(sa, sb, wa, wb, n):
    """The butterflies back: every entry of level ``j + 1`` feeds one or two of level ``j``."""
    shape = sa.shape
    ia = np.empty(shape, dtype=np.intp)
    ib = np.empty(shape, dtype=np.intp)
    va = np.empty(shape, dtype=np.float64)
    vb = np.zeros(shape, dtype=np.float64)
    positions = np.arange(n)
    for j in range(shape[0]):
        paired = wb[j] != 0.0
        q = np.concatenate([sa[j], sb[j][paired]])
        p = np.concatenate([positions, positions[paired]])
        w = np.concatenate([wa[j], wb[j][paired]])
        srt = np.argsort(q, kind="stable")
        q, p, w = q[srt], p[srt], w[srt]
        first = np.r_[True, q[1:] != q[:-1]]
        head = np.flatnonzero(first)
        ia[j] = p[head]
        va[j] = w[head]
        ib[j] = p[head]
        second = np.flatnonzero(~first)
        ib[j][q[second]] = p[second]
        vb[j][q[second]] = w[second]
    return ia, ib, va, vb


def _haar_entries(tree, splits, n):
    """(level, position) of the tree Haar vectors, in :func:`haar_transform`'s order."""
    s_start, _, _, s_depth, s_folder, s_rank = splits
    # haar_transform's order: the folders by node id, the rank within a folder
    srt = np.lexsort((s_rank, s_folder))
    levels = np.r_[0, s_depth[srt]].astype(np.intp)
    # the Haar vector of a split is its region's tag-1 entry, one after the region's start
    positions = np.r_[0, s_start[srt] + 1].astype(np.intp)
    return levels, positions


_PLAN_CACHE: OrderedDict = OrderedDict()
_PLAN_CACHE_SIZE = 32
_PLAN_LOCK = threading.Lock()


def get_packet_plan(tree):
    """The (cached) packet plan of a tree; the cache keeps the tree so its id stays unique."""
    key = id(tree)
    with _PLAN_LOCK:
        hit = _PLAN_CACHE.get(key)
        if hit is not None and hit[0] is tree:
            _PLAN_CACHE.move_to_end(key)
            return hit[1]
    plan = _build_plan(tree)
    with _PLAN_LOCK:
        _PLAN_CACHE[key] = (tree, plan)
        if len(_PLAN_CACHE) > _PLAN_CACHE_SIZE:
            _PLAN_CACHE.popitem(last=False)
    return plan
