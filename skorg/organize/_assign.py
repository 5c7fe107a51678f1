"""Out-of-sample assignment: place new slices into a fitted tree without refitting."""

from __future__ import annotations

from numbers import Integral

import numpy as np

from .._validation import check_finite_array, check_tree_for_axis

__all__ = ["assign_to_tree"]


def assign_to_tree(
    tree, X_train, X_new, other_trees, *, axis=0, alphas=0.0, betas=1.0, n_neighbors=1,
    n_jobs=None,
):  # fmt: skip
    """Folder of every new slice at every level of a fitted tree, by tree EMD.

    Parameters
    ----------
    tree : PartitionTree
        The fitted tree of ``axis`` (on the slices of ``X_train``).
    X_train : array-like of shape (n_0, ..., n_{d-1})
        The training data the trees were fitted on.
    X_new : array-like
        New slices: same shape as ``X_train`` except along ``axis``.
    other_trees : sequence of PartitionTree
        The fitted trees of the other axes: one per axis with None at ``axis``, or one per
        other axis (e.g. ``org.trees_[1:]`` for the rows of a matrix).
    axis : int, default=0
    alphas, betas : float or sequence of float, default=0.0 and 1.0
        Tree EMD weights, as in the fit.
    n_neighbors : int, default=1
        Training slices that vote.
    n_jobs : int, optional
        Threads of the search.

    Returns
    -------
    labels : ndarray of shape (n_new, tree.n_levels)
        ``labels[i, l]`` is the folder of new slice i at level l, numbered as
        ``tree.labels(l)`` numbers them.

    Notes
    -----
    The tree EMD to every training slice is the L1 distance between their
    :func:`~skorg.metrics.tree_emd_embedding` rows, found by exact nearest-neighbour search.
    The assignment descends from the root: at each level, among the children of the current
    folder, it takes the one holding the largest total weight ``1 / d`` of the
    ``n_neighbors`` nearest training slices still inside the current folder (a slice at
    distance 0 outweighs every other; ties go to the leftmost child). So a slice equal to a
    training slice lands in that slice's own folder at every level (unless several training
    slices are equal), which the rule "nearest folder mean" does not guarantee.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.organize import assign_to_tree
    >>> from skorg.trees import dyadic_tree
    >>> X = np.array([[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [5.1, 5.0]])
    >>> assign_to_tree(dyadic_tree(4), X, np.array([[4.9, 5.0]]), [dyadic_tree(2)])
    array([[0, 1, 2]])
    """
    from sklearn.neighbors import NearestNeighbors

    from ..metrics import tree_emd_embedding

    X_train = check_finite_array(X_train, "X_train", min_ndim=2, min_rows=1, dtype=None)
    X_new = check_finite_array(X_new, "X_new", min_ndim=2, min_rows=1, dtype=None)
    ndim = X_train.ndim
    if isinstance(axis, bool) or not isinstance(axis, Integral) or not -ndim <= axis < ndim:
        raise ValueError(f"axis must be an integer in [-{ndim}, {ndim}), got {axis!r}.")
    axis = int(axis) % ndim
    rest = lambda shape: shape[:axis] + shape[axis + 1 :]  # noqa: E731
    if X_new.ndim != ndim or rest(X_new.shape) != rest(X_train.shape):
        raise ValueError(
            f"X_new must have shape {rest(X_train.shape)} apart from axis {axis}, like X_train; "
            f"got {X_new.shape}."
        )
    check_tree_for_axis(tree, X_train.shape[axis], "tree", f"entries along axis {axis}")
    if isinstance(n_neighbors, bool) or not isinstance(n_neighbors, Integral) or n_neighbors < 1:
        raise ValueError(f"n_neighbors must be a positive integer, got {n_neighbors!r}.")
    others = list(other_trees)
    if len(others) == ndim - 1:
        others.insert(axis, None)
    emb = dict(axis=axis, alphas=alphas, betas=betas, dtype=np.float64, n_jobs=n_jobs)
    F_train = tree_emd_embedding(X_train, others, **emb)
    F_new = tree_emd_embedding(X_new, others, **emb)
    k = min(int(n_neighbors), F_train.shape[0])
    nn = NearestNeighbors(n_neighbors=k, metric="manhattan", algorithm="brute", n_jobs=n_jobs)
    dist, idx = nn.fit(F_train).kneighbors(F_new)
    return _descend(tree, dist, idx)


def _descend(tree, dist, idx):
    n_new = idx.shape[0]
    position = tree.leaf_position[idx]  # neighbours as positions in the leaf order
    zero = dist <= 0
    # an exact copy of a training slice decides alone; otherwise inverse-distance votes
    weight = np.where(zero.any(axis=1, keepdims=True), zero, 1.0 / np.maximum(dist, 1e-300))
    labels = np.zeros((n_new, tree.n_levels), dtype=np.intp)
    for i in range(n_new):
        node = 0
        for level in range(1, tree.n_levels):
            kids = tree.children(node)
            inside = (position[i] >= tree.start[node]) & (position[i] < tree.end[node])
            votes = [
                weight[
                    i, inside & (position[i] >= tree.start[c]) & (position[i] < tree.end[c])
                ].sum()
                for c in kids
            ]
            node = int(kids[int(np.argmax(votes))])
            labels[i, level] = node - tree.level_ptr[level]
    return labels
