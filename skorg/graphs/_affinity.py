"""Initial affinities between the rows of a matrix."""

from __future__ import annotations

from numbers import Real

import numpy as np

from .._blas import row_gram, serial_blas
from .._sparse_input import check_sparse_matrix, is_sparse, sparse_gram
from .._validation import check_finite_array, scale_rows, scaled_copy

__all__ = [
    "affinity_matrix",
    "correlation_affinity",
    "cosine_affinity",
    "gaussian_affinity",
]


def _check_threshold(threshold):
    if threshold is None:
        return
    if isinstance(threshold, bool) or not isinstance(threshold, Real) or np.isnan(threshold):
        raise ValueError(f"threshold must be a number or None, got {threshold!r}.")


def _missing_mask(X, missing_values):
    if missing_values is None:
        return None
    if isinstance(missing_values, Real) and np.isnan(missing_values):
        return np.isnan(X)
    return np.isnan(X) | (X == missing_values)


# Gram products up to this many multiply-adds (up to a few tenths of a second on one core)
# run on one BLAS thread, the large ones as two column halves side by side
# (skorg._blas.row_gram): a second BLAS thread saves at most half of that,
# while with another process on the other core OpenBLAS's spinning workers made a
# 256 x 32768 Gram 4 times slower (0.30 s against 0.075 s on one thread, 2-core machine).
_SERIAL_GRAM_MAX = 2**33


def cosine_affinity(X, *, threshold=0.0, missing_values=None, absolute=False):
    """Cosine similarity between the rows of X.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_points, n_features)
        A SciPy sparse matrix is not densified (only the result is dense).
    threshold : float or None, default=0.0
        Similarities below ``threshold`` are set to 0 (the default floors
        negative cosines); None keeps them.
    missing_values : float, np.nan or None, default=None
        Entries equal to this value (NaN always counts when given) are
        missing: each cosine is computed only over the coordinates valid in
        both rows. The original questionnaire treats exact zeros as missing
        (``missing_values=0``); that is off by default because causally masked
        attention has true zeros.
    absolute : bool, default=False
        Use ``|cos|`` (before thresholding).

    Returns
    -------
    affinity : ndarray of shape (n_points, n_points)
        Symmetric, diagonal 1. A row with no direction (all zero, or no
        valid coordinate shared with another row) has affinity 0 to the
        others and 1 to itself.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.metrics import cosine_affinity
    >>> cosine_affinity(np.array([[1.0, 0.0], [1.0, 1.0], [-1.0, 0.0]])).round(3)
    array([[1.   , 0.707, 0.   ],
           [0.707, 1.   , 0.   ],
           [0.   , 0.   , 1.   ]])
    """
    allow_nan = missing_values is not None
    _check_threshold(threshold)
    if is_sparse(X):
        if allow_nan:
            raise ValueError(
                "missing_values needs a dense X: the entries a sparse matrix leaves out are "
                "zeros, not missing values."
            )
        cos, sq, _ = sparse_gram(check_sparse_matrix(X, "X", min_rows=1))
        norms = np.sqrt(sq)
        return _cosine_tail(cos, np.outer(norms, norms), threshold, absolute)
    X = check_finite_array(X, "X", ndim=2, min_rows=1, allow_nan=allow_nan)
    missing = _missing_mask(X, missing_values)
    X = scale_rows(X)
    small = X.shape[0] ** 2 * X.shape[1] <= _SERIAL_GRAM_MAX
    if missing is None:
        norms = np.sqrt(np.einsum("ij,ij->i", X, X))
        if small:
            cos = row_gram(X)
        else:
            cos = X @ X.T
        den = np.outer(norms, norms)
    else:
        valid = (~missing).astype(np.float64)
        U = np.where(missing, 0.0, X)
        with serial_blas(small):
            cos = U @ U.T
            sq = (U * U) @ valid.T  # sum of u_k^2 over k valid in both rows
        den = np.sqrt(sq * sq.T)
    return _cosine_tail(cos, den, threshold, absolute)


def _cosine_tail(cos, den, threshold, absolute):
    """Cosines from inner products and norm products; 0 where a norm is 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.where(den > 0, cos / np.where(den > 0, den, 1.0), 0.0)
    np.clip(cos, -1.0, 1.0, out=cos)
    if absolute:
        np.abs(cos, out=cos)
    if threshold is not None:
        cos[cos < threshold] = 0.0
    cos = 0.5 * (cos + cos.T)
    np.fill_diagonal(cos, 1.0)
    return cos


def correlation_affinity(X, *, threshold=0.0):
    """Pearson correlation between the rows of X (cosine after centering).

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_points, n_features)
        A SciPy sparse matrix is not centred in memory: the centred inner products come
        from its Gram matrix.
    threshold : float or None, default=0.0
        Correlations below it are set to 0; None keeps them.

    Returns
    -------
    affinity : ndarray of shape (n_points, n_points)
        A constant row has affinity 0 to the others and 1 to itself.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.metrics import correlation_affinity
    >>> correlation_affinity(np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 7.0]])).round(3)
    array([[1.   , 0.993],
           [0.993, 1.   ]])
    """
    _check_threshold(threshold)
    if is_sparse(X):
        X = check_sparse_matrix(X, "X", min_rows=1)
        G, sq, s = sparse_gram(X)
        p = X.shape[1]
        # the row means of the same exactly rescaled X as G (no overflow near 1e307)
        mean = np.asarray((X * s if s != 1.0 else X).sum(axis=1)).ravel() / p
        C = G - p * np.outer(mean, mean)
        var = np.diag(C).copy()
        # a (nearly) constant row: centring leaves only rounding, as on the dense path it
        # leaves nothing, so it has no direction
        var[var <= 1e-12 * np.maximum(sq, np.finfo(float).tiny)] = 0.0
        norms = np.sqrt(var)
        return _cosine_tail(C, np.outer(norms, norms), threshold, False)
    X = check_finite_array(X, "X", ndim=2, min_rows=1)
    X = scale_rows(X)  # the row means of values near 1e307 would overflow
    return cosine_affinity(X - X.mean(axis=1, keepdims=True), threshold=threshold)


def gaussian_affinity(X, *, n_neighbors=5, epsilon=1.0):
    """Gaussian kernel with a local bandwidth per point, symmetrized.

    ``K[i, j] = exp(-||x_i - x_j||^2 / sigma_i^2)`` with ``sigma_i`` equal to
    ``epsilon`` times the median distance from ``x_i`` to its
    ``n_neighbors`` nearest neighbours (the point itself, at distance 0,
    counts as one of them, as in the original), 1 where that median is 0;
    then ``(K + K.T) / 2``.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_points, n_features)
        A SciPy sparse matrix is not densified (only the result is dense).
    n_neighbors : int, default=5
    epsilon : float, default=1.0

    Returns
    -------
    affinity : ndarray of shape (n_points, n_points)

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.metrics import gaussian_affinity
    >>> gaussian_affinity(np.array([[0.0], [1.0], [3.0]]), n_neighbors=2).round(3)
    array([[1.   , 0.018, 0.   ],
           [0.018, 1.   , 0.009],
           [0.   , 0.009, 1.   ]])
    """
    sparse = is_sparse(X)
    if sparse:
        X = check_sparse_matrix(X, "X", min_rows=1)
    else:
        X = check_finite_array(X, "X", ndim=2, min_rows=1)
    n = X.shape[0]
    if isinstance(n_neighbors, bool) or not (
        isinstance(n_neighbors, (int, np.integer)) and n_neighbors >= 1
    ):
        raise ValueError(f"n_neighbors must be a positive integer, got {n_neighbors!r}.")
    if not (isinstance(epsilon, Real) and np.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a positive number, got {epsilon!r}.")
    # the kernel depends on distance ratios only: extreme units are scaled out (exactly, by a
    # power of two), the same way on both paths
    if sparse:
        G, sq, _ = sparse_gram(X)  # of X times a power of two (exact)
    else:
        X, _ = scaled_copy(X)
        sq = np.einsum("ij,ij->i", X, X)
        G = X @ X.T
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * G, 0.0)
    np.fill_diagonal(d2, 0.0)
    dist = np.sqrt(d2)
    k = min(int(n_neighbors), n)
    nearest = np.sort(dist, axis=1)[:, :k]
    sigma = epsilon * np.median(nearest, axis=1)
    sigma[sigma == 0] = 1.0
    K = np.exp(-((dist / sigma[:, None]) ** 2))  # the ratio first: no overflow of sigma**2
    return 0.5 * (K + K.T)


_AFFINITIES = {
    "cosine": cosine_affinity,
    "correlation": correlation_affinity,
    "gaussian": gaussian_affinity,
}


def affinity_matrix(X, metric="cosine", **params):
    """Affinity between the rows of X by name, precomputed, or callable.

    Parameters
    ----------
    X : array-like of shape (n_points, n_features) or (n_points, n_points)
        The data, or the affinity itself when ``metric="precomputed"``.
    metric : {"cosine", "correlation", "gaussian", "precomputed"} or callable
        A callable gets X and returns an (n_points, n_points) affinity.
    **params
        Passed to the affinity function.

    Returns
    -------
    affinity : ndarray of shape (n_points, n_points)
        Checked to be finite, symmetric and non-negative.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.metrics import affinity_matrix
    >>> affinity_matrix(np.eye(2), "cosine")
    array([[1., 0.],
           [0., 1.]])
    """
    if callable(metric):
        A = metric(X, **params)
    elif metric == "precomputed":
        A = X
    elif metric in _AFFINITIES:
        return _AFFINITIES[metric](X, **params)
    else:
        raise ValueError(
            f"Unknown affinity metric={metric!r}; expected one of {sorted(_AFFINITIES)}, "
            "'precomputed' or a callable."
        )
    return check_affinity(A)


def check_affinity(A, name="affinity"):
    """Validate a square, symmetric, non-negative, finite affinity matrix."""
    A = check_finite_array(A, name, ndim=2, min_rows=1)
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"{name} must be square, got shape {A.shape}.")
    if np.any(A < 0):
        raise ValueError(
            f"{name} must be non-negative; found {int(np.sum(A < 0))} negative entries."
        )
    if np.array_equal(A, A.T):  # the common case, and far cheaper than the tolerance test
        return A
    scale = float(np.abs(A).max()) or 1.0  # relative: affinities in any units
    if not np.allclose(A, A.T, rtol=1e-10, atol=1e-12 * scale):
        raise ValueError(f"{name} must be symmetric.")
    return A
