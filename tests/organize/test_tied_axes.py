"""Tied axes: one tree and one order for two axes that index the same objects."""

import numpy as np
import pytest
import scipy.sparse as sp

from skorg import QuestionnaireOrganizer
from skorg._validation import check_tree_for_axis
from skorg.metrics import affinity_matrix, multi_tree_emd
from skorg.organize import questionnaire
from skorg.transforms import haar_transform
from skorg.trees import PartitionTree, flexible_tree


def _bandwidth(M):
    """Mean distance from the diagonal, weighted by the entries (a band has a small one)."""
    i, j = np.indices(M.shape)
    return float((np.abs(i - j) * np.abs(M)).sum() / np.abs(M).sum())


def _band(n, shift=0, width=3.0):
    x = np.arange(n)
    return np.exp(-np.abs(np.subtract.outer(x, x) - shift) / width)


@pytest.fixture
def shuffled_band():
    n = 36
    perm = np.random.default_rng(0).permutation(n)
    # not symmetric: a previous-token-like band below the diagonal
    B = _band(n, shift=1) + 0.3 * _band(n, shift=-4, width=1.0)
    return B, B[np.ix_(perm, perm)]


def test_symmetric_matrix_gives_a_symmetric_organized_matrix():
    rng = np.random.default_rng(1)
    Z = rng.normal(size=(30, 8)) @ rng.normal(size=(8, 50))
    C = np.corrcoef(Z)  # a correlation matrix, exactly symmetric
    C = 0.5 * (C + C.T)
    org = QuestionnaireOrganizer(n_iter=3, tie_axes=(0, 1)).fit(C)
    M = org.organize(C)
    np.testing.assert_array_equal(M, M.T)
    np.testing.assert_array_equal(org.row_order_, org.column_order_)
    assert org.trees_[0] is org.trees_[1]
    # transform keeps the rows and puts the columns in the one learned order
    np.testing.assert_array_equal(org.transform(C), C[:, org.row_order_])


@pytest.mark.parametrize("tree_method", [None, "flexible", "average", "ward"])
def test_banded_matrix_shuffled_on_both_axes_comes_back_banded(shuffled_band, tree_method):
    B, S = shuffled_band
    res = questionnaire(S, n_iter=3, tie_axes=(0, 1), tree_method=tree_method)
    order = res.orders[0]
    np.testing.assert_array_equal(res.orders[1], order)
    # the same band, in the original order or its reverse (the transpose's band)
    got = _bandwidth(S[np.ix_(order, order)])
    assert got == pytest.approx(_bandwidth(B), rel=1e-12)
    assert got < 0.5 * _bandwidth(S)


def test_the_tree_is_a_valid_tree_of_both_axes(shuffled_band):
    _, S = shuffled_band
    res = questionnaire(S, n_iter=2, tie_axes=[1, 0])
    assert res.params["tie_axes"] == (0, 1)
    tree = res.trees[0]
    assert res.trees[1] is tree
    for axis in (0, 1):
        check_tree_for_axis(tree, S.shape[axis])
        # nested partitions of every point, as a freshly checked tree
        assert PartitionTree.from_levels(tree.to_levels()).same_partitions(tree)
        # the Haar basis of the tree is orthonormal along either axis (Parseval)
        coefs = haar_transform(S, tree, axis=axis)
        assert np.linalg.norm(coefs) == pytest.approx(np.linalg.norm(S), rel=1e-12)
    axes = [h["axis"] for h in res.history]
    assert axes.count(0) == axes.count(1)  # the shared tree is listed under both
    for h0, h1 in zip(res.history[::2], res.history[1::2]):
        assert (h0["axis"], h1["axis"]) == (0, 1) and h0["tree"] is h1["tree"]


def test_tied_distances_are_the_sum_of_both_slices_emd(shuffled_band):
    _, S = shuffled_band
    res = questionnaire(S, n_iter=2, tie_axes=(0, 1), early_stopping="never")
    previous = res.history[-4]["tree"]  # the shared tree the last step read
    assert [h["axis"] for h in res.history[-4:]] == [0, 1, 0, 1]
    want = multi_tree_emd(S, [None, previous], axis=0) + multi_tree_emd(S, [previous, None], axis=1)
    np.testing.assert_allclose(res.distances[0], want, rtol=1e-12, atol=0)
    assert res.distances[1] is res.distances[0]


def test_initial_tree_is_that_of_the_concatenated_slices(shuffled_band):
    _, S = shuffled_band
    res = questionnaire(S, n_iter=0, tie_axes=(0, 1), tree_method="flexible")
    want = flexible_tree(affinity_matrix(np.hstack([S, S.T]), "cosine"))
    assert res.trees[0] == want and res.trees[1] is res.trees[0]


def test_tied_query_and_key_of_a_three_way_tensor():
    n, perm = 24, np.random.default_rng(3).permutation(24)
    heads = [_band(n, shift=1, width=1.0), _band(n, width=4.0), _band(n, shift=-2)]
    T = np.stack(heads, axis=-1)
    S = T[np.ix_(perm, perm, np.arange(3))]
    res = questionnaire(S, n_iter=2, tie_axes=(0, 1))
    q, k, h = res.orders
    np.testing.assert_array_equal(q, k)
    assert res.trees[0] is res.trees[1] and res.trees[2].n_points == 3
    organized = res.organize(S)
    np.testing.assert_array_equal(organized, S[np.ix_(q, q, h)])
    for head in range(3):  # every head, the previous-token one too, keeps its band
        got = _bandwidth(organized[:, :, head])
        assert got == pytest.approx(_bandwidth(T[:, :, h[head]]), rel=1e-12)


def test_sparse_input_gives_the_dense_result(shuffled_band):
    _, S = shuffled_band
    # noise breaks the band's exact ties, which rounding may break either way
    S = S + 0.01 * np.random.default_rng(7).random(S.shape)
    S = np.where(S > 0.2, S, 0.0)
    dense = questionnaire(S, n_iter=2, tie_axes=(0, 1))
    sparse = questionnaire(sp.csr_matrix(S), n_iter=2, tie_axes=(0, 1))
    np.testing.assert_array_equal(sparse.orders[0], dense.orders[0])
    np.testing.assert_allclose(sparse.distances[0], dense.distances[0], rtol=1e-12)


def test_untied_is_the_default():
    X = np.random.default_rng(4).random((10, 12))
    a, b = questionnaire(X, n_iter=2), questionnaire(X, n_iter=2, tie_axes=None)
    assert a.params["tie_axes"] is None
    for u, v in zip(a.orders, b.orders):
        np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"tie_axes": (0, 1)}, "equal length"),
        ({"tie_axes": (0,)}, "pair of two axis numbers"),
        ({"tie_axes": (0, 0)}, "two different axes"),
        ({"tie_axes": (0, 5)}, "outside the 2 axes"),
        ({"tie_axes": (0, True)}, "pair of two axis numbers"),
        ({"tie_axes": "01"}, "pair of two axis numbers"),
    ],
)
def test_bad_tie_axes_are_named(kwargs, fragment):
    X = np.random.default_rng(5).random((6, 7))
    with pytest.raises(ValueError, match=fragment):
        questionnaire(X, **kwargs)


def test_tied_axes_need_the_same_settings_and_the_dense_path():
    X = np.random.default_rng(6).random((8, 8))
    with pytest.raises(ValueError, match="epsilon differs on the tied axes 0 and 1"):
        questionnaire(X, tie_axes=(0, 1), epsilon=[1.0, 2.0])
    with pytest.raises(ValueError, match="tree_method differs"):
        questionnaire(X, tie_axes=(0, 1), tree_method=["flexible", "average"])
    with pytest.raises(ValueError, match="dense path only"):
        questionnaire(X, tie_axes=(0, 1), affinity_mode="sparse")
    with pytest.raises(ValueError, match="equal length"):
        QuestionnaireOrganizer(tie_axes=(0, 1)).fit(X[:, :7])


@pytest.mark.parametrize("factor", [1e-150, 1e150])
def test_tied_trees_do_not_depend_on_units(shuffled_band, factor):
    _, S = shuffled_band
    # noise breaks the band's exact ties, which the rounding of a rescaled copy may break
    # either way (as for untied axes)
    S = S + 0.01 * np.random.default_rng(7).random(S.shape)
    base = questionnaire(S, n_iter=2, tie_axes=(0, 1))
    scaled = questionnaire(S * factor, n_iter=2, tie_axes=(0, 1))
    assert scaled.trees[0] == base.trees[0]
    np.testing.assert_array_equal(scaled.orders[0], base.orders[0])
    np.testing.assert_allclose(scaled.distances[0], base.distances[0] * factor, rtol=1e-12)


def test_tied_ward_features_that_do_not_fit_together_fall_back_to_the_distances(
    shuffled_band, monkeypatch
):
    from skorg.trees import build_tree

    _, S = shuffled_band
    S = S + 0.01 * np.random.default_rng(7).random(S.shape)
    kw = {"n_iter": 1, "tie_axes": (0, 1), "tree_method": "ward", "early_stopping": "never"}
    # each slice's features (36 x 97 tree nodes, three copies: 84 kB) fit in 94 kB, both side
    # by side do not: Ward then takes the summed EMD itself
    monkeypatch.setenv("SKORG_MAX_MEMORY", "0.09")
    res = questionnaire(S, **kw)
    want = build_tree("ward", distances=res.distances[0], optimal_ordering=False)
    assert res.trees[0].same_partitions(want)
    monkeypatch.delenv("SKORG_MAX_MEMORY")
    roomy = questionnaire(S, **kw)  # Ward of the features side by side, a different tree
    assert not roomy.trees[0].same_partitions(want)
