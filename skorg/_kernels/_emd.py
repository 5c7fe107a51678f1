"""Tree earth mover's distance kernels: weighted folder means and pairwise L1.

Folder means are prefix-sum differences along the leaf order: a folder is the
slice ``leaf_order[start:end]``, so its sum is ``P[end] - P[start]`` with ``P``
the running sum in leaf order. Every running sum is kept in float64 whatever
the dtype of the data; only the stored means take the output dtype. The caller
passes ``scale = weight / size`` for every folder it keeps.

The parallel loops split their iteration space into one contiguous range per
thread (``_split``, with ``n_threads`` passed in: calling
``numba.get_num_threads`` inside a cached parallel kernel defeats the cache) so
that every thread allocates its scratch buffer once. Each range runs in a
serial function that the caller also calls directly for small inputs: a
parallel region costs a scheduler quantum (milliseconds) on busy cores.

The pairwise weighted L1 distance is O(m^2 k), the dominant cost of the
questionnaire. The kernel visits the upper triangle of the m x m output in
square tiles (one task per tile pair, so the triangle is balanced across
threads), walks the features in chunks so that both tiles' rows stay in cache,
and computes 4 x 4 pairs at once so that each loaded value serves four
differences. A float64 feature matrix is summed in float64. A float32 one is
differenced and summed in float32 (twice the SIMD width) in runs of
``_LOWP_RUN`` features, each run's sum added to float64 totals: the error per
run stays near the rounding of the features themselves (relative ~1e-7 to
1e-6). The output is an m x m float64 array to which the distances are added
(both halves).
"""

import numba
import numpy as np
from numba import prange

from ._muladd import muladd

# Features per float32 partial sum of the pairwise kernel (float64 sums run in one pass): a
# whole feature block or chunk (up to 512), so that each 4 x 4 micro-tile reduces its
# sixteen vector sums once per block (256 took 7% longer on the 3-D benchmark's steps); each
# SIMD lane then sums 64 terms, an error near 1e-7 relative.
_LOWP_RUN = 512


@numba.njit(cache=True)
def _split(n_items, n_parts, part):
    """Range [lo, hi) of the items handled by ``part`` out of ``n_parts``."""
    per = n_items // n_parts
    extra = n_items % n_parts
    lo = part * per + min(part, extra)
    hi = lo + per + (1 if part < extra else 0)
    return lo, hi


@numba.njit(cache=True)
def _rows_range(Y, leaf_order, start, end, scale, lo, hi, out):
    n = Y.shape[1]
    k = start.shape[0]
    # four rows at a time: four independent running sums hide the latency of the additions
    P = np.empty((n + 1) * 4, dtype=np.float64)
    row = np.int64(lo)
    stop = np.int64(hi)
    while row + 4 <= stop:
        acc0 = acc1 = acc2 = acc3 = 0.0
        P[0] = P[1] = P[2] = P[3] = 0.0
        for p in range(n):
            r = leaf_order[p]
            acc0 += Y[row, r]
            acc1 += Y[row + 1, r]
            acc2 += Y[row + 2, r]
            acc3 += Y[row + 3, r]
            q = 4 * (p + 1)
            P[q] = acc0
            P[q + 1] = acc1
            P[q + 2] = acc2
            P[q + 3] = acc3
        for f in range(k):
            lo4 = 4 * start[f]
            hi4 = 4 * end[f]
            coef = scale[f]
            out[row, f] = coef * (P[hi4] - P[lo4])
            out[row + 1, f] = coef * (P[hi4 + 1] - P[lo4 + 1])
            out[row + 2, f] = coef * (P[hi4 + 2] - P[lo4 + 2])
            out[row + 3, f] = coef * (P[hi4 + 3] - P[lo4 + 3])
        row += 4
    while row < stop:
        acc = 0.0
        P[0] = 0.0
        for p in range(n):
            acc += Y[row, leaf_order[p]]
            P[p + 1] = acc
        for f in range(k):
            out[row, f] = scale[f] * (P[end[f]] - P[start[f]])
        row += 1


@numba.njit(parallel=True, cache=True)
def folder_means_rows(Y, leaf_order, start, end, scale, n_threads, out):
    """``out[a, f] = scale[f] * sum(Y[a, leaf_order[start[f]:end[f]]])``.

    Y has shape (A, n), out (A, k).
    """
    A = Y.shape[0]
    n_parts = min(n_threads, max(A, 1))
    for part in prange(n_parts):
        lo, hi = _split(A, n_parts, part)
        _rows_range(Y, leaf_order, start, end, scale, lo, hi, out)


@numba.njit(cache=True)
def _mid_range(Y, leaf_order, start, end, scale, lanes, lo, hi, out):
    n, B = Y.shape[1], Y.shape[2]
    k = start.shape[0]
    n_blocks = (B + lanes - 1) // lanes
    # flat (n + 1) x lanes running sums: a 2-D allocation here keeps numba from caching
    P = np.empty((n + 1) * lanes, dtype=np.float64)
    for item in range(lo, hi):
        a = item // n_blocks
        b0 = (item % n_blocks) * lanes
        w = min(lanes, B - b0)
        for b in range(w):
            P[b] = 0.0
        for p in range(n):
            r = leaf_order[p]
            row = p * lanes
            for b in range(w):
                P[row + lanes + b] = P[row + b] + Y[a, r, b0 + b]
        for f in range(k):
            s = start[f] * lanes
            e = end[f] * lanes
            c = scale[f]
            for b in range(w):
                out[a, f, b0 + b] = c * (P[e + b] - P[s + b])


@numba.njit(parallel=True, cache=True)
def folder_means_mid(Y, leaf_order, start, end, scale, lanes, n_threads, out):
    """Folder means along the middle axis: Y (A, n, B) -> out (A, k, B).

    ``out[a, f, b] = scale[f] * sum(Y[a, leaf_order[start[f]:end[f]], b])``.
    Lanes ``b`` are processed in blocks of ``lanes`` so that the running-sum
    buffer stays small whatever B is.
    """
    A, B = Y.shape[0], Y.shape[2]
    n_blocks = (B + lanes - 1) // lanes
    n_items = A * n_blocks
    n_parts = min(n_threads, max(n_items, 1))
    for part in prange(n_parts):
        lo, hi = _split(n_items, n_parts, part)
        _mid_range(Y, leaf_order, start, end, scale, lanes, lo, hi, out)


@numba.njit(fastmath=True, inline="always")
def _pair_sum(a, b):
    s = 0.0
    for f in range(a.shape[0]):
        s += abs(np.float64(a[f]) - np.float64(b[f]))
    return s


@numba.njit(fastmath=True, inline="always")
def _tile_chunk(F, i0, i1, j0, j1, f0, f1, acc, diag, minus_one):
    """Add the L1 sums over features f0:f1 of rows i0:i1 x j0:j1 to acc.

    On a diagonal tile (i0 == j0) micro-tiles strictly below the diagonal are
    skipped; the caller reads only j > i there. Sums run in F's precision: in
    one pass for float64, in runs of ``_LOWP_RUN`` features for float32 (each
    run's sum then added to the float64 ``acc``), which keeps the float32
    rounding error near that of the features themselves. ``minus_one`` is -1, given at run
    time: each difference is ``muladd(y, minus_one, x)``, the bits of ``x - y`` on the
    multiply-add units (see :mod:`skorg._kernels._muladd`).
    """
    if f1 <= f0:
        return
    zero = F[i0, f0] - F[i0, f0]  # 0 in F's dtype (F is finite)
    run = f1 - f0 if F.itemsize == 8 else _LOWP_RUN
    i = i0
    while i < i1:
        ni = min(4, i1 - i)
        j = j0
        while j < j1:
            nj = min(4, j1 - j)
            if diag and j + nj - 1 <= i:
                j += 4
                continue
            r = i - i0
            c = j - j0
            if ni == 4 and nj == 4:
                for g0 in range(f0, f1, run):
                    g1 = min(g0 + run, f1)
                    a0 = F[i, g0:g1]
                    a1 = F[i + 1, g0:g1]
                    a2 = F[i + 2, g0:g1]
                    a3 = F[i + 3, g0:g1]
                    b0 = F[j, g0:g1]
                    b1 = F[j + 1, g0:g1]
                    b2 = F[j + 2, g0:g1]
                    b3 = F[j + 3, g0:g1]
                    s00 = s01 = s02 = s03 = zero
                    s10 = s11 = s12 = s13 = zero
                    s20 = s21 = s22 = s23 = zero
                    s30 = s31 = s32 = s33 = zero
                    for f in range(a0.shape[0]):
                        x0 = a0[f]
                        x1 = a1[f]
                        x2 = a2[f]
                        x3 = a3[f]
                        y0 = b0[f]
                        y1 = b1[f]
                        y2 = b2[f]
                        y3 = b3[f]
                        s00 += abs(muladd(y0, minus_one, x0))
                        s01 += abs(muladd(y1, minus_one, x0))
                        s02 += abs(muladd(y2, minus_one, x0))
                        s03 += abs(muladd(y3, minus_one, x0))
                        s10 += abs(muladd(y0, minus_one, x1))
                        s11 += abs(muladd(y1, minus_one, x1))
                        s12 += abs(muladd(y2, minus_one, x1))
                        s13 += abs(muladd(y3, minus_one, x1))
                        s20 += abs(muladd(y0, minus_one, x2))
                        s21 += abs(muladd(y1, minus_one, x2))
                        s22 += abs(muladd(y2, minus_one, x2))
                        s23 += abs(muladd(y3, minus_one, x2))
                        s30 += abs(muladd(y0, minus_one, x3))
                        s31 += abs(muladd(y1, minus_one, x3))
                        s32 += abs(muladd(y2, minus_one, x3))
                        s33 += abs(muladd(y3, minus_one, x3))
                    acc[r, c] += s00
                    acc[r, c + 1] += s01
                    acc[r, c + 2] += s02
                    acc[r, c + 3] += s03
                    acc[r + 1, c] += s10
                    acc[r + 1, c + 1] += s11
                    acc[r + 1, c + 2] += s12
                    acc[r + 1, c + 3] += s13
                    acc[r + 2, c] += s20
                    acc[r + 2, c + 1] += s21
                    acc[r + 2, c + 2] += s22
                    acc[r + 2, c + 3] += s23
                    acc[r + 3, c] += s30
                    acc[r + 3, c + 1] += s31
                    acc[r + 3, c + 2] += s32
                    acc[r + 3, c + 3] += s33
            else:
                for ii in range(i, i + ni):
                    a = F[ii, f0:f1]
                    for jj in range(j, j + nj):
                        acc[ii - i0, jj - j0] += _pair_sum(a, F[jj, f0:f1])
            j += 4
        i += 4


@numba.njit(fastmath=True, cache=True)
def _l1_tile(F, i0, j0, tile, chunk, out, minus_one):
    """The tile pair at rows i0 and j0 of :func:`pairwise_l1_sym`."""
    m, k = F.shape
    i1 = min(i0 + tile, m)
    j1 = min(j0 + tile, m)
    diag = i0 == j0
    acc = np.zeros((tile, tile), dtype=np.float64)
    for f0 in range(0, k, chunk):
        _tile_chunk(F, i0, i1, j0, j1, f0, min(f0 + chunk, k), acc, diag, minus_one)
    for i in range(i0, i1):
        for j in range(j0, j1):
            if j > i or not diag:
                out[i, j] += acc[i - i0, j - j0]
                out[j, i] += acc[i - i0, j - j0]


@numba.njit(parallel=True, cache=True)
def pairwise_l1_sym(F, tile_i, tile_j, tile, chunk, out, minus_one):
    """Add ``sum_f |F[i, f] - F[j, f]|`` to ``out[i, j]`` and ``out[j, i]``.

    F has shape (m, k); out is (m, m) float64. ``tile_i``, ``tile_j`` list the
    tile pairs (tile_i <= tile_j) of the upper triangle, ``tile`` is the tile
    side (a multiple of 4) and ``chunk`` the number of features per pass. ``minus_one``
    must be -1.0 (an argument so that the compiler keeps the multiply-adds of
    :func:`_tile_chunk`).
    """
    for p in prange(tile_i.shape[0]):
        _l1_tile(F, tile_i[p] * tile, tile_j[p] * tile, tile, chunk, out, minus_one)


@numba.njit(cache=True)
def pairwise_l1_sym_serial(F, tile_i, tile_j, tile, chunk, out, minus_one):
    """:func:`pairwise_l1_sym` without a parallel region (same sums, same order)."""
    for p in range(tile_i.shape[0]):
        _l1_tile(F, tile_i[p] * tile, tile_j[p] * tile, tile, chunk, out, minus_one)
