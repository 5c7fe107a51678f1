"""SciPy sparse input: the organizer, the affinities and the tree EMD equal the dense path."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import config_context

from skorg import QuestionnaireOrganizer
from skorg.datasets import make_shuffled_matrix
from skorg.metrics import (
    correlation_affinity,
    cosine_affinity,
    gaussian_affinity,
    multi_tree_emd,
    tree_emd,
    tree_emd_features,
)
from skorg.organize import questionnaire
from skorg.trees import dyadic_tree, flexible_tree


@pytest.fixture(scope="module")
def sparse_band():
    X = make_shuffled_matrix(48, 36, kind="band", random_state=3).X
    X[np.abs(X) < 0.6] = 0.0  # about 3 in 4 entries are zeros
    X[5] = 0.0  # an empty row
    X[:, 7] = 0.0  # an empty column
    return X


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("init", ["cosine", "correlation", "gaussian"])
def test_organizer_sparse_equals_dense(sparse_band, fmt, init):
    X = sparse_band
    S = sp.csr_matrix(X) if fmt == "csr" else sp.csc_matrix(X)
    assert S.nnz < 0.4 * X.size
    dense = QuestionnaireOrganizer(n_iter=2, init_affinity=init).fit(X)
    sparse = QuestionnaireOrganizer(n_iter=2, init_affinity=init).fit(S)
    for a, b in zip(dense.trees_, sparse.trees_):
        assert a.same_partitions(b)
    for a, b in zip(dense.orders_, sparse.orders_):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(dense.distances_, sparse.distances_):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)
    for a, b in zip(dense.affinities_, sparse.affinities_):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)
    out = sparse.transform(S)
    assert sp.issparse(out)
    np.testing.assert_array_equal(out.toarray(), dense.transform(X))
    np.testing.assert_array_equal(sparse.organize(S).toarray(), dense.organize(X))
    np.testing.assert_array_equal(sparse.inverse_transform(out).toarray(), X)
    assert sparse.score(S) == pytest.approx(dense.score(X), rel=1e-12)
    assert S.nnz == sp.csr_matrix(X).nnz  # the input is left as it was


def test_score_in_row_blocks_equals_dense(sparse_band):
    S = sp.csr_matrix(sparse_band)
    org = QuestionnaireOrganizer(n_iter=1).fit(S)
    with config_context(working_memory=0.001):  # a few rows per block
        blocked = org.score(S)
    assert blocked == pytest.approx(org.score(sparse_band), rel=1e-12)


def test_questionnaire_functional_twin_accepts_sparse(sparse_band):
    a = questionnaire(sparse_band, n_iter=1)
    b = questionnaire(sp.csr_matrix(sparse_band), n_iter=1)
    for x, y in zip(a.orders, b.orders):
        np.testing.assert_array_equal(x, y)


def test_sparse_affinities_equal_dense(sparse_band):
    X = sparse_band.copy()
    X[3] = 2.5  # a constant row: no direction after centring
    S = sp.csr_matrix(X)
    np.testing.assert_allclose(cosine_affinity(S), cosine_affinity(X), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(
        cosine_affinity(S, threshold=None, absolute=True),
        cosine_affinity(X, threshold=None, absolute=True),
        rtol=1e-12,
        atol=1e-14,
    )
    np.testing.assert_allclose(
        correlation_affinity(S), correlation_affinity(X), rtol=1e-10, atol=1e-12
    )
    np.testing.assert_allclose(
        gaussian_affinity(S, n_neighbors=4),
        gaussian_affinity(X, n_neighbors=4),
        rtol=1e-10,
        atol=1e-14,  # exp(-600) and beyond: the exponent's rounding, magnified
    )
    # units do not matter to the cosine of a sparse matrix
    np.testing.assert_allclose(cosine_affinity(S * 1e-150), cosine_affinity(X), rtol=1e-12)
    np.testing.assert_allclose(cosine_affinity(S * 1e150), cosine_affinity(X), rtol=1e-12)


def test_sparse_tree_emd_equals_dense_in_blocks(sparse_band):
    X = sparse_band
    S = sp.csc_matrix(X)
    row_tree = flexible_tree(cosine_affinity(X))
    for kwargs in ({}, {"alpha": 1.0, "beta": 0.0}, {"exclude_singletons": True}):
        dense = tree_emd(X, row_tree, **kwargs)
        np.testing.assert_allclose(tree_emd(S, row_tree, **kwargs), dense, rtol=1e-12)
        with config_context(working_memory=0.001):  # one folder or so per block
            np.testing.assert_allclose(tree_emd(S, row_tree, **kwargs), dense, rtol=1e-12)
    np.testing.assert_allclose(
        tree_emd_features(S, row_tree), tree_emd_features(X, row_tree), rtol=1e-12
    )
    col_tree = dyadic_tree(X.shape[1])
    np.testing.assert_allclose(
        multi_tree_emd(S, [None, col_tree], axis=0),
        multi_tree_emd(X, [None, col_tree], axis=0),
        rtol=1e-12,
    )
    f32 = tree_emd(S, row_tree, dtype=np.float32)
    assert f32.dtype == np.float32
    np.testing.assert_allclose(f32, tree_emd(X, row_tree), rtol=1e-5)


def test_sparse_input_errors(sparse_band):
    S = sp.csr_matrix(sparse_band)
    bad = S.copy()
    bad.data[0] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite"):
        cosine_affinity(bad)
    with pytest.raises(ValueError, match=r"NaN|finite|infinity"):
        QuestionnaireOrganizer(n_iter=1).fit(bad)
    with pytest.raises(ValueError, match="missing_values needs a dense X"):
        cosine_affinity(S, missing_values=0)
    with pytest.raises(TypeError, match="real"):
        cosine_affinity(sp.csr_matrix(np.eye(3) * 1j))
    with pytest.raises(ValueError, match="tree"):
        tree_emd(S, dyadic_tree(3))


def test_knn_path_checks_memory_and_equals_dense(sparse_band, monkeypatch):
    S = sp.csr_matrix(sparse_band)
    # the k-NN path keeps X sparse; its dense rows and features are checked before use
    with config_context(working_memory=1e-4):
        questionnaire(S, n_iter=1, affinity_mode="sparse", n_neighbors=5)
    monkeypatch.setenv("SKORG_MAX_MEMORY", "0.001")
    with pytest.raises(MemoryError, match="memory budget"):
        questionnaire(S, n_iter=1, affinity_mode="sparse", n_neighbors=5)
    monkeypatch.delenv("SKORG_MAX_MEMORY")
    a = questionnaire(S, n_iter=1, affinity_mode="sparse", n_neighbors=5, random_state=0)
    b = questionnaire(sparse_band, n_iter=1, affinity_mode="sparse", n_neighbors=5, random_state=0)
    for x, y in zip(a.orders, b.orders):
        np.testing.assert_array_equal(x, y)
