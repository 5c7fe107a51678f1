"""Flat clusters from a partition tree: the folders of a top-down cut into k groups."""

from __future__ import annotations

import heapq
from numbers import Integral

import numpy as np

__all__ = ["cut_tree_labels", "linkage_node_heights"]


def _check_n_clusters(n_clusters, n_points):
    if isinstance(n_clusters, (bool, np.bool_)) or not isinstance(n_clusters, Integral):
        raise TypeError(f"n_clusters must be an integer, got {n_clusters!r}.")
    n_clusters = int(n_clusters)
    if not 1 <= n_clusters <= n_points:
        raise ValueError(
            f"n_clusters must be between 1 and the number of points ({n_points}), got {n_clusters}."
        )
    return n_clusters


def linkage_node_heights(tree, Z, first):
    """Merge height of every node of ``tree`` built from the linkage ``Z``.

    ``first[c]`` is the first leaf position of linkage cluster ``c`` (points ``0..n-1``, then
    merge ``k`` as cluster ``n + k``). A node holding one point has height 0; every other
    node is a merge of the linkage (a tree from a linkage chains only single points).
    """
    n = tree.n_points
    heights = np.zeros(tree.n_nodes, dtype=np.float64)
    if n < 2:
        return heights
    # the node of a merge is the folder of its size starting at its first position
    sizes = Z[:, 3].astype(np.intp)
    starts = first[n:]
    internal = np.flatnonzero(tree.size > 1)
    key = tree.start[internal] * (n + 1) + tree.size[internal]
    order = np.argsort(key)
    found = order[np.searchsorted(key[order], starts * (n + 1) + sizes)]
    heights[internal[found]] = Z[:, 2]
    return heights


def cut_tree_labels(tree, n_clusters, heights=None):
    """Labels of the points after splitting ``tree`` top-down into ``n_clusters`` folders.

    Folders are split one at a time, starting from the root, in order of priority: the
    highest merge height first when ``heights`` is given (then as below), else the coarsest
    level first, then the largest folder, then the leftmost. A folder with one child is the
    same set of points further down and is followed to its first split without counting. A
    split that would pass ``n_clusters`` is skipped (a folder with fewer children may still
    reach the count exactly). When no split reaches the count exactly, the result is the
    count nearest to it: the partition reached, or that partition with the smallest skipped
    split, whichever is nearer; a tie keeps the smaller count (as SciPy's ``maxclust``).

    Returns labels 0..k-1 numbered left to right along ``tree.leaf_order``.
    """
    n = tree.n_points
    n_clusters = _check_n_clusters(n_clusters, n)
    n_children = tree.n_children
    height = np.zeros(tree.n_nodes) if heights is None else heights

    def entry(node):
        node = int(node)
        return (-float(height[node]), int(tree.level[node]), -int(tree.size[node]), node)

    frontier = [entry(0)]
    final = []  # folders kept whole: leaves and skipped splits
    skipped = []  # (extra folders the split would add, node) of skipped splits
    count = 1
    while frontier and count < n_clusters:
        node = heapq.heappop(frontier)[3]
        kids = n_children[node]
        if kids == 0:
            final.append(node)
        elif kids == 1:
            heapq.heappush(frontier, entry(tree.child_ptr[node]))
        elif count + kids - 1 <= n_clusters:
            count += kids - 1
            for child in tree.children(node):
                heapq.heappush(frontier, entry(child))
        else:
            final.append(node)
            skipped.append((kids - 1, node))
    folders = final + [item[3] for item in frontier]
    if count < n_clusters and skipped:
        extra, node = min(skipped)
        if count + extra - n_clusters < n_clusters - count:
            folders.remove(node)
            folders.extend(tree.children(node).tolist())
    folders = np.array(sorted(folders, key=lambda v: tree.start[v]), dtype=np.intp)
    labels = np.empty(n, dtype=np.intp)
    labels[tree.leaf_order] = np.repeat(np.arange(folders.shape[0]), tree.size[folders])
    return labels
