"""scikit-learn's output API and labelled data: set_output, feature names, inverse_transform,
DataFrames and DataArrays that keep their labels."""

import numpy as np
import pytest
from sklearn import config_context
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skorg import QuestionnaireOrganizer, TreeHaarTransform
from skorg.datasets import make_shuffled_matrix

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def frame():
    X = make_shuffled_matrix(30, 24, kind="band", random_state=0).X
    return pd.DataFrame(
        X, index=[f"gene{i}" for i in range(30)], columns=[f"cell{j}" for j in range(24)]
    )


@pytest.fixture(scope="module")
def fitted(frame):
    return QuestionnaireOrganizer(n_iter=1).fit(frame)


def test_pipeline_set_output_pandas_names_follow_the_column_order(frame):
    pipe = make_pipeline(StandardScaler(), QuestionnaireOrganizer(n_iter=1))
    out = pipe.set_output(transform="pandas").fit_transform(frame)
    org = pipe[-1]
    names = np.asarray(frame.columns)[org.column_order_]
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == list(names) == list(pipe.get_feature_names_out())
    assert list(out.index) == list(frame.index)  # rows kept
    scaled = StandardScaler().fit_transform(frame.to_numpy())
    np.testing.assert_array_equal(out.to_numpy(), scaled[:, org.column_order_])
    # every column still holds its own values
    np.testing.assert_array_equal(out["cell3"].to_numpy(), scaled[:, 3])


def test_global_transform_output_is_honoured(frame, fitted):
    with config_context(transform_output="pandas"):
        out = QuestionnaireOrganizer(n_iter=1).fit(frame).transform(frame)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == list(fitted.get_feature_names_out())


def test_polars_output(frame, fitted):
    pl = pytest.importorskip("polars")
    org = QuestionnaireOrganizer(n_iter=1).set_output(transform="polars").fit(frame)
    out = org.transform(frame)
    assert isinstance(out, pl.DataFrame)
    assert out.columns == list(fitted.get_feature_names_out())
    np.testing.assert_array_equal(out.to_numpy(), frame.to_numpy()[:, fitted.column_order_])
    back = org.inverse_transform(out)
    assert isinstance(back, pl.DataFrame) and back.columns == list(frame.columns)
    np.testing.assert_array_equal(back.to_numpy(), frame.to_numpy())


def test_feature_names_without_labels_are_x_in_the_learned_order(frame):
    org = QuestionnaireOrganizer(n_iter=1).fit(frame.to_numpy())
    expected = np.array([f"x{j}" for j in org.column_order_], dtype=object)
    np.testing.assert_array_equal(org.get_feature_names_out(), expected)
    given = [f"f{j}" for j in range(24)]
    np.testing.assert_array_equal(
        org.get_feature_names_out(given), np.asarray(given, dtype=object)[org.column_order_]
    )
    with pytest.raises(ValueError, match="input_features"):
        org.get_feature_names_out(given[:3])


def test_column_transformer(frame, fitted):
    extra = frame.assign(label=np.arange(30.0))
    ct = ColumnTransformer(
        [("org", QuestionnaireOrganizer(n_iter=1), list(frame.columns))], remainder="passthrough"
    ).set_output(transform="pandas")
    out = ct.fit_transform(extra)
    expected = [f"org__{n}" for n in fitted.get_feature_names_out()] + ["remainder__label"]
    assert list(out.columns) == expected == list(ct.get_feature_names_out())
    np.testing.assert_array_equal(out["org__cell5"].to_numpy(), frame["cell5"].to_numpy())


def test_inverse_transform_round_trips(frame, fitted):
    X = frame.to_numpy()
    plain = QuestionnaireOrganizer(n_iter=1).fit(X)
    np.testing.assert_array_equal(plain.inverse_transform(plain.transform(X)), X)
    pipe = make_pipeline(StandardScaler(), QuestionnaireOrganizer(n_iter=1))
    pipe.set_output(transform="pandas").fit(frame)
    back = pipe.inverse_transform(pipe.transform(frame))
    np.testing.assert_allclose(np.asarray(back), X, rtol=1e-12, atol=1e-12)
    org = QuestionnaireOrganizer(n_iter=1).set_output(transform="pandas").fit(frame)
    back = org.inverse_transform(org.transform(frame))
    assert isinstance(back, pd.DataFrame)
    pd.testing.assert_frame_equal(back, frame)
    held_out = X[:5]  # other rows, same columns
    np.testing.assert_array_equal(plain.inverse_transform(plain.transform(held_out)), held_out)
    with pytest.raises(ValueError, match="get_feature_names_out"):
        org.inverse_transform(frame)  # the input's order, not the organized one
    with pytest.raises(ValueError, match="shape after the first axis"):
        plain.inverse_transform(X[:, :5])


def test_inverse_transform_of_a_tensor():
    T = np.random.default_rng(0).normal(size=(6, 5, 4))
    org = QuestionnaireOrganizer(n_iter=1).fit(T)
    np.testing.assert_array_equal(org.inverse_transform(org.transform(T)), T)
    with pytest.raises(ValueError, match="2-D"):
        org.set_output(transform="pandas").transform(T)


def test_organize_returns_a_dataframe_with_labels(frame, fitted):
    out = fitted.organize(frame)
    assert isinstance(out, pd.DataFrame)
    rows, cols = fitted.row_order_, fitted.column_order_
    assert list(out.index) == list(frame.index[rows]) == list(fitted.row_names_)
    assert list(out.columns) == list(frame.columns[cols]) == list(fitted.column_names_)
    for r, c in [("gene0", "cell0"), ("gene7", "cell11"), ("gene29", "cell23")]:
        assert out.loc[r, c] == frame.loc[r, c]
    pd.testing.assert_frame_equal(out.loc[frame.index, frame.columns], frame)
    with pytest.warns(UserWarning, match="feature names"):  # sklearn's usual warning
        plain = fitted.organize(frame.to_numpy())
    np.testing.assert_array_equal(plain, frame.to_numpy()[np.ix_(rows, cols)])


def test_names_without_labels_are_positions():
    X = make_shuffled_matrix(12, 10, kind="band", random_state=1).X
    org = QuestionnaireOrganizer(n_iter=1).fit(X)
    np.testing.assert_array_equal(org.row_names_, org.row_order_)
    np.testing.assert_array_equal(org.column_names_, org.column_order_)
    assert org.row_names_ is not org.row_order_  # a copy: editing one leaves the other


def test_integer_labels_of_a_dataframe_are_kept():
    X = make_shuffled_matrix(12, 10, kind="band", random_state=1).X
    df = pd.DataFrame(X, index=np.arange(100, 112), columns=np.arange(50, 60))
    org = QuestionnaireOrganizer(n_iter=1).fit(df)
    np.testing.assert_array_equal(org.column_names_, 50 + org.column_order_)
    out = org.organize(df)
    assert list(out.columns) == list(50 + org.column_order_)


def test_xarray_keeps_its_coordinates():
    xr = pytest.importorskip("xarray")
    T = np.random.default_rng(1).normal(size=(6, 5, 4))
    da = xr.DataArray(
        T,
        dims=("query", "key", "head"),
        coords={"query": list("abcdef"), "key": list("vwxyz"), "head": [10, 11, 12, 13]},
        attrs={"model": "m"},
    )
    org = QuestionnaireOrganizer(n_iter=1).fit(da)
    out = org.organize(da)
    assert isinstance(out, xr.DataArray) and out.dims == da.dims and out.attrs == da.attrs
    for dim, order in zip(da.dims, org.orders_):
        np.testing.assert_array_equal(out[dim].values, da[dim].values[order])
    np.testing.assert_array_equal(org.axis_names_[2], np.array([10, 11, 12, 13])[org.orders_[2]])
    # values follow their coordinates
    xr.testing.assert_equal(out.sel(query=da["query"], key=da["key"], head=da["head"]), da)


def test_polars_frame_is_organized():
    pl = pytest.importorskip("polars")
    X = make_shuffled_matrix(12, 10, kind="band", random_state=2).X
    df = pl.DataFrame(X, schema=[f"c{j}" for j in range(10)], orient="row")
    org = QuestionnaireOrganizer(n_iter=1).fit(df)
    out = org.organize(df)
    assert isinstance(out, pl.DataFrame)
    assert out.columns == [f"c{j}" for j in org.column_order_]
    np.testing.assert_array_equal(out.to_numpy(), X[np.ix_(org.row_order_, org.column_order_)])


def test_tree_haar_transform_pandas_round_trip(frame):
    haar = TreeHaarTransform().set_output(transform="pandas").fit(frame)
    coefs = haar.transform(frame)
    assert list(coefs.columns) == [f"treehaartransform{j}" for j in range(24)]
    assert list(coefs.index) == list(frame.index)
    back = haar.inverse_transform(coefs)
    assert isinstance(back, pd.DataFrame)
    assert list(back.columns) == list(frame.columns) and list(back.index) == list(frame.index)
    np.testing.assert_allclose(back.to_numpy(), frame.to_numpy(), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="get_feature_names_out"):
        haar.inverse_transform(frame)
    with pytest.raises(ValueError, match="features"):
        haar.inverse_transform(coefs.to_numpy()[:, :5])


def test_organizer_then_haar_in_a_pandas_pipeline(frame):
    pipe = make_pipeline(QuestionnaireOrganizer(n_iter=1), TreeHaarTransform())
    pipe.set_output(transform="pandas").fit(frame)
    coefs = pipe.transform(frame)
    assert list(coefs.columns) == list(pipe.get_feature_names_out())
    back = pipe.inverse_transform(coefs)
    np.testing.assert_allclose(np.asarray(back), frame.to_numpy(), rtol=1e-12, atol=1e-12)
    assert list(back.columns) == list(frame.columns)


def test_functional_twin_keeps_labels(frame):
    from skorg.organize import questionnaire

    result = questionnaire(frame, n_iter=1)
    rows, cols = result.orders
    np.testing.assert_array_equal(result.names[0], np.asarray(frame.index)[rows])
    np.testing.assert_array_equal(result.names[1], np.asarray(frame.columns)[cols])
    out = result.organize(frame)
    assert isinstance(out, pd.DataFrame)
    pd.testing.assert_frame_equal(out.loc[frame.index, frame.columns], frame)
    np.testing.assert_array_equal(result.organize(frame.to_numpy()), out.to_numpy())
    assert questionnaire(frame.to_numpy(), n_iter=1).names == [None, None]
    with pytest.raises(ValueError, match="orders are for shape"):
        result.organize(frame.to_numpy()[:5])
