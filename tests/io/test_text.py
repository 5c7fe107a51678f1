"""Text tables as pandas, R and spreadsheets write them, read without flags; the layout rules
of :func:`skorg.io.read_array` (Notes) and their errors."""

import itertools

import numpy as np
import pytest

import skorg.io._errors as errors_module
from skorg.io import MissingDependencyError, ReadError, read_array

pd = pytest.importorskip("pandas")

RNG = np.random.default_rng(0)
FLOATS = RNG.normal(size=(6, 24)).round(4)
COUNTS = RNG.integers(0, 500, size=(6, 24))
DAYS = [f"2013-01-0{i + 1}" for i in range(6)]


def read(path, **options):
    data = read_array(path, **options)
    layout = data.layout
    return data, (layout["separator"], layout["decimal"], layout["header"], layout["index_col"])


def assert_names(data, rows, columns):
    assert (None if data.row_names is None else list(data.row_names)) == rows
    assert (None if data.column_names is None else list(data.column_names)) == columns


# --------------------------------------------------------------------------- pandas
@pytest.mark.parametrize("values", [FLOATS, COUNTS], ids=["floats", "integers"])
def test_pandas_hours_as_column_names_with_a_named_index(tmp_path, values):
    df = pd.DataFrame(values, index=pd.Index(DAYS, name="day"), columns=range(24))
    df.to_csv(tmp_path / "hours.csv")  # "day,0,1,...,23"
    data, layout = read(tmp_path / "hours.csv")
    np.testing.assert_array_equal(data.X, values)
    assert_names(data, DAYS, [str(h) for h in range(24)])
    assert layout == (",", ".", True, True)


def test_pandas_numeric_header_without_index(tmp_path):
    df = pd.DataFrame(FLOATS, columns=range(24))
    df.to_csv(tmp_path / "hours.csv", index=False)  # "0,1,...,23" above floats
    data, layout = read(tmp_path / "hours.csv")
    np.testing.assert_array_equal(data.X, FLOATS)
    assert_names(data, None, [str(h) for h in range(24)])
    assert layout == (",", ".", True, False)
    assert data.layout["header_reason"] == (
        "line 1 holds the increasing integers 0 to 23 above values that are not integers"
    )


def test_pandas_years_beside_a_column_of_country_labels(tmp_path):
    years = list(range(1960, 2014))
    counts = RNG.integers(10**4, 10**8, size=(5, len(years)))
    df = pd.DataFrame(counts, columns=years)
    df.insert(0, "country", ["Aruba", "Chad", "Fiji", "Mali", "Peru"])
    df.to_csv(tmp_path / "population.csv", index=False)  # integer values under integer years
    data, layout = read(tmp_path / "population.csv")
    np.testing.assert_array_equal(data.X, counts)
    assert_names(data, ["Aruba", "Chad", "Fiji", "Mali", "Peru"], [str(y) for y in years])
    assert layout == (",", ".", True, True)


@pytest.mark.parametrize("values", [FLOATS, COUNTS], ids=["floats", "integers"])
def test_pandas_default_frame_integer_header_and_integer_index(tmp_path, values):
    pd.DataFrame(values).to_csv(tmp_path / "arr.csv")  # ",0,1,..." then "0,...", "1,..."
    data, layout = read(tmp_path / "arr.csv")
    np.testing.assert_array_equal(data.X, values)
    assert_names(data, [str(i) for i in range(6)], [str(j) for j in range(24)])
    assert layout == (",", ".", True, True)
    # without the header, the first column still counts the rows above float values
    pd.DataFrame(FLOATS).to_csv(tmp_path / "noheader.csv", header=False)
    data, layout = read(tmp_path / "noheader.csv")
    np.testing.assert_array_equal(data.X, FLOATS)
    assert_names(data, [str(i) for i in range(6)], None)
    assert data.layout["index_col_reason"] == "the first column counts the rows from 0"


def test_pandas_string_header_with_and_without_index(tmp_path):
    columns = [f"cell{j}" for j in range(24)]
    df = pd.DataFrame(FLOATS, index=[f"gene{i}" for i in range(6)], columns=columns)
    df.to_csv(tmp_path / "a.csv")
    data, layout = read(tmp_path / "a.csv")
    np.testing.assert_array_equal(data.X, FLOATS)
    assert_names(data, [f"gene{i}" for i in range(6)], columns)
    assert layout == (",", ".", True, True)
    df.to_csv(tmp_path / "b.csv", index=False)
    data, layout = read(tmp_path / "b.csv")
    np.testing.assert_array_equal(data.X, FLOATS)
    assert_names(data, None, columns)
    assert layout == (",", ".", True, False)
    df.rename_axis("gene").reset_index().to_csv(tmp_path / "c.csv", index=False)
    data, layout = read(tmp_path / "c.csv")  # a named first column of labels
    assert_names(data, [f"gene{i}" for i in range(6)], columns)
    assert layout == (",", ".", True, True)


# --------------------------------------------------------------------------- R and spreadsheets
def test_r_write_csv_quoted_header_empty_corner_and_quoted_row_names(tmp_path):
    # write.csv(m): "","a","b" then "1",0.5,... (row names 1..n quoted); write.csv(df,
    # row.names = FALSE): "a","b" then numbers
    lines = ['"","a","b","c"'] + [f'"{i + 1}",' + ",".join(map(str, r)) for i, r in
                                  enumerate(FLOATS[:, :3])]  # fmt: skip
    (tmp_path / "r.csv").write_text("\n".join(lines) + "\n")
    data, layout = read(tmp_path / "r.csv")
    np.testing.assert_array_equal(data.X, FLOATS[:, :3])
    assert_names(data, [str(i + 1) for i in range(6)], ["a", "b", "c"])
    assert layout == (",", ".", True, True)
    assert data.layout["index_col_reason"] == (
        "an empty top-left cell, as DataFrame.to_csv and R's write.csv write"
    )
    lines = ['"","a","b","c"'] + [f'"g{i}",' + ",".join(map(str, r)) for i, r in
                                  enumerate(FLOATS[:, :3])]  # fmt: skip
    (tmp_path / "r2.csv").write_text("\n".join(lines) + "\n")
    data, _ = read(tmp_path / "r2.csv")
    assert_names(data, [f"g{i}" for i in range(6)], ["a", "b", "c"])
    lines = ['"a","b","c"'] + [",".join(map(str, r)) for r in FLOATS[:, :3]]
    (tmp_path / "r3.csv").write_text("\n".join(lines) + "\n")
    data, layout = read(tmp_path / "r3.csv")
    np.testing.assert_array_equal(data.X, FLOATS[:, :3])
    assert layout == (",", ".", True, False)


def test_spreadsheet_semicolons_and_decimal_commas(tmp_path):
    # a spreadsheet in a decimal-comma locale: ';' between fields, '2,5' for 2.5
    df = pd.DataFrame(FLOATS, index=DAYS, columns=[f"Wert {j}" for j in range(24)])
    df.to_csv(tmp_path / "de.csv", sep=";", decimal=",")
    data, layout = read(tmp_path / "de.csv")
    np.testing.assert_array_equal(data.X, FLOATS)
    assert_names(data, DAYS, list(df.columns))
    assert layout == (";", ",", True, True)
    # decimal points with semicolons, and thousands grouped by points beside decimal commas
    df.to_csv(tmp_path / "semi.csv", sep=";")
    data, layout = read(tmp_path / "semi.csv")
    np.testing.assert_array_equal(data.X, FLOATS)
    assert layout == (";", ".", True, True)
    (tmp_path / "grouped.csv").write_text(";a;b\nx;1.234,5;2\ny;3;4,25\n")
    data, layout = read(tmp_path / "grouped.csv")
    np.testing.assert_array_equal(data.X, [[1234.5, 2.0], [3.0, 4.25]])
    assert layout == (";", ",", True, True)


def test_tab_separated_in_csv_and_tsv_files(tmp_path):
    df = pd.DataFrame(FLOATS, index=DAYS, columns=range(24))
    for name in ("tab.csv", "tab.tsv", "tab.txt"):
        df.to_csv(tmp_path / name, sep="\t")
        data, layout = read(tmp_path / name)
        np.testing.assert_array_equal(data.X, FLOATS)
        assert_names(data, DAYS, [str(h) for h in range(24)])
        assert layout == ("\t", ".", True, True)


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16"])
def test_byte_order_mark_before_an_empty_corner_and_numeric_header(tmp_path, encoding):
    # Excel's "CSV UTF-8": a byte-order mark, then the empty top-left cell
    pd.DataFrame(FLOATS).to_csv(tmp_path / "bom.csv", encoding=encoding)
    data, layout = read(tmp_path / "bom.csv")
    np.testing.assert_array_equal(data.X, FLOATS)
    assert_names(data, [str(i) for i in range(6)], [str(j) for j in range(24)])
    assert layout == (",", ".", True, True)


def test_quoted_fields_with_the_separator(tmp_path):
    (tmp_path / "q.csv").write_text('"1,000",2\n3,4\n5,6\n')
    data, layout = read(tmp_path / "q.csv")
    np.testing.assert_array_equal(data.X, [[1000.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    assert data.names == [None, None] and layout == (",", ".", False, False)
    (tmp_path / "q2.csv").write_text('name,value\n"Smith, J",1.5\n"Doe, A","2,500.25"\n')
    data, _ = read(tmp_path / "q2.csv")
    np.testing.assert_array_equal(data.X, [[1.5], [2500.25]])
    assert_names(data, ["Smith, J", "Doe, A"], ["value"])


# --------------------------------------------------------------------------- ambiguous cases
def test_integer_tables_without_labels_have_no_header(tmp_path):
    (tmp_path / "toy.csv").write_text("1,2,3\n4,5,6\n7,8,9\n")
    data, layout = read(tmp_path / "toy.csv")
    np.testing.assert_array_equal(data.X, np.arange(1.0, 10.0).reshape(3, 3))
    assert layout == (",", ".", False, False)
    assert data.layout["header_reason"] == "line 1 holds integers, like the lines below it"
    np.savetxt(tmp_path / "ints.csv", np.arange(12).reshape(3, 4), fmt="%d", delimiter=",")
    data, layout = read(tmp_path / "ints.csv")
    np.testing.assert_array_equal(data.X, np.arange(12.0).reshape(3, 4))
    assert layout == (",", ".", False, False)
    # two labelled integer columns: 1, 2 is no run of equal steps long enough to be names
    (tmp_path / "short.csv").write_text("a,1,2\nb,3,4\nc,5,6\n")
    data, layout = read(tmp_path / "short.csv")
    assert_names(data, ["a", "b", "c"], None)
    assert layout[2:] == (False, True)


def test_explicit_header_index_and_decimal_override_the_rules(tmp_path):
    (tmp_path / "toy.csv").write_text("1,2,3\n4,5,6\n7,8,9\n")
    data, _ = read(tmp_path / "toy.csv", header=True)
    np.testing.assert_array_equal(data.X, [[4.0, 5.0, 6.0], [7.0, 8.0, 9.0]])
    assert_names(data, None, ["1", "2", "3"])
    assert data.layout["header_reason"] == "as given"
    data, _ = read(tmp_path / "toy.csv", index_col=True)
    assert_names(data, ["1", "4", "7"], None)
    pd.DataFrame(FLOATS, columns=range(24)).to_csv(tmp_path / "h.csv", index=False)
    data, _ = read(tmp_path / "h.csv", header=False)
    assert data.shape == (7, 24) and data.X[0, 23] == 23.0
    (tmp_path / "amb.csv").write_text("a;b\n1,000;2,000\n3,500;4,250\n")
    with pytest.raises(ReadError) as info:
        read_array(tmp_path / "amb.csv")
    assert str(info.value) == (
        "amb.csv: '1,000' (line 2, field 1) reads as 1000 with a decimal point and "
        "thousands grouped by commas, or as 1 with a decimal comma, and no other cell tells "
        "which; pass decimal='.' or decimal=','"
    )
    assert info.value.command_line.endswith("pass --decimal . or --decimal ,")
    np.testing.assert_array_equal(
        read_array(tmp_path / "amb.csv", decimal=",").X, [[1.0, 2.0], [3.5, 4.25]]
    )
    np.testing.assert_array_equal(
        read_array(tmp_path / "amb.csv", decimal=".").X, [[1000.0, 2000.0], [3500.0, 4250.0]]
    )
    with pytest.raises(ValueError, match="decimal must be None"):
        read_array(tmp_path / "amb.csv", decimal=";")


def test_a_typo_in_line_1_is_an_error_not_a_header(tmp_path):
    (tmp_path / "t.csv").write_text("2.1,x.0,0.5\n1.5,2.5,3.5\n4.5,5.5,6.5\n")
    with pytest.raises(ReadError) as info:
        read_array(tmp_path / "t.csv")
    assert str(info.value) == (
        "t.csv: row 0, column 1 (line 1): 'x.0' is not a number; line 1 also holds numbers, "
        "so it is not read as a header (pass header=True if it is one)"
    )
    assert info.value.command_line == str(info.value).replace("header=True", "--header yes")
    (tmp_path / "t2.csv").write_text("2.1,1.0,0.5\n1.5,x.5,3.5\n4.5,5.5,6.5\n")
    with pytest.raises(ReadError) as info:
        read_array(tmp_path / "t2.csv")
    assert str(info.value) == "t2.csv: row 1, column 1 (line 2): 'x.5' is not a number"
    # a first column that mixes numbers and labels is data
    (tmp_path / "c.csv").write_text("1,0.5,0.2\n2,0.1,0.3\nX,0.2,0.2\n")
    with pytest.raises(ReadError) as info:
        read_array(tmp_path / "c.csv")
    assert str(info.value) == (
        "c.csv: row 2, column 0 (line 3): 'X' is not a number; the first column also holds "
        "numbers, so it is not read as row names (pass index_col=True if it names the rows)"
    )


def test_numbers_beyond_float64_are_errors_and_inf_stays_inf(tmp_path):
    (tmp_path / "big.csv").write_text("a,b\n1,2\n1e400,4\n")
    with pytest.raises(ReadError) as info:
        read_array(tmp_path / "big.csv")
    assert str(info.value) == (
        "big.csv: row 1, column 'a' (line 3): '1e400' is beyond the range of float64 "
        "(about 1.8e+308)"
    )
    (tmp_path / "inf.csv").write_text("a,b\n1,inf\n-Infinity,4\n")
    np.testing.assert_array_equal(read_array(tmp_path / "inf.csv").X, [[1, np.inf], [-np.inf, 4]])


def test_missing_values_messages_and_dropping_everything(tmp_path):
    (tmp_path / "m.csv").write_text("a,b\n1,\n,2\n")
    with pytest.raises(ReadError) as info:
        read_array(tmp_path / "m.csv")
    assert str(info.value) == (
        "m.csv has 2 missing values, at row 0, column 'b' (line 2); row 1, column 'a' "
        "(line 3); fill them, or choose missing_values from ('zero', 'column_mean', "
        "'drop_rows', 'drop_columns')"
    )
    assert info.value.command_line.endswith(
        "choose --missing-values from zero, column-mean, drop-rows, drop-columns"
    )
    for filling, what in (("drop_rows", "row"), ("drop_columns", "column")):
        with pytest.raises(ReadError) as info:
            read_array(tmp_path / "m.csv", missing_values=filling)
        assert str(info.value).startswith(
            f"m.csv: missing_values={filling!r} would drop every {what}: each of the 2 "
            f"{what}s has a missing value; choose another filling ("
        )
        assert info.value.command_line.startswith(
            f"m.csv: --missing-values {filling.replace('_', '-')} would drop every {what}"
        )
    np.testing.assert_array_equal(
        read_array(tmp_path / "m.csv", missing_values="zero").X, [[1, 0], [0, 2]]
    )


def test_options_that_do_not_apply_are_refused(tmp_path):
    (tmp_path / "a.csv").write_text("1,2\n3,4\n")
    np.save(tmp_path / "a.npy", np.eye(4))
    cases = [
        ("a.csv", {"layer": "log"}, "layer= applies to .h5ad files only, not to a.csv"),
        ("a.csv", {"key": "x"}, "key= applies to .npz files only, not to a.csv"),
        ("a.npy", {"layer": "log"}, "layer= applies to .h5ad files only, not to a.npy"),
        (
            "a.npy",
            {"header": True},
            "header= applies to text tables (.csv, .tsv, .tab, .txt) only, not to a.npy",
        ),
        (
            "a.npy",
            {"sep": ";"},
            "sep= applies to text tables (.csv, .tsv, .tab, .txt) only, not to a.npy",
        ),
    ]
    for name, options, message in cases:
        with pytest.raises(ReadError) as info:
            read_array(tmp_path / name, **options)
        assert str(info.value) == message
    assert info.value.command_line.startswith("--sep applies")
    with pytest.raises(ValueError, match="sep must be one character"):
        read_array(tmp_path / "a.csv", sep=";;")


def test_whitespace_and_single_column_tables(tmp_path):
    np.savetxt(tmp_path / "w.txt", FLOATS)
    data, layout = read(tmp_path / "w.txt")
    np.testing.assert_array_equal(data.X, FLOATS)
    assert layout == (r"\s+", ".", False, False)
    (tmp_path / "one.csv").write_text("value\n1.5\n2.5\n")
    data, layout = read(tmp_path / "one.csv")
    np.testing.assert_array_equal(data.X, [[1.5], [2.5]])
    assert_names(data, None, ["value"])
    assert data.describe_layout() == (
        "separator ',', decimal point; header line: yes (line 1 holds labels); index column: "
        "no (a single column)"
    )


def test_line_numbers_count_blank_lines(tmp_path):
    (tmp_path / "b.csv").write_text("a,b\n\n1,2\n\n3,oops\n")
    with pytest.raises(ReadError, match=r"row 1, column 'b' \(line 5\): 'oops' is not a number"):
        read_array(tmp_path / "b.csv")


def test_install_command_in_a_clone_and_from_a_package(tmp_path, monkeypatch):
    assert errors_module._source_tree() is not None  # the tests run from a clone
    assert errors_module.install_command("io").startswith('`pip install -e ".[io]"` in ')
    monkeypatch.setattr(errors_module, "_source_tree", lambda: None)
    assert errors_module.install_command("io") == "`pip install skorg[io]`"
    monkeypatch.setitem(__import__("sys").modules, "pyarrow", None)
    (tmp_path / "a.parquet").write_bytes(b"PAR1")
    with pytest.raises(MissingDependencyError) as info:
        read_array(tmp_path / "a.parquet")
    assert str(info.value) == (
        "reading .parquet files needs pyarrow: install it with `pip install skorg[io]`"
    )


def test_line_breaks_windows_endings_and_quotes_across_lines(tmp_path):
    (tmp_path / "crlf.csv").write_bytes(b",a,b\r\nx,0.5,1.5\r\ny,2.5,3.5\r\n")
    data, layout = read(tmp_path / "crlf.csv")
    assert layout == (",", ".", True, True)
    np.testing.assert_array_equal(data.X, [[0.5, 1.5], [2.5, 3.5]])
    assert_names(data, ["x", "y"], ["a", "b"])
    (tmp_path / "label.csv").write_text('"a\nb",c\n1.5,2\n3,4\n')  # a name with a line break
    data, _ = read(tmp_path / "label.csv")
    np.testing.assert_array_equal(data.X, [[1.5, 2.0], [3.0, 4.0]])
    assert_names(data, None, ["a\nb", "c"])
    # a quote left open joins the next line into one field: an error, never the number 23.4
    (tmp_path / "open.csv").write_text('a,b\n1,"2\n3,4\n')
    with pytest.raises(ReadError, match=r"row 0, column 'b' \(line 2\): '2\\n3,4' is not a num"):
        read_array(tmp_path / "open.csv")


def test_every_pandas_layout_round_trips(tmp_path):
    """DataFrame.to_csv over values (floats, integers) x column names (0..m-1, years,
    strings) x index (none, 0..n-1, strings, dates, named) x separator and decimal mark:
    read back to the frame's values and names, except the one case the rules leave as data
    (integer names above integer values without an index: ``1,2,3`` over ``4,5,6``)."""
    rng = np.random.default_rng(1)
    n, m = 7, 5
    columns = {
        "range": range(m),
        "years": range(1990, 1990 + m),
        "strings": ["a", "b", "c", "d", "e"],
    }
    indexes = {
        "none": None,
        "range": pd.RangeIndex(n),
        "strings": pd.Index([f"r{i}" for i in range(n)]),
        "dates": pd.Index(pd.date_range("2020-01-01", periods=n).strftime("%Y-%m-%d")),
        "named": pd.Index([f"r{i}" for i in range(n)], name="id"),
    }
    formats = [(",", "."), (";", "."), (";", ","), ("\t", "."), ("\t", ",")]
    as_data = []
    for values in ("floats", "integers"):
        if values == "floats":
            X = rng.normal(size=(n, m)).round(3) * 100
        else:
            X = rng.integers(-50, 5000, size=(n, m))
        for (cname, cols), (iname, index), (sep, decimal) in itertools.product(
            columns.items(), indexes.items(), formats
        ):
            df = pd.DataFrame(X, columns=cols, index=index)
            path = tmp_path / "f.csv"
            df.to_csv(path, sep=sep, decimal=decimal, index=index is not None)
            data = read_array(path)
            case = (values, cname, iname, sep, decimal)
            if values == "integers" and cname != "strings" and index is None:
                as_data.append(case)
                np.testing.assert_array_equal(data.X, np.vstack([np.asarray(cols)[None], X]))
                assert data.layout["header"] is False, case
                continue
            np.testing.assert_array_equal(data.X, X, err_msg=str(case))
            assert list(data.column_names) == [str(c) for c in cols], case
            rows = None if index is None else [str(i) for i in index]
            assert_names(data, rows, [str(c) for c in cols])
            mark = decimal if values == "floats" else "."  # integers show no decimal mark
            assert (data.layout["separator"], data.layout["decimal"]) == (sep, mark), case
    assert len(as_data) == 2 * len(formats)


def test_r_write_table_header_one_field_short(tmp_path):
    # write.table(m, sep = "\t", quote = FALSE): no top-left cell; the default: spaces, quotes
    body = [f"g{i}\t" + "\t".join(map(str, r)) for i, r in enumerate(FLOATS[:, :3])]
    (tmp_path / "t.tsv").write_text("\n".join(["a\tb\tc", *body]) + "\n")
    quoted = [f'"g{i}" ' + " ".join(map(str, r)) for i, r in enumerate(FLOATS[:, :3])]
    (tmp_path / "t.txt").write_text("\n".join(['"a" "b" "c"', *quoted]) + "\n")
    for name, sep in (("t.tsv", "\t"), ("t.txt", r"\s+")):
        data, layout = read(tmp_path / name)
        np.testing.assert_array_equal(data.X, FLOATS[:, :3])
        assert_names(data, [f"g{i}" for i in range(6)], ["a", "b", "c"])
        assert layout == (sep, ".", True, True)
        assert data.layout["header_reason"] == (
            "line 1 has one field fewer than the lines below, as R's write.table writes"
        )
    # a line 1 of data one cell short stays a broken table
    (tmp_path / "short.csv").write_text("1.5,2\n3,4,5\n6,7,8\n")
    with pytest.raises(ReadError) as info:
        read_array(tmp_path / "short.csv")
    assert str(info.value) == (
        "short.csv has rows of different lengths [2, 3] (separator ','): line 1 has 2 fields, "
        "line 2 has 3"
    )
    with pytest.raises(ReadError, match="rows of different lengths"):
        read_array(tmp_path / "t.tsv", header=False)


def test_long_cells_are_cut_short_in_messages(tmp_path):
    pd.DataFrame(FLOATS, index=DAYS).to_csv(tmp_path / "a.csv")
    with pytest.raises(ReadError) as info:
        read_array(tmp_path / "a.csv", sep="\t")  # the wrong separator: one field per line
    assert str(info.value) == (
        "a.csv: row 0, column ',0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,1...' (line 2): "
        "'2013-01-01,0.1257,-0.1321,0.6404,0.10...' is not a number (5 more such cells)"
    )
