"""Tree builders on an affinity or a distance matrix: agglomerative linkage.

Every builder here takes the geometry of one axis (a dense distance matrix, a dense affinity,
or for some a sparse k-nearest-neighbour affinity) and returns a :class:`PartitionTree`, so
that the questionnaire can swap them (``tree_method``, :func:`build_tree` in
:mod:`skorg.trees._dispatch`); the two-rule and top-down builders are in
:mod:`skorg.trees._hybrid` and :mod:`skorg.trees._bisection`.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp

from .._validation import check_finite_array
from ._partition_tree import PartitionTree

__all__ = ["LINKAGE_METHODS", "TREE_METHODS", "hierarchical_tree"]

LINKAGE_METHODS = ("average", "complete", "single", "weighted", "ward")
TREE_METHODS = ("flexible", *LINKAGE_METHODS, "bisection", "hybrid")


# ---------------------------------------------------------------------------- geometry inputs
def _check_distances(distances, name="distances"):
    D = check_finite_array(distances, name, ndim=2, min_rows=1)
    if D.shape[0] != D.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {D.shape}.")
    if np.any(D < 0):
        raise ValueError(f"{name} must be non-negative; found {int(np.sum(D < 0))} negatives.")
    scale = max(float(D.max()), np.finfo(np.float64).tiny)
    if not np.allclose(D, D.T, rtol=1e-10, atol=1e-12 * scale):
        raise ValueError(f"{name} must be symmetric.")
    D = 0.5 * (D + D.T)
    np.fill_diagonal(D, 0.0)
    return D


def _affinity_distances(A):
    """Distances ``1 - A / max(A)`` off the diagonal (0 on it) of a dense affinity.

    Dividing by the largest entry makes the tree independent of the affinity's units; the map
    is decreasing, so single and complete linkage give the same tree as on any other
    decreasing transform of the affinity.
    """
    top = float(A.max())
    D = 1.0 - A / top if top > 0 else np.ones_like(A)
    np.clip(D, 0.0, None, out=D)
    np.fill_diagonal(D, 0.0)
    return D


def _geometry(distances, affinity):
    """(dense distances or None, affinity or None) from exactly one of the two."""
    from ..graphs import check_affinity, check_sparse_affinity

    if (distances is None) == (affinity is None):
        raise ValueError("pass exactly one of distances and affinity.")
    if distances is not None:
        if sp.issparse(distances):
            raise TypeError(
                "distances must be a dense matrix; pass a sparse k-NN graph as affinity."
            )
        return _check_distances(distances), None
    if sp.issparse(affinity):
        return None, check_sparse_affinity(affinity)
    return None, check_affinity(affinity)


def _check_n_components(n_components):
    """The number of diffusion coordinates of Ward on an affinity or distances: at least one
    (with none every point sits at the origin, and Ward's merges degenerate to a chain)."""
    if isinstance(n_components, bool) or not isinstance(n_components, Integral) or n_components < 1:
        raise ValueError(
            f"n_components must be a positive integer (the diffusion coordinates Ward links), "
            f"got {n_components!r}."
        )
    return int(n_components)


# ---------------------------------------------------------------------------- tree assembly
def _tree_from_parents(parent, order):
    """PartitionTree of a rooted tree given as a parent array.

    Nodes ``0 .. n-1`` are the points, the others internal; ``parent[root] == -1``; ``order``
    is a depth-first leaf order (every node's points contiguous). Leaves shallower than the
    deepest continue as one-child chains, as in :meth:`PartitionTree.from_linkage`.
    """
    n = order.shape[0]
    n_nodes = parent.shape[0]
    if n == 1:
        return PartitionTree([0], [[0]])
    pos = np.empty(n, dtype=np.intp)
    pos[order] = np.arange(n)
    first = np.full(n_nodes, n, dtype=np.intp)
    first[:n] = pos
    depth = np.full(n_nodes, -1, dtype=np.intp)
    root = int(np.flatnonzero(parent < 0)[0])
    depth[root] = 0
    # parents before children: walk up from each node until a known depth
    for node in range(n_nodes):
        path = []
        cur = node
        while depth[cur] < 0:
            path.append(cur)
            cur = parent[cur]
        d = depth[cur]
        for p in reversed(path):
            d += 1
            depth[p] = d
    for node in np.argsort(-depth, kind="stable"):  # deepest first: children before parents
        if parent[node] >= 0:
            first[parent[node]] = min(first[parent[node]], first[node])
    n_levels = int(depth[:n].max()) + 1
    bounds = []
    for lvl in range(n_levels - 1):
        members = np.flatnonzero(depth == lvl)
        chained = np.flatnonzero(depth[:n] < lvl)
        bounds.append(np.unique(np.concatenate([first[members], first[chained]])))
    bounds.append(np.arange(n))
    return PartitionTree(order, bounds)


def _merge_near_equal(parent, height, n, tolerance):
    """Fold every internal node into its parent when their heights are within
    ``tolerance`` times the parent's height (children of near-equal merges become siblings)."""
    parent = parent.copy()
    # top-down: the root has the largest id in a linkage, parents have larger ids
    for node in range(parent.shape[0] - 1, n - 1, -1):
        p = parent[node]
        if p < 0:
            continue
        if height[p] - height[node] <= tolerance * height[p]:
            kids = np.flatnonzero(parent == node)
            parent[kids] = p
            parent[node] = -2  # removed
    keep = np.flatnonzero(parent != -2)
    new_id = np.full(parent.shape[0], -1, dtype=np.intp)
    new_id[keep] = np.arange(keep.shape[0])
    out = parent[keep]
    out[out >= 0] = new_id[out[out >= 0]]
    return out


def _unit_scale(D):
    """D divided by the power of two nearest its largest entry: exact (every tie and every
    comparison kept), and units from 1e-150 to 1e150 give the same merges without overflow."""
    top = float(D.max())
    if top <= 0:
        return D
    return np.ldexp(D, -int(np.frexp(top)[1]))


def _linkage_parents(Z, n):
    parent = np.full(2 * n - 1, -1, dtype=np.intp)
    parent[Z[:, 0].astype(np.intp)] = np.arange(n, 2 * n - 1)
    parent[Z[:, 1].astype(np.intp)] = np.arange(n, 2 * n - 1)
    height = np.concatenate([np.zeros(n), Z[:, 2]])
    return parent, height


# ---------------------------------------------------------------------------- linkage trees
def hierarchical_tree(
    distances=None,
    *,
    affinity=None,
    points=None,
    method="average",
    merge_tolerance=None,
    optimal_ordering=True,
    n_components=8,
):
    """Agglomerative (linkage) tree of a distance matrix or an affinity.

    Parameters
    ----------
    distances : array-like of shape (n_points, n_points), optional
        Symmetric, non-negative (the diagonal is ignored), for example the questionnaire's
        tree EMD. Pass exactly one of ``distances`` and ``affinity``.
    affinity : array-like or sparse matrix of shape (n_points, n_points), optional
        Symmetric, non-negative. A dense affinity is read as the distances
        ``1 - A / max(A)``; a sparse k-nearest-neighbour affinity is supported by
        ``method="single"`` (its minimum spanning forest, with ``-log(A / max(A))`` as edge
        lengths; pieces the graph does not connect join last) and ``method="ward"``.
    points : array-like of shape (n_points, n_features), optional
        Points in Euclidean space (for example the questionnaire's tree-EMD features, or the
        slices of the data themselves): the tree links their Euclidean distances, and
        ``method="ward"`` is exact Ward. Pass exactly one of ``distances``, ``affinity`` and
        ``points``.
    method : {"average", "complete", "single", "weighted", "ward"}, default="average"
        The SciPy linkage rule. ``"ward"`` needs Euclidean points: given ``points`` it links
        them; otherwise it links the diffusion embedding of the affinity (of
        ``exp(-d / median d)`` when distances are given).
    merge_tolerance : float, optional
        None (default) keeps the binary tree. A number ``tol >= 0`` folds every merge into its
        parent merge when their heights differ by at most ``tol`` times the parent's height,
        which turns runs of near-equal merges into one multi-way folder (``0`` folds exact
        ties only).
    optimal_ordering : bool, default=True
        Order the leaves by Bar-Joseph's optimal leaf ordering on the distances (adjacent
        leaves close), which follows the tree: every folder stays contiguous. On a sparse
        affinity the ordering uses the distances of the dense path, ``1 - A / max(A)``
        (1 for pairs the graph leaves out), so the tree equals that of ``A.toarray()``,
        leaf order included; those are dense (n, n), checked against the memory budget
        (half the physical memory, or ``SKORG_MAX_MEMORY`` in MiB) before they are made.
    n_components : int, default=8
        Diffusion coordinates used by ``method="ward"`` on an affinity or distances (at
        least 1; capped at ``n_points - 1``).

    Returns
    -------
    tree : PartitionTree
        Binary unless ``merge_tolerance`` merged some folders. Its partitions are SciPy's
        (``scipy.cluster.hierarchy.linkage`` on the same distances, ties broken as SciPy
        breaks them).

    Notes
    -----
    Average linkage merges the two folders of smallest mean distance, single linkage of
    smallest minimum distance (the minimum spanning tree), complete linkage of smallest
    maximum distance, weighted linkage averages the two merged folders' distances (WPGMA),
    Ward the pair whose merge least increases the within-folder variance (Müllner 2011).

    On ``points``, Ward's cost of merging folders ``A`` and ``B``,
    ``|A| |B| / (|A| + |B|) ||mean_A - mean_B||^2``, is the energy of the Haar coefficient
    (over all features) that the merge creates on this axis: Ward greedily builds the tree
    whose Haar expansion of the points puts the least energy in the fine folders.

    References
    ----------
    D. Müllner, "Modern hierarchical, agglomerative clustering algorithms", arXiv:1109.2378,
    2011. Z. Bar-Joseph, D. Gifford, T. Jaakkola, "Fast optimal leaf ordering for
    hierarchical clustering", Bioinformatics 17, 2001.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import hierarchical_tree
    >>> x = np.array([0.0, 0.1, 0.2, 5.0, 5.1])
    >>> tree = hierarchical_tree(np.abs(np.subtract.outer(x, x)), method="average")
    >>> sorted(sorted(tree.folder(c).tolist()) for c in tree.children(0))
    [[0, 1, 2], [3, 4]]
    """
    from scipy.cluster.hierarchy import leaves_list

    if method not in LINKAGE_METHODS:
        raise ValueError(f"method must be one of {LINKAGE_METHODS}, got {method!r}.")
    if merge_tolerance is not None and not (
        isinstance(merge_tolerance, Real)
        and not isinstance(merge_tolerance, bool)
        and np.isfinite(merge_tolerance)
        and merge_tolerance >= 0
    ):
        raise ValueError(f"merge_tolerance must be None or a number >= 0, got {merge_tolerance!r}.")
    n_components = _check_n_components(n_components)
    if points is not None:
        if distances is not None or affinity is not None:
            raise ValueError("pass exactly one of distances, affinity and points.")
        P = _check_points(points)
        if P.shape[0] == 1:
            return PartitionTree([0], [[0]])
        Z = _points_linkage(P, method, optimal_ordering)
        n = P.shape[0]
    else:
        D, A = _geometry(distances, affinity)
        n = (D if D is not None else A).shape[0]
        if n == 1:
            return PartitionTree([0], [[0]])
        Z = _linkage_matrix(D, A, method, optimal_ordering, n_components)
    order = leaves_list(Z).astype(np.intp)
    parent, height = _linkage_parents(Z, n)
    if merge_tolerance is not None:
        parent = _merge_near_equal(parent, height, n, float(merge_tolerance))
    return _tree_from_parents(parent, order)


def _check_points(points):
    from .._validation import check_finite_array, scaled_copy

    P = check_finite_array(points, "points", ndim=2, min_rows=1)
    # exact power-of-two scaling: the squared distances can neither overflow nor underflow,
    # and the tree does not depend on the units of the points
    P, _ = scaled_copy(P, always=True)
    return np.ascontiguousarray(P)


def _points_linkage(P, method, optimal_ordering):
    """SciPy linkage matrix of the Euclidean distances between checked points."""
    from scipy.cluster.hierarchy import linkage, optimal_leaf_ordering
    from scipy.spatial.distance import pdist

    condensed = pdist(P)
    Z = linkage(condensed, method=method)  # on a condensed Euclidean matrix Ward is exact
    if optimal_ordering:
        top = float(condensed.max()) if condensed.size else 0.0
        Z = optimal_leaf_ordering(Z, condensed / top if top > 0 else condensed)
    return Z


def _linkage_matrix(D, A, method, optimal_ordering, n_components=8):
    """SciPy linkage matrix of checked distances D or affinity A (one of them None)."""
    from scipy.cluster.hierarchy import linkage, optimal_leaf_ordering
    from scipy.spatial.distance import squareform

    order_D = None  # the distances the leaves are ordered on (the dense path's)
    if A is not None and sp.issparse(A):
        if method not in ("single", "ward"):
            raise ValueError(
                f"method={method!r} needs a dense distance matrix or affinity; a sparse k-NN "
                "affinity supports method='single' and method='ward'."
            )
        if optimal_ordering:
            order_D = _sparse_order_distances(A)
        Z = _sparse_single_linkage(A) if method == "single" else None
    else:
        if D is None:
            D = _affinity_distances(A)
        order_D = D
        Z = None
    if method == "ward":
        Z = linkage(_ward_embedding(D, A, n_components), method="ward")
    elif Z is None:
        Z = linkage(squareform(_unit_scale(D), checks=False), method=method)
    if optimal_ordering:
        Z = optimal_leaf_ordering(Z, squareform(_unit_scale(order_D), checks=False))
    return Z


def _sparse_order_distances(A):
    """The distances ``1 - A / max(A)`` of the dense path on a sparse affinity (pairs the
    graph does not hold at distance 1), for the optimal leaf ordering: with them a sparse
    affinity gives the tree, leaf order included, of ``A.toarray()``. Dense (n, n), so
    checked against the memory budget first."""
    from .._validation import check_memory

    n = A.shape[0]
    check_memory(
        3 * n * n * 8,
        f"optimal_ordering=True on a sparse affinity of {n} points (the optimal leaf "
        "ordering needs the dense distances; pass optimal_ordering=False to keep the "
        "linkage's own leaf order)",
    )
    return _affinity_distances(A.toarray())


def _ward_embedding(D, A, n_components):
    from ..graphs import diffusion_eigenpairs

    if A is None:
        off = D[~np.eye(D.shape[0], dtype=bool)]
        med = float(np.median(off)) if off.size else 0.0
        A = np.exp(-D / med) if med > 0 else np.ones_like(D)
    if sp.issparse(A):
        from ..graphs import sparse_diffusion_eigenpairs

        psi, lam = sparse_diffusion_eigenpairs(A, min(n_components + 1, A.shape[0]))
    else:
        psi, lam = diffusion_eigenpairs(A, min(n_components + 1, A.shape[0]), check_input=False)
    if psi.shape[1] < 2:
        return np.zeros((A.shape[0], 1))
    return np.ascontiguousarray(psi[:, 1:] * lam[1:])


def _sparse_single_linkage(A):
    """Single linkage of a sparse affinity: Kruskal on ``-log(A / max A)``, pieces joined last."""
    from scipy.sparse.csgraph import minimum_spanning_tree

    A = sp.csr_matrix(A, dtype=np.float64)
    n = A.shape[0]
    top = float(A.max()) if A.nnz else 1.0
    U = sp.triu(A, k=1).tocoo()
    keep = U.data > 0
    w = -np.log(U.data[keep] / top)
    # a zero-length edge would vanish from the spanning tree: shift all lengths by one tiny step
    w = w + max(float(w.max()) if w.size else 1.0, 1.0) * 1e-12
    G = sp.csr_matrix((w, (U.row[keep], U.col[keep])), shape=(n, n))
    T = minimum_spanning_tree(G).tocoo()
    edges = sorted(zip(T.data.tolist(), T.row.tolist(), T.col.tolist()))
    gap = (max(w.max(), 1.0) if w.size else 1.0) * 2.0
    # union-find over the MST edges in increasing length, then join what is left
    root = list(range(n))
    cluster = list(range(n))
    size = [1] * n

    def find(i):
        while root[i] != i:
            root[i] = root[root[i]]
            i = root[i]
        return i

    rows = []
    for length, i, j in edges:
        a, b = find(i), find(j)
        ca, cb = cluster[a], cluster[b]
        root[b] = a
        size[a] += size[b]
        cluster[a] = n + len(rows)
        rows.append([min(ca, cb), max(ca, cb), length, size[a]])
    tops = sorted({find(i) for i in range(n)})
    while len(tops) > 1:
        a, b = tops[0], tops[1]
        ca, cb = cluster[a], cluster[b]
        root[b] = a
        size[a] += size[b]
        cluster[a] = n + len(rows)
        rows.append([min(ca, cb), max(ca, cb), gap, size[a]])
        tops = [a, *tops[2:]]
    return np.asarray(rows, dtype=np.float64)
