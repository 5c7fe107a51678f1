"""The cores of the tree EMD: folder plans, features, pairwise sums and the tensor paths.

:mod:`skorg.metrics._emd` validates the public functions' arguments and calls these.
Features are weighted folder means (:mod:`skorg._kernels._emd`), summed pairwise in tiled
kernels; a 3-tensor with trees on its two other axes goes through the bi-folder kernels
(:mod:`skorg._kernels._bifolder`), which never store its features; a sparse matrix through
sparse folder products, block by block.
"""

from __future__ import annotations

from contextlib import contextmanager
from numbers import Integral, Real

import numba
import numpy as np
import scipy.sparse as sp

from .._kernels import _bifolder as _kb
from .._kernels import _emd as _k
from .._scratch import scratch_empty
from .._sparse_input import is_sparse
from .._threading import available_threads
from .._validation import check_tree_for_axis, pow2_scale, scaled_copy, unscale

__all__: list[str] = []

# Features per pass of the pairwise kernel. Fixed (not derived from the thread count) so that the
# summation order, and hence the result, does not depend on n_jobs.
_FEATURE_CHUNK = 512
# Work (inner-loop steps) below which a kernel runs without a parallel region: waking the other
# threads costs far more than such a call when the cores are busy (a scheduler quantum, ms).
_PARALLEL_MIN_WORK = 20_000_000
# Fixed number of accumulators of the two-tree kernel (the groups of feature blocks that the
# threads share out): a constant, so that the result does not depend on the thread count.
_N_GROUPS = 8
# The pairwise kernels' -1, an argument so that it reaches them at run time: their differences
# are multiply-adds muladd(y, -1, x) (skorg._kernels._muladd), which a compile-time -1 would
# turn back into subtractions.
_MINUS_ONE = -1.0
# Row tile of the two-tree kernel's pairwise sums (a multiple of 4), and the number of
# features it aims at per block (whole folders of the first tree).
_TILE = 64
_BLOCK_FEATURES = 512
# Work below which the feature means, pairwise sums and triangle copies run in NumPy/SciPy:
# a compiled kernel would be faster, but compiling it costs seconds on the first call of a
# fresh install, far more than such a call (a fit on a small matrix compiles nothing).
_NUMPY_MAX_WORK = 1 << 22


# --------------------------------------------------------------------------- helpers
@contextmanager
def _dynamic_schedule():
    """Hand the next parallel kernel's tasks out one at a time (parallel chunk size 1).

    A thread slowed by another process on its core then takes fewer tasks instead of holding
    back the whole call; every task writes its own entries or accumulator, so the result is
    the same whichever thread runs it.
    """
    chunk = numba.set_parallel_chunksize(1)
    try:
        yield
    finally:
        numba.set_parallel_chunksize(chunk)


@contextmanager
def _numba_threads(n_jobs):
    """Run the numba kernels on ``n_jobs`` threads (joblib convention), then restore."""
    if n_jobs is None:
        yield
        return
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, Integral) or n_jobs == 0:
        raise ValueError(f"n_jobs must be None or a non-zero integer, got {n_jobs!r}.")
    limit = numba.config.NUMBA_NUM_THREADS
    wanted = int(n_jobs) if n_jobs > 0 else limit + 1 + int(n_jobs)
    previous = numba.get_num_threads()
    numba.set_num_threads(min(max(wanted, 1), limit))
    try:
        yield
    finally:
        numba.set_num_threads(previous)


# float32 features and sums stay far inside their range for data of magnitude 2**+-40
_FLOAT32_EXPONENT = 40


def _check_real(value, name):
    if isinstance(value, bool) or not isinstance(value, Real) or not np.isfinite(value):
        raise ValueError(f"{name} must be a finite real number, got {value!r}.")
    return float(value)


def _feature_dtype(X, dtype):
    """The feature dtype: float32 only where the range of X allows it (else float64)."""
    if dtype is None:
        dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.dtype(np.float64)
    else:
        try:
            dtype = np.dtype(dtype)
        except TypeError:
            raise ValueError(f"dtype must be None, float32 or float64, got {dtype!r}.") from None
        if dtype not in (np.float32, np.float64):
            raise ValueError(f"dtype must be None, float32 or float64, got {dtype}.")
    if dtype == np.float32 and pow2_scale(X, limit=_FLOAT32_EXPONENT) != 1.0:
        # features or distances of data this large or small would overflow or underflow
        return np.dtype(np.float64)
    return dtype


def _in_range(X, dtype):
    """``(X * s, s)``: X scaled exactly by a power of two when its magnitude would let the
    float64 features or the sums overflow or underflow (tree EMD is homogeneous of
    degree 1 in X, so the distances of X are those of ``X * s`` divided by ``s``)."""
    if is_sparse(X):
        s = pow2_scale(X.data)
        return (X * s if s != 1.0 else X), s
    return scaled_copy(X)


def _unscaled(D, s, source, what="The tree EMD"):
    """D computed on ``source = X * s`` (:func:`_in_range`) in the units of X; a clear error
    instead of infinities when those values pass the float range."""
    return unscale(D, s, source, what=what)


def _folder_plan(tree, alpha, beta, exclude_singletons, folder_weights, name):
    """Distinct folders of ``tree`` with their summed weights: (leaf_order, start, end, scale).

    A one-child chain repeats the same folder on several levels; its folder mean is the same on
    every level, so the chain is one feature whose weight is the sum of the chain's weights.
    Folders of zero total weight are dropped. ``scale = weight / size`` turns a folder sum into
    the weighted folder mean.
    """
    n = tree.n_points
    size = tree.size.astype(np.float64)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        weight = (size / n) ** beta * np.exp2(-alpha * tree.level.astype(np.float64))
    if not np.all(np.isfinite(weight)):
        raise ValueError(
            f"{name}: alpha={alpha:g} and beta={beta:g} give folder weights beyond the float "
            "range; use exponents of moderate size (the defaults are alpha=0, beta=1)."
        )
    if folder_weights is not None:
        fw = np.asarray(folder_weights, dtype=np.float64)
        if fw.shape != (tree.n_nodes,):
            raise ValueError(
                f"{name}: folder_weights must have one entry per tree node, shape "
                f"({tree.n_nodes},), got shape {fw.shape}."
            )
        if not np.all(np.isfinite(fw)) or np.any(fw < 0):
            raise ValueError(f"{name}: folder_weights must be finite and non-negative.")
        weight = weight * fw
    if exclude_singletons:
        weight = np.where(tree.size == 1, 0.0, weight)
    key = tree.start.astype(np.int64) * (n + 1) + tree.end.astype(np.int64)
    uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    total = np.bincount(inverse.ravel(), weights=weight, minlength=uniq.shape[0])
    bfs = np.argsort(first, kind="stable")  # features in BFS order of the chains' top nodes
    first, total = first[bfs], total[bfs]
    keep = total != 0
    start = tree.start[first][keep].astype(np.intp)
    end = tree.end[first][keep].astype(np.intp)
    scale = total[keep] / (end - start)
    return np.array(tree.leaf_order, dtype=np.intp), start, end, scale


def _per_axis(value, ndim, axis, name, check):
    """Broadcast a scalar, or take a per-axis sequence (length ndim or ndim - 1)."""
    others = [a for a in range(ndim) if a != axis]
    if isinstance(value, (list, tuple, np.ndarray)):
        seq = list(value)
        if len(seq) == ndim:
            return {a: check(seq[a], f"{name}[{a}]") for a in others}
        if len(seq) == ndim - 1:
            pairs = enumerate(zip(others, seq, strict=True))
            return {a: check(v, f"{name}[{i}]") for i, (a, v) in pairs}
        raise ValueError(
            f"{name} must be a scalar or a sequence of length {ndim} (one per axis) or "
            f"{ndim - 1} (one per axis other than `axis`), got length {len(seq)}."
        )
    return {a: check(value, name) for a in others}


def _tile_pairs(m, n_threads):
    """Upper-triangle tile pairs with enough tasks for ``n_threads`` threads.

    The tile side changes only which thread sums a pair, never the sum (micro-tiles of 4 stay
    aligned to multiples of 4), so the result does not depend on it.
    """
    tile = 64
    while tile > 8:
        n_tiles = -(-m // tile)
        if n_tiles * (n_tiles + 1) // 2 >= 4 * n_threads:
            break
        tile //= 2
    n_tiles = -(-m // tile)
    ti, tj = np.triu_indices(n_tiles)
    return ti.astype(np.intp), tj.astype(np.intp), tile


def _add_pairwise_l1(F, out):
    """out += pairwise cityblock distances between the rows of F (float64 accumulation)."""
    m, k = F.shape
    if m * m * k // 2 < _NUMPY_MAX_WORK:
        from scipy.spatial.distance import pdist, squareform

        # SciPy's C loop, in float64: the same distances to rounding, and nothing to compile
        out += squareform(pdist(F.astype(np.float64, copy=False), "cityblock"))
        return
    # (on this thread too while the cores are taken: skorg._threading)
    if m * m * k // 2 < _PARALLEL_MIN_WORK or available_threads() == 1:
        ti, tj, tile = _tile_pairs(m, 1)
        _k.pairwise_l1_sym_serial(F, ti, tj, tile, _FEATURE_CHUNK, out, _MINUS_ONE)
        return
    ti, tj, tile = _tile_pairs(m, numba.get_num_threads())
    with _dynamic_schedule():
        _k.pairwise_l1_sym(F, ti, tj, tile, _FEATURE_CHUNK, out, _MINUS_ONE)


def _reduce_axis(Z, ax, plan, dtype, compiled):
    """Replace axis ``ax`` of Z (length n) by the weighted means of the plan's folders, in the
    compiled kernels when ``compiled`` (see :func:`_features`), else in NumPy."""
    leaf_order, start, end, scale = plan
    shape = Z.shape
    A = int(np.prod(shape[:ax], dtype=np.int64))
    n = shape[ax]
    B = int(np.prod(shape[ax + 1 :], dtype=np.int64))
    k = start.shape[0]
    if not compiled:
        # the kernels' running sums (sequential, in float64) and differences, in NumPy
        Y = np.take(Z.reshape(A, n, B), leaf_order, axis=1)
        P = np.empty((A, n + 1, B), dtype=np.float64)
        P[:, 0, :] = 0.0
        np.cumsum(Y, axis=1, dtype=np.float64, out=P[:, 1:, :])
        means = np.take(P, end, axis=1)
        means -= np.take(P, start, axis=1)
        means *= scale[None, :, None]
        return means.astype(dtype, copy=False).reshape((*shape[:ax], k, *shape[ax + 1 :]))
    out = np.empty((A, k, B), dtype=dtype)
    n_threads = 1 if A * B * (n + k) < _PARALLEL_MIN_WORK else available_threads()
    if B == 1:
        if n_threads == 1:
            _k._rows_range(Z.reshape(A, n), leaf_order, start, end, scale, 0, A, out.reshape(A, k))
        else:
            _k.folder_means_rows(
                Z.reshape(A, n), leaf_order, start, end, scale, n_threads, out.reshape(A, k)
            )
    else:
        # lane blocks: wide enough for contiguous loops, enough of them to feed every thread
        lanes = int(min(256, max(16, B // (4 * n_threads))))
        if n_threads == 1:
            n_items = A * -(-B // lanes)
            _k._mid_range(Z.reshape(A, n, B), leaf_order, start, end, scale, lanes, 0, n_items, out)
        else:
            _k.folder_means_mid(
                Z.reshape(A, n, B), leaf_order, start, end, scale, lanes, n_threads, out
            )
    return out.reshape((*shape[:ax], k, *shape[ax + 1 :]))


def _features(Xt, plans, dtype):
    """Feature matrix (n_slices, n_features) whose row L1 distances are the multi-tree EMD.

    ``Xt`` has the compared axis first, so the result needs no transposition and every
    reduction runs over long contiguous lanes. The means run in the compiled kernels when
    their own work or that of the pairwise sums of these features is past
    ``_NUMPY_MAX_WORK`` (the sums then compile anyway), so that only small problems, whose
    sums run in SciPy, take the NumPy route (it is ten times slower from a few hundred rows).
    """
    m = Xt.shape[0]
    n_features = int(np.prod([plans[ax][1].shape[0] for ax in plans], dtype=np.int64))
    n_features *= int(np.prod([Xt.shape[ax] for ax in range(1, Xt.ndim) if ax not in plans]))
    work = max(m * m * n_features // 2, Xt.size + m * n_features)
    compiled = work >= _NUMPY_MAX_WORK
    Z = Xt
    for ax in sorted(plans):
        Z = _reduce_axis(Z, ax, plans[ax], dtype, compiled)
    return Z.reshape(m, -1)


def _padded(plan, multiple=64):
    """The plan with empty zero-weight folders appended up to a multiple of ``multiple``.

    Their features are exactly 0 for every slice, so distances do not change, and the
    pairwise kernel's inner loops run on whole SIMD vectors.
    """
    leaf_order, start, end, scale = plan
    extra = -start.shape[0] % multiple
    if extra == 0:
        return plan
    zeros = np.zeros(extra, dtype=start.dtype)
    return (
        leaf_order,
        np.concatenate([start, zeros]),
        np.concatenate([end, zeros]),
        np.concatenate([scale, np.zeros(extra)]),
    )


def _restrict(plan, lo, hi):
    leaf_order, start, end, scale = plan
    return leaf_order, start[lo:hi], end[lo:hi], scale[lo:hi]


def _emd_core(Xt, plans, dtype, working_memory):
    """Distances between the slices ``Xt[t]``, in feature chunks of bounded memory.

    The distance is a sum over features, so it is accumulated over chunks of the folders of the
    first tree axis; every feature is computed once.
    """
    n_t = Xt.shape[0]
    axes = sorted(plans)
    first = axes[0]
    # bytes of all intermediates for a single folder of the first tree axis
    itemsize = np.dtype(dtype).itemsize
    dims = list(Xt.shape)
    dims[first] = 1
    per_folder = 0
    for ax in [*axes[1:], None]:
        per_folder += int(np.prod(dims, dtype=np.int64))
        if ax is not None:
            dims[ax] = plans[ax][1].shape[0]
    per_folder *= itemsize
    budget = int(working_memory * 2**20)
    k_first = plans[first][1].shape[0]
    step = max(1, min(k_first, budget // max(per_folder, 1)))
    D = np.zeros((n_t, n_t), dtype=np.float64)
    for lo in range(0, k_first, step):
        chunk = dict(plans)
        chunk[first] = _restrict(plans[first], lo, min(lo + step, k_first))
        _add_pairwise_l1(_features(Xt, chunk, dtype), D)
    return D


def _emd_two_trees(X, axis, plan1, plan2, dtype):
    """Distances between the slices of a 3-tensor along ``axis`` given trees on the two
    other axes (``plan1`` on the lower one), without storing the bi-folder features.

    Holds one float64 prefix table the size of X (see :mod:`skorg._kernels._bifolder`).
    """
    a1, a2 = [a for a in range(3) if a != axis]
    Xv = np.transpose(X, (a1, a2, axis))
    n1, n2, m = Xv.shape
    order1, start1, end1, scale1 = plan1
    order2, start2, end2, scale2 = plan2
    # folders of the first tree in depth-first order: consecutive feature blocks read nearby
    # rows of the prefix table, which then come from cache rather than memory
    dfs = np.lexsort((-end1, start1))
    start1, end1, scale1 = start1[dfs], end1[dfs], scale1[dfs]
    k1, k2 = start1.shape[0], start2.shape[0]
    if k1 == 0 or k2 == 0:
        return np.zeros((m, m))
    n_threads = available_threads()
    # within a questionnaire fit the table is reused from step to step (skorg._scratch)
    P = scratch_empty("bifolder_prefix", (n1 + 1, n2, m), np.float64)
    t_inner = bool(abs(Xv.strides[2]) <= abs(Xv.strides[1]))
    if n_threads == 1 or n1 * n2 * m < _PARALLEL_MIN_WORK // 8:
        _kb.bifolder_prefix_serial(Xv, order1, order2, t_inner, P)
    else:
        _kb.bifolder_prefix(Xv, order1, order2, t_inner, n_threads, P)
    per_block = max(1, _BLOCK_FEATURES // k2)
    block_bounds = np.append(np.arange(0, k1, per_block), k1).astype(np.intp)
    n_blocks = block_bounds.shape[0] - 1
    n_groups = min(_N_GROUPS, n_blocks)
    width = -(-per_block * k2 // _kb._PAD) * _kb._PAD
    bufs = np.empty((n_groups, m, width), dtype=dtype)
    accs = np.zeros((n_groups, m, m), dtype=np.float64)
    args = (P, start1, end1, scale1, start2, end2, scale2, block_bounds, _TILE, bufs, accs,
            _MINUS_ONE)  # fmt: skip
    if n_threads == 1 or m * m * k1 * k2 // 2 < _PARALLEL_MIN_WORK:
        _kb.bifolder_l1_serial(*args)
    else:
        with _dynamic_schedule():
            _kb.bifolder_l1(*args)
    upper = np.triu(accs[0], 1)
    for a in range(1, n_groups):
        upper += np.triu(accs[a], 1)
    return upper + upper.T


_SPARSE_BLOCK_MB = 32.0


def _folder_matrix(plan, n):
    """The sparse (n_folders, n) matrix of the plan: ``scale[f]`` on the points of folder f."""
    leaf_order, start, end, scale = plan
    sizes = (end - start).astype(np.intp)
    indptr = np.zeros(sizes.shape[0] + 1, dtype=np.intp)
    np.cumsum(sizes, out=indptr[1:])
    offsets = np.arange(indptr[-1], dtype=np.intp) - np.repeat(indptr[:-1] - start, sizes)
    data = np.repeat(scale, sizes)
    return sp.csr_matrix((data, leaf_order[offsets], indptr), shape=(sizes.shape[0], n))


def _sparse_emd(Xs, plan, axis, dtype, working_memory):
    """Tree EMD between the rows (``axis=0``) or columns (``axis=1``) of a sparse matrix, the
    plan's tree on the other axis, without a dense copy of it.

    The features (weighted folder means) are built one block of folders at a time, a block
    small enough for its dense (m, block) features and their sparse product to stay within
    32 MB (or ``working_memory`` MB if smaller); memory is the (m, m) result, the sparse
    input, a folder matrix of ``sum |F|`` entries and one block.
    """
    M = Xs.T.tocsr() if axis == 0 else Xs.tocsr()  # tree on the rows of M, compare columns
    n, m = M.shape
    A = _folder_matrix(plan, n)
    k = A.shape[0]
    # blocks of at most 32 MB (or working_memory if smaller): the sums are the same, and the
    # peak stays near that of the sparse input rather than of a dense copy
    budget = min(float(working_memory), _SPARSE_BLOCK_MB) * 2**20
    step = max(1, min(k, int(budget) // max(1, 24 * m)))
    D = np.zeros((m, m), dtype=np.float64)
    for lo in range(0, k, step):
        block = (A[lo : lo + step] @ M).T.toarray()
        _add_pairwise_l1(np.ascontiguousarray(block, dtype=dtype), D)
    return D


def _working_memory(working_memory):
    if working_memory is None:
        from sklearn import get_config

        return float(get_config()["working_memory"])
    return _check_real(working_memory, "working_memory")


def _axis_and_trees(axis, trees, ndim):
    """The compared axis (checked, non-negative) and ``{other axis: tree}``."""
    if isinstance(axis, bool) or not isinstance(axis, Integral) or not -ndim <= axis < ndim:
        raise ValueError(f"axis must be an integer in [-{ndim}, {ndim}), got {axis!r}.")
    axis = int(axis) % ndim

    from ..trees import PartitionTree

    if isinstance(trees, PartitionTree):
        trees = [trees]
    trees = list(trees)
    if len(trees) == ndim and trees[axis] is not None:
        raise ValueError(
            f"trees has one entry per axis, so trees[{axis}] (the compared axis) must be None."
        )
    return axis, _per_axis(trees, ndim, axis, "trees", lambda t, name: t)


def _multi_tree_emd(
    X, trees, axis, alphas, betas, exclude_singletons, folder_weights, dtype, n_jobs, working_memory
):
    """:func:`multi_tree_emd` of a validated finite X, with the feature dtype resolved;
    returns float64 distances."""
    ndim = X.ndim
    axis, tree_map = _axis_and_trees(axis, trees, ndim)
    alpha_map = _per_axis(alphas, ndim, axis, "alphas", _check_real)
    beta_map = _per_axis(betas, ndim, axis, "betas", _check_real)
    single_map = _per_axis(
        exclude_singletons, ndim, axis, "exclude_singletons", lambda v, name: bool(v)
    )
    weight_map = _per_axis(
        [None] * ndim if folder_weights is None else folder_weights,
        ndim,
        axis,
        "folder_weights",
        lambda v, name: v,
    )
    plans = {}
    for a, tree in tree_map.items():
        name = f"trees[{a}]"
        check_tree_for_axis(tree, X.shape[a], name, f"entries along axis {a}")
        plan = _folder_plan(tree, alpha_map[a], beta_map[a], single_map[a], weight_map[a], name)
        plans[a + 1 if a < axis else a] = plan  # axis numbers of moveaxis(X, axis, 0)
    memory = _working_memory(working_memory)
    if is_sparse(X):
        with _numba_threads(n_jobs):
            return _sparse_emd(X, plans[1], axis, dtype, memory)
    with _numba_threads(n_jobs):
        # the two-tree kernel holds _N_GROUPS (m, m) accumulators: for very long compared axes
        # that would pass the memory bound, and the chunked path below takes over
        m = X.shape[axis]
        if len(plans) == 2 and _N_GROUPS * m * m * 8 <= memory * 2**20:
            D = _emd_two_trees(X, axis, plans[1], plans[2], dtype)
        else:
            # one copy of X with the compared axis first: contiguous slices, no transposed
            # features
            Xt = np.ascontiguousarray(np.moveaxis(X, axis, 0))
            if len(plans) == 1:
                plans = {1: _padded(plans[1])}
            D = _emd_core(Xt, plans, dtype, memory)
    return D
