"""Tree EMD, its features and the Neumann stress near the float maximum: the exact
multiples of the scaled-down result where those are finite, else a clear error naming the
largest magnitude for which they are."""

import re

import numpy as np
import pytest
import scipy.sparse as sp

from skorg._validation import unscale
from skorg.metrics import (
    multi_tree_emd,
    neumann_stress,
    pairwise_tree_emd,
    tree_emd,
    tree_emd_embedding,
    tree_emd_features,
)
from skorg.trees import dyadic_tree

FMAX = np.finfo(np.float64).max


@pytest.fixture(scope="module")
def data():
    # in [0.5, 1): X * 2**1021 lies near 1e307, and its folder sums (32 entries) pass 1.8e308
    return 0.5 + 0.5 * np.random.default_rng(0).random((32, 32))


def _allowed(message):
    return float(re.search(r"largest magnitude of about ([0-9.e+-]+):", message).group(1))


def _kinds(X):
    return {"dense": X, "sparse": sp.csr_matrix(X)}


@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_tree_emd_near_the_float_maximum_is_the_exact_multiple(data, kind):
    big = np.ldexp(data, 1021)  # up to 4.5e307
    t = dyadic_tree(32)
    X, B = _kinds(data)[kind], _kinds(big)[kind]
    for func in (
        lambda Y: tree_emd_embedding(Y, [None, t], axis=0, dtype=np.float64),
        lambda Y: pairwise_tree_emd(Y, [None, t], axis=0),
        lambda Y: multi_tree_emd(Y, [None, t], axis=0),
        lambda Y: tree_emd(Y, t),
        lambda Y: tree_emd_features(Y, t),
    ):
        got = func(B)
        assert np.isfinite(got).all()
        np.testing.assert_array_equal(got, np.ldexp(func(X), 1021))


def test_tree_emd_embedding_float32_request_near_the_float_maximum(data):
    t = dyadic_tree(32)
    got = tree_emd_embedding(np.ldexp(data, 1021), [None, t], axis=0)  # float32 by default
    assert got.dtype == np.float64  # float32 cannot hold 1e307: promoted, as documented
    want = tree_emd_embedding(data, [None, t], axis=0, dtype=np.float64)
    np.testing.assert_array_equal(got, np.ldexp(want, 1021))


def test_tree_emd_past_the_float_range_names_the_largest_magnitude(data):
    t = dyadic_tree(32)
    signs = np.where(np.random.default_rng(1).random(data.shape) < 0.5, -1.0, 1.0)
    X = np.ldexp(signs * data, 1023)  # up to 9e307: distances, sums over 6 levels, pass 1.8e308
    for kind, B in _kinds(X).items():
        with pytest.raises(ValueError, match="The tree EMD cannot be represented") as info:
            pairwise_tree_emd(B, [None, t], axis=0)
        allowed = _allowed(str(info.value))
        peak = float(np.abs(X).max())
        assert allowed < peak
        # just below the named magnitude the distances are finite
        ok = pairwise_tree_emd(X * (0.999 * allowed / peak), [None, t], axis=0)
        assert np.isfinite(ok).all(), kind
        with pytest.raises(ValueError, match="The tree EMD cannot be represented"):
            multi_tree_emd(B, [None, t], axis=0)


def test_neumann_stress_exact_multiple_or_a_clear_error(data):
    for exponent in (-500, 500):  # the squares of 2**+-500 are 2**+-1000: still normal
        np.testing.assert_array_equal(
            neumann_stress(np.ldexp(data, exponent)), np.ldexp(neumann_stress(data), 2 * exponent)
        )
    # the squares of subnormal data fall to zero: refused rather than a stress of 0
    with pytest.raises(ValueError, match="would fall to zero in float64") as info:
        neumann_stress(data * 1e-310)
    low = float(
        re.search(
            r"nonzero from a largest magnitude of about ([0-9.e+-]+):", str(info.value)
        ).group(1)
    )
    assert 1e-164 < low < 1e-161  # sqrt(4.9e-324 / stress of data, about 100)
    assert neumann_stress(data * (1.01 * low / data.max())) > 0
    # (below about low / sqrt(2) the stress rounds to zero: half the smallest subnormal)
    with pytest.raises(ValueError, match="would fall to zero"):
        neumann_stress(data * (0.6 * low / data.max()))
    X = data * 1e307
    with pytest.raises(ValueError, match="The Neumann stress cannot be represented") as info:
        neumann_stress(X)
    message = str(info.value)
    assert "square of the magnitude of X" in message
    allowed = _allowed(message)
    assert 1e152 < allowed < 1e154  # sqrt(1.8e308 / stress of data, about 100)
    assert np.isfinite(neumann_stress(X * (0.999 * allowed / X.max())))
    with pytest.raises(ValueError, match="cannot be represented"):
        neumann_stress(X * (1.01 * allowed / X.max()))


def test_unscale_is_exact_and_checks_before_rescaling():
    values = np.array([0.75, -0.5, 0.0])
    source = np.array([0.5, 0.9])
    np.testing.assert_array_equal(unscale(values, 2.0**-1000, source), np.ldexp(values, 1000))
    np.testing.assert_array_equal(unscale(values, 2.0**1000, source), np.ldexp(values, -1000))
    with pytest.raises(ValueError, match="fall to zero"):
        unscale(values, 2.0**1000, source, degree=2)  # 0.75 * 2**-2000 is no float
    assert unscale(values, 1.0, source) is values
    out = np.array([300.0, -0.5])  # 300 * 2**1020 passes 1.8e308
    with pytest.raises(ValueError, match="largest float64"):
        unscale(out, 2.0**-1020, source, out=out)
    np.testing.assert_array_equal(out, [300.0, -0.5])  # refused before anything was rescaled
    f32 = np.array([0.75], dtype=np.float32)
    assert unscale(f32, 2.0**-100, source).dtype == np.float32
    with pytest.raises(ValueError, match="largest float32"):
        unscale(f32, 2.0**-129, source)
    assert unscale(3.0, 0.5, source, degree=2) == 12.0
