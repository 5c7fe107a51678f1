"""Uses of tree Haar sparsity: compression, denoising and the mixed Holder exponent."""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np

from .._validation import safe_norm
from ._haar import _check_array, _check_trees, haar_coefficient_info, haar_support
from ._haar_dispatch import _multi
from ._packets_multi import (
    inverse_multi_wavelet_packet_transform,
    multi_wavelet_packet_transform,
    resolve_bases,
)

__all__ = [
    "HaarApproximation",
    "HolderFit",
    "haar_compress",
    "haar_denoise",
    "mixed_holder_exponent",
]


@dataclass(frozen=True)
class HaarApproximation:
    """A reconstruction from a subset of (or shrunk) tree Haar coefficients.

    Attributes
    ----------
    X : ndarray
        The reconstruction, shape and dtype of the input.
    coefficients : ndarray
        The kept (or shrunk) coefficients; the others are 0.
    n_kept : int
        Number of non-zero coefficients.
    error : float
        Frobenius norm of ``input - X``.
    relative_error : float
        ``error / ||input||_2`` (0 for an all-zero input).
    threshold : float
        The threshold that was applied (the smallest kept magnitude for ``n_keep``).
    bases : list of WaveletPacketBasis or None, optional
        The wavelet packet basis of every axis when one was asked for (``basis``), the
        coefficients' basis; None for the tree Haar basis.
    """

    X: np.ndarray
    coefficients: np.ndarray
    n_kept: int
    error: float
    relative_error: float
    threshold: float
    bases: list | None = None


def _coefficients(X, trees, bases):
    if bases is None:
        return _multi(X, trees, "bfs", inverse=False).astype(np.float64, copy=False)
    return multi_wavelet_packet_transform(X, trees, bases).astype(np.float64, copy=False)


class HolderFit(NamedTuple):
    """Fit of ``|C| ~ constant * (support fraction) ** (1/2 + alpha)``."""

    alpha: float
    constant: float


def _scaling_mask(trees, shape, bases=None):
    """True on the coefficients that are psi_0 on every transformed axis (in a wavelet
    packet basis: the root average, entry (0, 0), where the basis has it)."""
    mask = np.ones(shape, dtype=bool)
    for ax, tree in enumerate(trees):
        if tree is not None:
            index = [slice(None)] * len(shape)
            if bases is None:
                index[ax] = slice(1, None)
            else:
                b = bases[ax]
                index[ax] = np.flatnonzero((b.levels != 0) | (b.positions != 0))
            mask[tuple(index)] = False
    return mask


def _finish(X, C_kept, trees, threshold, bases=None):
    if bases is None:
        X_hat = _multi(C_kept.astype(X.dtype, copy=False), trees, "bfs", inverse=True)
    else:
        X_hat = inverse_multi_wavelet_packet_transform(
            C_kept.astype(X.dtype, copy=False), trees, bases
        )
    with np.errstate(over="ignore"):
        error = safe_norm(X.astype(np.float64) - X_hat)
    norm = safe_norm(X)
    return HaarApproximation(
        X=X_hat,
        coefficients=C_kept,
        n_kept=int(np.count_nonzero(C_kept)),
        error=error,
        relative_error=error / norm if norm > 0 else 0.0,
        threshold=float(threshold),
        bases=bases,
    )


def haar_compress(X, trees, *, n_keep=None, fraction=None, threshold=None, basis=None):
    """Compress data by keeping its largest tree Haar coefficients.

    Give exactly one of ``n_keep``, ``fraction`` and ``threshold``.

    Parameters
    ----------
    X : array-like of shape (n_0, n_1, ...)
    trees : sequence of PartitionTree or None
        One per axis (``None`` leaves an axis untransformed).
    n_keep : int, optional
        Keep the ``n_keep`` coefficients of largest magnitude (ties: canonical order).
    fraction : float in (0, 1], optional
        Keep ``ceil(fraction * X.size)`` coefficients.
    threshold : float, optional
        Keep the coefficients with ``|C| > threshold`` (hard thresholding).
    basis : None, "best", str, WaveletPacketBasis or sequence, default=None
        The basis of the coefficients. None: the tree Haar basis (canonical order);
        ``"best"``: the best Haar-Walsh packet basis of X on every axis (l1 cost, see
        :func:`multi_best_wavelet_packet_basis`); ``"haar"``, ``"walsh"``, ``"delta"`` or
        a :class:`WaveletPacketBasis` for every axis; or one basis per axis.

    Returns
    -------
    approximation : HaarApproximation
        By Parseval, ``approximation.error`` equals the l2 norm of the dropped coefficients.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import haar_compress
    >>> X = np.outer(np.arange(8.0), np.ones(8))
    >>> approx = haar_compress(X, [dyadic_tree(8), dyadic_tree(8)], n_keep=8)
    >>> approx.n_kept, round(approx.error, 10)
    (8, 0.0)
    """
    X = _check_array(X)
    trees = _check_trees(trees, X)
    given = [v is not None for v in (n_keep, fraction, threshold)]
    if sum(given) != 1:
        raise ValueError("Give exactly one of n_keep, fraction and threshold.")
    bases = resolve_bases(X, trees, basis)
    C = _coefficients(X, trees, bases)
    mag = np.abs(C).ravel()
    if threshold is not None:
        if not isinstance(threshold, Real) or not threshold >= 0:
            raise ValueError(f"threshold must be a non-negative number, got {threshold!r}.")
        kept = np.where(np.abs(C) > threshold, C, 0.0)
        return _finish(X, kept, trees, threshold, bases)
    if fraction is not None:
        if not isinstance(fraction, Real) or not 0 < fraction <= 1:
            raise ValueError(f"fraction must be in (0, 1], got {fraction!r}.")
        n_keep = int(np.ceil(fraction * X.size))
    if not isinstance(n_keep, Integral) or isinstance(n_keep, bool) or n_keep < 0:
        raise ValueError(f"n_keep must be a non-negative integer, got {n_keep!r}.")
    n_keep = min(int(n_keep), mag.shape[0])
    keep = np.argsort(-mag, kind="stable")[:n_keep]
    kept = np.zeros(mag.shape[0])
    kept[keep] = C.ravel()[keep]
    smallest = float(mag[keep].min()) if n_keep else float("inf")
    return _finish(X, kept.reshape(C.shape), trees, smallest, bases)


def _noise_sigma(C, trees):
    """Median absolute deviation of the finest-scale coefficients, over 0.6745."""
    index = []
    for tree in trees:
        if tree is None:
            index.append(slice(None))
            continue
        info = haar_coefficient_info(tree)
        detail = info["rank"] >= 0
        if not detail.any():
            index.append(slice(None))
            continue
        finest = detail & (info["level"] == info["level"][detail].max())
        index.append(np.flatnonzero(finest))
    block = C[np.ix_(*[np.arange(n)[i] for n, i in zip(C.shape, index, strict=True)])]
    return float(np.median(np.abs(block))) / 0.6745


def haar_denoise(X, trees, *, threshold="universal", mode="soft", sigma=None, basis=None):
    """Denoise data by thresholding its tree Haar coefficients.

    Parameters
    ----------
    X : array-like of shape (n_0, n_1, ...)
    trees : sequence of PartitionTree or None
        One per axis (``None`` leaves an axis untransformed).
    threshold : "universal" or float, default="universal"
        ``"universal"``: Donoho and Johnstone's ``sigma * sqrt(2 log N)``, N = X.size.
    mode : {"soft", "hard"}, default="soft"
        Soft thresholding shrinks every coefficient by the threshold; hard keeps or zeros.
    sigma : float, optional
        The noise level; by default the median absolute value of the finest-scale tree
        Haar coefficients (finest detail level on every transformed axis) over 0.6745,
        whatever ``basis``.
    basis : None, "best", str, WaveletPacketBasis or sequence, default=None
        The basis whose coefficients are thresholded, as in :func:`haar_compress`
        (``"best"``: the best Haar-Walsh packet basis of the noisy X, Coifman and
        Wickerhauser's adapted denoising).

    Returns
    -------
    approximation : HaarApproximation
        ``error`` is the norm of the removed part, ``input - X``. The coefficients that are
        psi_0 (the root average) on every transformed axis are never thresholded.

    References
    ----------
    Donoho, Johnstone, "Ideal spatial adaptation by wavelet shrinkage", Biometrika (1994).

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import haar_denoise
    >>> X = np.ones((8, 8)) + 0.01 * np.random.default_rng(0).standard_normal((8, 8))
    >>> out = haar_denoise(X, [dyadic_tree(8), dyadic_tree(8)], sigma=0.01)
    >>> out.n_kept
    1
    """
    X = _check_array(X)
    trees = _check_trees(trees, X)
    if mode not in ("soft", "hard"):
        raise ValueError(f"mode must be 'soft' or 'hard', got {mode!r}.")
    bases = resolve_bases(X, trees, basis)
    C = _multi(X, trees, "bfs", inverse=False).astype(np.float64, copy=False)
    if sigma is None:
        sigma = _noise_sigma(C, trees)
    elif not isinstance(sigma, Real) or not sigma >= 0:
        raise ValueError(f"sigma must be a non-negative number, got {sigma!r}.")
    if isinstance(threshold, str):
        if threshold != "universal":
            raise ValueError(f"threshold must be 'universal' or a number, got {threshold!r}.")
        threshold = float(sigma) * np.sqrt(2.0 * np.log(max(C.size, 2)))
    elif not isinstance(threshold, Real) or not threshold >= 0:
        raise ValueError(
            f"threshold must be 'universal' or a non-negative number, got {threshold!r}."
        )
    if bases is not None:
        C = _coefficients(X, trees, bases)
    mag = np.abs(C)
    if mode == "soft":
        kept = np.sign(C) * np.maximum(mag - threshold, 0.0)
    else:
        kept = np.where(mag > threshold, C, 0.0)
    scaling = _scaling_mask(trees, C.shape, bases)
    kept[scaling] = C[scaling]
    return _finish(X, kept, trees, threshold, bases)


def mixed_holder_exponent(X, trees, *, method="max"):
    """Estimate the mixed Holder exponent of data on its trees.

    Data is mixed alpha-Holder on the trees when every tensor-Haar coefficient satisfies
    ``|C[a, b, ...]| <= K * (|supp a| |supp b| ... / (n_0 n_1 ...)) ** (1/2 + alpha)``.
    The exponent is estimated by least squares of ``log |C|`` on ``log`` of the support
    fraction; ``alpha`` is the slope minus 1/2.

    Parameters
    ----------
    X : array-like of shape (n_0, n_1, ...)
    trees : sequence of PartitionTree
        One per axis.
    method : {"max", "all"}, default="max"
        ``"max"``: regress the largest ``|C|`` of every distinct support fraction (the
        envelope that the bound describes); ``"all"``: regress every coefficient.

    Returns
    -------
    fit : HolderFit
        ``alpha`` and ``constant`` (K). Coefficients that are exactly 0 (relative to the
        largest) and the pure scaling coefficient are left out.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import mixed_holder_exponent
    >>> t = dyadic_tree(16)
    >>> X = np.add.outer(np.linspace(0, 1, 16), np.linspace(0, 1, 16))
    >>> round(mixed_holder_exponent(X, [t, t]).alpha, 3)
    1.0
    """
    X = _check_array(X)
    trees = _check_trees(trees, X, allow_none=False)
    if method not in ("max", "all"):
        raise ValueError(f"method must be 'max' or 'all', got {method!r}.")
    C = np.abs(_multi(X, trees, "bfs", inverse=False).astype(np.float64, copy=False))
    frac = np.ones((), dtype=np.float64)
    for tree in trees:
        frac = np.multiply.outer(frac, haar_support(tree) / tree.n_points)
    keep = ~_scaling_mask(trees, C.shape)
    keep &= C > 1e-12 * max(float(C.max()), np.finfo(np.float64).tiny)
    c, f = C[keep], frac[keep]
    if method == "max":
        f, inverse = np.unique(f, return_inverse=True)
        top = np.zeros(f.shape[0])
        np.maximum.at(top, inverse, c)
        c = top
    if np.unique(f).shape[0] < 2:
        raise ValueError(
            "The Holder fit needs non-zero coefficients on at least two support sizes; "
            "X is too close to constant on these trees."
        )
    slope, intercept = np.polyfit(np.log(f), np.log(c), 1)
    return HolderFit(alpha=float(slope - 0.5), constant=float(np.exp(intercept)))
