"""Tree Haar kernels that keep one vector in cache at a time.

The data is a flat C-contiguous view of an array of shape ``(A, n, B)`` transformed along
the middle axis, as in :mod:`skorg._kernels._haar`, whose plan arrays these kernels take.
They compute the same floating-point operations in the same order as that module's kernels
(folder sums added child by child in node order, coefficient ``k`` as
``wplus[k] * x - wminus[k] * (S[f] - a)`` with ``a`` the running sum of the folder), so
the coefficients are equal bit for bit; only the memory access differs.

One vector ("lane", ``X[a, :, b]``) at a time, for short trailing runs (``B`` small,
above all the last axis): the vector is gathered into a buffer of ``n`` values,
transformed there and written out, so a long row is transformed in L1/L2 whatever its
length, and the work is split over rows. On a perfect binary tree in its canonical (BFS)
coefficient order the folder sums of a level are the pairwise sums of the level below,
and the kernel runs level by level over contiguous buffers (the lifting scheme: SIMD, no
index arrays); on any other tree it goes through a buffer of every node's sum, four
vectors at a time (one node loop, its branches and index loads shared:
:mod:`skorg._kernels._haar_tree_lanes`). Runs of rows combined pairwise are in
:mod:`skorg._kernels._haar_segments`.

Sums are accumulated in float64 whatever the data dtype. ``lo`` / ``hi`` are lane
ranges; the parallel wrappers split them into ``n_tasks`` tasks (the caller sets a
parallel chunk size of 1, so a thread slowed by another process takes fewer tasks), and
the serial entry points (``*_range``) serve small inputs, where waking the thread pool
costs more than the transform.
"""

import numba
import numpy as np

from ._haar_tree_lanes import _tree_lanes

# unsigned offsets: numba indexes with them without a negative-index wraparound
_U = np.uint64


@numba.njit(cache=True)
def _split(task, n_tasks, total):
    per = (total + n_tasks - 1) // n_tasks
    return task * per, min(total, (task + 1) * per)


# ---------------------------------------------------------------------- one lane at a time
@numba.njit(cache=True)
def _pair_level(src, dst, y, k, w, h):
    """One lifting level: ``dst[j]`` = sum of the pair ``src[2j], src[2j + 1]``, ``y[k + j]``
    its coefficient, ``w`` the level's weight (on a perfect binary tree both weights of every
    folder of a level are this one number). The indices are unsigned, so they need no
    negative-index wraparound and the loop compiles to SIMD code; writing at ``k`` rather
    than into a slice of y spares a slice per level, which costs more than a short level."""
    k = _U(k)
    one = _U(1)
    for j in range(_U(h)):
        a = np.float64(src[j + j])
        b = np.float64(src[j + j + one])
        s = a + b
        y[k + j] = w * b - w * (s - b)
        dst[j] = s


@numba.njit(cache=True, inline="always")
def _gather_pair_level(src, perm, dst, y, k, w, h):
    """:func:`_pair_level` on ``src`` taken in the order ``perm`` (the pair of folder j is
    ``src[perm[2j]], src[perm[2j + 1]]``): the first level of a lane in a leaf order that is
    not the identity, read from a cached copy of the lane. Gathering in the same loop spares
    writing and reading back a permuted copy; the sums are the same numbers."""
    k = _U(k)
    one = _U(1)
    for j in range(_U(h)):
        a = np.float64(src[_U(perm[j + j])])
        b = np.float64(src[_U(perm[j + j + one])])
        s = a + b
        y[k + j] = w * b - w * (s - b)
        dst[j] = s


@numba.njit(cache=True, inline="always")
def _gather(src, perm, dst, n):
    """``dst[i] = src[perm[i]]`` for i < n (unsigned indices)."""
    for i in range(_U(n)):
        dst[i] = src[_U(perm[i])]


@numba.njit(cache=True, inline="always")
def _scatter(src, perm, dst, n):
    """``dst[perm[i]] = src[i]`` for i < n (unsigned indices)."""
    for i in range(_U(n)):
        dst[_U(perm[i])] = src[i]


@numba.njit(cache=True, inline="always")
def _copy(src, dst, n):
    """``dst[i] = src[i]`` for i < n: a lane into a cached buffer, read in order so that the
    hardware prefetches it, before the gather of its first level; a subtree's points into
    the lane."""
    for i in range(n):
        dst[i] = src[i]


@numba.njit(cache=True)
def _unpair_level(src, dst, c, wp, wm, h):
    """One inverse level: the totals ``src[j]`` of h folders pushed to their 2h children.
    (Per-folder weights, although equal on a level: with one scalar weight the compiled loop
    is slower on short lanes.)"""
    for j in range(h):
        ck = np.float64(c[j])
        v = src[j]
        dst[2 * j] = -(wm[j] * ck) + v
        dst[2 * j + 1] = wp[j] * ck + v


@numba.njit(cache=True)
def _dyadic_forward_lane(x, y, leaf_order, wplus, scale0, identity, t, u):
    """Coefficients y (length n) of one vector x on a perfect binary tree.

    Level by level from the leaves: folder ``j`` of a level with ``h`` folders is node
    ``h - 1 + j``, its children are the leaf-order neighbours ``2j`` and ``2j + 1`` of the
    level below, its '+' child is the second one and its coefficient is number ``h + j``.
    ``t`` and ``u`` hold n values; with the identity leaf order the first level reads x
    itself, else it gathers from x (a cached copy of the lane: see :func:`haar_lanes_range`).
    """
    n = leaf_order.shape[0]
    h = n >> 1
    if identity:
        _pair_level(x, t, y, h, wplus[h - 1], h)
    else:
        _gather_pair_level(x, leaf_order, t, y, h, wplus[h - 1], h)
    h >>= 1
    while h >= IN_PLACE_FOLDERS:
        _pair_level(t, u, y, h, wplus[h - 1], h)
        t, u = u, t
        h >>= 1
    y[0] = _levels_in_place(t, y, wplus, h) * scale0


# the levels of fewer folders than this run in place on one buffer (_levels_in_place): one
# loop per level without the vector loop's set-up, which costs more than these short levels
# (one row of 1024 in L1: 1.3x faster than ping-pong levels down to the root, the cut 64
# within 5% of the best of 16-512; whole lanes kernel, one run against the ping-pong: rows
# of 128-1024 1.05-1.25x faster, from 4096 level; the inverse's first levels likewise,
# _unlevels_in_place: 1.25-1.9x faster on 128-1024, 1.08-1.1x on 4096)
IN_PLACE_FOLDERS = 64


@numba.njit(cache=True, inline="always")
def _levels_in_place(t, y, wplus, h):
    """The levels from ``h`` folders (sums of pairs of ``t[:2h]``) up to the root, in place in
    ``t`` (folder j reads ``t[2j]`` and ``t[2j + 1]``, at or after ``t[j]``, which it then
    writes), their coefficients to ``y[h':2h']`` as :func:`_pair_level` gives them, the
    same operations; returns the root's sum."""
    while h >= 1:
        w = wplus[h - 1]
        for j in range(h):
            a = t[j + j]
            b = t[j + j + 1]
            s = a + b
            y[h + j] = w * b - w * (s - b)
            t[j] = s
        h >>= 1
    return t[0]


@numba.njit(cache=True, inline="always")
def _unlevels_in_place(c, t, wplus, wminus, stop):
    """The inverse levels from the root down to ``stop`` folders (a power of two, at most
    n / 2), in place in ``t`` (the root's total in ``t[0]``): folder j's total ``t[j]`` goes
    to ``t[2j]`` and ``t[2j + 1]``, j from the last down, so that no total is overwritten
    before it is read; the operations of :func:`_unpair_level`. Returns ``stop``."""
    h = 1
    while h < stop:
        for j in range(h - 1, -1, -1):
            k = h - 1 + j
            ck = np.float64(c[h + j])
            v = t[j]
            t[2 * j] = -(wminus[k] * ck) + v
            t[2 * j + 1] = wplus[k] * ck + v
        h <<= 1
    return h


@numba.njit(cache=True)
def _dyadic_inverse_lane(c, y, leaf_rank, wplus, wminus, scale0, identity, t, u):
    """Data y of one coefficient vector c on a perfect binary tree (top-down, level by level).

    A folder's total goes to its children as ``-(wminus * c) + total`` (first child) and
    ``wplus * c + total`` (second), the values the node-by-node kernel pushes down. ``t``
    and ``u`` hold n values; with the identity leaf order the last level writes y itself,
    else y is gathered from the last level by ``leaf_rank`` (the leaf position of every
    point), so that y is written in order: scattered writes to a lane in memory cost more.
    """
    n = leaf_rank.shape[0]
    t[0] = np.float64(c[0]) * scale0
    h = _unlevels_in_place(c, t, wplus, wminus, min(IN_PLACE_FOLDERS, n >> 1))
    while h < n >> 1:
        _unpair_level(t, u, c[h : 2 * h], wplus[h - 1 : 2 * h - 1], wminus[h - 1 : 2 * h - 1], h)
        t, u = u, t
        h <<= 1
    k = h - 1
    if identity:
        _unpair_level(t, y, c[h : 2 * h], wplus[k : k + h], wminus[k : k + h], h)
    else:
        _unpair_level(t, u, c[h : 2 * h], wplus[k : k + h], wminus[k : k + h], h)
        _gather(u, leaf_rank, y, n)


# a lane longer than CHUNKED is lifted one subtree of CHUNK leaves at a time (its levels
# stay in L1/L2), then the levels above the subtrees on their sums: the same pairwise sums
CHUNK = 1 << 13
CHUNKED = 1 << 14


@numba.njit(cache=True)
def _forward_chunks(x, y, leaf_order, wplus, t, u, top, c0, c1, identity):
    """The levels within subtrees c0..c1-1 of ``CHUNK`` leaves; their sums to ``top``.

    Subtree ``c``'s folders at a level with ``H`` folders are ``c * h .. c * h + h - 1`` of
    that level (h of them), so its coefficients are the contiguous run from ``H + c * h``.
    With the identity leaf order the first level reads x itself (no index array, no copy),
    else it gathers from x (fastest from a cached copy of the lane, as
    :func:`haar_lanes_range` gives it).
    """
    n = leaf_order.shape[0]
    for c in range(c0, c1):
        off = c * CHUNK
        h = CHUNK >> 1
        H = n >> 1
        k = H + c * h
        if identity:
            _pair_level(x[off : off + CHUNK], u, y, k, wplus[k - 1], h)
        else:
            _gather_pair_level(x, leaf_order[off : off + CHUNK], u, y, k, wplus[k - 1], h)
        src = u
        dst = t
        h >>= 1
        H >>= 1
        while h >= 1:
            k = H + c * h
            _pair_level(src, dst, y, k, wplus[k - 1], h)
            src, dst = dst, src
            h >>= 1
            H >>= 1
        top[c] = src[0]


@numba.njit(cache=True)
def _forward_top(y, wplus, scale0, top, top2):
    """The levels above the subtrees, from their sums ``top``."""
    src = top
    dst = top2
    h = top.shape[0] >> 1
    while h >= 1:
        k = h - 1
        _pair_level(src, dst, y, h, wplus[k], h)
        src, dst = dst, src
        h >>= 1
    y[0] = src[0] * scale0


@numba.njit(cache=True)
def _inverse_top(c, wplus, wminus, scale0, top, top2):
    """The totals of the subtrees' roots (the levels above them); returns the buffer."""
    src = top
    dst = top2
    src[0] = np.float64(c[0]) * scale0
    h = 1
    while h < top.shape[0]:
        k = h - 1
        _unpair_level(src, dst, c[h : 2 * h], wplus[k : k + h], wminus[k : k + h], h)
        src, dst = dst, src
        h <<= 1
    return src


@numba.njit(cache=True)
def _inverse_chunks(c, y, leaf_order, wplus, wminus, t, u, totals, q0, q1, identity):
    """The levels within subtrees q0..q1-1, from their roots' totals; their points to y."""
    n_chunks = totals.shape[0]
    for q in range(q0, q1):
        a = t
        b = u
        a[0] = totals[q]
        h = 1
        H = n_chunks
        while h < CHUNK:
            k = H + q * h
            _unpair_level(
                a, b, c[k : k + h], wplus[k - 1 : k - 1 + h], wminus[k - 1 : k - 1 + h], h
            )
            a, b = b, a
            h <<= 1
            H <<= 1
        off = q * CHUNK
        # loops from 0 over slices: with the offset in the index, the compiled loop keeps a
        # negative-index check per value and does not vectorize
        if identity:
            _copy(a, y[off : off + CHUNK], CHUNK)
        else:
            _scatter(a, leaf_order[off : off + CHUNK], y, CHUNK)


@numba.njit(cache=True)
def _dyadic_forward_lane_chunked(x, y, leaf_order, wplus, scale0, t, u, top, top2, identity):
    """``_dyadic_forward_lane`` by subtrees of ``CHUNK`` leaves (n a multiple of it)."""
    _forward_chunks(x, y, leaf_order, wplus, t, u, top, 0, top.shape[0], identity)
    _forward_top(y, wplus, scale0, top, top2)


@numba.njit(cache=True)
def _dyadic_inverse_lane_chunked(c, y, leaf_order, wplus, wminus, scale0, t, u, top, top2,
                                 identity):  # fmt: skip
    """``_dyadic_inverse_lane`` by subtrees: the levels above them first, then each subtree."""
    totals = _inverse_top(c, wplus, wminus, scale0, top, top2)
    _inverse_chunks(c, y, leaf_order, wplus, wminus, t, u, totals, 0, top.shape[0], identity)


@numba.njit(cache=True, parallel=True)
def dyadic_long_lane(x, y, inverse, identity, leaf_order, wplus, wminus, n_tasks):
    """One long contiguous lane (n > ``CHUNKED``) with its subtrees split over tasks.

    For a 1-D vector or a few long rows, which the lane-parallel kernel would run on one
    thread. The same operations as the serial kernel, so the same coefficients. (In a leaf
    order other than the identity, the inverse scatters the points straight into y: writing
    them in leaf order into a buffer of n values and gathering y from it was up to 1.9x slower
    on 2^22 values: a fresh buffer's pages and a second pass over memory.)
    """
    n = leaf_order.shape[0]
    n_chunks = n // CHUNK
    scale0 = 1.0 / np.sqrt(n)
    top = np.empty(n_chunks, dtype=np.float64)
    top2 = np.empty(n_chunks, dtype=np.float64)
    totals = top
    if inverse:
        totals = _inverse_top(x, wplus, wminus, scale0, top, top2)
    for task in numba.prange(n_tasks):
        c0, c1 = _split(task, n_tasks, n_chunks)
        t = np.empty(CHUNK, dtype=np.float64)
        u = np.empty(CHUNK, dtype=np.float64)
        if inverse:
            _inverse_chunks(x, y, leaf_order, wplus, wminus, t, u, totals, c0, c1, identity)
        else:
            _forward_chunks(x, y, leaf_order, wplus, t, u, top, c0, c1, identity)
    if not inverse:
        _forward_top(y, wplus, scale0, top, top2)


@numba.njit(cache=True)
def haar_lanes_range(X, out, n, B, lo, hi, inverse, staged, dyadic, identity, leaf_order,
                     leaf_rank, child_span, parent, first_leaf, cnode, cplus, clast, wplus,
                     wminus):  # fmt: skip
    """Transform lanes lo..hi-1 (lane l is X[l // B, :, l % B]): one at a time on a perfect
    binary tree, four at a time on any other (:func:`_tree_lanes`).

    ``identity``: the leaf order is 0..n-1 (the caller knows it from the tree's plan), so
    perfect binary trees read and write the lanes without the index array. In any other
    leaf order (``leaf_rank`` its inverse, the leaf position of every point) a contiguous
    lane is copied in order into a buffer before the forward's gather, and the inverse
    writes its output in order, gathering it by ``leaf_rank`` from its last level (by
    subtrees, from a buffer of the points in leaf order): reads and writes of a lane in
    memory in a random order defeat the hardware prefetcher, and cost 1.3-2x the whole
    transform of a lane in the identity order. ``staged``: stage the forward coefficients of
    contiguous lanes on a perfect binary tree in a buffer (the same bits; see below).
    """
    if not dyadic and first_leaf > 0:
        _tree_lanes(X, out, n, B, lo, hi, inverse, leaf_rank, child_span, parent, first_leaf,
                    cnode, cplus, clast, wplus, wminus)  # fmt: skip
        return
    scale0 = 1.0 / np.sqrt(n)
    xin = np.empty(n, dtype=X.dtype)
    yout = np.empty(n, dtype=out.dtype)
    t = np.empty(min(n, CHUNK) if dyadic and n > CHUNKED else n, dtype=np.float64)
    u = np.empty(t.shape[0], dtype=np.float64)
    chunked = dyadic and n > CHUNKED
    identity = dyadic and identity
    # a contiguous lane in another leaf order: the forward reads a copy; the inverse by
    # subtrees writes the points in leaf order into a buffer, gathered out by leaf_rank
    stage_in = B == 1 and dyadic and not identity and not inverse
    stage_out = B == 1 and dyadic and not identity and inverse and chunked
    # ``staged`` (the caller's choice: arrays beyond the caches), a contiguous lane's forward
    # levels write their coefficients into a cached buffer, copied out in one run: written
    # straight into the lane in memory, level by level, the store misses of each level wait
    # between the levels' arithmetic (rows of 1024 values beyond L2, one thread: 1.4-1.8x
    # faster, float64 and float32); in cache the extra copy would cost up to 10%
    stage_levels = staged and B == 1 and dyadic and not inverse and not chunked
    top = np.empty(max(n // CHUNK, 1), dtype=np.float64)
    top2 = np.empty(max(n // CHUNK, 1), dtype=np.float64)
    for lane in range(lo, hi):
        a = lane // B
        b = lane % B
        base = a * n * B + b
        if B == 1:
            x = X[base : base + n]
            y = out[base : base + n]
            if stage_in:
                _copy(x, xin, n)
                x = xin
            if stage_out or stage_levels:
                y = yout
        else:  # a strided lane through buffers (unsigned offsets: no negative-index check)
            for p in range(_U(n)):
                xin[p] = X[_U(base) + p * _U(B)]
            x = xin
            y = yout
        if first_leaf == 0:  # a one-point tree: the root is the leaf
            y[0] = x[0]
        elif chunked and not inverse:
            _dyadic_forward_lane_chunked(x, y, leaf_order, wplus, scale0, t, u, top, top2, identity)
        elif chunked:
            _dyadic_inverse_lane_chunked(x, y, leaf_order, wplus, wminus, scale0, t, u, top, top2,
                                         identity or stage_out)  # fmt: skip
        elif not inverse:
            _dyadic_forward_lane(x, y, leaf_order, wplus, scale0, identity, t, u)
        else:
            _dyadic_inverse_lane(x, y, leaf_rank, wplus, wminus, scale0, identity, t, u)
        if B != 1:
            for p in range(_U(n)):
                out[_U(base) + p * _U(B)] = yout[p]
        elif stage_out:
            _gather(yout, leaf_rank, out[base : base + n], n)
        elif stage_levels:
            _copy(yout, out[base : base + n], n)


@numba.njit(cache=True, parallel=True)
def haar_lanes(X, out, n, B, n_lanes, inverse, staged, dyadic, identity, leaf_order,
               leaf_rank, child_span, parent, first_leaf, cnode, cplus, clast, wplus, wminus,
               n_tasks):  # fmt: skip
    for task in numba.prange(n_tasks):
        lo, hi = _split(task, n_tasks, n_lanes)
        haar_lanes_range(X, out, n, B, lo, hi, inverse, staged, dyadic, identity, leaf_order,
                         leaf_rank, child_span, parent, first_leaf, cnode, cplus, clast, wplus,
                         wminus)  # fmt: skip
