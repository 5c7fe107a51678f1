"""Tree Haar kernels on row segments: whole runs of a trailing axis combined pairwise.

The data is a flat C-contiguous view of an array of shape ``(A, n, B)`` transformed along
the middle axis, as in :mod:`skorg._kernels._haar`, and the operations are those of
:mod:`skorg._kernels._haar_rows` in the same order, so the coefficients are equal bit for
bit.

For a perfect binary tree along an axis with a trailing run of a few values or more
(``B`` from 2 to 16 by the tree's size and the number of vectors, e.g. axis 0 of a
C-ordered matrix, or a middle axis before a short one; the caller picks): ``W``
neighbouring columns at a time, whole row segments combined pairwise, subtree by subtree
of ``chunk`` leaves (two level buffers of ``chunk / 2`` rows), then the levels above the
subtrees on their sums; each input row is read once. ``chunk == n`` is one subtree: level
by level. Rows are passed as flat offsets and the helpers are inlined: with a slice and a
call per row the kernel was 3-11x slower on rows of 4 to 64 values.

Sums are accumulated in float64 whatever the data dtype. ``lo`` / ``hi`` are block ranges;
the parallel wrappers split them into ``n_tasks`` tasks (the caller sets a parallel chunk
size of 1), and the serial entry point (``dyadic_blocks_range``) serves small inputs.
"""

import numba
import numpy as np

from ._haar_rows import _U, _split


@numba.njit(cache=True, inline="always")
def _pair_rows(src, pa, pb, y, py, dst, pd, wp, wm, W):
    """One folder of a level across W columns: ``dst[pd:][:W]`` gets the sums of the rows at
    ``src[pa:]`` and ``src[pb:]``, ``y[py:][:W]`` their coefficients (as in
    :func:`skorg._kernels._haar_rows._pair_level`, lane by lane). The rows are flat offsets,
    not slices, which cost more than a short row (see the module docstring)."""
    pa = _U(pa)
    pb = _U(pb)
    py = _U(py)
    pd = _U(pd)
    for q in range(_U(W)):
        a = np.float64(src[pa + q])
        b = np.float64(src[pb + q])
        s = a + b
        y[py + q] = wp * b - wm * (s - b)
        dst[pd + q] = s


@numba.njit(cache=True, inline="always")
def _unpair_rows(C, pc, v, pv, ya, pa, yb, pb, wp, wm, W):
    """One folder of an inverse level across W columns: its children's rows (``ya[pa:]``,
    ``yb[pb:]``) from its total ``v[pv:]`` and coefficient row ``C[pc:]``."""
    pc = _U(pc)
    pv = _U(pv)
    pa = _U(pa)
    pb = _U(pb)
    for q in range(_U(W)):
        c = np.float64(C[pc + q])
        t = v[pv + q]
        ya[pa + q] = -(wm * c) + t
        yb[pb + q] = wp * c + t


@numba.njit(cache=True, inline="always")
def _forward_block_subtrees(X, out, s0, B, W, leaf_order, wplus, wminus, T, U, TOP, chunk,
                            c0, c1):  # fmt: skip
    """The levels within subtrees c0..c1-1 of ``chunk`` leaves of one column block (a power
    of two, at least 2, that divides n); subtree c's sum to row c of ``TOP``.

    Each subtree's levels run on two buffers of ``chunk / 2`` rows of ``W`` (flat, row j at
    ``j * W``), which stay in L2 whatever n is. The sums and coefficients are those of the
    level-by-level kernel, bit for bit (the same additions of the same pairs); only their
    order in time differs.
    """
    n = leaf_order.shape[0]
    for c in range(c0, c1):
        off = c * chunk
        h = chunk >> 1
        H = n >> 1
        k = H + c * h
        # a subtree of two leaves: its sum straight to TOP
        first, at = (TOP, c * W) if h == 1 else (T, 0)
        for j in range(h):
            _pair_rows(X, s0 + leaf_order[off + 2 * j] * B, s0 + leaf_order[off + 2 * j + 1] * B,
                       out, s0 + (k + j) * B, first, at + j * W, wplus[k - 1 + j],
                       wminus[k - 1 + j], W)  # fmt: skip
        src = T
        dst = U
        h >>= 1
        H >>= 1
        while h >= 1:
            k = H + c * h
            last, at = (TOP, c * W) if h == 1 else (dst, 0)
            for j in range(h):
                _pair_rows(src, 2 * j * W, (2 * j + 1) * W, out, s0 + (k + j) * B, last,
                           at + j * W, wplus[k - 1 + j], wminus[k - 1 + j], W)  # fmt: skip
            src, dst = dst, src
            h >>= 1
            H >>= 1


@numba.njit(cache=True, inline="always")
def _forward_block_top(out, s0, B, W, wplus, wminus, scale0, TOP, TOP2, n_chunks):
    """The levels above the subtrees of one column block, from their sums ``TOP``."""
    src = TOP
    dst = TOP2
    h = n_chunks >> 1
    while h >= 1:
        for j in range(h):
            _pair_rows(src, 2 * j * W, (2 * j + 1) * W, out, s0 + (h + j) * B, dst, j * W,
                       wplus[h - 1 + j], wminus[h - 1 + j], W)  # fmt: skip
        src, dst = dst, src
        h >>= 1
    for q in range(W):
        out[s0 + q] = src[q] * scale0


@numba.njit(cache=True, inline="always")
def _inverse_block_top(C, s0, B, W, wplus, wminus, scale0, TOP, TOP2, n_chunks):
    """The totals of the subtrees' roots of one column block; returns the buffer."""
    for q in range(W):
        TOP[q] = np.float64(C[s0 + q]) * scale0
    src = TOP
    dst = TOP2
    h = 1
    while h < n_chunks:
        for j in range(h):
            _unpair_rows(C, s0 + (h + j) * B, src, j * W, dst, 2 * j * W, dst, (2 * j + 1) * W,
                         wplus[h - 1 + j], wminus[h - 1 + j], W)  # fmt: skip
        src, dst = dst, src
        h <<= 1
    return src


@numba.njit(cache=True, inline="always")
def _inverse_block_subtrees(C, out, s0, B, W, leaf_order, wplus, wminus, T, U, totals, chunk,
                            c0, c1):  # fmt: skip
    """The levels within subtrees c0..c1-1 of one column block, from their roots' totals
    (row c of ``totals``), the last level straight to the output."""
    n_chunks = leaf_order.shape[0] // chunk
    for c in range(c0, c1):
        a = T
        b = U
        for q in range(W):
            a[q] = totals[c * W + q]
        h = 1
        H = n_chunks
        while h < chunk >> 1:
            k = H + c * h
            for j in range(h):
                _unpair_rows(C, s0 + (k + j) * B, a, j * W, b, 2 * j * W, b, (2 * j + 1) * W,
                             wplus[k - 1 + j], wminus[k - 1 + j], W)  # fmt: skip
            a, b = b, a
            h <<= 1
            H <<= 1
        k = H + c * h
        off = c * chunk
        for j in range(h):
            _unpair_rows(C, s0 + (k + j) * B, a, j * W, out, s0 + leaf_order[off + 2 * j] * B,
                         out, s0 + leaf_order[off + 2 * j + 1] * B, wplus[k - 1 + j],
                         wminus[k - 1 + j], W)  # fmt: skip


@numba.njit(cache=True)
def dyadic_blocks_range(X, out, n, B, width, chunk, lo, hi, inverse, leaf_order, wplus, wminus):
    """Transform column blocks lo..hi-1 (block g: ``width`` columns of one ``a``).

    The levels run subtree by subtree of ``chunk`` leaves, in buffers of ``chunk / 2`` rows
    that stay in L2; ``chunk == n`` is one subtree, level by level over the whole block.
    """
    scale0 = 1.0 / np.sqrt(n)
    n_top = n // chunk
    T = np.empty(max(chunk >> 1, 1) * width, dtype=np.float64)
    U = np.empty(max(chunk >> 1, 1) * width, dtype=np.float64)
    TOP = np.empty(n_top * width, dtype=np.float64)
    TOP2 = np.empty(n_top * width, dtype=np.float64)
    per_a = (B + width - 1) // width
    for g in range(lo, hi):
        a = g // per_a
        b0 = (g % per_a) * width
        W = min(width, B - b0)
        s0 = a * n * B + b0
        if inverse:
            totals = _inverse_block_top(X, s0, B, W, wplus, wminus, scale0, TOP, TOP2, n_top)
            _inverse_block_subtrees(X, out, s0, B, W, leaf_order, wplus, wminus, T, U, totals,
                                    chunk, 0, n_top)  # fmt: skip
        else:
            _forward_block_subtrees(X, out, s0, B, W, leaf_order, wplus, wminus, T, U, TOP,
                                    chunk, 0, n_top)  # fmt: skip
            _forward_block_top(out, s0, B, W, wplus, wminus, scale0, TOP, TOP2, n_top)


@numba.njit(cache=True, parallel=True)
def dyadic_blocks(X, out, n, B, width, chunk, n_blocks, inverse, leaf_order, wplus, wminus,
                  n_tasks):  # fmt: skip
    for task in numba.prange(n_tasks):
        lo, hi = _split(task, n_tasks, n_blocks)
        dyadic_blocks_range(X, out, n, B, width, chunk, lo, hi, inverse, leaf_order, wplus,
                            wminus)  # fmt: skip


@numba.njit(cache=True, parallel=True)
def dyadic_block_subtrees(X, out, s0, B, W, chunk, inverse, leaf_order, wplus, wminus, n_tasks):
    """One column block (``W`` columns from flat offset ``s0``) with its subtrees split over
    tasks, for fewer blocks than threads: the levels above the subtrees run on the calling
    thread (after the subtrees forward, before them inverse)."""
    n = leaf_order.shape[0]
    n_top = n // chunk
    scale0 = 1.0 / np.sqrt(n)
    TOP = np.empty(n_top * W, dtype=np.float64)
    TOP2 = np.empty(n_top * W, dtype=np.float64)
    totals = TOP
    if inverse:
        totals = _inverse_block_top(X, s0, B, W, wplus, wminus, scale0, TOP, TOP2, n_top)
    for task in numba.prange(n_tasks):
        c0, c1 = _split(task, n_tasks, n_top)
        T = np.empty((chunk >> 1) * W, dtype=np.float64)
        U = np.empty((chunk >> 1) * W, dtype=np.float64)
        if inverse:
            _inverse_block_subtrees(X, out, s0, B, W, leaf_order, wplus, wminus, T, U, totals,
                                    chunk, c0, c1)  # fmt: skip
        else:
            _forward_block_subtrees(X, out, s0, B, W, leaf_order, wplus, wminus, T, U, TOP,
                                    chunk, c0, c1)  # fmt: skip
    if not inverse:
        _forward_block_top(out, s0, B, W, wplus, wminus, scale0, TOP, TOP2, n_top)
