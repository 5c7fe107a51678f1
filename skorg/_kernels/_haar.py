"""Tree Haar transform kernels.

The data is a flat C-contiguous view of an array of shape ``(A, n, B)`` and the
transform acts along the middle axis, so any axis of an N-D array is handled
without transposing it. The ``A * B`` vectors ("lanes") are processed
``_LANES`` at a time: a group of lanes is gathered into a node buffer of shape
``(n_nodes, _LANES)``, so every arithmetic loop runs over a fixed number of
contiguous lanes and compiles to SIMD code whatever the axis. When ``B`` is at
least ``_LANES`` the lanes of a group are neighbours along ``B`` (contiguous
loads); otherwise they are neighbours along ``A`` (stride ``n * B``). A short
group repeats its last lane, which writes the same values twice from the same
task.

The plan arrays describe the tree (see ``skorg.transforms._haar._HaarPlan``):
``leaf_order`` (point at each leaf position), ``child_ptr`` (CSR children of the
BFS node ids, so children ids exceed their parent's), ``parent``,
``first_leaf`` (node id of the leaf at position 0; leaves are the last ``n`` ids),
and one entry per detail coefficient, grouped by folder and in rank order
within a folder: ``cnode`` (the folder), ``cplus`` (the '+' child), ``clast``
(the last sorted child, on the folder's final coefficient; -1 before),
``wplus = M / N`` and ``wminus = s / N``. ``n_threads`` only sets the task
granularity. The output array is allocated by the caller: NumPy's large
allocations use transparent huge pages, which makes the first touch of a
fresh output several times cheaper than an allocation inside the kernel.
"""

import numba
import numpy as np

_LANES = 16


@numba.njit(cache=True)
def _group(g, A, n, B):
    """Flat offset of lane 0, lane stride and number of distinct lanes of group g."""
    if B >= _LANES:
        per_a = (B + _LANES - 1) // _LANES
        a = g // per_a
        b0 = (g % per_a) * _LANES
        return a * n * B + b0, 1, min(_LANES, B - b0)
    a0 = (g // B) * _LANES
    return a0 * n * B + g % B, n * B, min(_LANES, A - a0)


@numba.njit(cache=True)
def _n_groups(A, B):
    if B >= _LANES:
        return A * ((B + _LANES - 1) // _LANES)
    return ((A + _LANES - 1) // _LANES) * B


@numba.njit(cache=True)
def _gather(src, dst, row0, index, B, base0, ls, w):
    """dst[row0 + p, j] = src[base0 + index[p] * B + lane_j]."""
    m = index.shape[0]
    if ls == 1 and w == _LANES:
        # contiguous lanes: read each cache line once
        for p in range(m):
            off = base0 + index[p] * B
            for j in range(_LANES):
                dst[row0 + p, j] = src[off + j]
    else:
        for j in range(_LANES):
            base = base0 + min(j, w - 1) * ls
            for p in range(m):
                dst[row0 + p, j] = src[base + index[p] * B]


@numba.njit(cache=True)
def _scatter(dst, src, row0, index, B, base0, ls, w):
    """dst[base0 + index[p] * B + lane_j] = src[row0 + p, j]."""
    m = index.shape[0]
    if ls == 1 and w == _LANES:
        for p in range(m):
            off = base0 + index[p] * B
            for j in range(_LANES):
                dst[off + j] = src[row0 + p, j]
    else:
        for j in range(w):
            base = base0 + j * ls
            for p in range(m):
                dst[base + index[p] * B] = src[row0 + p, j]


@numba.njit(cache=True)
def _task_range(task, n_tasks, n_groups):
    per = (n_groups + n_tasks - 1) // n_tasks
    return task * per, min(n_groups, (task + 1) * per)


@numba.njit(cache=True)
def _folder_sums(S, child_ptr, first_leaf):
    """Sums of the internal folders, pulled from the children (no prefix-sum cancellation)."""
    for node in range(first_leaf - 1, -1, -1):
        c0 = child_ptr[node]
        for j in range(_LANES):
            S[node, j] = S[c0, j]
        for c in range(c0 + 1, child_ptr[node + 1]):
            for j in range(_LANES):
                S[node, j] += S[c, j]


@numba.njit(cache=True)
def _forward_contiguous(X, out, base0, B, S, acc, leaf_order, child_ptr, first_leaf, cnode, cplus,
                        wplus, wminus, scale0):  # fmt: skip
    """One group of contiguous lanes, reading the leaves from X and writing out directly."""
    for node in range(first_leaf - 1, -1, -1):
        c0 = child_ptr[node]
        c1 = child_ptr[node + 1]
        if c0 >= first_leaf:
            off = base0 + leaf_order[c0 - first_leaf] * B
            for j in range(_LANES):
                S[node, j] = X[off + j]
            for c in range(c0 + 1, c1):
                off = base0 + leaf_order[c - first_leaf] * B
                for j in range(_LANES):
                    S[node, j] += X[off + j]
        else:
            for j in range(_LANES):
                S[node, j] = S[c0, j]
            for c in range(c0 + 1, c1):
                for j in range(_LANES):
                    S[node, j] += S[c, j]
    for j in range(_LANES):
        out[base0 + j] = S[0, j] * scale0
    prev = -1
    for k in range(cnode.shape[0]):
        f = cnode[k]
        c = cplus[k]
        if f != prev:
            for j in range(_LANES):
                acc[j] = 0.0
            prev = f
        wp = wplus[k]
        wm = wminus[k]
        dst = base0 + (k + 1) * B
        if c >= first_leaf:
            src = base0 + leaf_order[c - first_leaf] * B
            for j in range(_LANES):
                v = X[src + j]
                acc[j] += v
                out[dst + j] = wp * v - wm * (S[f, j] - acc[j])
        else:
            for j in range(_LANES):
                v = S[c, j]
                acc[j] += v
                out[dst + j] = wp * v - wm * (S[f, j] - acc[j])


@numba.njit(cache=True)
def _forward_groups(
    X, out, A, n, B, g0, g1, leaf_order, child_ptr, first_leaf, cnode, cplus, wplus, wminus
):  # fmt: skip
    n_nodes = child_ptr.shape[0] - 1
    S = np.empty((n_nodes, _LANES), dtype=np.float64)
    O = np.empty((n, _LANES), dtype=np.float64)
    acc = np.empty(_LANES, dtype=np.float64)
    identity = np.arange(n)
    scale0 = 1.0 / np.sqrt(n)
    for g in range(g0, g1):
        base0, ls, w = _group(g, A, n, B)
        if ls == 1 and w == _LANES:
            _forward_contiguous(X, out, base0, B, S, acc, leaf_order, child_ptr, first_leaf,
                                cnode, cplus, wplus, wminus, scale0)  # fmt: skip
            continue
        _gather(X, S, first_leaf, leaf_order, B, base0, ls, w)
        _folder_sums(S, child_ptr, first_leaf)
        for j in range(_LANES):
            O[0, j] = S[0, j] * scale0
        prev = -1
        for k in range(cnode.shape[0]):
            f = cnode[k]
            c = cplus[k]
            if f != prev:
                for j in range(_LANES):
                    acc[j] = 0.0
                prev = f
            wp = wplus[k]
            wm = wminus[k]
            for j in range(_LANES):
                v = S[c, j]
                acc[j] += v
                O[k + 1, j] = wp * v - wm * (S[f, j] - acc[j])
        _scatter(out, O, 0, identity, B, base0, ls, w)


@numba.njit(cache=True, parallel=True)
def haar_forward(
    X, out, A, n, B, leaf_order, child_ptr, parent, first_leaf, cnode, cplus, clast, wplus, wminus,
    n_threads,
):  # fmt: skip
    n_groups = _n_groups(A, B)
    n_tasks = min(n_groups, 4 * n_threads)
    for task in numba.prange(n_tasks):
        g0, g1 = _task_range(task, n_tasks, n_groups)
        _forward_groups(
            X, out, A, n, B, g0, g1, leaf_order, child_ptr, first_leaf, cnode, cplus, wplus, wminus
        )


@numba.njit(cache=True)
def _inverse_groups(
    C, out, A, n, B, g0, g1, leaf_order, parent, first_leaf, cnode, cplus, clast, wplus, wminus
):  # fmt: skip
    n_nodes = parent.shape[0]
    n_coef = cnode.shape[0]
    V = np.empty((n_nodes, _LANES), dtype=np.float64)
    O = np.empty((n, _LANES), dtype=np.float64)
    neg = np.empty(_LANES, dtype=np.float64)
    identity = np.arange(n)
    scale0 = 1.0 / np.sqrt(n)
    for g in range(g0, g1):
        base0, ls, w = _group(g, A, n, B)
        if ls == 1 and w == _LANES:
            # contiguous lanes: coefficient k of the group is C[base0 + k * B : ... + _LANES]
            for k in range(n):
                off = base0 + k * B
                for j in range(_LANES):
                    O[k, j] = C[off + j]
        else:
            _gather(C, O, 0, identity, B, base0, ls, w)
        # V[node] first holds the value added on the node's folder, then the pushed-down total
        for node in range(n_nodes):
            for j in range(_LANES):
                V[node, j] = 0.0
        for j in range(_LANES):
            V[0, j] = O[0, j] * scale0
        prev = -1
        for k in range(n_coef):
            f = cnode[k]
            c = cplus[k]
            if f != prev:
                for j in range(_LANES):
                    neg[j] = 0.0
                prev = f
            wp = wplus[k]
            wm = wminus[k]
            for j in range(_LANES):
                ck = O[k + 1, j]
                V[c, j] = neg[j] + wp * ck
                neg[j] -= wm * ck
            last = clast[k]
            if last >= 0:
                for j in range(_LANES):
                    V[last, j] = neg[j]
        for node in range(1, n_nodes):
            par = parent[node]
            for j in range(_LANES):
                V[node, j] += V[par, j]
        _scatter(out, V, first_leaf, leaf_order, B, base0, ls, w)


@numba.njit(cache=True, parallel=True)
def haar_inverse(
    C, out, A, n, B, leaf_order, child_ptr, parent, first_leaf, cnode, cplus, clast, wplus, wminus,
    n_threads,
):  # fmt: skip
    n_groups = _n_groups(A, B)
    n_tasks = min(n_groups, 4 * n_threads)
    for task in numba.prange(n_tasks):
        g0, g1 = _task_range(task, n_tasks, n_groups)
        _inverse_groups(
            C,
            out,
            A,
            n,
            B,
            g0,
            g1,
            leaf_order,
            parent,
            first_leaf,
            cnode,
            cplus,
            clast,
            wplus,
            wminus,
        )
