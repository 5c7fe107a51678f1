"""Separable Haar-Walsh wavelet packets: a basis on every axis of a matrix or tensor, and
the ``basis`` argument of the tree Haar tools (compression, entropy, denoising, score)."""

from __future__ import annotations

import numpy as np

from ._haar import _check_data, _check_trees
from ._packet_basis import WaveletPacketBasis, check_basis
from ._packet_core import _rows, _search
from ._packet_plan import get_packet_plan
from ._packets import (
    _KINDS,
    _resolve_basis,
    best_wavelet_packet_basis,
    inverse_wavelet_packet_transform,
    wavelet_packet_basis,
    wavelet_packet_transform,
)

__all__ = [
    "inverse_multi_wavelet_packet_transform",
    "multi_best_wavelet_packet_basis",
    "multi_wavelet_packet_transform",
]

_METHODS = ("alternate", "independent")


def _check_bases(bases, trees, name="bases"):
    if isinstance(bases, (str, WaveletPacketBasis)):
        bases = [None if t is None else bases for t in trees]
    if not isinstance(bases, (list, tuple)):
        raise TypeError(
            f"{name} must be a WaveletPacketBasis, a basis name or a list of them (one per "
            f"axis), got {type(bases).__name__}."
        )
    bases = list(bases)
    if len(bases) != len(trees):
        raise ValueError(f"Expected one basis per axis ({len(trees)}), got {len(bases)}.")
    out = []
    for ax, (tree, basis) in enumerate(zip(trees, bases)):
        if tree is None:
            out.append(None)
            continue
        if basis is None:
            raise ValueError(f"{name}[{ax}] is None but axis {ax} has a tree.")
        out.append(_resolve_basis(tree, basis))
    return out


def multi_wavelet_packet_transform(X, trees, bases):
    """Wavelet packet coefficients along several axes: a basis on each axis (separable).

    Parameters
    ----------
    X : array-like of shape (n_0, n_1, ...)
    trees : sequence of PartitionTree or None
        One entry per axis; ``None`` leaves that axis as it is.
    bases : sequence of WaveletPacketBasis or str, or one of them for every axis
        The basis of each axis with a tree, e.g. from :func:`multi_best_wavelet_packet_basis`.

    Returns
    -------
    C : ndarray of the shape of X

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import multi_wavelet_packet_transform
    >>> trees = [dyadic_tree(2), dyadic_tree(4)]
    >>> C = multi_wavelet_packet_transform(np.ones((2, 4)), trees, "haar")
    >>> C.round(6)[0]
    array([2.828427, 0.      , 0.      , 0.      ])
    """
    X, _ = _check_data(X)
    trees = _check_trees(trees, X)
    bases = _check_bases(bases, trees)
    for ax, (tree, basis) in enumerate(zip(trees, bases)):
        if tree is not None:
            X = wavelet_packet_transform(X, tree, basis, axis=ax)
    return X


def inverse_multi_wavelet_packet_transform(C, trees, bases):
    """Inverse of :func:`multi_wavelet_packet_transform`.

    Parameters
    ----------
    C : array-like of shape (n_0, n_1, ...)
    trees : sequence of PartitionTree or None
    bases : sequence of WaveletPacketBasis or str, or one of them for every axis

    Returns
    -------
    X : ndarray of the shape of C

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import inverse_multi_wavelet_packet_transform
    >>> C = np.zeros((2, 2)); C[0, 0] = 2.0
    >>> inverse_multi_wavelet_packet_transform(C, [dyadic_tree(2)] * 2, "walsh")
    array([[1., 1.],
           [1., 1.]])
    """
    C, _ = _check_data(C, "C")
    trees = _check_trees(trees, C)
    bases = _check_bases(bases, trees)
    for ax, (tree, basis) in enumerate(zip(trees, bases)):
        if tree is not None:
            C = inverse_wavelet_packet_transform(C, tree, basis, axis=ax)
    return C


def multi_best_wavelet_packet_basis(
    X, trees, *, cost="l1", direction="both", method="alternate", max_sweeps=1
):
    """The best wavelet packet basis of every axis of a matrix or tensor (separable).

    Parameters
    ----------
    X : array-like of shape (n_0, n_1, ...)
    trees : sequence of PartitionTree or None
    cost, direction
        As in :func:`best_wavelet_packet_basis`.
    method : {"alternate", "independent"}, default="alternate"
        ``"independent"``: the basis of axis ``a`` is the best for the vectors of X along
        that axis, their costs summed, every axis on its own (Irion and Saito's choice for
        matrices [1]_). ``"alternate"``: the cost of the whole tensor of coefficients is
        minimized one axis at a time, starting from the tree Haar basis on every axis:
        axis ``a`` gets the best basis for X transformed along the other axes in their
        current bases, and sweeps repeat until no basis changes (or ``max_sweeps``). Each
        step keeps the current basis when nothing is cheaper, so with ``direction`` "both"
        or "fine-to-coarse" the cost is never above that of the tensor Haar basis (which
        the independent choice does not promise).
    max_sweeps : int, default=1
        The most sweeps over the axes of ``"alternate"``. Every sweep can only lower the
        cost; one sweep (the default) adapts each axis to the bases already chosen on the
        others (the Haar basis for those not yet visited), and costs one search and one
        transform per axis, about twice the independent choice.

    Returns
    -------
    bases : list of WaveletPacketBasis or None
        One per axis (``None`` where the tree is ``None``); ``cost`` of each: the cost of
        the whole coefficient tensor when that basis was chosen (``"alternate"``), or of X
        along its axis (``"independent"``).

    References
    ----------
    .. [1] Irion, Saito, "Learning sparsity and structure of matrices with multiscale graph
       basis dictionaries", IEEE MLSP 2016.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import multi_best_wavelet_packet_basis
    >>> bases = multi_best_wavelet_packet_basis(np.ones((4, 4)), [dyadic_tree(4)] * 2)
    >>> [round(b.cost, 6) for b in bases]
    [4.0, 4.0]
    """
    X, _ = _check_data(X)
    trees = _check_trees(trees, X)
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}.")
    if isinstance(max_sweeps, bool) or not isinstance(max_sweeps, (int, np.integer)):
        raise TypeError(f"max_sweeps must be a positive integer, got {max_sweeps!r}.")
    if max_sweeps < 1:
        raise ValueError(f"max_sweeps must be a positive integer, got {max_sweeps!r}.")
    axes = [ax for ax, tree in enumerate(trees) if tree is not None]
    if method == "independent" or len(axes) < 2:
        return [
            None
            if tree is None
            else best_wavelet_packet_basis(X, tree, axis=ax, cost=cost, direction=direction)
            for ax, tree in enumerate(trees)
        ]
    bases = [None if t is None else wavelet_packet_basis(t, "haar") for t in trees]
    for _ in range(int(max_sweeps)):
        changed = False
        for ax in axes:
            Y = X
            for other in axes:
                if other != ax:
                    Y = wavelet_packet_transform(Y, trees[other], bases[other], axis=other)
            plan = get_packet_plan(trees[ax])
            # the current basis stays unless the search finds a cheaper one: no cycling
            found = _search(_rows(Y, plan, ax), plan, cost, direction, incumbent=bases[ax])
            changed = changed or found != bases[ax]
            bases[ax] = found
        if not changed:
            break
    return bases


# ---------------------------------------------------------------------- for the Haar tools
def resolve_bases(X, trees, basis, name="basis"):
    """The per-axis bases a Haar tool's ``basis`` argument asks for on (checked) X and trees:
    None for the tree Haar basis (the tools' own path), ``"best"`` for the separable best
    basis of X (l1), a name or a basis for every axis, or one entry per axis."""
    if basis is None:
        return None
    if isinstance(basis, str) and basis == "best":
        return multi_best_wavelet_packet_basis(X, trees)
    if isinstance(basis, str) and basis not in _KINDS:
        raise ValueError(
            f"{name} must be None, 'best', one of {_KINDS}, a WaveletPacketBasis or one per "
            f"axis, got {basis!r}."
        )
    bases = _check_bases(basis, trees, name)
    for ax, (tree, b) in enumerate(zip(trees, bases)):
        if tree is not None:
            check_basis(get_packet_plan(tree), b, f"{name}[{ax}]")
    return bases


def basis_support(tree, basis):
    """The number of points where each vector of ``basis`` (in its order) is non-zero."""
    plan = get_packet_plan(tree)
    entry = (basis.levels, basis.positions)
    region = plan.region_of[entry]
    starts = np.concatenate(plan.region_start)
    ends = np.concatenate(plan.region_end)
    offset = np.cumsum([0] + [r.shape[0] for r in plan.region_start])[basis.levels]
    return (ends[offset + region] - starts[offset + region]).astype(np.intp)
