"""Landmark (Nystrom) diffusion eigenpairs: the dense kernel's geometry in O(m L) memory."""

from __future__ import annotations

from numbers import Integral

import numpy as np
from scipy.linalg import eigh, qr

from .._kernels import _sparse as _k
from .._validation import check_finite_array
from ._diffusion import _DEGREE_EPS, _fix_signs

__all__ = ["landmark_diffusion_eigenpairs"]


def choose_landmarks(n, n_landmarks, rng):
    """Sorted random subset of ``min(n, n_landmarks)`` points."""
    return np.sort(rng.choice(n, size=min(n, n_landmarks), replace=False)).astype(np.intp)


def cosine_columns(X, landmarks, *, kind="cosine", threshold=0.0, absolute=False):
    """Columns ``A[:, landmarks]`` of :func:`cosine_affinity` (or correlation), float64."""
    U = np.asarray(X, dtype=np.float64)
    if kind == "correlation":
        U = U - U.mean(axis=1, keepdims=True)
    norms = np.sqrt(np.einsum("ij,ij->i", U, U))
    U = U / np.where(norms > 0, norms, 1.0)[:, None]
    C = np.clip(U @ U[landmarks].T, -1.0, 1.0)
    if absolute:
        np.abs(C, out=C)
    if threshold is not None:
        C[C < threshold] = 0.0
    C[landmarks, np.arange(landmarks.shape[0])] = 1.0
    return C


def l1_kernel_columns(F, landmarks, scale):
    """Columns ``exp(-||F_i - F_l||_1 / scale)`` of the dual affinity, float64."""
    C = _k.cross_l1(F, np.ascontiguousarray(F[landmarks]))
    C /= -scale
    np.exp(C, out=C)
    return C


def landmark_diffusion_eigenpairs(C, landmarks, n_eigs=12, *, density_normalize=True):
    """Diffusion eigenpairs of the Nystrom extension of a kernel from some of its columns.

    Parameters
    ----------
    C : ndarray of shape (n_points, n_landmarks)
        The kernel's columns at the landmarks, ``C = K[:, landmarks]``.
    landmarks : ndarray of int, shape (n_landmarks,)
        Distinct point indices.
    n_eigs : int, default=12
    density_normalize : bool, default=True

    Returns
    -------
    psi : ndarray of shape (n_points, n_eigs)
    eigenvalues : ndarray of shape (n_eigs,)
        ``|lambda|``, non-increasing, ``eigenvalues[0] == 1``.

    Notes
    -----
    ``K ~ C W^+ C^T`` with ``W = C[landmarks]`` (the Nystrom approximation; eigenvalues of W
    below 1e-10 of the largest are dropped). Every step of :func:`diffusion_eigenpairs` is
    applied to this factored kernel: degrees ``r = C W^+ C^T 1``, ``C <- C / r``, degrees
    ``q^2`` of the result, ``S = B W^+ B^T`` with ``B = C / q``. Because the degrees come from
    the factored kernel itself, ``q`` is exactly its top eigenvector (eigenvalue 1), so the
    same deflation applies; the others are the eigenpairs of the small matrix
    ``R diag(W^+, -1) R^T`` from a thin QR ``[B, v_0] = Q R``. Cost O(m L^2), memory O(m L).
    A kernel of wide bandwidth (the dual affinity's ``epsilon * median``, the cosine) is
    numerically of low rank, which is where the approximation is accurate.

    References
    ----------
    C. Fowlkes, S. Belongie, F. Chung, J. Malik, "Spectral grouping using the Nystrom
    method", IEEE TPAMI 26 (2004).

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.metrics import diffusion_eigenpairs, landmark_diffusion_eigenpairs
    >>> x = np.arange(6.0)
    >>> A = np.exp(-np.subtract.outer(x, x) ** 2 / 8)
    >>> psi, lam = landmark_diffusion_eigenpairs(A, np.arange(6), 3)  # every point a landmark
    >>> bool(np.allclose(lam, diffusion_eigenpairs(A, 3)[1]))
    True
    """
    C = check_finite_array(C, "C", ndim=2, min_rows=1)
    if np.any(C < 0):
        raise ValueError("C must be non-negative (columns of an affinity kernel).")
    top = float(C.max())
    if top > 0.0 and top != 1.0:
        C = C / top  # the operator does not change with the kernel's units; epsilons relative
    n, L = C.shape
    landmarks = np.asarray(landmarks)
    if landmarks.shape != (L,):
        raise ValueError(f"landmarks must have shape ({L},), got {landmarks.shape}.")
    if landmarks.dtype.kind not in "iu":
        if (
            landmarks.dtype.kind != "f"
            or not np.all(np.isfinite(landmarks))
            or np.any(landmarks != np.round(landmarks))
        ):
            raise TypeError(f"landmarks must hold integer indices, got dtype {landmarks.dtype}.")
    landmarks = landmarks.astype(np.intp)
    if np.any(landmarks < 0) or np.any(landmarks >= n):
        raise ValueError(f"landmarks must be point indices in [0, {n}), got {landmarks.tolist()}.")
    if np.unique(landmarks).shape[0] != L:
        raise ValueError("landmarks must be distinct point indices; some are repeated.")
    if isinstance(n_eigs, bool) or not isinstance(n_eigs, Integral) or n_eigs < 1:
        raise ValueError(f"n_eigs must be a positive integer, got {n_eigs!r}.")
    k = min(int(n_eigs), n, L + 1)
    W = C[landmarks]
    mu, V = eigh(0.5 * (W + W.T))
    keep = np.abs(mu) > 1e-10 * np.abs(mu).max()
    Vk = V[:, keep]
    winv = Vk @ (Vk / mu[keep]).T
    ones = np.ones(n)

    def degrees(B):
        return np.maximum(B @ (winv @ (B.T @ ones)), _DEGREE_EPS)

    if density_normalize:
        C = C / (degrees(C) + _DEGREE_EPS)[:, None]
    q = np.sqrt(degrees(C)) + _DEGREE_EPS
    B = C / q[:, None]
    v0 = q / np.linalg.norm(q)
    Q, R = qr(np.hstack([B, v0[:, None]]), mode="economic")
    core = np.zeros((L + 1, L + 1))
    core[:L, :L] = winv
    core[L, L] = -1.0
    small = R @ core @ R.T
    vals, vecs = eigh(0.5 * (small + small.T))
    vecs = Q @ vecs
    good = np.abs(v0 @ vecs) <= 0.5  # the deflated direction must not come back
    vals, vecs = vals[good], vecs[:, good]
    pick = np.argsort(-np.abs(vals), kind="stable")[: k - 1]
    psi = np.hstack([v0[:, None], vecs[:, pick]]) / v0[:, None]
    psi[:, 0] = 1.0
    _fix_signs(psi)
    return psi, np.concatenate([[1.0], np.abs(vals[pick])])
