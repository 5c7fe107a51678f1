import numpy as np
import pytest

from skorg.metrics import (
    affinity_matrix,
    correlation_affinity,
    cosine_affinity,
    gaussian_affinity,
)


@pytest.mark.parametrize(
    ("key", "kwargs", "transpose"),
    [
        ("cos_rows_nodata0_thr0", {"missing_values": 0}, False),
        ("cos_cols_nodata0_thr0", {"missing_values": 0}, True),
        ("cos_rows_nodataNone_thr0", {}, False),
        ("cos_rows_nodata0_thrNone", {"missing_values": 0, "threshold": None}, False),
        ("cos_rows_nodata0_abs", {"missing_values": 0, "absolute": True}, False),
        ("gauss_rows_knn5_eps1", {"n_neighbors": 5, "epsilon": 1.0}, False),
        ("gauss_cols_knn5_eps1", {"n_neighbors": 5, "epsilon": 1.0}, True),
        ("gauss_rows_knn8_eps2", {"n_neighbors": 8, "epsilon": 2.0}, False),
    ],
)
def test_reference_affinities(reference, key, kwargs, transpose):
    data = reference("init_affinity")
    X = data["X"].T if transpose else data["X"]
    func = gaussian_affinity if key.startswith("gauss") else cosine_affinity
    np.testing.assert_allclose(func(X, **kwargs), data[key], rtol=1e-10, atol=1e-14)


def test_cosine_missing_values_brute_force():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(7, 9))
    X[rng.uniform(size=X.shape) < 0.3] = np.nan
    A = cosine_affinity(X, missing_values=np.nan, threshold=None)
    for i in range(7):
        for j in range(7):
            ok = ~np.isnan(X[i]) & ~np.isnan(X[j])
            u, v = X[i, ok], X[j, ok]
            den = np.sqrt((u @ u) * (v @ v))
            expected = 1.0 if i == j else (u @ v / den if den > 0 else 0.0)
            assert A[i, j] == pytest.approx(expected, abs=1e-12)


def test_zero_and_constant_rows_are_defined():
    X = np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [5.0, 5.0, 5.0]])
    A = cosine_affinity(X)
    np.testing.assert_array_equal(A[0], [1, 0, 0, 0])
    assert A[1, 2] == pytest.approx(1.0)
    C = correlation_affinity(X)
    np.testing.assert_array_equal(C[3], [0, 0, 0, 1])
    np.testing.assert_array_equal(C[0], [1, 0, 0, 0])


def test_affinity_matrix_dispatch():
    X = np.random.default_rng(1).normal(size=(5, 4))
    np.testing.assert_array_equal(affinity_matrix(X, "cosine"), cosine_affinity(X))
    A = cosine_affinity(X)
    np.testing.assert_array_equal(affinity_matrix(A, "precomputed"), A)
    np.testing.assert_array_equal(affinity_matrix(X, lambda Z: cosine_affinity(Z)), A)
    with pytest.raises(ValueError, match="Unknown affinity"):
        affinity_matrix(X, "manhattan")
    with pytest.raises(ValueError, match="symmetric"):
        affinity_matrix(np.triu(np.ones((3, 3))), "precomputed")


@pytest.mark.parametrize("bad", [np.array([[np.nan, 1.0], [1.0, 2.0]]), np.array([[np.inf, 1.0]])])
def test_rejects_non_finite(bad):
    with pytest.raises(ValueError, match="NaN or infinite"):
        cosine_affinity(bad)


def test_rejects_wrong_ndim_and_dtype():
    with pytest.raises(ValueError, match="2-D"):
        cosine_affinity(np.ones(3))
    with pytest.raises(TypeError, match="numeric"):
        cosine_affinity(np.array([["a", "b"]]))


def test_large_gram_in_two_halves_equals_the_product_and_ignores_the_threads():
    import numba

    from skorg._blas import _SPLIT_GRAM_MIN, row_gram

    rng = np.random.default_rng(3)
    X = rng.standard_normal((96, 30000))  # above the split size, odd column count
    assert X.shape[0] ** 2 * X.shape[1] >= _SPLIT_GRAM_MIN
    exact = np.array([[np.dot(a, b) for b in X] for a in X])
    scale = np.abs(exact).max()
    G = row_gram(X)
    np.testing.assert_allclose(G, exact, rtol=0, atol=1e-13 * scale)
    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        one = row_gram(X)
        cos_one = cosine_affinity(X)
    finally:
        numba.set_num_threads(previous)
    np.testing.assert_array_equal(one, G)  # the same bits on one thread or two
    cos = cosine_affinity(X)
    np.testing.assert_array_equal(cos, cos_one)
    norms = np.sqrt(np.diag(exact))
    expected = np.maximum(exact / np.outer(norms, norms), 0.0)
    np.fill_diagonal(expected, 1.0)
    np.testing.assert_allclose(cos, expected, rtol=0, atol=1e-14)
    small = X[:, :1000]  # below the split: one product
    np.testing.assert_array_equal(row_gram(small), small @ small.T)
