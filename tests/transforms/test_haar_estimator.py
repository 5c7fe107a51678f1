"""TreeHaarTransform: sklearn conformance, tree options and use in a pipeline."""

import numpy as np
import pytest
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from skorg.transforms import TreeHaarTransform, haar_basis, haar_support
from skorg.trees import PartitionTree, dyadic_tree


@parametrize_with_checks([TreeHaarTransform()])
def test_sklearn_compatible(estimator, check):
    check(estimator)


class ColumnSorter(TransformerMixin, BaseEstimator):
    """Organizer-like stand-in: orders the columns by their mean, exposes column_tree_."""

    def fit(self, X, y=None):
        X = np.asarray(X, dtype=np.float64)
        self.column_order_ = np.argsort(X.mean(axis=0), kind="stable")
        self.column_tree_ = dyadic_tree(self.column_order_)
        self.n_features_in_ = X.shape[1]
        return self

    def transform(self, X):
        return np.asarray(X, dtype=np.float64)[:, self.column_order_]


@pytest.fixture
def X():
    return np.random.default_rng(0).standard_normal((20, 12))


def test_transform_is_haar_of_rows(X):
    tree = dyadic_tree(np.random.default_rng(1).permutation(12))
    est = TreeHaarTransform(tree=tree).fit(X)
    assert est.tree_ is tree
    C = est.transform(X)
    np.testing.assert_allclose(C, X @ haar_basis(tree), atol=1e-12)
    np.testing.assert_allclose(est.inverse_transform(C), X, atol=1e-12)
    np.testing.assert_array_equal(est.support_, haar_support(tree))
    # orthogonal map: distances between samples are kept
    np.testing.assert_allclose(np.linalg.norm(C[0] - C[1]), np.linalg.norm(X[0] - X[1]))


def test_default_is_dyadic_on_current_order(X):
    est = TreeHaarTransform().fit(X)
    assert est.tree_ == dyadic_tree(12)
    names = est.get_feature_names_out()
    assert names.shape == (12,) and names[0] == "treehaartransform0"


def test_flexible_tree_of_column_cosines(X):
    from skorg.metrics import cosine_affinity
    from skorg.trees import flexible_tree

    Z = np.abs(X) + 0.1
    est = TreeHaarTransform(tree="flexible").fit(Z)
    assert est.tree_ == flexible_tree(cosine_affinity(Z.T))
    np.testing.assert_allclose(est.transform(Z), Z @ haar_basis(est.tree_), atol=1e-12)


def test_organizer_like_tree_is_fitted_on_a_clone(X):
    organizer = ColumnSorter()
    est = TreeHaarTransform(tree=organizer).fit(X)
    assert not hasattr(organizer, "column_tree_")
    assert est.tree_ == dyadic_tree(np.argsort(X.mean(axis=0), kind="stable"))
    np.testing.assert_allclose(est.transform(X), X @ haar_basis(est.tree_), atol=1e-12)


def test_pipeline_with_organizer_like_step(X):
    y = (X[:, 0] > 0).astype(int)
    pipe = Pipeline(
        [("org", ColumnSorter()), ("haar", TreeHaarTransform()), ("clf", LogisticRegression())]
    )
    pipe.fit(X, y)
    organized = pipe[0].transform(X)
    np.testing.assert_allclose(
        pipe[:2].transform(X), organized @ haar_basis(dyadic_tree(12)), atol=1e-12
    )
    # the Haar map is orthogonal, so an l2-penalized linear model predicts the same
    plain = LogisticRegression().fit(organized, y)
    np.testing.assert_array_equal(pipe.predict(X), plain.predict(organized))


def test_errors(X):
    with pytest.raises(ValueError, match="has 5 points but X has 12 features"):
        TreeHaarTransform(tree=dyadic_tree(5)).fit(X)

    class NoTree(ColumnSorter):
        def fit(self, X, y=None):
            return self

    with pytest.raises(ValueError, match="must expose a PartitionTree"):
        TreeHaarTransform(tree=NoTree()).fit(X)
    with pytest.raises(ValueError, match="tree"):
        TreeHaarTransform(tree="balanced").fit(X)
    est = TreeHaarTransform().fit(X)
    with pytest.raises(ValueError, match="features"):
        est.transform(X[:, :5])
    assert isinstance(est.tree_, PartitionTree)


@pytest.mark.slow
def test_pipeline_with_questionnaire_organizer():
    from skorg import QuestionnaireOrganizer

    rng = np.random.default_rng(0)
    X = np.abs(rng.standard_normal((30, 16))) + 0.1
    y = (X[:, 0] > X[:, 1]).astype(int)
    pipe = Pipeline(
        [
            ("org", QuestionnaireOrganizer()),
            ("haar", TreeHaarTransform()),
            ("clf", LogisticRegression()),
        ]
    ).fit(X, y)
    organized = pipe[0].transform(X)
    np.testing.assert_array_equal(organized, X[:, pipe[0].column_order_])
    np.testing.assert_allclose(
        pipe[:2].transform(X), organized @ haar_basis(dyadic_tree(16)), atol=1e-12
    )
    assert pipe.predict(X).shape == (30,)
    # the organizer as the tree: its learned column tree, on the original column order
    est = TreeHaarTransform(tree=QuestionnaireOrganizer()).fit(X)
    assert est.tree_ == est.organizer_.column_tree_
    assert est.tree_ == QuestionnaireOrganizer().fit(X).column_tree_
    np.testing.assert_allclose(est.transform(X), X @ haar_basis(est.tree_), atol=1e-12)
