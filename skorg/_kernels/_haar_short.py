"""Tree Haar kernels for many short rows on a perfect binary tree (the last axis, ``B == 1``).

The data is a flat C-contiguous view of an array of ``A`` rows of ``n`` values, ``n`` a power
of two. A block of ``R`` consecutive rows is lifted level by level as one flat run: on a row
of even length the pairs of a level are neighbours in the row, and rows of the same length
lie end to end, so the pairs of all ``R`` rows of a level are the neighbours of one
contiguous buffer. Each level is one loop over ``R * h`` pairs (SIMD code, the lifting loop
of :mod:`skorg._kernels._haar_rows`), and only its coefficients are then put in their rows.
The vector-at-a-time lifting instead runs every level of every row as its own short loop,
and the transposed 64-lane blocks of :mod:`skorg._kernels._haar` go through the tree's index
arrays; on rows of up to a few hundred values both cost 1.5-6x more per value.

The floating-point operations are those of the vector-at-a-time lifting, in the same order
(pair sums ``a + b``, coefficient ``w * b - w * (s - b)``, the inverse's
``-(w * c) + v`` and ``w * c + v``), so the results are equal bit for bit. On a perfect
binary tree every folder of a level has the same two weights (``wplus[h - 1]``).
"""

import numba
import numpy as np

from ._haar_rows import _pair_level, _split

# unsigned offsets: numba indexes with them without a negative-index wraparound
_U = np.uint64
# values per block of rows: its level buffers (half as many float64 each) stay in L1
BLOCK_VALUES = 2048


@numba.njit(cache=True)
def _into_rows(d, out, o0, R, h, n):
    """``out[o0 + r * n + h + j] = d[r * h + j]``: a level's coefficients into their rows
    (short levels written out value by value, which beats a loop of one to four)."""
    one, two, three = _U(1), _U(2), _U(3)
    hu = _U(h)
    nu = _U(n)
    o = _U(o0) + hu
    q = _U(0)
    if h == 1:
        for r in range(_U(R)):
            out[o] = d[r]
            o += nu
    elif h == 2:
        for _r in range(_U(R)):
            out[o] = d[q]
            out[o + one] = d[q + one]
            o += nu
            q += hu
    elif h == 4:
        for _r in range(_U(R)):
            out[o] = d[q]
            out[o + one] = d[q + one]
            out[o + two] = d[q + two]
            out[o + three] = d[q + three]
            o += nu
            q += hu
    else:
        for _r in range(_U(R)):
            for j in range(hu):
                out[o + j] = d[q + j]
            o += nu
            q += hu


@numba.njit(cache=True)
def _from_rows(C, d, o0, R, h, n):
    """``d[r * h + j] = C[o0 + r * n + h + j]`` in float64: a level's coefficients gathered
    from their rows (the mirror of :func:`_into_rows`)."""
    one, two, three = _U(1), _U(2), _U(3)
    hu = _U(h)
    nu = _U(n)
    o = _U(o0) + hu
    q = _U(0)
    if h == 1:
        for r in range(_U(R)):
            d[r] = np.float64(C[o])
            o += nu
    elif h == 2:
        for _r in range(_U(R)):
            d[q] = np.float64(C[o])
            d[q + one] = np.float64(C[o + one])
            o += nu
            q += hu
    elif h == 4:
        for _r in range(_U(R)):
            d[q] = np.float64(C[o])
            d[q + one] = np.float64(C[o + one])
            d[q + two] = np.float64(C[o + two])
            d[q + three] = np.float64(C[o + three])
            o += nu
            q += hu
    else:
        for _r in range(_U(R)):
            for j in range(hu):
                d[q + j] = np.float64(C[o + j])
            o += nu
            q += hu


@numba.njit(cache=True)
def _unpair_flat(src, dst, d, w, M):
    """One inverse level over M folders end to end: the total ``src[j]`` and coefficient
    ``d[j]`` of folder j give its children ``dst[2j]``, ``dst[2j + 1]``."""
    one = _U(1)
    for j in range(_U(M)):
        ck = d[j]
        v = src[j]
        dst[j + j] = -(w * ck) + v
        dst[j + j + one] = w * ck + v


@numba.njit(cache=True)
def _forward_block(X, out, n, r0, r1, leaf_order, wplus, scale0, identity, g, t, u, d):
    """Coefficients of rows r0..r1-1. ``g`` holds ``R * n`` values of X's dtype (the rows in
    leaf order when that is not the identity), ``t``, ``u``, ``d`` ``R * n / 2`` float64."""
    R = r1 - r0
    base = r0 * n
    h = n >> 1
    if identity:
        _pair_level(X[base : base + R * n], t, d, 0, wplus[h - 1], R * h)
    else:
        for r in range(R):
            o = base + r * n
            q = r * n
            for i in range(n):
                g[q + i] = X[o + leaf_order[i]]
        _pair_level(g, t, d, 0, wplus[h - 1], R * h)
    _into_rows(d, out, base, R, h, n)
    h >>= 1
    while h >= 1:
        _pair_level(t, u, d, 0, wplus[h - 1], R * h)
        _into_rows(d, out, base, R, h, n)
        t, u = u, t
        h >>= 1
    for r in range(R):
        out[base + r * n] = t[r] * scale0


@numba.njit(cache=True)
def _inverse_block(C, out, n, r0, r1, leaf_order, wplus, scale0, identity, g, t, u, d):
    """Data of coefficient rows r0..r1-1 (buffers as in :func:`_forward_block`, ``g``
    float64 here: the last level's values before they go to their leaf-order places)."""
    R = r1 - r0
    base = r0 * n
    for r in range(R):
        t[r] = np.float64(C[base + r * n]) * scale0
    h = 1
    while h < n >> 1:
        _from_rows(C, d, base, R, h, n)
        _unpair_flat(t, u, d, wplus[h - 1], R * h)
        t, u = u, t
        h <<= 1
    _from_rows(C, d, base, R, h, n)
    if identity:
        _unpair_flat(t, out[base : base + R * n], d, wplus[h - 1], R * h)
    else:
        _unpair_flat(t, g, d, wplus[h - 1], R * h)
        for r in range(R):
            o = base + r * n
            q = r * n
            for i in range(n):
                out[o + leaf_order[i]] = g[q + i]


@numba.njit(cache=True)
def short_rows_range(X, out, n, lo, hi, inverse, identity, leaf_order, wplus):
    """Transform rows lo..hi-1 of ``n`` values (``n >= 2`` a power of two), blocks of
    ``BLOCK_VALUES // n`` rows (or all of them, when fewer) at a time."""
    R = max(1, min(BLOCK_VALUES // n, hi - lo))  # no larger buffers than the rows need
    half = R * n // 2
    t = np.empty(half, dtype=np.float64)
    u = np.empty(half, dtype=np.float64)
    d = np.empty(half, dtype=np.float64)
    scale0 = 1.0 / np.sqrt(n)
    if inverse:
        g = np.empty(0 if identity else R * n, dtype=np.float64)
        for r0 in range(lo, hi, R):
            _inverse_block(X, out, n, r0, min(r0 + R, hi), leaf_order, wplus, scale0, identity,
                           g, t, u, d)  # fmt: skip
    else:
        g = np.empty(0 if identity else R * n, dtype=X.dtype)
        for r0 in range(lo, hi, R):
            _forward_block(X, out, n, r0, min(r0 + R, hi), leaf_order, wplus, scale0, identity,
                           g, t, u, d)  # fmt: skip


@numba.njit(cache=True, parallel=True)
def short_rows(X, out, n, n_rows, inverse, identity, leaf_order, wplus, n_tasks):
    """:func:`short_rows_range` over all rows, in ``n_tasks`` tasks of consecutive rows."""
    for task in numba.prange(n_tasks):
        lo, hi = _split(task, n_tasks, n_rows)
        short_rows_range(X, out, n, lo, hi, inverse, identity, leaf_order, wplus)
