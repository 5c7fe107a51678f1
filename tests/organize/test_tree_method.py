import itertools

import numpy as np
import pytest

from skorg import QuestionnaireOrganizer
from skorg.datasets import make_shuffled_matrix, make_shuffled_tensor
from skorg.graphs import cosine_affinity
from skorg.organize import questionnaire
from skorg.transforms import multi_haar_transform
from skorg.trees import PartitionTree, flexible_tree, hierarchical_tree


@pytest.fixture(scope="module")
def data():
    return make_shuffled_matrix(48, 40, kind="band", noise=0.05, random_state=0).X


@pytest.mark.parametrize("method", ["average", "single", "complete", "weighted"])
def test_linkage_trees_inside_the_iteration(data, method):
    res = questionnaire(data, n_iter=2, tree_method=method, early_stopping="never")
    # initial row tree: the linkage tree of the cosine affinity
    first = res.history[0]
    assert first["iteration"] == 0
    # (inside the iteration without the optimal leaf ordering, which the EMD does not see)
    want = hierarchical_tree(affinity=cosine_affinity(data), method=method, optimal_ordering=False)
    assert first["tree"] == want and first["method"] == method
    # every later tree: the linkage tree of the tree EMD it was built from
    for axis in (0, 1):
        want = hierarchical_tree(res.distances[axis], method=method, optimal_ordering=False)
        assert res.trees[axis] == want
        assert res.trees[axis].is_binary


def _scipy_ward(points):
    from scipy.cluster.hierarchy import linkage

    return PartitionTree.from_linkage(linkage(points, method="ward"))


def test_ward_links_the_slices_then_the_tree_emd_features(data):
    from skorg.metrics import tree_emd_embedding

    res = questionnaire(data, n_iter=2, tree_method="ward", early_stopping="never")
    # the initial tree: no other tree yet, so Ward of the rows themselves
    assert res.history[0]["tree"].same_partitions(_scipy_ward(data))
    # later trees: exact Ward of the features whose l1 distances are the tree EMD. A sweep
    # rebuilds axis 1 from the previous sweep's axis-0 tree, then axis 0 from the new axis 1
    (first_row_tree,) = [h["tree"] for h in res.history if h["axis"] == 0 and h["iteration"] == 1]
    for axis, others in ((0, [None, res.trees[1]]), (1, [first_row_tree, None])):
        F = tree_emd_embedding(data, others, axis=axis, dtype=np.float64)
        want = hierarchical_tree(points=F, method="ward", optimal_ordering=False)
        assert res.trees[axis] == want


def test_ward_slices_is_scipy_ward_of_the_slices(data):
    res = questionnaire(data, n_iter=2, tree_method="ward_slices")
    assert res.trees[0].same_partitions(_scipy_ward(data))
    assert res.trees[1].same_partitions(_scipy_ward(data.T))
    tensor = data[:, :36].reshape(48, 6, 6)
    res3 = questionnaire(tensor, n_iter=1, tree_method="ward_slices")
    for axis in range(3):
        slices = np.moveaxis(tensor, axis, 0).reshape(tensor.shape[axis], -1)
        assert res3.trees[axis].same_partitions(_scipy_ward(slices))


def test_tree_method_per_axis_and_callable(data):
    calls = []

    def my_builder(distances, affinity):
        calls.append(distances is None)
        if distances is None:  # the initial tree: only the affinity
            return flexible_tree(affinity)
        return hierarchical_tree(distances)

    res = questionnaire(data, n_iter=1, tree_method=["flexible", my_builder])
    assert res.trees[0] == flexible_tree(res.affinities[0])
    assert res.trees[1] == hierarchical_tree(res.distances[1])
    assert calls == [False]  # axis 1 is built once, from distances (alternating schedule)
    org = QuestionnaireOrganizer(n_iter=1, tree_method=("bisection", "average")).fit(data)
    assert org.params_["tree_method"] == ["bisection", "average"]


def test_presets_pin_the_flexible_tree(data):
    for preset in ("paper_2d_holder", "paper_3d_heads"):
        res = questionnaire(data, preset=preset, n_iter=1)
        assert res.params["tree_method"] == "flexible"
        assert res.trees[0] == flexible_tree(res.affinities[0])


def test_merge_tolerance_reaches_the_builder(data):
    res = questionnaire(data, n_iter=1, tree_method="average", tree_params={"merge_tolerance": 0.1})
    want = hierarchical_tree(
        res.distances[0], method="average", merge_tolerance=0.1, optimal_ordering=False
    )
    assert res.trees[0] == want


@pytest.mark.parametrize("schedule", ["alternating", "jacobi"])
def test_stopping_when_trees_stop_changing_changes_nothing(schedule):
    X = make_shuffled_matrix(40, 36, kind="product", noise=0.0, random_state=1).X
    full = questionnaire(X, n_iter=8, schedule=schedule, early_stopping="never")
    early = questionnaire(X, n_iter=8, schedule=schedule)
    assert early.n_iter < 8 and early.stop_reason == "unchanged"
    assert full.n_iter == 8 and full.stop_reason == "n_iter"
    assert all(a == b for a, b in zip(early.trees, full.trees))
    for a, b in zip(early.orders, full.orders):
        np.testing.assert_array_equal(a, b)
    # the last sweep run rebuilt exactly the trees it started from
    last = [h for h in early.history if h["iteration"] == early.n_iter]
    assert not any(h["changed"] for h in last)


def test_stopping_on_the_objective_keeps_the_best_sweep(data):
    org = QuestionnaireOrganizer(n_iter=6, early_stopping="objective", tol=0.0).fit(data)
    values = [h["objective"] for h in org.history_ if h["objective"] is not None]
    assert len(values) == org.n_iter_
    # each value is the normalized Haar l1 of X on the trees after that sweep
    assert org.stop_reason_ in ("objective", "n_iter", "unchanged")
    if org.stop_reason_ == "objective":
        assert values[-1] >= min(values[:-1])
        assert all(b < a for a, b in itertools.pairwise(values[:-1]))
    X = data / np.abs(data).max()
    final = np.abs(multi_haar_transform(X, org.trees_)).sum() / np.linalg.norm(X)
    assert final == pytest.approx(min(values), rel=1e-12)


def test_objective_does_not_depend_on_units(data):
    ref = questionnaire(data, n_iter=3, early_stopping="objective")
    for scale in (1e-150, 1e150):
        res = questionnaire(data * scale, n_iter=3, early_stopping="objective")
        assert res.n_iter == ref.n_iter
        assert all(a == b for a, b in zip(res.trees, ref.trees))


def test_tensor_with_linkage_trees():
    T = make_shuffled_tensor((16, 14, 6), random_state=0).X
    res = questionnaire(T, n_iter=2, tree_method="average")
    assert all(isinstance(t, PartitionTree) and t.is_binary for t in res.trees)
    assert [t.n_points for t in res.trees] == [16, 14, 6]


@pytest.mark.parametrize("margin", [None, 0.0, 0.3])
@pytest.mark.parametrize("kind", ["band", "product"])
def test_select_keeps_the_candidate_that_compresses_best(kind, margin):
    from skorg.organize._presets import SELECT_CANDIDATES, SELECT_MARGIN

    X = make_shuffled_matrix(48, 40, kind=kind, noise=0.05, random_state=1).X
    params = None if margin is None else {"select_margin": margin}
    # "select" is the default
    res = questionnaire(X, n_iter=2, early_stopping="never", tree_params=params)
    assert res.params["tree_method"] == "select"
    assert SELECT_CANDIDATES == ("average", "ward_slices")
    Xs = X / np.abs(X).max()

    def objective(trees):  # relative error after keeping the largest 5% of the coefficients
        mags = np.sort(np.abs(multi_haar_transform(Xs, trees)).ravel())[::-1]
        k = round(0.05 * mags.size)
        return np.linalg.norm(mags[k:]) / np.linalg.norm(Xs)

    # the last tree of axis 0 was picked with the final tree of axis 1 in place
    last = [h for h in res.history if h["axis"] == 0][-1]
    candidates = {
        "average": hierarchical_tree(res.distances[0], method="average", optimal_ordering=False),
        "ward_slices": _scipy_ward(X),
    }
    values = {name: objective([tree, res.trees[1]]) for name, tree in candidates.items()}
    margin = SELECT_MARGIN if margin is None else margin
    if margin == 0:  # the lower error (ties, within rounding, to average linkage)
        want = min(values, key=values.get)
    else:  # Ward's tree unless average linkage's error is lower by more than the margin
        wins = values["average"] < values["ward_slices"] * (1 - margin)
        want = "average" if wins else "ward_slices"
    assert last["method"] == want
    assert res.params["tree_params"] == {}  # the margin is the selection's, not a builder's
    assert res.trees[0].same_partitions(candidates[last["method"]])
    assert {h["method"] for h in res.history} <= set(SELECT_CANDIDATES)


@pytest.mark.parametrize("bad", [-0.1, 1.0, "0.1", True])
def test_select_margin_is_checked(bad):
    X = make_shuffled_matrix(12, 10, random_state=0).X
    with pytest.raises(ValueError, match=r"select_margin'\] must be a number in \[0, 1\)"):
        questionnaire(X, n_iter=1, tree_params={"select_margin": bad})


def test_shortest_ordering_is_the_shorter_of_two_optimal_leaf_orderings():
    from sklearn.metrics.pairwise import euclidean_distances

    from skorg.organize import leaf_order

    for kind in ("band", "ridge", "product"):
        X = make_shuffled_matrix(40, 32, kind=kind, noise=0.05, random_state=2).X
        res = questionnaire(X, ordering="shortest")  # the default before "smoothest"
        assert res.params["ordering"] == "shortest"
        for axis, U in enumerate((X, X.T)):
            E = euclidean_distances(U)
            E = 0.5 * (E + E.T)
            np.fill_diagonal(E, 0.0)
            tree = res.trees[axis]
            emd = leaf_order(tree, res.distances[axis], "emd_olo")
            euclid = leaf_order(tree, E, "emd_olo")

            def path(order, U=U):
                return float(np.linalg.norm(np.diff(U[order], axis=0), axis=1).sum())

            want = euclid if path(euclid) < path(emd) * (1 - 1e-9) else emd
            np.testing.assert_array_equal(res.orders[axis], want)
            assert path(res.orders[axis]) <= min(path(emd), path(euclid)) * (1 + 1e-12)


def test_ordering_tree_olo_follows_a_binary_tree(data):
    org = QuestionnaireOrganizer(tree_method="average", ordering="tree_olo").fit(data)
    for tree, order in zip(org.trees_, org.orders_):
        pos = np.empty_like(order)
        pos[order] = np.arange(order.shape[0])
        for node in range(tree.n_nodes):  # every folder is a run of the order
            p = np.sort(pos[tree.folder(node)])
            assert p[-1] - p[0] == p.shape[0] - 1


def test_tree_method_errors(data):
    with pytest.raises(ValueError, match="tree_method must be one of"):
        questionnaire(data, tree_method="kmeans")
    with pytest.raises(ValueError, match="sequence of 2"):
        questionnaire(data, tree_method=["average"])
    with pytest.raises(ValueError, match="sparse k-NN path"):
        questionnaire(data, tree_method="average", affinity_mode="sparse")
    with pytest.raises(ValueError, match="early_stopping"):
        questionnaire(data, early_stopping="soon")
    with pytest.raises(ValueError, match="tol"):
        questionnaire(data, tol=2.0)
    with pytest.raises(ValueError, match="callable must return a PartitionTree"):
        questionnaire(data, tree_method=lambda distances, affinity: "a tree")
    with pytest.raises(ValueError, match="tree_method"):
        QuestionnaireOrganizer(tree_method="kmeans").fit(data)


@pytest.mark.parametrize("method", ["single", "ward"])
def test_sparse_path_builds_single_and_ward_trees_from_its_knn_graph(data, method):
    import scipy.sparse as sp

    res = questionnaire(data, n_iter=1, tree_method=method, affinity_mode="sparse", n_neighbors=8)
    for axis in (0, 1):
        A = res.affinities[axis]
        assert sp.issparse(A)
        assert res.trees[axis] == hierarchical_tree(
            affinity=A, method=method, optimal_ordering=False
        )
        assert res.trees[axis].is_binary


def test_selection_haar_coefficients_equal_the_tree_haar_transform():
    # the selection computes Haar coefficients of binary trees from prefix sums (no compiled
    # kernel); along every fibre they are the transform's coefficients up to order and sign
    from scipy.cluster.hierarchy import linkage

    from skorg.organize import _steps as Q
    from skorg.organize._steps import _haar_along
    from skorg.transforms import haar_transform

    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 17, 5)) * 1e3
    for axis, method in enumerate(("ward", "single", "average")):
        U = np.moveaxis(X, axis, 0).reshape(X.shape[axis], -1)
        for tree in (
            PartitionTree.from_linkage(linkage(U, method)),
            flexible_tree(cosine_affinity(U)),
        ):
            assert X.size <= Q._NUMPY_HAAR_MAX
            got = np.sort(np.abs(_haar_along(X, tree, axis)), axis=axis)
            want = np.sort(np.abs(haar_transform(X, tree, axis=axis)), axis=axis)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(X).max())


def test_selection_haar_on_large_arrays_is_the_transform_along_the_axis_in_place():
    # above the NumPy path's size the selection calls the compiled transform along the axis
    # of the array as laid out (no contiguous copy): the same coefficients, bit for bit, as
    # the transform along the last axis of a contiguous copy, on every axis and layout
    from skorg.organize import _steps as Q
    from skorg.organize._steps import _haar_along
    from skorg.transforms import haar_transform

    rng = np.random.default_rng(1)
    X = rng.standard_normal((70, 64, 60))
    assert X.size > Q._NUMPY_HAAR_MAX
    for Y in (X, np.asfortranarray(X), np.moveaxis(X, 0, 2)):
        for axis in range(3):
            points = rng.standard_normal((Y.shape[axis], 2))
            tree = hierarchical_tree(points=points, method="average")
            moved = np.ascontiguousarray(np.moveaxis(Y, axis, -1))
            want = np.moveaxis(haar_transform(moved, tree, axis=-1), -1, axis)
            np.testing.assert_array_equal(_haar_along(Y, tree, axis), want)


def test_dropped_norm_is_the_norm_of_all_but_the_largest():
    from skorg.organize._steps import _dropped_norm

    rng = np.random.default_rng(2)
    coefs = np.abs(rng.standard_normal(10_001)) * 1e-3
    for k in (1, 500, 10_000):
        rest = np.sort(coefs)[: coefs.size - k]
        np.testing.assert_allclose(_dropped_norm(coefs, k), np.sqrt(np.sum(rest**2)), rtol=1e-13)
    assert _dropped_norm(coefs, coefs.size) == 0.0
    assert _dropped_norm(np.zeros(7), 1) == 0.0


def test_slice_distances_on_one_blas_thread_equal_sklearns():
    # single-threaded BLAS gives the same bits as sklearn's (threaded) euclidean_distances
    from sklearn.metrics.pairwise import euclidean_distances

    from skorg.organize._steps import _euclidean_distances

    rng = np.random.default_rng(3)
    S = rng.standard_normal((300, 400))
    E = euclidean_distances(S)
    E = 0.5 * (E + E.T)
    np.fill_diagonal(E, 0.0)
    np.testing.assert_array_equal(_euclidean_distances(S), E)


def test_ward_beyond_the_memory_budget_links_the_diffusion_embedding(data, monkeypatch):
    # 48 x 40: the features of one axis need about 90 KB, the rest of the fit far less
    monkeypatch.setenv("SKORG_MAX_MEMORY", "0.05")
    res = questionnaire(data, n_iter=1, tree_method="ward")
    for axis in (0, 1):
        want = hierarchical_tree(res.distances[axis], method="ward", optimal_ordering=False)
        assert res.trees[axis] == want
