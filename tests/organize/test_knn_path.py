"""The k-NN path's block-wise steps: features of row blocks equal those of the whole, and
the path runs on a sparse X without a dense copy of it."""

import numpy as np
import scipy.sparse as sp

from skorg.metrics import tree_emd_embedding
from skorg.organize import questionnaire
from skorg.organize._sparse import emd_feature_blocks
from skorg.trees import PartitionTree


def _counts(n, p, seed=0):
    rng = np.random.default_rng(seed)
    types = rng.integers(0, 3, n)
    rates = rng.lognormal(0, 1, (3, p))
    return sp.csr_matrix(rng.poisson(0.3 * rates[types]).astype(float)), types


def test_feature_blocks_of_sparse_rows_are_bit_for_bit_the_dense_features():
    X, _ = _counts(700, 40)
    from scipy.cluster.hierarchy import linkage

    tree = PartitionTree.from_linkage(linkage(X.T.toarray(), "average"))
    for axis, others in ((0, [None, tree]), (1, [PartitionTree.from_linkage(
            linkage(X.toarray(), "ward")), None])):  # fmt: skip
        dense = tree_emd_embedding(
            X.toarray(), others, axis=axis, alphas=[0.0, 0.5], betas=[1.0, 0.5],
            dtype=np.float32,
        )  # fmt: skip
        blocks = emd_feature_blocks(X, others, axis, [0.0, 0.5], [1.0, 0.5])
        np.testing.assert_array_equal(blocks, dense)
        np.testing.assert_array_equal(
            emd_feature_blocks(X.toarray(), others, axis, [0.0, 0.5], [1.0, 0.5]), dense
        )


def test_knn_path_on_sparse_counts_equals_the_dense_input():
    X, _ = _counts(300, 30, seed=1)
    a = questionnaire(X, n_iter=2, affinity_mode="sparse", n_neighbors=6, random_state=0)
    b = questionnaire(X.toarray(), n_iter=2, affinity_mode="sparse", n_neighbors=6,
                      random_state=0)  # fmt: skip
    for ta, tb in zip(a.trees, b.trees):
        assert ta == tb
    for da, db in zip(a.distances, b.distances):
        np.testing.assert_array_equal(da.toarray(), db.toarray())
