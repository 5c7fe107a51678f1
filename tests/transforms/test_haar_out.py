"""The ``out=`` argument of the one-axis Haar transforms: every layout, aliasing, errors."""

import numpy as np
import pytest

from skorg.transforms import haar_basis, haar_transform, inverse_haar_transform
from skorg.trees import dyadic_tree
from tests.transforms.test_haar import random_tree

FUNCS = [haar_transform, inverse_haar_transform]


def _layouts(rng, dtype):
    """(name, X, axis, tree, make_out) for C, Fortran, strided input and each kind of out."""
    general = random_tree(37, rng)
    dyadic = dyadic_tree(64)
    X3 = rng.normal(size=(5, 37, 6)).astype(dtype)
    XF = np.asfortranarray(rng.normal(size=(64, 9)).astype(dtype))
    Xs = rng.normal(size=(12, 74)).astype(dtype)[::2, ::2]  # neither C nor F ordered
    wide = rng.normal(size=(64, 300)).astype(dtype)  # the column-block kernels
    return [
        ("3-D middle axis, C out", X3, 1, general, np.empty_like),
        ("rows of a dyadic tree, C out", XF.T.copy(), 1, dyadic, np.empty_like),
        ("Fortran input, Fortran out", XF, 0, dyadic, lambda a: np.empty_like(a, order="F")),
        ("Fortran input, C out", XF, 0, dyadic, lambda a: np.empty_like(a, order="C")),
        ("C input, Fortran out", XF.copy(), 0, dyadic, lambda a: np.empty_like(a, order="F")),
        ("strided input, C out", Xs, 1, general, lambda a: np.empty(a.shape, a.dtype)),
        # a strided view of a larger array: neither layout, filled from a temporary
        ("strided out", X3, 1, general, lambda a: np.empty((10, 37, 6), a.dtype)[::2]),
        ("across rows, C out", wide, 0, dyadic, np.empty_like),
    ]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("func", FUNCS)
def test_out_receives_the_same_bits_in_every_layout(func, dtype):
    rng = np.random.default_rng(3)
    for name, X, axis, tree, make_out in _layouts(rng, dtype):
        expected = func(X, tree, axis=axis)
        before = X.copy()
        out = make_out(X)
        out[...] = np.nan  # every entry must be written
        got = func(X, tree, axis=axis, out=out)
        assert got is out, name
        np.testing.assert_array_equal(out, expected, err_msg=name)
        np.testing.assert_array_equal(X, before, err_msg=name)  # the input is left alone


@pytest.mark.parametrize("func", FUNCS)
def test_out_may_be_the_input_or_overlap_it(func):
    rng = np.random.default_rng(4)
    tree = random_tree(37, rng)
    X = rng.normal(size=(8, 37))
    expected = func(X, tree, axis=1)
    Y = X.copy()
    assert func(Y, tree, axis=1, out=Y) is Y  # in place
    np.testing.assert_array_equal(Y, expected)
    # out overlapping the input shifted by one row: the input is read before it is written
    buf = np.vstack([X, np.zeros((1, 37))])
    got = func(buf[:8], tree, axis=1, out=buf[1:])
    np.testing.assert_array_equal(got, expected)
    # across rows the kernels write rows of sums while later rows are still to be read
    for tree0 in (dyadic_tree(64), random_tree(64, rng)):
        W = rng.normal(size=(64, 300))
        expected = func(W, tree0, axis=0)
        assert func(W, tree0, axis=0, out=W) is W
        np.testing.assert_array_equal(W, expected)


def test_out_against_the_dense_basis_and_the_round_trip():
    rng = np.random.default_rng(5)
    tree = random_tree(23, rng)
    X = rng.normal(size=(23, 4))
    C = np.empty_like(X)
    haar_transform(X, tree, axis=0, out=C)
    np.testing.assert_allclose(C, haar_basis(tree).T @ X, atol=1e-12)
    back = np.empty_like(X)
    inverse_haar_transform(C, tree, axis=0, out=back)
    np.testing.assert_allclose(back, X, atol=1e-12)


@pytest.mark.parametrize("scale", [1e-300, 1e300])
def test_out_at_extreme_magnitudes(scale):
    # the data are rescaled by a power of two inside; the output is scaled back in out
    rng = np.random.default_rng(6)
    tree = random_tree(37, rng)
    X = rng.normal(size=(3, 37))
    out = np.empty_like(X)
    haar_transform(X * scale, tree, out=out)
    np.testing.assert_array_equal(out, haar_transform(X * scale, tree))
    np.testing.assert_allclose(out / scale, haar_transform(X, tree), rtol=1e-12, atol=1e-12)


def test_out_integer_data_gives_float64():
    tree = dyadic_tree(4)
    out = np.empty(4)
    assert haar_transform(np.array([1, 1, 3, 3]), tree, out=out) is out
    np.testing.assert_allclose(out, [4.0, 2.0, 0.0, 0.0], atol=1e-12)
    with pytest.raises(ValueError, match=r"out must have the shape and dtype .*float64"):
        haar_transform(np.array([1, 1, 3, 3]), tree, out=np.empty(4, np.int64))


@pytest.mark.parametrize("func", FUNCS)
def test_out_errors(func):
    tree = dyadic_tree(8)
    X = np.arange(16.0).reshape(2, 8)
    with pytest.raises(ValueError, match=r"out must have the shape and dtype of the result"):
        func(X, tree, out=np.empty((2, 9)))
    with pytest.raises(ValueError, match=r"out must have the shape and dtype .*float64"):
        func(X, tree, out=np.empty((2, 8), np.float32))
    with pytest.raises(TypeError, match=r"out must be a NumPy array or None, got list"):
        func(X, tree, out=[[0.0] * 8] * 2)
    readonly = np.empty((2, 8))
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match=r"out is read-only"):
        func(X, tree, out=readonly)
    # an error leaves out untouched
    out = np.full((2, 8), 7.0)
    with pytest.raises(ValueError, match=r"NaN or infinity"):
        func(np.full((2, 8), np.nan), tree, out=out)
    np.testing.assert_array_equal(out, 7.0)
