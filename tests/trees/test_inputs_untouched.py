"""Tree constructors leave the caller's arrays alone (values and flags)."""

import numpy as np
import scipy.sparse as sp

from skorg.trees import PartitionTree, dyadic_tree, sparse_flexible_tree


def test_constructors_do_not_make_the_callers_array_read_only():
    order = np.array([2, 0, 3, 1], dtype=np.intp)
    tree = dyadic_tree(order)
    assert order.flags.writeable
    order[0] = 99  # the tree has its own copy
    np.testing.assert_array_equal(tree.leaf_order, [2, 0, 3, 1])

    leaf = np.array([1, 0, 2], dtype=np.intp)
    t2 = PartitionTree(leaf, [np.array([0]), np.array([0, 2]), np.arange(3)])
    assert leaf.flags.writeable and not t2.leaf_order.flags.writeable

    levels = np.array([[0, 0, 0, 0], [0, 1, 0, 1], [0, 1, 2, 3]])
    leaf_order = np.array([0, 2, 1, 3], dtype=np.intp)
    t3 = PartitionTree.from_levels(levels, leaf_order=leaf_order)
    assert leaf_order.flags.writeable and levels.flags.writeable
    np.testing.assert_array_equal(t3.leaf_order, [0, 2, 1, 3])


def test_sparse_flexible_tree_leaves_the_csr_matrix_alone():
    x = np.sort(np.random.default_rng(0).random(600)) * 6
    A = sp.csr_matrix(np.exp(-(np.subtract.outer(x, x) ** 2)))  # entries under the 1e-8 floor
    data, indices, indptr, nnz = A.data.copy(), A.indices.copy(), A.indptr.copy(), A.nnz
    tree = sparse_flexible_tree(A, random_state=0)
    assert tree.n_points == 600
    assert A.nnz == nnz
    np.testing.assert_array_equal(A.data, data)
    np.testing.assert_array_equal(A.indices, indices)
    np.testing.assert_array_equal(A.indptr, indptr)
    # and the same tree again from the same (untouched) matrix
    assert sparse_flexible_tree(A, random_state=0).same_partitions(tree)


def test_dyadic_tree_rejects_fractional_sizes():
    import pytest

    with pytest.raises(TypeError, match="order"):
        dyadic_tree(2.5)
    with pytest.raises(TypeError, match="order"):
        dyadic_tree(True)
