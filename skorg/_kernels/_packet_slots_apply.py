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
def forward_block(src, order, scale, lo, buf, width, pa, pb, w, cap, inv, out):
    """One block of ``width`` columns from ``lo`` (``buf``: its ``n`` rows, C-contiguous:
    a view of fewer columns would not vectorize):
    ``out[cap_lev[c], cap_pos[c], lo:lo + m]`` = the captured row over ``scale``."""
    cap_ptr, cap_slot, cap_lev, cap_pos = cap
    n = buf.shape[0]
    m = min(width, src.shape[1] - lo)
    for s in range(n):
        row, dst = src[order[s], lo : lo + m], buf[s]
        for t in range(m):
            dst[t] = row[t] * scale
    for c in range(cap_ptr[0], cap_ptr[1]):
        _capture(buf, c, m, lo, cap_slot, cap_lev, cap_pos, inv, out)
    for q in range(pa.shape[0]):
        ra, rb = buf[pa[q]], buf[pb[q]]
        x0, y0, x1, y1 = w[q, 0], w[q, 1], w[q, 2], w[q, 3]
        for t in range(m):
            u, v = ra[t], rb[t]
            ra[t] = x0 * u + y0 * v
            rb[t] = x1 * u + y1 * v
        for c in range(cap_ptr[q + 1], cap_ptr[q + 2]):
            _capture(buf, c, m, lo, cap_slot, cap_lev, cap_pos, inv, out)


@numba.njit(cache=True)
def inverse_block(src, scale, lo, buf, width, pa, pb, w, cap, order, inv, out):
    """The way back on one block: ``src[cap_pos[c]]`` (times ``scale``) added to slot
    ``cap_slot[c]`` where the forward pass captures it; ``out[order[s], lo:lo + m]`` = the
    finest row in slot ``s`` over ``scale``."""
    cap_ptr, cap_slot, _, cap_pos = cap
    n = buf.shape[0]
    m = min(width, src.shape[1] - lo)
    for s in range(n):
        row = buf[s]
        for t in range(m):
            row[t] = 0.0
    for q in range(pa.shape[0] - 1, -2, -1):
        for c in range(cap_ptr[q + 1], cap_ptr[q + 2]):
            row, dst = src[cap_pos[c], lo : lo + m], buf[cap_slot[c]]
            for t in range(m):
                dst[t] += row[t] * scale
        if q < 0:
            break
        ra, rb = buf[pa[q]], buf[pb[q]]
        x0, y0, x1, y1 = w[q, 0], w[q, 1], w[q, 2], w[q, 3]
        for t in range(m):
            u, v = ra[t], rb[t]
            ra[t] = x0 * u + x1 * v
            rb[t] = y0 * u + y1 * v
    for s in range(n):
        row, dst = buf[s], out[order[s], lo : lo + m]
        for t in range(m):
            dst[t] = row[t] * inv


@numba.njit(parallel=True, cache=True)
def forward(src, order, scale, width, bufs, pa, pb, w, cap, inv, out):
    """:func:`forward_block` on every block of ``width`` columns, as many at a time across
    the threads as ``bufs`` (``(group, n, >= width)``) holds; the blocks write disjoint
    columns, so the result does not depend on the threads."""
    n_blocks = (src.shape[1] + width - 1) // width
    group = bufs.shape[0]
    for g0 in range(0, n_blocks, group):
        for g in prange(min(group, n_blocks - g0)):
            lo = (g0 + g) * width
            forward_block(src, order, scale, lo, bufs[g], width, pa, pb, w, cap, inv, out)


@numba.njit(cache=True)
def forward_serial(src, order, scale, width, bufs, pa, pb, w, cap, inv, out):
    """The serial twin of :func:`forward` (one block at a time, in ``bufs[0]``)."""
    n_blocks = (src.shape[1] + width - 1) // width
    for blk in range(n_blocks):
        forward_block(src, order, scale, blk * width, bufs[0], width, pa, pb, w, cap, inv, out)


@numba.njit(parallel=True, cache=True)
def inverse(src, scale, width, bufs, pa, pb, w, cap, order, inv, out):
    """:func:`inverse_block` on every block of ``width`` columns (as :func:`forward`)."""
    n_blocks = (src.shape[1] + width - 1) // width
    group = bufs.shape[0]
    for g0 in range(0, n_blocks, group):
        for g in prange(min(group, n_blocks - g0)):
            lo = (g0 + g) * width
            inverse_block(src, scale, lo, bufs[g], width, pa, pb, w, cap, order, inv, out)


@numba.njit(cache=True)
def inverse_serial(src, scale, width, bufs, pa, pb, w, cap, order, inv, out):
    """The serial twin of :func:`inverse`."""
    n_blocks = (src.shape[1] + width - 1) // width
    for blk in range(n_blocks):
        inverse_block(src, scale, blk * width, bufs[0], width, pa, pb, w, cap, order, inv, out)
