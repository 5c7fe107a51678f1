"""Per-block work of the questionnaire and the organizer on a ``dask.distributed`` cluster.

Every function here does work that is independent from one block of rows to the next (the
tree-EMD features of the rows, the Haar coefficients of each row along the column tree, the
organizer's score of each row) and gives bit for bit the numbers of the whole-matrix call:
each row's result depends on that row and the trees only, computed by the same kernels in
the same order. The blocks are sent to the workers of the active ``Client`` (or read there,
for a Dask array), and each result is written into its place as it arrives, so the driver
holds the result and a few blocks in flight, never a second copy.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._validation import check_memory

__all__ = [
    "active_client",
    "block_emd_feature_blocks",
    "block_knn_l1",
    "block_score_ratios",
    "block_tree_emd_embedding",
    "check_blocks",
    "lazy_reorder",
]

# rows of a block sent to a worker: a float64 block of about this many bytes (the features of
# a block are about twice the column tree's node count per row)
_BLOCK_BYTES = 32 * 2**20


def active_client():
    """The ``dask.distributed`` Client of this context, or None (no distributed, no Client)."""
    try:
        from distributed import get_client
    except ImportError:
        return None
    try:
        return get_client()
    except ValueError:
        return None


def _row_ranges(n_rows, row_bytes, n_workers):
    """Row ranges of the blocks: at most ``_BLOCK_BYTES`` each, at least two per worker."""
    step = max(1, min(_BLOCK_BYTES // max(1, row_bytes), -(-n_rows // (2 * n_workers))))
    return [(lo, min(n_rows, lo + step)) for lo in range(0, n_rows, step)]


def _rows(X, lo, hi):
    return X[lo:hi] if not sp.issparse(X) else X[lo:hi].tocsr()


def _features_task(block, others, alphas, betas, dtype):
    from ..metrics import tree_emd_embedding

    # one thread per task: the cluster's workers are the parallelism
    return tree_emd_embedding(block, others, axis=0, alphas=alphas, betas=betas, dtype=dtype,
                              n_jobs=1)  # fmt: skip


def _map_row_blocks(client, X, ranges, task, out, *args):
    """Run ``task(block, *args)`` on every row block on the cluster; results into ``out``."""
    from distributed import as_completed

    futures = {}
    for lo, hi in ranges:
        # the block's future is kept with its task's: a scattered block that nothing refers
        # to is released before the task has read it
        block = client.scatter(_rows(X, lo, hi), hash=False)  # a key of its own
        futures[client.submit(task, block, *args, pure=False)] = (lo, hi, block)
    for future in as_completed(futures):
        lo, hi, block = futures.pop(future)
        out[lo:hi] = future.result()
        future.release()
        block.release()
    return out


def _row_features_on_cluster(client, X, task, others, alphas, betas, dtype, what):
    """``task``'s features of every row of X, a block of rows per task on the cluster, their
    memory checked before any block is sent (the width, the folders the weights keep, from
    one row computed here)."""
    first = task(_rows(X, 0, 1), others, alphas, betas, dtype)
    n, n_features = X.shape[0], first.shape[1]
    check_memory(n * n_features * dtype.itemsize, what)
    workers = max(1, len(client.scheduler_info(n_workers=-1)["workers"]))
    ranges = _row_ranges(n, 8 * (X.shape[1] + n_features), workers)
    out = np.empty((n, n_features), dtype=dtype)
    return _map_row_blocks(client, X, ranges, task, out, others, alphas, betas, dtype)


def block_tree_emd_embedding(
    X, trees, *, axis=0, alphas=0.0, betas=1.0, dtype=np.float32, n_jobs=None, client=None
):
    """:func:`~skorg.metrics.tree_emd_embedding` of the rows of a matrix, a block of rows per
    task on the cluster; the same features bit for bit (the whole call without a Client).

    The memory of the features is checked before any block is sent.
    """
    from ..metrics import tree_emd_embedding

    client = client if client is not None else active_client()
    if client is None or axis != 0 or X.ndim != 2:
        return tree_emd_embedding(X, trees, axis=axis, alphas=alphas, betas=betas, dtype=dtype,
                                  n_jobs=n_jobs)  # fmt: skip
    others = list(trees) if len(trees) == 2 else [None, *trees]
    return _row_features_on_cluster(
        client, X, _features_task, others, alphas, betas, np.dtype(dtype),
        "The tree-EMD features of the rows",
    )  # fmt: skip


def _feature_blocks_task(block, others, alphas, betas, dtype):
    from ._sparse import emd_feature_blocks

    return emd_feature_blocks(block, others, 0, alphas, betas, dtype, 1)


def block_emd_feature_blocks(X, others, axis, alphas, betas, dtype=np.float32, n_jobs=None):
    """The k-NN path's features (:func:`~skorg.organize._sparse.emd_feature_blocks`, same
    signature) a block of rows per task on the active Client; bit for bit the same (each
    row's features depend on that row alone). Without a Client, or along another axis than
    the rows of a matrix, the in-memory function itself."""
    from ._sparse import emd_feature_blocks

    client = active_client()
    if client is None or axis != 0 or X.ndim != 2:
        return emd_feature_blocks(X, others, axis, alphas, betas, dtype, n_jobs)
    return _row_features_on_cluster(
        client, X, _feature_blocks_task, others, alphas, betas, np.dtype(dtype),
        "The k-NN path's tree-EMD features",
    )  # fmt: skip


def _ratios_task(block, trees, bases):
    from ._organizer import _row_ratios

    block = block.toarray() if sp.issparse(block) else np.asarray(block)
    return _row_ratios(block.astype(np.float64, copy=False), trees, bases)


def block_score_ratios(Xd, trees, bases):
    """The organizer's per-row Haar ratios of the rows of a Dask array, a block per task
    (rows of zeros left out, as in the in-memory score); the same numbers bit for bit."""
    import dask

    from ._dask_input import block_source, row_blocks

    Xd = block_source(Xd)
    if Xd.ndim == 2 and len(Xd.chunks[1]) > 1:
        Xd = Xd.rechunk({1: -1})
    elif Xd.ndim > 2:
        Xd = Xd.rechunk({a: -1 for a in range(1, Xd.ndim)})
    grid = row_blocks(Xd)
    task = dask.delayed(_ratios_task)
    trees_d, bases_d = dask.delayed(trees), dask.delayed(bases)
    parts = dask.compute(*[task(row[0], trees_d, bases_d) for row in grid])
    return np.concatenate(parts) if parts else np.empty(0)


def lazy_reorder(Xd, orders, axes):
    """The Dask array with the given axes taken in their orders (lazy: no block is read)."""
    from ._dask_input import block_source

    Xd = block_source(Xd)
    for axis in axes:
        index = [slice(None)] * Xd.ndim
        index[axis] = np.asarray(orders[axis])
        Xd = Xd[tuple(index)]
    return Xd


def check_blocks(estimator, X, *, same_rows):
    """A Dask array of the fitted organizer's shape (all axes, or all but the first)."""
    from sklearn.utils.validation import check_is_fitted

    from ._dask_input import block_source

    check_is_fitted(estimator)
    Xd = block_source(X)
    expected = tuple(estimator.shape_) if same_rows else tuple(estimator.shape_[1:])
    got = tuple(Xd.shape) if same_rows else tuple(Xd.shape[1:])
    if got != expected:
        what = "shape" if same_rows else "shape after the first axis"
        raise ValueError(
            f"X has {what} {got}, but this {type(estimator).__name__} was fitted on {expected}."
        )
    if Xd.dtype.kind not in "biuf":
        raise TypeError(f"X must hold real numbers, got a Dask array of dtype {Xd.dtype}.")
    return Xd


def _merge_task(a, b):
    from ..graphs import merge_knn_lists

    return merge_knn_lists(a, b)


def _knn_pair_task(Q, R, k, q_lo, r_lo):
    from ..graphs import l1_knn_block

    q_ids = np.arange(q_lo, q_lo + Q.shape[0], dtype=np.int64)
    r_ids = np.arange(r_lo, r_lo + R.shape[0], dtype=np.int64)
    return l1_knn_block(Q, R, k, query_ids=q_ids, reference_ids=r_ids)


def block_knn_l1(F, n_neighbors, *, block_rows=None, client=None):
    """Exact L1 nearest neighbours of every row of F, one task per pair of row blocks (query
    block x reference block) on the cluster, the lists of each query block merged by tasks.

    No task holds more than two blocks of F. The lists are bit for bit those of
    ``knn_indices(F, n_neighbors, metric="manhattan", backend="exact")`` (the blocked search
    gives the same lists under any split, merged in any order); without a Client, that call.
    Cost O(n^2) distances, spread over the workers: the exact reference against which the
    approximate search's recall is measured, and the search itself up to a few thousand rows.
    """
    from .._validation import SAFE_EXPONENT, check_finite_array, scaled_copy
    from ..graphs import knn_indices

    client = client if client is not None else active_client()
    if client is None:
        return knn_indices(F, n_neighbors, metric="manhattan", backend="exact")
    F = check_finite_array(F, "F", ndim=2, min_rows=1, dtype=None)
    # as knn_indices: scaled exactly so that no sum of the search overflows
    F, _ = scaled_copy(F, limit=40 if F.dtype == np.float32 else SAFE_EXPONENT)
    F = np.ascontiguousarray(F if F.dtype in (np.float32, np.float64) else F.astype(np.float64))
    n = F.shape[0]
    k = min(int(n_neighbors), n - 1)
    if k < 1:
        return np.empty((n, 0), dtype=np.intp)
    if block_rows is None:
        workers = max(1, len(client.scheduler_info(n_workers=-1)["workers"]))
        block_rows = _row_ranges(n, F.shape[1] * F.itemsize, workers)[0][1]
    ranges = [(lo, min(n, lo + block_rows)) for lo in range(0, n, block_rows)]
    blocks = [client.scatter(F[lo:hi], hash=False) for lo, hi in ranges]
    idx = np.empty((n, k), dtype=np.intp)
    merged = []
    for (q_lo, _), q_block in zip(ranges, blocks):
        parts = [
            client.submit(_knn_pair_task, q_block, r_block, k, q_lo, r_lo, pure=False)
            for (r_lo, _), r_block in zip(ranges, blocks)
        ]
        while len(parts) > 1:  # a tree of merges
            pairs = zip(parts[0::2], parts[1::2])
            merged_parts = [client.submit(_merge_task, a, b, pure=False) for a, b in pairs]
            parts = merged_parts + (parts[-1:] if len(parts) % 2 else [])
        merged.append(parts[0])
    for (lo, hi), future in zip(ranges, merged):
        idx[lo:hi] = future.result()[1]
    return idx
