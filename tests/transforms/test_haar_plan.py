"""The kernels' nodes of a tree leave its one-child chains out and give the same coefficients."""

import numba
import numpy as np
import pytest

from skorg._kernels import _haar as block_kernels
from skorg.transforms import haar_basis, haar_coefficient_info, haar_transform
from skorg.transforms._haar_plan import _build_plan
from skorg.trees import PartitionTree, dyadic_tree, linkage_tree


def _trees():
    rng = np.random.default_rng(0)
    peeled = [np.zeros(30, int), *(np.minimum(np.arange(30), d) for d in range(1, 12))]
    levels = [np.zeros(300, dtype=int)]
    for _ in range(3):
        levels.append(levels[-1] * 4 + rng.integers(0, 4, size=300))
    levels += [levels[-1], np.arange(300)]
    return {
        "linkage": linkage_tree(rng.normal(size=(200, 3))),
        "ward": linkage_tree(rng.normal(size=(150, 3)), method="ward"),
        "caterpillar": PartitionTree.from_levels(np.array([*peeled, np.arange(30)])),
        "chain": PartitionTree.from_levels(
            np.array([np.zeros(40, int), np.zeros(40, int), np.arange(40) // 2, np.arange(40)])
        ),
        "star": PartitionTree.from_levels(np.array([np.zeros(37, int), np.arange(37)])),
        "wide": PartitionTree.from_levels(np.array(levels)),
        "dyadic 100": dyadic_tree(rng.permutation(100)),
        "two points": PartitionTree.from_levels([[0, 0], [0, 0], [0, 1]]),
        "one point": PartitionTree.from_levels([[0], [0], [0]]),
    }


TREES = _trees()


@pytest.mark.parametrize("name", list(TREES))
@pytest.mark.parametrize("order", ["bfs", "reference"])
def test_the_kernels_nodes_are_a_tree_in_breadth_first_order_without_chains(name, order):
    tree = TREES[name]
    plan = _build_plan(tree, order)
    n, first_leaf = tree.n_points, plan.first_leaf
    span, parent = plan.child_span, plan.parent
    assert parent.shape[0] == first_leaf + n and parent[0] == -1
    kept = 0
    for v in range(first_leaf):
        kids = np.arange(*span[v])
        assert kids.shape[0] >= 1 and np.all(kids > v) and np.all(parent[kids] == v)
        # children are all leaves or all folders; only a holder has a single child, a leaf
        assert np.all(kids >= first_leaf) or np.all(kids < first_leaf)
        if kids.shape[0] == 1:
            assert kids[0] >= first_leaf
        kept += kids.shape[0]
    assert kept == first_leaf + n - 1  # every node but the root is somebody's child, once
    # no folder of two or more children is lost, and no chain is kept
    branching = int(np.count_nonzero(tree.n_children >= 2))
    holders = int(np.count_nonzero(np.diff(span[:first_leaf], axis=1) == 1))
    assert first_leaf == branching + holders
    # the coefficients are on folders of two or more children, grouped by folder
    assert np.all(np.diff(span[plan.cnode], axis=1) >= 2)
    starts = np.flatnonzero(np.diff(plan.cnode, prepend=-1) != 0)
    assert np.unique(plan.cnode).shape[0] == starts.shape[0]


@pytest.mark.parametrize("name", list(TREES))
@pytest.mark.parametrize("order", ["bfs", "reference"])
def test_leaving_the_chains_out_changes_no_bit(name, order):
    # the node-by-node kernels on the tree's own nodes and on the contracted ones, both ways,
    # across rows and along them, in both precisions
    tree = TREES[name]
    full, contracted = _build_plan(tree, order, contract=False), _build_plan(tree, order)
    rng = np.random.default_rng(1)
    n = tree.n_points
    for shape, axis in (((n, 70), 0), ((5, n), 1), ((3, n, 20), 1)):
        A, B = int(np.prod(shape[:axis])), int(np.prod(shape[axis + 1 :]))
        for dtype in (np.float64, np.float32):
            X = rng.normal(size=shape).astype(dtype)
            X[..., 0] = -0.0
            for kernel in (block_kernels.haar_forward, block_kernels.haar_inverse):
                outs = []
                for plan in (full, contracted):
                    out = np.empty_like(X)
                    kernel(X.reshape(-1), out.reshape(-1), A, n, B, *plan.kernel_args(),
                           numba.get_num_threads())  # fmt: skip
                    outs.append(out)
                # the same numbers; a zero may differ in sign, as a chain's inverse added
                # +0.0 to its folder's total (which makes -0.0 into 0.0) once per level
                np.testing.assert_array_equal(outs[0], outs[1])
                nonzero = outs[0] != 0
                bits = [out.view(f"i{out.itemsize}")[nonzero] for out in outs]
                np.testing.assert_array_equal(bits[0], bits[1])


def test_a_linkage_tree_keeps_at_most_two_nodes_per_point():
    # a linkage tree's level representation pads every branch to the deepest level: about
    # ten nodes per point here, of which the kernels keep the folders, holders and leaves
    tree = TREES["linkage"]
    plan = _build_plan(tree, "bfs")
    assert tree.n_nodes > 5 * tree.n_points
    assert plan.parent.shape[0] <= 3 * tree.n_points - 1
    info = haar_coefficient_info(tree)  # in the tree's own node ids
    assert np.all(tree.n_children[info["node"][1:]] >= 2)
    assert np.array_equal(tree.parent[info["plus_node"][1:]], info["node"][1:])
    W = haar_basis(tree)
    x = np.random.default_rng(2).normal(size=tree.n_points)
    np.testing.assert_allclose(haar_transform(x, tree), x @ W, atol=1e-12)
