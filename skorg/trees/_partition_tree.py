"""The flat-array partition tree."""

from __future__ import annotations

from itertools import pairwise

import numpy as np

from ._cut import cut_tree_labels, linkage_node_heights
from ._reorder import reorder_children

__all__ = ["PartitionTree"]


def _as_int_array(values, name, ndim):
    arr = np.asarray(values)
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D integer array, got shape {arr.shape}.")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if (
            not np.issubdtype(arr.dtype, np.floating)
            or not np.all(np.isfinite(arr))
            or not np.all(arr == np.round(arr))
        ):
            raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}.")
    return arr.astype(np.intp, copy=False)


def _check_permutation(order, n, name="leaf_order"):
    order = _as_int_array(order, name, 1)
    if order.shape[0] != n or not np.array_equal(np.sort(order), np.arange(n)):
        raise ValueError(
            f"{name} must be a permutation of 0..{n - 1}, got {order.shape[0]} values."
        )
    return order


def _all_distinct(values):
    """True if no value occurs twice in the 1-D integer array."""
    if values.shape[0] < 2:
        return True
    srt = np.sort(values)
    return not np.any(srt[1:] == srt[:-1])


def _run_starts(ordered):
    """Boolean (n_levels, n): True where a run of equal labels starts along each row."""
    new_run = np.empty(ordered.shape, dtype=bool)
    new_run[:, 0] = True
    np.not_equal(ordered[:, 1:], ordered[:, :-1], out=new_run[:, 1:])
    return new_run


class PartitionTree:
    """A rooted partition tree stored as flat arrays.

    Every level of the tree is a partition of the points ``0 .. n_points - 1``:
    level 0 is the root (one folder holding every point), the last level holds
    the ``n_points`` singletons and each folder lies inside exactly one folder
    of the level above. All leaves sit at the same depth; a folder that does
    not merge with anything at some level has a single child (such chains count
    in tree EMD sums and add no Haar vectors).

    One depth-first leaf order ``leaf_order`` makes every folder a contiguous
    slice ``leaf_order[start[node]:end[node]]``. Nodes are numbered in
    breadth-first order: by level, then left to right along ``leaf_order``, so
    the root is node 0, the nodes of a level are a contiguous id range
    (``level_ptr``) and the children of a node are a contiguous id range
    (``child_ptr``).

    Build trees with :meth:`from_levels`, :meth:`from_linkage`,
    :func:`~skorg.trees.dyadic_tree` or :func:`~skorg.trees.flexible_tree`;
    ``__init__`` is the low-level constructor and validates its arrays.

    Parameters
    ----------
    leaf_order : array-like of shape (n_points,)
        Point indices left to right.
    level_bounds : sequence of array-like
        For each level, root first, the sorted start positions (in
        ``leaf_order``) of its folders. ``level_bounds[0]`` is ``[0]``; the
        last level is ``range(n_points)``; each level's starts contain the
        starts of the level above.

    Attributes
    ----------
    n_points : int
    n_nodes : int
    n_levels : int
        Number of levels, root and leaves included (depth + 1).
    leaf_order : ndarray of shape (n_points,)
    start, end, size : ndarray of shape (n_nodes,)
        Folder ``node`` holds ``leaf_order[start[node]:end[node]]``.
    level : ndarray of shape (n_nodes,)
        0 for the root, ``n_levels - 1`` for the leaves.
    parent : ndarray of shape (n_nodes,)
        Parent node id, -1 for the root.
    child_ptr : ndarray of shape (n_nodes + 1,)
        Children of ``node`` are ``range(child_ptr[node], child_ptr[node + 1])``.
    level_ptr : ndarray of shape (n_levels + 1,)
        Nodes of level ``l`` are ``range(level_ptr[l], level_ptr[l + 1])``.
    leaf_position : ndarray of shape (n_points,)
        Inverse of ``leaf_order``: the position of each point.
    merge_height : ndarray of shape (n_nodes,) or None
        The height at which every folder was merged, for a tree built by
        :meth:`from_linkage` (0 for single points); None for other trees. :meth:`cut`
        splits the highest merges first when it is set.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import PartitionTree
    >>> tree = PartitionTree.from_levels([[0, 0, 0, 0], [0, 1, 0, 1], [0, 2, 1, 3]])
    >>> tree.leaf_order
    array([0, 2, 1, 3])
    >>> tree.n_nodes, tree.n_levels
    (7, 3)
    >>> tree.to_levels()[1]
    array([0, 1, 0, 1])
    """

    def __init__(self, leaf_order, level_bounds):
        leaf_order = _as_int_array(leaf_order, "leaf_order", 1)
        n = leaf_order.shape[0]
        if n < 1:
            raise ValueError("A partition tree needs at least one point.")
        leaf_order = _check_permutation(leaf_order, n)
        bounds = [_as_int_array(b, "level_bounds[i]", 1) for b in level_bounds]
        if len(bounds) < 1:
            raise ValueError("level_bounds must hold at least one level.")
        if not np.array_equal(bounds[0], [0]):
            raise ValueError("The first level must be the root: level_bounds[0] == [0].")
        if not np.array_equal(bounds[-1], np.arange(n)):
            raise ValueError(
                "The last level must hold the singletons: level_bounds[-1] == range(n)."
            )
        for lvl, (coarse, fine) in enumerate(pairwise(bounds)):
            if np.any(np.diff(fine) <= 0) or fine[0] != 0 or fine[-1] >= n:
                raise ValueError(f"level_bounds[{lvl + 1}] must be increasing starts in [0, n).")
            if not np.all(np.isin(coarse, fine)):
                raise ValueError(
                    f"Level {lvl + 1} does not refine level {lvl}: every folder start of a level "
                    "must also start a folder on the next level."
                )
        if n > 1 and len(bounds) < 2:
            raise ValueError("A tree on more than one point needs a root and a leaf level.")
        self._build(leaf_order, bounds)

    @classmethod
    def _from_bounds(cls, leaf_order, bounds):
        """``PartitionTree(leaf_order, bounds)`` without the checks, for valid intp arrays."""
        tree = cls.__new__(cls)
        tree._build(leaf_order, bounds)
        return tree

    def _build(self, leaf_order, bounds):
        n = leaf_order.shape[0]
        level_sizes = np.array([b.shape[0] for b in bounds], dtype=np.intp)
        level_ptr = np.concatenate([[0], np.cumsum(level_sizes)]).astype(np.intp)
        start = np.concatenate(bounds).astype(np.intp)
        end = np.concatenate([np.append(b[1:], n) for b in bounds]).astype(np.intp)
        level = np.repeat(np.arange(len(bounds), dtype=np.intp), level_sizes)
        parent = np.full(start.shape[0], -1, dtype=np.intp)
        for lvl in range(1, len(bounds)):
            idx = np.searchsorted(bounds[lvl - 1], bounds[lvl], side="right") - 1
            parent[level_ptr[lvl] : level_ptr[lvl + 1]] = level_ptr[lvl - 1] + idx
        # parents are non-decreasing in BFS order, so the children of a node are contiguous
        child_ptr = np.searchsorted(parent[1:], np.arange(start.shape[0] + 1), side="left") + 1
        self._set_arrays(
            leaf_order, start, end, level, parent, child_ptr.astype(np.intp), level_ptr
        )

    def _set_arrays(self, leaf_order, start, end, level, parent, child_ptr, level_ptr):
        # our own copy: the arrays are made read-only below, and the caller's must not be
        self.leaf_order = np.array(leaf_order, dtype=np.intp, copy=True)
        self.start = start
        self.end = end
        self.size = end - start
        self.level = level
        self.parent = parent
        self.child_ptr = child_ptr
        self.level_ptr = level_ptr
        self.leaf_position = np.empty_like(self.leaf_order)
        self.leaf_position[self.leaf_order] = np.arange(leaf_order.shape[0], dtype=np.intp)
        for arr in (
            self.leaf_order,
            self.start,
            self.end,
            self.size,
            self.level,
            self.parent,
            self.child_ptr,
            self.level_ptr,
            self.leaf_position,
        ):
            arr.flags.writeable = False
        self.merge_height = None

    # ------------------------------------------------------------------ basic facts
    @property
    def n_points(self) -> int:
        return int(self.leaf_order.shape[0])

    @property
    def n_nodes(self) -> int:
        return int(self.start.shape[0])

    @property
    def n_levels(self) -> int:
        return int(self.level_ptr.shape[0] - 1)

    @property
    def n_children(self):
        """Number of children of every node (0 for leaves)."""
        return np.diff(self.child_ptr)

    def children(self, node: int):
        """Node ids of the children of ``node``, left to right."""
        return np.arange(self.child_ptr[node], self.child_ptr[node + 1])

    def folder(self, node: int):
        """Point indices of folder ``node`` (in leaf order)."""
        return self.leaf_order[self.start[node] : self.end[node]]

    def level_nodes(self, level: int):
        """Node ids of one level, left to right."""
        return np.arange(self.level_ptr[level], self.level_ptr[level + 1])

    def level_sizes(self):
        """Number of folders per level, root first."""
        return np.diff(self.level_ptr)

    def labels(self, level: int):
        """Folder label of every point at ``level`` (labels run left to right from 0)."""
        nodes = self.level_nodes(level)
        out = np.empty(self.n_points, dtype=np.intp)
        counts = self.size[nodes]
        out[self.leaf_order] = np.repeat(np.arange(nodes.shape[0]), counts)
        return out

    @property
    def is_binary(self) -> bool:
        """True if no node has more than two children (one-child chains allowed)."""
        return bool(np.all(self.n_children <= 2))

    # ------------------------------------------------------------------ conversions
    @classmethod
    def from_levels(cls, levels, leaf_order=None):
        """Build a tree from folder labels per level.

        Parameters
        ----------
        levels : array-like of int, shape (n_levels, n_points)
            ``levels[l, i]`` is the label of the folder holding point ``i`` at
            level ``l`` (root first). Labels are arbitrary integers; each level
            must refine the one above. A missing root level (several folders on
            the first row) or a missing singleton level is added.
        leaf_order : array-like of shape (n_points,), optional
            The depth-first order of the points. Every folder must be
            contiguous in it. By default the points are sorted by their labels
            level by level (``np.lexsort``), which for the reference
            interchange format (labels by first appearance along the leaf
            order) reproduces the stored leaf order.

        Returns
        -------
        tree : PartitionTree
        """
        levels = _as_int_array(levels, "levels", 2)
        n = levels.shape[1]
        if levels.shape[0] < 1:
            raise ValueError(f"levels must hold at least one level, got shape {levels.shape}.")
        if n < 1:
            raise ValueError("levels must describe at least one point.")
        if np.any(levels[0] != levels[0, 0]):
            levels = np.vstack([np.zeros((1, n), dtype=np.intp), levels])
        if not _all_distinct(levels[-1]):
            levels = np.vstack([levels, np.arange(n, dtype=np.intp)[None, :]])
        if leaf_order is None:
            leaf_order = np.lexsort(levels[::-1])
        else:
            leaf_order = _check_permutation(leaf_order, n)
        ordered = levels[:, leaf_order]
        new_run = _run_starts(ordered)
        for lvl, row in enumerate(ordered):
            # every label has a run; the folders are contiguous iff no label has two
            if not _all_distinct(row[new_run[lvl]]):
                raise ValueError(
                    f"Folders of level {lvl} are not contiguous in the leaf order; pass a "
                    "leaf_order in which every folder is a contiguous run."
                )
        for lvl in range(1, levels.shape[0]):
            # with contiguous folders, a level refines the one above (each label has one
            # parent label) iff every folder start above is a folder start here
            if np.any(new_run[lvl - 1] & ~new_run[lvl]):
                raise ValueError(f"Level {lvl} does not refine level {lvl - 1}.")
        return cls._from_bounds(leaf_order, [np.flatnonzero(b) for b in new_run])

    @classmethod
    def _from_valid_levels(cls, levels, leaf_order):
        """:meth:`from_levels` for callers that built the levels themselves.

        ``levels`` (n_levels, n_points) integer labels must be nested, start
        with the root (one label) and end with the singletons; ``leaf_order``
        (intp permutation) must keep every folder contiguous. Nothing is
        checked: the result equals ``from_levels(levels, leaf_order)``.
        """
        new_run = _run_starts(levels[:, leaf_order])
        return cls._from_bounds(leaf_order, [np.flatnonzero(b) for b in new_run])

    def to_levels(self):
        """Folder labels per level, shape (n_levels, n_points).

        Labels run from 0 in order of first appearance along ``leaf_order``,
        which is the interchange format of the reference data; the last row is
        the position of each point in the leaf order.
        """
        return np.stack([self.labels(lvl) for lvl in range(self.n_levels)])

    @classmethod
    def from_linkage(cls, Z):
        """Build a binary tree from a SciPy linkage matrix.

        Leaves that are shallower than the deepest leaf continue as one-child
        chains down to the leaf level, so that every level is a partition.
        The leaf order is SciPy's dendrogram order (``leaves_list``).
        """
        from scipy.cluster.hierarchy import is_valid_linkage, leaves_list

        Z = np.asarray(Z, dtype=np.float64)
        is_valid_linkage(Z, throw=True, name="Z")
        n = Z.shape[0] + 1
        order = leaves_list(Z).astype(np.intp)
        pos = np.empty(n, dtype=np.intp)
        pos[order] = np.arange(n)
        # span (first position, size) and depth of every cluster, root = 2n - 2
        first = np.empty(2 * n - 1, dtype=np.intp)
        count = np.ones(2 * n - 1, dtype=np.intp)
        first[:n] = pos
        for k in range(n - 1):
            a, b = int(Z[k, 0]), int(Z[k, 1])
            first[n + k] = min(first[a], first[b])
            count[n + k] = count[a] + count[b]
        depth = np.zeros(2 * n - 1, dtype=np.intp)
        for k in range(n - 2, -1, -1):
            for child in (int(Z[k, 0]), int(Z[k, 1])):
                depth[child] = depth[n + k] + 1
        n_levels = int(depth[:n].max()) + 1 if n > 1 else 1
        bounds = []
        for lvl in range(n_levels):
            # clusters at this depth, plus leaves that ended above it (chains)
            if lvl < n_levels - 1:
                members = np.flatnonzero(depth == lvl)
                chained = np.flatnonzero(depth[:n] < lvl)
                starts = np.concatenate([first[members], first[chained]])
            else:
                starts = np.arange(n)
            bounds.append(np.unique(starts))
        tree = cls(order, bounds)
        tree._set_merge_height(linkage_node_heights(tree, Z, first))
        return tree

    def _set_merge_height(self, heights):
        if heights is not None:
            heights = np.array(heights, dtype=np.float64, copy=True)
            heights.flags.writeable = False
        self.merge_height = heights

    def to_linkage(self):
        """SciPy linkage matrix of a binary tree.

        One-child chains collapse; the height of a merge is
        ``n_levels - 1 - level`` of the merging folder, so ``scipy``'s
        dendrogram draws the tree level by level.

        Raises
        ------
        ValueError
            If a node has more than two children.
        """
        if not self.is_binary:
            raise ValueError(
                "to_linkage needs a binary tree (at most two children per node); this tree has "
                f"nodes with up to {int(self.n_children.max())} children."
            )
        n = self.n_points
        cluster_id = np.full(self.n_nodes, -1, dtype=np.intp)
        leaf_nodes = self.level_nodes(self.n_levels - 1)
        cluster_id[leaf_nodes] = self.leaf_order[self.start[leaf_nodes]]
        rows = []
        next_id = n
        for node in range(self.n_nodes - 1, -1, -1):
            kids = self.children(node)
            if kids.shape[0] == 1:
                cluster_id[node] = cluster_id[kids[0]]
            elif kids.shape[0] == 2:
                a, b = cluster_id[kids[0]], cluster_id[kids[1]]
                height = float(self.n_levels - 1 - self.level[node])
                rows.append((node, a, b, height, self.size[node]))
                cluster_id[node] = -2  # assigned below, once merges are sorted
        # scipy wants merges in non-decreasing height order; ties by node id deepest first
        rows.sort(key=lambda r: (r[3], -r[0]))
        Z = np.empty((len(rows), 4), dtype=np.float64)
        for k, (node, _, _, height, size) in enumerate(rows):
            kids = self.children(node)
            Z[k] = (cluster_id[kids[0]], cluster_id[kids[1]], height, size)
            cluster_id[node] = next_id
            next_id += 1
            # propagate through chains above this node
            up = self.parent[node]
            while up >= 0 and self.child_ptr[up + 1] - self.child_ptr[up] == 1:
                cluster_id[up] = cluster_id[node]
                up = self.parent[up]
        Z[:, :2] = np.sort(Z[:, :2], axis=1)
        return Z

    def cut(self, n_clusters):
        """Flat clusters: the labels of the folders of a top-down cut into ``n_clusters``.

        The flat clustering of the tree, as :func:`scipy.cluster.hierarchy.fcluster` with
        ``criterion="maxclust"`` gives for a linkage. Folders are split one at a time from
        the root: for a tree with merge heights (:attr:`merge_height`, set by
        :meth:`from_linkage`) the highest merge first, which for monotone heights (every
        linkage but centroid and median) is the cut of ``fcluster``; for any other tree
        level by level, the coarsest level first and on a level the largest folder first
        (then the leftmost), so that a count equal to a level's number of folders gives
        exactly that level's partition (:meth:`labels`).

        The count is exact where it can be reached: a split that would pass it is skipped,
        and a folder with fewer children may still reach it. Where no set of splits reaches
        it (a tree with many children per folder), the result has the nearest count:
        below it, or above it by the smallest skipped split, whichever is nearer, the
        smaller on a tie (``fcluster`` never passes the count). Folders merged at equal
        heights are split one at a time here, where ``fcluster`` keeps them together and
        returns fewer clusters.

        Parameters
        ----------
        n_clusters : int
            The number of folders wanted, from 1 to ``n_points``.

        Returns
        -------
        labels : ndarray of shape (n_points,)
            The folder of every point, numbered 0, 1, ... left to right along
            ``leaf_order``.

        Examples
        --------
        >>> from skorg.trees import dyadic_tree
        >>> dyadic_tree(8).cut(3)
        array([0, 0, 1, 1, 2, 2, 2, 2])
        """
        return cut_tree_labels(self, n_clusters, self.merge_height)

    # ------------------------------------------------------------------ comparisons
    def same_partitions(self, other) -> bool:
        """True if both trees have the same nested partitions, level by level.

        The order of children (and so the leaf order) is ignored.
        """
        if not isinstance(other, PartitionTree):
            return NotImplemented
        if other.n_points != self.n_points or other.n_levels != self.n_levels:
            return False
        if not np.array_equal(self.level_sizes(), other.level_sizes()):
            return False
        return all(
            _same_partition(self.labels(lvl), other.labels(lvl)) for lvl in range(self.n_levels)
        )

    def __eq__(self, other):
        if not isinstance(other, PartitionTree):
            return NotImplemented
        return (
            self.n_points == other.n_points
            and np.array_equal(self.leaf_order, other.leaf_order)
            and np.array_equal(self.level_ptr, other.level_ptr)
            and np.array_equal(self.start, other.start)
        )

    def __hash__(self):
        return hash((self.n_points, self.leaf_order.tobytes(), self.start.tobytes()))

    def __repr__(self):
        sizes = ", ".join(str(int(s)) for s in self.level_sizes())
        return f"PartitionTree(n_points={self.n_points}, folders per level=[{sizes}])"

    def __getstate__(self):
        bounds = [self.start[self.level_nodes(lvl)] for lvl in range(self.n_levels)]
        return {
            "leaf_order": np.array(self.leaf_order),
            "level_bounds": [np.array(b) for b in bounds],
            "merge_height": self.merge_height,
        }

    def __setstate__(self, state):
        self.__init__(state["leaf_order"], state["level_bounds"])
        self._set_merge_height(state.get("merge_height"))

    def with_leaf_order(self, children_order):
        """A tree with the same partitions and children reordered.

        Parameters
        ----------
        children_order : callable
            ``children_order(node, children)`` returns the children ids of
            ``node`` in the wanted order (a permutation of ``children``, as
            integers; whole floats are taken as integers, other values refused).
        """
        if not callable(children_order):
            raise TypeError(
                "children_order must be a callable children_order(node, children), got "
                f"{type(children_order).__name__}."
            )
        return reorder_children(self, children_order)


def _same_partition(a, b):
    """True if the labellings a and b, each labels 0..k-1 all used, group the points alike.

    With the same number of labels, they do iff the label of b is a function of the
    label of a (a map onto k labels from k labels is one to one).
    """
    k = int(a.max()) + 1
    if k != int(b.max()) + 1:
        return False
    to_b = np.empty(k, dtype=b.dtype)
    to_b[a] = b  # any point of a folder will do, if the map exists
    return bool(np.array_equal(to_b[a], b))
