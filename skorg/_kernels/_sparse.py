"""numba kernels of the sparse (k-nearest-neighbour) path: edge distances, sampled folder
means and the flexible-tree join rule restricted to linked folders."""

import heapq

import numba
import numpy as np

from ._flexible import _find, cluster_labels


@numba.njit(cache=True, parallel=True)
def edge_l1(F, ei, ej):
    """Cityblock distance ``sum_f |F[ei[e], f] - F[ej[e], f]|`` of every edge, in float64."""
    n_edges = ei.shape[0]
    out = np.empty(n_edges)
    for e in numba.prange(n_edges):
        a = ei[e]
        b = ej[e]
        acc = 0.0
        for f in range(F.shape[1]):
            acc += abs(np.float64(F[a, f]) - np.float64(F[b, f]))
        out[e] = acc
    return out


@numba.njit(cache=True, parallel=True)
def cross_l1(F, G):
    """Cityblock distances between every row of F and every row of G, in float64."""
    n = F.shape[0]
    m = G.shape[0]
    out = np.empty((n, m))
    for i in numba.prange(n):
        for j in range(m):
            acc = 0.0
            for f in range(F.shape[1]):
                acc += abs(np.float64(F[i, f]) - np.float64(G[j, f]))
            out[i, j] = acc
    return out


@numba.njit(cache=True, parallel=True)
def edge_sqeuclidean(F, ei, ej):
    """Squared Euclidean distance between the rows of every edge, in float64."""
    n_edges = ei.shape[0]
    out = np.empty(n_edges)
    for e in numba.prange(n_edges):
        a = ei[e]
        b = ej[e]
        acc = 0.0
        for f in range(F.shape[1]):
            diff = np.float64(F[a, f]) - np.float64(F[b, f])
            acc += diff * diff
        out[e] = acc
    return out


@numba.njit(cache=True, parallel=True)
def edge_dot(U, ei, ej):
    """Inner product of the rows ``U[ei[e]]`` and ``U[ej[e]]`` of every edge, in float64."""
    n_edges = ei.shape[0]
    out = np.empty(n_edges)
    for e in numba.prange(n_edges):
        a = ei[e]
        b = ej[e]
        acc = 0.0
        for f in range(U.shape[1]):
            acc += np.float64(U[a, f]) * np.float64(U[b, f])
        out[e] = acc
    return out


@numba.njit(cache=True, parallel=True)
def folder_pair_means(embedding, member_ptr, members, cap, pa, pb):
    """Mean Euclidean distance between the points of folders ``pa[p]`` and ``pb[p]``.

    Folder g holds ``members[member_ptr[g]:member_ptr[g + 1]]`` (in a fixed random order); only
    its first ``cap`` members take part, so that a pair costs at most ``cap**2`` distances.
    """
    n_pairs = pa.shape[0]
    k = embedding.shape[1]
    out = np.empty(n_pairs)
    for p in numba.prange(n_pairs):
        a0 = member_ptr[pa[p]]
        a1 = min(member_ptr[pa[p] + 1], a0 + cap)
        b0 = member_ptr[pb[p]]
        b1 = min(member_ptr[pb[p] + 1], b0 + cap)
        acc = 0.0
        for s in range(a0, a1):
            i = members[s]
            for t in range(b0, b1):
                j = members[t]
                sq = 0.0
                for c in range(k):
                    diff = embedding[i, c] - embedding[j, c]
                    sq += diff * diff
                acc += np.sqrt(sq)
        out[p] = acc / ((a1 - a0) * (b1 - b0))
    return out


@numba.njit(cache=True)
def sparse_join_round(cand_ptr, cand_j, cand_d, med, tree_constant):
    """The flexible-tree join rule of ``join_round`` on a sparse candidate list.

    Node i's candidates are ``cand_j[cand_ptr[i]:cand_ptr[i + 1]]`` with distances ``cand_d``,
    sorted by (distance, index), so that advancing a pointer is the dense kernel's "remove the
    rejected candidate and take the next nearest". Pairs that are not candidates count as
    ``+inf``. A heap of (nearest distance, node) replaces the dense linear scans; it breaks ties
    by the smaller node, as the dense argmin does. Returns labels by first appearance and the
    number of joins.
    """
    m = cand_ptr.shape[0] - 1
    penalty = med / tree_constant
    pos = cand_ptr[:-1].copy()
    rowmin = np.full(m, np.inf)
    heap = [(np.inf, np.int64(0))]
    heap.pop()
    for i in range(m):
        if pos[i] < cand_ptr[i + 1]:
            rowmin[i] = cand_d[pos[i]]
            heap.append((rowmin[i], np.int64(i)))
    heapq.heapify(heap)

    root = np.arange(m)
    size = np.ones(m, dtype=np.int64)
    joins = 0
    while len(heap) > 0:
        value, i = heapq.heappop(heap)
        if value != rowmin[i]:
            continue  # stale entry: the node joined or moved on to its next candidate
        if value >= med and joins > 0:
            break
        j = cand_j[pos[i]]
        ri = _find(root, i)
        rj = _find(root, j)
        si = size[ri]
        sj = size[rj]
        if ri != rj and (si + sj == 2 or value < penalty * 2.0 ** (1.0 - si * sj)):
            root[rj] = ri
            size[ri] = si + sj
            rowmin[i] = np.inf
            rowmin[j] = np.inf
            joins += 1
        else:
            pos[i] += 1
            if pos[i] < cand_ptr[i + 1]:
                rowmin[i] = cand_d[pos[i]]
                heapq.heappush(heap, (rowmin[i], i))
            else:
                rowmin[i] = np.inf

    return cluster_labels(root), joins
