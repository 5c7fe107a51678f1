"""The l1 entropy of tree Haar coefficients (the sparsity measure of organized data)."""

from __future__ import annotations

from numbers import Integral

import numpy as np

from .._validation import safe_norm, scale_rows
from ._haar import _check_array, _check_trees, haar_support
from ._haar_dispatch import _multi
from ._packets_multi import basis_support, multi_wavelet_packet_transform, resolve_bases

__all__ = ["l1_entropy"]

_SELECTIONS = ("all", "support", "coarsest")


def _support_tensor(trees, shape, bases=None):
    """Support size of every tensor-product basis vector, shape ``shape`` (``bases``: the
    wavelet packet basis of each tree, None for the tree Haar bases)."""
    out = np.ones((), dtype=np.float64)
    bases = [None] * len(trees) if bases is None else bases
    for tree, n, basis in zip(trees, shape, bases, strict=True):
        if tree is None:
            s = np.ones(n)
        elif basis is None:
            s = haar_support(tree).astype(np.float64)
        else:
            s = basis_support(tree, basis).astype(np.float64)
        out = np.multiply.outer(out, s)
    return out


def _default_block(k, shape):
    side = max(1, round(k ** (1.0 / len(shape))))
    return tuple(min(side, n) for n in shape)


def _check_block(block, shape):
    block = tuple(int(b) for b in np.atleast_1d(block))
    if len(block) != len(shape) or any(b < 1 for b in block):
        raise ValueError(
            f"shape must hold one positive block size per transformed axis ({len(shape)}), "
            f"got {block}."
        )
    return tuple(min(b, n) for b, n in zip(block, shape, strict=True))


def _largest_support(trees, shape, k, bases=None):
    """Flat indices of the k largest-support coefficients (None: all of them)."""
    flat = _support_tensor(trees, shape, bases).ravel()
    if k >= flat.shape[0]:
        return None
    # largest support first; a stable sort keeps the canonical (row-major) order among ties
    return np.argsort(-flat, kind="stable")[:k]


def _entropy_one(C, selection, keep, block):
    if selection == "coarsest":
        return float(np.abs(C[tuple(slice(0, b) for b in block)]).sum())
    if selection == "support" and keep is not None:
        return float(np.abs(C.ravel()[keep]).sum())
    return float(np.abs(C).sum())


def l1_entropy(X, trees, *, selection="all", k=400, shape=None, normalize=False, basis=None):
    """l1 entropy of the multi-tree Haar coefficients of data.

    The paper's sparsity measure of an organized matrix or tensor: the sum of the absolute
    values of (a chosen set of) the coefficients of X in the tensor-product Haar basis of
    the trees. Smaller is sparser.

    Parameters
    ----------
    X : array-like of shape (n_0, n_1, ...)
        The data (not its coefficients), 2-D or N-D.
    trees : sequence of PartitionTree or None
        One per axis of X. ``None`` marks a batch axis: the entropy is computed separately
        for every index along it (for example the head axis of a query x key x head
        tensor), and the result has the shape of the batch axes.
    selection : {"all", "support", "coarsest"}, default="all"
        - ``"all"``: every coefficient;
        - ``"support"``: the ``k`` coefficients whose basis tensors have the largest
          support (product of the per-axis supports), ties broken by the canonical order
          (row-major over the per-axis coefficient orders); the paper's "400
          largest-support coefficients". With 3 trees this is the network (tri-Haar)
          entropy;
        - ``"coarsest"``: the block of the first ``shape`` coefficients of each axis in
          canonical order, what the paper's code summed (20 x 20 per head).
    k : int, default=400
        Number of coefficients for ``"support"``; it also sets the default block of
        ``"coarsest"``. When ``k`` exceeds the number of coefficients all are used.
    shape : tuple of int, optional
        The block ``(p, q, ...)`` of ``"coarsest"``, one size per tree (batch axes
        excluded); sizes larger than an axis are clipped. Default: ``round(k ** (1 / d))``
        on each of the ``d`` transformed axes, so ``(20, 20)`` for ``k=400`` in 2-D.
    normalize : bool, default=False
        Divide by the Frobenius norm ``||X||_2`` (of each batch entry), so that inputs of
        different scale compare; an all-zero input has entropy 0.
    basis : None, "best", str, WaveletPacketBasis or sequence, default=None
        The basis of the coefficients. None: the tree Haar basis (canonical order);
        ``"best"``: the best Haar-Walsh packet basis of X on every tree's axis (l1 cost,
        summed over the batch, see :func:`multi_best_wavelet_packet_basis`);
        ``"haar"``, ``"walsh"``, ``"delta"`` or a :class:`WaveletPacketBasis` for every
        tree; or one per axis (None on batch axes). ``"support"`` then counts the region
        of every packet vector, ``"coarsest"`` takes the first entries in the basis's order.

    Returns
    -------
    entropy : float or ndarray
        A float, or an array of the shape of the batch axes.

    See Also
    --------
    multi_haar_transform, haar_support

    Notes
    -----
    With coefficients ``C = X x_1 H_1^T x_2 H_2^T ...`` the entropy is
    ``sum_{a in S} |C[a]|`` over the selected set ``S``. By Parseval
    ``||C||_2 = ||X||_2``, so the normalized ``"all"`` entropy lies between 1 and
    ``sqrt(X.size)``. The released network entropy code of [1]_ has index errors; here it
    is defined as the l1 norm of the ``k`` tri-Haar coefficients of largest support.

    References
    ----------
    .. [1] Fasina, Pohle, Su, Coifman, "Intrinsic and Extrinsic Organized Attention:
       Softmax Invariance and Network Sparsity", arXiv 2506.15541 (2025).

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import dyadic_tree
    >>> from skorg.transforms import l1_entropy
    >>> X = np.ones((4, 4))
    >>> l1_entropy(X, [dyadic_tree(4), dyadic_tree(4)])
    4.0
    >>> l1_entropy(X, [dyadic_tree(4), dyadic_tree(4)], normalize=True)
    1.0
    """
    X = _check_array(X)
    trees = _check_trees(trees, X)
    if selection not in _SELECTIONS:
        raise ValueError(f"selection must be one of {_SELECTIONS}, got {selection!r}.")
    if not isinstance(k, Integral) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}.")
    tree_axes = [ax for ax, t in enumerate(trees) if t is not None]
    if not tree_axes:
        raise ValueError("trees must hold at least one PartitionTree (None marks batch axes).")
    batch_axes = [ax for ax, t in enumerate(trees) if t is None]
    tree_shape = tuple(X.shape[ax] for ax in tree_axes)
    block = _default_block(k, tree_shape) if shape is None else _check_block(shape, tree_shape)

    if not isinstance(normalize, (bool, np.bool_)):
        raise TypeError(f"normalize must be True or False, got {normalize!r}.")
    front = list(range(len(batch_axes)))
    if normalize:
        # the normalized entropy of a batch entry does not change when the entry is scaled:
        # extreme entries are scaled (exactly) so that the norms cannot overflow
        Xb = np.moveaxis(X, batch_axes, front)
        moved = Xb.shape
        Xb = scale_rows(Xb.reshape(int(np.prod(moved[: len(front)], dtype=np.int64)), -1))
        X = np.moveaxis(Xb.reshape(moved), front, batch_axes)
    bases = resolve_bases(X, trees, basis)
    if bases is None:
        C = _multi(X, trees, "bfs", inverse=False)
    else:
        C = multi_wavelet_packet_transform(X, trees, bases)
    # batch axes first, transformed axes last
    C = np.moveaxis(C, batch_axes, front)
    Xb = np.moveaxis(X, batch_axes, front)
    batch_shape = C.shape[: len(batch_axes)]
    C = C.reshape((-1, *tree_shape)).astype(np.float64, copy=False)
    Xb = Xb.reshape(C.shape[0], -1)
    keep = None
    if selection == "support":
        keep = _largest_support(
            [trees[ax] for ax in tree_axes],
            tree_shape,
            int(k),
            None if bases is None else [bases[ax] for ax in tree_axes],
        )
    out = np.empty(C.shape[0], dtype=np.float64)
    for i in range(C.shape[0]):
        value = _entropy_one(C[i], selection, keep, block)
        if normalize:
            norm = safe_norm(Xb[i])
            value = value / norm if norm > 0 else 0.0
        out[i] = value
    if not batch_axes:
        return float(out[0])
    return out.reshape(batch_shape)
