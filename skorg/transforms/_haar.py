"""Orthonormal Haar bases on partition trees and their fast transforms."""

from __future__ import annotations

import math

import numba
import numpy as np

from .._kernels import _haar as _kernels
from .._kernels import _haar_rows as _row_kernels
from .._kernels import _haar_short as _short_kernels
from .._kernels import _haar_slots as _slot_kernels
from .._validation import finite_peak, plain_magnitude, plain_values, scaled_copy
from ..trees import PartitionTree
from ._haar_plan import _ORDERS, _get_plan

__all__ = [
    "bihaar_transform",
    "haar_basis",
    "haar_coefficient_info",
    "haar_support",
    "haar_transform",
    "inverse_bihaar_transform",
    "inverse_haar_transform",
    "inverse_multi_haar_transform",
    "inverse_trihaar_transform",
    "multi_haar_transform",
    "trihaar_transform",
]


# ---------------------------------------------------------------------- validation
def _check_tree(tree, name="tree"):
    if not isinstance(tree, PartitionTree):
        raise TypeError(f"{name} must be a skorg.trees.PartitionTree, got {type(tree).__name__}.")
    return tree


def _check_array(X, name="X", min_ndim=1):
    """A finite float32/float64 array (other real dtypes become float64)."""
    return _check_data(X, name, min_ndim)[0]


def _check_data(X, name="X", min_ndim=1):
    """:func:`_check_array` and ``max |X|`` (found by the finiteness check, kept for scaling)."""
    if hasattr(X, "tocsr") and hasattr(X, "nnz"):  # scipy.sparse, without importing it
        raise TypeError(
            f"{name} is a sparse matrix ({type(X).__name__}); the Haar transforms need a dense "
            f"array: pass {name}.toarray()."
        )
    X = np.asarray(X)
    if X.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {X.dtype}.")
    if X.dtype != _FLOAT64 and X.dtype != _FLOAT32:
        X = X.astype(np.float64)
    if X.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimension(s), got shape {X.shape}.")
    if X.size == 0:
        raise ValueError(f"{name} is empty (shape {X.shape}); every axis needs at least one entry.")
    # one compiled pass at every size: half the cost of NumPy's two reductions even on a
    # few values, and no temporary of the size of X (a transform compiles kernels anyway)
    peak = finite_peak(X, compiled_from=_PEAK_COMPILED_FROM)
    if not math.isfinite(peak):
        raise ValueError(
            f"{name} contains NaN or infinity; the Haar transform needs finite values."
        )
    return X, peak


def _check_axis(axis, ndim):
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"axis must be an integer, got {axis!r}.")
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of range for an array with {ndim} dimension(s).")
    return axis % ndim


def _check_tree_matches(tree, X, axis, name="tree"):
    if tree.n_points != X.shape[axis]:
        raise ValueError(
            f"{name} has {tree.n_points} points but axis {axis} of the data has length "
            f"{X.shape[axis]}; the tree must be built on that axis."
        )


def _check_trees(trees, X, allow_none=True):
    trees = list(trees)
    if len(trees) != X.ndim:
        raise ValueError(
            f"Expected one tree per axis: {X.ndim} for data of shape {X.shape}, got {len(trees)}."
        )
    for ax, tree in enumerate(trees):
        if tree is None and allow_none:
            continue
        _check_tree(tree, f"trees[{ax}]")
        _check_tree_matches(tree, X, ax, f"trees[{ax}]")
    return trees


_PEAK_COMPILED_FROM = 1
_FLOAT64 = np.dtype(np.float64)
_FLOAT32 = np.dtype(np.float32)

# ---------------------------------------------------------------------- cores
# below this many values the kernels run on the calling thread: waking the pool costs more
# (on two threads the parallel kernels are 1.3-1.7x faster from 2^17 values and break even
# at 2^16); the depth-first kernel across rows on other trees shares out the columns of a
# few rows, which pays only from 8 times as many (2^20)
_SERIAL_SIZE = 1 << 17
_SLOT_SERIAL_FACTOR = 8
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
# skorg._kernels._haar_rows): subtrees of the largest power of two of leaves, up to
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
    serial = X.size < _SERIAL_SIZE or numba.get_num_threads() == 1
    n_threads = 1 if serial else numba.get_num_threads()
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
        args = (inverse, plan.dyadic, plan.identity, plan.leaf_order, plan.leaf_rank,
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
        n_blocks = A * per_a
        args = (inverse, plan.leaf_order, plan.wplus, plan.wminus)
        if not serial and n_blocks < n_threads and chunk < n:
            # too few blocks to share out: share the subtrees of each block instead
            n_tasks = min(n // chunk, _kernels._TASKS_PER_THREAD * n_threads)
            for g in range(n_blocks):
                b0 = (g % per_a) * width
                s0 = (g // per_a) * n * B + b0
                _run_parallel(_row_kernels.dyadic_block_subtrees, flat, oflat, s0, B,
                              min(width, B - b0), chunk, *args, n_tasks)  # fmt: skip
            return out
        if serial:
            _row_kernels.dyadic_blocks_range(flat, oflat, n, B, width, chunk, 0, n_blocks, *args)
        else:
            n_tasks = min(n_blocks, _kernels._TASKS_PER_THREAD * n_threads)
            _run_parallel(_row_kernels.dyadic_blocks, flat, oflat, n, B, width, chunk, n_blocks,
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
        kernel(flat, out.reshape(-1), A, n1, n2, *args, numba.get_num_threads())
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
        kernel(X.reshape(-1), A, n, B, *args, numba.get_num_threads())
    finally:
        numba.set_parallel_chunksize(chunk)


def _forward_args(p):
    return p.leaf_order, p.child_span, p.first_leaf, p.cnode, p.cplus, p.wplus, p.wminus


def _inverse_args(p):
    return p.leaf_order, p.parent, p.first_leaf, p.cnode, p.cplus, p.clast, p.wplus, p.wminus


def _unscale(C, s):
    """Coefficients of X from those of ``X * s`` (exact for a power of two ``s``)."""
    if s != 1.0:
        with np.errstate(over="ignore"):  # only a value beyond the float range overflows
            C *= 1.0 / s
    return C


def _along(X, plan, axis, inverse, peak=None, out=None):
    """:func:`_apply_along` on data near any magnitude (the sums cannot overflow)."""
    Xs, s = scaled_copy(X, peak=peak)
    if out is not None and not _writes_into(Xs, out):
        # the kernels would read values they have already overwritten, or could not write
        # this layout: transform aside, then copy
        np.copyto(out, _unscale(_apply_along(Xs, plan, axis, inverse), s))
        return out
    C = _unscale(_apply_along(Xs, plan, axis, inverse, out=out), s)
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


def _check_out(out, X, name="out"):
    """``out`` when it can hold the transform of X: an ndarray of X's shape and dtype."""
    if out is None:
        return None
    if not isinstance(out, np.ndarray):
        raise TypeError(f"{name} must be a NumPy array or None, got {type(out).__name__}.")
    if out.shape != X.shape or out.dtype != X.dtype:
        raise ValueError(
            f"{name} must have the shape and dtype of the result, {X.shape} {X.dtype}; got "
            f"{out.shape} {out.dtype}."
        )
    if not out.flags.writeable:
        raise ValueError(f"{name} is read-only; pass a writeable array.")
    return out


def _multi(X, trees, order, inverse, peak=None):
    """The multi-axis transform, on X scaled exactly so that its sums cannot overflow."""
    Xs, s = scaled_copy(X, peak=peak)
    C = _multi_raw(Xs, trees, order, inverse)
    return _unscale(C, s)


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


# ---------------------------------------------------------------------- 1-D
def haar_transform(X, tree, *, axis=-1, order="bfs", out=None):
    """Haar coefficients of X along one axis, on a partition tree.

    Parameters
    ----------
    X : array-like of shape (..., n_points, ...)
        Real data; float32 stays float32, any other real dtype becomes float64.
    tree : PartitionTree
        A tree on the ``n_points`` entries of axis ``axis``.
    axis : int, default=-1
        The axis to transform (every other index is a separate vector).
    order : {"bfs", "reference"}, default="bfs"
        Coefficient order. ``"bfs"``: psi_0, then the folders by node id (level by level,
        left to right along the leaf order), ``i`` within a folder. ``"reference"``: the
        folders of each level by the smallest point index they hold, as in the reference
        implementation.
    out : ndarray, optional
        Where to write the result: an array of X's shape and of the result's dtype
        (float32 for float32 data, else float64), returned. It may be X itself. Reusing one
        array across calls spares the operating system's page clearing of a fresh result,
        which costs more than the transform on arrays of tens of megabytes; an ``out`` that
        shares memory with X, or is laid out neither in C order nor (for Fortran-ordered X)
        in Fortran order, is filled from a temporary.

    Returns
    -------
    C : ndarray of the shape of X
        ``C`` along ``axis`` holds the coefficients ``<x, psi_k>`` in coefficient order;
        ``out`` when given.

    See Also
    --------
    inverse_haar_transform, haar_basis, haar_coefficient_info, multi_haar_transform

    Notes
    -----
    psi_0 is the constant ``1 / sqrt(n)``. A folder with ``m >= 2`` children, sorted by
    size descending (ties: the child later in the leaf order first), has ``m - 1``
    vectors; vector ``i`` is ``+M_i / N_i`` on child ``i`` and ``-s_i / N_i`` on the
    sorted children after it, with ``s_i`` the size of child ``i``, ``M_i`` the size of
    the children after it and ``N_i = sqrt(s_i M_i (s_i + M_i))``; one-child folders and
    leaves add no vector. The coefficients come from folder sums accumulated bottom-up over
    the folders of two or more children (a one-child folder, which the level representation
    puts on every level a branch skips, holds its child's sum), so the cost is O(n) per
    vector whatever the depth, and no basis matrix is formed [1]_ [2]_.

    The memory access follows the layout: long vectors along a short trailing run (rows of a
    C-ordered matrix) are transformed one at a time in cache, in parallel over vectors (or,
    for fewer vectors than threads, over subtrees), and on perfect binary trees rows of up
    to 256 values a block of rows at a time, each level one loop over the pairs of all the
    block's rows, which lie end to end; across rows whole rows (up to 4096
    values) are combined, subtree by subtree so that the level buffers stay in cache, and on
    perfect binary trees so are rows of as few as 8 values (a middle axis before a short
    one);
    Fortran-ordered input is transformed as its transpose, without a copy, and
    gives Fortran-ordered output. On a perfect binary tree in ``"bfs"`` order the folder
    sums of a level are the pairwise sums of the level below (the lifting scheme), as for
    PyWavelets' ``wavedec(x, "haar")``, whose coefficients these are up to the sign of each
    detail. Every path does the same floating-point operations, so the coefficients do not
    depend on the layout or the number of threads. Working memory besides the output: per
    thread, at most about ``2 MB + n min(B, 4096) / 2`` bytes across rows (two L2-sized level
    buffers and the sums of subtrees of at least 32 leaves, for ``B`` values per row) and
    ``40 n`` bytes (plus ``16`` per tree node) along rows; the 64-lane blocks used for short
    vectors and general trees across rows hold ``512`` bytes per internal folder.

    References
    ----------
    .. [1] Gavish, Nadler, Coifman, "Multiscale wavelets on trees, graphs and high
       dimensional data", ICML 2010.
    .. [2] Coifman, Gavish, "Harmonic analysis of digital data bases", 2011.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import haar_transform
    >>> haar_transform(np.array([1.0, 1.0, 3.0, 3.0]), dyadic_tree(4)).round(6)
    array([4., 2., 0., 0.])
    """
    C = _plain_along(X, tree, axis, order, False, out)
    if C is not None:
        return C
    X, peak = _check_data(X)
    axis = _check_axis(axis, X.ndim)
    _check_tree(tree)
    _check_tree_matches(tree, X, axis)
    out = _check_out(out, X)
    return _along(X, _get_plan(tree, order), axis, inverse=False, peak=peak, out=out)


def inverse_haar_transform(C, tree, *, axis=-1, order="bfs", out=None):
    """Data from its Haar coefficients along one axis (inverse of :func:`haar_transform`).

    Parameters
    ----------
    C : array-like of shape (..., n_points, ...)
        Coefficients in the order given by ``order``.
    tree : PartitionTree
    axis : int, default=-1
    order : {"bfs", "reference"}, default="bfs"
    out : ndarray, optional
        Where to write the result, as in :func:`haar_transform`.

    Returns
    -------
    X : ndarray of the shape of C
        ``X = sum_k C_k psi_k`` along ``axis``; ``out`` when given.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import inverse_haar_transform
    >>> inverse_haar_transform(np.array([4.0, 2.0, 0.0, 0.0]), dyadic_tree(4)).round(6)
    array([1., 1., 3., 3.])
    """
    X = _plain_along(C, tree, axis, order, True, out)
    if X is not None:
        return X
    C, peak = _check_data(C, "C")
    axis = _check_axis(axis, C.ndim)
    _check_tree(tree)
    _check_tree_matches(tree, C, axis)
    out = _check_out(out, C)
    return _along(C, _get_plan(tree, order), axis, inverse=True, peak=peak, out=out)


# ---------------------------------------------------------------------- N-D
def multi_haar_transform(X, trees, *, order="bfs"):
    """Haar transform along several axes: one tree per axis (the tensor-product basis).

    Parameters
    ----------
    X : array-like of shape (n_0, n_1, ...)
    trees : sequence of PartitionTree or None
        One entry per axis of X; ``None`` leaves that axis as it is.
    order : {"bfs", "reference"}, default="bfs"

    Returns
    -------
    C : ndarray of the shape of X
        ``C[a, b, ...] = <X, psi_a (x) psi_b (x) ...>``.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import multi_haar_transform
    >>> C = multi_haar_transform(np.ones((2, 4)), [dyadic_tree(2), dyadic_tree(4)])
    >>> C.round(6)
    array([[2.828427, 0.      , 0.      , 0.      ],
           [0.      , 0.      , 0.      , 0.      ]])
    """
    X, peak = _check_data(X)
    trees = _check_trees(trees, X)
    return _multi(X, trees, order, inverse=False, peak=peak)


def inverse_multi_haar_transform(C, trees, *, order="bfs"):
    """Inverse of :func:`multi_haar_transform`.

    Parameters
    ----------
    C : array-like of shape (n_0, n_1, ...)
    trees : sequence of PartitionTree or None
    order : {"bfs", "reference"}, default="bfs"

    Returns
    -------
    X : ndarray of the shape of C

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import inverse_multi_haar_transform
    >>> C = np.zeros((2, 2)); C[0, 0] = 2.0
    >>> inverse_multi_haar_transform(C, [dyadic_tree(2), dyadic_tree(2)]).round(6)
    array([[1., 1.],
           [1., 1.]])
    """
    C, peak = _check_data(C, "C")
    trees = _check_trees(trees, C)
    return _multi(C, trees, order, inverse=True, peak=peak)


def _check_ndim(X, ndim, func):
    if X.ndim != ndim:
        raise ValueError(f"{func} needs X as a {ndim}-D array, got shape {X.shape}.")


def bihaar_transform(X, row_tree, col_tree, *, order="bfs"):
    """Bi-Haar coefficients ``H_r^T X H_c`` of a matrix on a row tree and a column tree.

    Parameters
    ----------
    X : array-like of shape (n_rows, n_cols)
    row_tree, col_tree : PartitionTree
    order : {"bfs", "reference"}, default="bfs"

    Returns
    -------
    C : ndarray of shape (n_rows, n_cols)

    See Also
    --------
    multi_haar_transform, inverse_bihaar_transform

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import bihaar_transform
    >>> bihaar_transform(np.eye(2), dyadic_tree(2), dyadic_tree(2)).round(6)
    array([[1., 0.],
           [0., 1.]])
    """
    X, peak = _check_data(X)
    _check_ndim(X, 2, "bihaar_transform")
    trees = _check_trees([row_tree, col_tree], X)
    return _multi(X, trees, order, inverse=False, peak=peak)


def inverse_bihaar_transform(C, row_tree, col_tree, *, order="bfs"):
    """Matrix from its bi-Haar coefficients: ``H_r C H_c^T``.

    Parameters
    ----------
    C : array-like of shape (n_rows, n_cols)
    row_tree, col_tree : PartitionTree
    order : {"bfs", "reference"}, default="bfs"

    Returns
    -------
    X : ndarray of shape (n_rows, n_cols)

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import inverse_bihaar_transform
    >>> inverse_bihaar_transform(np.eye(2), dyadic_tree(2), dyadic_tree(2)).round(6)
    array([[1., 0.],
           [0., 1.]])
    """
    C, peak = _check_data(C, "C")
    _check_ndim(C, 2, "inverse_bihaar_transform")
    trees = _check_trees([row_tree, col_tree], C)
    return _multi(C, trees, order, inverse=True, peak=peak)


def trihaar_transform(X, tree0, tree1, tree2, *, order="bfs"):
    """Tri-Haar coefficients of a 3-tensor: the tree Haar transform along each axis.

    A thin wrapper of :func:`multi_haar_transform` for 3-D arrays.

    Parameters
    ----------
    X : array-like of shape (n_0, n_1, n_2)
    tree0, tree1, tree2 : PartitionTree or None
        Trees on the three axes (``None`` leaves an axis as it is).
    order : {"bfs", "reference"}, default="bfs"

    Returns
    -------
    C : ndarray of shape (n_0, n_1, n_2)

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import trihaar_transform
    >>> round(float(trihaar_transform(np.ones((2, 2, 2)), *[dyadic_tree(2)] * 3)[0, 0, 0]), 6)
    2.828427
    """
    X, peak = _check_data(X)
    _check_ndim(X, 3, "trihaar_transform")
    trees = _check_trees([tree0, tree1, tree2], X)
    return _multi(X, trees, order, inverse=False, peak=peak)


def inverse_trihaar_transform(C, tree0, tree1, tree2, *, order="bfs"):
    """Inverse of :func:`trihaar_transform`.

    Parameters
    ----------
    C : array-like of shape (n_0, n_1, n_2)
    tree0, tree1, tree2 : PartitionTree or None
    order : {"bfs", "reference"}, default="bfs"

    Returns
    -------
    X : ndarray of shape (n_0, n_1, n_2)

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import inverse_trihaar_transform
    >>> C = np.zeros((2, 2, 2)); C[0, 0, 0] = 2.0 ** 1.5
    >>> inverse_trihaar_transform(C, *[dyadic_tree(2)] * 3).round(6).ravel()
    array([1., 1., 1., 1., 1., 1., 1., 1.])
    """
    C, peak = _check_data(C, "C")
    _check_ndim(C, 3, "inverse_trihaar_transform")
    trees = _check_trees([tree0, tree1, tree2], C)
    return _multi(C, trees, order, inverse=True, peak=peak)


# ---------------------------------------------------------------------- basis and metadata
def haar_basis(tree, *, order="bfs"):
    """The Haar basis of a tree as a dense orthonormal matrix.

    For inspection and tests; the transforms never form it.

    Parameters
    ----------
    tree : PartitionTree
    order : {"bfs", "reference"}, default="bfs"

    Returns
    -------
    basis : ndarray of shape (n_points, n_points)
        Column ``k`` is ``psi_k`` indexed by point, so ``haar_transform(x) == basis.T @ x``.

    Examples
    --------
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import haar_basis
    >>> (haar_basis(dyadic_tree(2)) * 2**0.5).round(6)
    array([[ 1., -1.],
           [ 1.,  1.]])
    """
    _check_tree(tree)
    eye = np.eye(tree.n_points)
    return _apply_along(eye, _get_plan(tree, order), 1, inverse=True).T.copy()


def haar_coefficient_info(tree, *, order="bfs"):
    """Where every Haar coefficient of a tree lives, in coefficient order.

    Parameters
    ----------
    tree : PartitionTree
    order : {"bfs", "reference"}, default="bfs"

    Returns
    -------
    info : dict of ndarray of shape (n_points,)
        - ``"node"``: the folder (node id) of the vector, the root (0) for psi_0;
        - ``"level"``: the level of that folder (root 0);
        - ``"rank"``: position ``i`` of the '+' child among the sorted children, -1 for psi_0;
        - ``"plus_node"``: node id of the '+' child, -1 for psi_0;
        - ``"plus_size"``, ``"minus_size"``: ``s_i`` and ``M_i`` (``n`` and 0 for psi_0);
        - ``"support"``: ``s_i + M_i``, the number of points where the vector is non-zero
          (``n`` for psi_0).

    Examples
    --------
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import haar_coefficient_info
    >>> haar_coefficient_info(dyadic_tree(4))["support"]
    array([4, 4, 2, 2])
    """
    _check_tree(tree)
    plan = _get_plan(tree, order)
    n = tree.n_points
    node = np.r_[0, plan.tree_cnode].astype(np.intp)
    plus_size = np.r_[n, plan.plus_size].astype(np.intp)
    minus_size = np.r_[0, plan.minus_size].astype(np.intp)
    return {
        "node": node,
        "level": np.asarray(tree.level)[node].astype(np.intp),
        "rank": np.r_[-1, plan.rank].astype(np.intp),
        "plus_node": np.r_[-1, plan.tree_cplus].astype(np.intp),
        "plus_size": plus_size,
        "minus_size": minus_size,
        "support": plus_size + minus_size,
    }


def haar_support(tree, *, order="bfs"):
    """Support size of every Haar basis vector of a tree, in coefficient order.

    Parameters
    ----------
    tree : PartitionTree
    order : {"bfs", "reference"}, default="bfs"

    Returns
    -------
    support : ndarray of int of shape (n_points,)

    Examples
    --------
    >>> from skorg.trees import PartitionTree
    >>> from skorg.transforms import haar_support
    >>> haar_support(PartitionTree.from_levels([[0, 0, 0], [0, 1, 2]]))
    array([3, 3, 2])
    """
    _check_tree(tree)
    plan = _get_plan(tree, order)
    return np.r_[tree.n_points, plan.plus_size + plan.minus_size].astype(np.intp)
