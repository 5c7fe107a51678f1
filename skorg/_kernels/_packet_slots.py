"""Kernels of the in-place Haar-Walsh packet dictionary (arrays in, arrays out).

The data go through the dictionary a block of ``width`` columns at a time: a block of the
``n`` rows (``n x width`` values, at most 2 MiB) is copied once into a contiguous buffer,
where every level is computed from the one below in place by the butterfly pairs of
``skorg.transforms._packet_slots`` (a pair reads and rewrites two rows of the buffer; a quad
two pairs and the two pairs above them), so the data are read from memory once. The ops run
in the schedule's order: every region's after those of the regions inside it (depth
first), so that the levels of a small region are all computed while its rows sit in the L1
cache, and only the few large regions stream through L2. The butterflies are those of
:mod:`skorg._kernels._packets` (``x * u + y * v``, the same rounding), so every coefficient
is the same, bit for bit.

Costs are summed per block into ``part`` (one ``(levels, n)`` array per block of a group),
then added into the table block by block in column order: the sums do not depend on the
number of threads or the size of a group.
"""

import math

import numba
import numpy as np
from numba import prange

from ._packets import COST_L1, COST_LP

# Columns per block (the callers choose it from the sizes, see
# skorg.transforms._packet_core._block_width; WIDTH: the tests' default). The width reaches
# the loops as a run-time argument: a loop of a constant 16 or 32 is unrolled and then left
# scalar (the two rows of a pair may alias as far as LLVM knows), while a loop of unknown
# length is vectorized behind one run-time overlap check. 64 columns: 0.08 ns per value and
# level against 0.15 for 16 (a pair's fixed cost: its indices, weights and two horizontal
# sums, spread over more columns).
WIDTH = 64
# padding of a block's rows: with rows of a power of two of bytes, the two rows of a pair a
# power of two of rows apart sit a multiple of 4 kB apart, and the loads of one stall on
# the stores to the other ("4K aliasing")
PAD = 8


@numba.njit(cache=True, fastmath={"reassoc"})
def _row_cost(row, kind, power):
    # the l^p and entropy costs (the l1 sums are written out in the loops below), one loop
    # per kind without a branch inside, so that each can vectorize (0 ** p = 0 for p > 0;
    # the entropy's 0 log 0 = 0 through log(1))
    acc = 0.0
    if kind == COST_LP:
        if power == 2.0:
            for t in range(row.shape[0]):
                acc += row[t] * row[t]
        elif power == 0.5:  # a square root: one instruction, where pow is a libm call
            for t in range(row.shape[0]):
                acc += math.sqrt(abs(row[t]))
        else:
            for t in range(row.shape[0]):
                acc += abs(row[t]) ** power
        return acc
    for t in range(row.shape[0]):
        e = row[t] * row[t]
        acc -= e * math.log(e if e > 0.0 else 1.0)
    return acc


@numba.njit(cache=True)
def load_block(rows, lo, scale, buf, width):
    """``buf[:, :m] = scale * rows[:, lo:lo + m]`` (``m`` the columns left, at most
    ``width``), zeros after up to ``width`` (a zero costs nothing and stays zero); columns
    of ``buf`` past ``width`` are padding."""
    n, b = rows.shape
    m = min(width, b - lo)
    for s in range(n):
        src, dst = rows[s, lo : lo + m], buf[s]
        for t in range(m):
            dst[t] = src[t] * scale
        for t in range(m, width):
            dst[t] = 0.0


@numba.njit(cache=True, fastmath={"reassoc"})
def block_costs(buf, width, lev, pa, pb, w, kind, power, part):
    """Every level of one block in place, in the schedule's order; ``part[j, s]``: the cost
    of the row in slot ``s`` at level ``j`` (written for the slots that change only, and
    for every slot of the finest level, row ``part.shape[0] - 1``).

    The l1 norms are summed in the butterfly loop, written out here rather than called: a
    call per pair costs more than the pair (its row views are reference-counted). The
    reassociation lets the sums vectorize; it leaves the butterflies alone (two products
    and one sum each, the weights known at run time only: nothing to reassociate, and no
    fused multiply-add, which needs the separate "contract" flag), so the rows are the
    plain butterflies', bit for bit (tests/transforms/test_packet_slots.py).
    """
    last = part.shape[0] - 1
    l1 = kind == COST_L1
    for s in range(buf.shape[0]):
        row = buf[s]
        if l1:
            acc = 0.0
            for t in range(width):
                acc += abs(row[t])
            part[last, s] = acc
        else:
            part[last, s] = _row_cost(row[:width], kind, power)
    if l1:
        for q in range(pa.shape[0]):
            a, b, j = pa[q], pb[q], lev[q]
            ra, rb = buf[a], buf[b]
            x0, y0, x1, y1 = w[q, 0], w[q, 1], w[q, 2], w[q, 3]
            acc_a = 0.0
            acc_b = 0.0
            for t in range(width):
                u, v = ra[t], rb[t]
                na = x0 * u + y0 * v
                nb = x1 * u + y1 * v
                ra[t] = na
                rb[t] = nb
                acc_a += abs(na)
                acc_b += abs(nb)
            part[j, a] = acc_a
            part[j, b] = acc_b
        return
    for q in range(pa.shape[0]):
        a, b, j = pa[q], pb[q], lev[q]
        ra, rb = buf[a], buf[b]
        x0, y0, x1, y1 = w[q, 0], w[q, 1], w[q, 2], w[q, 3]
        for t in range(width):
            u, v = ra[t], rb[t]
            ra[t] = x0 * u + y0 * v
            rb[t] = x1 * u + y1 * v
        part[j, a] = _row_cost(ra[:width], kind, power)
        part[j, b] = _row_cost(rb[:width], kind, power)


@numba.njit(cache=True, fastmath={"reassoc"})
def block_costs_fused(buf, width, op_quad, op_ref, lev, pa, pb, w, qlev, qs, qw, part):
    """:func:`block_costs` for the l1 cost, by the fused schedule: a quad reads its four
    rows once, makes the two pairs of its lower level and then the two of the level above
    (the same butterflies, in the same order per value, so the same rows and sums), and
    writes them once."""
    last = part.shape[0] - 1
    for s in range(buf.shape[0]):
        row = buf[s]
        acc = 0.0
        for t in range(width):
            acc += abs(row[t])
        part[last, s] = acc
    for k in range(op_quad.shape[0]):
        r = op_ref[k]
        if not op_quad[k]:
            a, b, j = pa[r], pb[r], lev[r]
            ra, rb = buf[a], buf[b]
            x0, y0, x1, y1 = w[r, 0], w[r, 1], w[r, 2], w[r, 3]
            acc_a = 0.0
            acc_b = 0.0
            for t in range(width):
                u, v = ra[t], rb[t]
                na = x0 * u + y0 * v
                nb = x1 * u + y1 * v
                ra[t] = na
                rb[t] = nb
                acc_a += abs(na)
                acc_b += abs(nb)
            part[j, a] = acc_a
            part[j, b] = acc_b
            continue
        j = qlev[r]
        a, b, c, d = qs[r, 0], qs[r, 1], qs[r, 2], qs[r, 3]
        ra, rb, rc, rd = buf[a], buf[b], buf[c], buf[d]
        # the weights as scalars: read through the array inside the loop, LLVM could not
        # tell them apart from the rows it writes
        g0, g1, g2, g3 = qw[r, 0], qw[r, 1], qw[r, 2], qw[r, 3]
        g4, g5, g6, g7 = qw[r, 4], qw[r, 5], qw[r, 6], qw[r, 7]
        g8, g9, g10, g11 = qw[r, 8], qw[r, 9], qw[r, 10], qw[r, 11]
        g12, g13, g14, g15 = qw[r, 12], qw[r, 13], qw[r, 14], qw[r, 15]
        s1a, s1b, s1c, s1d = 0.0, 0.0, 0.0, 0.0
        s2a, s2b, s2c, s2d = 0.0, 0.0, 0.0, 0.0
        for t in range(width):
            ua, ub, uc, ud = ra[t], rb[t], rc[t], rd[t]
            na = g0 * ua + g1 * ub
            nb = g2 * ua + g3 * ub
            nc = g4 * uc + g5 * ud
            nd = g6 * uc + g7 * ud
            s1a += abs(na)
            s1b += abs(nb)
            s1c += abs(nc)
            s1d += abs(nd)
            ma = g8 * na + g9 * nc
            mc = g10 * na + g11 * nc
            mb = g12 * nb + g13 * nd
            md = g14 * nb + g15 * nd
            ra[t] = ma
            rb[t] = mb
            rc[t] = mc
            rd[t] = md
            s2a += abs(ma)
            s2b += abs(mb)
            s2c += abs(mc)
            s2d += abs(md)
        part[j, a] = s1a
        part[j, b] = s1b
        part[j, c] = s1c
        part[j, d] = s1d
        part[j - 1, a] = s2a
        part[j - 1, b] = s2b
        part[j - 1, c] = s2c
        part[j - 1, d] = s2d


@numba.njit(cache=True)
def _add_part(table, part, lev, pa, pb):
    last = table.shape[0] - 1
    for s in range(table.shape[1]):
        table[last, s] += part[last, s]
    for q in range(pa.shape[0]):
        j, a, b = lev[q], pa[q], pb[q]
        table[j, a] += part[j, a]
        table[j, b] += part[j, b]


@numba.njit(cache=True)
def carry_costs(table, lev, pa, pb):
    """The slots that do not change between levels ``j + 1`` and ``j`` keep their cost."""
    n_levels, n = table.shape
    moved = np.zeros((n_levels, n), dtype=np.bool_)
    for q in range(pa.shape[0]):
        moved[lev[q], pa[q]] = True
        moved[lev[q], pb[q]] = True
    for j in range(n_levels - 2, -1, -1):
        for s in range(n):
            if not moved[j, s]:
                table[j, s] = table[j + 1, s]


@numba.njit(parallel=True, cache=True)
def dictionary_costs(rows, scale, sched, kind, power, width, bufs, part, table):
    """``table[j, s]`` (zeros in): the cost of ``scale * rows`` at slot ``s`` of level ``j``,
    summed over the columns; blocks of ``width`` columns (passed at run time), as many at a
    time across the threads as ``bufs`` (``(group, n, width + PAD)``) and ``part``
    (``(group, n_levels, n)``, scratch) hold. ``sched``: the schedule's arrays
    ``(lev, pa, pb, w, op_quad, op_ref, quad_lev, quad_slots, quad_w)``; the l1 cost runs
    the fused schedule when ``op_quad`` is not empty, the others the pairs."""
    lev, pa, pb, w, op_quad, op_ref, qlev, qs, qw = sched
    b = rows.shape[1]
    group = bufs.shape[0]
    n_blocks = (b + width - 1) // width
    for g0 in range(0, n_blocks, group):
        m = min(group, n_blocks - g0)
        for g in prange(m):
            load_block(rows, (g0 + g) * width, scale, bufs[g], width)
            if kind == COST_L1 and op_quad.shape[0]:
                block_costs_fused(
                    bufs[g], width, op_quad, op_ref, lev, pa, pb, w, qlev, qs, qw, part[g]
                )
            else:
                block_costs(bufs[g], width, lev, pa, pb, w, kind, power, part[g])
        for g in range(m):
            _add_part(table, part[g], lev, pa, pb)
    carry_costs(table, lev, pa, pb)


@numba.njit(cache=True)
def dictionary_costs_serial(rows, scale, sched, kind, power, width, bufs, part, table):
    """The serial twin of :func:`dictionary_costs` (one block at a time, in ``bufs[0]``
    and ``part[0]``: the same sums)."""
    lev, pa, pb, w, op_quad, op_ref, qlev, qs, qw = sched
    b = rows.shape[1]
    n_blocks = (b + width - 1) // width
    buf, part = bufs[0], part[0]
    for blk in range(n_blocks):
        load_block(rows, blk * width, scale, buf, width)
        if kind == COST_L1 and op_quad.shape[0]:
            block_costs_fused(buf, width, op_quad, op_ref, lev, pa, pb, w, qlev, qs, qw, part)
        else:
            block_costs(buf, width, lev, pa, pb, w, kind, power, part)
        _add_part(table, part, lev, pa, pb)
    carry_costs(table, lev, pa, pb)
