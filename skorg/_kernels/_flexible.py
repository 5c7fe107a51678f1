"""numba kernels of the flexible tree: the join rule, folder-mean distances and the dense
symmetric diffusion operator it starts from."""

import numba
import numpy as np
from numba import prange

from .._threading import parallel_threads


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
def _row_distances(embT, i, dist):
    """``dist[j - i - 1] = ||emb[i] - emb[j]||`` for every point j > i.

    ``embT`` is the embedding transposed, (k, n) C-contiguous, so that the
    loop over the points is contiguous (and vectorizes). Each distance adds
    the squared coordinate differences in coordinate order, as a scalar loop
    would: the value does not depend on the vector width.
    """
    k, n = embT.shape
    m = n - i - 1
    for j in range(m):
        dist[j] = 0.0
    for c in range(k):
        x = embT[c, i]
        row = embT[c, i + 1 :]
        for j in range(m):
            diff = x - row[j]
            dist[j] += diff * diff
    for j in range(m):
        dist[j] = np.sqrt(dist[j])


@numba.njit(cache=True)
def _add_group_distances(embT, labels, with_diagonal, i0, i1, sums, dist):
    """Add the distances of the pairs (i, j), i0 <= i < i1, i < j, to ``sums``.

    The order and placement of :func:`_group_distance_sums`; ``dist`` is
    scratch of at least n - 1 entries.
    """
    n = embT.shape[1]
    for i in range(i0, min(i1, n - 1)):
        _row_distances(embT, i, dist)
        gi = labels[i]
        for j in range(i + 1, n):
            gj = labels[j]
            d = dist[j - i - 1]
            if gi < gj:
                sums[gi, gj] += d
            elif gj < gi:
                sums[gj, gi] += d
            elif with_diagonal:
                sums[gi, gi] += d
                sums[gi, gi] += d


@numba.njit(cache=True)
def _group_counts(labels, n_groups):
    counts = np.zeros(n_groups)
    for i in range(labels.shape[0]):
        counts[labels[i]] += 1.0
    return counts


@numba.njit(cache=True)
def _group_distance_sums(embT, labels, n_groups, with_diagonal):
    """Sums of the point distances between every pair of groups, and the group sizes.

    ``embT`` is the (k, n) transposed embedding. The distance of a pair of
    points (i, j), i < j, in groups a < b is added to ``sums[a, b]``, pairs
    in the order of (i, j); the strict lower triangle stays zero. So
    ``sums[a, b]`` holds exactly what a symmetric accumulation into both
    ``sums[a, b]`` and ``sums[b, a]`` gives each of them, with half the
    scattered additions. With ``with_diagonal`` a pair within group a is
    added twice to ``sums[a, a]`` (once per half of the symmetric sum);
    otherwise the diagonal stays zero.
    """
    n = embT.shape[1]
    sums = np.zeros((n_groups, n_groups))
    dist = np.empty(max(n - 1, 0))
    _add_group_distances(embT, labels, with_diagonal, 0, n, sums, dist)
    return sums, _group_counts(labels, n_groups)


@numba.njit(cache=True)
def _mirror_rows(D, a0, a1):
    """Copy ``D[a, b]`` to ``D[b, a]`` for the rows a0 <= a < a1 and every b > a."""
    m = D.shape[0]
    for b in range(a0 + 1, m):
        for a in range(a0, min(a1, b)):
            D[b, a] = D[a, b]


# Rows per block when the upper triangle is mirrored: the block is still in cache, and
# the transposed writes are whole cache lines.
_MIRROR_ROWS = 8


@numba.njit(cache=True)
def _is_identity(labels, n_groups):
    if labels.shape[0] != n_groups:
        return False
    for i in range(n_groups):
        if labels[i] != i:
            return False
    return True


@numba.njit(cache=True)
def _pair_balanced_rows(n, n_parts):
    """Bounds ``0 = r[0] <= r[1] <= ... <= r[n_parts] = n`` of contiguous row ranges with
    about equal numbers of pairs (i, j), i < j < n (row i has n - 1 - i of them)."""
    bounds = np.empty(n_parts + 1, dtype=np.int64)
    total = n * (n - 1) // 2
    bounds[0] = 0
    row = 0
    done = 0
    for p in range(1, n_parts):
        target = total * p // n_parts
        while row < n and done < target:
            done += n - 1 - row
            row += 1
        bounds[p] = row
    bounds[n_parts] = n
    return bounds


@numba.njit(cache=True)
def _first_round_rows(embT, a0, a1, D, tri):
    """Rows a0 <= a < a1 of the first round (one point per group) of :func:`round_distances`:
    ``D[a, a:]``, their mirror ``D[a:, a]`` and their part of ``tri``."""
    m = D.shape[0]
    t = a0 * (m - 1) - a0 * (a0 - 1) // 2
    for c0 in range(a0, a1, _MIRROR_ROWS):
        c1 = min(c0 + _MIRROR_ROWS, a1)
        for a in range(c0, c1):
            D[a, a] = np.inf
            row = D[a, a + 1 :]
            _row_distances(embT, a, row)
            for b in range(m - a - 1):
                v = row[b]
                if not np.isfinite(v):
                    v = np.inf
                    row[b] = v
                tri[t + b] = v
            t += m - a - 1
        _mirror_rows(D, c0, c1)


@numba.njit(cache=True)
def _group_round_rows(extra, counts, a0, a1, D, tri):
    """Rows a0 <= a < a1 of a later round of :func:`round_distances`.

    On entry the upper triangle of D holds group distance sums (of the first
    part of the pairs) and ``extra`` the sums of the other parts, which are
    added to them in order. Then ``D[a, b] = sum / (counts[a] * counts[b])``,
    b > a, is written with its mirror ``D[b, a]`` and its part of ``tri``.
    """
    m = D.shape[0]
    t = a0 * (m - 1) - a0 * (a0 - 1) // 2
    for c0 in range(a0, a1, _MIRROR_ROWS):
        c1 = min(c0 + _MIRROR_ROWS, a1)
        for a in range(c0, c1):
            D[a, a] = np.inf
            row = D[a, a + 1 :]
            w = m - a - 1
            for p in range(extra.shape[0]):
                other = extra[p, a, a + 1 :]
                for b in range(w):
                    row[b] += other[b]
            scale = counts[a]
            for b in range(w):
                v = row[b] / (scale * counts[a + 1 + b])
                if not np.isfinite(v):
                    v = np.inf
                row[b] = v
                tri[t + b] = v
            t += w
        _mirror_rows(D, c0, c1)


# Parts of a parallel round: a constant, not the number of threads, so that the partial
# sums, and the result, are the same on any number of threads.
_PARTS = 4

# Points from which a round runs in parallel: below, a parallel region costs more than
# it saves (the measured break-even is near 100 points on two idle cores, but a parallel
# region waits a scheduler quantum when the other core is busy, e.g. by OpenBLAS workers
# that spin for ~0.1 s after the threaded Gram product of a large initial affinity).
_PARALLEL_MIN_POINTS = 512


@numba.njit(parallel=True, cache=True)
def _first_round_parallel(embT, D, tri):
    rows = _pair_balanced_rows(D.shape[0], _PARTS)
    for p in prange(_PARTS):
        _first_round_rows(embT, rows[p], rows[p + 1], D, tri)


@numba.njit(parallel=True, cache=True)
def _group_round_parallel(embT, labels, counts, D, extra, tri):
    """A later round in ``_PARTS`` parts of contiguous points, balanced by pair count.

    Part 0 adds the pairs of its points to D, part p > 0 to its own
    ``extra[p - 1]``; the means then add the partial sums in part order.
    """
    n = embT.shape[1]
    points = _pair_balanced_rows(n, _PARTS)
    for p in prange(_PARTS):
        part = D if p == 0 else extra[p - 1]
        part[:, :] = 0.0
        dist = np.empty(max(n - 1, 0))
        _add_group_distances(embT, labels, False, points[p], points[p + 1], part, dist)
    rows = _pair_balanced_rows(D.shape[0], _PARTS)
    for p in prange(_PARTS):
        _group_round_rows(extra, counts, rows[p], rows[p + 1], D, tri)


def round_distances(emb, labels, n_groups):
    """The distance matrix of one flexible-tree round, and its strict upper triangle.

    ``D[a, b]`` is the mean distance between the points of groups a and b
    (see :func:`mean_pairwise_distance`), ``+inf`` where it is not finite and
    on the diagonal; D is exactly symmetric. ``tri`` lists ``D[a, b]``, a < b,
    row by row (the median of D follows from it).

    In the first round (every point its own group, ``labels == arange``) the
    mean over a pair of groups is the distance of its two points, written
    straight into D. From ``_PARALLEL_MIN_POINTS`` points on, the rounds run
    in ``_PARTS`` parts in parallel; a later round then sums the pairs of each
    part apart and adds the ``_PARTS`` partial sums in order, which depends on
    the number of points but never on the number of threads. The choice is made
    here, outside the compiled code, so that the parallel kernels (the slowest to
    compile) are compiled only when a tree that large is built.
    """
    if emb.shape[0] >= _PARALLEL_MIN_POINTS:
        # its _PARTS parts on the calling thread alone while the cores are taken
        with parallel_threads():
            return _round_distances_parallel(emb, labels, n_groups)
    return _round_distances_serial(emb, labels, n_groups)


@numba.njit(cache=True)
def _round_distances_serial(emb, labels, n_groups):
    embT = np.ascontiguousarray(emb.T)
    m = n_groups
    tri = np.empty(m * (m - 1) // 2)
    if _is_identity(labels, m):
        D = np.empty((m, m))
        _first_round_rows(embT, 0, m, D, tri)
    else:
        D, counts = _group_distance_sums(embT, labels, m, False)
        _group_round_rows(np.empty((0, m, m)), counts, 0, m, D, tri)
    return D, tri


@numba.njit(cache=True)
def _round_distances_parallel(emb, labels, n_groups):
    embT = np.ascontiguousarray(emb.T)
    m = n_groups
    tri = np.empty(m * (m - 1) // 2)
    D = np.empty((m, m))
    if _is_identity(labels, m):
        _first_round_parallel(embT, D, tri)
    else:
        extra = np.empty((_PARTS - 1, m, m))
        _group_round_parallel(embT, labels, _group_counts(labels, m), D, extra, tri)
    return D, tri


@numba.njit(cache=True)
def mean_pairwise_distance(embedding, labels, n_groups):
    """Mean Euclidean distance between the points of every pair of groups.

    Serial on purpose: each pair is visited once (symmetry), and the work per
    call is too small for threads to pay off next to BLAS threads.
    """
    sums, counts = _group_distance_sums(np.ascontiguousarray(embedding.T), labels, n_groups, True)
    for a in range(n_groups):
        for b in range(a + 1, n_groups):
            sums[b, a] = sums[a, b]
    for a in range(n_groups):
        for b in range(n_groups):
            sums[a, b] /= counts[a] * counts[b]
    return sums


@numba.njit(cache=True)
def split_window(x, lo, hi):
    """The number of entries of x below ``lo``, and the entries in ``[lo, hi]`` (in order).

    One pass of a sample-based selection: if the wanted ranks fall among the
    entries in the window, the window alone decides them. NaN is neither.
    Branch-free: about half the entries are below, at random.
    """
    n = x.shape[0]
    inside = np.empty(n + 1)
    below = 0
    count = 0
    for i in range(n):
        v = x[i]
        below += v < lo
        inside[count] = v
        count += (v >= lo) & (v <= hi)
    return below, inside[:count]


# Tile edge of the in-place symmetric update below: a column of a tile is _TILE lines, which
# with a row stride of 4 KiB (512 points) all fall in one L1 set; 8 of them still fit.
_TILE = 8


@numba.njit(cache=True, error_model="numpy")
def divide_by_outer(A, r):
    """In place ``A[i, j] /= r[i] * r[j]`` (exactly ``A / np.outer(r, r)``), without the
    outer product. NumPy's error model (no zero-division check) lets the loop vectorize."""
    n, m = A.shape
    for i in range(n):
        ri = r[i]
        for j in range(m):
            A[i, j] = A[i, j] / (ri * r[j])


@numba.njit(cache=True)
def deflate_symmetrize(S, v):
    """In place ``S <- 0.5 * (E + E.T)`` with ``E = S - np.outer(v, v)``, S square.

    Entry by entry the same operations as that NumPy expression, so the same bits; the
    result is exactly symmetric. Mirrored tiles are updated together.
    """
    n = S.shape[0]
    for a0 in range(0, n, _TILE):
        a1 = min(a0 + _TILE, n)
        for b0 in range(a0, n, _TILE):
            b1 = min(b0 + _TILE, n)
            for a in range(a0, a1):
                va = v[a]
                for b in range(max(b0, a), b1):
                    vb = v[b]
                    upper = S[a, b] - va * vb
                    lower = S[b, a] - vb * va
                    value = 0.5 * (upper + lower)
                    S[a, b] = value
                    S[b, a] = value
