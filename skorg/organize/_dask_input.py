"""Data that lives in blocks: a Dask array, an AnnData whose X is one, or a backed AnnData.

The blocks are read, converted and counted by Dask tasks (on the ``dask.distributed`` cluster
when a ``Client`` is active, Dask's default scheduler otherwise). Memory is checked before it
is used: the size of the in-memory matrix is known before any block is gathered (from the
shape of a dense array; from a first pass of per-block counts of stored entries for sparse
blocks) and compared with :func:`~skorg._validation.memory_budget`. Blocks are gathered a few
at a time into the result, so the peak is the result plus those blocks. Every block is
converted exactly as the whole matrix would be (same dtype rules, canonical CSR), so the
gathered matrix is bit for bit the one the in-memory path sees.

Nothing here imports dask at module level: a collection is recognised by its type's module.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._validation import check_memory

__all__ = ["block_source", "is_block_input", "load_blocks", "row_blocks"]

# rows per block when a backed AnnData is cut into blocks: a dense block of about this many
# bytes (float64), a sparse one of the same number of rows
_BLOCK_BYTES = 64 * 2**20
# blocks in flight at once while gathering (per worker of the cluster, at least this many)
_BLOCKS_IN_FLIGHT = 4


def _is_dask_array(X):
    module = type(X).__module__.split(".")[0]
    return module == "dask" and hasattr(X, "chunks") and hasattr(X, "to_delayed")


def _is_backed_matrix(X):
    """An on-disk matrix of a backed AnnData: an h5py Dataset or anndata's sparse dataset."""
    module = type(X).__module__.split(".")[0]
    if module == "h5py":
        return hasattr(X, "shape") and hasattr(X, "file")
    return module == "anndata" and hasattr(X, "to_memory") and hasattr(X, "shape")


def is_block_input(X):
    """Whether X (already taken out of an AnnData) is data in blocks this module reads."""
    return _is_dask_array(X) or _is_backed_matrix(X)


def _backed_file(X):
    """(filename, key) of a backed matrix, to reopen it inside a task (any process)."""
    group = getattr(X, "group", None)  # anndata's sparse dataset wraps an h5py Group
    node = group if group is not None else X
    return str(node.file.filename), str(node.name)


def _read_backed_rows(filename, key, lo, hi):
    """Rows ``lo:hi`` of the matrix at ``key`` of an .h5ad file (a task: opens the file)."""
    import h5py

    with h5py.File(filename, "r") as f:
        node = f[key]
        if isinstance(node, h5py.Dataset):
            return np.asarray(node[lo:hi])
        from anndata.io import sparse_dataset

        return sp.csr_matrix(sparse_dataset(node)[lo:hi])


def block_source(X, block_rows=None):
    """X as a Dask array: itself, or a backed matrix cut into row blocks read by tasks."""
    if _is_dask_array(X):
        if X.ndim < 2:
            raise ValueError(f"X must have at least 2 dimensions, got shape {X.shape}.")
        if any(np.isnan(c) for chunks in X.chunks for c in chunks):
            raise ValueError(
                "X is a Dask array of unknown chunk sizes; call X.compute_chunk_sizes() first."
            )
        return X
    import dask
    import dask.array as da

    n, m = (int(s) for s in X.shape)
    sparse = type(X).__module__.split(".")[0] != "h5py"  # anndata's sparse dataset
    if block_rows is None:
        block_rows = max(1, _BLOCK_BYTES // max(1, 8 * m))
    filename, key = _backed_file(X)
    dtype = np.dtype(X.dtype)
    meta = sp.csr_matrix((0, 0), dtype=dtype) if sparse else np.empty((0, 0), dtype=dtype)
    blocks = [
        da.from_delayed(
            dask.delayed(_read_backed_rows)(filename, key, lo, min(n, lo + block_rows)),
            shape=(min(n, lo + block_rows) - lo, m),
            dtype=dtype,
            meta=meta,
        )
        for lo in range(0, n, block_rows)
    ]
    return da.concatenate(blocks, axis=0)


def _is_sparse_blocks(Xd):
    meta = getattr(Xd, "_meta", None)
    return sp.issparse(meta) or type(meta).__module__.split(".")[0] == "sparse"


def _as_block(block, sparse, dtype):
    """One block as the whole matrix would be converted: canonical CSR or a C array."""
    from .._sparse_input import canonical_sparse

    if sparse:
        if not sp.issparse(block):
            block = block.to_scipy_sparse() if hasattr(block, "to_scipy_sparse") else block
            block = sp.csr_matrix(block)
        return canonical_sparse(block.tocsr().astype(dtype, copy=False))
    return np.ascontiguousarray(np.asarray(block), dtype=dtype)


def _stored_entries(block):
    """Stored entries of one sparse block (a task: the count, not the block, comes back)."""
    if sp.issparse(block):
        return int(block.nnz)
    if hasattr(block, "nnz"):
        return int(block.nnz)
    return int(np.count_nonzero(np.asarray(block)))


def row_blocks(Xd):
    """The delayed blocks of a 2-D or N-D Dask array, one list of column blocks per row block
    (every axis after the first must be a single chunk for N-D arrays)."""
    grid = Xd.to_delayed()
    if Xd.ndim > 2 and any(len(c) > 1 for c in Xd.chunks[2:]):
        Xd = Xd.rechunk({a: -1 for a in range(2, Xd.ndim)})
        grid = Xd.to_delayed()
    return [list(np.asarray(row).reshape(-1)) for row in grid]


def _dtype_of(Xd, dtype):
    if dtype is not None:
        return np.dtype(dtype)
    return Xd.dtype if Xd.dtype in (np.float32, np.float64) else np.dtype(np.float64)


def _in_flight():
    """Blocks gathered at once: a few per worker of an active distributed Client."""
    try:
        from distributed import get_client

        workers = len(get_client().scheduler_info(n_workers=-1)["workers"])
    except (ImportError, ValueError, TypeError):
        workers = 1
    return _BLOCKS_IN_FLIGHT * max(1, workers)


def load_blocks(X, *, dtype=np.float64, what="X"):
    """The in-memory matrix (CSR for sparse blocks) of data in blocks, memory checked first.

    Parameters
    ----------
    X : dask.array.Array, h5py.Dataset or anndata sparse dataset
    dtype : dtype or None, default=float64
        None keeps float32 and float64 (others become float64).
    what : str
        The name in the error message.

    Returns
    -------
    X : ndarray or scipy.sparse.csr_matrix
    """
    import dask

    Xd = block_source(X)
    dtype = _dtype_of(Xd, dtype)
    sparse = _is_sparse_blocks(Xd)
    if sparse and Xd.ndim != 2:
        raise ValueError(f"{what} has sparse blocks but {Xd.ndim} dimensions; expected 2.")
    grid = row_blocks(Xd)
    n_rows = int(Xd.shape[0])
    if sparse:
        # one pass of counts first (a number per block comes back), then the exact size:
        # the CSR arrays, plus the gathered pieces that vstack copies
        counts = dask.compute(*[dask.delayed(_stored_entries)(b) for row in grid for b in row])
        nnz = int(sum(counts))
        index_bytes = 4 if max(nnz, Xd.shape[1]) < 2**31 else 8
        need = 2 * (nnz * (dtype.itemsize + index_bytes) + (n_rows + 1) * index_bytes)
    else:
        need = int(np.prod(Xd.shape, dtype=np.int64)) * dtype.itemsize
    check_memory(need, f"Gathering the blocks of {what} (shape {tuple(Xd.shape)})")

    convert = dask.delayed(_as_block)
    step = _in_flight()
    if not sparse:
        out = np.empty(tuple(int(s) for s in Xd.shape), dtype=dtype)
        starts = np.concatenate([[0], np.cumsum(Xd.chunks[0])]).astype(np.int64)
        col_starts = np.concatenate([[0], np.cumsum(Xd.chunks[1])]).astype(np.int64)
        jobs = [(i, j, b) for i, row in enumerate(grid) for j, b in enumerate(row)]
        for lo in range(0, len(jobs), step):
            batch = jobs[lo : lo + step]
            values = dask.compute(*[convert(b, False, dtype) for _, _, b in batch])
            for (i, j, _), value in zip(batch, values):
                out[starts[i] : starts[i + 1], col_starts[j] : col_starts[j + 1]] = value
        return out
    pieces = []
    for lo in range(0, len(grid), step):
        batch = grid[lo : lo + step]
        values = dask.compute(*[[convert(b, True, dtype) for b in row] for row in batch])
        pieces.extend(sp.hstack(row, format="csr") if len(row) > 1 else row[0] for row in values)
    from .._sparse_input import canonical_sparse

    return canonical_sparse(sp.vstack(pieces, format="csr").astype(dtype, copy=False))
