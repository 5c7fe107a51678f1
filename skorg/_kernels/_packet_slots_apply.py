"""Kernels of the in-place Haar-Walsh packet transforms: a chosen basis (or every entry, the
materialized dictionary) read off the in-place schedule, and the way back (arrays in,
arrays out).

A block of ``width`` columns of the data is loaded once into a buffer of ``n`` rows (in the
packet order, times a power-of-two scale), every level is computed in place by the
butterfly pairs of ``skorg.transforms._packet_slots`` in the schedule's order, and an entry
is *captured* (its row written, divided by the scale, into the output) right after the last
pair that writes its slot at its level or below it (group ``k + 1`` of the captures: after
pair ``k``; group 0: at load). The way back runs the transposed pairs in the reverse order
from zeros, adding every coefficient where the forward pass would have captured it, and
writes the finest level back in the data's order. The butterflies are those of
:mod:`skorg._kernels._packets` (two products and one sum, no fast-math), so every value is
the level-by-level path's, bit for bit.
"""

import numba
import numpy as np
from numba import prange


@numba.njit(cache=True)
def prune(n, pa, pb, cap_ptr, cap_slot):
    """Which pairs a set of captures needs: going backwards, a pair is kept when a capture
    after it, or a kept pair after it, reads one of its two slots."""
    n_ops = pa.shape[0]
    need = np.zeros(n, dtype=np.bool_)
    keep = np.zeros(n_ops, dtype=np.bool_)
    for k in range(n_ops - 1, -1, -1):
        for c in range(cap_ptr[k + 1], cap_ptr[k + 2]):
            need[cap_slot[c]] = True
        a, b = pa[k], pb[k]
        if need[a] or need[b]:
            keep[k] = True
            need[a] = True
            need[b] = True
    return keep


@numba.njit(cache=True)
def _capture(buf, c, m, lo, cap_slot, cap_lev, cap_pos, inv, out):
    src, dst = buf[cap_slot[c]], out[cap_lev[c], cap_pos[c], lo : lo + m]
    for t in range(m):
        dst[t] = src[t] * inv


@numba.njit(cache=True)
def _pair(buf, m, a, b, x0, y0, x1, y1):
    ra, rb = buf[a], buf[b]
    for t in range(m):
        u, v = ra[t], rb[t]
        ra[t] = x0 * u + y0 * v
        rb[t] = x1 * u + y1 * v


@numba.njit(cache=True)
def _quad(buf, m, qs, qw, r):
    # the two pairs (a, b), (c, d) and the two above them, (a, c), (b, d), in one sweep:
    # the same products and sums as the four pairs one by one
    ra, rb, rc, rd = buf[qs[r, 0]], buf[qs[r, 1]], buf[qs[r, 2]], buf[qs[r, 3]]
    g0, g1, g2, g3 = qw[r, 0], qw[r, 1], qw[r, 2], qw[r, 3]
    g4, g5, g6, g7 = qw[r, 4], qw[r, 5], qw[r, 6], qw[r, 7]
    g8, g9, g10, g11 = qw[r, 8], qw[r, 9], qw[r, 10], qw[r, 11]
    g12, g13, g14, g15 = qw[r, 12], qw[r, 13], qw[r, 14], qw[r, 15]
    for t in range(m):
        ua, ub, uc, ud = ra[t], rb[t], rc[t], rd[t]
        na = g0 * ua + g1 * ub
        nb = g2 * ua + g3 * ub
        nc = g4 * uc + g5 * ud
        nd = g6 * uc + g7 * ud
        ra[t] = g8 * na + g9 * nc
        rc[t] = g10 * na + g11 * nc
        rb[t] = g12 * nb + g13 * nd
        rd[t] = g14 * nb + g15 * nd


@numba.njit(cache=True)
def _unpair(buf, m, a, b, x0, y0, x1, y1):
    # the transposed butterfly: the pair is orthogonal
    ra, rb = buf[a], buf[b]
    for t in range(m):
        u, v = ra[t], rb[t]
        ra[t] = x0 * u + x1 * v
        rb[t] = y0 * u + y1 * v


@numba.njit(cache=True)
def _unquad(buf, m, qs, qw, r):
    ra, rb, rc, rd = buf[qs[r, 0]], buf[qs[r, 1]], buf[qs[r, 2]], buf[qs[r, 3]]
    g0, g1, g2, g3 = qw[r, 0], qw[r, 1], qw[r, 2], qw[r, 3]
    g4, g5, g6, g7 = qw[r, 4], qw[r, 5], qw[r, 6], qw[r, 7]
    g8, g9, g10, g11 = qw[r, 8], qw[r, 9], qw[r, 10], qw[r, 11]
    g12, g13, g14, g15 = qw[r, 12], qw[r, 13], qw[r, 14], qw[r, 15]
    for t in range(m):
        ma, mb, mc, md = ra[t], rb[t], rc[t], rd[t]
        na = g8 * ma + g10 * mc
        nc = g9 * ma + g11 * mc
        nb = g12 * mb + g14 * md
        nd = g13 * mb + g15 * md
        ra[t] = g0 * na + g2 * nb
        rb[t] = g1 * na + g3 * nb
        rc[t] = g4 * nc + g6 * nd
        rd[t] = g5 * nc + g7 * nd


@numba.njit(cache=True)
def forward_block(src, order, scale, lo, buf, width, sched, cap, inv, out):
    """One block of ``width`` columns from ``lo`` (``buf``: its ``n`` rows, C-contiguous:
    a view of fewer columns would not vectorize): the ops of ``sched = (pa, pb, w,
    op_quad, op_ref, quad_slots, quad_w)`` (op ``k``: quad ``op_ref[k]`` when
    ``op_quad[k]``, else pair ``op_ref[k]``), and ``out[cap_lev[c], cap_pos[c], lo:lo + m]``
    = the captured row over ``scale``."""
    pa, pb, w, op_quad, op_ref, qs, qw = sched
    cap_ptr, cap_slot, cap_lev, cap_pos = cap
    n = buf.shape[0]
    m = min(width, src.shape[1] - lo)
    for s in range(n):
        row, dst = src[order[s], lo : lo + m], buf[s]
        for t in range(m):
            dst[t] = row[t] * scale
    for c in range(cap_ptr[0], cap_ptr[1]):
        _capture(buf, c, m, lo, cap_slot, cap_lev, cap_pos, inv, out)
    for k in range(op_quad.shape[0]):
        q = op_ref[k]
        if op_quad[k]:
            _quad(buf, m, qs, qw, q)
        else:
            _pair(buf, m, pa[q], pb[q], w[q, 0], w[q, 1], w[q, 2], w[q, 3])
        for c in range(cap_ptr[k + 1], cap_ptr[k + 2]):
            _capture(buf, c, m, lo, cap_slot, cap_lev, cap_pos, inv, out)


@numba.njit(cache=True)
def inverse_block(src, scale, lo, buf, width, sched, cap, order, inv, out):
    """The way back on one block: ``src[cap_pos[c]]`` (times ``scale``) added to slot
    ``cap_slot[c]`` where the forward pass captures it, the ops undone in the reverse
    order; ``out[order[s], lo:lo + m]`` = the finest row in slot ``s`` over ``scale``."""
    pa, pb, w, op_quad, op_ref, qs, qw = sched
    cap_ptr, cap_slot, _, cap_pos = cap
    n = buf.shape[0]
    m = min(width, src.shape[1] - lo)
    for s in range(n):
        row = buf[s]
        for t in range(m):
            row[t] = 0.0
    for k in range(op_quad.shape[0] - 1, -2, -1):
        for c in range(cap_ptr[k + 1], cap_ptr[k + 2]):
            row, dst = src[cap_pos[c], lo : lo + m], buf[cap_slot[c]]
            for t in range(m):
                dst[t] += row[t] * scale
        if k < 0:
            break
        q = op_ref[k]
        if op_quad[k]:
            _unquad(buf, m, qs, qw, q)
        else:
            _unpair(buf, m, pa[q], pb[q], w[q, 0], w[q, 1], w[q, 2], w[q, 3])
    for s in range(n):
        row, dst = buf[s], out[order[s], lo : lo + m]
        for t in range(m):
            dst[t] = row[t] * inv


@numba.njit(parallel=True, cache=True)
def forward(src, order, scale, width, bufs, sched, cap, inv, out):
    """:func:`forward_block` on every block of ``width`` columns, as many at a time across
    the threads as ``bufs`` (``(group, n, >= width)``) holds; the blocks write disjoint
    columns, so the result does not depend on the threads."""
    # the tuples unpacked outside the parallel loop and packed again inside it: a tuple
    # of mixed arrays passed whole into a parfor is mistyped (numba 0.6x)
    pa, pb, w, op_quad, op_ref, qs, qw = sched
    cap_ptr, cap_slot, cap_lev, cap_pos = cap
    n_blocks = (src.shape[1] + width - 1) // width
    group = bufs.shape[0]
    for g0 in range(0, n_blocks, group):
        for g in prange(min(group, n_blocks - g0)):
            lo = (g0 + g) * width
            forward_block(
                src, order, scale, lo, bufs[g], width,
                (pa, pb, w, op_quad, op_ref, qs, qw), (cap_ptr, cap_slot, cap_lev, cap_pos),
                inv, out,
            )  # fmt: skip


@numba.njit(cache=True)
def forward_serial(src, order, scale, width, bufs, sched, cap, inv, out):
    """The serial twin of :func:`forward` (one block at a time, in ``bufs[0]``)."""
    n_blocks = (src.shape[1] + width - 1) // width
    for blk in range(n_blocks):
        forward_block(src, order, scale, blk * width, bufs[0], width, sched, cap, inv, out)


@numba.njit(parallel=True, cache=True)
def inverse(src, scale, width, bufs, sched, cap, order, inv, out):
    """:func:`inverse_block` on every block of ``width`` columns (as :func:`forward`)."""
    pa, pb, w, op_quad, op_ref, qs, qw = sched  # unpacked: see forward
    cap_ptr, cap_slot, cap_lev, cap_pos = cap
    n_blocks = (src.shape[1] + width - 1) // width
    group = bufs.shape[0]
    for g0 in range(0, n_blocks, group):
        for g in prange(min(group, n_blocks - g0)):
            lo = (g0 + g) * width
            inverse_block(
                src, scale, lo, bufs[g], width,
                (pa, pb, w, op_quad, op_ref, qs, qw), (cap_ptr, cap_slot, cap_lev, cap_pos),
                order, inv, out,
            )  # fmt: skip


@numba.njit(cache=True)
def inverse_serial(src, scale, width, bufs, sched, cap, order, inv, out):
    """The serial twin of :func:`inverse`."""
    n_blocks = (src.shape[1] + width - 1) // width
    for blk in range(n_blocks):
        inverse_block(src, scale, blk * width, bufs[0], width, sched, cap, order, inv, out)
