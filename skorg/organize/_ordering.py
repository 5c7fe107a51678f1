"""Leaf-ordering strategies: from trees and learned distances to one order per axis."""

from __future__ import annotations

import numpy as np
from scipy.cluster.hierarchy import leaves_list, linkage, optimal_leaf_ordering
from scipy.spatial.distance import squareform

from .._validation import check_finite_array, pow2_scale

__all__ = ["ORDERINGS", "leaf_order"]

ORDERINGS = ("tree", "tree_olo", "emd_olo", "smoothest")

# "smoothest": a slice counts as small below this fraction of the slices' mean squared norm
# (its second difference is then measured against that floor, not against its own size):
# near-blank slices, such as an image's border rows, still weigh, and all-zero ones are not
# 0 / 0. Orders were the same from 0.003 to 0.1 on the benchmark of kinds (images and real
# series); 1 measures every second difference against the mean size (the plain sum).
_SMALL_SLICE = 0.03
# "smoothest": the longest run of neighbours the polish reverses (short, and at most an eighth
# of the axis: it mends local order and cannot make the long jumps that fold a series back on
# itself; on the benchmark's shuffled matrices it brought the stress from 1.127 to 1.026)
_POLISH_WINDOW = 8
# "smoothest" orders distances rounded to this many bits (ties that only rounding breaks
# are ties whatever the units)
_ROUND_BITS = 40
# "smoothest": average linkage's optimal leaf ordering replaces single linkage's where its
# relative second differences are lower by more than this fraction. On the benchmark of kinds
# (18 real series, images, shuffled matrices) every fraction from 0.2 to 0.47 gave the same
# orders: stock indices 0.768 -> 0.971, the rest unchanged; from 0.1 down, average linkage
# also took axes whose order it did not find (CO2 weeks, hours of the day, five stocks)
_AVERAGE_MARGIN = 0.3
# relative difference below which two scores count as equal (the earlier candidate wins)
_TIE = 1e-9


def leaf_order(tree, distances=None, strategy="emd_olo", *, slices=None):
    """Order the points of one axis.

    Parameters
    ----------
    tree : PartitionTree
        The axis tree (its leaf order is the ``"tree"`` strategy).
    distances : ndarray of shape (n_points, n_points), optional
        The learned distances of the axis (tree EMD). Needed by the
        ``"tree_olo"`` and ``"emd_olo"`` strategies; without them the tree
        order is returned.
    strategy : {"tree", "tree_olo", "emd_olo", "smoothest"}
        - ``"tree"``: the flexible tree's depth-first order (children by
          decreasing mean of the first diffusion eigenvector; the original
          rule).
        - ``"tree_olo"``: the same tree, with subtrees flipped by optimal
          leaf ordering (multi-way folders binarized as chains) to minimize
          the distance between neighbouring leaves; the order follows the
          tree's folders.
        - ``"emd_olo"``: single-linkage clustering of the learned distances
          with Bar-Joseph's optimal leaf ordering (SciPy); the order need
          not follow the tree's folders. Single linkage follows a 1-D chain
          of neighbours, which is what an ordering recovers; on shuffled
          smooth matrices it beat average and complete linkage on the same
          distances (see ``examples/plot_organize_shuffled_matrix.py``).
        - ``"smoothest"``: single-linkage optimal leaf orderings in four
          geometries (the tree EMD; the Euclidean, cosine and correlation
          distances between the slices), of which the one along which the
          slices are smoothest to second order (see Notes); average linkage's
          best of the first two geometries instead where it is smoother by
          more than 30%; then polished by
          reversing runs of at most 8 neighbours (and an eighth of the axis)
          wherever that shortens the path (the sum of squared Euclidean
          distances between neighbours). Needs ``slices``.
    slices : array-like or sparse matrix of shape (n_points, n_features), optional
        The points as vectors (for an axis of a matrix or tensor, its slices,
        unfolded), for ``"smoothest"``.

    Returns
    -------
    order : ndarray of shape (n_points,)

    Notes
    -----
    The distances are divided by their largest value (a power of two, so exactly) before
    SciPy's optimal leaf ordering, whose results stop being optimal for distances above
    about 1e8 or below about 1e-200: the order does not depend on the units of the data.

    ``"smoothest"`` scores an order :math:`o` of the slices :math:`x_i` by its relative
    second differences,

    .. math:: \\sum_k \\frac{\\|x_{o_{k-1}} - 2 x_{o_k} + x_{o_{k+1}}\\|^2}
              {q_{o_{k-1}} + 4 q_{o_k} + q_{o_{k+1}}}, \\qquad
              q_i = \\|x_i\\|^2 + c \\, \\overline{\\|x\\|^2}, \\; c = 0.03:

    how badly each slice is predicted by the mean of its two neighbours, against the size of
    the three. A path that folds a series back on itself (an axis whose slices go out and
    come back, such as the months of a yearly cycle, or the rows of images that are blank at
    both borders) is short, since it steps between slices of equal level, but it is not
    smooth: its neighbours come from the two branches, and their differences do not cancel.
    The shortest path, which the single-linkage orderings approximate, is the seriation
    criterion of Hamiltonian path length (Hahsler, Hornik and Buchta 2008); a second-order
    criterion is that of smoothing splines, which penalize the squared second differences.
    The cosine and correlation geometries see the shape of the slices whatever their size,
    which tells apart slices of equal size (two borders, two months of equal mean); the
    criterion, in the slices' own units, decides which geometry's order holds.

    References
    ----------
    Hahsler, M., Hornik, K. and Buchta, C. (2008). Getting things in order: an
    introduction to the R package seriation. *Journal of Statistical Software* 25(3).

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.organize import leaf_order
    >>> from skorg.trees import dyadic_tree
    >>> x = np.array([0.0, 3.0, 1.0, 2.0])
    >>> leaf_order(dyadic_tree(4), np.abs(np.subtract.outer(x, x)) * 1e9).tolist()
    [1, 3, 2, 0]
    """
    from .._validation import check_tree_for_axis
    from ..trees import PartitionTree

    if not isinstance(strategy, str) or strategy not in ORDERINGS:
        raise ValueError(f"Unknown ordering strategy={strategy!r}; expected one of {ORDERINGS}.")
    if not isinstance(tree, PartitionTree):
        raise TypeError(f"tree must be a skorg.trees.PartitionTree, got {type(tree).__name__}.")
    if distances is not None:
        distances = check_finite_array(distances, "distances", ndim=2, min_rows=1)
        if distances.shape[0] != distances.shape[1]:
            raise ValueError(f"distances must be square, got shape {distances.shape}.")
        check_tree_for_axis(tree, distances.shape[0], "tree", "points in distances")
        if np.any(distances < 0):
            raise ValueError("distances must be non-negative.")
    if strategy == "smoothest":
        if slices is None:
            raise ValueError('strategy="smoothest" needs the slices (slices=...).')
        slices = _check_slices(slices, tree.n_points)
    if strategy == "tree" or distances is None or tree.n_points < 3:
        return np.asarray(tree.leaf_order).copy()
    if strategy == "smoothest":
        slices = slices * pow2_scale(slices, always=True)
        return _smoothest_order(tree, distances, _slice_euclidean(slices), slices)
    if strategy == "emd_olo":
        return _optimal_leaf_order(distances)
    return _tree_optimal_order(tree, distances)


def _unit_distances(distances):
    """Symmetrized distances with largest value in [0.5, 1) (exact power-of-two scaling)."""
    d = np.asarray(distances, dtype=np.float64)
    d = d * pow2_scale(d, always=True)
    d = 0.5 * (d + d.T)
    np.fill_diagonal(d, 0.0)
    return d


def _optimal_leaf_order(distances, method="single"):
    d = _unit_distances(distances)
    condensed = squareform(d, checks=False)
    Z = linkage(condensed, method=method)
    Z = optimal_leaf_ordering(Z, condensed)
    return leaves_list(Z).astype(np.intp)


def _tree_optimal_order(tree, distances):
    """Optimal leaf ordering restricted to the tree's folders.

    Every multi-way folder is binarized as a left-leaning chain of its
    children (in the tree's order), then Bar-Joseph's optimal leaf ordering
    flips subtrees to minimize the sum of distances between neighbouring
    leaves. Every folder stays contiguous.
    """
    d = _unit_distances(distances)
    n = tree.n_points
    cluster = np.full(tree.n_nodes, -1, dtype=np.intp)
    leaves = tree.level_nodes(tree.n_levels - 1)
    cluster[leaves] = tree.leaf_order[tree.start[leaves]]
    rows = []
    top = tree.n_levels - 1
    for node in range(tree.n_nodes - 1, -1, -1):
        kids = tree.children(node)
        if kids.shape[0] == 0:
            continue
        current = cluster[kids[0]]
        m = kids.shape[0]
        for k, child in enumerate(kids[1:], start=1):
            # heights grow with the level and along the chain, so the linkage is monotone
            height = (top - tree.level[node]) + 0.5 * k / m
            size = tree.end[kids[k]] - tree.start[kids[0]]
            rows.append([current, cluster[child], height, size])
            current = n + len(rows) - 1
        cluster[node] = current
    Z = np.asarray(rows, dtype=np.float64)
    Z = optimal_leaf_ordering(Z, squareform(d, checks=False))
    return leaves_list(Z).astype(np.intp)


# ------------------------------------------------------------------------------ "smoothest"
def _check_slices(slices, n_points):
    import scipy.sparse as sp

    if sp.issparse(slices):
        S = sp.csr_matrix(slices, dtype=np.float64)
        if not np.all(np.isfinite(S.data)):
            raise ValueError("slices must be finite.")
    else:
        S = check_finite_array(slices, "slices", ndim=2, min_rows=1)
    if S.shape[0] != n_points:
        raise ValueError(
            f"slices must have one row per point of the tree ({n_points}), got {S.shape[0]}."
        )
    return S


def _norms_and_sums(slices):
    """The squared norm and the sum of every slice (dense or sparse)."""
    import scipy.sparse as sp

    if sp.issparse(slices):
        squares = np.asarray(slices.multiply(slices).sum(axis=1)).ravel()
        return squares, np.asarray(slices.sum(axis=1)).ravel()
    S = np.asarray(slices, dtype=np.float64)
    return np.einsum("ij,ij->i", S, S), S.sum(axis=1)


def _slice_euclidean(slices):
    from ._steps import _euclidean_distances

    return _euclidean_distances(slices)


def _angular_distances(G):
    """``sqrt(2 - 2 cos)`` between the vectors of Gram matrix G (the Euclidean distance of
    the normalized vectors); a zero vector is at sqrt(2) from every other one."""
    norms = np.sqrt(np.maximum(np.diag(G), 0.0))
    norms[norms == 0] = 1.0
    cos = np.clip(G / norms[:, None] / norms[None, :], -1.0, 1.0)
    D = np.sqrt(np.maximum(2.0 - 2.0 * cos, 0.0))
    D = 0.5 * (D + D.T)
    np.fill_diagonal(D, 0.0)
    return D


def _second_difference_score(sq, squares, order):
    """The relative second differences of the slices along ``order`` (see leaf_order's
    Notes), from their squared distances ``sq`` and squared norms: ``||a - 2b + c||^2 =
    2 ||a - b||^2 + 2 ||b - c||^2 - ||a - c||^2``."""
    floor = _SMALL_SLICE * float(squares.mean())
    a, b, c = order[:-2], order[1:-1], order[2:]
    num = 2 * sq[a, b] + 2 * sq[b, c] - sq[a, c]
    den = squares[a] + 4 * squares[b] + squares[c] + 6 * floor
    safe = np.where(den > 0, den, 1.0)
    return float(np.sum(np.where(den > 0, np.maximum(num, 0.0) / safe, 0.0)))


def _polish(order, sq, window=_POLISH_WINDOW):
    """Reverse runs of 2 to ``window`` neighbours wherever that shortens the path in ``sq``
    (squared distances), many non-overlapping runs per round (the largest gains first),
    until no reversal shortens it by more than rounding."""
    o = np.asarray(order, dtype=np.intp).copy()
    n = o.shape[0]
    if min(window, n - 1) < 2:
        return o
    for _ in range(n):
        gains, starts, lengths = [], [], []
        for length in range(2, min(window, n - 1) + 1):
            i = np.arange(0, n - length + 1)
            first, last = o[i], o[i + length - 1]
            old = np.zeros(i.shape[0])
            new = np.zeros(i.shape[0])
            left = i > 0
            old[left] += sq[o[i[left] - 1], first[left]]
            new[left] += sq[o[i[left] - 1], last[left]]
            right = i + length < n
            old[right] += sq[last[right], o[i[right] + length]]
            new[right] += sq[first[right], o[i[right] + length]]
            keep = old - new > _TIE * old
            gains.append((old - new)[keep])
            starts.append(i[keep])
            lengths.append(np.full(int(keep.sum()), length))
        gain = np.concatenate(gains)
        if gain.shape[0] == 0:
            break
        start, length = np.concatenate(starts), np.concatenate(lengths)
        used = np.zeros(n + 2, dtype=bool)  # positions -1 .. n, shifted by one
        for k in np.lexsort((length, start, -gain)):  # largest gain first, then leftmost
            lo, hi = start[k], start[k] + length[k]  # reversed: o[lo:hi]; edges lo-1, hi-1
            if used[lo : hi + 2].any():
                continue
            used[lo : hi + 2] = True
            o[lo:hi] = o[lo:hi][::-1].copy()
    return o


def _rounded_optimal_leaf_order(distances, method="single"):
    """:func:`_optimal_leaf_order` of the distances rounded to 40 bits (of the largest):
    distances equal but for their last bits, as the same data in other units gives, tie
    in the same way, so the order does not depend on the units."""
    return _optimal_leaf_order(_rounded(distances), method)


def _rounded(distances):
    """Symmetric distances, largest in [0.5, 1), rounded to ``_ROUND_BITS`` bits."""
    return np.round(np.ldexp(_unit_distances(distances), _ROUND_BITS)) / 2.0**_ROUND_BITS


def _smoothest_candidate(geometries, method, sq, squares):
    """Of the optimal leaf orderings of ``method`` linkage in every geometry, the one of
    least relative second differences (the earlier one on a tie) and its score."""
    best, best_score = None, np.inf
    for D in geometries:
        order = _rounded_optimal_leaf_order(D, method)
        score = _second_difference_score(sq, squares, order)
        if best is None or score < best_score * (1 - _TIE):
            best, best_score = order, score
    return best, best_score


def _smoothest_order(tree, distances, euclid, slices):
    """The ``"smoothest"`` strategy (see :func:`leaf_order`); ``euclid``: the Euclidean
    distances between the slices (their Gram matrix follows from these and the norms)."""
    scale = pow2_scale(slices, always=True)  # exact: the same for slices and distances
    squares, sums = _norms_and_sums(slices * scale)
    sq = np.square(np.asarray(euclid, dtype=np.float64) * scale)
    G = 0.5 * (squares[:, None] + squares[None, :] - sq)
    centered = G - np.outer(sums, sums) / max(slices.shape[1], 1)
    geometries = (distances, euclid, _angular_distances(G), _angular_distances(centered))
    order, score = _smoothest_candidate(geometries, "single", sq, squares)
    # average linkage's order only where it is clearly smoother: single linkage follows
    # chains of neighbours, which is what an order is, but it chains across a trajectory
    # that comes back near itself (a few series side by side, such as stock indices). Of
    # the size geometries only (tree EMD, Euclidean): with the angular ones too the orders
    # of the benchmark of kinds were the same, and their average-linkage trees can take
    # optimal leaf ordering seconds (2.4 s at 1000 points, against 0.1-0.4 s)
    other, other_score = _smoothest_candidate(geometries[:2], "average", sq, squares)
    if other_score < score * (1 - _AVERAGE_MARGIN):
        order = other
    # runs of at most an eighth of the axis: on a short axis a longer reversal is a fold
    window = min(_POLISH_WINDOW, tree.n_points // 8)
    return _polish(order, _rounded(euclid) ** 2, window)
