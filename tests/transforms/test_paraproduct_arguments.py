"""ParaproductDecomposer and user nonlinearities refuse inputs of the wrong dimension."""

import numpy as np
import pytest

from skorg.transforms import (
    EntrywiseNonlinearity,
    ParaproductDecomposer,
    paraproduct_decomposition,
)


@pytest.mark.parametrize("shape", [(), (8,), (2, 2, 4, 4), (1, 1, 1, 1, 1)])
def test_decomposer_names_the_shapes_it_takes(shape):
    X = np.ones(shape)
    with pytest.raises(ValueError, match=r"\(n_heads, n_queries, n_keys\); got a") as info:
        ParaproductDecomposer().fit(X)
    assert str(shape) in str(info.value)
    fitted = ParaproductDecomposer().fit(np.zeros((8, 8)))
    with pytest.raises(ValueError, match=r"one logit matrix of shape \(n_queries, n_keys\)"):
        fitted.transform(X)


@pytest.mark.parametrize(
    "func",
    [lambda Z: Z.sum(axis=1), lambda Z: Z[:4], lambda Z: Z[:, :1], lambda Z: Z[None]],
)
def test_a_nonlinearity_must_keep_the_shape(func):
    X = np.random.default_rng(0).random((8, 8))
    with pytest.raises(
        ValueError, match=r"must be entrywise.*\(8, 8\) \(or one number\); got shape"
    ):
        paraproduct_decomposition(X, func)
    with pytest.raises(ValueError, match="must be entrywise"):
        ParaproductDecomposer(nonlinearity=func).fit(X)


def test_an_entrywise_callable_still_works():
    X = np.random.default_rng(0).random((8, 8))
    got = ParaproductDecomposer(nonlinearity=np.tanh, output="values").fit_transform(X)
    np.testing.assert_array_equal(got, np.tanh(X))
    # a derivative given as one number is a constant, for every entry
    square = EntrywiseNonlinearity(lambda t: t * t, lambda t: 2.0 * t, lambda t: 2.0)
    exact = EntrywiseNonlinearity(
        lambda t: t * t, lambda t: 2.0 * t, lambda t: np.full(t.shape, 2.0)
    )
    a, b = paraproduct_decomposition(X, square), paraproduct_decomposition(X, exact)
    np.testing.assert_array_equal(a.residual, b.residual)
    np.testing.assert_array_equal(a.paraproduct, b.paraproduct)
