"""TreeWaveletPacketTransform: sklearn conformance, the fitted basis and use in a pipeline."""

import numpy as np
import pytest
from sklearn.decomposition import PCA
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from skorg.transforms import (
    TreeHaarTransform,
    TreeWaveletPacketTransform,
    best_wavelet_packet_basis,
    wavelet_packet_info,
    wavelet_packet_transform,
)
from skorg.trees import dyadic_tree


@parametrize_with_checks(
    [TreeWaveletPacketTransform(), TreeWaveletPacketTransform(cost="entropy", tree="flexible")]
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.fixture
def X():
    rng = np.random.default_rng(0)
    # rows that oscillate along the columns: a frequency basis beats Haar
    return np.cos(np.pi * np.arange(16) * 0.9)[None, :] * rng.standard_normal((30, 1)) + 0.01 * (
        rng.standard_normal((30, 16))
    )


def test_fit_chooses_the_best_basis_of_the_training_rows(X):
    tree = dyadic_tree(np.random.default_rng(1).permutation(16))
    est = TreeWaveletPacketTransform(tree=tree).fit(X)
    assert est.tree_ is tree
    assert est.basis_ == best_wavelet_packet_basis(X, tree)
    C = est.transform(X)
    np.testing.assert_allclose(C, wavelet_packet_transform(X, tree, est.basis_), atol=1e-12)
    np.testing.assert_allclose(np.abs(C).sum(), est.basis_.cost, rtol=1e-10)
    np.testing.assert_allclose(est.inverse_transform(C), X, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(C[0] - C[1]), np.linalg.norm(X[0] - X[1]))
    haar = TreeHaarTransform(tree=tree).fit_transform(X)
    assert np.abs(C).sum() <= np.abs(haar).sum()
    info = wavelet_packet_info(tree)
    entry = (est.basis_.levels, est.basis_.positions)
    np.testing.assert_array_equal(
        est.support_, info["region_end"][entry] - info["region_start"][entry]
    )


def test_pipeline_and_grid_search(X):
    pipe = Pipeline([("packets", TreeWaveletPacketTransform()), ("pca", PCA(2))])
    params = {
        "packets__cost": ["l1", 0.5, "entropy"],
        "packets__direction": ["both", "time-frequency"],
    }
    grid = GridSearchCV(pipe, params, cv=3).fit(X)
    assert grid.best_params_["packets__cost"] in ("l1", 0.5, "entropy")
    assert len(grid.cv_results_["params"]) == 6
    assert grid.best_estimator_.named_steps["packets"].basis_.n_points == 16


def test_pandas_output_and_inverse_keep_the_names(X):
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(X, columns=[f"c{i}" for i in range(16)])
    est = TreeWaveletPacketTransform().set_output(transform="pandas").fit(df)
    out = est.transform(df)
    assert list(out.columns) == [f"treewaveletpackettransform{i}" for i in range(16)]
    back = est.inverse_transform(out)
    assert list(back.columns) == list(df.columns)
    np.testing.assert_allclose(back.to_numpy(), X, atol=1e-12)


def test_float32_is_kept(X):
    est = TreeWaveletPacketTransform().fit(X.astype(np.float32))
    C = est.transform(X.astype(np.float32))
    assert C.dtype == np.float32
    assert est.inverse_transform(C).dtype == np.float32
