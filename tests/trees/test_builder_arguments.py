"""The tree builders check every argument: n_components, the children order of
with_leaf_order, the geometry's container and the builder parameters of build_tree."""

import numpy as np
import pytest
import scipy.sparse as sp

from skorg import QuestionnaireOrganizer
from skorg.trees import build_tree, dyadic_tree, hierarchical_tree, hybrid_tree


@pytest.fixture(scope="module")
def geometry():
    x = np.random.default_rng(0).random(9)
    D = np.abs(np.subtract.outer(x, x))
    return D, np.exp(-D / np.median(D))


@pytest.mark.parametrize("bad", [0, -1, 2.0, True, "8", None])
def test_n_components_must_be_a_positive_integer(geometry, bad):
    D, A = geometry
    for call in (
        lambda: hierarchical_tree(D, method="ward", n_components=bad),
        lambda: hierarchical_tree(affinity=A, method="ward", n_components=bad),
        lambda: hybrid_tree(D, n_components=bad),
        lambda: build_tree("ward", distances=D, n_components=bad),
    ):
        with pytest.raises(ValueError, match="n_components must be a positive integer"):
            call()


def test_one_component_and_more_than_the_points_are_valid(geometry):
    D, _ = geometry
    one = hierarchical_tree(D, method="ward", n_components=1)
    assert one.is_binary and one.n_points == 9
    # at most n_points - 1 diffusion coordinates exist: larger values give that tree
    assert hierarchical_tree(D, method="ward", n_components=100) == hierarchical_tree(
        D, method="ward", n_components=8
    )


@pytest.mark.parametrize(
    "returns",
    [
        lambda node, kids: kids + 0.5,  # fractional ids were truncated to a permutation
        lambda node, kids: (kids[::-1] + 0.25).tolist(),
        lambda node, kids: [float("nan")] * kids.shape[0],
        lambda node, kids: ["a"] * kids.shape[0],
        lambda node, kids: kids[None],
    ],
)
def test_with_leaf_order_refuses_what_is_not_a_permutation_of_ids(returns):
    tree = dyadic_tree(8)
    with pytest.raises((TypeError, ValueError), match="children_order must return"):
        tree.with_leaf_order(returns)


def test_with_leaf_order_takes_whole_numbers_and_needs_a_callable():
    tree = dyadic_tree(8)
    flipped = tree.with_leaf_order(lambda node, kids: kids[::-1])
    np.testing.assert_array_equal(flipped.leaf_order, np.arange(8)[::-1])
    as_floats = tree.with_leaf_order(lambda node, kids: kids[::-1].astype(float))
    assert as_floats == flipped
    with pytest.raises(ValueError, match=r"permute the children of node 0 \(\[1, 2\]\)"):
        tree.with_leaf_order(lambda node, kids: [kids[0], kids[0]])
    with pytest.raises(TypeError, match="children_order must be a callable"):
        tree.with_leaf_order([1, 2])


METHODS = ["flexible", "average", "complete", "single", "weighted", "ward", "bisection", "hybrid"]


@pytest.mark.parametrize("method", METHODS)
def test_build_tree_takes_nested_lists(geometry, method):
    D, A = geometry
    kind = "affinity" if method == "flexible" else "distances"
    matrix = A if method == "flexible" else D
    assert build_tree(method, **{kind: matrix.tolist()}) == build_tree(method, **{kind: matrix})


@pytest.mark.parametrize("method", METHODS)
def test_unknown_builder_parameters_are_named(geometry, method):
    D, A = geometry
    kind = "affinity" if method == "flexible" else "distances"
    with pytest.raises(ValueError, match=r"does not take the parameter\(s\) \['colour'\]") as info:
        build_tree(method, **{kind: A if method == "flexible" else D}, colour=1)
    message = str(info.value)
    expected = {
        "flexible": "n_eigs",
        "bisection": "density_normalize",
        "hybrid": "n_top",
    }.get(method, "merge_tolerance")
    assert expected in message  # the accepted ones are listed


def test_unknown_tree_params_through_the_organizer_and_the_sparse_builder(geometry):
    _, A = geometry
    X = np.random.default_rng(1).random((10, 8))
    with pytest.raises(ValueError, match=r"\['bar'\].*tree_params.*merge_tolerance"):
        QuestionnaireOrganizer(tree_method="average", tree_params={"bar": 2}).fit(X)
    with pytest.raises(ValueError, match=r"sparse_flexible_tree.*sample_size"):
        build_tree("flexible", affinity=sp.csr_matrix(A), colour=2)
    # known parameters still reach the builders
    tree = build_tree("average", distances=A, merge_tolerance=1.0)
    assert tree.n_levels == 2
