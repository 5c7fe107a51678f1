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

Only the internal folders get a row of sums; the leaves are read straight from
the data, and the coefficients are written straight to the output. The work is
split over ``prange`` tasks of whole blocks.

The plan arrays describe the tree (see ``skorg.transforms._haar._HaarPlan``):
``leaf_order`` (point at each leaf position), ``child_ptr`` (CSR children of the
BFS node ids, so children ids exceed their parent's), ``parent``,
``first_leaf`` (node id of the leaf at position 0; leaves are the last ``n`` ids),
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
# prange tasks per thread; the caller hands them out one at a time (parallel chunk size 1),
# so a thread slowed by another process on its core takes fewer of them
_TASKS_PER_THREAD = 16


@numba.njit(cache=True)
def _forward_block(src, s0, ss, dst, d0, ds, W, S, acc, leaf_order, child_ptr, first_leaf, cnode,
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
        c0 = child_ptr[node]
        c1 = child_ptr[node + 1]
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
        if f != prev:
            a[:] = 0.0
            prev = f
        wp = wplus[k]
        wm = wminus[k]
        sf = S[f, :W]
        y = dst[d0 + (k + 1) * ds : d0 + (k + 1) * ds + W]
        if c >= first_leaf:
            off = s0 + leaf_order[c - first_leaf] * ss
            _coefficient_row(src[off : off + W], sf, a, y, wp, wm)
        else:
            _coefficient_row(S[c, :W], sf, a, y, wp, wm)


@numba.njit(cache=True)
def _coefficient_row(x, sf, a, y, wp, wm):
    """y = wp * x - wm * (sf - a) after a += x: the '+' child against the rest of its folder."""
    for j in range(y.shape[0]):
        v = np.float64(x[j])
        a[j] += v
        y[j] = wp * v - wm * (sf[j] - a[j])


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
    V[1:, :W] = 0.0
    x = src[s0 : s0 + W]
    v = V[0, :W]
    for j in range(W):
        v[j] = x[j] * scale0
    ng = neg[:W]
    prev = -1
    for k in range(cnode.shape[0]):
        f = cnode[k]
        if f != prev:
            ng[:] = 0.0
            prev = f
        wp = wplus[k]
        wm = wminus[k]
        off = s0 + (k + 1) * ss
        x = src[off : off + W]
        v = V[cplus[k], :W]
        for j in range(W):
            ck = np.float64(x[j])
            v[j] = ng[j] + wp * ck
            ng[j] -= wm * ck
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
def _n_blocks(A, B):
    if B >= _MIN_CONTIGUOUS:
        return A * ((B + _WIDTH - 1) // _WIDTH)
    return ((A + _TWIDTH - 1) // _TWIDTH) * B


@numba.njit(cache=True)
def _task_range(task, n_tasks, n_blocks):
    per = (n_blocks + n_tasks - 1) // n_tasks
    return task * per, min(n_blocks, (task + 1) * per)


@numba.njit(cache=True)
def _transpose_in(src, base0, ls, W, n, B, buf):
    """buf[p, j] = src[base0 + j * ls + p * B]: lane j of the block as column j."""
    for j in range(W):
        off = base0 + j * ls
        for p in range(n):
            buf[p * W + j] = src[off + p * B]


@numba.njit(cache=True)
def _transpose_out(buf, dst, base0, ls, W, n, B):
    for j in range(W):
        off = base0 + j * ls
        for p in range(n):
            dst[off + p * B] = buf[p * W + j]


@numba.njit(cache=True)
def _forward_task(X, out, A, n, B, g0, g1, leaf_order, child_ptr, first_leaf, cnode, cplus,
                  wplus, wminus):  # fmt: skip
    S = np.empty((max(first_leaf, 1), _WIDTH), dtype=np.float64)
    acc = np.empty(_WIDTH, dtype=np.float64)
    scale0 = 1.0 / np.sqrt(n)
    if B >= _MIN_CONTIGUOUS:
        for g in range(g0, g1):
            base0, _, W = _block(g, A, n, B)
            _forward_block(X, base0, B, out, base0, B, W, S, acc, leaf_order, child_ptr,
                           first_leaf, cnode, cplus, wplus, wminus, scale0)  # fmt: skip
        return
    bin_ = np.empty(n * _TWIDTH, dtype=np.float64)
    bout = np.empty(n * _TWIDTH, dtype=np.float64)
    for g in range(g0, g1):
        base0, ls, W = _block(g, A, n, B)
        _transpose_in(X, base0, ls, W, n, B, bin_)
        _forward_block(bin_, 0, W, bout, 0, W, W, S, acc, leaf_order, child_ptr, first_leaf,
                       cnode, cplus, wplus, wminus, scale0)  # fmt: skip
        _transpose_out(bout, out, base0, ls, W, n, B)


@numba.njit(cache=True, parallel=True)
def haar_forward(
    X, out, A, n, B, leaf_order, child_ptr, parent, first_leaf, cnode, cplus, clast, wplus, wminus,
    n_threads,
):  # fmt: skip
    n_blocks = _n_blocks(A, B)
    n_tasks = min(n_blocks, _TASKS_PER_THREAD * n_threads)
    for task in numba.prange(n_tasks):
        g0, g1 = _task_range(task, n_tasks, n_blocks)
        _forward_task(
            X, out, A, n, B, g0, g1, leaf_order, child_ptr, first_leaf, cnode, cplus, wplus, wminus
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
    C, out, A, n, B, leaf_order, child_ptr, parent, first_leaf, cnode, cplus, clast, wplus, wminus,
    n_threads,
):  # fmt: skip
    n_blocks = _n_blocks(A, B)
    n_tasks = min(n_blocks, _TASKS_PER_THREAD * n_threads)
    for task in numba.prange(n_tasks):
        g0, g1 = _task_range(task, n_tasks, n_blocks)
        _inverse_task(
            C, out, A, n, B, g0, g1, leaf_order, parent, first_leaf, cnode, cplus, clast, wplus,
            wminus,
        )  # fmt: skip
