"""The cores of the tree Haar transforms: which kernel takes a transform, and how it runs.

:func:`_apply_along` picks, for a transform along one axis of a C-ordered array of shape
(A, n, B), the kernel of :mod:`skorg._kernels` that is fastest for that layout and tree (the
rules and the measurements behind them are beside each constant below), and runs it on the
calling thread or shares its tasks out; :func:`_plain_along` is the inline-checked path of
the common call, :func:`_along` and :func:`_multi` the paths that scale data of extreme
magnitude exactly first. The public functions of :mod:`skorg.transforms._haar` validate
their arguments and call these; so do the estimators, entropies and compression.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .._kernels import _haar as _kernels
from .._kernels import _haar_rows as _row_kernels
from .._kernels import _haar_segments as _segment_kernels
from .._kernels import _haar_short as _short_kernels
from .._kernels import _haar_slots as _slot_kernels
from .._threading import available_threads, parallel_threads
from .._validation import plain_magnitude, plain_values, safe_exponent, scaled_copy, unscale
from ..trees import PartitionTree
from ._haar_plan import _ORDERS, _get_plan

__all__: list[str] = []

_FLOAT64 = np.dtype(np.float64)
_FLOAT32 = np.dtype(np.float32)
# below this many values the kernels run on the calling thread: waking the pool costs more
# (on two threads the parallel kernels are 1.3-1.7x faster from 2^17 values and break even
# at 2^16); the depth-first kernel across rows on other trees shares out the columns of a
# few rows, which pays only from 8 times as many (2^20)
_SERIAL_SIZE = 1 << 17
_SLOT_SERIAL_FACTOR = 8
# from this many bytes the vector-at-a-time kernel stages the forward coefficients of each
# row in a cached buffer (skorg._kernels._haar_rows): rows of 1024, in one run, staged
# against direct: 1.06-1.1x slower up to 1 MB, level at 4 MB, 1.1-1.9x faster from 8 MB
_STAGE_MIN_BYTES = 1 << 22
# rows (the last axis) of up to this many values on a perfect binary tree go a block of
# rows at a time through skorg._kernels._haar_short, whose levels run over all rows of the
# block at once: 1.3-2.6x faster, on 2^14 to 2^24 values, than the transposed blocks below
# 128 values and than the vector-at-a-time lifting up to here (level with it at 512)
_SHORT_MAX_N = 256
# Vectors along a short trailing run (B < 16) that are not rows of the short-row kernel go
# one at a time (skorg._kernels._haar_rows) when there are at most this many of them (a
# 64-lane block of skorg._kernels._haar would be mostly empty) ...
_FEW_LANES = 4
# ... on perfect binary trees from this many leaves (the lifting levels of one vector are
# contiguous; on shorter vectors, e.g. a trailing run of 2 or 3, the 64-lane transposed
# blocks are up to 6x faster) ...
_DYADIC_LANE_MIN_N = 128
# ... and on other trees from this many points, four vectors at a time through the node
# sums: 1.1-1.8x faster than the transposed blocks from 24 to 200 values along rows, up to
# 3x with a trailing run of 3 or 12 (both even on 16 values)
_TREE_LANE_MIN_N = 24
# on perfect binary trees the row-segment kernel takes trailing runs of _ROW_BLOCK_ANY_B
# values or more, and of _ROW_BLOCK_MIN_B or more on trees of n leaves with
# n * B**2 >= _ROW_BLOCK_MIN_NB2; with up to _ROW_BLOCK_FEW_A vectors at each place,
# shorter runs too (see _dyadic_row_blocks)
_ROW_BLOCK_ANY_B = 16
_ROW_BLOCK_MIN_B = 4
_ROW_BLOCK_MIN_NB2 = 1024
_ROW_BLOCK_FEW_A = 16
# The lifting kernel along an axis with a long trailing run (axis 0 of a C-ordered matrix)
# takes blocks of up to _BLOCK_WIDTH columns: whole rows up to there, so that every row is
# read and written as one contiguous run. Its levels run subtree by subtree (see
# skorg._kernels._haar_segments): subtrees of the largest power of two of leaves, up to
# _MAX_CHUNK, whose two level buffers (chunk x width float64) stay within _CHUNK_BYTES
# (L2); the levels above the subtrees touch 1 / chunk of the data.
_BLOCK_WIDTH = 4096
_MAX_CHUNK = 128
_CHUNK_BYTES = 1 << 20


# Across rows on other trees, the depth-first kernel (skorg._kernels._haar_slots) takes
# over from the node-by-node one (64 columns, a row per folder or node) from _SLOT_MIN_B
# columns, or from _SLOT_MIN_FOLDERS internal folders (chains left out, see
# skorg.transforms._haar_plan). Below, the older kernel is faster: 4096 x 64 on a 4096-point
# linkage tree (5155 folders) 1.3 against 4.1 ms forward, n x 16 and n x 64 on trees of
# 20000 to 31600 folders 1.2 to 2.4 times; above, its node rows no longer pay (47000
# folders: 37 against 28 ms inverse), and from 256 columns it is 1.3 to 2.4 times slower
# (4096 x 1024: 24.8 against 10.5 ms).
# Its blocks are up to _SLOT_WIDTH columns, as wide as its slots (about depth x fan-out rows
# of that many float64) allow within _SLOT_BYTES, and split so that every thread has one.
_SLOT_MIN_B = 256
_SLOT_MIN_FOLDERS = 32768
_SLOT_WIDTH = 512
_SLOT_BYTES = 1 << 20


def _use_slots(plan, B):
    return plan.first_leaf >= 1 and (B >= _SLOT_MIN_B or plan.first_leaf > _SLOT_MIN_FOLDERS)


def _slot_width(n_slots, A, B, n_threads):
    width = min(B, _SLOT_WIDTH, max(16, _SLOT_BYTES // (8 * n_slots) // 16 * 16))
    if A < n_threads:  # the columns of each row shared out
        width = min(width, max(16, -(-B // (n_threads // A)) + 15) // 16 * 16)
    return width


def _one_lane_at_a_time(plan, n, n_lanes):
    """Whether the vector-at-a-time kernel beats the 64-lane transposed blocks: on a handful
    of vectors (a block would be mostly empty, its buffers made for 64), on other trees than
    perfect binary ones from _TREE_LANE_MIN_N values (four vectors at a time), and on
    perfect binary trees from _DYADIC_LANE_MIN_N leaves (one vector at a time, whose lifting
    levels are contiguous; rows of up to _SHORT_MAX_N values on these trees take the
    short-row kernel first)."""
    if n_lanes <= _FEW_LANES:
        return True
    if plan.dyadic:
        return n >= _DYADIC_LANE_MIN_N
    return n >= _TREE_LANE_MIN_N


def _dyadic_row_blocks(n, B, A):
    """Whether the lifting kernel on row segments (B values per row) beats the others on a
    perfect binary tree, for A vectors at each of the B places.

    Its cost per value is a fixed cost per pair of rows over B, plus one per block over
    n * B. All kernels forced on 2^16 values in one run: against the transposed blocks,
    which take 64 of the A vectors at a time, it wins from B = 16 on every n (0.3-0.9x
    their time), and from B = 4 from about n * B**2 = 1024: (64, 4), (32, 6), (16, 8),
    (8, 12) at 0.6-1.0x, against (32, 4), (16, 6), (8, 8), (4, 12) at 1.1-1.4x. On up to
    16 vectors the blocks are mostly empty, and the row segments win from B = 2 (1.5-7x),
    except on trees of _DYADIC_LANE_MIN_N leaves or more with B below 4, where one vector at
    a time is as fast or faster (1.4x on 1024 leaves, B = 2); from 32 vectors the blocks
    win on short trees again (1.7x on (32, 16, 2)).
    """
    if B >= _ROW_BLOCK_ANY_B:
        return True
    if B < 2:
        return False
    if A <= _ROW_BLOCK_FEW_A:
        return B >= _ROW_BLOCK_MIN_B or n < _DYADIC_LANE_MIN_N
    return B >= _ROW_BLOCK_MIN_B and n * B * B >= _ROW_BLOCK_MIN_NB2


def _narrow_width(B, parts):
    """A block width that splits B columns into at least ``parts`` blocks (a multiple of 8
    values, one cache line of float64, where B allows)."""
    width = -(-B // parts)
    if width > 8:
        width = width // 8 * 8
    return max(1, width)


def _block_plan(n, B):
    """``(width, chunk)`` of the column-block kernel: ``chunk == n`` runs level by level."""
    width = min(_BLOCK_WIDTH, B)
    chunk = min(_MAX_CHUNK, max(2, _CHUNK_BYTES // (8 * width)))
    chunk = 1 << (chunk.bit_length() - 1)  # a power of two
    if n < 2 * chunk or n % chunk:  # small (or not a power of two): level by level
        chunk = n
    return width, chunk


def _apply_along(X, plan, axis, inverse, out=None):
    if (
        X.ndim > 1
        and not X.flags.c_contiguous
        and X.flags.f_contiguous
        and (out is None or out.flags.f_contiguous)
    ):
        # a Fortran-ordered array is the C-ordered transpose: no copy, the same fast paths
        Y = _apply_along(X.T, plan, X.ndim - 1 - axis, inverse, None if out is None else out.T)
        return Y.T
    shape = X.shape
    n = shape[axis]
    # Python integers: no overflow, and a fraction of np.prod's call cost on small arrays
    A = math.prod(shape[:axis])
    B = math.prod(shape[axis + 1 :])
    flat = X.ravel()  # a view of C-ordered X, else a C-ordered copy
    if out is None:
        out = np.empty(shape, dtype=X.dtype)
    oflat = out.reshape(-1)
    # below _SERIAL_SIZE, and while the cores are taken (skorg._threading), on this thread
    n_threads = 1 if X.size < _SERIAL_SIZE else available_threads()
    serial = n_threads == 1
    if plan.dyadic and B == 1 and 2 <= n <= _SHORT_MAX_N:
        # many short rows on a perfect binary tree: lifted a block of rows at a time
        perm = plan.leaf_rank if inverse else plan.leaf_order  # both kernels gather by it
        args = (inverse, plan.identity, perm, plan.wplus)
        if serial:
            _short_kernels.short_rows_range(flat, oflat, n, 0, A, *args)
        else:
            n_tasks = min(A, _kernels._TASKS_PER_THREAD * n_threads)
            _run_parallel(_short_kernels.short_rows, flat, oflat, n, A, *args, n_tasks)
        return out
    row_blocks = plan.dyadic and _dyadic_row_blocks(n, B, A)
    n_lanes = A * B
    if not row_blocks and B < _kernels._MIN_CONTIGUOUS and _one_lane_at_a_time(plan, n, n_lanes):
        staged = X.nbytes >= _STAGE_MIN_BYTES
        args = (inverse, staged, plan.dyadic, plan.identity, plan.leaf_order, plan.leaf_rank,
                *plan.kernel_args()[1:])  # fmt: skip
        long_lanes = plan.dyadic and B == 1 and n > _row_kernels.CHUNKED
        if long_lanes and n_lanes < n_threads and not serial:
            # too few lanes to share out: share the subtrees of each lane instead
            n_tasks = min(n // _row_kernels.CHUNK, _kernels._TASKS_PER_THREAD * n_threads)
            for a in range(A):
                lane = slice(a * n, (a + 1) * n)
                _run_parallel(_row_kernels.dyadic_long_lane, flat[lane], oflat[lane], inverse,
                              plan.identity, plan.leaf_order, plan.wplus, plan.wminus,
                              n_tasks)  # fmt: skip
            return out
        if serial:
            _row_kernels.haar_lanes_range(flat, oflat, n, B, 0, n_lanes, *args)
        else:
            n_tasks = min(n_lanes, _kernels._TASKS_PER_THREAD * n_threads)
            _run_parallel(_row_kernels.haar_lanes, flat, oflat, n, B, n_lanes, *args, n_tasks)
        return out
    if row_blocks:
        width, chunk = _block_plan(n, B)
        per_a = (B + width - 1) // width
        if not serial and A * per_a < n_threads and chunk == n:
            # too few blocks, and no subtrees to share: narrower blocks, one per thread at
            # least (else one task would run on one thread, at the cost of a parallel call:
            # 1.13x slower than serial on 128 x 1024 along axis 0)
            width = _narrow_width(B, -(-n_threads // A))
            width, chunk = _block_plan(n, width)
            per_a = (B + width - 1) // width
        n_blocks = A * per_a
        args = (inverse, plan.leaf_order, plan.wplus, plan.wminus)
        if not serial and n_blocks < n_threads and chunk < n:
            # too few blocks to share out: share the subtrees of each block instead
            n_tasks = min(n // chunk, _kernels._TASKS_PER_THREAD * n_threads)
            for g in range(n_blocks):
                b0 = (g % per_a) * width
                s0 = (g // per_a) * n * B + b0
                _run_parallel(_segment_kernels.dyadic_block_subtrees, flat, oflat, s0, B,
                              min(width, B - b0), chunk, *args, n_tasks)  # fmt: skip
            return out
        if serial:
            _segment_kernels.dyadic_blocks_range(
                flat, oflat, n, B, width, chunk, 0, n_blocks, *args
            )
        else:
            n_tasks = min(n_blocks, _kernels._TASKS_PER_THREAD * n_threads)
            _run_parallel(_segment_kernels.dyadic_blocks, flat, oflat, n, B, width, chunk, n_blocks,
                          *args, n_tasks)  # fmt: skip
        return out
    if B >= _kernels._MIN_CONTIGUOUS and _use_slots(plan, B):
        if X.size < _SERIAL_SIZE * _SLOT_SERIAL_FACTOR:
            serial, n_threads = True, 1
        slots = plan.slot_args
        width = _slot_width(max(slots[3], slots[5]), A, B, n_threads)
        n_blocks = A * -(-B // width)
        args = (inverse, plan.leaf_order, plan.child_span, plan.first_leaf, plan.cnode,
                plan.cplus, plan.clast, plan.wplus, plan.wminus, *slots)  # fmt: skip
        if serial:
            _slot_kernels.slot_blocks_range(flat, oflat, n, B, width, 0, n_blocks, *args)
        else:
            n_tasks = min(n_blocks, _kernels._TASKS_PER_THREAD * n_threads)
            _run_parallel(_slot_kernels.slot_blocks, flat, oflat, n, B, width, n_blocks, *args,
                          n_tasks)  # fmt: skip
        return out
    if serial:
        if inverse:
            _kernels.haar_inverse_range(flat, oflat, A, n, B, 0, _kernels.n_blocks_of(A, B),
                                   *_inverse_args(plan))  # fmt: skip
        else:
            _kernels.haar_forward_range(flat, oflat, A, n, B, 0, _kernels.n_blocks_of(A, B),
                                   *_forward_args(plan))  # fmt: skip
        return out
    kernel = _kernels.haar_inverse if inverse else _kernels.haar_forward
    _run_parallel(kernel, flat, oflat, A, n, B, *plan.kernel_args(), n_threads)
    return out


def _run_parallel(kernel, *args):
    # dynamic scheduling of the kernel's tasks (see skorg._kernels._haar)
    chunk = numba.set_parallel_chunksize(1)
    try:
        kernel(*args)
    finally:
        numba.set_parallel_chunksize(chunk)


# the fused last-two-axes kernel keeps one (n1, n2) slab in L2, and its tasks are whole slabs
_MAX_SLAB = 1 << 16


def _use_last2(X, trees):
    if X.ndim < 3 or trees[-1] is None or trees[-2] is None:
        return False
    n1, n2 = X.shape[-2:]
    A = X.size // (n1 * n2)
    return (
        n2 >= _kernels._MIN_CONTIGUOUS and n1 * n2 <= _MAX_SLAB and A >= 2 * numba.get_num_threads()
    )


def _apply_last2(X, plan1, plan2, inverse):
    n1, n2 = X.shape[-2:]
    A = X.size // (n1 * n2)
    flat = np.ascontiguousarray(X).reshape(-1)
    out = np.empty(X.shape, dtype=X.dtype)
    if inverse:
        args = (*_inverse_args(plan1), *_inverse_args(plan2))
        kernel = _kernels.haar_inverse_last2
    else:
        args = (*_forward_args(plan1), *_forward_args(plan2))
        kernel = _kernels.haar_forward_last2
    chunk = numba.set_parallel_chunksize(1)
    try:
        with parallel_threads() as n_threads:
            kernel(flat, out.reshape(-1), A, n1, n2, *args, n_threads)
    finally:
        numba.set_parallel_chunksize(chunk)
    return out


def _apply_inplace(X, plan, axis, inverse):
    n = X.shape[axis]
    A = math.prod(X.shape[:axis])
    B = math.prod(X.shape[axis + 1 :])
    if inverse:
        args = _inverse_args(plan)
        kernel = _kernels.haar_inverse_inplace
    else:
        args = _forward_args(plan)
        kernel = _kernels.haar_forward_inplace
    chunk = numba.set_parallel_chunksize(1)
    try:
        with parallel_threads() as n_threads:
            kernel(X.reshape(-1), A, n, B, *args, n_threads)
    finally:
        numba.set_parallel_chunksize(chunk)


def _forward_args(p):
    return p.leaf_order, p.child_span, p.first_leaf, p.cnode, p.cplus, p.wplus, p.wminus


def _inverse_args(p):
    return p.leaf_order, p.parent, p.first_leaf, p.cnode, p.cplus, p.clast, p.wplus, p.wminus


def _unscale(C, s, Xs, inverse):
    """Coefficients of X from those of ``Xs = X * s``, in place (exact for a power of two
    ``s``); a clear error instead of an infinity when one passes the float range (the
    scaling coefficient of data near the float maximum is up to sqrt(size) times larger)."""
    if s == 1.0:
        return C
    name, what = ("C", "The inverse Haar transform") if inverse else ("X", "The Haar transform")
    return unscale(C, s, Xs, name=name, what=what, out=C)


def _along(X, plan, axis, inverse, peak=None, out=None):
    """:func:`_apply_along` on data near any magnitude (the sums cannot overflow)."""
    Xs, s = scaled_copy(X, peak=peak, limit=safe_exponent(X.dtype))
    if out is not None and not _writes_into(Xs, out):
        # the kernels would read values they have already overwritten, or could not write
        # this layout: transform aside, then copy
        np.copyto(out, _unscale(_apply_along(Xs, plan, axis, inverse), s, Xs, inverse))
        return out
    C = _unscale(_apply_along(Xs, plan, axis, inverse, out=out), s, Xs, inverse)
    return C if out is None else out  # out itself, not a view of it, as NumPy's out= gives


def _plain_along(X, tree, axis, order, inverse, out=None):
    """The transform of the common call, or None.

    The common call is a finite ndarray of float32 or float64 in native byte order, C- or
    F-contiguous, non-empty, of ordinary magnitude, on a PartitionTree that fits, along an
    int axis, in a known order, with no ``out`` or one the kernels write straight into (an
    ndarray of X's shape and dtype, writeable, apart from X, C-ordered or both Fortran-
    ordered). Its checks are done here inline: on small arrays the general path's layers of
    checks cost several times the transform. For anything else, None: the caller takes the
    general path, which raises the errors. The result is the general path's, bit for bit
    (the same kernels, and no scaling at these magnitudes).
    """
    if type(X) is not np.ndarray or type(tree) is not PartitionTree or type(axis) is not int:
        return None
    if out is not None and (
        type(out) is not np.ndarray
        or out.shape != X.shape
        or out.dtype != X.dtype
        or not out.flags.writeable
        or not _writes_into(X, out)
    ):
        return None
    dtype = X.dtype
    ndim = X.ndim
    if (
        (dtype != _FLOAT64 and dtype != _FLOAT32)
        or not -ndim <= axis < ndim
        or X.size == 0
        or not (X.flags.c_contiguous or X.flags.f_contiguous)
        or tree.n_points != X.shape[axis]
        or order not in _ORDERS
    ):
        return None
    if ndim == 1 and X.shape[0] == 2:
        values = X.tolist()
        if not plain_values(values, dtype.itemsize):
            return None
        return _two_values(values, dtype, _get_plan(tree, order), inverse, out)
    if not plain_magnitude(X):  # NaN, infinity, all zero or extreme: the general path
        return None
    C = _apply_along(X, _get_plan(tree, order), axis % ndim, inverse, out=out)
    return C if out is None else out  # out itself, not a view of it (as _along)


def _two_values(values, dtype, plan, inverse, out):
    """The transform of one vector of two values (a list of two Python floats): the lifting of
    :mod:`skorg._kernels._haar_short` on its one folder, the same operations on float64
    values, rounded to ``dtype`` once at the end as the kernel stores them, so the same bits.
    Calling the compiled kernel costs more than this whole transform."""
    w = plan.wplus.item(0)
    scale0 = 1.0 / math.sqrt(2)
    first, second = plan.leaf_order.tolist()
    if inverse:
        c = values[1]
        v = values[0] * scale0
        result = [0.0, 0.0]
        result[first] = -(w * c) + v
        result[second] = w * c + v
    else:
        b = values[second]
        s = values[first] + b
        result = [s * scale0, w * b - w * (s - b)]
    if out is None:
        return np.array(result, dtype=dtype)
    out[:] = result
    return out


def _writes_into(X, out):
    """Whether :func:`_apply_along` can write X's transform straight into ``out``."""
    if np.may_share_memory(X, out):
        return False
    # C-ordered output from any input; Fortran-ordered output from Fortran-ordered input
    # (transformed as its transpose)
    return out.flags.c_contiguous or (X.flags.f_contiguous and out.flags.f_contiguous)


def _multi(X, trees, order, inverse, peak=None):
    """The multi-axis transform, on X scaled exactly so that its sums cannot overflow."""
    Xs, s = scaled_copy(X, peak=peak, limit=safe_exponent(X.dtype))
    C = _multi_raw(Xs, trees, order, inverse)
    return _unscale(C, s, Xs, inverse)


def _multi_raw(X, trees, order, inverse):
    # ping-pong between two buffers of ours: memory stays at two arrays of the size of X
    spare = None
    input_is_ours = False
    if _use_last2(X, trees):
        # the axes commute, so the last two go first, fused in one pass over memory
        X = _apply_last2(X, _get_plan(trees[-2], order), _get_plan(trees[-1], order), inverse)
        # every other axis has a trailing run of at least n2 and is transformed in place
        for ax, tree in enumerate(trees[:-2]):
            if tree is not None:
                _apply_inplace(X, _get_plan(tree, order), ax, inverse)
        return X
    for ax, tree in enumerate(trees):
        if tree is None:
            continue
        Y = _apply_along(X, _get_plan(tree, order), ax, inverse, out=spare)
        spare = X if input_is_ours else None
        input_is_ours = True
        X = Y
    return X if input_is_ours else X.copy()
