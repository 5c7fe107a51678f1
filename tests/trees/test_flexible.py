import numpy as np
import pytest

from skorg.metrics import cosine_affinity
from skorg.trees import PartitionTree, flexible_tree
from tests.conftest import ref_tree


def test_reference_ordered_tree_exact(reference):
    data = reference("flex_tree")
    tree = flexible_tree(data["affinity"], tree_constant=1.0)
    expected = ref_tree(data, "ordered_c1")
    # the same nested partitions AND the reference's leaf-ordering rule
    np.testing.assert_array_equal(tree.to_levels(), expected.to_levels())
    np.testing.assert_array_equal(tree.leaf_order, data["ordered_c1_leaf_order"])
    # the unordered variant of the original has the same partitions
    assert tree.same_partitions(ref_tree(data, "plain_c1"))


@pytest.mark.parametrize("case", ["tree_emd", "haar", "quest2d_holder"])
@pytest.mark.parametrize("axis", ["row", "col"])
def test_reference_trees_from_cosine_init(reference, case, axis):
    data = reference(case)
    prefix = f"{axis}_iter00" if case.startswith("quest") else axis
    tree = flexible_tree(data[f"init_{axis}_aff"])
    assert tree == ref_tree(data, prefix)


def test_tree_shape_statistics():
    x = np.sort(np.random.default_rng(0).uniform(size=200))
    tree = flexible_tree(np.exp(-(np.subtract.outer(x, x) ** 2) / 0.01))
    bottom = tree.level_sizes()[-2]
    assert 200 / 4 < bottom < 200 / 2  # about 2.5 to 3 points per folder at the bottom
    assert tree.n_children.max() <= 8


def test_leaf_order_recovers_a_curve():
    rng = np.random.default_rng(3)
    x = rng.uniform(size=60)
    tree = flexible_tree(np.exp(-(np.subtract.outer(x, x) ** 2) / 0.02))
    ordered = x[tree.leaf_order]
    rho = np.corrcoef(np.argsort(np.argsort(ordered)), np.arange(60))[0, 1]
    assert abs(rho) > 0.97


def test_disconnected_graph_terminates():
    # two blocks and two points with no affinity to anything (cosine <= 0 everywhere)
    A = np.zeros((14, 14))
    A[:6, :6] = 0.9
    A[6:12, 6:12] = 0.8
    np.fill_diagonal(A, 1.0)
    tree = flexible_tree(A)
    assert tree.n_points == 14 and tree.level_sizes()[0] == 1
    blocks = [set(tree.folder(v)) for v in range(tree.n_nodes)]
    assert set(range(6)) in blocks and set(range(6, 12)) in blocks


def test_all_zero_affinity_and_tiny_inputs():
    for n in (2, 3, 5, 12):
        tree = flexible_tree(np.eye(n))
        assert tree.n_points == n and tree.level_sizes()[0] == 1
    tree = flexible_tree(np.ones((1, 1)))
    assert tree.n_points == 1


def test_duplicates_and_constant_rows():
    X = np.vstack([np.ones((4, 6)), np.tile(np.arange(6.0), (4, 1)), np.zeros((2, 6))])
    tree = flexible_tree(cosine_affinity(X))
    assert isinstance(tree, PartitionTree) and tree.n_points == 10


def test_rejects_bad_input():
    with pytest.raises(ValueError, match="square"):
        flexible_tree(np.ones((3, 4)))
    with pytest.raises(ValueError, match="NaN"):
        flexible_tree(np.full((3, 3), np.nan))
    with pytest.raises(ValueError, match="tree_constant"):
        flexible_tree(np.eye(3), tree_constant=0)
    with pytest.raises(ValueError, match="non-negative"):
        flexible_tree(-np.ones((3, 3)))
