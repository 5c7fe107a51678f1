import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from skorg import QuestionnaireOrganizer
from skorg.datasets import make_shuffled_matrix, make_shuffled_tensor
from skorg.metrics import order_spearman


@parametrize_with_checks([QuestionnaireOrganizer(n_iter=1)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.fixture(scope="module")
def band():
    return make_shuffled_matrix(48, 40, kind="band", noise=0.02, random_state=0)


def test_fitted_attributes_and_views(band):
    org = QuestionnaireOrganizer(n_iter=2).fit(band.X)
    assert org.row_tree_ is org.trees_[0] and org.column_tree_ is org.trees_[1]
    np.testing.assert_array_equal(org.row_order_, org.orders_[0])
    organized = org.organize(band.X)
    np.testing.assert_array_equal(organized, band.X[np.ix_(org.row_order_, org.column_order_)])
    # transform keeps rows in input order
    np.testing.assert_array_equal(org.transform(band.X), band.X[:, org.column_order_])
    assert [h["iteration"] for h in org.history_] == [0, 1, 1, 2, 2]
    assert org.affinities_[1].shape == (40, 40) and org.distances_[0].shape == (48, 48)
    assert order_spearman(org.column_order_, band.col_true_order) > 0.9


def test_transform_held_out_rows_and_shape_errors(band):
    org = QuestionnaireOrganizer(n_iter=1).fit(band.X[:30])
    assert org.transform(band.X[30:]).shape == (18, 40)
    with pytest.raises(ValueError, match="fitted on"):
        org.organize(band.X)
    with pytest.raises(ValueError, match="features"):
        org.transform(band.X[:, :10])


def test_score_prefers_organized_geometry(band):
    org = QuestionnaireOrganizer(n_iter=2).fit(band.X)
    good = org.score(band.X)
    rng = np.random.default_rng(0)
    shuffled = band.X[:, rng.permutation(40)]  # columns no longer match the learned tree
    assert -1.0 <= good < 0.0
    assert good > org.score(shuffled) + 0.05


def test_presets_resolve_and_can_be_overridden():
    X = make_shuffled_matrix(20, 18, random_state=1).X
    org = QuestionnaireOrganizer(preset="paper_2d_holder", n_iter=2).fit(X)
    assert org.params_["emd_alpha"] == 1.0 and org.params_["n_iter"] == 2
    assert org.params_["ordering"] == "tree"
    np.testing.assert_array_equal(org.row_order_, org.row_tree_.leaf_order)


def test_tensor_fit_transform_and_organize():
    data = make_shuffled_tensor((20, 18, 8), random_state=0)
    org = QuestionnaireOrganizer(preset="paper_3d_heads", n_iter=1).fit(data.X)
    assert [t.n_points for t in org.trees_] == [20, 18, 8]
    out = org.organize(data.X)
    np.testing.assert_array_equal(out, data.X[np.ix_(*org.orders_)])
    np.testing.assert_array_equal(
        org.transform(data.X), data.X[:, org.orders_[1]][:, :, org.orders_[2]]
    )
    assert np.isfinite(org.score(data.X))


def test_pipeline_and_grid_search_without_labels(band):
    pipe = Pipeline([("scale", StandardScaler()), ("org", QuestionnaireOrganizer(n_iter=1))])
    assert pipe.fit_transform(band.X).shape == band.X.shape
    grid = GridSearchCV(
        QuestionnaireOrganizer(n_iter=1),
        {"emd_alpha": [0.0, 1.0], "epsilon": [0.5, 1.0]},
        cv=2,
    ).fit(band.X)
    assert set(grid.best_params_) == {"emd_alpha", "epsilon"}
    assert np.all(np.isfinite(grid.cv_results_["mean_test_score"]))


def test_deterministic_and_float32(band):
    a = QuestionnaireOrganizer(n_iter=1, random_state=0).fit(band.X)
    b = QuestionnaireOrganizer(n_iter=1, random_state=1).fit(band.X)
    assert all(x == y for x, y in zip(a.trees_, b.trees_))
    c = QuestionnaireOrganizer(n_iter=1).fit(band.X.astype(np.float32))
    assert c.transform(band.X.astype(np.float32)).dtype == np.float32
    # float32 tree EMD: distances within the float32 error bound, the same trees here
    d = QuestionnaireOrganizer(n_iter=2, emd_dtype="float32").fit(band.X)
    e = QuestionnaireOrganizer(n_iter=2).fit(band.X)
    assert all(x.same_partitions(y) for x, y in zip(d.trees_, e.trees_))
    for x, y in zip(d.distances_, e.distances_):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6 * np.abs(y).max())
    with pytest.raises(ValueError, match="emd_dtype"):
        QuestionnaireOrganizer(emd_dtype="half").fit(band.X)


def test_bad_input_messages():
    with pytest.raises(ValueError, match="NaN"):
        QuestionnaireOrganizer().fit(np.array([[1.0, np.nan], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="preset"):
        QuestionnaireOrganizer(preset="paper").fit(np.eye(3))
    with pytest.raises(ValueError, match="length 1"):
        QuestionnaireOrganizer().fit(np.ones((3, 3, 1)))
