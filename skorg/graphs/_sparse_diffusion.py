"""Diffusion eigenpairs of a sparse affinity (the k-nearest-neighbour path)."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh

from ._diffusion import _AFFINITY_FLOOR, _DEGREE_EPS, _fix_signs, diffusion_eigenpairs

__all__ = ["sparse_diffusion_eigenpairs"]

# Below this size, or when few points remain per eigenpair, the dense solver is used.
_DENSE_MAX = 512


def check_sparse_affinity(A):
    if not sp.issparse(A):
        from .._validation import check_finite_array

        A = sp.csr_matrix(check_finite_array(A, "affinity", ndim=2, min_rows=1))
    # a copy: the caller's matrix is never edited (the floor below works in place)
    A = sp.csr_matrix(A, dtype=np.float64, copy=True)
    A.sum_duplicates()
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] < 1:
        raise ValueError(f"affinity must be a non-empty square matrix, got shape {A.shape}.")
    if not np.all(np.isfinite(A.data)):
        raise ValueError("affinity contains NaN or infinite values; expected finite numbers.")
    if np.any(A.data < 0):
        raise ValueError("affinity must be non-negative.")
    diff = abs(A - A.T)
    scale = float(abs(A).max()) if A.nnz else 1.0
    if diff.nnz and float(diff.max()) > 1e-10 * scale:
        raise ValueError("affinity must be symmetric.")
    return A


def sparse_diffusion_eigenpairs(affinity, n_eigs=12, *, density_normalize=True, tol=1e-10):
    """Diffusion eigenpairs of a sparse affinity: :func:`diffusion_eigenpairs` without a dense
    matrix.

    Parameters
    ----------
    affinity : sparse matrix or array-like of shape (n_points, n_points)
        Symmetric and non-negative; never modified. As in the dense function it is divided
        by its largest entry, entries at or below 1e-8 are dropped and a point with no
        affinity left gets a self-loop.
    n_eigs : int, default=12
        Eigenpairs, the trivial one included.
    density_normalize : bool, default=True
    tol : float, default=1e-10
        Relative accuracy of ARPACK's eigenvalues.

    Returns
    -------
    psi : ndarray of shape (n_points, n_eigs)
    eigenvalues : ndarray of shape (n_eigs,)
        ``|lambda|``, non-increasing, ``eigenvalues[0] == 1`` (the ``by_magnitude`` convention
        of the flexible tree).

    Notes
    -----
    The same normalization as the dense path, in sparse arithmetic: ``S = Q^{-1/2} A Q^{-1/2}``
    after ``A / (r r^T)``. The eigenvalue-1 space is known in closed form (``q`` restricted to
    each connected component); it is deflated through a ``LinearOperator`` and ARPACK's
    Lanczos iteration (``eigsh``, fixed start vector) finds the next eigenpairs of largest
    magnitude. Each product costs O(nnz). A disconnected graph's further eigenvalue-1 vectors
    are its component indicators, orthogonalized against the first. Small graphs go to the
    dense solver, so both paths agree exactly there.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from skorg.metrics import diffusion_eigenpairs, sparse_diffusion_eigenpairs
    >>> A = np.exp(-np.subtract.outer(np.arange(5.0), np.arange(5.0)) ** 2)
    >>> psi, lam = sparse_diffusion_eigenpairs(sp.csr_matrix(A), 3)
    >>> bool(np.allclose(psi, diffusion_eigenpairs(A, 3)[0]))
    True
    """
    A = check_sparse_affinity(affinity)
    n = A.shape[0]
    if isinstance(n_eigs, bool) or not isinstance(n_eigs, Integral) or n_eigs < 1:
        raise ValueError(f"n_eigs must be a positive integer, got {n_eigs!r}.")
    if isinstance(tol, bool) or not isinstance(tol, Real) or not (np.isfinite(tol) and tol >= 0):
        raise ValueError(f"tol must be a finite non-negative number, got {tol!r}.")
    k = min(int(n_eigs), n)
    if n <= _DENSE_MAX or 3 * k >= n:
        return diffusion_eigenpairs(
            A.toarray(), k, density_normalize=density_normalize, check_input=False
        )
    top = float(A.data.max()) if A.nnz else 0.0
    if top > 0.0 and top != 1.0:
        A.data /= top  # relative floor and epsilons, as in the dense path
    A.data[A.data <= _AFFINITY_FLOOR] = 0.0
    A.eliminate_zeros()
    isolated = np.asarray(A.sum(axis=1)).ravel() == 0
    if isolated.any():
        A = A + sp.diags(isolated.astype(np.float64), format="csr")
    if density_normalize:
        r = np.asarray(A.sum(axis=1)).ravel() + _DEGREE_EPS
        A = sp.diags(1.0 / r) @ A @ sp.diags(1.0 / r)
    q = np.sqrt(np.asarray(A.sum(axis=1)).ravel()) + _DEGREE_EPS
    S = sp.csr_matrix(sp.diags(1.0 / q) @ A @ sp.diags(1.0 / q))
    v0 = q / np.linalg.norm(q)
    n_comp, comp = connected_components(S, directed=False)
    # the eigenvalue-1 space: q on each component (components by first point)
    U = np.zeros((n, n_comp))
    U[np.arange(n), comp] = q
    U /= np.linalg.norm(U, axis=0)
    extra = U[:, 1:] - np.outer(v0, v0 @ U[:, 1:])
    extra = np.linalg.qr(extra)[0] if n_comp > 1 else extra
    extra = extra[:, : k - 1]
    vals, vecs = [np.ones(1 + extra.shape[1])], [v0[:, None], extra]
    m = k - 1 - extra.shape[1]
    if m > 0:

        def matvec(x):
            x = np.asarray(x).reshape(n, -1)
            return S @ x - U @ (U.T @ x)

        op = LinearOperator((n, n), matvec=matvec, matmat=matvec, dtype=np.float64)
        start = np.random.default_rng(0).standard_normal(n)
        ncv = min(n - 1, max(2 * m + 1, 32))
        try:
            sub_vals, sub_vecs = eigsh(op, k=m, which="LM", v0=start, tol=tol, ncv=ncv)
        except ArpackNoConvergence as exc:
            sub_vals, sub_vecs = exc.eigenvalues, exc.eigenvectors
            if sub_vals.shape[0] < m:
                raise
        order = np.argsort(-np.abs(sub_vals), kind="stable")
        vals.append(np.abs(sub_vals[order]))
        vecs.append(sub_vecs[:, order])
    psi = np.hstack(vecs) / v0[:, None]
    psi[:, 0] = 1.0
    _fix_signs(psi)
    return psi, np.concatenate(vals)
