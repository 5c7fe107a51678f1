"""SciPy sparse matrices as input: validation and the Gram products the affinities need.

Memory rule: a sparse X is never densified here; what is dense is the (n_points, n_points)
result the caller returns anyway.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._validation import pow2_scale

__all__ = ["canonical_sparse", "check_sparse_matrix", "is_sparse", "sparse_gram"]


def is_sparse(X):
    return sp.issparse(X)


def canonical_sparse(X, fmt="csr"):
    """X in ``fmt`` with duplicate entries summed and indices sorted, on a copy when X needs it.

    A CSR or CSC matrix may store an entry several times (``toarray`` sums them), which
    row-norm code that squares the stored values (sklearn's ``row_norms``, ``X.multiply(X)``)
    does not: canonical form makes every path see the matrix ``toarray`` gives. The caller's
    matrix is never edited: SciPy's ``sum_duplicates`` sorts and sums in place, and a
    conversion (``asformat``, ``astype(copy=False)``) may share the caller's index arrays,
    so the work is done on a full copy.
    """
    Y = X.asformat(fmt)
    if not Y.has_canonical_format:
        Y = Y.copy()
        Y.sum_duplicates()
    return Y


def check_sparse_matrix(X, name="X", *, min_rows=2, dtype=np.float64, fmt="csr"):
    """A finite, real, 2-D sparse matrix in ``fmt`` with ``dtype`` (None keeps float32/64).

    Explicit zeros are kept (they are zeros); duplicate entries are summed (on a copy, see
    :func:`canonical_sparse`); NaN and inf among the values are refused.
    """
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D sparse matrix, got shape {X.shape}.")
    if np.iscomplexobj(X.data) or not (
        np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.bool_)
    ):
        raise TypeError(f"{name} must be a real sparse matrix, got dtype {X.dtype}.")
    if dtype is None:
        dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.float64
    X = canonical_sparse(X.asformat(fmt).astype(dtype, copy=False), fmt)
    for axis, length in enumerate(X.shape):
        if length < min_rows:
            raise ValueError(
                f"{name} has {length} entries along axis {axis}; at least {min_rows} are needed "
                f"(shape {X.shape})."
            )
    bad = ~np.isfinite(X.data)
    if bad.any():
        raise ValueError(
            f"{name} contains {int(bad.sum())} NaN or infinite values; expected finite numbers."
        )
    return X


def sparse_gram(X):
    """``(G, sq, s)``: ``G = (s X) @ (s X).T`` dense, ``sq`` the squared row norms of ``s X``,
    and ``s`` the power of two that brings ``max |X|`` into [0.5, 1) (1.0 for an all-zero X).

    The scaling is exact (barring the underflow of entries ``2**53`` times smaller than the
    largest), so G and sq are those of X times ``s**2`` whatever the units of X, subnormal
    entries or entries near the float maximum included, and their squares neither overflow
    nor underflow; ``1 / max |X|`` would overflow for entries below about 5.6e-309.
    """
    s = pow2_scale(X.data, always=True) if X.nnz else 1.0
    if s != 1.0:
        X = X * s
    sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    G = (X @ X.T).toarray()
    return G, sq, s
