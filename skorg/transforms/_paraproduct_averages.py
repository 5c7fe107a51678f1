"""Folder bookkeeping and block averages of the paraproduct, and the checks of its inputs."""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_array

from ..trees import PartitionTree, dyadic_tree

__all__ = [
    "MAX_LOGIT",
    "_Averager",
    "_check_matrix",
    "_check_tree",
    "_is_pow2",
    "_parse_scales",
    "_resize",
]

_RESIZE = ("tree", "crop", "pad", "error")


def _is_pow2(n):
    return n >= 1 and (n & (n - 1)) == 0


# --------------------------------------------------------------------------- averaging
class _Axis:
    """Folder bookkeeping of one axis at every level: labels, sizes, starts, parents, children.

    ``child_ptr[lvl]`` (one entry per folder of level ``lvl``, plus the end) locates the
    children of each folder among the folders of level ``lvl + 1``: they are contiguous, as
    every folder is a contiguous run of the leaf order.
    """

    def __init__(self, n, tree=None):
        self.tree = tree
        if tree is None:
            depth = n.bit_length() - 1
            self.labels = [np.arange(n) >> (depth - lvl) for lvl in range(depth + 1)]
            self.sizes = [np.full(1 << lvl, float(n >> lvl)) for lvl in range(depth + 1)]
            self.starts = [np.arange(1 << lvl) * (n >> lvl) for lvl in range(depth + 1)]
            self.parents = [None] + [np.arange(1 << lvl) >> 1 for lvl in range(1, depth + 1)]
            self.child_ptr = [2 * np.arange((1 << lvl) + 1) for lvl in range(depth)]
            self.order = None
        else:
            depth = tree.n_levels - 1
            self.labels = [tree.labels(lvl) for lvl in range(depth + 1)]
            nodes = [tree.level_nodes(lvl) for lvl in range(depth + 1)]
            self.sizes = [tree.size[nd].astype(float) for nd in nodes]
            self.starts = [tree.start[nd] for nd in nodes]
            self.parents = [None] + [
                tree.parent[nodes[lvl]] - tree.level_ptr[lvl - 1] for lvl in range(1, depth + 1)
            ]
            ptr = tree.level_ptr
            self.child_ptr = [
                tree.child_ptr[ptr[lvl] : ptr[lvl + 1] + 1] - ptr[lvl + 1] for lvl in range(depth)
            ]
            self.order = tree.leaf_order
        self.n = n
        self.depth = depth
        self.n_folders = [len(s) for s in self.sizes]

    def coarsen(self, m, lvl, lo, hi, axis):
        """Means of folders ``lo:hi`` of level ``lvl`` from ``m``, the means of their children.

        ``axis`` is 0 (rows of ``m`` are the children) or -1 (its columns are).
        """
        if self.tree is None:
            # pairwise halving; bitwise equal to the size-weighted tree mean on a dyadic tree
            if axis == 0:
                return (m[0::2] + m[1::2]) * 0.5
            return (m[..., 0::2] + m[..., 1::2]) * 0.5
        ptr = self.child_ptr[lvl]
        c0, c1 = ptr[lo], ptr[hi]
        first = ptr[lo:hi] - c0
        fine, coarse = self.sizes[lvl + 1][c0:c1], self.sizes[lvl][lo:hi]
        if axis == 0:
            fine, coarse = fine[:, None], coarse[:, None]
        out = np.add.reduceat(m * fine, first, axis=axis) / coarse
        single = np.flatnonzero(np.diff(ptr[lo : hi + 1]) == 1)
        if single.size:
            # a one-child folder has its child's mean; copying avoids a round-off step
            if axis == 0:
                out[single] = m[first[single]]
            else:
                out[..., single] = m[..., first[single]]
        return out

    def column_means(self, x):
        """Folder means along the last axis of ``x`` at every level, root first."""
        means = [None] * (self.depth + 1)
        means[self.depth] = x if self.order is None else np.take(x, self.order, axis=1)
        for lvl in range(self.depth - 1, -1, -1):
            means[lvl] = self.coarsen(means[lvl + 1], lvl, 0, self.n_folders[lvl], -1)
        return means

    def reduce(self, vec, lvl, ufunc):
        """``ufunc`` over each folder of level ``lvl`` of a per-point vector."""
        ordered = vec if self.order is None else vec[self.order]
        return ufunc.reduceat(ordered, self.starts[lvl])

    def up(self, x, level, to, axis):
        """``x`` (indexed by the folders of ``level``) repeated on the folders of ``to``."""
        if level == to:
            return x
        index = self.parents[to]
        for lvl in range(to - 1, level, -1):
            index = self.parents[lvl][index]  # composed maps: indexing is exact
        return x[index] if axis == 0 else x[:, index]


class _Averager:
    """Averages ``P_{j,j'} f`` of one matrix, computed on request from the matrix.

    A compact average (row folders x column folders, both in leaf order) costs one pass
    over the matrix; nothing beyond the matrix itself is stored.
    """

    def __init__(self, f, row_tree=None, column_tree=None):
        self.f = f
        self.cols = _Axis(f.shape[1], column_tree)
        self.rows = _Axis(f.shape[0], row_tree)
        self.column_depth = self.cols.depth
        self.row_depth = self.rows.depth
        # the shallower tree is padded with its last level (its averages stop changing)
        self.depth = max(self.column_depth, self.row_depth)
        self.row_labels = self.rows.labels
        self.col_labels = self.cols.labels

    def levels(self, j, jp):
        return min(j, self.column_depth), min(jp, self.row_depth)

    def leaf_rows(self, r0, r1):
        """Rows ``r0:r1`` of the leaf order of the matrix (columns in point order)."""
        order = self.rows.order
        return self.f[r0:r1] if order is None else self.f[order[r0:r1]]

    def _row_chain(self, m, to):
        rows = self.rows
        for lvl in range(rows.depth - 1, to - 1, -1):
            yield lvl, (m := rows.coarsen(m, lvl, 0, rows.n_folders[lvl], 0))

    def grid(self, lc, lr):
        """The compact average at column level ``lc`` and row level ``lr``."""
        cols = self.cols
        m = self.leaf_rows(0, self.rows.n)
        m = m if cols.order is None else np.take(m, cols.order, axis=1)
        for lvl in range(cols.depth - 1, lc - 1, -1):
            m = cols.coarsen(m, lvl, 0, cols.n_folders[lvl], -1)
        rows = self.rows
        for lvl in range(rows.depth - 1, lr - 1, -1):
            m = rows.coarsen(m, lvl, 0, rows.n_folders[lvl], 0)
        return m

    def maxima(self):
        """Largest entry of every compact average, shape (column levels, row levels)."""
        cols = self.cols
        out = np.empty((self.column_depth + 1, self.row_depth + 1))
        m = self.leaf_rows(0, self.rows.n)
        m = m if cols.order is None else np.take(m, cols.order, axis=1)
        for lc in range(cols.depth, -1, -1):
            if lc < cols.depth:
                m = cols.coarsen(m, lc, 0, cols.n_folders[lc], -1)
            out[lc, self.row_depth] = m.max()
            for lr, r in self._row_chain(m, 0):
                out[lc, lr] = r.max()
        return out

    def expand(self, C, lc, lr):
        """A compact (row folders x column folders) matrix at full size, in point order."""
        return C[np.ix_(self.row_labels[lr], self.col_labels[lc])]

    def average(self, j, jp):
        """P_{j,j'} f at full size; scales beyond an axis's depth use its last level."""
        lc, lr = self.levels(j, jp)
        return self.expand(self.grid(lc, lr), lc, lr)

    def details(self, j, jp):
        u = self.average(j, jp)
        p10 = self.average(j + 1, jp)
        p01 = self.average(j, jp + 1)
        p11 = self.average(j + 1, jp + 1)
        return u, p10 - u, p01 - u, p11 - p01 - p10 + u


# --------------------------------------------------------------------------- validation
# Logits beyond this magnitude would overflow the sums behind the block means and the row
# shifts (the decomposition is not homogeneous, so it cannot be rescaled).
MAX_LOGIT = 1e300


def _check_matrix(f, name="f"):
    try:
        f = check_array(
            f, dtype=np.float64, ensure_all_finite=True, ensure_2d=True, input_name=name, copy=False
        )
    except ValueError as exc:
        raise ValueError(f"{name}: {exc}") from None
    f = np.asarray(f, dtype=np.float64)
    if f.size and float(np.max(np.abs(f))) > MAX_LOGIT:
        raise ValueError(
            f"{name} has entries of magnitude up to {float(np.max(np.abs(f))):.3g}; the "
            f"paraproduct needs |{name}| <= {MAX_LOGIT:g} (its block means and row shifts "
            "would overflow)."
        )
    return f


def _check_tree(tree, n, name, axis):
    if tree is None:
        return None
    if not isinstance(tree, PartitionTree):
        raise TypeError(f"{name} must be a PartitionTree or None, got {type(tree).__name__}.")
    if tree.n_points != n:
        raise ValueError(
            f"{name} has {tree.n_points} points but the matrix has {n} {axis}; "
            f"the {axis} tree must be built on exactly the matrix's {axis}."
        )
    return tree


def _resize(f, resize, row_tree, column_tree):
    """Return the analysed matrix and the trees (None means the fast dyadic path)."""
    if resize not in _RESIZE:
        raise ValueError(f"resize must be one of {_RESIZE}, got {resize!r}.")
    n_rows, n_cols = f.shape
    if row_tree is not None or column_tree is not None:
        if resize in ("crop", "pad"):
            raise ValueError(
                f"resize={resize!r} cannot be combined with explicit trees; the trees define "
                "the folders, so use resize='tree'."
            )
        row_tree = _check_tree(row_tree, n_rows, "row_tree", "rows")
        column_tree = _check_tree(column_tree, n_cols, "column_tree", "columns")
        row_tree = dyadic_tree(n_rows) if row_tree is None else row_tree
        column_tree = dyadic_tree(n_cols) if column_tree is None else column_tree
        return f, row_tree, column_tree
    if _is_pow2(n_rows) and _is_pow2(n_cols):
        return f, None, None
    if resize == "error":
        raise ValueError(
            f"The dyadic paraproduct needs sides that are powers of two, got shape {f.shape}; "
            "use resize='tree' (balanced trees on any size), 'crop' or 'pad'."
        )
    if resize == "crop":
        rows, cols = 1 << (n_rows.bit_length() - 1), 1 << (n_cols.bit_length() - 1)
        return f[:rows, :cols], None, None
    if resize == "pad":
        rows, cols = 1 << (n_rows - 1).bit_length(), 1 << (n_cols - 1).bit_length()
        return np.pad(f, ((0, rows - n_rows), (0, cols - n_cols)), mode="edge"), None, None
    return f, dyadic_tree(n_rows), dyadic_tree(n_cols)


def _parse_scales(scales, av):
    depth = av.depth
    if isinstance(scales, str):
        if scales == "all":
            band_c = band_r = np.arange(depth)
        elif scales == "paper":
            band_c, band_r = np.arange(4, av.column_depth - 2), np.arange(4, av.row_depth - 2)
        else:
            raise ValueError(f"scales must be 'all', 'paper' or integers, got {scales!r}.")
        pairs = np.array([(j, jp) for j in band_c for jp in band_r], dtype=np.intp)
        return pairs.reshape(-1, 2)
    arr = np.asarray(scales)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"scales must hold integers, got dtype {arr.dtype}.")
    if arr.ndim == 1:
        pairs = np.array([(j, jp) for j in arr for jp in arr], dtype=np.intp)
    elif arr.ndim == 2 and arr.shape[1] == 2:
        pairs = arr.astype(np.intp)
    else:
        raise ValueError(
            "scales must be 'all', 'paper', a 1-D band of scales (used on both axes) or an "
            f"array of (j, j') pairs of shape (m, 2); got shape {arr.shape}."
        )
    pairs = pairs.reshape(-1, 2)
    if pairs.size and (pairs.min() < 0 or pairs.max() >= depth):
        raise ValueError(
            f"scales must lie in 0..{depth - 1} for this matrix (depth {depth}), "
            f"got values in {pairs.min()}..{pairs.max()}."
        )
    return np.unique(pairs, axis=0)
