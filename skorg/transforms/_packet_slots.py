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
    entry ``(j, p)``."""

    lev: np.ndarray
    pair_a: np.ndarray
    pair_b: np.ndarray
    w: np.ndarray
    slot_of: np.ndarray


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
    if not parts:
        zi = np.zeros(0, dtype=np.intp)
        return _SlotPlan(zi, zi, zi, np.zeros((0, 4)), slot_of)
    end, lev, a, b, w = (np.concatenate([p[k] for p in parts]) for k in range(5))
    order = np.lexsort((-lev, end))  # stable: a region's pairs keep their order
    return _SlotPlan(
        lev=np.ascontiguousarray(lev[order]),
        pair_a=np.ascontiguousarray(a[order]),
        pair_b=np.ascontiguousarray(b[order]),
        w=np.ascontiguousarray(w[order]),
        slot_of=slot_of,
    )
