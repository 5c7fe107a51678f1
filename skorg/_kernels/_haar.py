"""Tree Haar transform kernels.

The data is a flat C-contiguous view of an array of shape ``(A, n, B)`` and the
transform acts along the middle axis, so any axis of an N-D array is handled
without transposing it. The ``A * B`` vectors ("lanes") are processed a block
of ``W`` lanes at a time, and every arithmetic loop runs over the ``W`` lanes of
one row of a block, which are contiguous in memory and compile to SIMD code:

- when ``B >= _MIN_CONTIGUOUS`` a block is ``W`` neighbouring columns of one
  ``a``: row ``p`` of the block is ``X[a, p, b0:b0 + W]``, read and written in
  place (a long contiguous run per row, which the hardware prefetcher follows
  even though the leaves are visited in the permuted leaf order);
- otherwise (the last axis, or a short trailing axis) the lanes are neighbours
  along ``A``: they are transposed into an ``(n, W)`` buffer, transformed there
  and transposed back. The transposes stay in cache (``n * W`` values).

Two variants avoid passes over memory in ``multi_haar_transform``:
``haar_forward_last2`` / ``haar_inverse_last2`` transform the last two axes of an
``(A, n1, n2)`` array one ``(n1, n2)`` slab at a time (the slab stays in L2 between
the two axes, so the intermediate array never exists), and ``haar_forward_inplace`` /
``haar_inverse_inplace`` transform an axis with a long trailing run in place, through an
``(n, W)`` copy of each block (no second array to allocate and first touch).

Only the internal folders get a row of sums; the leaves are read straight from
the data, and the coefficients are written straight to the output. The work is
split over ``prange`` tasks of whole blocks.

The plan arrays describe the tree (see ``skorg.transforms._haar_plan._HaarPlan``, whose
nodes leave out the tree's one-child chains): ``leaf_order`` (point at each leaf position),
``child_span`` (row ``v``: the ids ``[first, last + 1)`` of node ``v``'s children, all leaves
or all folders; internal nodes in breadth-first order, so children ids exceed their
parent's), ``parent``, ``first_leaf`` (node id of the leaf at position 0; leaves are the
last ``n`` ids),
and one entry per detail coefficient, grouped by folder and in rank order
within a folder: ``cnode`` (the folder), ``cplus`` (the '+' child), ``clast``
(the last sorted child, on the folder's final coefficient; -1 before),
``wplus = M / N`` and ``wminus = s / N``. ``n_threads`` only sets the task
granularity. Sums are accumulated in float64 whatever the data dtype. The
output array is allocated by the caller: NumPy's large allocations use
transparent huge pages, which makes the first touch of a fresh output several
times cheaper than an allocation inside the kernel.
"""

import numba
import numpy as np

# widest block: the internal-folder rows (about n * W float64) must stay in L2
_WIDTH = 64
# lanes of a transposed block (two (n, W) float64 buffers, which stay in L2)
_TWIDTH = 64
# narrower trailing axes are transposed into a buffer instead of read in place
_MIN_CONTIGUOUS = 16
# unsigned offsets: numba indexes with them without a negative-index check
_UINT = np.uint64
# prange tasks per thread; the caller hands them out one at a time (parallel chunk size 1),
# so a thread slowed by another process on its core takes fewer of them
_TASKS_PER_THREAD = 16


@numba.njit(cache=True)
def _forward_block(src, s0, ss, dst, d0, ds, W, S, acc, leaf_order, child_span, first_leaf, cnode,
                   cplus, wplus, wminus, scale0):  # fmt: skip
    """Coefficients of W lanes: point p at src[s0 + p*ss :][:W], coef k to dst[d0 + k*ds :][:W].

    ``S[node, :W]`` gets the sum of every internal folder, pulled from its children so
    that no prefix-sum cancellation enters the coefficients. Rows are taken as slices so
    that the lane loops index from 0 (no negative-index wrap-around, hence plain SIMD
    loads instead of gathers).
    """
    if first_leaf == 0:  # a one-point tree: the root is the leaf
        x = src[s0 : s0 + W]
        y = dst[d0 : d0 + W]
        for j in range(W):
            y[j] = x[j]
        return
    for node in range(first_leaf - 1, -1, -1):
        c0 = child_span[node, 0]
        c1 = child_span[node, 1]
        s = S[node, :W]
        if c0 >= first_leaf:
            off = s0 + leaf_order[c0 - first_leaf] * ss
            x = src[off : off + W]
            for j in range(W):
                s[j] = x[j]
            for c in range(c0 + 1, c1):
                off = s0 + leaf_order[c - first_leaf] * ss
                x = src[off : off + W]
                for j in range(W):
                    s[j] += x[j]
        else:
            t = S[c0, :W]
            for j in range(W):
                s[j] = t[j]
            for c in range(c0 + 1, c1):
                t = S[c, :W]
                for j in range(W):
                    s[j] += t[j]
    t = S[0, :W]
    y = dst[d0 : d0 + W]
    for j in range(W):
        y[j] = t[j] * scale0
    a = acc[:W]
    prev = -1
    for k in range(cnode.shape[0]):
        f = cnode[k]
        c = cplus[k]
        first = f != prev
        prev = f
        wp = wplus[k]
        wm = wminus[k]
        sf = S[f, :W]
        y = dst[d0 + (k + 1) * ds : d0 + (k + 1) * ds + W]
        # two calls per branch: a leaf row has the data dtype, a folder row float64
        if c >= first_leaf:
            off = s0 + leaf_order[c - first_leaf] * ss
            if first:
                _first_coefficient_row(src[off : off + W], sf, a, y, wp, wm)
            else:
                _coefficient_row(src[off : off + W], sf, a, y, wp, wm)
        elif first:
            _first_coefficient_row(S[c, :W], sf, a, y, wp, wm)
        else:
            _coefficient_row(S[c, :W], sf, a, y, wp, wm)


@numba.njit(cache=True, inline="always")
def _coefficient_row(x, sf, a, y, wp, wm):
    """y = wp * x - wm * (sf - a) after a += x: the '+' child against the rest of its folder."""
    for j in range(y.shape[0]):
        v = np.float64(x[j])
        a[j] += v
        y[j] = wp * v - wm * (sf[j] - a[j])


@numba.njit(cache=True, inline="always")
def _first_coefficient_row(x, sf, a, y, wp, wm):
    """``_coefficient_row`` on a folder's first coefficient, where the running sum starts at x.

    Most folders of a binary tree have only this coefficient, and skipping the zeroed
    accumulator saves a pass over the lanes and a load per lane.
    """
    for j in range(y.shape[0]):
        v = np.float64(x[j])
        a[j] = v
        y[j] = wp * v - wm * (sf[j] - v)


@numba.njit(cache=True, inline="always")
def _detail_row(x, v, ng, wp, wm, first):
    """The value coefficient row ``x`` gives its '+' child, ``v = ng + wp * x``, and the
    running ``ng -= wm * x`` left for the folder's last child. On a folder's first
    coefficient nothing is pushed down yet: ``v = wp * x`` and ``ng = -wm * x``, with no
    zeroed row to load."""
    if first:
        for j in range(v.shape[0]):
            ck = np.float64(x[j])
            v[j] = wp * ck
            ng[j] = -(wm * ck)
    else:
        for j in range(v.shape[0]):
            ck = np.float64(x[j])
            v[j] = ng[j] + wp * ck
            ng[j] -= wm * ck


@numba.njit(cache=True)
def _inverse_block(src, s0, ss, dst, d0, ds, W, V, neg, leaf_order, parent, first_leaf, cnode,
                   cplus, clast, wplus, wminus, scale0):  # fmt: skip
    """Data of W lanes: coefficient k at src[s0 + k*ss :][:W], point p to dst[d0 + p*ds :][:W].

    ``V[node, :W]`` first holds the value the coefficients add on the node's folder,
    then (top-down) the total pushed down from its ancestors; a leaf's total goes
    straight to its point's row.
    """
    if first_leaf == 0:  # a one-point tree: the root is the leaf
        x = src[s0 : s0 + W]
        y = dst[d0 : d0 + W]
        for j in range(W):
            y[j] = x[j]
        return
    n_nodes = parent.shape[0]
    # every child of a folder with two or more children is written below; only the only
    # children (ids are contiguous per parent) carry no coefficient and start from zero
    for node in range(1, n_nodes):
        p = parent[node]
        if (node == 1 or parent[node - 1] != p) and (node == n_nodes - 1 or parent[node + 1] != p):
            V[node, :W] = 0.0
    x = src[s0 : s0 + W]
    v = V[0, :W]
    for j in range(W):
        v[j] = x[j] * scale0
    ng = neg[:W]
    prev = -1
    for k in range(cnode.shape[0]):
        f = cnode[k]
        wp = wplus[k]
        wm = wminus[k]
        off = s0 + (k + 1) * ss
        first = f != prev
        prev = f
        _detail_row(src[off : off + W], V[cplus[k], :W], ng, wp, wm, first)
        last = clast[k]
        if last >= 0:
            v = V[last, :W]
            for j in range(W):
                v[j] = ng[j]
    for node in range(1, first_leaf):
        v = V[node, :W]
        vp = V[parent[node], :W]
        for j in range(W):
            v[j] += vp[j]
    for node in range(first_leaf, n_nodes):
        v = V[node, :W]
        vp = V[parent[node], :W]
        off = d0 + leaf_order[node - first_leaf] * ds
        y = dst[off : off + W]
        for j in range(W):
            y[j] = v[j] + vp[j]


@numba.njit(cache=True)
def _block(g, A, n, B):
    """Flat offset of lane 0, lane stride and number of lanes of block g."""
    if B >= _MIN_CONTIGUOUS:
        per_a = (B + _WIDTH - 1) // _WIDTH
        a = g // per_a
        b0 = (g % per_a) * _WIDTH
        return a * n * B + b0, 1, min(_WIDTH, B - b0)
    a0 = (g // B) * _TWIDTH
    return a0 * n * B + g % B, n * B, min(_TWIDTH, A - a0)


@numba.njit(cache=True)
def n_blocks_of(A, B):
    if B >= _MIN_CONTIGUOUS:
        return A * ((B + _WIDTH - 1) // _WIDTH)
    return ((A + _TWIDTH - 1) // _TWIDTH) * B


@numba.njit(cache=True)
def _task_range(task, n_tasks, n_blocks):
    per = (n_blocks + n_tasks - 1) // n_tasks
    return task * per, min(n_blocks, (task + 1) * per)


@numba.njit(cache=True)
def _transpose_in(src, base0, ls, W, n, B, buf):
    """buf[p, j] = src[base0 + j * ls + p * B]: lane j of the block as column j (unsigned
    offsets: no negative-index check per value)."""
    W_ = _UINT(W)
    B_ = _UINT(B)
    for j in range(W_):
        off = _UINT(base0) + j * _UINT(ls)
        for p in range(_UINT(n)):
            buf[p * W_ + j] = src[off + p * B_]


@numba.njit(cache=True)
def _transpose_out(buf, dst, base0, ls, W, n, B):
    W_ = _UINT(W)
    B_ = _UINT(B)
    for j in range(W_):
        off = _UINT(base0) + j * _UINT(ls)
        for p in range(_UINT(n)):
            dst[off + p * B_] = buf[p * W_ + j]


@numba.njit(cache=True)
def _forward_task(X, out, A, n, B, g0, g1, leaf_order, child_span, first_leaf, cnode, cplus,
                  wplus, wminus):  # fmt: skip
    S = np.empty((max(first_leaf, 1), _WIDTH), dtype=np.float64)
    acc = np.empty(_WIDTH, dtype=np.float64)
    scale0 = 1.0 / np.sqrt(n)
    if B >= _MIN_CONTIGUOUS:
        for g in range(g0, g1):
            base0, _, W = _block(g, A, n, B)
            _forward_block(X, base0, B, out, base0, B, W, S, acc, leaf_order, child_span,
                           first_leaf, cnode, cplus, wplus, wminus, scale0)  # fmt: skip
        return
    bin_ = np.empty(n * _TWIDTH, dtype=np.float64)
    bout = np.empty(n * _TWIDTH, dtype=np.float64)
    for g in range(g0, g1):
        base0, ls, W = _block(g, A, n, B)
        _transpose_in(X, base0, ls, W, n, B, bin_)
        _forward_block(bin_, 0, W, bout, 0, W, W, S, acc, leaf_order, child_span, first_leaf,
                       cnode, cplus, wplus, wminus, scale0)  # fmt: skip
        _transpose_out(bout, out, base0, ls, W, n, B)


@numba.njit(cache=True, parallel=True)
def haar_forward(
    X, out, A, n, B, leaf_order, child_span, parent, first_leaf, cnode, cplus, clast, wplus, wminus,
    n_threads,
):  # fmt: skip
    n_blocks = n_blocks_of(A, B)
    n_tasks = min(n_blocks, _TASKS_PER_THREAD * n_threads)
    for task in numba.prange(n_tasks):
        g0, g1 = _task_range(task, n_tasks, n_blocks)
        _forward_task(
            X, out, A, n, B, g0, g1, leaf_order, child_span, first_leaf, cnode, cplus, wplus, wminus
        )


@numba.njit(cache=True)
def _inverse_task(C, out, A, n, B, g0, g1, leaf_order, parent, first_leaf, cnode, cplus, clast,
                  wplus, wminus):  # fmt: skip
    V = np.empty((parent.shape[0], _WIDTH), dtype=np.float64)
    neg = np.empty(_WIDTH, dtype=np.float64)
    scale0 = 1.0 / np.sqrt(n)
    if B >= _MIN_CONTIGUOUS:
        for g in range(g0, g1):
            base0, _, W = _block(g, A, n, B)
            _inverse_block(C, base0, B, out, base0, B, W, V, neg, leaf_order, parent, first_leaf,
                           cnode, cplus, clast, wplus, wminus, scale0)  # fmt: skip
        return
    bin_ = np.empty(n * _TWIDTH, dtype=np.float64)
    bout = np.empty(n * _TWIDTH, dtype=np.float64)
    for g in range(g0, g1):
        base0, ls, W = _block(g, A, n, B)
        _transpose_in(C, base0, ls, W, n, B, bin_)
        _inverse_block(bin_, 0, W, bout, 0, W, W, V, neg, leaf_order, parent, first_leaf, cnode,
                       cplus, clast, wplus, wminus, scale0)  # fmt: skip
        _transpose_out(bout, out, base0, ls, W, n, B)


@numba.njit(cache=True, parallel=True)
def haar_inverse(
    C, out, A, n, B, leaf_order, child_span, parent, first_leaf, cnode, cplus, clast, wplus, wminus,
    n_threads,
):  # fmt: skip
    n_blocks = n_blocks_of(A, B)
    n_tasks = min(n_blocks, _TASKS_PER_THREAD * n_threads)
    for task in numba.prange(n_tasks):
        g0, g1 = _task_range(task, n_tasks, n_blocks)
        _inverse_task(
            C, out, A, n, B, g0, g1, leaf_order, parent, first_leaf, cnode, cplus, clast, wplus,
            wminus,
        )  # fmt: skip


# ---------------------------------------------------------------------- last two axes fused
# An array of shape (A, n1, n2) is transformed along its last two axes one (n1, n2) slab at a
# time: the rows of the slab go through the transposed path along axis 2 into a slab buffer
# that stays in L2, and the axis-1 transform reads that buffer in place and writes the output
# once, so the intermediate array never goes through main memory.

# lanes of an axis-1 block of a slab, and of a transposed axis-2 block: the narrower
# transposed blocks keep their buffers and folder rows closer to L1 (measured faster)
_SWIDTH = 64
_STWIDTH = 32


@numba.njit(cache=True)
def _tile_out(buf, dst, base0, ls, W, n):
    """dst[base0 + j * ls + p] = buf[p * W + j] in 8 x 8 tiles, for a destination in cache.

    The tiles keep both sides of the copy within a few cache lines, and the constant trip
    counts let the loops unroll: about three times faster than ``_transpose_out`` within
    L2. Out to main memory whole columns are as fast (one stream per lane).
    """
    n8 = n - n % 8
    W8 = W - W % 8
    b0 = _UINT(base0)
    ls_ = _UINT(ls)
    W_ = _UINT(W)
    for p0 in range(0, n8, 8):
        for j0 in range(0, W8, 8):
            for jj in range(_UINT(8)):
                j = _UINT(j0) + jj
                off = b0 + j * ls_ + _UINT(p0)
                for pp in range(_UINT(8)):
                    dst[off + pp] = buf[(_UINT(p0) + pp) * W_ + j]
    for j in range(_UINT(W8), W_):
        for p in range(_UINT(n8)):
            dst[b0 + j * ls_ + p] = buf[p * W_ + j]
    for j in range(W_):
        for p in range(_UINT(n8), _UINT(n)):
            dst[b0 + j * ls_ + p] = buf[p * W_ + j]


@numba.njit(cache=True)
def _forward_slabs(X, out, a0, a1, n1, n2, lo1, cp1, fl1, cn1, cpl1, wp1, wm1, lo2, cp2, fl2,
                   cn2, cpl2, wp2, wm2):  # fmt: skip
    S1 = np.empty((max(fl1, 1), _SWIDTH), dtype=np.float64)
    S2 = np.empty((max(fl2, 1), _STWIDTH), dtype=np.float64)
    acc = np.empty(_WIDTH, dtype=np.float64)
    bin_ = np.empty(n2 * _STWIDTH, dtype=np.float64)
    bout = np.empty(n2 * _STWIDTH, dtype=np.float64)
    slab = np.empty(n1 * n2, dtype=np.float64)
    sc1 = 1.0 / np.sqrt(n1)
    sc2 = 1.0 / np.sqrt(n2)
    for a in range(a0, a1):
        base = a * n1 * n2
        for r0 in range(0, n1, _STWIDTH):
            W = min(_STWIDTH, n1 - r0)
            _transpose_in(X, base + r0 * n2, n2, W, n2, 1, bin_)
            _forward_block(bin_, 0, W, bout, 0, W, W, S2, acc, lo2, cp2, fl2, cn2, cpl2, wp2,
                           wm2, sc2)  # fmt: skip
            _tile_out(bout, slab, r0 * n2, n2, W, n2)
        for b0 in range(0, n2, _SWIDTH):
            W = min(_SWIDTH, n2 - b0)
            _forward_block(slab, b0, n2, out, base + b0, n2, W, S1, acc, lo1, cp1, fl1, cn1,
                           cpl1, wp1, wm1, sc1)  # fmt: skip


@numba.njit(cache=True, parallel=True)
def haar_forward_last2(X, out, A, n1, n2, lo1, cp1, fl1, cn1, cpl1, wp1, wm1, lo2, cp2, fl2, cn2,
                       cpl2, wp2, wm2, n_threads):  # fmt: skip
    n_tasks = min(A, _TASKS_PER_THREAD * n_threads)
    for task in numba.prange(n_tasks):
        a0, a1 = _task_range(task, n_tasks, A)
        _forward_slabs(X, out, a0, a1, n1, n2, lo1, cp1, fl1, cn1, cpl1, wp1, wm1, lo2, cp2, fl2,
                       cn2, cpl2, wp2, wm2)  # fmt: skip


@numba.njit(cache=True)
def _inverse_slabs(C, out, a0, a1, n1, n2, lo1, pa1, fl1, cn1, cpl1, cl1, wp1, wm1, lo2, pa2,
                   fl2, cn2, cpl2, cl2, wp2, wm2):  # fmt: skip
    V1 = np.empty((pa1.shape[0], _SWIDTH), dtype=np.float64)
    V2 = np.empty((pa2.shape[0], _STWIDTH), dtype=np.float64)
    neg = np.empty(_WIDTH, dtype=np.float64)
    bin_ = np.empty(n2 * _STWIDTH, dtype=np.float64)
    bout = np.empty(n2 * _STWIDTH, dtype=np.float64)
    slab = np.empty(n1 * n2, dtype=np.float64)
    sc1 = 1.0 / np.sqrt(n1)
    sc2 = 1.0 / np.sqrt(n2)
    for a in range(a0, a1):
        base = a * n1 * n2
        for r0 in range(0, n1, _STWIDTH):
            W = min(_STWIDTH, n1 - r0)
            _transpose_in(C, base + r0 * n2, n2, W, n2, 1, bin_)
            _inverse_block(bin_, 0, W, bout, 0, W, W, V2, neg, lo2, pa2, fl2, cn2, cpl2, cl2,
                           wp2, wm2, sc2)  # fmt: skip
            _tile_out(bout, slab, r0 * n2, n2, W, n2)
        for b0 in range(0, n2, _SWIDTH):
            W = min(_SWIDTH, n2 - b0)
            _inverse_block(slab, b0, n2, out, base + b0, n2, W, V1, neg, lo1, pa1, fl1, cn1, cpl1,
                           cl1, wp1, wm1, sc1)  # fmt: skip


@numba.njit(cache=True, parallel=True)
def haar_inverse_last2(C, out, A, n1, n2, lo1, pa1, fl1, cn1, cpl1, cl1, wp1, wm1, lo2, pa2, fl2,
                       cn2, cpl2, cl2, wp2, wm2, n_threads):  # fmt: skip
    n_tasks = min(A, _TASKS_PER_THREAD * n_threads)
    for task in numba.prange(n_tasks):
        a0, a1 = _task_range(task, n_tasks, A)
        _inverse_slabs(C, out, a0, a1, n1, n2, lo1, pa1, fl1, cn1, cpl1, cl1, wp1, wm1, lo2, pa2,
                       fl2, cn2, cpl2, cl2, wp2, wm2)  # fmt: skip


# ---------------------------------------------------------------------- in place
# For an axis with a long trailing run (the caller ensures B >= _MIN_CONTIGUOUS) a block is
# copied into an (n, W) buffer and transformed from there back into the array: no second
# array is allocated and first touched, and the written lines are already in cache (no read
# for ownership).


@numba.njit(cache=True)
def _copy_block(X, base0, B, W, n, buf):
    for p in range(n):
        x = X[base0 + p * B : base0 + p * B + W]
        y = buf[p * W : p * W + W]
        for j in range(W):
            y[j] = x[j]


@numba.njit(cache=True, parallel=True)
def haar_forward_inplace(X, A, n, B, leaf_order, child_span, first_leaf, cnode, cplus, wplus,
                         wminus, n_threads):  # fmt: skip
    n_blocks = n_blocks_of(A, B)
    n_tasks = min(n_blocks, _TASKS_PER_THREAD * n_threads)
    for task in numba.prange(n_tasks):
        g0, g1 = _task_range(task, n_tasks, n_blocks)
        S = np.empty((max(first_leaf, 1), _WIDTH), dtype=np.float64)
        acc = np.empty(_WIDTH, dtype=np.float64)
        buf = np.empty(n * _WIDTH, dtype=X.dtype)
        scale0 = 1.0 / np.sqrt(n)
        for g in range(g0, g1):
            base0, _, W = _block(g, A, n, B)
            _copy_block(X, base0, B, W, n, buf)
            _forward_block(buf, 0, W, X, base0, B, W, S, acc, leaf_order, child_span, first_leaf,
                           cnode, cplus, wplus, wminus, scale0)  # fmt: skip


@numba.njit(cache=True, parallel=True)
def haar_inverse_inplace(C, A, n, B, leaf_order, parent, first_leaf, cnode, cplus, clast, wplus,
                         wminus, n_threads):  # fmt: skip
    n_blocks = n_blocks_of(A, B)
    n_tasks = min(n_blocks, _TASKS_PER_THREAD * n_threads)
    for task in numba.prange(n_tasks):
        g0, g1 = _task_range(task, n_tasks, n_blocks)
        V = np.empty((parent.shape[0], _WIDTH), dtype=np.float64)
        neg = np.empty(_WIDTH, dtype=np.float64)
        buf = np.empty(n * _WIDTH, dtype=C.dtype)
        scale0 = 1.0 / np.sqrt(n)
        for g in range(g0, g1):
            base0, _, W = _block(g, A, n, B)
            _copy_block(C, base0, B, W, n, buf)
            _inverse_block(buf, 0, W, C, base0, B, W, V, neg, leaf_order, parent, first_leaf,
                           cnode, cplus, clast, wplus, wminus, scale0)  # fmt: skip


# the block kernels on the calling thread (blocks g0..g1-1), for inputs too small to be
# worth waking the thread pool
haar_forward_range = _forward_task
haar_inverse_range = _inverse_task
