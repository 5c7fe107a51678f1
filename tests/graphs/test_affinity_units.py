"""The affinities do not depend on the units of X, down to subnormal entries and up to
entries near the float maximum, on the dense and the sparse path alike."""

import numpy as np
import pytest
import scipy.sparse as sp

from skorg.metrics import correlation_affinity, cosine_affinity, gaussian_affinity

AFFINITIES = [cosine_affinity, correlation_affinity, gaussian_affinity]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 50, size=(16, 12)).astype(np.float64)
    X[X < 25] = 0.0
    X[3] = 0.0  # a row of zeros
    return X / 64.0  # six significant bits: exact at every scale below


def _both(X):
    return {"dense": X, "sparse": sp.csr_matrix(X)}


@pytest.mark.parametrize("affinity", AFFINITIES)
@pytest.mark.parametrize("exponent", [-1030, -1000, 1000, 1016])
def test_power_of_two_units_give_the_same_bits(data, affinity, exponent):
    # 2**-1030 puts every entry among the subnormals (X * 2**-1030 < 2.3e-308), exactly
    for kind, X in _both(data).items():
        want = affinity(X)
        got = affinity(_both(np.ldexp(data, exponent))[kind])
        assert np.isfinite(got).all(), kind
        np.testing.assert_array_equal(got, want, err_msg=kind)


@pytest.mark.parametrize("affinity", AFFINITIES)
@pytest.mark.parametrize("factor", [1e-310, 1e-300, 1e307])
def test_decimal_units_give_the_same_affinity(data, affinity, factor):
    # 1e-310 rounds the entries to the subnormal grid (about 13 significant digits left)
    want = affinity(data)
    for kind, X in _both(data * factor).items():
        got = affinity(X)
        assert np.isfinite(got).all(), kind
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, err_msg=kind)


def test_sparse_cosine_of_subnormal_entries_was_nan(data):
    # the reproducer of issue 33: 1.0 / max|X| overflowed for entries below 5.6e-309
    got = cosine_affinity(sp.csr_matrix(data * 1e-310))
    np.testing.assert_allclose(got, cosine_affinity(data), rtol=0, atol=1e-12)
