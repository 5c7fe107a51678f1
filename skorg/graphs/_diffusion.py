"""Markov eigenpairs and the diffusion embedding of an affinity matrix."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from scipy.linalg import eigh
from scipy.sparse.linalg import ArpackNoConvergence, eigsh

from .._blas import serial_blas
from .._kernels._flexible import deflate_symmetrize, divide_by_outer
from ._affinity import check_affinity

__all__ = ["diffusion_eigenpairs", "diffusion_embedding"]

# Affinities below this (relative to the largest affinity) are treated as absent (the
# original drops them too, on affinities whose largest value is 1).
_AFFINITY_FLOOR = 1e-8
_DEGREE_EPS = 1e-15


def _unit_max(A):
    """A divided by its largest entry (when that is not already 1).

    The Markov operator does not change when the affinity is multiplied by a constant;
    dividing first makes the floor and the degree epsilon relative, so an affinity in any
    units (1e-30 or 1e30) gives the same eigenpairs.
    """
    m = float(A.max()) if A.size else 0.0
    if m > 0.0 and m != 1.0:
        return A / m
    return A


def _symmetric_markov(A, density_normalize):
    """The symmetric conjugate S of the Markov matrix, and sqrt of its degrees.

    Works in one new array (large temporaries cost page faults, more than the arithmetic).
    """
    A = _unit_max(A)
    A = np.where(A > _AFFINITY_FLOOR, A, 0.0)
    isolated = A.sum(axis=1) == 0
    if isolated.any():
        # a point with no affinity at all becomes its own component
        A[isolated, isolated] = 1.0
    if density_normalize:
        divide_by_outer(A, A.sum(axis=1) + _DEGREE_EPS)
    q = np.sqrt(A.sum(axis=1)) + _DEGREE_EPS
    divide_by_outer(A, q)
    return A, q


def diffusion_eigenpairs(
    affinity, n_eigs=12, *, density_normalize=True, by_magnitude=True, check_input=True
):
    """Right eigenvectors of the diffusion (Markov) operator of an affinity.

    Parameters
    ----------
    affinity : array-like of shape (n_points, n_points)
        Symmetric, non-negative. The affinity is divided by its largest entry
        (the result does not depend on its units); entries at or below 1e-8
        are then dropped, and a point with no affinity left is given a
        self-loop (its own component).
    n_eigs : int, default=12
        Number of eigenpairs, the trivial one included (capped at n_points).
    density_normalize : bool, default=True
        Coifman-Lafon alpha = 1 normalization ``A / (d d^T)`` first.
    by_magnitude : bool, default=True
        Keep the eigenvalues of largest ``|lambda|`` and return ``|lambda|``
        (what the original's singular value solver does); otherwise the
        largest signed eigenvalues.
    check_input : bool, default=True

    Returns
    -------
    psi : ndarray of shape (n_points, n_eigs)
        ``psi[:, 0]`` is constant 1; signs are fixed so that the first entry
        of every column that is not (numerically) zero is positive.
    eigenvalues : ndarray of shape (n_eigs,)
        Non-increasing; ``eigenvalues[0] == 1``.

    Notes
    -----
    With ``S = D^{-1/2} A D^{-1/2}`` the top eigenvector is known in closed
    form (``D^{1/2} 1``); it is deflated before the eigensolver, so that a
    graph that falls apart (several eigenvalues equal to 1) still gives finite
    coordinates ``psi_k = v_k / v_0``. Above 128 points ARPACK (Lanczos, fixed
    start vector, full tolerance) is used unless it finds a second eigenvalue
    within 1e-6 of 1 (a graph in pieces); the rest use dense LAPACK.

    References
    ----------
    R. R. Coifman and S. Lafon, "Diffusion maps", ACHA 21 (2006).

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.metrics import diffusion_eigenpairs
    >>> A = np.exp(-np.subtract.outer(np.arange(5.0), np.arange(5.0)) ** 2)
    >>> psi, lam = diffusion_eigenpairs(A, 3)
    >>> psi[:, 0], lam[0].round(12)
    (array([1., 1., 1., 1., 1.]), np.float64(1.0))
    """
    A = check_affinity(affinity) if check_input else np.asarray(affinity, dtype=np.float64)
    n = A.shape[0]
    if isinstance(n_eigs, bool) or not isinstance(n_eigs, Integral) or n_eigs < 1:
        raise ValueError(f"n_eigs must be a positive integer, got {n_eigs!r}.")
    k = min(int(n_eigs), n)
    S, q = _symmetric_markov(A, density_normalize)
    v0 = q / np.linalg.norm(q)
    vals = np.ones(1)
    vecs = v0[:, None]
    if k > 1:
        deflate_symmetrize(S, v0)  # S - v0 v0^T, symmetrized, in place
        sub_vals, sub_vecs = _leading_eigenpairs_serial(S, k - 1, by_magnitude, v0)
        vals = np.concatenate([vals, np.abs(sub_vals) if by_magnitude else sub_vals])
        vecs = np.hstack([vecs, sub_vecs])
    psi = vecs / v0[:, None]
    psi[:, 0] = 1.0
    _fix_signs(psi)
    return psi, vals


# Up to this size the eigensolver runs on one BLAS thread: its matrix-vector products are too
# small to share, and waking BLAS threads on busy cores costs milliseconds per product. The
# results are bit-identical to the threaded ones.
_SERIAL_BLAS_MAX = 2048


def _leading_eigenpairs_serial(M, m, by_magnitude, v0):
    if M.shape[0] > _SERIAL_BLAS_MAX:
        return _leading_eigenpairs(M, m, by_magnitude, v0)
    with serial_blas():
        return _leading_eigenpairs(M, m, by_magnitude, v0)


# Below this size a full dense eigendecomposition is cheapest and simplest.
_DENSE_MAX = 128
# A second eigenvalue this close to 1 is treated as a graph in several pieces.
_DEGENERATE_GAP = 1e-6


def _leading_eigenpairs(M, m, by_magnitude, v0):
    """The m eigenpairs of the symmetric M of largest |lambda| (or largest lambda).

    ARPACK (Lanczos) with a fixed start vector is used for large matrices. M
    has the trivial eigenvector deflated, so a remaining eigenvalue of 1 means
    the graph falls apart (a degenerate eigenvalue, which Lanczos resolves
    poorly): that case, small matrices and the rare non-convergence go to
    dense LAPACK.
    """
    n = M.shape[0]
    if n > _DENSE_MAX and m < n // 3:
        start = np.random.default_rng(0).standard_normal(n)
        try:
            vals, vecs = eigsh(
                M,
                k=m,
                which="LM" if by_magnitude else "LA",
                v0=start,
                tol=0.0,
                ncv=min(n, max(2 * m + 1, 24)),
            )
        except ArpackNoConvergence:
            pass
        else:
            if np.max(np.abs(vals)) < 1.0 - _DEGENERATE_GAP:
                return _sorted_pairs(vals, vecs, by_magnitude, m, v0)
    if by_magnitude and n > 2 * m + 1:
        lo_vals, lo_vecs = eigh(M, subset_by_index=[0, m - 1], driver="evx")
        hi_vals, hi_vecs = eigh(M, subset_by_index=[n - m, n - 1], driver="evx")
        vals, vecs = np.concatenate([lo_vals, hi_vals]), np.hstack([lo_vecs, hi_vecs])
    elif not by_magnitude and n > m + 1:
        vals, vecs = eigh(M, subset_by_index=[n - m, n - 1], driver="evx")
    else:
        vals, vecs = eigh(M)
    return _sorted_pairs(vals, vecs, by_magnitude, m, v0)


def _sorted_pairs(vals, vecs, by_magnitude, m, v0):
    # the deflated direction (eigenvalue 0 now) must not come back as a coordinate
    keep = np.abs(v0 @ vecs) <= 0.5
    vals, vecs = vals[keep], vecs[:, keep]
    key = np.abs(vals) if by_magnitude else vals
    pick = np.argsort(-key, kind="stable")[:m]
    return vals[pick], vecs[:, pick]


def _fix_signs(psi):
    """Flip columns so that their first clearly non-zero entry is positive."""
    for col in range(1, psi.shape[1]):
        v = psi[:, col]
        tol = 1e-12 * max(float(np.abs(v).max()), 1e-300)
        nz = np.flatnonzero(np.abs(v) > tol)
        if nz.size and v[nz[0]] < 0:
            psi[:, col] = -v


def diffusion_embedding(
    affinity, n_components=2, *, diffusion_time=1.0, density_normalize=True, by_magnitude=False
):
    """Diffusion coordinates ``psi_k * lambda_k ** t`` for k = 1..n_components.

    Parameters
    ----------
    affinity : array-like of shape (n_points, n_points)
        Symmetric and non-negative.
    n_components : int, default=2
        Number of non-trivial coordinates.
    diffusion_time : float, default=1.0
    density_normalize : bool, default=True
    by_magnitude : bool, default=False
        Rank eigenvalues by ``|lambda|`` (as the flexible tree does) rather
        than by signed value (the usual diffusion map).

    Returns
    -------
    embedding : ndarray of shape (n_points, n_components)
    eigenvalues : ndarray of shape (n_components,)

    Notes
    -----
    These are the eigenvectors of the *largest* eigenvalues of the Markov
    operator; the original code plotted those of the smallest, which is a bug.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.metrics import diffusion_embedding
    >>> A = np.exp(-np.subtract.outer(np.arange(6.0), np.arange(6.0)) ** 2 / 4)
    >>> emb, lam = diffusion_embedding(A, 1)
    >>> bool(np.all(np.diff(emb[:, 0]) < 0) or np.all(np.diff(emb[:, 0]) > 0))
    True
    """
    if isinstance(n_components, bool) or not isinstance(n_components, Integral) or n_components < 1:
        raise ValueError(f"n_components must be a positive integer, got {n_components!r}.")
    if (
        isinstance(diffusion_time, bool)
        or not isinstance(diffusion_time, Real)
        or not np.isfinite(diffusion_time)
        or diffusion_time < 0
    ):
        raise ValueError(
            f"diffusion_time must be a finite non-negative number, got {diffusion_time!r}."
        )
    psi, lam = diffusion_eigenpairs(
        affinity,
        n_components + 1,
        density_normalize=density_normalize,
        by_magnitude=by_magnitude,
    )
    lam_t = np.sign(lam[1:]) * np.abs(lam[1:]) ** diffusion_time
    return psi[:, 1:] * lam_t, lam[1:]
