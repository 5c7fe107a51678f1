"""Tree Haar kernels four vectors at a time on any tree (not perfect binary ones).

The data is a flat C-contiguous view of an array of shape ``(A, n, B)`` transformed along
the middle axis, as in :mod:`skorg._kernels._haar`, whose plan arrays these kernels take;
:func:`skorg._kernels._haar_rows.haar_lanes_range` calls :func:`_tree_lanes` for vectors
("lanes") one at a time on trees other than perfect binary ones. Every node's sum goes
into a buffer, four vectors at a time (one node loop, its branches and index loads
shared), in the operations and order of the block kernel, so the coefficients are equal
bit for bit. Sums are accumulated in float64 whatever the data dtype.
"""

import numba
import numpy as np

# unsigned offsets: numba indexes with them without a negative-index wraparound
_U = np.uint64


@numba.njit(cache=True)
def _tree_forward_4lanes(X, out, b0, b1, b2, b3, B, leaf_rank, child_span, first_leaf, cnode,
                         cplus, wplus, wminus, scale0, V):  # fmt: skip
    """Coefficients of four vectors on any tree (point p of lane l at ``X[b_l + p * B]``):
    every node's sum in ``V`` (4 values per node), then the coefficients.

    The node loop, its branches and the index loads are shared by the four lanes, whose
    independent sums run side by side; each lane gets the block kernel's operations in its
    order (folder sums child by child, coefficient ``k`` as
    ``wplus[k] * v - wminus[k] * (S[f] - a)``), so the same coefficients bit for bit. The
    offsets into ``X``, ``V`` and ``out`` are unsigned: a signed one costs a negative-index
    wraparound per access (1.2-1.5x slower on the trees of ``benchmarks/bench_haar.py``).
    The points are read in memory order, each to its leaf's place in ``V`` (``leaf_rank``,
    the leaf position of every point): in leaf order the reads would jump about four lanes
    in memory, which the hardware does not prefetch.
    """
    one, two, three, four = _U(1), _U(2), _U(3), _U(4)
    B_ = _U(B)
    o0, o1, o2, o3 = _U(b0), _U(b1), _U(b2), _U(b3)
    base = four * _U(first_leaf)
    for p in range(leaf_rank.shape[0]):
        r = _U(p) * B_
        q = base + four * _U(leaf_rank[p])
        V[q] = X[o0 + r]
        V[q + one] = X[o1 + r]
        V[q + two] = X[o2 + r]
        V[q + three] = X[o3 + r]
    for node in range(first_leaf - 1, -1, -1):
        c = four * _U(child_span[node, 0])
        end = four * _U(child_span[node, 1])
        s0 = V[c]
        s1 = V[c + one]
        s2 = V[c + two]
        s3 = V[c + three]
        c += four
        while c < end:
            s0 += V[c]
            s1 += V[c + one]
            s2 += V[c + two]
            s3 += V[c + three]
            c += four
        q = four * _U(node)
        V[q] = s0
        V[q + one] = s1
        V[q + two] = s2
        V[q + three] = s3
    out[o0] = V[0] * scale0
    out[o1] = V[1] * scale0
    out[o2] = V[2] * scale0
    out[o3] = V[3] * scale0
    prev = -1
    a0 = a1 = a2 = a3 = 0.0
    for k in range(cnode.shape[0]):
        f = cnode[k]
        cp = four * _U(cplus[k])
        v0 = V[cp]
        v1 = V[cp + one]
        v2 = V[cp + two]
        v3 = V[cp + three]
        if f != prev:
            prev = f
            a0 = v0
            a1 = v1
            a2 = v2
            a3 = v3
        else:
            a0 += v0
            a1 += v1
            a2 += v2
            a3 += v3
        wp = wplus[k]
        wm = wminus[k]
        fq = four * _U(f)
        o = (_U(k) + one) * B_
        out[o0 + o] = wp * v0 - wm * (V[fq] - a0)
        out[o1 + o] = wp * v1 - wm * (V[fq + one] - a1)
        out[o2 + o] = wp * v2 - wm * (V[fq + two] - a2)
        out[o3 + o] = wp * v3 - wm * (V[fq + three] - a3)


@numba.njit(cache=True)
def _tree_inverse_4lanes(C, out, b0, b1, b2, b3, B, leaf_rank, parent, first_leaf, cnode, cplus,
                         clast, wplus, wminus, scale0, V):  # fmt: skip
    """Data of four coefficient vectors on any tree (as :func:`_tree_forward_4lanes`, unsigned
    offsets too, and the points written in memory order): node values, then totals pushed
    down from the root."""
    one, two, three, four = _U(1), _U(2), _U(3), _U(4)
    B_ = _U(B)
    o0, o1, o2, o3 = _U(b0), _U(b1), _U(b2), _U(b3)
    n_nodes = parent.shape[0]
    for node in range(1, n_nodes):
        p = parent[node]
        if (node == 1 or parent[node - 1] != p) and (node == n_nodes - 1 or parent[node + 1] != p):
            q = four * _U(node)
            V[q] = V[q + one] = V[q + two] = V[q + three] = 0.0
    V[0] = np.float64(C[o0]) * scale0
    V[1] = np.float64(C[o1]) * scale0
    V[2] = np.float64(C[o2]) * scale0
    V[3] = np.float64(C[o3]) * scale0
    prev = -1
    g0 = g1 = g2 = g3 = 0.0
    for k in range(cnode.shape[0]):
        f = cnode[k]
        o = (_U(k) + one) * B_
        k0 = np.float64(C[o0 + o])
        k1 = np.float64(C[o1 + o])
        k2 = np.float64(C[o2 + o])
        k3 = np.float64(C[o3 + o])
        wp = wplus[k]
        wm = wminus[k]
        cp = four * _U(cplus[k])
        if f != prev:
            prev = f
            V[cp] = wp * k0
            V[cp + one] = wp * k1
            V[cp + two] = wp * k2
            V[cp + three] = wp * k3
            g0 = -(wm * k0)
            g1 = -(wm * k1)
            g2 = -(wm * k2)
            g3 = -(wm * k3)
        else:
            V[cp] = g0 + wp * k0
            V[cp + one] = g1 + wp * k1
            V[cp + two] = g2 + wp * k2
            V[cp + three] = g3 + wp * k3
            g0 -= wm * k0
            g1 -= wm * k1
            g2 -= wm * k2
            g3 -= wm * k3
        last = clast[k]
        if last >= 0:
            q = four * _U(last)
            V[q] = g0
            V[q + one] = g1
            V[q + two] = g2
            V[q + three] = g3
    for node in range(1, first_leaf):
        q = four * _U(node)
        r = four * _U(parent[node])
        V[q] += V[r]
        V[q + one] += V[r + one]
        V[q + two] += V[r + two]
        V[q + three] += V[r + three]
    for p in range(leaf_rank.shape[0]):
        node = first_leaf + leaf_rank[p]
        q = four * _U(node)
        r = four * _U(parent[node])
        o = _U(p) * B_
        out[o0 + o] = V[q] + V[r]
        out[o1 + o] = V[q + one] + V[r + one]
        out[o2 + o] = V[q + two] + V[r + two]
        out[o3 + o] = V[q + three] + V[r + three]


@numba.njit(cache=True)
def _tree_lanes(X, out, n, B, lo, hi, inverse, leaf_rank, child_span, parent, first_leaf, cnode,
                cplus, clast, wplus, wminus):  # fmt: skip
    """Lanes lo..hi-1 on a tree that is not perfect binary, four at a time; a last group of
    fewer repeats its last lane (the same values, written to the same place again)."""
    scale0 = 1.0 / np.sqrt(n)
    V = np.empty(4 * parent.shape[0], dtype=np.float64)
    for g in range(lo, hi, 4):
        b0 = (g // B) * n * B + g % B
        l1 = min(g + 1, hi - 1)
        l2 = min(g + 2, hi - 1)
        l3 = min(g + 3, hi - 1)
        b1 = (l1 // B) * n * B + l1 % B
        b2 = (l2 // B) * n * B + l2 % B
        b3 = (l3 // B) * n * B + l3 % B
        if inverse:
            _tree_inverse_4lanes(X, out, b0, b1, b2, b3, B, leaf_rank, parent, first_leaf,
                                 cnode, cplus, clast, wplus, wminus, scale0, V)  # fmt: skip
        else:
            _tree_forward_4lanes(X, out, b0, b1, b2, b3, B, leaf_rank, child_span, first_leaf,
                                 cnode, cplus, wplus, wminus, scale0, V)  # fmt: skip
