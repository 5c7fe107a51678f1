"""Tree Haar across rows on any tree: the folder rows in a few reused slots.

The data is a flat C-contiguous view of an ``(A, n, B)`` array, transformed along the middle
axis, a block of ``W`` neighbouring columns at a time (``B >= 16``; see
:mod:`skorg._kernels._haar`). The block kernels there keep a row of ``W`` float64 sums for
every internal folder (forward) or every node (inverse), which limits a block to 64
columns: a point's 64 values are then only 512 bytes of a longer row, fetched in the
permuted leaf order, and the node rows still pass L2 on trees of a few thousand points.

Here the folders are visited depth first, so that a folder's row is needed only from the
moment it is made until its parent (forward) or its children (inverse) have used it: a row
is a *slot*, taken when the folder's row is made and given back after its last use. The
slots live at once number about the tree's depth times its widest fan-out (21 for the
4096-point tree of wide folders and chains of ``benchmarks/bench_haar.py``), so a block can
span whole rows of a few hundred to a few thousand columns and still keep its slots in L2.

Forward, in post order (children first): a folder's row is the sum of its children's, in
child order (a leaf child read straight from its data row), then its coefficients, in rank
order. Inverse, in pre order (parents first): a folder's total gives each child's, from the
folder's coefficients; a leaf child's goes straight to its point's data row. The additions
are those of the node-by-node block kernels in the same order, so the coefficients (and the
data) are the same bit for bit.

The plan arrays (:func:`slot_plan`): ``post`` / ``pre`` list the internal folders in post
and pre order; ``fslot`` / ``islot`` give each internal folder's slot in the forward and
inverse sweeps; ``kstart`` / ``kend`` the folder's run of detail coefficients (``cnode`` is
grouped by folder). The other arrays are the block kernels' (see
:mod:`skorg._kernels._haar`).
"""

import numba
import numpy as np
from numba import prange

from ._haar import _coefficient_row, _detail_row, _first_coefficient_row


@numba.njit(cache=True)
def _take_slot(free, n_free, n_slots):
    """``(slot, n_free, n_slots)``: the last slot given back, else a new one."""
    if n_free > 0:
        return free[n_free - 1], n_free - 1, n_slots
    return n_slots, n_free, n_slots + 1


@numba.njit(cache=True)
def slot_plan(child_span, first_leaf, cnode):
    """``(post, pre, fslot, n_fslots, islot, n_islots, kstart, kend)`` of a tree whose
    internal folders are the node ids ``0 .. first_leaf - 1`` (``first_leaf >= 1``)."""
    m = first_leaf
    # depth-first orders of the internal folders, children in child order
    post = np.empty(m, dtype=np.intp)
    pre = np.empty(m, dtype=np.intp)
    stack = np.empty(m, dtype=np.intp)
    nxt = np.empty(m, dtype=np.intp)  # next child to descend into, per folder on the stack
    top = 0
    stack[0] = 0
    nxt[0] = child_span[0, 0]
    n_post = 0
    n_pre = 1
    pre[0] = 0
    while top >= 0:
        f = stack[top]
        c = nxt[top]
        while c < child_span[f, 1] and c >= first_leaf:
            c += 1
        if c < child_span[f, 1]:
            nxt[top] = c + 1
            top += 1
            stack[top] = c
            nxt[top] = child_span[c, 0]
            pre[n_pre] = c
            n_pre += 1
        else:
            post[n_post] = f
            n_post += 1
            top -= 1
    # forward: a folder takes a slot when its row is made, its children give theirs back
    fslot = np.empty(m, dtype=np.intp)
    free = np.empty(m, dtype=np.intp)
    n_free = 0
    n_fslots = 0
    for i in range(m):
        f = post[i]
        fslot[f], n_free, n_fslots = _take_slot(free, n_free, n_fslots)
        for c in range(child_span[f, 0], child_span[f, 1]):
            if c < first_leaf:
                free[n_free] = fslot[c]
                n_free += 1
    # inverse: the children take slots when their parent is visited, which then gives its own
    islot = np.empty(m, dtype=np.intp)
    islot[0] = 0
    n_islots = 1
    n_free = 0
    for i in range(m):
        f = pre[i]
        for c in range(child_span[f, 0], child_span[f, 1]):
            if c < first_leaf:
                islot[c], n_free, n_islots = _take_slot(free, n_free, n_islots)
        free[n_free] = islot[f]
        n_free += 1
    kstart = np.zeros(m, dtype=np.intp)
    kend = np.zeros(m, dtype=np.intp)
    k = 0
    while k < cnode.shape[0]:
        f = cnode[k]
        kstart[f] = k
        while k < cnode.shape[0] and cnode[k] == f:
            k += 1
        kend[f] = k
    return post, pre, fslot, n_fslots, islot, n_islots, kstart, kend


@numba.njit(cache=True)
def _add_row(s, x, first):
    """A child's row into its folder's sum: ``s = x`` for the first child, else ``s += x``."""
    if first:
        for j in range(s.shape[0]):
            s[j] = x[j]
    else:
        for j in range(s.shape[0]):
            s[j] += x[j]


@numba.njit(cache=True)
def _forward_block(src, s0, B, dst, W, S, acc, leaf_order, child_span, first_leaf, post, fslot,
                   kstart, kend, cplus, wplus, wminus, scale0):  # fmt: skip
    """Coefficients of the W columns from ``s0``: point p at ``src[s0 + p * B :][:W]``,
    coefficient k to ``dst[s0 + k * B :][:W]``."""
    for i in range(post.shape[0]):
        f = post[i]
        s = S[fslot[f], :W]
        c0 = child_span[f, 0]
        for c in range(c0, child_span[f, 1]):
            # two calls, as below: a leaf row has the data dtype, a folder row float64
            if c >= first_leaf:
                off = s0 + leaf_order[c - first_leaf] * B
                _add_row(s, src[off : off + W], c == c0)
            else:
                _add_row(s, S[fslot[c], :W], c == c0)
        a = acc[:W]
        k0 = kstart[f]
        for k in range(k0, kend[f]):
            c = cplus[k]
            wp = wplus[k]
            wm = wminus[k]
            off = s0 + (k + 1) * B
            y = dst[off : off + W]
            # two calls per branch, as in the block kernel: a leaf row has the data dtype
            if c >= first_leaf:
                off = s0 + leaf_order[c - first_leaf] * B
                if k == k0:
                    _first_coefficient_row(src[off : off + W], s, a, y, wp, wm)
                else:
                    _coefficient_row(src[off : off + W], s, a, y, wp, wm)
            elif k == k0:
                _first_coefficient_row(S[fslot[c], :W], s, a, y, wp, wm)
            else:
                _coefficient_row(S[fslot[c], :W], s, a, y, wp, wm)
    t = S[fslot[0], :W]
    y = dst[s0 : s0 + W]
    for j in range(W):
        y[j] = t[j] * scale0


@numba.njit(cache=True)
def _child_total(d, t, dst, s0, B, W, S, leaf_order, first_leaf, islot, c):
    """Child ``c``'s total ``d + t``: to its point's data row, or to its slot."""
    if c >= first_leaf:
        off = s0 + leaf_order[c - first_leaf] * B
        y = dst[off : off + W]
        for j in range(W):
            y[j] = d[j] + t[j]
    else:
        v = S[islot[c], :W]
        for j in range(W):
            v[j] = d[j] + t[j]


@numba.njit(cache=True)
def _inverse_block(src, s0, B, dst, W, S, dv, neg, leaf_order, child_span, first_leaf, pre, islot,
                   kstart, kend, cplus, clast, wplus, wminus, scale0):  # fmt: skip
    """Data of the W columns from ``s0``: coefficient k at ``src[s0 + k * B :][:W]``, point p
    to ``dst[s0 + p * B :][:W]``."""
    x = src[s0 : s0 + W]
    t = S[islot[0], :W]
    for j in range(W):
        t[j] = x[j] * scale0
    d = dv[:W]
    ng = neg[:W]
    for i in range(pre.shape[0]):
        f = pre[i]
        t = S[islot[f], :W]
        k0 = kstart[f]
        if kend[f] == k0:  # an only child: the folder's total, plus zero as in the block kernel
            for j in range(W):
                d[j] = 0.0
            _child_total(d, t, dst, s0, B, W, S, leaf_order, first_leaf, islot, child_span[f, 0])
            continue
        for k in range(k0, kend[f]):
            wp = wplus[k]
            wm = wminus[k]
            off = s0 + (k + 1) * B
            _detail_row(src[off : off + W], d, ng, wp, wm, k == k0)
            _child_total(d, t, dst, s0, B, W, S, leaf_order, first_leaf, islot, cplus[k])
            last = clast[k]
            if last >= 0:
                _child_total(ng, t, dst, s0, B, W, S, leaf_order, first_leaf, islot, last)


@numba.njit(cache=True)
def slot_blocks_range(X, out, n, B, width, lo, hi, inverse, leaf_order, child_span, first_leaf,
                      cnode, cplus, clast, wplus, wminus, post, pre, fslot, n_fslots, islot,
                      n_islots, kstart, kend):  # fmt: skip
    """Blocks ``lo .. hi - 1`` (block g: ``a = g // per_a``, columns from
    ``(g % per_a) * width``) of an ``(A, n, B)`` array; ``first_leaf >= 1``."""
    per_a = (B + width - 1) // width
    scale0 = 1.0 / np.sqrt(n)
    S = np.empty((n_islots if inverse else n_fslots, width), dtype=np.float64)
    acc = np.empty(width, dtype=np.float64)
    neg = np.empty(width, dtype=np.float64)
    for g in range(lo, hi):
        b0 = (g % per_a) * width
        s0 = (g // per_a) * n * B + b0
        W = min(width, B - b0)
        if inverse:
            _inverse_block(X, s0, B, out, W, S, acc, neg, leaf_order, child_span, first_leaf, pre,
                           islot, kstart, kend, cplus, clast, wplus, wminus, scale0)  # fmt: skip
        else:
            _forward_block(X, s0, B, out, W, S, acc, leaf_order, child_span, first_leaf, post,
                           fslot, kstart, kend, cplus, wplus, wminus, scale0)  # fmt: skip


@numba.njit(cache=True, parallel=True)
def slot_blocks(X, out, n, B, width, n_blocks, inverse, leaf_order, child_span, first_leaf, cnode,
                cplus, clast, wplus, wminus, post, pre, fslot, n_fslots, islot, n_islots, kstart,
                kend, n_tasks):  # fmt: skip
    """:func:`slot_blocks_range` over all ``n_blocks`` blocks, in ``n_tasks`` tasks."""
    for task in prange(n_tasks):
        per = (n_blocks + n_tasks - 1) // n_tasks
        lo = task * per
        hi = min(n_blocks, lo + per)
        slot_blocks_range(X, out, n, B, width, lo, hi, inverse, leaf_order, child_span,
                          first_leaf, cnode, cplus, clast, wplus, wminus, post, pre, fslot,
                          n_fslots, islot, n_islots, kstart, kend)  # fmt: skip
