"""numba kernels of the flexible tree: the join rule and folder-mean distances."""

import numba
import numpy as np


@numba.njit(cache=True)
def _find(root, i):
    while root[i] != i:
        root[i] = root[root[i]]
        i = root[i]
    return i


@numba.njit(cache=True)
def cluster_labels(root):
    """Label of every node's union-find cluster, 0..k-1 by first appearance in node order."""
    m = root.shape[0]
    labels = np.empty(m, dtype=np.int64)
    remap = np.full(m, -1, dtype=np.int64)
    count = 0
    for i in range(m):
        r = _find(root, i)
        if remap[r] < 0:
            remap[r] = count
            count += 1
        labels[i] = remap[r]
    return labels


@numba.njit(cache=True)
def join_round(D, med, tree_constant):
    """One round of the flexible-tree join rule on m current nodes.

    ``D`` is the (m, m) mean diffusion distance between nodes with ``+inf``
    on the diagonal (and for unusable pairs); it is modified in place.
    ``med`` is its median over all m^2 entries. Returns the cluster label
    (0..k-1, by first appearance in node order) of every node and the number
    of joins made (0 means no progress).
    """
    m = D.shape[0]
    penalty = med / tree_constant

    rowmin = np.empty(m)
    nearest = np.empty(m, dtype=np.int64)
    for i in range(m):
        best = 0
        for j in range(1, m):
            if D[i, j] < D[i, best]:
                best = j
        nearest[i] = best
        rowmin[i] = D[i, best]

    root = np.arange(m)
    size = np.ones(m, dtype=np.int64)
    joins = 0
    while True:
        i = 0
        for a in range(1, m):
            if rowmin[a] < rowmin[i]:
                i = a
        if not np.isfinite(rowmin[i]):
            break
        if rowmin[i] >= med and joins > 0:
            break
        j = nearest[i]
        ri = _find(root, i)
        rj = _find(root, j)
        si = size[ri]
        sj = size[rj]
        if ri != rj and (si + sj == 2 or D[i, j] < penalty * 2.0 ** (1.0 - si * sj)):
            root[rj] = ri
            size[ri] = si + sj
            rowmin[i] = np.inf
            rowmin[j] = np.inf
            joins += 1
        else:
            D[i, j] = np.inf
            best = 0
            for b in range(1, m):
                if D[i, b] < D[i, best]:
                    best = b
            nearest[i] = best
            rowmin[i] = D[i, best]

    return cluster_labels(root), joins


@numba.njit(cache=True)
def _group_distance_sums(emb, labels, n_groups):
    """Sums of the point distances between every pair of groups, and the group sizes.

    Each distance is added to both halves in the order of the pairs (i, j),
    i < j, so ``sums[a, b]`` and ``sums[b, a]`` receive the same additions in
    the same order: the result is exactly symmetric.
    """
    n, k = emb.shape
    sums = np.zeros((n_groups, n_groups))
    counts = np.zeros(n_groups)
    for i in range(n):
        counts[labels[i]] += 1.0
    for i in range(n):
        gi = labels[i]
        for j in range(i + 1, n):
            acc = 0.0
            for c in range(k):
                diff = emb[i, c] - emb[j, c]
                acc += diff * diff
            dist = np.sqrt(acc)
            gj = labels[j]
            sums[gi, gj] += dist
            sums[gj, gi] += dist
    return sums, counts


@numba.njit(cache=True)
def round_distances(emb, labels, n_groups):
    """The distance matrix of one flexible-tree round, and its strict upper triangle.

    ``D[a, b]`` is the mean distance between the points of groups a and b
    (see :func:`mean_pairwise_distance`), ``+inf`` where it is not finite and
    on the diagonal; D is exactly symmetric. ``tri`` lists ``D[a, b]``, a < b,
    row by row (the median of D follows from it).
    """
    sums, counts = _group_distance_sums(emb, labels, n_groups)
    tri = np.empty(n_groups * (n_groups - 1) // 2)
    t = 0
    for a in range(n_groups):
        sums[a, a] = np.inf
        for b in range(a + 1, n_groups):
            v = sums[a, b] / (counts[a] * counts[b])
            if not np.isfinite(v):
                v = np.inf
            sums[a, b] = v
            sums[b, a] = v
            tri[t] = v
            t += 1
    return sums, tri


@numba.njit(cache=True)
def mean_pairwise_distance(embedding, labels, n_groups):
    """Mean Euclidean distance between the points of every pair of groups.

    Serial on purpose: each pair is visited once (symmetry), and the work per
    call is too small for threads to pay off next to BLAS threads.
    """
    sums, counts = _group_distance_sums(embedding, labels, n_groups)
    for a in range(n_groups):
        for b in range(n_groups):
            sums[a, b] /= counts[a] * counts[b]
    return sums
