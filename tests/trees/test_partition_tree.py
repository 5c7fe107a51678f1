import pickle

import numpy as np
import pytest
from scipy.cluster.hierarchy import dendrogram, is_valid_linkage, linkage

from skorg.trees import PartitionTree, dyadic_tree, linkage_tree
from tests.conftest import ref_tree


def random_levels(rng, n, n_levels):
    """Random nested partitions: each level splits folders of the level above."""
    levels = [np.zeros(n, dtype=int)]
    for _ in range(n_levels - 2):
        prev = levels[-1]
        row = prev * (n + 1) + rng.integers(0, 3, size=n)  # split each folder in up to 3
        levels.append(row)
    levels.append(np.arange(n))
    return np.array(levels)


def test_flat_arrays_are_consistent():
    rng = np.random.default_rng(0)
    tree = PartitionTree.from_levels(random_levels(rng, 40, 5))
    for node in range(tree.n_nodes):
        kids = tree.children(node)
        np.testing.assert_array_equal(tree.parent[kids], node)
        if kids.size:
            assert tree.start[kids[0]] == tree.start[node]
            assert tree.end[kids[-1]] == tree.end[node]
            np.testing.assert_array_equal(tree.end[kids[:-1]], tree.start[kids[1:]])
            assert np.all(tree.level[kids] == tree.level[node] + 1)
    assert tree.size[0] == 40 and tree.level[0] == 0
    assert np.all(tree.size[tree.level_nodes(tree.n_levels - 1)] == 1)
    np.testing.assert_array_equal(tree.leaf_order[tree.leaf_position], np.arange(40))


@pytest.mark.parametrize("case", ["tree_emd", "haar", "quest2d_holder"])
@pytest.mark.parametrize("axis", ["row", "col"])
def test_levels_round_trip_reference(reference, case, axis):
    data = reference(case)
    tree = PartitionTree.from_levels(data[f"{axis}_levels"])
    # default leaf order of the interchange format is the stored one
    np.testing.assert_array_equal(tree.leaf_order, data[f"{axis}_leaf_order"])
    np.testing.assert_array_equal(tree.to_levels(), data[f"{axis}_levels"])
    assert tree == ref_tree(data, axis)


def test_from_levels_completes_root_and_leaves():
    tree = PartitionTree.from_levels([[0, 0, 1, 1]])
    assert tree.n_levels == 3
    np.testing.assert_array_equal(tree.level_sizes(), [1, 2, 4])


def test_from_levels_rejects_non_nested_and_non_contiguous():
    with pytest.raises(ValueError, match="refine"):
        PartitionTree.from_levels([[0, 0, 0, 0], [0, 0, 1, 1], [0, 1, 1, 2], [0, 1, 2, 3]])
    with pytest.raises(ValueError, match="contiguous"):
        PartitionTree.from_levels([[0, 0, 0], [0, 1, 0], [0, 1, 2]], leaf_order=[0, 1, 2])
    with pytest.raises(ValueError, match="permutation"):
        PartitionTree.from_levels([[0, 0], [0, 1]], leaf_order=[0, 0])
    with pytest.raises(TypeError, match="integers"):
        PartitionTree.from_levels([[0.5, 0.5], [0, 1]])


def _bounds_oracle(levels, leaf_order):
    """Folder starts per level: the positions where the label changes along leaf_order."""
    out = []
    for row in np.asarray(levels)[:, leaf_order]:
        out.append([p for p in range(row.shape[0]) if p == 0 or row[p] != row[p - 1]])
    return out


@pytest.mark.parametrize("seed", range(6))
def test_from_valid_levels_equals_from_levels(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    levels = random_levels(rng, n, int(rng.integers(2, 6)))
    # a depth-first order that visits the folders of every level in a random order
    keys = [rng.permutation(row.max() + 1)[row] for row in levels]
    order = np.lexsort(keys[::-1])
    checked = PartitionTree.from_levels(levels, leaf_order=order)
    fast = PartitionTree._from_valid_levels(levels, order)
    for tree in (checked, fast):
        np.testing.assert_array_equal(tree.leaf_order, order)
        bounds = [tree.start[tree.level_nodes(lvl)].tolist() for lvl in range(tree.n_levels)]
        assert bounds == _bounds_oracle(levels, order)
    for name in ("start", "end", "size", "level", "parent", "child_ptr", "level_ptr"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(checked, name))
    # the unchecked constructor agrees with the checked one and freezes its arrays too
    assert fast == PartitionTree(order, bounds)
    assert not fast.start.flags.writeable and not fast.leaf_position.flags.writeable


def test_from_levels_error_cases():
    # a label in two runs of the leaf order, on a lower level than a refinement error
    with pytest.raises(ValueError, match="Folders of level 1 are not contiguous"):
        PartitionTree.from_levels([[0, 0, 0, 0], [5, 7, 5, 7], [0, 1, 2, 3]], [0, 1, 2, 3])
    # contiguous everywhere, yet a folder straddles two parents
    with pytest.raises(ValueError, match="Level 2 does not refine level 1"):
        PartitionTree.from_levels([[0] * 4, [0, 0, 1, 1], [3, 9, 9, 4], [0, 1, 2, 3]], range(4))
    with pytest.raises(ValueError, match="permutation"):
        PartitionTree.from_levels([[0, 0, 0], [0, 1, 2]], leaf_order=[0, 1])
    with pytest.raises(ValueError, match="2-D"):
        PartitionTree.from_levels([0, 1, 2])
    with pytest.raises(ValueError, match="at least one point"):
        PartitionTree.from_levels(np.zeros((2, 0), dtype=int))
    # arbitrary (negative, sparse) labels are fine
    tree = PartitionTree.from_levels([[-4, -4, -4], [9, -1, 9], [0, 5, 2]])
    assert tree.same_partitions(PartitionTree.from_levels([[0, 0, 0], [0, 1, 0], [0, 1, 2]]))
    assert PartitionTree.from_levels([[3]]).n_levels == 1


def test_pickle_equality_and_hash():
    tree = dyadic_tree(np.array([3, 1, 0, 2, 4]))
    clone = pickle.loads(pickle.dumps(tree))
    assert clone == tree and hash(clone) == hash(tree)
    assert clone != dyadic_tree(5)
    assert clone.same_partitions(tree)


def test_same_partitions_ignores_children_order():
    a = PartitionTree.from_levels([[0] * 4, [0, 0, 1, 1], [0, 1, 2, 3]])
    b = PartitionTree.from_levels([[0] * 4, [0, 0, 1, 1], [0, 1, 2, 3]], leaf_order=[3, 2, 1, 0])
    assert a != b and a.same_partitions(b)
    c = PartitionTree.from_levels([[0] * 4, [0, 1, 1, 0], [0, 1, 2, 3]])
    assert not a.same_partitions(c)
    # the same folder sizes on every level, grouped differently further down
    d = PartitionTree.from_levels([[0] * 6, [0, 0, 0, 1, 1, 1], [0, 0, 1, 2, 2, 3], range(6)])
    e = PartitionTree.from_levels([[0] * 6, [0, 0, 0, 1, 1, 1], [0, 1, 1, 2, 2, 3], range(6)])
    f = PartitionTree.from_levels([[0] * 6, [1, 1, 1, 0, 0, 0], [5, 5, 4, 3, 3, 2], range(6)])
    assert not d.same_partitions(e) and d.same_partitions(f) and e.same_partitions(e)
    assert d.same_partitions(dyadic_tree(6)) and not e.same_partitions(dyadic_tree(6))
    assert not d.same_partitions(dyadic_tree(5))


@pytest.mark.parametrize("n", [1, 2, 5, 8, 13])
def test_dyadic_tree(n):
    tree = dyadic_tree(n)
    assert tree.n_points == n
    assert tree.n_levels == (int(np.ceil(np.log2(n))) + 1 if n > 1 else 1)
    assert tree.is_binary
    if n & (n - 1) == 0:
        np.testing.assert_array_equal(tree.level_sizes(), 2 ** np.arange(tree.n_levels))


def test_linkage_round_trip_and_scipy_dendrogram():
    tree = dyadic_tree(np.random.default_rng(1).permutation(11))
    Z = tree.to_linkage()
    assert is_valid_linkage(Z)
    # scipy draws the tree with our leaf order
    leaves = dendrogram(Z, no_plot=True)["leaves"]
    back = PartitionTree.from_linkage(Z)
    np.testing.assert_array_equal(np.sort(leaves), np.arange(11))
    # every folder of the tree is a cluster of the linkage and vice versa
    folders = {tuple(sorted(tree.folder(v))) for v in range(tree.n_nodes)}
    assert folders == {tuple(sorted(back.folder(v))) for v in range(back.n_nodes)}


def test_from_linkage_matches_scipy_clusters():
    X = np.random.default_rng(2).normal(size=(15, 3))
    Z = linkage(X, "average")
    tree = PartitionTree.from_linkage(Z)
    assert tree.is_binary
    folders = {tuple(sorted(tree.folder(v))) for v in range(tree.n_nodes)}
    n = 15
    members = [[i] for i in range(n)]
    for a, b, _, _ in Z:
        members.append(members[int(a)] + members[int(b)])
    assert folders == {tuple(sorted(m)) for m in members}
    assert linkage_tree(X).n_points == 15


def test_to_linkage_rejects_multiway():
    tree = PartitionTree.from_levels([[0, 0, 0], [0, 1, 2]])
    with pytest.raises(ValueError, match="binary"):
        tree.to_linkage()


def test_with_leaf_order_keeps_partitions():
    tree = dyadic_tree(8)
    flipped = tree.with_leaf_order(lambda node, kids: kids[::-1])
    np.testing.assert_array_equal(flipped.leaf_order, np.arange(8)[::-1])
    assert flipped.same_partitions(tree)
