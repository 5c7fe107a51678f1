"""Tree builders on an affinity or a distance matrix: agglomerative linkage and bisection.

Every builder here takes the geometry of one axis (a dense distance matrix, a dense affinity,
or for some a sparse k-nearest-neighbour affinity) and returns a :class:`PartitionTree`, so
that the questionnaire can swap them (``tree_method``).
"""

from __future__ import annotations

from numbers import Real

import numpy as np
import scipy.sparse as sp

from .._validation import check_finite_array
from ._partition_tree import PartitionTree

__all__ = ["TREE_METHODS", "bisection_tree", "build_tree", "hierarchical_tree", "hybrid_tree"]

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
        leaves close), which follows the tree: every folder stays contiguous.
    n_components : int, default=8
        Diffusion coordinates used by ``method="ward"``.

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

    n = (D if D is not None else A).shape[0]
    if A is not None and sp.issparse(A):
        if method == "single":
            Z = _sparse_single_linkage(A)
            D = None
        elif method == "ward":
            Z = None
        else:
            raise ValueError(
                f"method={method!r} needs a dense distance matrix or affinity; a sparse k-NN "
                "affinity supports method='single' and method='ward'."
            )
    else:
        if D is None:
            D = _affinity_distances(A)
        Z = None
    if method == "ward":
        E = _ward_embedding(D, A, n_components)
        Z = linkage(E, method="ward")
        if optimal_ordering and D is None and n <= 4096:
            from scipy.spatial.distance import pdist

            Z = optimal_leaf_ordering(Z, pdist(E))
    elif Z is None:
        Z = linkage(squareform(_unit_scale(D), checks=False), method=method)
    if optimal_ordering and D is not None:
        Z = optimal_leaf_ordering(Z, squareform(_unit_scale(D), checks=False))
    return Z


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


# ---------------------------------------------------------------------------- hybrid
def hybrid_tree(
    distances=None,
    *,
    affinity=None,
    top="ward",
    bottom="average",
    n_top=None,
    optimal_ordering=True,
    n_components=8,
):
    """Two linkage rules in one tree: ``top`` for the coarse folders, ``bottom`` inside them.

    Parameters
    ----------
    distances, affinity : array-like, optional
        As in :func:`hierarchical_tree` (exactly one; dense).
    top : {"ward", "average", "complete", "weighted", "single"}, default="ward"
        The linkage that makes the ``n_top`` coarse folders and the tree above them.
    bottom : {"average", "single", "complete", "weighted", "ward"}, default="average"
        The linkage that builds the tree inside each coarse folder (on that folder's
        distances alone).
    n_top : int, optional
        Number of coarse folders; default ``ceil(sqrt(n_points))``.
    optimal_ordering : bool, default=True
        Optimal leaf ordering of the top tree and of each folder's tree.
    n_components : int, default=8
        Diffusion coordinates of ``"ward"`` (see :func:`hierarchical_tree`).

    Returns
    -------
    tree : PartitionTree
        Binary. Leaves in the order of the top tree's optimal leaf ordering, and inside each
        coarse folder that of its own tree.

    Notes
    -----
    The coarse folders are the clusters of the top linkage cut into ``n_top`` pieces (the
    state after its first ``n - n_top`` merges); above them the tree is the top linkage's.
    A balanced rule on top (Ward) gives groupings near the class structure; a rule inside that
    follows the local geometry (average or single) compresses the fine scales. The
    questionnaire's benchmark (user guide, "choosing a tree builder") chose the default.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import hybrid_tree
    >>> x = np.array([0.0, 0.1, 0.3, 5.0, 5.2, 5.3])
    >>> tree = hybrid_tree(np.abs(np.subtract.outer(x, x)), n_top=2)
    >>> sorted(sorted(tree.folder(c).tolist()) for c in tree.children(0))
    [[0, 1, 2], [3, 4, 5]]
    """
    from numbers import Integral

    from scipy.cluster.hierarchy import leaves_list

    for name, value in (("top", top), ("bottom", bottom)):
        if value not in LINKAGE_METHODS:
            raise ValueError(f"{name} must be one of {LINKAGE_METHODS}, got {value!r}.")
    D, A = _geometry(distances, affinity)
    if A is not None and sp.issparse(A):
        raise ValueError("hybrid_tree needs a dense distance matrix or affinity.")
    if D is None:
        D = _affinity_distances(A)
    n = D.shape[0]
    if n_top is None:
        n_top = int(np.ceil(np.sqrt(n)))
    if isinstance(n_top, bool) or not isinstance(n_top, Integral) or n_top < 1:
        raise ValueError(f"n_top must be a positive integer, got {n_top!r}.")
    n_top = min(int(n_top), n)
    if n <= 2 or n_top in (1, n):
        method = top if n_top == n else bottom
        return hierarchical_tree(D, method=method, optimal_ordering=optimal_ordering)
    Z = _linkage_matrix(D, None, top, optimal_ordering, n_components)
    n_cut = n - n_top  # merges below the cut
    members = [[i] for i in range(n)]
    for j in range(n_cut):
        a, b = int(Z[j, 0]), int(Z[j, 1])
        members.append(members[a] + members[b])
    alive = set(range(n))
    for j in range(n_cut):
        alive -= {int(Z[j, 0]), int(Z[j, 1])}
        alive.add(n + j)
    parent = [-1] * n
    node_of, sub_order = {}, {}
    for cid in sorted(alive):
        M = np.sort(np.asarray(members[cid], dtype=np.intp))
        if M.shape[0] == 1:
            node_of[cid] = int(M[0])
            sub_order[cid] = M
            continue
        Zc = _linkage_matrix(D[np.ix_(M, M)], None, bottom, optimal_ordering, n_components)
        sub_order[cid] = M[leaves_list(Zc)]
        ids = list(M)
        for a, b in Zc[:, :2].astype(np.intp):
            parent.append(-1)
            parent[ids[a]] = len(parent) - 1
            parent[ids[b]] = len(parent) - 1
            ids.append(len(parent) - 1)
        node_of[cid] = ids[-1]
    for j in range(n_cut, n - 1):
        parent.append(-1)
        parent[node_of[int(Z[j, 0])]] = len(parent) - 1
        parent[node_of[int(Z[j, 1])]] = len(parent) - 1
        node_of[n + j] = len(parent) - 1
    # depth-first over the top merges (left child first, as SciPy's leaves_list does)
    parts, stack = [], [2 * n - 2]
    while stack:
        cid = stack.pop()
        if cid in alive:
            parts.append(sub_order[cid])
        else:
            a, b = int(Z[cid - n, 0]), int(Z[cid - n, 1])
            stack.extend([b, a])
    return _tree_from_parents(np.asarray(parent, dtype=np.intp), np.concatenate(parts))


# ---------------------------------------------------------------------------- bisection
def bisection_tree(distances=None, *, affinity=None, density_normalize=True):
    """Top-down tree: every folder split in two by its own diffusion embedding.

    Parameters
    ----------
    distances : array-like of shape (n_points, n_points), optional
        Read as the affinity ``exp(-d / median d)``. Pass exactly one of ``distances`` and
        ``affinity``.
    affinity : array-like or sparse matrix of shape (n_points, n_points), optional
        Symmetric, non-negative; dense or a sparse k-nearest-neighbour graph.
    density_normalize : bool, default=True
        Coifman-Lafon normalization of each folder's Markov matrix.

    Returns
    -------
    tree : PartitionTree
        Binary. Children are ordered by their mean first diffusion coordinate, so the leaf
        order is a recursive spectral ordering.

    Notes
    -----
    A folder is split by the sign of the first non-trivial eigenvector psi_1 of the Markov
    matrix of its sub-affinity (the spectral relaxation of the normalized cut, Shi and Malik
    2000). When psi_1 leaves one side empty (duplicate points, a constant eigenvector) the
    folder is split at the median rank of psi_1 (ties by point index), so every split makes
    progress and the tree is always complete.

    References
    ----------
    J. Shi and J. Malik, "Normalized cuts and image segmentation", IEEE TPAMI 22, 2000.

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import bisection_tree
    >>> x = np.array([0.0, 5.0, 0.1, 5.1, 0.2])
    >>> tree = bisection_tree(np.abs(np.subtract.outer(x, x)))
    >>> sorted(map(sorted, (tree.folder(c).tolist() for c in tree.children(0))))
    [[0, 2, 4], [1, 3]]
    """
    D, A = _geometry(distances, affinity)
    if A is None:
        off = D[~np.eye(D.shape[0], dtype=bool)]
        med = float(np.median(off)) if off.size else 0.0
        A = np.exp(-D / med) if med > 0 else np.ones_like(D)
    n = A.shape[0]
    if n == 1:
        return PartitionTree([0], [[0]])
    A = A.tocsr() if sp.issparse(A) else A
    parent = [-1] * n  # leaves first; internal nodes appended as they are split
    parent.append(-1)  # the root, id n
    order_parts = []
    stack = [(n, np.arange(n, dtype=np.intp), None)]
    while stack:
        node, idx, ref = stack.pop()
        if idx.shape[0] == 1:
            order_parts.append(idx)
            continue
        if idx.shape[0] == 2:
            flip = ref is not None and ref[1] < ref[0]
            left, right = (idx[1:], idx[:1]) if flip else (idx[:1], idx[1:])
            parts = [(left, None), (right, None)]
        else:
            parts = _split(A, idx, density_normalize, ref)
        kids = []
        for part, part_f in parts:
            if part.shape[0] == 1:
                parent[int(part[0])] = node
                kids.append((int(part[0]), part, part_f))
            else:
                parent.append(node)
                kids.append((len(parent) - 1, part, part_f))
        for child, part, part_f in reversed(kids):  # left first in the depth-first order
            stack.append((child, part, part_f))
    order = np.concatenate(order_parts)
    return _tree_from_parents(np.asarray(parent, dtype=np.intp), order)


def _split(A, idx, density_normalize, ref):
    """The two halves of folder ``idx`` with psi_1 on each; psi_1 is oriented to agree with
    ``ref`` (the parent's psi_1 on these points) so that the leaf order runs one way."""
    from ..graphs import diffusion_eigenpairs

    sub = A[idx][:, idx]
    if sp.issparse(sub):
        sub = sub.toarray()
    psi, _ = diffusion_eigenpairs(
        sub, 2, density_normalize=density_normalize, by_magnitude=False, check_input=False
    )
    f = psi[:, 1] if psi.shape[1] > 1 else np.zeros(idx.shape[0])
    if ref is not None and np.dot(f - f.mean(), ref - ref.mean()) < 0:
        f = -f
    neg = f < 0
    k = int(neg.sum())
    rank = np.lexsort((np.arange(idx.shape[0]), f))  # by psi_1, ties by position
    if k == 0 or k == idx.shape[0]:
        k = idx.shape[0] // 2
    # sorted by psi_1, the first k are the negative side (or the lower half): the folder with
    # the smaller psi_1 comes first, so the leaf order follows psi_1
    lo, hi = np.sort(rank[:k]), np.sort(rank[k:])
    return [(idx[lo], f[lo]), (idx[hi], f[hi])]


# ---------------------------------------------------------------------------- dispatch
def build_tree(method, *, distances=None, affinity=None, tree_constant=1.0, **params):
    """A tree of one axis by a named builder or a callable: the questionnaire's ``tree_method``.

    Parameters
    ----------
    method : {"flexible", "average", "complete", "single", "weighted", "ward", "bisection"} \
or callable
        ``"flexible"`` is :func:`flexible_tree` (the paper's; it needs ``affinity``), the
        linkage names are :func:`hierarchical_tree`, ``"bisection"`` is
        :func:`bisection_tree`. A callable is called as
        ``method(distances=distances, affinity=affinity)`` and must return a
        :class:`PartitionTree` on the axis's points.
    distances, affinity : array-like, optional
        The axis's geometry; the linkage builders use ``distances`` when given, else
        ``affinity``.
    tree_constant : float, default=1.0
        The flexible tree's constant.
    **params
        Passed to the builder (for example ``merge_tolerance``, or ``points`` for the
        linkage builders, which then link the points' Euclidean distances instead).

    Returns
    -------
    tree : PartitionTree

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.trees import build_tree
    >>> x = np.array([0.0, 0.1, 5.0, 5.1])
    >>> d = np.abs(np.subtract.outer(x, x))
    >>> tree = build_tree("single", distances=d)
    >>> sorted(sorted(tree.folder(c).tolist()) for c in tree.children(0))
    [[0, 1], [2, 3]]
    >>> build_tree(lambda distances, affinity: build_tree("ward", distances=distances),
    ...            distances=d).n_points
    4
    """
    n = None
    for g in (distances, affinity):
        if g is not None:
            n = g.shape[0]
    if callable(method):
        tree = method(distances=distances, affinity=affinity, **params)
        if not isinstance(tree, PartitionTree) or (n is not None and tree.n_points != n):
            raise ValueError(
                "a tree_method callable must return a PartitionTree on the axis's "
                f"{n} points, got {tree!r}."
            )
        return tree
    if method == "flexible":
        from ._flexible import flexible_tree

        if affinity is None:
            raise ValueError("tree method 'flexible' needs an affinity.")
        if sp.issparse(affinity):
            from ._sparse_flexible import sparse_flexible_tree

            return sparse_flexible_tree(affinity, tree_constant=tree_constant, **params)
        return flexible_tree(affinity, tree_constant=tree_constant, **params)
    if method in LINKAGE_METHODS:
        if params.get("points") is not None:
            return hierarchical_tree(method=method, **params)
        if distances is not None:
            return hierarchical_tree(distances, method=method, **params)
        return hierarchical_tree(affinity=affinity, method=method, **params)
    if method == "hybrid":
        if distances is not None:
            return hybrid_tree(distances, **params)
        return hybrid_tree(affinity=affinity, **params)
    if method == "bisection":
        if affinity is not None:
            return bisection_tree(affinity=affinity, **params)
        return bisection_tree(distances, **params)
    raise ValueError(f"tree method must be one of {TREE_METHODS} or a callable, got {method!r}.")
