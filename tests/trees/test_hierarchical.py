import numpy as np
import pytest
import scipy.sparse as sp
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import pdist, squareform

from skorg.graphs import cosine_affinity, knn_affinity
from skorg.trees import (
    PartitionTree,
    bisection_tree,
    build_tree,
    flexible_tree,
    hierarchical_tree,
)

METHODS = ["average", "complete", "single", "weighted"]


def _points(n=40, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 3)) + np.repeat(rng.normal(scale=4, size=(4, 3)), n // 4, axis=0)


def _valid(tree, n):
    """Every level a partition of range(n), nested, each folder contiguous in the leaf order."""
    assert isinstance(tree, PartitionTree) and tree.n_points == n
    assert np.array_equal(np.sort(tree.leaf_order), np.arange(n))
    rebuilt = PartitionTree.from_levels(tree.to_levels(), leaf_order=tree.leaf_order)
    assert rebuilt == tree
    assert tree.level_sizes()[0] == 1 and tree.level_sizes()[-1] == n


@pytest.mark.parametrize("method", METHODS)
def test_linkage_tree_equals_scipy_as_nested_partitions(method):
    D = squareform(pdist(_points(), "cosine"))
    want = PartitionTree.from_linkage(linkage(squareform(D, checks=False), method=method))
    got = hierarchical_tree(D, method=method)
    assert got.is_binary
    assert got.same_partitions(want)


def test_ward_links_the_diffusion_embedding_like_scipy():
    from skorg.trees._hierarchical import _ward_embedding

    D = squareform(pdist(_points(), "euclidean"))
    E = _ward_embedding(D, None, 8)
    want = PartitionTree.from_linkage(linkage(E, method="ward"))
    assert hierarchical_tree(D, method="ward").same_partitions(want)


@pytest.mark.parametrize("method", [*METHODS, "ward"])
def test_points_are_linked_by_their_euclidean_distances_like_scipy(method):
    P = _points()
    want = PartitionTree.from_linkage(linkage(P, method=method))
    got = hierarchical_tree(points=P, method=method, optimal_ordering=False)
    assert got == want  # SciPy's merges and leaf order, exactly
    olo = hierarchical_tree(points=P, method=method)
    assert olo.same_partitions(want)
    assert build_tree(method, points=P, optimal_ordering=False) == want
    for scale in (1e-150, 1e150):  # units: the points are scaled exactly first
        assert hierarchical_tree(points=P * scale, method=method) == olo


def test_ward_merge_cost_is_the_energy_of_the_haar_coefficient_it_creates():
    # Ward on points: merging folders A and B costs |A||B|/(|A|+|B|) ||m_A - m_B||^2, the
    # squared norm of the Haar coefficient of that merge; the costs add up to the total
    # variance (Parseval)
    from skorg.transforms import haar_transform

    P = _points(24, seed=3)
    tree = hierarchical_tree(points=P, method="ward", optimal_ordering=False)
    Z = linkage(P, method="ward")
    costs = []
    for node in range(tree.n_nodes):
        kids = tree.children(node)
        if len(kids) == 2:
            a, b = (P[tree.folder(k)] for k in kids)
            na, nb = a.shape[0], b.shape[0]
            costs.append(na * nb / (na + nb) * np.sum((a.mean(0) - b.mean(0)) ** 2))
    np.testing.assert_allclose(np.sort(costs), np.sort(Z[:, 2] ** 2 / 2), rtol=1e-10)
    coefs = haar_transform(P, tree, axis=0)
    detail = np.sum(coefs**2) - P.shape[0] * np.sum(P.mean(0) ** 2)  # all but the root average
    np.testing.assert_allclose(sum(costs), detail, rtol=1e-10)
    np.testing.assert_allclose(sum(costs), np.sum((P - P.mean(0)) ** 2), rtol=1e-10)


@pytest.mark.parametrize("method", [*METHODS, "ward"])
def test_points_degenerate_inputs(method):
    dup = np.repeat(np.array([[0.0, 1.0], [2.0, 2.0]]), 4, axis=0)  # duplicates, exact ties
    for P in (dup, np.zeros((6, 3)), np.ones((2, 2)), np.array([[1.0, 2.0, 3.0]])):
        _valid(hierarchical_tree(points=P, method=method), P.shape[0])
    tree = hierarchical_tree(points=dup, method=method)
    assert sorted(sorted(tree.folder(c).tolist()) for c in tree.children(0)) == [
        [0, 1, 2, 3],
        [4, 5, 6, 7],
    ]


def test_points_errors():
    P = _points()
    D = squareform(pdist(P))
    with pytest.raises(ValueError, match="exactly one of distances, affinity and points"):
        hierarchical_tree(D, points=P)
    bad = P.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="points"):
        hierarchical_tree(points=bad)
    with pytest.raises(ValueError, match="points"):
        hierarchical_tree(points=P[:, 0])


@pytest.mark.parametrize("method", METHODS)
def test_linkage_tree_does_not_depend_on_units(method):
    D = squareform(pdist(_points(), "euclidean"))
    ref = hierarchical_tree(D, method=method)
    for scale in (1e-150, 1e150):
        assert hierarchical_tree(D * scale, method=method) == ref


def test_optimal_ordering_follows_the_tree_and_does_not_lengthen_the_path():
    X = _points()
    D = squareform(pdist(X))
    plain = hierarchical_tree(D, method="average", optimal_ordering=False)
    olo = hierarchical_tree(D, method="average")
    assert olo.same_partitions(plain)  # only children flipped

    def path(order):
        return float(D[order[:-1], order[1:]].sum())

    assert path(olo.leaf_order) <= path(plain.leaf_order) + 1e-12


def test_affinity_input_is_read_as_one_minus_scaled_affinity():
    X = np.abs(_points())
    A = cosine_affinity(X)
    D = 1.0 - A / A.max()
    np.fill_diagonal(D, 0.0)
    for method in ("single", "average"):
        assert hierarchical_tree(affinity=A, method=method) == hierarchical_tree(D, method=method)
        assert hierarchical_tree(affinity=3.0 * A, method=method) == hierarchical_tree(
            D, method=method
        )


def test_merge_tolerance_folds_near_equal_heights():
    # three tight pairs that join at one height: a 3-way folder under a tolerance
    x = np.array([0.0, 0.01, 10.0, 10.01, 20.0, 20.01])
    D = np.abs(np.subtract.outer(x, x))
    binary = hierarchical_tree(D, method="single")
    assert binary.is_binary
    merged = hierarchical_tree(D, method="single", merge_tolerance=0.0)  # exact ties
    _valid(merged, 6)
    assert merged.n_children[0] == 3
    assert sorted(sorted(merged.folder(c).tolist()) for c in merged.children(0)) == [
        [0, 1],
        [2, 3],
        [4, 5],
    ]
    # a large tolerance folds every merge into the root: one folder of singletons
    flat = hierarchical_tree(D, method="average", merge_tolerance=1.0)
    assert flat.n_levels == 2 and flat.n_children[0] == 6


def test_sparse_single_linkage_equals_dense_single_linkage_on_the_graph():
    X = _points(60)
    A = knn_affinity(X, kind="cosine", n_neighbors=59)  # every pair: the full graph
    dense = A.toarray()
    got = hierarchical_tree(affinity=A, method="single")
    # pairs the graph does not hold are longer than any edge
    Dlog = np.where(dense > 0, -np.log(np.where(dense > 0, dense, 1.0) / dense.max()), 1e3)
    np.fill_diagonal(Dlog, 0.0)
    want = PartitionTree.from_linkage(linkage(squareform(Dlog, checks=False), method="single"))
    assert got.same_partitions(want)


def test_sparse_disconnected_graph_joins_pieces_last():
    A = sp.block_diag([np.ones((3, 3)), np.ones((4, 4))]).tocsr()
    tree = hierarchical_tree(affinity=A, method="single")
    _valid(tree, 7)
    assert sorted(sorted(tree.folder(c).tolist()) for c in tree.children(0)) == [
        [0, 1, 2],
        [3, 4, 5, 6],
    ]
    with pytest.raises(ValueError, match="sparse k-NN"):
        hierarchical_tree(affinity=A, method="average")


def _degenerate_cases():
    rng = np.random.default_rng(1)
    dup = np.repeat(rng.normal(size=(5, 2)), 3, axis=0)
    return {
        "ties": np.abs(np.subtract.outer(np.arange(8.0) // 2, np.arange(8.0) // 2)),
        "duplicates": squareform(pdist(dup)),
        "all_equal": np.zeros((6, 6)),
        "two_points": np.array([[0.0, 1.0], [1.0, 0.0]]),
        "one_point": np.zeros((1, 1)),
    }


@pytest.mark.parametrize("case", list(_degenerate_cases()))
@pytest.mark.parametrize("method", [*METHODS, "ward", "bisection"])
def test_builders_give_valid_trees_on_degenerate_distances(case, method):
    D = _degenerate_cases()[case]
    tree = build_tree(method, distances=D)
    _valid(tree, D.shape[0])
    if D.shape[0] > 1:
        assert tree.is_binary
    if case == "duplicates" and method != "bisection":
        # copies are merged first: each triple of copies is a folder of the tree
        sizes = {int(s) for s in tree.size}
        assert 3 in sizes


@pytest.mark.parametrize("method", [*METHODS, "ward", "bisection", "flexible"])
def test_builders_on_a_disconnected_affinity(method):
    A = sp.block_diag([np.ones((3, 3)), np.zeros((1, 1)), np.ones((4, 4))]).toarray()
    A[3, 3] = 1.0
    tree = build_tree(method, affinity=A)
    _valid(tree, 8)
    groups = [set(tree.folder(n).tolist()) for n in range(tree.n_nodes)]
    assert {0, 1, 2} in groups and {4, 5, 6, 7} in groups


def test_bisection_splits_by_the_sign_of_the_diffusion_eigenvector():
    x = np.concatenate([np.linspace(0, 1, 10), np.linspace(9, 10, 6)])
    rng = np.random.default_rng(0)
    perm = rng.permutation(16)
    D = np.abs(np.subtract.outer(x[perm], x[perm]))
    tree = bisection_tree(D)
    _valid(tree, 16)
    tops = sorted(sorted(tree.folder(c).tolist()) for c in tree.children(0))
    assert tops == sorted([sorted(np.flatnonzero(perm < 10)), sorted(np.flatnonzero(perm >= 10))])
    # on points along a line the leaf order is monotone (recursive spectral order)
    xs = x[perm][tree.leaf_order]
    assert np.all(np.diff(xs) > 0) or np.all(np.diff(xs) < 0)


def test_bisection_on_a_sparse_graph_equals_the_dense_one():
    X = _points(24)
    A = knn_affinity(X, kind="cosine", n_neighbors=6)
    assert bisection_tree(affinity=A) == bisection_tree(affinity=A.toarray())


def test_build_tree_flexible_is_the_flexible_tree():
    A = cosine_affinity(np.abs(_points()))
    assert build_tree("flexible", affinity=A, tree_constant=0.7) == flexible_tree(
        A, tree_constant=0.7
    )


def test_build_tree_callable_and_errors():
    D = squareform(pdist(_points(12)))
    tree = build_tree(lambda distances, affinity: hierarchical_tree(distances), distances=D)
    assert tree == hierarchical_tree(D)
    with pytest.raises(ValueError, match="callable must return a PartitionTree"):
        build_tree(lambda distances, affinity: None, distances=D)
    with pytest.raises(ValueError, match="tree method must be one of"):
        build_tree("nope", distances=D)
    with pytest.raises(ValueError, match="exactly one of distances and affinity"):
        hierarchical_tree()
    with pytest.raises(ValueError, match="method must be one of"):
        hierarchical_tree(D, method="centroid")
    with pytest.raises(ValueError, match="merge_tolerance"):
        hierarchical_tree(D, merge_tolerance=-1)
    with pytest.raises(ValueError, match="symmetric"):
        hierarchical_tree(D + np.triu(np.ones_like(D)))
    with pytest.raises(ValueError, match="non-negative"):
        hierarchical_tree(-D)
    with pytest.raises(ValueError, match="NaN"):
        hierarchical_tree(np.full_like(D, np.nan))
    with pytest.raises(ValueError, match="needs an affinity"):
        build_tree("flexible", distances=D)


def test_builders_do_not_change_their_arguments():
    D = squareform(pdist(_points(20)))
    D[0, 0] = 0.5  # an ignored diagonal entry must survive
    keep = D.copy()
    for method in [*METHODS, "ward", "bisection"]:
        build_tree(method, distances=D)
    np.testing.assert_array_equal(D, keep)


def _subtree(tree, node):
    """The nested partitions below ``node`` as a set of frozensets of points."""
    out, stack = set(), [node]
    while stack:
        v = stack.pop()
        out.add(frozenset(tree.folder(v).tolist()))
        stack.extend(tree.children(v).tolist())
    return out


@pytest.mark.parametrize(("top", "bottom"), [("ward", "average"), ("average", "single")])
def test_hybrid_tree_is_top_linkage_above_the_cut_and_bottom_linkage_inside(top, bottom):
    from scipy.cluster.hierarchy import fcluster

    from skorg.trees import hybrid_tree
    from skorg.trees._hierarchical import _ward_embedding

    D = squareform(pdist(_points(48), "euclidean"))
    tree = hybrid_tree(D, top=top, bottom=bottom, n_top=6)
    _valid(tree, 48)
    assert tree.is_binary
    if top == "ward":
        Zt = linkage(_ward_embedding(D, None, 8), method="ward")
    else:
        Zt = linkage(squareform(D, checks=False), method=top)
    labels = fcluster(Zt, 6, criterion="maxclust")
    folders = _subtree(tree, 0)
    for c in np.unique(labels):
        M = np.flatnonzero(labels == c)
        assert frozenset(M.tolist()) in folders
        if M.shape[0] < 2:
            continue
        # inside the coarse folder: the bottom linkage of its own distances
        node = next(v for v in range(tree.n_nodes) if set(tree.folder(v).tolist()) == set(M))
        sub = PartitionTree.from_linkage(
            linkage(squareform(D[np.ix_(M, M)], checks=False), method=bottom)
        )
        want = {frozenset(M[sorted(f)].tolist()) for f in _subtree(sub, 0)}
        assert _subtree(tree, node) == want


def test_hybrid_tree_edges():
    from skorg.trees import hybrid_tree

    D = squareform(pdist(_points(16)))
    assert hybrid_tree(D, n_top=1).same_partitions(hierarchical_tree(D, method="average"))
    assert hybrid_tree(D, top="complete", n_top=16).same_partitions(
        hierarchical_tree(D, method="complete")
    )
    for Dc in _degenerate_cases().values():
        _valid(hybrid_tree(Dc), Dc.shape[0])
    with pytest.raises(ValueError, match="n_top"):
        hybrid_tree(D, n_top=0)
    with pytest.raises(ValueError, match="bottom must be one of"):
        hybrid_tree(D, bottom="median")
