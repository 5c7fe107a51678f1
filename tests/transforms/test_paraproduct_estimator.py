"""ParaproductDecomposer: sklearn conventions and agreement with the functional twin."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.estimator_checks import parametrize_with_checks

from skorg.transforms import ParaproductDecomposer, paraproduct_decomposition
from skorg.transforms._paraproduct_estimator import EXPECTED_FAILED_CHECKS
from skorg.trees import dyadic_tree


@parametrize_with_checks(
    [ParaproductDecomposer(), ParaproductDecomposer("tanh", scales=[0, 1], output="paraproduct")],
    expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS,
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize(
    "output",
    [
        "approximation",
        "paraproduct",
        "first_order",
        "second_order",
        "residual",
        "omitted",
        "values",
    ],
)
def test_transform_matches_function(output):
    X = np.random.default_rng(0).normal(size=(20, 12))
    Xt = ParaproductDecomposer(output=output).fit_transform(X)
    res = paraproduct_decomposition(X, "softmax")
    assert Xt.shape == X.shape
    assert_array_equal(Xt, getattr(res, output))


def test_fit_then_transform_equals_fit_transform_and_results():
    X = np.random.default_rng(1).normal(size=(16, 16))
    dec = ParaproductDecomposer("sigmoid", scales="all", keep_terms=True).fit(X)
    assert_array_equal(dec.transform(X), ParaproductDecomposer("sigmoid").fit_transform(X))
    (res,) = dec.results_
    assert res.mixed_terms.shape == (4, 4, 16, 16)
    assert_allclose(dec.relative_error_, [res.relative_error])
    assert_allclose(dec.relative_omitted_, [res.relative_omitted])


def test_stack_of_heads_is_decomposed_head_by_head():
    X = np.random.default_rng(2).normal(size=(3, 8, 16))
    dec = ParaproductDecomposer(output="residual").fit(X)
    Xt = dec.transform(X)
    assert Xt.shape == X.shape and len(dec.results_) == 3 and dec.n_features_in_ == 16
    for h in range(3):
        assert_array_equal(Xt[h], paraproduct_decomposition(X[h]).residual)
    with pytest.raises(ValueError, match="features"):
        dec.transform(X[:, :, :8])


def test_rows_keep_input_order_and_approximation_identity():
    X = np.random.default_rng(3).normal(size=(10, 10))
    dec = ParaproductDecomposer()
    approx = dec.fit_transform(X)
    residual = dec.set_params(output="residual").transform(X)
    values = dec.set_params(output="values").transform(X)
    assert_allclose(approx + residual, values, atol=1e-14)
    softmax = np.exp(X) / np.exp(X).sum(axis=1, keepdims=True)
    assert_allclose(values, softmax, rtol=1e-14)


def test_pad_crops_output_back():
    X = np.random.default_rng(4).normal(size=(12, 6))
    Xt = ParaproductDecomposer("tanh", resize="pad", output="first_order").fit_transform(X)
    padded = np.pad(X, ((0, 4), (0, 2)), mode="edge")
    assert_array_equal(Xt, paraproduct_decomposition(padded, "tanh").first_order[:12, :6])
    with pytest.raises(ValueError, match="powers of two"):
        ParaproductDecomposer(resize="error").fit(X)


def test_trees_are_used_and_checked():
    X = np.random.default_rng(5).normal(size=(8, 8))
    order = np.random.default_rng(6).permutation(8)
    rt = dyadic_tree(order)
    Xt = ParaproductDecomposer(row_tree=rt).fit_transform(X)
    assert_array_equal(Xt, paraproduct_decomposition(X, row_tree=rt).approximation)
    with pytest.raises(ValueError, match="row_tree has 8 points"):
        ParaproductDecomposer(row_tree=rt).fit(X[:6])


def test_in_a_pipeline():
    X = np.random.default_rng(7).normal(size=(16, 8))
    pipe = make_pipeline(FunctionTransformer(lambda z: 2 * z), ParaproductDecomposer("tanh"))
    assert_array_equal(
        pipe.fit_transform(X), paraproduct_decomposition(2 * X, "tanh").approximation
    )
