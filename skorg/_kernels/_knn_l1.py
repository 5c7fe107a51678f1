"""Exact cityblock nearest neighbours of a block of query rows among reference rows.

The search behind the k-NN path of the questionnaire: every query row of ``Q`` is compared
with every reference row of ``F`` in tiles (``_TILE_Q`` queries x ``_TILE_R`` references,
features in chunks of ``_CHUNK`` so that both tiles stay in cache), 4 x 4 pairs at a time
so that each loaded value serves four differences. float32 features are differenced and
summed in float32 runs of ``_CHUNK`` features, each run's sum added to a float64 total (an
error near 1e-7 relative, that of the features themselves); float64 features are summed in
float64. Every pair, wherever it falls in a tile, goes through the same 4 x 4 code (rows past
the end of a tile repeat its last row and are ignored), so a pair's distance does not depend
on how the rows are blocked: a search split into blocks of queries and of references, then
merged, gives the same lists bit for bit.

A list keeps the ``k`` smallest ``(distance, index)`` pairs in increasing order (ties go to
the smaller index), excluding the query's own index.
"""

import numba
import numpy as np
from numba import prange

from ._muladd import muladd

_TILE_Q = 32
_TILE_R = 128
_CHUNK = 512


@numba.njit(fastmath=True, inline="always")
def _tile(Q, F, i0, i1, j0, j1, f0, f1, acc, minus_one):
    """Add the L1 sums over features f0:f1 of query rows i0:i1 x reference rows j0:j1."""
    zero = Q[i0, f0] - Q[i0, f0]
    for i in range(i0, i1, 4):
        r0 = i
        r1 = min(i + 1, i1 - 1)
        r2 = min(i + 2, i1 - 1)
        r3 = min(i + 3, i1 - 1)
        a0 = Q[r0, f0:f1]
        a1 = Q[r1, f0:f1]
        a2 = Q[r2, f0:f1]
        a3 = Q[r3, f0:f1]
        for j in range(j0, j1, 4):
            c1 = min(j + 1, j1 - 1)
            c2 = min(j + 2, j1 - 1)
            c3 = min(j + 3, j1 - 1)
            b0 = F[j, f0:f1]
            b1 = F[c1, f0:f1]
            b2 = F[c2, f0:f1]
            b3 = F[c3, f0:f1]
            s00 = s01 = s02 = s03 = zero
            s10 = s11 = s12 = s13 = zero
            s20 = s21 = s22 = s23 = zero
            s30 = s31 = s32 = s33 = zero
            for f in range(a0.shape[0]):
                x0 = a0[f]
                x1 = a1[f]
                x2 = a2[f]
                x3 = a3[f]
                y0 = b0[f]
                y1 = b1[f]
                y2 = b2[f]
                y3 = b3[f]
                s00 += abs(muladd(y0, minus_one, x0))
                s01 += abs(muladd(y1, minus_one, x0))
                s02 += abs(muladd(y2, minus_one, x0))
                s03 += abs(muladd(y3, minus_one, x0))
                s10 += abs(muladd(y0, minus_one, x1))
                s11 += abs(muladd(y1, minus_one, x1))
                s12 += abs(muladd(y2, minus_one, x1))
                s13 += abs(muladd(y3, minus_one, x1))
                s20 += abs(muladd(y0, minus_one, x2))
                s21 += abs(muladd(y1, minus_one, x2))
                s22 += abs(muladd(y2, minus_one, x2))
                s23 += abs(muladd(y3, minus_one, x2))
                s30 += abs(muladd(y0, minus_one, x3))
                s31 += abs(muladd(y1, minus_one, x3))
                s32 += abs(muladd(y2, minus_one, x3))
                s33 += abs(muladd(y3, minus_one, x3))
            r = i - i0
            c = j - j0
            acc[r, c] += s00
            acc[r, c + 1] += s01
            acc[r, c + 2] += s02
            acc[r, c + 3] += s03
            acc[r + 1, c] += s10
            acc[r + 1, c + 1] += s11
            acc[r + 1, c + 2] += s12
            acc[r + 1, c + 3] += s13
            acc[r + 2, c] += s20
            acc[r + 2, c + 1] += s21
            acc[r + 2, c + 2] += s22
            acc[r + 2, c + 3] += s23
            acc[r + 3, c] += s30
            acc[r + 3, c + 1] += s31
            acc[r + 3, c + 2] += s32
            acc[r + 3, c + 3] += s33


@numba.njit(inline="always")
def _insert(dist, idx, row, d, j):
    """Insert (d, j) into the sorted list ``row`` of (dist, idx) if it is among the k smallest."""
    k = dist.shape[1]
    if d > dist[row, k - 1] or (d == dist[row, k - 1] and j >= idx[row, k - 1]):
        return
    p = k - 1
    while p > 0 and (d < dist[row, p - 1] or (d == dist[row, p - 1] and j < idx[row, p - 1])):
        dist[row, p] = dist[row, p - 1]
        idx[row, p] = idx[row, p - 1]
        p -= 1
    dist[row, p] = d
    idx[row, p] = j


@numba.njit(fastmath=True, cache=True)
def _query_tile(Q, F, q_ids, r_ids, t0, t1, minus_one, dist, idx):
    m, n_feat = F.shape
    acc = np.empty((_TILE_Q + 3, _TILE_R + 3), dtype=np.float64)
    for j0 in range(0, m, _TILE_R):
        j1 = min(j0 + _TILE_R, m)
        acc[:] = 0.0
        for f0 in range(0, n_feat, _CHUNK):
            _tile(Q, F, t0, t1, j0, j1, f0, min(f0 + _CHUNK, n_feat), acc, minus_one)
        for i in range(t0, t1):
            qi = q_ids[i]
            for j in range(j0, j1):
                rj = r_ids[j]
                if rj != qi:
                    _insert(dist, idx, i, acc[i - t0, j - j0], rj)


@numba.njit(parallel=True, cache=True)
def knn_l1_cross(Q, F, q_ids, r_ids, minus_one, dist, idx):
    """Merge the nearest rows of F (ids ``r_ids``) into the sorted lists ``dist``/``idx`` of
    the rows of Q (ids ``q_ids``; a reference with the query's id is skipped).

    ``dist`` (float64) and ``idx`` (int64) have shape (n_queries, k) and hold the current
    lists (``+inf`` and -1 where empty); they are updated in place. ``minus_one`` must be
    -1 (a run-time value, so that the differences stay on the multiply-add units).
    """
    nq = Q.shape[0]
    n_tiles = (nq + _TILE_Q - 1) // _TILE_Q
    for t in prange(n_tiles):
        t0 = t * _TILE_Q
        _query_tile(Q, F, q_ids, r_ids, t0, min(t0 + _TILE_Q, nq), minus_one, dist, idx)


@numba.njit(parallel=True, cache=True)
def merge_lists(dist, idx, dist_b, idx_b):
    """Merge the sorted lists (dist_b, idx_b) into (dist, idx) in place (duplicates once)."""
    n, kb = dist_b.shape
    for i in prange(n):
        for c in range(kb):
            j = idx_b[i, c]
            if j < 0:
                continue
            seen = False
            for p in range(dist.shape[1]):
                if idx[i, p] == j:
                    seen = True
                    break
            if not seen:
                _insert(dist, idx, i, dist_b[i, c], j)


@numba.njit(parallel=True, fastmath=True, cache=True)
def candidate_l1(F, rows, cand, minus_one, out):
    """L1 distance between row ``rows[i]`` and each row ``cand[i, c]`` (-1: +inf), computed
    in the same runs as :func:`knn_l1_cross` (float32 runs of ``_CHUNK`` features)."""
    n_feat = F.shape[1]
    for i in prange(cand.shape[0]):
        a = F[rows[i]]
        for c in range(cand.shape[1]):
            j = cand[i, c]
            if j < 0:
                out[i, c] = np.inf
                continue
            b = F[j]
            total = 0.0
            for f0 in range(0, n_feat, _CHUNK):
                f1 = min(f0 + _CHUNK, n_feat)
                s = a[f0] - a[f0]
                for f in range(f0, f1):
                    s += abs(muladd(b[f], minus_one, a[f]))
                total += s
            out[i, c] = total


@numba.njit(cache=True)
def _reverse_lists(idx, seed):
    """Up to k of the rows that list each row: a uniform sample (reservoir sampling driven by
    a fixed 64-bit linear congruential generator, so the sample depends on ``seed`` only)."""
    n, k = idx.shape
    rev = np.full((n, k), -1, dtype=np.int64)
    count = np.zeros(n, dtype=np.int64)
    state = np.uint64(seed) * np.uint64(6364136223846793005) + np.uint64(1442695040888963407)
    for i in range(n):
        for c in range(k):
            j = idx[i, c]
            if j < 0:
                continue
            if count[j] < k:
                rev[j, count[j]] = i
            else:
                state = state * np.uint64(6364136223846793005) + np.uint64(1442695040888963407)
                r = np.int64((state >> np.uint64(11)) % np.uint64(count[j] + 1))
                if r < k:
                    rev[j, r] = i
            count[j] += 1
    return rev


@numba.njit(fastmath=True, cache=True)
def _join_one(F, v, idx, rev, minus_one, members, G, acc, out_a, out_b, out_d, slot):
    """All pairs among the neighbours of ``v`` and the rows that list it (local join)."""
    k = idx.shape[1]
    m = 0
    for src in range(2):
        for c in range(k):
            j = idx[v, c] if src == 0 else rev[v, c]
            if j < 0:
                continue
            dup = False
            for p in range(m):
                if members[p] == j:
                    dup = True
                    break
            if not dup:
                members[m] = j
                m += 1
    n_feat = F.shape[1]
    for p in range(m):
        G[p, :] = F[members[p], :]
    acc[:, :] = 0.0
    for f0 in range(0, n_feat, _CHUNK):
        _tile(G, G, 0, max(m, 1), 0, max(m, 1), f0, min(f0 + _CHUNK, n_feat), acc, minus_one)
    q = 0
    for p in range(m):
        for r in range(p + 1, m):
            out_a[slot, q] = members[p]
            out_b[slot, q] = members[r]
            out_d[slot, q] = acc[p, r]
            q += 1
    return q


@numba.njit(parallel=True, cache=True)
def _join_chunk(F, v0, v1, idx, rev, minus_one, out_a, out_b, out_d, out_n, n_threads):
    k = idx.shape[1]
    n_items = v1 - v0
    for part in prange(n_threads):
        per = n_items // n_threads
        extra = n_items % n_threads
        lo = part * per + min(part, extra)
        hi = lo + per + (1 if part < extra else 0)
        members = np.empty(2 * k, dtype=np.int64)
        G = np.empty((2 * k + 3, F.shape[1]), dtype=F.dtype)
        acc = np.empty((2 * k + 3, 2 * k + 3), dtype=np.float64)
        for v in range(v0 + lo, v0 + hi):
            out_n[v - v0] = _join_one(
                F, v, idx, rev, minus_one, members, G, acc, out_a, out_b, out_d, v - v0
            )


@numba.njit(cache=True)
def _propose(dist, idx, a, b, d):
    """Insert b into a's list when it is closer than a's k-th and not listed yet."""
    k = idx.shape[1]
    if d > dist[a, k - 1] or (d == dist[a, k - 1] and b >= idx[a, k - 1]):
        return 0
    for p in range(k):
        if idx[a, p] == b:
            return 0
    _insert(dist, idx, a, d, b)
    return 1


def descent_round(F, dist, idx, minus_one, seed=0, chunk=4096):
    """One round of nearest-neighbour descent; returns the number of list entries changed.

    The pairs of every local join are computed in parallel, then applied in row order (so
    the result does not depend on the number of threads)."""
    n, k = idx.shape
    rev = _reverse_lists(idx, seed)
    n_pairs = (2 * k) * (2 * k - 1) // 2
    changed = 0
    n_threads = numba.get_num_threads()
    snapshot = idx.copy()  # the joins of a round read the lists it started from
    for v0 in range(0, n, chunk):
        v1 = min(v0 + chunk, n)
        out_a = np.empty((v1 - v0, n_pairs), dtype=np.int64)
        out_b = np.empty((v1 - v0, n_pairs), dtype=np.int64)
        out_d = np.empty((v1 - v0, n_pairs), dtype=np.float64)
        out_n = np.zeros(v1 - v0, dtype=np.int64)
        _join_chunk(F, v0, v1, snapshot, rev, minus_one, out_a, out_b, out_d, out_n, n_threads)
        changed += _apply(dist, idx, out_a, out_b, out_d, out_n)
    return changed


@numba.njit(cache=True)
def _apply(dist, idx, out_a, out_b, out_d, out_n):
    changed = 0
    for s in range(out_n.shape[0]):
        for q in range(out_n[s]):
            a = out_a[s, q]
            b = out_b[s, q]
            d = out_d[s, q]
            changed += _propose(dist, idx, a, b, d)
            changed += _propose(dist, idx, b, a, d)
    return changed


@numba.njit(parallel=True, cache=True)
def cross_l1_tiled(Q, F, minus_one, out):
    """``out[i, j] = sum_f |Q[i, f] - F[j, f]|`` (float64 out), in the tiles and runs of
    :func:`knn_l1_cross` (the same distance for every pair, whatever the blocking)."""
    nq = Q.shape[0]
    m, n_feat = F.shape
    n_tiles = (nq + _TILE_Q - 1) // _TILE_Q
    for t in prange(n_tiles):
        t0 = t * _TILE_Q
        t1 = min(t0 + _TILE_Q, nq)
        acc = np.empty((_TILE_Q + 3, _TILE_R + 3), dtype=np.float64)
        for j0 in range(0, m, _TILE_R):
            j1 = min(j0 + _TILE_R, m)
            acc[:] = 0.0
            for f0 in range(0, n_feat, _CHUNK):
                _tile(Q, F, t0, t1, j0, j1, f0, min(f0 + _CHUNK, n_feat), acc, minus_one)
            for i in range(t0, t1):
                for j in range(j0, j1):
                    out[i, j] = acc[i - t0, j - j0]
