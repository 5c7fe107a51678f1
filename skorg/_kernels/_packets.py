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


# the column blocks of the level steps: every block runs both passes of a step on its own
# columns, so a parallel step is one parallel region without a barrier inside, and the
# scratch rows of a block (n x 64 values, 512 kB for n = 1024) stay in cache between passes
# (the cost table of the searches goes through skorg._kernels._packet_slots instead)
BLOCK = 64


@numba.njit(cache=True, fastmath={"reassoc"})
def _sum_abs(row, scale):
    # sum |scale * row|: reassociation lets the sum vectorize; the order is still fixed for
    # a compiled kernel, so the result does not depend on the threads or the call. The
    # scale is applied to every entry (the sum of the raw magnitudes may overflow)
    acc = 0.0
    for t in range(row.shape[0]):
        acc += abs(row[t] * scale)
    return acc


@numba.njit(cache=True, fastmath={"reassoc"})
def _sum_sq(row, scale):
    acc = 0.0
    for t in range(row.shape[0]):
        v = row[t] * scale
        acc += v * v
    return acc


@numba.njit(cache=True)
def _row_cost_one(row, kind, power, scale):
    # l1 and the squares (the energy) as vectorized sums, the other costs entry by entry
    if kind == COST_L1:
        return _sum_abs(row, scale)
    if kind == COST_LP and power == 2.0:
        return _sum_sq(row, scale)
    acc = 0.0
    for t in range(row.shape[0]):
        acc += _cost(row[t] * scale, kind, power)
    return acc


# The loops below run over slices indexed from 0: a loop from a variable start keeps a
# negative-index check per element and does not vectorize (see skorg._kernels._peak).
@numba.njit(cache=True)
def _step_block(cur, active, sa, sb, wa, wb, tmp, lo, hi):
    m = hi - lo
    for k in range(active.shape[0]):
        ra, rc, out = cur[sa[k], lo:hi], cur[sb[k], lo:hi], tmp[k, lo:hi]
        x, y = wa[k], wb[k]
        for t in range(m):
            out[t] = x * ra[t] + y * rc[t]
    for k in range(active.shape[0]):
        src, out = tmp[k, lo:hi], cur[active[k], lo:hi]
        for t in range(m):
            out[t] = src[t]


@numba.njit(parallel=True, cache=True)
def level_step(cur, active, sa, sb, wa, wb, tmp):
    """One level in place: ``cur[active[k]] = wa[k] cur[sa[k]] + wb[k] cur[sb[k]]`` for all
    ``k`` at once (through ``tmp``, at least ``len(active)`` rows), by blocks of columns."""
    b = cur.shape[1]
    for blk in prange((b + BLOCK - 1) // BLOCK):
        _step_block(cur, active, sa, sb, wa, wb, tmp, blk * BLOCK, min(b, (blk + 1) * BLOCK))


@numba.njit(cache=True)
def level_step_serial(cur, active, sa, sb, wa, wb, tmp):
    """The serial twin of :func:`level_step` (the same blocks of columns, whose scratch rows
    stay in cache)."""
    b = cur.shape[1]
    for blk in range((b + BLOCK - 1) // BLOCK):
        _step_block(cur, active, sa, sb, wa, wb, tmp, blk * BLOCK, min(b, (blk + 1) * BLOCK))


# Every kernel comes twice: parallel over the rows (or blocks of columns), and serial
# (``*_serial``, the same body) for arrays of fewer than SERIAL_SIZE values. The serial ones
# take most sizes: a step streams its rows once, and on this project's shared 2-core machines
# (load average 10-12) the parallel steps took 5-13x the serial time on 2^20 values
# (level step 70 against 5 ms), waiting on descheduled threads at every fork-join.
SERIAL_SIZE = 1 << 22


@numba.njit(parallel=True, cache=True)
def row_cost(src, kind, power, scale, cost):
    """``cost[p]`` = the sum of the additive cost of ``scale * src[p, t]`` over ``t``."""
    n = src.shape[0]
    for p in prange(n):
        cost[p] = _row_cost_one(src[p], kind, power, scale)


@numba.njit(cache=True)
def row_cost_serial(src, kind, power, scale, cost):
    """The serial twin of :func:`row_cost`."""
    n = src.shape[0]
    for p in range(n):
        cost[p] = _row_cost_one(src[p], kind, power, scale)


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
