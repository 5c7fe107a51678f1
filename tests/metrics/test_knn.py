import numpy as np
import pytest
import scipy.sparse as sp
from scipy.spatial.distance import cdist

from skorg.metrics import (
    cosine_affinity,
    diffusion_eigenpairs,
    dual_affinity,
    gaussian_affinity,
    knn_affinity,
    knn_indices,
    knn_tree_emd_affinity,
    landmark_diffusion_eigenpairs,
    multi_tree_emd,
    pairwise_tree_emd,
    sparse_diffusion_eigenpairs,
    tree_emd_embedding,
)
from skorg.trees import dyadic_tree


@pytest.fixture
def X():
    rng = np.random.default_rng(0)
    return rng.standard_normal((60, 7))


def _brute_knn(Z, k, metric):
    D = cdist(Z, Z, "cityblock" if metric == "manhattan" else "euclidean")
    np.fill_diagonal(D, np.inf)
    return np.argsort(D, axis=1, kind="stable")[:, :k]


@pytest.mark.parametrize("metric", ["euclidean", "manhattan"])
def test_knn_indices_match_brute_force(X, metric):
    np.testing.assert_array_equal(knn_indices(X, 5, metric=metric), _brute_knn(X, 5, metric))


@pytest.mark.slow  # pynndescent compiles its kernels on first use (about 30 s)
def test_knn_indices_pynndescent_recall(X):
    got = knn_indices(X, 5, metric="manhattan", backend="pynndescent", random_state=0)
    want = _brute_knn(X, 5, "manhattan")
    recall = np.mean([len(set(a) & set(b)) / 5 for a, b in zip(got, want)])
    assert recall >= 0.95


def _pattern(A):
    M = A.toarray()
    return M, A.copy().astype(bool).toarray()


@pytest.mark.parametrize("kind", ["cosine", "correlation"])
def test_knn_affinity_equals_dense_on_kept_pairs(X, kind):
    A = knn_affinity(X, kind=kind, n_neighbors=6)
    dense = cosine_affinity(X if kind == "cosine" else X - X.mean(axis=1, keepdims=True))
    M, kept = _pattern(A)
    np.testing.assert_allclose(M[kept], dense[kept], rtol=0, atol=1e-12)
    assert (M[~kept] == 0).all() and (M == M.T).all()
    # the graph holds the 6 nearest cosine neighbours of every point (or their zero affinity)
    nearest = np.argsort(-(dense - 2 * np.eye(60)), axis=1, kind="stable")[:, :6]
    rows = np.repeat(np.arange(60), 6)
    assert (kept[rows, nearest.ravel()] | (dense[rows, nearest.ravel()] == 0)).all()


def test_knn_affinity_gaussian_equals_dense_on_kept_pairs(X):
    A = knn_affinity(X, kind="gaussian", n_neighbors=8, gaussian_neighbors=5)
    M, kept = _pattern(A)
    np.testing.assert_allclose(M[kept], gaussian_affinity(X, n_neighbors=5)[kept], atol=1e-12)


def test_tree_emd_embedding_is_the_tensor_emd():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((4, 6, 8))
    trees = [dyadic_tree(4), None, dyadic_tree(8)]
    F = tree_emd_embedding(X, trees, axis=1, alphas=0.5, betas=[1.0, 0.0, 2.0],
                           dtype=np.float64, working_memory=1e-4)  # fmt: skip
    want = multi_tree_emd(X, trees, axis=1, alphas=0.5, betas=[1.0, 0.0, 2.0])
    np.testing.assert_allclose(cdist(F, F, "cityblock"), want, rtol=1e-12, atol=1e-12)


def test_knn_tree_emd_affinity_matches_dense_dual_affinity(X):
    tree = dyadic_tree(7)
    d, A, med = knn_tree_emd_affinity(X, [None, tree], n_neighbors=5, dtype=np.float64)
    D = multi_tree_emd(X, [None, tree], axis=0)
    assert med == pytest.approx(float(np.median(D)), rel=1e-12)
    Md, kept = d.toarray(), (d + sp.eye(60)).astype(bool).toarray()
    np.testing.assert_allclose(Md[kept], D[kept], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(A.toarray()[kept], dual_affinity(D)[kept], rtol=1e-12)
    nearest = _brute_knn(tree_emd_embedding(X, [None, tree], dtype=np.float64), 5, "manhattan")
    assert kept[np.repeat(np.arange(60), 5), nearest.ravel()].all()


def test_sparse_eigenpairs_equal_dense_on_a_complete_graph():
    rng = np.random.default_rng(2)
    x = rng.uniform(0, 1, 600)  # above the dense cut-off: ARPACK on the operator
    A = np.exp(-(np.subtract.outer(x, x) ** 2) / 0.01)
    psi, lam = sparse_diffusion_eigenpairs(sp.csr_matrix(A), 6)
    psi_d, lam_d = diffusion_eigenpairs(A, 6)
    np.testing.assert_allclose(lam, lam_d, atol=1e-9)
    np.testing.assert_allclose(psi, psi_d, atol=1e-6)


def test_sparse_eigenpairs_of_a_disconnected_graph():
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(0, 1, 400), rng.uniform(5, 6, 300)])
    A = np.exp(-(np.subtract.outer(x, x) ** 2) / 0.01)
    A[A < 1e-6] = 0.0
    psi, lam = sparse_diffusion_eigenpairs(sp.csr_matrix(A), 4)
    assert lam[1] == 1.0  # the second component
    # psi_1 is constant on each component, different between them
    assert np.ptp(psi[:400, 1]) < 1e-12 and np.ptp(psi[400:, 1]) < 1e-12
    assert abs(psi[0, 1] - psi[-1, 1]) > 0.1
    np.testing.assert_allclose(lam[2:], diffusion_eigenpairs(A, 4)[1][2:], atol=1e-9)


def test_landmark_eigenpairs_with_every_point_are_exact():
    rng = np.random.default_rng(4)
    x = rng.uniform(0, 1, 80)
    A = np.exp(-np.abs(np.subtract.outer(x, x)) / 0.3)
    psi, lam = landmark_diffusion_eigenpairs(A, np.arange(80), 5)
    psi_d, lam_d = diffusion_eigenpairs(A, 5)
    np.testing.assert_allclose(lam, lam_d, atol=1e-10)
    np.testing.assert_allclose(psi, psi_d, atol=1e-8)


def test_landmark_eigenpairs_of_a_low_rank_kernel_from_few_columns():
    # a kernel of rank 3 is reproduced exactly by any 3 independent columns
    rng = np.random.default_rng(5)
    G = rng.uniform(0.5, 1.0, (100, 3))
    A = G @ G.T
    landmarks = np.array([3, 40, 77])
    psi, lam = landmark_diffusion_eigenpairs(A[:, landmarks], landmarks, 3)
    psi_d, lam_d = diffusion_eigenpairs(A, 3)
    np.testing.assert_allclose(lam, lam_d, atol=1e-10)
    np.testing.assert_allclose(psi, psi_d, atol=1e-8)


def test_pairwise_tree_emd_blocks(X):
    trees = [None, dyadic_tree(7)]
    want = multi_tree_emd(X, trees, axis=0)
    one = pairwise_tree_emd(X, trees, axis=0)
    np.testing.assert_allclose(one, want, rtol=1e-12, atol=1e-12)
    blocks = pairwise_tree_emd(X, trees, axis=0, n_jobs=2, working_memory=1e-3)
    np.testing.assert_array_equal(blocks, one)


def test_errors(X):
    with pytest.raises(ValueError, match="metric"):
        knn_indices(X, 3, metric="cosine")
    with pytest.raises(ValueError, match="n_neighbors"):
        knn_indices(X, 0)
    with pytest.raises(ValueError, match="kind"):
        knn_affinity(X, kind="rbf")
    with pytest.raises(ValueError, match="gaussian_neighbors"):
        knn_affinity(X, kind="gaussian", n_neighbors=2, gaussian_neighbors=5)
    with pytest.raises(ValueError, match="symmetric"):
        sparse_diffusion_eigenpairs(sp.csr_matrix(np.triu(np.ones((4, 4)))))
    with pytest.raises(ValueError, match="compared axis"):
        tree_emd_embedding(X, [dyadic_tree(60), dyadic_tree(7)], axis=0)
