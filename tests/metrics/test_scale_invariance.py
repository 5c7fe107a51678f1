"""Affinities, diffusion and tree EMD in any units, and finite near the float range."""

import numpy as np
import pytest
import scipy.sparse as sp

from skorg.metrics import (
    correlation_affinity,
    cosine_affinity,
    diffusion_eigenpairs,
    gaussian_affinity,
    multi_tree_emd,
    sparse_diffusion_eigenpairs,
    tree_emd,
    tree_emd_features,
)
from skorg.trees import dyadic_tree

FACTORS = [1e-300, 1e-150, 1e-30, 1e30, 1e150, 1e200, 1e307]


@pytest.fixture(scope="module")
def data():
    return np.random.default_rng(0).standard_normal((12, 8))


@pytest.mark.parametrize("factor", FACTORS)
@pytest.mark.parametrize("func", [cosine_affinity, correlation_affinity, gaussian_affinity])
def test_affinities_do_not_depend_on_units(data, func, factor):
    A = func(data * factor)
    assert np.all(np.isfinite(A))
    np.testing.assert_allclose(A, func(data), rtol=1e-12, atol=1e-14)


def test_cosine_with_rows_of_very_different_magnitude(data):
    X = data.copy()
    X[0] *= 1e300
    X[1] *= 1e-300
    np.testing.assert_allclose(cosine_affinity(X), cosine_affinity(data), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(
        correlation_affinity(X), correlation_affinity(data), rtol=1e-12, atol=1e-14
    )


@pytest.mark.parametrize("factor", FACTORS)
def test_tree_emd_is_homogeneous_and_finite(data, factor):
    tree = dyadic_tree(12)
    base = tree_emd(data, tree)
    for dtype in (None, np.float32):
        D = tree_emd(data * factor, tree, dtype=dtype)
        assert np.all(np.isfinite(D))
        rtol = 1e-6 if dtype is np.float32 else 1e-12
        np.testing.assert_allclose(D / factor, base, rtol=rtol, atol=0)
    D3 = multi_tree_emd((data * factor).reshape(12, 4, 2), [tree, dyadic_tree(4), None])
    base3 = multi_tree_emd(data.reshape(12, 4, 2), [tree, dyadic_tree(4), None])
    assert np.all(np.isfinite(D3))
    np.testing.assert_allclose(D3 / factor, base3, rtol=1e-12, atol=0)
    F = tree_emd_features(data * factor, tree)
    np.testing.assert_allclose(F / factor, tree_emd_features(data, tree), rtol=1e-12, atol=0)


def test_float32_emd_falls_back_to_float64_outside_its_range(data):
    D = tree_emd(data * 1e-150, dyadic_tree(12), dtype=np.float32)
    assert D.dtype == np.float64 and np.all(D[~np.eye(8, dtype=bool)] > 0)


def _gaussian(n, seed=0):
    x = np.sort(np.random.default_rng(seed).random(n)) * 6
    return np.exp(-(np.subtract.outer(x, x) ** 2))


@pytest.mark.parametrize("factor", [1e-150, 1e-30, 1e30, 1e150, 1e300])
def test_diffusion_step_does_not_depend_on_units(factor):
    A = _gaussian(40)
    psi, lam = diffusion_eigenpairs(A, 5)
    psi_s, lam_s = diffusion_eigenpairs(A * factor, 5)
    np.testing.assert_allclose(lam_s, lam, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(psi_s, psi, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("factor", [1e-150, 1e30, 1e150])
def test_sparse_diffusion_does_not_depend_on_units(factor):
    A = _gaussian(600, seed=1)
    A[A < 1e-3] = 0.0
    S = sp.csr_matrix(A)
    psi, lam = sparse_diffusion_eigenpairs(S, 4)
    psi_s, lam_s = sparse_diffusion_eigenpairs(S * factor, 4)
    np.testing.assert_allclose(lam_s, lam, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(np.abs(psi_s), np.abs(psi), rtol=1e-6, atol=1e-6)


def test_sparse_diffusion_leaves_the_callers_matrix_alone():
    A = _gaussian(600, seed=2)
    S = sp.csr_matrix(A)  # many entries below the 1e-8 floor
    before = (S.data.copy(), S.indices.copy(), S.indptr.copy(), S.nnz)
    sparse_diffusion_eigenpairs(S, 3)
    np.testing.assert_array_equal(S.data, before[0])
    np.testing.assert_array_equal(S.indices, before[1])
    np.testing.assert_array_equal(S.indptr, before[2])
    assert S.nnz == before[3]
