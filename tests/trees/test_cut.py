import pickle

import numpy as np
import pytest
from scipy.cluster.hierarchy import cophenet, fcluster, linkage
from scipy.spatial.distance import squareform

from skorg.trees import PartitionTree, dyadic_tree


def same_partition(a, b):
    """True if the labellings a and b group the points alike."""
    pairs = np.unique(np.stack([a, b]), axis=1)
    return pairs.shape[1] == np.unique(a).shape[0] == np.unique(b).shape[0]


def folders_of(tree):
    return {frozenset(tree.folder(v).tolist()) for v in range(tree.n_nodes)}


def groups(labels):
    return {frozenset(np.flatnonzero(labels == g).tolist()) for g in np.unique(labels)}


def level_tree(Z):
    """The tree of a linkage without its merge heights: cut level by level."""
    tree = PartitionTree.from_linkage(Z)
    return PartitionTree.from_levels(tree.to_levels(), leaf_order=tree.leaf_order)


@pytest.mark.parametrize("method", ["single", "complete", "average", "weighted", "ward"])
def test_cut_equals_fcluster_maxclust_on_linkage_trees(method):
    X = np.random.default_rng(3).normal(size=(40, 3))
    Z = linkage(X, method)
    tree = PartitionTree.from_linkage(Z)
    flipped = tree.with_leaf_order(lambda node, kids: kids[::-1])
    clone = pickle.loads(pickle.dumps(tree))
    for k in range(1, 41):
        expected = fcluster(Z, k, criterion="maxclust")
        assert np.unique(expected).shape[0] == k  # distinct heights: fcluster is exact
        for t in (tree, flipped, clone):
            assert same_partition(t.cut(k), expected)


def test_merge_height_is_the_cophenetic_distance_across_the_split():
    X = np.random.default_rng(4).normal(size=(25, 2))
    Z = linkage(X, "average")
    tree = PartitionTree.from_linkage(Z)
    C = squareform(cophenet(Z))
    for node in range(tree.n_nodes):
        kids = tree.children(node)
        if kids.shape[0] == 2:
            a, b = tree.folder(kids[0])[0], tree.folder(kids[1])[0]
            assert tree.merge_height[node] == C[a, b]
        elif tree.size[node] == 1:
            assert tree.merge_height[node] == 0.0
    assert dyadic_tree(5).merge_height is None
    assert not tree.merge_height.flags.writeable


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cut_of_a_binary_tree_is_exact_and_made_of_its_folders(seed):
    rng = np.random.default_rng(seed)
    Z = linkage(rng.normal(size=(30, 2)), "single")  # unbalanced, with chains
    for tree in (level_tree(Z), dyadic_tree(rng.permutation(30))):
        assert tree.merge_height is None and tree.is_binary
        folders = folders_of(tree)
        for k in range(1, 31):
            labels = tree.cut(k)
            assert labels.shape == (30,) and np.unique(labels).shape[0] == k
            np.testing.assert_array_equal(np.unique(labels), np.arange(k))
            assert groups(labels) <= folders  # every cluster is a folder of the tree
            # numbered left to right along the leaf order
            along = labels[tree.leaf_order]
            np.testing.assert_array_equal(along, np.sort(along))


def test_cut_at_a_level_size_is_that_level_and_splits_largest_first():
    Z = linkage(np.random.default_rng(5).normal(size=(30, 2)), "single")
    tree = level_tree(Z)
    for lvl, size in enumerate(tree.level_sizes()):
        if lvl == 0 or size > tree.level_sizes()[lvl - 1]:  # the first level of each size
            np.testing.assert_array_equal(tree.cut(int(size)), tree.labels(lvl))
    # between two levels: the coarse level with its largest splittable folders split
    tree = PartitionTree.from_levels(
        [[0] * 8, [0, 0, 0, 0, 0, 1, 1, 1], [0, 0, 0, 1, 1, 2, 2, 3], range(8)]
    )
    assert groups(tree.cut(3)) == {frozenset({0, 1, 2}), frozenset({3, 4}), frozenset({5, 6, 7})}
    assert groups(tree.cut(4)) == groups(tree.labels(2))


def test_cut_of_a_multiway_tree_is_exact_where_reachable_else_nearest():
    # root -> {0, 1, 2} (three children), {3, 4} (two), {5}
    tree = PartitionTree.from_levels([[0] * 6, [0, 0, 0, 1, 1, 2], range(6)])
    assert groups(tree.cut(3)) == groups(tree.labels(1))
    # splitting {0, 1, 2} would pass 4; splitting {3, 4} reaches it
    expected = {frozenset({0, 1, 2}), frozenset({3}), frozenset({4}), frozenset({5})}
    assert groups(tree.cut(4)) == expected
    # 2 is out of reach: 1 or 3 folders, equally near; the smaller count
    np.testing.assert_array_equal(tree.cut(2), np.zeros(6))
    # root -> four singletons: 3 is out of reach, 4 is nearer than 1
    star = PartitionTree.from_levels([[0] * 4, range(4)])
    assert np.unique(star.cut(3)).shape[0] == 4
    assert np.unique(star.cut(2)).shape[0] == 1
    assert np.array_equal(PartitionTree([0], [[0]]).cut(1), [0])


def test_cut_follows_one_child_chains():
    # {0, 1, 2, 3} stays whole for a level, then splits
    tree = PartitionTree.from_levels([[0] * 6, [0, 0, 0, 0, 1, 1], [0] * 4 + [1, 2], range(6)])
    assert groups(tree.cut(3)) == {frozenset(range(4)), frozenset({4}), frozenset({5})}
    assert np.unique(tree.cut(6)).shape[0] == 6


@pytest.mark.parametrize("bad", [0, 7, -1])
def test_cut_rejects_counts_out_of_range(bad):
    with pytest.raises(ValueError, match="n_clusters must be between 1 and"):
        dyadic_tree(6).cut(bad)


@pytest.mark.parametrize("bad", [2.0, True, "3", None])
def test_cut_rejects_non_integers(bad):
    with pytest.raises(TypeError, match="n_clusters must be an integer"):
        dyadic_tree(6).cut(bad)
