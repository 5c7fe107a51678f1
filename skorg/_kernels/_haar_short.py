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

# _U: the unsigned offsets of the lifting kernels (no negative-index wraparound)
from ._haar_rows import _U, _copy, _pair_level, _split

# values per block of rows: its level buffers (half as many float64 each) stay in L1
BLOCK_VALUES = 2048


@numba.njit(cache=True)
def _copy_runs(src, s0, s_step, dst, d0, d_step, R, h):
    """``dst[d0 + r * d_step + j] = src[s0 + r * s_step + j]`` for R runs of h values: a
    level's coefficients into their rows (``src`` the level's flat buffer, ``s_step = h``)
    or out of them (``dst`` the buffer, float64). Runs of 1, 2 and 4 are written out value
    by value, which beats a loop of one to four."""
    one, two, three = _U(1), _U(2), _U(3)
    s = _U(s0)
    d = _U(d0)
    ss = _U(s_step)
    ds = _U(d_step)
    if h == 1:
        for _r in range(_U(R)):
            dst[d] = src[s]
            s += ss
            d += ds
    elif h == 2:
        for _r in range(_U(R)):
            dst[d] = src[s]
            dst[d + one] = src[s + one]
            s += ss
            d += ds
    elif h == 4:
        for _r in range(_U(R)):
            dst[d] = src[s]
            dst[d + one] = src[s + one]
            dst[d + two] = src[s + two]
            dst[d + three] = src[s + three]
            s += ss
            d += ds
    else:
        for _r in range(_U(R)):
            for j in range(_U(h)):
                dst[d + j] = src[s + j]
            s += ss
            d += ds


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


@numba.njit(cache=True, inline="always")
def _gather_pair_rows(g, leaf_order, t, d, w, R, n):
    """The first level of R rows of n values end to end in ``g``, each taken in ``leaf_order``
    (:func:`skorg._kernels._haar_rows._gather_pair_level` row by row)."""
    h = _U(n >> 1)
    one = _U(1)
    for r in range(_U(R)):
        q = r * _U(n)
        k = r * h
        for j in range(h):
            a = np.float64(g[q + _U(leaf_order[j + j])])
            b = np.float64(g[q + _U(leaf_order[j + j + one])])
            s = a + b
            d[k + j] = w * b - w * (s - b)
            t[k + j] = s


@numba.njit(cache=True)
def _forward_block(X, out, n, r0, r1, leaf_order, wplus, scale0, identity, g, t, u, d):
    """Coefficients of rows r0..r1-1. ``g`` holds ``R * n`` values of X's dtype (a copy of the
    rows, read in order, when the leaf order is not the identity: the gather then reads the
    cache, not memory in a random order), ``t``, ``u``, ``d`` ``R * n / 2`` float64."""
    R = r1 - r0
    base = r0 * n
    h = n >> 1
    if identity:
        _pair_level(X[base : base + R * n], t, d, 0, wplus[h - 1], R * h)
    else:
        _copy(X[base : base + R * n], g, R * n)
        _gather_pair_rows(g, leaf_order, t, d, wplus[h - 1], R, n)
    _copy_runs(d, 0, h, out, base + h, n, R, h)
    h >>= 1
    while h >= 1:
        _pair_level(t, u, d, 0, wplus[h - 1], R * h)
        _copy_runs(d, 0, h, out, base + h, n, R, h)
        t, u = u, t
        h >>= 1
    for r in range(R):
        out[base + r * n] = t[r] * scale0


@numba.njit(cache=True)
def _inverse_block(C, out, n, r0, r1, leaf_rank, wplus, scale0, identity, g, t, u, d):
    """Data of coefficient rows r0..r1-1 (buffers as in :func:`_forward_block`, ``g``
    float64 here: the last level's values, which each row's points gather by ``leaf_rank``,
    the leaf position of every point, so that the rows are written in order)."""
    R = r1 - r0
    base = r0 * n
    for r in range(R):
        t[r] = np.float64(C[base + r * n]) * scale0
    h = 1
    while h < n >> 1:
        _copy_runs(C, base + h, n, d, 0, h, R, h)
        _unpair_flat(t, u, d, wplus[h - 1], R * h)
        t, u = u, t
        h <<= 1
    _copy_runs(C, base + h, n, d, 0, h, R, h)
    if identity:
        _unpair_flat(t, out[base : base + R * n], d, wplus[h - 1], R * h)
    else:
        _unpair_flat(t, g, d, wplus[h - 1], R * h)
        for r in range(_U(R)):
            o = _U(base) + r * _U(n)
            q = r * _U(n)
            for i in range(_U(n)):
                out[o + i] = g[q + _U(leaf_rank[i])]


@numba.njit(cache=True)
def short_rows_range(X, out, n, lo, hi, inverse, identity, perm, wplus):
    """Transform rows lo..hi-1 of ``n`` values (``n >= 2`` a power of two), blocks of
    ``BLOCK_VALUES // n`` rows (or all of them, when fewer) at a time. ``perm``: the tree's
    leaf order (forward) or its inverse, the leaf position of every point (inverse); both
    kernels gather by it."""
    R = max(1, min(BLOCK_VALUES // n, hi - lo))  # no larger buffers than the rows need
    half = R * n // 2
    t = np.empty(half, dtype=np.float64)
    u = np.empty(half, dtype=np.float64)
    d = np.empty(half, dtype=np.float64)
    scale0 = 1.0 / np.sqrt(n)
    if inverse:
        g = np.empty(0 if identity else R * n, dtype=np.float64)
        for r0 in range(lo, hi, R):
            _inverse_block(X, out, n, r0, min(r0 + R, hi), perm, wplus, scale0, identity, g, t,
                           u, d)  # fmt: skip
    else:
        g = np.empty(0 if identity else R * n, dtype=X.dtype)
        for r0 in range(lo, hi, R):
            _forward_block(X, out, n, r0, min(r0 + R, hi), perm, wplus, scale0, identity, g, t,
                           u, d)  # fmt: skip


@numba.njit(cache=True, parallel=True)
def short_rows(X, out, n, n_rows, inverse, identity, perm, wplus, n_tasks):
    """:func:`short_rows_range` over all rows, in ``n_tasks`` tasks of consecutive rows."""
    for task in numba.prange(n_tasks):
        lo, hi = _split(task, n_tasks, n_rows)
        short_rows_range(X, out, n, lo, hi, inverse, identity, perm, wplus)
