"""Linkage trees of a sparse affinity equal those of the dense affinity, leaf order included."""

import numpy as np
import pytest
import scipy.sparse as sp

from skorg.metrics import gaussian_affinity
from skorg.trees import build_tree, hierarchical_tree


def _graph(n=40, seed=1, pieces=1):
    rng = np.random.default_rng(seed)
    P = rng.normal(size=(n, 3)) + 20.0 * (np.arange(n) % pieces)[:, None]
    A = gaussian_affinity(P, n_neighbors=5)
    A[A < 0.05] = 0.0  # a sparse graph: most pairs left out
    return 0.5 * (A + A.T)


@pytest.mark.parametrize("method", ["single", "ward"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("pieces", [1, 2])
def test_sparse_affinity_gives_the_dense_tree_and_leaf_order(method, dtype, pieces):
    A = _graph(pieces=pieces).astype(dtype)
    S = sp.csr_matrix(A)
    assert S.nnz < 0.35 * A.size
    dense = hierarchical_tree(affinity=A, method=method)
    sparse = hierarchical_tree(affinity=S, method=method)
    assert sparse.same_partitions(dense)
    np.testing.assert_array_equal(sparse.leaf_order, dense.leaf_order)
    assert sparse == dense
    # through the dispatcher too
    assert build_tree(method, affinity=S) == build_tree(method, affinity=A)
    # every entry stored twice, as two halves: the same matrix, the same tree
    twice = sp.csr_matrix(
        (np.repeat(S.data / 2, 2), np.repeat(S.indices, 2), 2 * S.indptr), shape=S.shape
    )
    assert hierarchical_tree(affinity=twice, method=method) == dense


def test_sparse_affinity_without_optimal_ordering_keeps_the_partitions():
    A = _graph()
    S = sp.csr_matrix(A)
    for method in ("single", "ward"):
        plain = hierarchical_tree(affinity=S, method=method, optimal_ordering=False)
        assert plain.same_partitions(hierarchical_tree(affinity=A, method=method))


def test_sparse_optimal_ordering_asks_for_its_memory_first(monkeypatch):
    S = sp.csr_matrix(_graph())
    monkeypatch.setenv("SKORG_MAX_MEMORY", "0.01")  # 10 KiB: less than 3 x 40 x 40 x 8 bytes
    with pytest.raises(MemoryError, match="pass optimal_ordering=False"):
        hierarchical_tree(affinity=S, method="single")
    hierarchical_tree(affinity=S, method="single", optimal_ordering=False)  # no dense matrix
