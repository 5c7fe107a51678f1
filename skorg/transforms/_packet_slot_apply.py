"""The analysis, synthesis and materialized dictionary of the Haar-Walsh packets by the
in-place schedule (:mod:`._packet_slots`): a block of columns at a time, every level in
the memory of the one below, each wanted entry written out when its slot holds it.

Entry ``(j, p)`` sits in slot ``s = slot_of[j, p]`` from the last pair of level ``j`` or
below it (finer) that writes ``s`` up to the first pair of a coarser level that does; it is
captured after that last pair (or at load when no pair writes ``s`` that fine). The pairs
that no capture needs (read backwards: a pair is needed when a capture or a needed pair
after it reads one of its slots) are dropped, so the analysis in the tree Haar basis, say,
runs only the scaling pairs and their Haar partners. Same butterflies, same values as the
level-by-level path (:func:`._packet_core._analysis`), bit for bit
(tests/transforms/test_packet_slot_apply.py).
"""

from __future__ import annotations

import threading
import weakref

import numba
import numpy as np

from .._kernels import _packet_slots_apply as _kernels
from .._kernels._packets import SERIAL_SIZE

__all__: list[str] = []


def _capture_ops(sl, levels, slots):
    """For every entry (level ``levels[c]``, slot ``slots[c]``): the index of the last pair
    of level ``levels[c]`` or finer that writes its slot, -1 when none does."""
    n_levels = sl.slot_of.shape[0]
    n_ops = sl.lev.shape[0]
    if not n_ops:
        return np.full(levels.shape[0], -1, dtype=np.intp)
    t_slot = np.concatenate([sl.pair_a, sl.pair_b])
    t_op = np.tile(np.arange(n_ops), 2)
    # along a slot the pairs run from fine to coarse: the key grows with the op
    key = t_slot * (n_levels + 1) + (n_levels - np.concatenate([sl.lev, sl.lev]))
    srt = np.argsort(key, kind="stable")
    key, t_slot, t_op = key[srt], t_slot[srt], t_op[srt]
    at = np.searchsorted(key, slots * (n_levels + 1) + (n_levels - levels), side="right") - 1
    hit = at >= 0
    hit[hit] = t_slot[at[hit]] == slots[hit]
    return np.where(hit, t_op[np.maximum(at, 0)], -1)


def _grouped(n_groups, group, *arrays):
    """The captures sorted by group, and the group pointers."""
    srt = np.argsort(group, kind="stable")
    ptr = np.zeros(n_groups + 1, dtype=np.intp)
    np.cumsum(np.bincount(group, minlength=n_groups), out=ptr[1:])
    return ptr, *(np.ascontiguousarray(a[srt], dtype=np.intp) for a in arrays)


def _ops(sl, keep, has_cap, fused):
    """The op sequence ``(op_quad, op_ref)`` of the kept pairs, and for every pair the op
    that runs it. Fused (as the cost pass, :func:`._packet_core._schedule`): a quad of the
    schedule runs as one op when its four pairs are kept and no capture reads the two lower
    ones; otherwise its kept pairs run one by one at its place, as they do unfused."""
    n_pairs = keep.shape[0]
    if not fused:
        ref = np.flatnonzero(keep)
        op_of = np.full(n_pairs, -1, dtype=np.intp)
        op_of[ref] = np.arange(ref.shape[0])
        return np.zeros(ref.shape[0], dtype=np.bool_), ref.astype(np.intp), op_of
    qp = sl.quad_pairs
    whole = keep[qp].all(axis=1) & ~has_cap[qp[:, 0]] & ~has_cap[qp[:, 1]]
    k = np.arange(sl.op_quad.shape[0])
    is_pair = ~sl.op_quad
    pairs_k, pairs_q = k[is_pair], sl.op_ref[is_pair]
    quads_k, quads_r = k[sl.op_quad], sl.op_ref[sl.op_quad]
    whole_k = whole[quads_r]
    # items (op of the fused schedule, rank within it, is a quad, reference)
    split_r = quads_r[~whole_k]
    items_k = [pairs_k, quads_k[whole_k], np.repeat(quads_k[~whole_k], 4)]
    items_i = [
        np.zeros_like(pairs_k),
        np.zeros(int(whole_k.sum()), np.intp),
        np.tile(np.arange(4), split_r.shape[0]),
    ]
    items_q = [
        np.zeros(pairs_k.shape[0], bool),
        np.ones(int(whole_k.sum()), bool),
        np.zeros(4 * split_r.shape[0], bool),
    ]
    items_ref = [pairs_q, quads_r[whole_k], qp[split_r].ravel()]
    ik, ii, iq, iref = (np.concatenate(x) for x in (items_k, items_i, items_q, items_ref))
    live = iq | keep[np.where(iq, 0, iref)]
    ik, ii, iq, iref = ik[live], ii[live], iq[live], iref[live]
    srt = np.lexsort((ii, ik))
    iq, iref = np.ascontiguousarray(iq[srt]), np.ascontiguousarray(iref[srt], dtype=np.intp)
    op_of = np.full(n_pairs, -1, dtype=np.intp)
    single = np.flatnonzero(~iq)
    op_of[iref[single]] = single
    for col in (2, 3):  # the captures of a whole quad: after its upper pairs
        quad_ops = np.flatnonzero(iq)
        op_of[qp[iref[quad_ops], col]] = quad_ops
    return iq, iref, op_of


def capture_schedule(plan, levels, positions, out_levels, out_positions):
    """The ops ``(pa, pb, w, op_quad, op_ref, quad_slots, quad_w)`` (for the kernels of
    :mod:`skorg._kernels._packet_slots_apply`) and the captures ``(ptr, slot, out_level,
    out_position)`` that read entry ``(levels[c], positions[c])`` into
    ``out[out_levels[c], out_positions[c]]``."""
    sl = plan.slots
    levels = np.asarray(levels, dtype=np.intp)
    slots = sl.slot_of[levels, np.asarray(positions, dtype=np.intp)]
    n_pairs = sl.lev.shape[0]
    after = _capture_ops(sl, levels, slots)
    ptr, c_slot = _grouped(n_pairs + 1, after + 1, slots)
    keep = _kernels.prune(plan.n, sl.pair_a, sl.pair_b, ptr, c_slot)
    has_cap = np.diff(ptr)[1:] > 0
    fused = 8 * sl.quad_lev.shape[0] >= n_pairs  # as the cost pass chooses
    op_quad, op_ref, op_of = _ops(sl, keep, has_cap, fused)
    op_of = np.r_[op_of, 0]  # a last entry for the pairless plans
    group = np.where(after >= 0, op_of[np.maximum(after, 0)] + 1, 0)
    cap = _grouped(op_quad.shape[0] + 1, group, slots, out_levels, out_positions)
    sched = (sl.pair_a, sl.pair_b, sl.w, op_quad, op_ref, sl.quad_slots, sl.quad_w)
    return sched, cap


# the schedules of the last few bases of every plan: a pipeline transforms batch after batch
# in one basis, and building a schedule costs about a third of the kernel at 1024 points
_SCHEDULES = weakref.WeakKeyDictionary()
_SCHEDULES_LOCK = threading.Lock()
_SCHEDULES_PER_PLAN = 4


def basis_schedule(plan, basis):
    """:func:`capture_schedule` of ``basis`` into the coefficient order (cached)."""
    key = (basis.levels.tobytes(), basis.positions.tobytes())
    with _SCHEDULES_LOCK:
        held = _SCHEDULES.setdefault(plan, {})
        found = held.pop(key, None)
        if found is not None:
            held[key] = found  # the most recent last
            return found
    k = np.arange(basis.levels.shape[0])
    found = capture_schedule(plan, basis.levels, basis.positions, np.zeros_like(k), k)
    with _SCHEDULES_LOCK:
        held = _SCHEDULES.setdefault(plan, {})
        held[key] = found
        while len(held) > _SCHEDULES_PER_PLAN:
            held.pop(next(iter(held)))
    return found


def _width(n, B):
    """Columns per block: 64 to 256, at most 2 MiB of rows (as the cost pass)."""
    width = 1 << max(0, (2**18 // max(n, 1)).bit_length() - 1)
    return int(min(max(B, 1), max(64, min(256, width))))


def _buffers(n, B, width):
    """The kernels and their block buffers: serial below SERIAL_SIZE values (or for one
    block), else a group of blocks across the threads."""
    n_blocks = -(-B // width)
    if n * B < SERIAL_SIZE or n_blocks < 2:
        group, parallel = 1, False
    else:
        group, parallel = int(min(n_blocks, 4 * numba.get_num_threads())), True
    # padded rows: see skorg._kernels._packet_slots.PAD
    return np.empty((group, n, width + 8), dtype=np.float64), parallel


def _as_rows(X, axis):
    """X with ``axis`` first as a 2-D ``(n, B)`` view, or a copy where no view exists."""
    moved = np.moveaxis(X, axis, 0)
    shape = (moved.shape[0], X.size // max(moved.shape[0], 1))
    try:
        return moved.reshape(shape, copy=False)
    except ValueError:
        return np.ascontiguousarray(moved).reshape(shape)


def _out_rows(out, axis, lead=0):
    """A ``(.., n, B)`` view of ``out`` with ``axis`` (after ``lead`` leading axes) first,
    or scratch of that shape; and the call that puts the scratch back (nothing for a
    view)."""
    moved = np.moveaxis(out, axis + lead, lead)
    n = moved.shape[lead]
    shape = (*moved.shape[:lead], n, out.size // max(n * int(np.prod(moved.shape[:lead])), 1))
    try:
        return moved.reshape(shape, copy=False), lambda: None
    except ValueError:
        rows = np.empty(shape, dtype=out.dtype)

        def finish():
            moved[...] = rows.reshape(moved.shape)

        return rows, finish


def _forward(X, plan, axis, scale, schedule, out3):
    sched, cap = schedule
    src = _as_rows(X, axis)
    n, B = src.shape
    width = _width(n, B)
    bufs, parallel = _buffers(n, B, width)
    run = _kernels.forward if parallel else _kernels.forward_serial
    run(src, plan.order, float(scale), width, bufs, sched, cap, 1.0 / scale, out3)


def slot_analysis(X, plan, basis, axis, scale=1.0):
    """The coefficients of X (checked, float) along ``axis`` in ``basis`` (checked): an
    array of X's shape and dtype, as :func:`._packet_core._apply`."""
    schedule = basis_schedule(plan, basis)
    out = np.empty(X.shape, dtype=X.dtype)
    rows, finish = _out_rows(out, axis)
    _forward(X, plan, axis, scale, schedule, rows[None])
    finish()
    return out


def slot_synthesis(C, plan, basis, axis, scale=1.0):
    """Data from coefficients C (checked, float) along ``axis`` in ``basis`` (checked)."""
    sched, cap = basis_schedule(plan, basis)
    src = _as_rows(C, axis)
    n, B = src.shape
    out = np.empty(C.shape, dtype=C.dtype)
    rows, finish = _out_rows(out, axis)
    width = _width(n, B)
    bufs, parallel = _buffers(n, B, width)
    run = _kernels.inverse if parallel else _kernels.inverse_serial
    run(src, float(scale), width, bufs, sched, cap, plan.order, 1.0 / scale, rows)
    finish()
    return out


def slot_dictionary(X, plan, axis, scale=1.0):
    """Every level of the dictionary of X (checked, float) along ``axis``: an array of shape
    ``(n_levels,) + X.shape`` and X's dtype, as :func:`wavelet_packet_dictionary`."""
    L, n = plan.n_levels, plan.n
    levels = np.repeat(np.arange(L), n)
    positions = np.tile(np.arange(n), L)
    schedule = capture_schedule(plan, levels, positions, levels, positions)
    out = np.empty((L, *X.shape), dtype=X.dtype)
    rows, finish = _out_rows(out, axis, lead=1)
    _forward(X, plan, axis, scale, schedule, rows)
    finish()
    return out
