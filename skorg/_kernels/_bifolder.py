"""Two-tree (tensor) EMD kernels: bi-folder means made on the fly, summed pairwise.

For slices ``t`` of a 3-tensor and trees on its two other axes, the features
are the weighted bi-folder means ``w(F) w(G) mean X[F, G, t]``; there are
``|T1| |T2|`` of them per slice, far more than the tensor has entries, so they
are never stored whole. A prefix table along the first tree axis (the second
axis already in the leaf order of its tree, the slice index last) is built
once; a block of features (a few folders F of the first tree, every folder G
of the second) then costs one vectorized running sum over the second axis and
one difference per feature, and the block's pairwise L1 sums are added while
it is in cache.

Determinism: the feature blocks are split into a fixed number of contiguous
groups, each summed into its own accumulator by one thread in block order;
the accumulators are added in a fixed order at the end. The result therefore
does not depend on the number of threads.
"""

import numba
import numpy as np
from numba import prange

from ._emd import _split, _tile_chunk

# Slices per block of the prefix table's gathering pass (slices not contiguous in Xv). Their
# rows of Xv lie a slice stride apart, often a multiple of 4 KiB, so they share one set of
# the L1 cache: 32 of them overflowed its ways (256 x 256 x 128 along axis 0: 34 ms against
# 23 ms with 16), while 16 keep whole cache lines of P per write.
_SLICE_BLOCK = 16
# Feature blocks are padded with zero features to a multiple of this width.
_PAD = 64


@numba.njit(cache=True)
def _prefix_range(Xv, order1, order2, t_inner, lo, hi, P):
    """Rows ``lo:hi`` of the table: along q when ``t_inner`` (slices contiguous in Xv),
    else along t (the second axis contiguous, read as a gather along each row)."""
    n1 = Xv.shape[0]
    n2 = Xv.shape[1]
    m = Xv.shape[2]
    if t_inner:
        for q in range(lo, hi):
            for t in range(m):
                P[0, q, t] = 0.0
        for p in range(n1):
            r = order1[p]
            for q in range(lo, hi):
                c = order2[q]
                for t in range(m):
                    P[p + 1, q, t] = P[p, q, t] + Xv[r, c, t]
    else:
        for q in range(n2):
            for t in range(lo, hi):
                P[0, q, t] = 0.0
        # blocks of _SLICE_BLOCK slices: each row of P is written whole cache lines at a time
        # while that many rows of Xv are read along their contiguous axis
        for p in range(n1):
            r = order1[p]
            for t0 in range(lo, hi, _SLICE_BLOCK):
                t1 = min(t0 + _SLICE_BLOCK, hi)
                for q in range(n2):
                    c = order2[q]
                    for t in range(t0, t1):
                        P[p + 1, q, t] = P[p, q, t] + Xv[r, c, t]


@numba.njit(parallel=True, cache=True)
def bifolder_prefix(Xv, order1, order2, t_inner, n_threads, P):
    """``P[p, q, t] = sum(Xv[order1[:p], order2[q], t])`` in float64.

    ``Xv`` has shape (n1, n2, m) (any strides); ``P`` is (n1 + 1, n2, m). ``t_inner``
    says which of Xv's last two axes has the smaller stride (True: the last).
    """
    n_items = Xv.shape[1] if t_inner else Xv.shape[2]
    n_parts = min(n_threads, max(n_items, 1))
    for part in prange(n_parts):
        lo, hi = _split(n_items, n_parts, part)
        _prefix_range(Xv, order1, order2, t_inner, lo, hi, P)


@numba.njit(cache=True)
def bifolder_prefix_serial(Xv, order1, order2, t_inner, P):
    """:func:`bifolder_prefix` without a parallel region."""
    _prefix_range(Xv, order1, order2, t_inner, 0, Xv.shape[1] if t_inner else Xv.shape[2], P)


# side of the square tiles in which a folder's features are transposed into the block
_TRANSPOSE_TILE = 16


@numba.njit(cache=True)
def _block_features(P, start1, end1, scale1, f_lo, f_hi, start2, end2, scale2, Q, FT, buf):
    """Features of the folders ``f_lo:f_hi`` of the first tree times every folder of the
    second, into ``buf[:, :(f_hi - f_lo) * k2]`` (slice-major), as
    ``scale2[g] * (Q[end2[g]] - Q[start2[g]])`` with ``Q`` the running sum, along the
    second axis, of ``scale1[f] * (P[end1[f]] - P[start1[f]])``.

    Each folder's features are made feature-major in ``FT`` (k2 x m, contiguous along the
    slices: SIMD code) and then transposed into ``buf`` in square tiles; written straight
    into ``buf`` they would go one slice, hence one cache line, at a time.
    """
    n2 = P.shape[1]
    m = P.shape[2]
    k2 = start2.shape[0]
    col = 0
    for f in range(f_lo, f_hi):
        s = start1[f]
        e = end1[f]
        c1 = scale1[f]
        for t in range(m):
            Q[0, t] = 0.0
        for q in range(n2):
            for t in range(m):
                Q[q + 1, t] = Q[q, t] + c1 * (P[e, q, t] - P[s, q, t])
        for g in range(k2):
            qe = Q[end2[g]]
            qs = Q[start2[g]]
            c2 = scale2[g]
            row = FT[g]
            for t in range(m):
                row[t] = c2 * (qe[t] - qs[t])
        for g0 in range(0, k2, _TRANSPOSE_TILE):
            g1 = min(g0 + _TRANSPOSE_TILE, k2)
            for t0 in range(0, m, _TRANSPOSE_TILE):
                t1 = min(t0 + _TRANSPOSE_TILE, m)
                for t in range(t0, t1):
                    out = buf[t, col + g0 : col + g1]
                    for g in range(g1 - g0):
                        out[g] = FT[g0 + g, t]
        col += k2


@numba.njit(fastmath=True, cache=True)
def _group(
    P, start1, end1, scale1, start2, end2, scale2, block_bounds, tile, a, bufs, accs, minus_one
):
    """Add the pairwise L1 sums of feature-block group ``a`` to ``accs[a]`` (upper
    triangle, ``j > i``), block by block, with scratch ``bufs[a]``."""
    m = P.shape[2]
    k2 = start2.shape[0]
    buf = bufs[a]
    acc = accs[a]
    b_lo, b_hi = _split(block_bounds.shape[0] - 1, accs.shape[0], a)
    Q = np.empty((P.shape[1] + 1, m), dtype=np.float64)
    FT = np.empty((k2, m), dtype=buf.dtype)
    n_tiles = (m + tile - 1) // tile
    for b in range(b_lo, b_hi):
        f_lo = block_bounds[b]
        f_hi = block_bounds[b + 1]
        _block_features(P, start1, end1, scale1, f_lo, f_hi, start2, end2, scale2, Q, FT, buf)
        # zero features up to a multiple of _PAD keep the inner loops on full SIMD vectors
        width = (f_hi - f_lo) * k2
        padded = min((width + _PAD - 1) // _PAD * _PAD, buf.shape[1])
        for t in range(m):
            for c in range(width, padded):
                buf[t, c] = 0.0
        for ti in range(n_tiles):
            i0 = ti * tile
            i1 = min(i0 + tile, m)
            for tj in range(ti, n_tiles):
                j0 = tj * tile
                j1 = min(j0 + tile, m)
                _tile_chunk(buf, i0, i1, j0, j1, 0, padded, acc[i0:i1, j0:j1], ti == tj, minus_one)


@numba.njit(parallel=True, cache=True)
def bifolder_l1(
    P, start1, end1, scale1, start2, end2, scale2, block_bounds, tile, bufs, accs, minus_one
):
    """Pairwise weighted L1 distances between slices over all bi-folder features.

    ``block_bounds`` (length n_blocks + 1) cuts the folders of the first tree into
    feature blocks; the blocks are shared out in ``accs.shape[0]`` contiguous groups, group
    ``a`` summed into ``accs[a]`` (upper triangle) with scratch ``bufs[a]``. The caller adds
    the groups in order. ``minus_one`` must be -1.0 (see
    :func:`skorg._kernels._emd._tile_chunk`).
    """
    for a in prange(accs.shape[0]):
        _group(P, start1, end1, scale1, start2, end2, scale2, block_bounds, tile, a, bufs, accs,
               minus_one)  # fmt: skip


@numba.njit(cache=True)
def bifolder_l1_serial(
    P, start1, end1, scale1, start2, end2, scale2, block_bounds, tile, bufs, accs, minus_one
):
    """:func:`bifolder_l1` without a parallel region (same sums, same order)."""
    for a in range(accs.shape[0]):
        _group(P, start1, end1, scale1, start2, end2, scale2, block_bounds, tile, a, bufs, accs,
               minus_one)  # fmt: skip
