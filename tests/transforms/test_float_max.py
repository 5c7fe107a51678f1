"""Haar transforms, compression and denoising near the float maximum: the exact multiples of
the scaled-down result where those are finite, else a clear error naming the largest
magnitude for which they are."""

import re

import numpy as np
import pytest

from skorg.transforms import (
    bihaar_transform,
    haar_compress,
    haar_denoise,
    inverse_bihaar_transform,
    inverse_multi_haar_transform,
    inverse_trihaar_transform,
    multi_haar_transform,
    trihaar_transform,
)
from skorg.trees import dyadic_tree

T8, T16 = dyadic_tree(8), dyadic_tree(16)
FAMILY = {
    "multi": (lambda Y: multi_haar_transform(Y, [T16, T16]), 2),
    "inverse_multi": (lambda Y: inverse_multi_haar_transform(Y, [T16, T16]), 2),
    "bihaar": (lambda Y: bihaar_transform(Y, T16, T16), 2),
    "inverse_bihaar": (lambda Y: inverse_bihaar_transform(Y, T16, T16), 2),
    "trihaar": (lambda Y: trihaar_transform(Y, T8, T8, T8), 3),
    "inverse_trihaar": (lambda Y: inverse_trihaar_transform(Y, T8, T8, T8), 3),
}
FORWARD = {"inverse_multi": "multi", "inverse_bihaar": "bihaar", "inverse_trihaar": "trihaar"}


def _data(ndim, dtype=np.float64):
    shape = (16, 16) if ndim == 2 else (8, 8, 8)
    return (0.5 + 0.5 * np.random.default_rng(ndim).random(shape)).astype(dtype)


def _allowed(message):
    return float(re.search(r"largest magnitude of about ([0-9.e+-]+):", message).group(1))


@pytest.mark.parametrize("name", list(FAMILY))
def test_transform_near_the_float_maximum_is_the_exact_multiple(name):
    func, ndim = FAMILY[name]
    X = _data(ndim)
    # 2**1016: entries up to 7e305 and the scaling coefficient (16 to 23 times the mean) fits
    got = func(np.ldexp(X, 1016))
    assert np.isfinite(got).all()
    np.testing.assert_array_equal(got, np.ldexp(func(X), 1016))


@pytest.mark.parametrize("name", list(FAMILY))
def test_transform_past_the_float_range_names_the_largest_magnitude(name):
    func, ndim = FAMILY[name]
    X = _data(ndim) * 4e307  # the scaling coefficient, 12 to 17 times the mean, passes 1.8e308
    if name in FORWARD:
        # coefficients with the signs of one point's wavelets: their sum at that point
        # (several times the largest coefficient) passes 1.8e308
        delta = np.zeros(X.shape)
        delta[(3,) * ndim] = 1.0
        X = np.sign(FAMILY[FORWARD[name]][0](delta)) * 1.5e308
    with pytest.raises(ValueError, match="Haar transform cannot be represented") as info:
        func(X)
    allowed = _allowed(str(info.value))
    peak = float(np.abs(X).max())
    assert 1e306 < allowed < peak
    assert np.isfinite(func(X * (0.999 * allowed / peak))).all()
    with pytest.raises(ValueError, match="cannot be represented"):
        func(X * (1.01 * allowed / peak))


def test_float32_near_its_maximum():
    X = _data(2, np.float32)
    got = multi_haar_transform(np.ldexp(X, 120), [T16, T16])  # entries up to 1.3e36
    assert got.dtype == np.float32 and np.isfinite(got).all()
    np.testing.assert_array_equal(got, np.ldexp(multi_haar_transform(X, [T16, T16]), 120))
    with pytest.raises(ValueError, match="largest float32"):
        multi_haar_transform(np.ldexp(X, 127), [T16, T16])  # scaling coefficient past 3.4e38


def test_compress_and_denoise_near_the_float_maximum():
    X = _data(2)
    B = np.ldexp(X, 1016)
    for func in (
        lambda Y: haar_compress(Y, [T16, T16], fraction=0.3),
        lambda Y: haar_denoise(Y, [T16, T16]),
    ):
        small, big = func(X), func(B)
        assert np.isfinite(big.X).all() and np.isfinite(big.coefficients).all()
        np.testing.assert_array_equal(big.X, np.ldexp(small.X, 1016))
        np.testing.assert_array_equal(big.coefficients, np.ldexp(small.coefficients, 1016))
        assert big.error == pytest.approx(small.error * 2.0**1016, rel=1e-12)
        assert big.relative_error == pytest.approx(small.relative_error, rel=1e-12)
        with pytest.raises(ValueError, match="Haar transform cannot be represented"):
            func(X * 4e307)  # all NaN before
