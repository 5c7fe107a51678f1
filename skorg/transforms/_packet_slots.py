"""The in-place schedule of the Haar-Walsh packet dictionary: every level in the memory of
the level below it.

Between levels ``j + 1`` and ``j`` every entry of level ``j + 1`` feeds either one butterfly
pair (two entries ``i, k`` of equal tag in the two children of a region give the two entries
``o, o + 1`` of level ``j``) or one copy (a tag present in one child only, a carried
singleton). A pair reads two rows and writes two rows, so it can write them in place: the
entry ``o`` goes where ``i`` was and ``o + 1`` where ``k`` was, and a copy costs nothing.
Each level of the dictionary then lives in one buffer of ``n`` rows, its entries permuted:
entry ``(j, p)`` lies in *slot* ``slot_of[j, p]`` (the finest level in the packet order,
``slot_of[L - 1, p] = p``). The work per level is the pairs only: on a tree whose deep
branches are few (a linkage tree), the deep levels cost as little as they change.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__: list[str] = []


@dataclass(frozen=True, eq=False)
class _SlotPlan:
    """The pairs in the order they run: pair ``q`` makes two entries of level ``lev[q]``
    from two of level ``lev[q] + 1``; it reads slots ``pair_a[q], pair_b[q]`` (values
    ``u, v``) and writes ``w[q, 0] u + w[q, 1] v`` to ``pair_a[q]`` and
    ``w[q, 2] u + w[q, 3] v`` to ``pair_b[q]`` (the way back is the transposed butterfly:
    the pair is orthogonal). The order is depth first: the pairs of a region of level ``j``
    come after those of every region inside it, and before those of the region of level
    ``j - 1`` holding it (sorted by the region's end, then by decreasing level), which any
    order that respects these dependencies may replace. ``slot_of[j, p]``: the slot of
    entry ``(j, p)``.

    The fused schedule of the l1 search runs two levels at once where it can: a *quad* is
    two pairs of level ``j`` on slots ``(a, b)`` and ``(c, d)`` followed by the two pairs of
    level ``j - 1`` on ``(a, c)`` and ``(b, d)`` (on a dyadic tree every pair is in one),
    which reads and writes its four rows once for both levels. Op ``k`` of the schedule is
    quad ``op_ref[k]`` when ``op_quad[k]``, else pair ``op_ref[k]``; quad ``r`` has lower
    level ``quad_lev[r]``, slots ``quad_slots[r] = (a, b, c, d)`` and weights
    ``quad_w[r]``: four for ``(a, b)``, four for ``(c, d)``, four for ``(a, c)``, four for
    ``(b, d)``, each as ``w`` is for a pair; ``quad_pairs[r]``: the four pairs it runs,
    ``(a, b)``, ``(c, d)``, ``(a, c)``, ``(b, d)``.
    """

    lev: np.ndarray
    pair_a: np.ndarray
    pair_b: np.ndarray
    w: np.ndarray
    slot_of: np.ndarray
    op_quad: np.ndarray
    op_ref: np.ndarray
    quad_lev: np.ndarray
    quad_slots: np.ndarray
    quad_w: np.ndarray
    quad_pairs: np.ndarray


def build_slots(n, n_levels, ptr, active, sa, sb, wa, wb, region_of, region_end):
    """The in-place schedule from the butterflies of a plan (:mod:`._packet_plan`)."""
    slot_of = np.empty((n_levels, n), dtype=np.intp)
    slot_of[n_levels - 1] = np.arange(n)
    parts = []
    for j in range(n_levels - 2, -1, -1):
        below = slot_of[j + 1]
        here = below.copy()  # a carried entry keeps its slot
        lo, hi = ptr[j], ptr[j + 1]
        act, ja, jb, xa, xb = active[lo:hi], sa[lo:hi], sb[lo:hi], wa[lo:hi], wb[lo:hi]
        paired = xb != 0.0
        copied = ~paired
        here[act[copied]] = below[ja[copied]]
        # the paired outputs come two by two (o, o + 1) from the same two sources
        first = np.flatnonzero(paired)[::2]
        second = first + 1
        if not (
            np.array_equal(act[second], act[first] + 1)
            and np.array_equal(ja[first], ja[second])
            and np.array_equal(jb[first], jb[second])
        ):
            raise AssertionError("internal error: the packet butterflies are not in pairs")
        a, b = below[ja[first]], below[jb[first]]
        here[act[first]] = a
        here[act[second]] = b
        slot_of[j] = here
        end = region_end[j][region_of[j][act[first]]]
        w = np.column_stack([xa[first], xb[first], xa[second], xb[second]])
        parts.append((end, np.full(a.shape[0], j, dtype=np.intp), a, b, w))
    zi = np.zeros(0, dtype=np.intp)
    if not parts:
        return _SlotPlan(
            zi, zi, zi, np.zeros((0, 4)), slot_of, np.zeros(0, bool), zi, zi,
            np.zeros((0, 4), np.intp), np.zeros((0, 16)), np.zeros((0, 4), np.intp),
        )  # fmt: skip
    end, lev, a, b, w = (np.concatenate([p[k] for p in parts]) for k in range(5))
    order = np.lexsort((-lev, end))  # stable: a region's pairs keep their order
    lev, a, b, w = (np.ascontiguousarray(x[order]) for x in (lev, a, b, w))
    op_quad, op_ref, quad_lev, quad_slots, quad_w, quad_pairs = _fuse(n, n_levels, lev, a, b, w)
    return _SlotPlan(
        lev=lev,
        pair_a=a,
        pair_b=b,
        w=w,
        slot_of=slot_of,
        op_quad=op_quad,
        op_ref=op_ref,
        quad_lev=quad_lev,
        quad_slots=quad_slots,
        quad_w=quad_w,
        quad_pairs=quad_pairs,
    )


def _oriented(w, first_is):
    """The weights of pairs as if their first slot were ``slot`` (``first_is``: whether it
    is): ``x u + y v`` and ``y v + x u`` round alike, so swapping the slots only permutes
    the four weights."""
    return np.where(first_is[:, None], w, w[:, [3, 2, 1, 0]])


def _fuse(n, n_levels, lev, pa, pb, w):
    """Quads over the level couples (L - 2, L - 3), (L - 4, L - 5), ...; each op placed at
    its first pair's place in the depth-first order (the pairs it moves later touch no slot
    that the ops in between touch)."""
    fused = np.zeros(lev.shape[0], dtype=bool)
    place, quads = [], []
    for j in range(n_levels - 2, 0, -2):
        P = np.flatnonzero(lev == j)
        Q = np.flatnonzero(lev == j - 1)
        if not P.shape[0] or not Q.shape[0]:
            continue
        pair_at = np.full(n, -1, dtype=np.intp)
        pair_at[pa[P]] = P
        pair_at[pb[P]] = P
        upper_at = np.full(n, -1, dtype=np.intp)
        upper_at[pa[Q]] = Q
        upper_at[pb[Q]] = Q
        x, y = pa[Q], pb[Q]
        px, py = pair_at[x], pair_at[y]
        ok = (px >= 0) & (py >= 0) & (px != py)
        px, py = np.where(ok, px, 0), np.where(ok, py, 0)
        # the partners of x and y (any slot where the pairs do not exist)
        ox = np.where(ok, pa[px] + pb[px] - x, 0)
        oy = np.where(ok, pa[py] + pb[py] - y, 0)
        q2 = upper_at[ox]
        ok &= (q2 >= 0) & (q2 == upper_at[oy]) & (Q < q2)
        q1, q2 = Q[ok], q2[ok]
        A, C, B, D = x[ok], y[ok], ox[ok], oy[ok]
        p1, p2 = px[ok], py[ok]
        qw = np.concatenate(
            [
                _oriented(w[p1], pa[p1] == A),
                _oriented(w[p2], pa[p2] == C),
                w[q1],
                _oriented(w[q2], pa[q2] == B),
            ],
            axis=1,
        )
        fused[np.concatenate([p1, p2, q1, q2])] = True
        quads.append(
            (
                np.full(q1.shape[0], j, dtype=np.intp),
                np.column_stack([A, B, C, D]),
                qw,
                np.column_stack([p1, p2, q1, q2]),
            )
        )
        place.append(q1)  # the first of the two upper pairs (q1 < q2)
    n_quads = sum(q[0].shape[0] for q in quads)
    singles = np.flatnonzero(~fused)
    at = np.concatenate([singles, *place]) if place else singles
    is_quad = np.r_[np.zeros(singles.shape[0], bool), np.ones(n_quads, bool)]
    ref = np.r_[singles, np.arange(n_quads)].astype(np.intp)
    order = np.argsort(at, kind="stable")
    if quads:
        quad_lev = np.concatenate([q[0] for q in quads])
        quad_slots = np.ascontiguousarray(np.concatenate([q[1] for q in quads]))
        quad_w = np.ascontiguousarray(np.concatenate([q[2] for q in quads]))
        quad_pairs = np.ascontiguousarray(np.concatenate([q[3] for q in quads]))
    else:
        quad_lev = np.zeros(0, dtype=np.intp)
        quad_slots = np.zeros((0, 4), dtype=np.intp)
        quad_w = np.zeros((0, 16))
        quad_pairs = np.zeros((0, 4), dtype=np.intp)
    return (
        np.ascontiguousarray(is_quad[order]),
        np.ascontiguousarray(ref[order]),
        quad_lev,
        quad_slots,
        quad_w,
        quad_pairs,
    )
