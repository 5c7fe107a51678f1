"""The tree Haar transforms' plan of a tree: its coefficients and the kernels' node arrays.

A plan lists the detail coefficients in coefficient order (folder, '+' child, weights) and
describes the tree to the kernels (:mod:`skorg._kernels._haar` and its siblings): internal
nodes first in breadth-first order, children after their parent, every node's children a
contiguous run of ids (``child_span``), and the leaves last, in leaf order.

A tree's level representation pads every branch to the deepest level with one-child folders
(chains): a leaf merged early sits at the bottom of a chain as long as the tree is deep. A
chain folder holds the same points as its child, so its sum is its child's and it carries no
coefficient; the kernels' nodes leave the chains out (each stands for the node at its
bottom), which on linkage trees and the questionnaire's binary trees removes four in five
nodes. One chain node is kept above a leaf whose siblings include folders (a *holder*), so
that every node's children are either all leaves or all folders, as the block kernels read
them. The sums are the same numbers (a chain adds nothing), so the coefficients are too.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from .._kernels import _haar_slots as _slot_kernels

_ORDERS = ("bfs", "reference")


@dataclass(frozen=True)
class _HaarPlan:
    """Per-coefficient arrays of the Haar basis of one tree in one coefficient order.

    Detail coefficient ``k`` (coefficient ``k + 1`` overall, after psi_0) lives on folder
    ``tree_cnode[k]`` of the tree with '+' child ``tree_cplus[k]`` of size ``s`` and the rest
    of the folder (size ``M``): ``wplus = M / N`` and ``wminus = s / N`` with
    ``N = sqrt(s M (s + M))``. The kernels' nodes (chains left out, see the module notes):
    ``child_span[v]`` the ids of node ``v``'s children (``[first, last + 1)``), ``parent``,
    ``first_leaf`` (the id of the leaf at position 0; leaves are the last ``n`` ids), and per
    coefficient ``cnode`` (its folder), ``cplus`` (its '+' child) and ``clast`` (the last
    sorted child of the folder on its final coefficient, -1 before). ``leaf_rank`` is the
    inverse of ``leaf_order`` (the tree's ``leaf_position``): the leaf position of every
    point.
    """

    leaf_order: np.ndarray
    leaf_rank: np.ndarray
    child_span: np.ndarray
    parent: np.ndarray
    first_leaf: int
    cnode: np.ndarray
    cplus: np.ndarray
    clast: np.ndarray
    wplus: np.ndarray
    wminus: np.ndarray
    rank: np.ndarray
    plus_size: np.ndarray
    minus_size: np.ndarray
    tree_cnode: np.ndarray
    tree_cplus: np.ndarray
    dyadic: bool = False
    identity: bool = False  # the leaf order is 0..n-1

    @functools.cached_property
    def slot_args(self):
        """``(post, pre, fslot, n_fslots, islot, n_islots, kstart, kend)``: the depth-first
        schedule of the kernels across rows (skorg._kernels._haar_slots), made on first use."""
        return _slot_kernels.slot_plan(self.child_span, self.first_leaf, self.cnode)

    def kernel_args(self):
        return (
            self.leaf_order,
            self.child_span,
            self.parent,
            self.first_leaf,
            self.cnode,
            self.cplus,
            self.clast,
            self.wplus,
            self.wminus,
        )


def _node_order(tree, order):
    """Rank of every node in the folder order of the coefficients."""
    if order == "bfs":
        return np.arange(tree.n_nodes)
    # reference: by level, then by the smallest point index the folder holds
    min_point = np.empty(tree.n_nodes, dtype=np.intp)
    for lvl in range(tree.n_levels):
        nodes = tree.level_nodes(lvl)
        min_point[nodes] = np.minimum.reduceat(tree.leaf_order, tree.start[nodes])
    rank = np.empty(tree.n_nodes, dtype=np.intp)
    rank[np.lexsort((min_point, tree.level))] = np.arange(tree.n_nodes)
    return rank


def _tree_nodes(tree):
    """The kernels' nodes of a tree taken as it is (see :func:`_contracted_nodes`)."""
    child_ptr = np.asarray(tree.child_ptr, dtype=np.intp)
    span = np.ascontiguousarray(np.column_stack([child_ptr[:-1], child_ptr[1:]]))
    first_leaf = int(tree.level_ptr[tree.n_levels - 1])
    same = np.arange(tree.n_nodes)
    return same, same, span, np.array(tree.parent, dtype=np.intp), first_leaf


def _contracted_nodes(tree):
    """The kernels' nodes with the one-child chains left out (see the module notes):
    ``(new_id, stand_in, child_span, parent, first_leaf)``. ``new_id[v]`` is the kernels' id
    of tree node ``v`` if it is kept (-1 for the chain nodes left out); a child ``c`` of a
    folder with two or more children is stood for in its family by tree node
    ``stand_in[c]`` (the bottom of its chain, or ``c`` itself for a holder). The tree's own
    nodes when it has no chains.

    The kept folders are numbered in the order of the tree nodes they stand in for: the
    children of every folder are one run of the tree's ids, ordered as their parents, so each
    family gets consecutive ids, after its parent's.
    """
    child_ptr = np.asarray(tree.child_ptr, dtype=np.intp)
    parent = np.asarray(tree.parent, dtype=np.intp)
    n_children = np.diff(child_ptr)
    n_nodes, n = tree.n_nodes, tree.n_points
    first_leaf = int(tree.level_ptr[tree.n_levels - 1])
    if first_leaf == 0 or not np.any(n_children[:first_leaf] == 1):
        return _tree_nodes(tree)
    # the bottom of every chain (a node that is no chain is its own), by pointer jumping
    bottom = np.where(n_children == 1, child_ptr[:-1], np.arange(n_nodes))
    while True:
        deeper = bottom[bottom]
        if np.array_equal(deeper, bottom):
            break
        bottom = deeper
    if n == 1:  # a chain down to one point: the kernels' tree is its leaf
        new_id = np.where(np.arange(n_nodes) >= first_leaf, 0, -1).astype(np.intp)
        return new_id, bottom, np.zeros((1, 2), dtype=np.intp), np.full(1, -1, np.intp), 0
    # the families: the children of folders with two or more children, in id order
    kids = np.arange(1, n_nodes)
    kids = kids[n_children[parent[kids]] >= 2]
    to_leaf = bottom[kids] >= first_leaf
    has_folder = np.zeros(n_nodes, dtype=bool)
    has_folder[parent[kids[~to_leaf]]] = True
    holders = kids[to_leaf & has_folder[parent[kids]]]
    stand_in = bottom.copy()
    stand_in[holders] = holders
    members = stand_in[kids]
    folders = members[members < first_leaf]
    n_internal = 1 + folders.shape[0]
    root = bottom[0]
    new_id = np.full(n_nodes, -1, dtype=np.intp)
    new_id[root] = 0
    new_id[folders] = np.arange(1, n_internal)
    new_id[first_leaf:] = n_internal + np.arange(n)
    span = np.zeros((n_internal + n, 2), dtype=np.intp)
    new_parent = np.full(n_internal + n, -1, dtype=np.intp)
    new_parent[new_id[members]] = new_id[parent[kids]]
    branching = np.flatnonzero(n_children >= 2)
    span[new_id[branching], 0] = new_id[stand_in[child_ptr[branching]]]
    span[new_id[branching], 1] = new_id[stand_in[child_ptr[branching + 1] - 1]] + 1
    leaves = new_id[bottom[holders]]
    span[new_id[holders], 0] = leaves
    span[new_id[holders], 1] = leaves + 1
    new_parent[leaves] = new_id[holders]
    return new_id, stand_in, span, new_parent, n_internal


def _build_plan(tree, order, contract=True):
    n_children = tree.n_children
    node_rank = _node_order(tree, order)
    kids = np.arange(1, tree.n_nodes)
    kids = kids[n_children[tree.parent[kids]] >= 2]
    # children by size descending; among equal sizes the later child (larger id) first
    kids = kids[np.lexsort((-kids, -tree.size[kids], node_rank[tree.parent[kids]]))]
    par = tree.parent[kids]
    group_start = np.flatnonzero(np.r_[kids.shape[0] > 0, par[1:] != par[:-1]])
    group_len = np.diff(np.r_[group_start, kids.shape[0]])
    offset = np.repeat(group_start, group_len)
    rank = np.arange(kids.shape[0]) - offset
    sizes = tree.size[kids]
    csum = np.cumsum(sizes)
    done = csum - np.repeat(csum[group_start] - sizes[group_start], group_len)
    is_coef = rank < np.repeat(group_len, group_len) - 1
    s = sizes[is_coef].astype(np.float64)
    m = (tree.size[par] - done)[is_coef].astype(np.float64)
    norm = np.sqrt(s * m * (s + m))
    clast = np.full(s.shape[0], -1, dtype=np.intp)
    clast[np.cumsum(group_len - 1) - 1] = kids[group_start + group_len - 1]
    cnode = np.ascontiguousarray(par[is_coef], dtype=np.intp)
    cplus = np.ascontiguousarray(kids[is_coef], dtype=np.intp)
    first_leaf = int(tree.level_ptr[tree.n_levels - 1])
    nodes = _contracted_nodes if contract else _tree_nodes
    new_id, stand_in, span, parent, k_first_leaf = nodes(tree)
    return _HaarPlan(
        # writeable copies: the kernels are compiled for writeable index arrays
        leaf_order=np.array(tree.leaf_order, dtype=np.intp),
        leaf_rank=np.array(tree.leaf_position, dtype=np.intp),
        child_span=span,
        parent=parent,
        first_leaf=k_first_leaf,
        cnode=new_id[cnode],
        cplus=new_id[stand_in[cplus]],
        clast=np.where(clast >= 0, new_id[stand_in[np.maximum(clast, 0)]], -1).astype(np.intp),
        wplus=m / norm,
        wminus=s / norm,
        rank=rank[is_coef].astype(np.intp),
        plus_size=sizes[is_coef].astype(np.intp),
        minus_size=m.astype(np.intp),
        tree_cnode=cnode,
        tree_cplus=cplus,
        dyadic=_is_perfect_binary(tree, first_leaf, cnode, cplus),
        identity=bool(np.array_equal(tree.leaf_order, np.arange(tree.n_points))),
    )


def _is_perfect_binary(tree, first_leaf, cnode, cplus):
    """A perfect binary tree in canonical coefficient order, where the lifting kernels apply.

    Then node ``k``'s children are ``2k + 1`` and ``2k + 2``, coefficient ``k`` is on folder
    ``k`` and its '+' child is ``2k + 2`` (the later of two equal halves).
    """
    n = tree.n_points
    if n < 2 or n & (n - 1) or first_leaf != n - 1 or tree.n_nodes != 2 * n - 1:
        return False
    k = np.arange(n - 1)
    return bool(
        np.array_equal(np.asarray(tree.child_ptr)[:n], 2 * np.arange(n) + 1)
        and np.array_equal(cnode, k)
        and np.array_equal(cplus, 2 * k + 2)
    )


_PLAN_CACHE: OrderedDict = OrderedDict()
_PLAN_CACHE_SIZE = 64
# the cache is shared by all threads. Insertions and evictions hold the lock; a lookup does
# not (each OrderedDict operation is atomic), but another thread may evict the entry between
# its get and its move_to_end, a KeyError it can ignore: it holds the plan. Plans are built
# outside the lock, so threads building plans for different trees do not wait for each other.
_PLAN_LOCK = threading.Lock()


def _get_plan(tree, order="bfs"):
    if order not in _ORDERS:
        raise ValueError(f"order must be one of {_ORDERS}, got {order!r}.")
    key = (id(tree), order)
    hit = _PLAN_CACHE.get(key)
    # the tree is kept in the entry so that its id cannot be reused while cached
    if hit is not None and hit[0] is tree:
        try:
            _PLAN_CACHE.move_to_end(key)
        except KeyError:  # evicted by another thread since the get
            pass
        return hit[1]
    plan = _build_plan(tree, order)
    with _PLAN_LOCK:
        _PLAN_CACHE[key] = (tree, plan)
        if len(_PLAN_CACHE) > _PLAN_CACHE_SIZE:
            _PLAN_CACHE.popitem(last=False)
    return plan
