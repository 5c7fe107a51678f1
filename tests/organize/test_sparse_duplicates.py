"""Sparse matrices that store an entry more than once: every path sees the matrix that
``toarray`` gives (duplicates summed), and the caller's matrix is left as it was."""

import numpy as np
import pytest
import scipy.sparse as sp

from skorg import QuestionnaireOrganizer
from skorg._sparse_input import canonical_sparse, check_sparse_matrix
from skorg.metrics import (
    correlation_affinity,
    cosine_affinity,
    gaussian_affinity,
    multi_tree_emd,
    pairwise_tree_emd,
    tree_emd,
    tree_emd_embedding,
    tree_emd_features,
)
from skorg.organize import questionnaire
from skorg.trees import dyadic_tree


def _halves(X, fmt="csr"):
    """X with every stored entry stored twice, as two halves (``toarray()`` equals X)."""
    M = sp.csr_matrix(X if fmt == "csr" else X.T)
    data = np.repeat(M.data / 2, 2)
    S = sp.csr_matrix((data, np.repeat(M.indices, 2), M.indptr * 2), shape=M.shape)
    S = S if fmt == "csr" else S.T  # the transpose of a CSR matrix is CSC, same storage
    assert S.format == fmt and S.nnz == 2 * M.nnz and not S.has_canonical_format
    return S


def _snapshot(S):
    return S.data.copy(), S.indices.copy(), S.indptr.copy(), S.dtype


def _unchanged(S, snap):
    data, indices, indptr, dtype = snap
    assert S.dtype == dtype and not S.has_canonical_format
    np.testing.assert_array_equal(S.data, data)
    np.testing.assert_array_equal(S.indices, indices)
    np.testing.assert_array_equal(S.indptr, indptr)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.random((14, 12))
    X[X < 0.5] = 0.0
    return X


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("tree_method", [None, "ward_slices"])
def test_organizer_duplicates_give_the_trees_of_toarray(data, dtype, fmt, tree_method):
    X = data.astype(dtype)
    S = _halves(X, fmt).astype(dtype)
    assert np.array_equal(S.toarray(), X)
    params = {} if tree_method is None else {"tree_method": tree_method}
    snap = _snapshot(S)
    dense = QuestionnaireOrganizer(n_iter=2, **params).fit(X)
    sparse = QuestionnaireOrganizer(n_iter=2, **params).fit(S)
    _unchanged(S, snap)
    for a, b in zip(dense.trees_, sparse.trees_):
        assert a.same_partitions(b)
    for a, b in zip(dense.orders_, sparse.orders_):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(dense.distances_, sparse.distances_):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)


def test_questionnaire_duplicates_give_the_trees_of_toarray(data):
    S = _halves(data)
    snap = _snapshot(S)
    dense = questionnaire(data, n_iter=1)
    sparse = questionnaire(S, n_iter=1)
    _unchanged(S, snap)
    assert all(a.same_partitions(b) for a, b in zip(dense.trees, sparse.trees))
    for a, b in zip(dense.orders, sparse.orders):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("affinity", [cosine_affinity, correlation_affinity, gaussian_affinity])
def test_affinities_of_duplicates_equal_dense(data, affinity):
    S = _halves(data)
    snap = _snapshot(S)
    np.testing.assert_allclose(affinity(S), affinity(data), rtol=1e-12, atol=1e-14)
    _unchanged(S, snap)


def test_tree_emd_of_duplicates_equals_dense(data):
    S = _halves(data)
    snap = _snapshot(S)
    rows, cols = dyadic_tree(data.shape[0]), dyadic_tree(data.shape[1])
    np.testing.assert_allclose(tree_emd(S, rows), tree_emd(data, rows), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(
        tree_emd_features(S, rows), tree_emd_features(data, rows), rtol=1e-12, atol=1e-14
    )
    np.testing.assert_allclose(
        multi_tree_emd(S, [None, cols], axis=0),
        multi_tree_emd(data, [None, cols], axis=0),
        rtol=1e-12,
        atol=1e-14,
    )
    for axis, trees in ((0, [None, cols]), (1, [rows, None])):
        for dtype in (np.float64, np.float32):
            np.testing.assert_allclose(
                tree_emd_embedding(S, trees, axis=axis, dtype=dtype),
                tree_emd_embedding(data, trees, axis=axis, dtype=dtype),
                rtol=1e-6 if dtype == np.float32 else 1e-12,
                atol=1e-14,
            )
        np.testing.assert_allclose(
            pairwise_tree_emd(S, trees, axis=axis),
            pairwise_tree_emd(data, trees, axis=axis),
            rtol=1e-12,
            atol=1e-14,
        )
    _unchanged(S, snap)


def test_canonical_sparse_sums_on_a_copy(data):
    S = _halves(data)
    snap = _snapshot(S)
    C = canonical_sparse(S)
    assert C.has_canonical_format and C.nnz == np.count_nonzero(data)
    assert not np.shares_memory(C.indices, S.indices)
    np.testing.assert_array_equal(C.toarray(), data)
    _unchanged(S, snap)
    for dtype in (np.float64, np.float32):  # the caller's own dtype, and a conversion
        C = check_sparse_matrix(S, dtype=dtype)
        assert C.dtype == dtype and C.has_canonical_format
        np.testing.assert_array_equal(C.toarray(), data.astype(dtype))
        _unchanged(S, snap)
    # a canonical matrix is returned as it is: no copy
    K = sp.csr_matrix(data)
    assert canonical_sparse(K) is K


def test_duplicates_summing_past_the_float_range_are_refused():
    big = np.finfo(np.float64).max
    S = sp.csr_matrix((np.array([big, big]), np.array([0, 0]), np.array([0, 2, 2])), shape=(2, 2))
    with pytest.raises(ValueError, match="X contains 1 NaN or infinite"):
        check_sparse_matrix(S)
