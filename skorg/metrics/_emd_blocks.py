"""Tree EMD in row blocks through joblib, so that a Dask cluster can take the work."""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist

from .._sparse_input import check_sparse_matrix, is_sparse
from .._validation import check_finite_array

__all__ = ["pairwise_tree_emd"]


def _l1_block(F, lo, hi):
    return cdist(F[lo:hi], F, "cityblock")


def pairwise_tree_emd(
    X, trees, *, axis=-1, alphas=0.0, betas=1.0, dtype=None, n_jobs=None, working_memory=None
):
    """Multi-tree EMD between the slices of X, computed in row blocks by joblib tasks.

    The same distances as :func:`multi_tree_emd` (up to the order of floating-point sums),
    with the work split the scikit-learn way: the feature matrix of
    :func:`tree_emd_embedding` is built once, and blocks of rows of the distance matrix are
    ``joblib`` tasks. Under ``joblib.parallel_config(backend="dask")`` the blocks run on a
    Dask cluster; every entry is one sequential sum over the features (SciPy's ``cdist``),
    so the result does not depend on the backend, the block size or ``n_jobs``.

    Parameters
    ----------
    X : array-like of shape (n_0, ..., n_{d-1})
    trees : sequence of PartitionTree
        One tree per axis with None at ``axis``, or one per other axis.
    axis : int, default=-1
    alphas, betas : float or sequence of float, default=0.0 and 1.0
    dtype : {None, float32, float64}, default=None
        Precision of the features (distances are summed in float64).
    n_jobs : int, optional
        joblib workers (None: 1 unless a ``parallel_config`` says otherwise).
    working_memory : float, optional
        MiB per block of distances (``rows * n_axis * 8`` bytes); None takes scikit-learn's
        ``working_memory``.

    Returns
    -------
    distances : ndarray of shape (n_axis, n_axis), float64

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.metrics import multi_tree_emd, pairwise_tree_emd
    >>> from skorg.trees import dyadic_tree
    >>> X = np.arange(12.0).reshape(2, 2, 3) ** 2
    >>> trees = [dyadic_tree(2), dyadic_tree(2), None]
    >>> D = pairwise_tree_emd(X, trees, betas=0.0)
    >>> bool(np.allclose(D, multi_tree_emd(X, trees, betas=0.0)))
    True
    """
    from joblib import Parallel, delayed

    from ._emd_core import _in_range, _unscaled, _working_memory
    from ._knn_emd import tree_emd_embedding

    if is_sparse(X):
        X = check_sparse_matrix(X, "X", min_rows=1, dtype=None)
    else:
        X = check_finite_array(X, "X", min_ndim=2, min_rows=1, dtype=None)
    # distances are homogeneous of degree 1: features and sums of X scaled exactly when its
    # magnitude is extreme, back in X's units at the end (or a clear error past the range)
    X, s = _in_range(X, None)
    F = tree_emd_embedding(
        X, trees, axis=axis, alphas=alphas, betas=betas,
        dtype=np.float64 if dtype is None else dtype, working_memory=working_memory,
    )  # fmt: skip
    n = F.shape[0]
    budget = int(_working_memory(working_memory) * 2**20)
    step = max(1, min(n, budget // (8 * n)))
    blocks = Parallel(n_jobs=n_jobs)(
        delayed(_l1_block)(F, lo, min(lo + step, n)) for lo in range(0, n, step)
    )
    return _unscaled(np.vstack(blocks), s, X)
