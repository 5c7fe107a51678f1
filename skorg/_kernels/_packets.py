"""Kernels of the generalized Haar-Walsh packet dictionary (arrays in, arrays out).

Level ``j`` of the dictionary is an array of ``n`` coefficients: the regions of binary depth
``j`` end to end (positions of one packet order of the points), each region's coefficients
by increasing frequency tag. Level ``j`` comes from level ``j + 1`` by one butterfly per
position: ``D_j[p] = wa[p] D_{j+1}[sa[p]] + wb[p] D_{j+1}[sb[p]]`` (``wb = 0`` where a
coefficient is copied), and the way back is a butterfly too (``inverse_*`` arrays). Data
are laid out with the transformed axis first, ``(n, B)``, so that every butterfly reads and
writes whole contiguous rows of ``B`` values.
"""

import math

import numba
from numba import prange

COST_L1 = 0
COST_LP = 1
COST_ENTROPY = 2


@numba.njit(cache=True)
def merge_level(rstart, rmid, rend, tags_fine, odd_fine, sa, sb, wa, wb, key):
    """One level of the plan from the tags of the level below.

    ``rstart, rmid, rend``: the regions of the level (children ``[start, mid)`` and
    ``[mid, end)``; ``mid == end`` for a carried singleton). ``tags_fine``: the tag rank of
    every position of the level below, increasing within each region. Writes the sources
    ``sa, sb``, weights ``wa, wb`` and the sort key ``2 * tag_below + bit`` of each position.
    """
    for r in range(rstart.shape[0]):
        s, m, e = rstart[r], rmid[r], rend[r]
        i, k, o = s, m, s
        na, nb = m - s, e - m
        while i < m or k < e:
            if k >= e or (i < m and tags_fine[i] < tags_fine[k]):
                sa[o], sb[o], wa[o], wb[o], key[o] = i, i, 1.0, 0.0, 2 * tags_fine[i]
                o += 1
                i += 1
            elif i >= m or tags_fine[k] < tags_fine[i]:
                sa[o], sb[o], wa[o], wb[o], key[o] = k, k, 1.0, 0.0, 2 * tags_fine[k]
                o += 1
                k += 1
            else:
                u = tags_fine[i]
                if u == 0:  # the scaling pair: the averages and the Haar vector
                    tot = float(na + nb)
                    ca, cb = math.sqrt(na / tot), math.sqrt(nb / tot)
                    sa[o], sb[o], wa[o], wb[o], key[o] = i, k, ca, cb, 0
                    sa[o + 1], sb[o + 1], wa[o + 1], wb[o + 1] = i, k, cb, -ca
                    key[o + 1] = 1
                else:
                    h = math.sqrt(0.5)
                    g = -h if odd_fine[i] else h
                    sa[o], sb[o], wa[o], wb[o], key[o] = i, k, h, g, 2 * u
                    sa[o + 1], sb[o + 1], wa[o + 1], wb[o + 1] = i, k, h, -g
                    key[o + 1] = 2 * u + 1
                o += 2
                i += 1
                k += 1


@numba.njit(cache=True)
def _cost(v, kind, power):
    a = abs(v)
    if kind == COST_L1:
        return a
    if kind == COST_LP:
        return a**power if a > 0.0 else 0.0
    e = a * a
    return -e * math.log(e) if e > 0.0 else 0.0


# Every kernel below comes twice: parallel over the rows, and serial (``*_serial``, the same
# body) for arrays of fewer than SERIAL_SIZE values, where waking the thread pool costs more
# than the work (milliseconds on a loaded machine against microseconds of work).
SERIAL_SIZE = 1 << 17


@numba.njit(parallel=True, cache=True)
def butterfly(src, sa, sb, wa, wb, dst):
    """``dst[p] = wa[p] src[sa[p]] + wb[p] src[sb[p]]`` for every row ``p`` (2-D arrays)."""
    n, b = dst.shape
    for p in prange(n):
        a, c = sa[p], sb[p]
        x, y = wa[p], wb[p]
        ra, rc, out = src[a], src[c], dst[p]
        if y == 0.0:
            for t in range(b):
                out[t] = x * ra[t]
        else:
            for t in range(b):
                out[t] = x * ra[t] + y * rc[t]


@numba.njit(cache=True)
def butterfly_serial(src, sa, sb, wa, wb, dst):
    """The serial twin of :func:`butterfly`."""
    n, b = dst.shape
    for p in range(n):
        a, c = sa[p], sb[p]
        x, y = wa[p], wb[p]
        ra, rc, out = src[a], src[c], dst[p]
        if y == 0.0:
            for t in range(b):
                out[t] = x * ra[t]
        else:
            for t in range(b):
                out[t] = x * ra[t] + y * rc[t]


@numba.njit(parallel=True, cache=True)
def butterfly_cost(src, sa, sb, wa, wb, dst, kind, power, scale, cost):
    """:func:`butterfly`, and ``cost[p]`` = the sum over the row of the additive cost of
    ``scale * dst[p, t]`` (``kind``: l1, l^power or -x^2 log x^2)."""
    n, b = dst.shape
    for p in prange(n):
        a, c = sa[p], sb[p]
        x, y = wa[p], wb[p]
        ra, rc, out = src[a], src[c], dst[p]
        acc = 0.0
        for t in range(b):
            v = x * ra[t] + y * rc[t]
            out[t] = v
            acc += _cost(v * scale, kind, power)
        cost[p] = acc


@numba.njit(cache=True)
def butterfly_cost_serial(src, sa, sb, wa, wb, dst, kind, power, scale, cost):
    """The serial twin of :func:`butterfly_cost`."""
    n, b = dst.shape
    for p in range(n):
        a, c = sa[p], sb[p]
        x, y = wa[p], wb[p]
        ra, rc, out = src[a], src[c], dst[p]
        acc = 0.0
        for t in range(b):
            v = x * ra[t] + y * rc[t]
            out[t] = v
            acc += _cost(v * scale, kind, power)
        cost[p] = acc


@numba.njit(parallel=True, cache=True)
def row_cost(src, kind, power, scale, cost):
    """``cost[p]`` = the sum of the additive cost of ``scale * src[p, t]`` over ``t``."""
    n, b = src.shape
    for p in prange(n):
        row = src[p]
        acc = 0.0
        for t in range(b):
            acc += _cost(row[t] * scale, kind, power)
        cost[p] = acc


@numba.njit(cache=True)
def row_cost_serial(src, kind, power, scale, cost):
    """The serial twin of :func:`row_cost`."""
    n, b = src.shape
    for p in range(n):
        row = src[p]
        acc = 0.0
        for t in range(b):
            acc += _cost(row[t] * scale, kind, power)
        cost[p] = acc


@numba.njit(parallel=True, cache=True)
def gather_rows(src, rows, dst, at):
    """``dst[at[k]] = src[rows[k]]`` for every ``k`` (2-D arrays)."""
    b = src.shape[1]
    for k in prange(rows.shape[0]):
        s, d = src[rows[k]], dst[at[k]]
        for t in range(b):
            d[t] = s[t]


@numba.njit(cache=True)
def gather_rows_serial(src, rows, dst, at):
    """The serial twin of :func:`gather_rows`."""
    b = src.shape[1]
    for k in range(rows.shape[0]):
        s, d = src[rows[k]], dst[at[k]]
        for t in range(b):
            d[t] = s[t]


@numba.njit(parallel=True, cache=True)
def add_rows(src, rows, dst, at):
    """``dst[at[k]] += src[rows[k]]`` for every ``k`` (the ``at`` distinct)."""
    b = src.shape[1]
    for k in prange(rows.shape[0]):
        s, d = src[rows[k]], dst[at[k]]
        for t in range(b):
            d[t] += s[t]


@numba.njit(cache=True)
def add_rows_serial(src, rows, dst, at):
    """The serial twin of :func:`add_rows`."""
    b = src.shape[1]
    for k in range(rows.shape[0]):
        s, d = src[rows[k]], dst[at[k]]
        for t in range(b):
            d[t] += s[t]
