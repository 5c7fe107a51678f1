"""The cores of the Haar-Walsh packet transforms: the layout of the data, the level steps,
the cost table and the search (arrays checked by the callers)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numba
import numpy as np

from .._kernels import _packet_slots as _slot_kernels
from .._kernels import _packets as _kernels
from .._validation import check_memory, pow2_scale
from ._packet_basis import (
    DIRECTIONS,
    WaveletPacketBasis,
    mask_to_basis,
    parse_cost,
    search_regions,
    search_tags,
)
from ._packet_slot_apply import slot_analysis, slot_synthesis

__all__: list[str] = []

_KERNEL_NAMES = ("level_step", "row_cost", "gather_rows", "add_rows")
_PARALLEL = SimpleNamespace(**{k: getattr(_kernels, k) for k in _KERNEL_NAMES})
_SERIAL = SimpleNamespace(**{k: getattr(_kernels, k + "_serial") for k in _KERNEL_NAMES})


def _kernels_for(rows):
    """The serial kernels for small arrays, the parallel ones from SERIAL_SIZE values."""
    return _SERIAL if rows.size < _kernels.SERIAL_SIZE else _PARALLEL


def _rows(X, plan, axis, scale=1.0, order=True):
    """X as float64 rows ``(n, B)`` along ``axis`` (in the packet order unless not
    ``order``), times ``scale``: a new array."""
    moved = np.moveaxis(X, axis, 0)
    flat = moved.reshape(moved.shape[0], -1)
    rows = np.array(flat[plan.order] if order else flat, dtype=np.float64)
    if scale != 1.0:
        rows *= scale
    return rows


def _unrows(rows, shape, axis, dtype, scale=1.0):
    """Rows ``(n, B)`` divided by ``scale`` back to an array of ``shape``, rows along
    ``axis``."""
    if scale != 1.0:
        rows = rows / scale
    moved_shape = (shape[axis], *shape[:axis], *shape[axis + 1 :])
    out = rows.reshape(moved_shape).astype(dtype, copy=False)
    return np.ascontiguousarray(np.moveaxis(out, 0, axis))


def _check_buffers(plan, B, what, extra=0):
    # the rows in the packet order, the scratch block, the output and its transposed copy
    check_memory(4 * 8 * plan.n * B + extra, what)


def _by_level(plan, basis):
    """For every level: the positions the basis takes there and their output indices."""
    lv, pos = basis.levels, basis.positions
    srt = np.argsort(lv, kind="stable")
    ptr = np.searchsorted(lv[srt], np.arange(plan.n_levels + 1))
    return [(pos[srt[ptr[j] : ptr[j + 1]]], srt[ptr[j] : ptr[j + 1]]) for j in range(plan.n_levels)]


def _step(K, cur, plan, j, tmp, inverse=False):
    """Level ``j`` from level ``j + 1`` in place (or back, ``inverse``)."""
    lo, hi = plan.ptr[j], plan.ptr[j + 1]
    if inverse:
        w = (plan.ia[lo:hi], plan.ib[lo:hi], plan.va[lo:hi], plan.vb[lo:hi])
    else:
        w = (plan.sa[lo:hi], plan.sb[lo:hi], plan.wa[lo:hi], plan.wb[lo:hi])
    K.level_step(cur, plan.active[lo:hi], *w, tmp)


def _tmp(plan, B):
    """The scratch rows of :func:`_step`: as many as the largest level changes."""
    widest = int(np.diff(plan.ptr).max()) if plan.ptr.shape[0] > 1 else 0
    return np.empty((widest, B), dtype=np.float64)


def _analysis(rows, plan, basis):
    """Coefficients ``(n, B)`` of packet-ordered rows in ``basis`` (checked); ``rows`` is
    overwritten."""
    n, B = rows.shape
    K = _kernels_for(rows)
    out = np.empty((n, B), dtype=np.float64)
    parts = _by_level(plan, basis)
    coarsest = int(basis.levels.min())
    tmp = _tmp(plan, B)
    last = plan.n_levels - 1
    for j in range(last, coarsest - 1, -1):
        if j < last:
            _step(K, rows, plan, j, tmp)
        pos, at = parts[j]
        if pos.shape[0]:
            K.gather_rows(rows, pos, out, at)
    return out


def _synthesis(coefs, plan, basis):
    """Packet-ordered rows ``(n, B)`` from their coefficients in ``basis`` (checked)."""
    n, B = coefs.shape
    K = _kernels_for(coefs)
    parts = _by_level(plan, basis)
    coarsest = int(basis.levels.min())
    cur = np.zeros((n, B), dtype=np.float64)
    tmp = _tmp(plan, B)
    for j in range(coarsest, plan.n_levels):
        if j > coarsest:
            _step(K, cur, plan, j - 1, tmp, inverse=True)
        pos, at = parts[j]
        if pos.shape[0]:
            K.add_rows(coefs, at, cur, pos)
    return cur


def _cost_table(rows, plan, cost):
    """``(table, scale, energy)``: the cost of every dictionary entry summed over the rows,
    computed on the rows scaled by a power of two (``scale``) so that the choice of a basis
    does not depend on the units; ``energy`` the scaled data's sum of squares (for the
    entropy; 0 for the other costs). A callable cost overwrites ``rows``."""
    kind, power, func = parse_cost(cost)
    n = rows.shape[0]
    K = _kernels_for(rows)
    scale = pow2_scale(rows, always=True)
    energy = 0.0
    if kind == _kernels.COST_ENTROPY:
        # the energy of the scaled rows, in one pass without temporaries
        squares = np.empty(n, dtype=np.float64)
        K.row_cost(rows, _kernels.COST_LP, 2.0, scale, squares)
        energy = float(squares.sum())
    if func is None:
        return _slot_costs(rows, plan, kind, power, scale), scale, energy
    table = np.empty((plan.n_levels, n), dtype=np.float64)
    cur = rows
    tmp = _tmp(plan, rows.shape[1])
    last = plan.n_levels - 1
    table[last] = _callable_cost(func, cur)
    for j in range(last - 1, -1, -1):
        lo, hi = plan.ptr[j], plan.ptr[j + 1]
        active = plan.active[lo:hi]
        table[j] = table[j + 1]  # a carried singleton keeps its value and its cost
        _step(K, cur, plan, j, tmp)
        table[j, active] = _callable_cost(func, cur[active])
    return table, scale, energy


def _schedule(sl, fused=None):
    """The arrays of a slot plan's schedule for the kernels (``fused=False``: the pairs one
    by one; None: fused where at least half the pairs are in quads, as on balanced trees,
    20-25% faster there; on a linkage tree with a fifth in quads the pairs alone are 10-20%
    faster, the quads' gain lost to the branch per op)."""
    if fused is None:
        fused = 8 * sl.quad_lev.shape[0] >= sl.lev.shape[0]
    quad = sl.op_quad if fused else sl.op_quad[:0]
    return (
        sl.lev,
        sl.pair_a,
        sl.pair_b,
        sl.w,
        quad,
        sl.op_ref,
        sl.quad_lev,
        sl.quad_slots,
        sl.quad_w,
    )


def _block_width(n, B):
    """Columns per block of the cost pass: a block of at most 2 MiB (L2) where that leaves
    64 to 256 columns (256 on 1024 points: 25% faster than 64, the fixed cost of a pair
    spread wider; 32 columns ran 4-5 times slower in the median than their best, under
    load), and never more than the data have (a single vector is not padded)."""
    width = 1 << max(0, (2**18 // max(n, 1)).bit_length() - 1)
    return int(min(B, max(64, min(256, width))))


def _slot_costs(rows, plan, kind, power, scale):
    """The cost table of a built-in cost: every level in place, a block of columns at a
    time (:mod:`skorg._kernels._packet_slots`), mapped from the slots to the positions."""
    sl = plan.slots
    n, B = rows.shape
    width = _block_width(n, B)
    table = np.zeros((plan.n_levels, n), dtype=np.float64)
    # a block's buffer and its partial costs; the parallel kernel holds a group of them,
    # at most as many as fit in twice the table and 64 MiB (the sums do not depend on it)
    per_block = 8 * n * (width + _slot_kernels.PAD + plan.n_levels)
    check_memory(table.nbytes + per_block, "The cost table of the wavelet packet dictionary")
    n_blocks = -(-B // width)
    if rows.size < _kernels.SERIAL_SIZE or n_blocks < 2:
        run, group = _slot_kernels.dictionary_costs_serial, 1
    else:
        fits = max(1, (2 * table.nbytes + 2**26) // per_block)
        run = _slot_kernels.dictionary_costs
        group = int(min(n_blocks, 4 * numba.get_num_threads(), fits))
    bufs = np.empty((group, n, width + _slot_kernels.PAD), dtype=np.float64)
    part = np.empty((group, plan.n_levels, n), dtype=np.float64)
    run(rows, scale, _schedule(sl), kind, power, width, bufs, part, table)
    return np.take_along_axis(table, sl.slot_of, axis=1)


def _callable_costs(func, values):
    """A callable cost's value of every coefficient of ``values`` (checked: one finite cost
    per coefficient; the callable gets a copy)."""
    costs = np.asarray(func(values.copy()), dtype=np.float64)
    if costs.shape != values.shape:
        raise ValueError(
            f"A callable cost must return one cost per coefficient (an array of the shape of "
            f"its argument, {values.shape}), got shape {costs.shape}."
        )
    if not np.all(np.isfinite(costs)):
        raise ValueError("A callable cost returned NaN or infinity.")
    return costs


def _callable_cost(func, level):
    return _callable_costs(func, level).sum(axis=1)


def _reported_cost(cost, value, scale, energy):
    """The cost reported for a search: the l^p norm ``(sum |c|^p)^(1/p)`` in data units
    (a monotone function of the searched sum, finite where the sum of the data's powers
    would overflow), the normalized entropy, or a callable's sum as it is."""
    kind, power, func = parse_cost(cost)
    if func is not None:
        return value
    if kind == _kernels.COST_ENTROPY:
        if energy == 0.0:
            return 0.0
        return value / energy + math.log(energy)
    norm = value if kind == _kernels.COST_L1 else value ** (1.0 / power)
    with np.errstate(over="ignore"):  # infinity only where the norm itself is beyond floats
        return float(np.float64(norm) / scale)


def _search(rows, plan, cost, direction, incumbent=None):
    """The best basis of packet-ordered rows; ``incumbent`` (a checked basis) is kept,
    with its cost on these rows, unless the search finds a strictly cheaper one."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}.")
    table, scale, energy = _cost_table(rows, plan, cost)
    found = []
    if direction in ("both", "coarse-to-fine"):
        found.append((*search_regions(plan, table), "coarse-to-fine"))
    if direction in ("both", "fine-to-coarse"):
        found.append((*search_tags(plan, table), "fine-to-coarse"))
    if direction == "time-frequency":
        from ._packet_tiling import search_tiling

        found.append((*search_tiling(plan, table), "time-frequency"))
    # the cheaper; on a tie the coarse-to-fine one (listed first)
    chosen, value, way = min(found, key=lambda f: f[1])
    if incumbent is not None:
        held = float(table[incumbent.levels, incumbent.positions].sum())
        if held <= value:
            return WaveletPacketBasis(
                incumbent.levels,
                incumbent.positions,
                name=incumbent.name,
                cost=_reported_cost(cost, held, scale, energy),
                direction=incumbent.direction,
            )
    return mask_to_basis(
        chosen,
        name="best",
        cost=_reported_cost(cost, value, scale, energy),
        direction=way,
    )


def _apply(X, plan, basis, axis, scale=1.0, inverse=False, in_place=True):
    """The transform (or its inverse) of a checked float array in a checked basis: the core
    of the public functions and of :class:`TreeWaveletPacketTransform`. By the in-place
    schedule (:mod:`._packet_slot_apply`), or, ``in_place=False``, level by level
    (:func:`_analysis`, :func:`_synthesis`: the reference, the same values bit for bit)."""
    what = "The inverse wavelet packet transform" if inverse else "The wavelet packet transform"
    _check_buffers(plan, X.size // plan.n, what)
    if in_place:
        run = slot_synthesis if inverse else slot_analysis
        return run(X, plan, basis, axis, scale)
    if not inverse:
        coefs = _analysis(_rows(X, plan, axis, scale), plan, basis)
        return _unrows(coefs, X.shape, axis, X.dtype, scale)
    rows = _synthesis(_rows(X, plan, axis, scale, order=False), plan, basis)
    out = np.empty_like(rows)
    out[plan.order] = rows
    return _unrows(out, X.shape, axis, X.dtype, scale)


def _is_haar(plan, basis):
    """Whether ``basis`` is the tree Haar basis in haar_transform's order."""
    return np.array_equal(basis.levels, plan.haar_levels) and np.array_equal(
        basis.positions, plan.haar_positions
    )
