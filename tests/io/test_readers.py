"""File readers: text tables by pandas, NumPy files, Parquet and AnnData, with their labels."""

import numpy as np
import pytest
import scipy.sparse as sp

from skorg import QuestionnaireOrganizer
from skorg.io import LabelledArray, ReadError, from_anndata, read_array

pd = pytest.importorskip("pandas")


@pytest.fixture
def frame():
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        rng.normal(size=(6, 4)).round(6),
        index=[f"gene{i}" for i in range(6)],
        columns=[f"cell{j}" for j in range(4)],
    )


def test_to_csv_output_with_index_and_header(frame, tmp_path):
    path = tmp_path / "data.csv"
    frame.to_csv(path)
    data = read_array(path)
    assert isinstance(data, LabelledArray)
    np.testing.assert_array_equal(data.X, frame.to_numpy())
    assert list(data.row_names) == list(frame.index)
    assert list(data.column_names) == list(frame.columns)


def test_default_range_index_and_no_index(frame, tmp_path):
    plain = frame.reset_index(drop=True)
    plain.to_csv(tmp_path / "a.csv")  # ",cell0,..." then "0,..."
    data = read_array(tmp_path / "a.csv")
    np.testing.assert_array_equal(data.X, frame.to_numpy())
    assert list(data.row_names) == [str(i) for i in range(6)]
    plain.to_csv(tmp_path / "b.csv", index=False)
    data = read_array(tmp_path / "b.csv")
    np.testing.assert_array_equal(data.X, frame.to_numpy())
    assert data.row_names is None and list(data.column_names) == list(frame.columns)
    np.savetxt(tmp_path / "c.csv", frame.to_numpy(), delimiter=",")
    data = read_array(tmp_path / "c.csv")
    np.testing.assert_array_equal(data.X, frame.to_numpy())
    assert data.names == [None, None]


@pytest.mark.parametrize("sep", [";", "\t", "|"])
def test_separator_is_detected(frame, tmp_path, sep):
    path = tmp_path / "data.csv"
    frame.to_csv(path, sep=sep)
    data = read_array(path)
    np.testing.assert_array_equal(data.X, frame.to_numpy())
    assert list(data.column_names) == list(frame.columns)


def test_tsv_whitespace_and_explicit_options(frame, tmp_path):
    frame.to_csv(tmp_path / "data.tsv", sep="\t")
    np.testing.assert_array_equal(read_array(tmp_path / "data.tsv").X, frame.to_numpy())
    np.savetxt(tmp_path / "w.txt", frame.to_numpy())  # space separated
    np.testing.assert_array_equal(read_array(tmp_path / "w.txt").X, frame.to_numpy())
    frame.to_csv(tmp_path / "semi.csv", sep=";")
    data = read_array(tmp_path / "semi.csv", sep=";", header=True, index_col=True)
    np.testing.assert_array_equal(data.X, frame.to_numpy())
    with pytest.raises(ValueError, match="header must be"):
        read_array(tmp_path / "semi.csv", header="yes")


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16"])
def test_byte_order_marks(frame, tmp_path, encoding):
    path = tmp_path / "bom.csv"
    frame.rename(columns={"cell0": "célula0"}).to_csv(path, encoding=encoding)
    data = read_array(path)
    np.testing.assert_array_equal(data.X, frame.to_numpy())
    assert data.column_names[0] == "célula0" and data.row_names[0] == "gene0"


def test_missing_values_are_reported_by_row_and_column(frame, tmp_path):
    path = tmp_path / "gaps.csv"
    text = frame.to_csv().splitlines()
    cells = text[3].split(",")
    cells[2] = ""  # gene2, cell1
    text[3] = ",".join(cells)
    cells = text[5].split(",")
    cells[4] = "NA"  # gene4, cell3
    text[5] = ",".join(cells)
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(ReadError, match=r"2 missing values, at row 'gene2', column 'cell1'"):
        read_array(path)
    X = frame.to_numpy()
    data = read_array(path, missing_values="zero")
    expected = X.copy()
    expected[2, 1] = expected[4, 3] = 0.0
    np.testing.assert_array_equal(data.X, expected)
    data = read_array(path, missing_values="column_mean")
    assert data.X[2, 1] == pytest.approx(np.delete(X[:, 1], 2).mean(), rel=1e-12)
    data = read_array(path, missing_values="drop_rows")
    np.testing.assert_array_equal(data.X, X[[0, 1, 3, 5]])
    assert list(data.row_names) == ["gene0", "gene1", "gene3", "gene5"]
    data = read_array(path, missing_values="drop_columns")
    np.testing.assert_array_equal(data.X, X[:, [0, 2]])
    assert list(data.column_names) == ["cell0", "cell2"]
    with pytest.raises(ValueError, match="missing_values must be one of"):
        read_array(path, missing_values="ignore")


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        ("abc", "'abc' is not a number"),
        ("1+2j", "complex"),
        ("True", "boolean"),
        ("2024-05-01", "date or time"),
        ("2024-05-01T10:30", "date or time"),
    ],
)
def test_cells_that_are_not_numbers(frame, tmp_path, cell, message):
    text = frame.to_csv().splitlines()
    cells = text[2].split(",")
    cells[3] = cell
    text[2] = ",".join(cells)
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(text))
    with pytest.raises(ReadError, match=rf"row 'gene1', column 'cell2' \(line 3\): .*{message}"):
        read_array(path)


def test_empty_and_header_only_files(tmp_path):
    (tmp_path / "e.csv").write_text("\n\n")
    with pytest.raises(ReadError, match="empty"):
        read_array(tmp_path / "e.csv")
    (tmp_path / "h.csv").write_text("a,b,c\n")
    with pytest.raises(ReadError, match=r"not a number|no data"):
        read_array(tmp_path / "h.csv")
    with pytest.raises(ReadError, match="file not found"):
        read_array(tmp_path / "none.csv")
    (tmp_path / "x.xlsx").write_text("")
    with pytest.raises(ReadError, match="unsupported file type"):
        read_array(tmp_path / "x.xlsx")


def test_numpy_files_and_dtypes(tmp_path):
    X = np.arange(12.0).reshape(3, 4)
    np.save(tmp_path / "a.npy", X)
    np.testing.assert_array_equal(read_array(tmp_path / "a.npy").X, X)
    np.save(tmp_path / "b.npy", X > 4)
    np.testing.assert_array_equal(read_array(tmp_path / "b.npy").X, (X > 4).astype(float))
    np.savez(tmp_path / "c.npz", first=X, second=2 * X)
    np.testing.assert_array_equal(read_array(tmp_path / "c.npz", key="second").X, 2 * X)
    with pytest.raises(ReadError, match="choose one with --key"):
        read_array(tmp_path / "c.npz")
    with pytest.raises(ReadError, match="no array 'third'"):
        read_array(tmp_path / "c.npz", key="third")
    for value, message in [
        (X + 1j, "complex"),
        (np.array(["2020-01-01"], dtype="datetime64[D]").repeat(4).reshape(2, 2), "dates"),
        (np.array([[1, 2]], dtype="timedelta64[s]"), "dates or durations"),
        (np.array([["a", "b"]]), "text"),
    ]:
        np.save(tmp_path / "d.npy", value)
        with pytest.raises(ReadError, match=message):
            read_array(tmp_path / "d.npy")
    np.save(tmp_path / "o.npy", np.array([[1, None]], dtype=object), allow_pickle=True)
    with pytest.raises(ReadError, match="pickled"):
        read_array(tmp_path / "o.npy")


def test_corrupt_numpy_files(tmp_path):
    (tmp_path / "bad.npy").write_bytes(b"\x93NUMPY garbage")
    with pytest.raises(ReadError, match=r"not a valid \.npy"):
        read_array(tmp_path / "bad.npy")
    np.save(tmp_path / "cut.npy", np.arange(100.0))
    (tmp_path / "cut.npy").write_bytes((tmp_path / "cut.npy").read_bytes()[:200])
    with pytest.raises(ReadError, match=r"not a valid \.npy"):
        read_array(tmp_path / "cut.npy")
    (tmp_path / "bad.npz").write_bytes(b"PK not a zip")
    with pytest.raises(ReadError, match=r"not a valid \.npz"):
        read_array(tmp_path / "bad.npz")


def test_parquet(frame, tmp_path):
    pytest.importorskip("pyarrow")
    frame.to_parquet(tmp_path / "a.parquet")
    data = read_array(tmp_path / "a.parquet")
    np.testing.assert_array_equal(data.X, frame.to_numpy())
    assert list(data.row_names) == list(frame.index)
    assert list(data.column_names) == list(frame.columns)
    frame.reset_index(names="gene").to_parquet(tmp_path / "b.parquet", index=False)
    data = read_array(tmp_path / "b.parquet")  # a first text column names the rows
    assert list(data.row_names) == list(frame.index)
    np.testing.assert_array_equal(data.X, frame.to_numpy())
    frame.assign(when=pd.Timestamp("2020-01-01")).to_parquet(tmp_path / "c.parquet")
    with pytest.raises(ReadError, match=r"column 'when'.*dates"):
        read_array(tmp_path / "c.parquet")
    gaps = frame.copy()
    gaps.iloc[1, 2] = np.nan
    gaps.to_parquet(tmp_path / "d.parquet")
    with pytest.raises(ReadError, match="row 'gene1', column 'cell2'"):
        read_array(tmp_path / "d.parquet")
    data = read_array(tmp_path / "d.parquet", missing_values="drop_columns")
    assert list(data.column_names) == ["cell0", "cell1", "cell3"]
    (tmp_path / "e.parquet").write_bytes(b"PAR1 broken")
    with pytest.raises(ReadError, match="not a readable Parquet"):
        read_array(tmp_path / "e.parquet")


@pytest.fixture
def adata():
    anndata = pytest.importorskip("anndata")
    rng = np.random.default_rng(1)
    counts = rng.poisson(0.7, size=(40, 30)).astype(np.float32)
    ad = anndata.AnnData(sp.csr_matrix(counts))
    ad.obs_names = [f"cell{i}" for i in range(40)]
    ad.var_names = [f"gene{j}" for j in range(30)]
    ad.layers["log"] = sp.csr_matrix(np.log1p(counts))
    return ad


def test_from_anndata_sparse_dense_and_layers(adata):
    data = from_anndata(adata)
    assert sp.issparse(data.X) and data.X.dtype == np.float64
    np.testing.assert_array_equal(data.X.toarray(), adata.X.toarray())
    assert list(data.row_names) == list(adata.obs_names)
    assert list(data.column_names) == list(adata.var_names)
    dense = from_anndata(adata, "log", dense=True)
    assert isinstance(dense.X, np.ndarray)
    np.testing.assert_allclose(dense.X, adata.layers["log"].toarray())
    with pytest.raises(ReadError, match="no layer 'raw'"):
        from_anndata(adata, "raw")
    with pytest.raises(TypeError, match="AnnData"):
        from_anndata(np.eye(3))


def test_h5ad_round_trip_and_fit_on_anndata(adata, tmp_path):
    adata.write_h5ad(tmp_path / "a.h5ad")
    data = read_array(tmp_path / "a.h5ad")
    np.testing.assert_array_equal(data.X.toarray(), adata.X.toarray())
    assert list(data.column_names) == list(adata.var_names)
    org = QuestionnaireOrganizer(n_iter=1).fit(adata)
    # the same as the sparse matrix itself (integer counts have exact ties, which rounding
    # may break differently on the dense path; tests/organize/test_sparse_input.py compares
    # the dense path on data without ties)
    plain = QuestionnaireOrganizer(n_iter=1).fit(adata.X)
    for a, b in zip(org.orders_, plain.orders_):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(org.row_names_, np.asarray(adata.obs_names)[org.row_order_])
    np.testing.assert_array_equal(org.column_names_, np.asarray(adata.var_names)[org.column_order_])
    organized = org.organize(adata)
    assert list(organized.obs_names) == list(org.row_names_)
    assert list(organized.var_names) == list(org.column_names_)
    np.testing.assert_array_equal(
        organized.layers["log"].toarray(),
        adata.layers["log"].toarray()[np.ix_(org.row_order_, org.column_order_)],
    )
    (tmp_path / "bad.h5ad").write_bytes(b"not hdf5")
    with pytest.raises(ReadError, match=r"not a readable \.h5ad"):
        read_array(tmp_path / "bad.h5ad")
