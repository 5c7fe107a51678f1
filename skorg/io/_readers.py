"""File readers: text tables, .npy/.npz, Parquet (pandas with pyarrow) and .h5ad (anndata).

pandas, pyarrow and anndata are imported only when a file needs them (extra ``io``); text
tables need none of them.
"""

from __future__ import annotations

import math
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .._labels import axis_labels, container_kind, data_of
from ._errors import MissingDependencyError, ReadError, import_optional, option, spelled_error
from ._text import WHITESPACE, describe_layout, read_text_table

__all__ = [
    "MISSING_VALUES",
    "LabelledArray",
    "MissingDependencyError",
    "ReadError",
    "from_anndata",
    "read_array",
]

MISSING_VALUES = ("error", "zero", "column_mean", "drop_rows", "drop_columns")
_TEXT_SUFFIXES = (".csv", ".tsv", ".tab", ".txt")
_TAB_SUFFIXES = (".tsv", ".tab")


@dataclass
class LabelledArray:
    """A numeric array with the labels of its axes.

    Attributes
    ----------
    X : ndarray or scipy.sparse matrix
        The values (float64; a sparse matrix stays sparse).
    names : list of (ndarray or None)
        The labels of every axis (row names, column names, ...), None where the file has
        none.
    source : str
        Where the values came from (a file name).
    layout : dict
        How a text table was read (empty for other files): ``separator`` (``r"\\s+"`` for
        runs of whitespace), ``decimal`` (``"."`` or ``","``), ``header`` and ``index_col``
        (bool), and ``header_reason`` and ``index_col_reason``, the rule that decided each
        (``"as given"`` when passed). :meth:`describe_layout` says it in one sentence.
    """

    X: object
    names: list
    source: str = ""
    layout: dict = field(default_factory=dict)

    @property
    def shape(self):
        return self.X.shape

    @property
    def row_names(self):
        return self.names[0]

    @property
    def column_names(self):
        return self.names[1] if len(self.names) > 1 else None

    def describe_layout(self):
        """How a text table was read, in one sentence ("" for other files)."""
        return describe_layout(self.layout)


def _check_numeric(arr, where):
    """Refuse the dtypes that are not numbers, with what to do instead; bool becomes 0/1."""
    kind = arr.dtype.kind
    if arr.dtype.names is not None:
        raise ReadError(
            f"{where} holds a structured array (fields {list(arr.dtype.names)}); save one "
            "numeric array"
        )
    if kind == "c":
        raise ReadError(
            f"{where} holds complex numbers ({arr.dtype}); pass their real part, imaginary "
            "part or magnitude (np.real, np.imag, np.abs)"
        )
    if kind in "mM":
        raise ReadError(
            f"{where} holds dates or durations ({arr.dtype}); convert them to numbers first"
        )
    if kind in "OUSV":
        raise ReadError(
            f"{where} holds {'text' if kind in 'US' else 'Python objects'} ({arr.dtype}), not "
            "numbers"
        )
    if kind not in "biuf":
        raise ReadError(f"{where} has dtype {arr.dtype}, not a numeric type")
    return arr.astype(np.float64)


def _decode(path, encoding):
    raw = path.read_bytes()
    if encoding is None:
        if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
            encoding = "utf-16"
        else:
            encoding = "utf-8-sig"  # drops a UTF-8 byte-order mark
    try:
        return raw.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise ReadError(
            f"cannot decode {path.name} as {encoding} ({exc}); pass the file's encoding"
        ) from exc


def _missing_values_choices():
    """The fillings of missing values as Python and the command line spell them."""
    fillings = MISSING_VALUES[1:]
    return (
        f"missing_values from {fillings}",
        f"--missing-values from {', '.join(f.replace('_', '-') for f in fillings)}",
    )


def _handle_missing(X, mask, missing_values, name, where):
    """Under ``missing_values="error"``, an error naming where the first ones are."""
    if not mask.any():
        return
    count = int(mask.sum())
    if missing_values == "error":
        first = [where(i, j) for i, j in np.argwhere(mask)[:3]]
        raise spelled_error(
            f"{name} has {count} missing value{'s' if count > 1 else ''}, at "
            + "; ".join(first)
            + (" and more" if count > 3 else "")
            + "; fill them, or choose ",
            _missing_values_choices(),
        )


def _fill_missing(X, names, missing_values, name):
    """Apply ``missing_values`` to the NaN of a 2-D X; returns X and the labels kept."""
    mask = np.isnan(X)
    if not mask.any() or missing_values == "error":
        return X, names
    rows, cols = names
    if missing_values == "zero":
        return np.where(mask, 0.0, X), names
    if missing_values == "column_mean":
        counts = (~mask).sum(axis=0)
        if (counts == 0).any():
            j = int(np.flatnonzero(counts == 0)[0])
            label = cols[j] if cols is not None else j
            raise ReadError(f"{name}: column {label!r} has no value to take a mean of")
        means = np.where(mask, 0.0, X).sum(axis=0) / counts
        return np.where(mask, means[None, :], X), names
    axis = 1 if missing_values == "drop_rows" else 0
    keep = ~mask.any(axis=axis)
    if not keep.any():
        what = "row" if axis == 1 else "column"
        raise spelled_error(
            f"{name}: ",
            option("missing_values", missing_values),
            f" would drop every {what}: each of the {keep.size} {what}s has a missing "
            "value; choose another filling (",
            _missing_values_choices(),
            ")",
        )
    if axis == 1:
        return X[keep], [None if rows is None else rows[keep], cols]
    return X[:, keep], [rows, None if cols is None else cols[keep]]


def _refuse_options(path, suffix, given):
    """Options that do not apply to this kind of file are an error, not ignored."""
    applies = {
        "key": ((".npz",), ".npz files"),
        "layer": ((".h5ad",), ".h5ad files"),
        **{
            name: (_TEXT_SUFFIXES, "text tables (.csv, .tsv, .tab, .txt)")
            for name in ("sep", "decimal", "encoding", "header", "index_col")
        },
    }
    for name, value in given.items():
        default = "infer" if name in ("header", "index_col") else None
        suffixes, kinds = applies[name]
        if value != default and suffix not in suffixes:
            raise spelled_error(
                (f"{name}=", f"--{name.replace('_', '-')}"),
                f" applies to {kinds} only, not to {path.name}",
            )


# --------------------------------------------------------------------------- binary formats
def _check_npy_size(handle, size, where):
    """Refuse, before anything is allocated, a .npy whose header claims more data than the
    file holds (a truncated file, or a lying header); ``size``: the bytes of the .npy."""
    from numpy.lib import format as npy_format

    try:
        version = npy_format.read_magic(handle)
        if version == (1, 0):
            shape, _, dtype = npy_format.read_array_header_1_0(handle)
        else:
            shape, _, dtype = npy_format.read_array_header_2_0(handle)
    except (ValueError, OSError, EOFError, SyntaxError) as exc:
        raise ReadError(f"{where} is not a valid .npy file ({exc})") from exc
    if dtype.hasobject:
        return  # refused as pickled data by the reader
    claimed = math.prod(int(n) for n in shape) * dtype.itemsize
    held = size - handle.tell()
    if claimed > held:
        raise ReadError(
            f"{where} is not a valid .npy file: its header claims an array of shape "
            f"{tuple(shape)} and dtype {dtype} "
            f"({claimed:,} bytes) but the file holds {max(held, 0):,} bytes of data: it is "
            "truncated or its header is wrong"
        )


def _read_npy(path):
    try:
        with open(path, "rb") as handle:
            _check_npy_size(handle, path.stat().st_size, path.name)
    except OSError as exc:
        raise ReadError(f"{path.name} cannot be read ({exc})") from exc
    try:
        arr = np.load(path, allow_pickle=False)
    except ValueError as exc:
        if "pickle" in str(exc):
            raise ReadError(
                f"{path.name} holds Python objects (pickled), which are not read for safety; "
                "save a numeric array"
            ) from exc
        raise ReadError(f"{path.name} is not a valid .npy file ({exc})") from exc
    except (OSError, EOFError) as exc:
        raise ReadError(f"{path.name} is not a valid .npy file ({exc})") from exc
    return _check_numeric(arr, path.name)


def _read_npz(path, key):
    try:
        with np.load(path, allow_pickle=False) as archive:
            names = list(archive.files)
            if key is None and len(names) != 1:
                raise ReadError(
                    f"{path.name} holds {len(names)} arrays {names}; choose one with --key "
                    "(key= in Python)"
                )
            key = names[0] if key is None else key
            if key not in names:
                raise ReadError(f"{path.name} has no array {key!r}; it holds {names}")
            member = key if key in archive.zip.namelist() else f"{key}.npy"
            with archive.zip.open(member) as handle:
                size = archive.zip.getinfo(member).file_size
                _check_npy_size(handle, size, f"{path.name}[{key!r}]")
            arr = archive[key]
    except ReadError:
        raise
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError) as exc:
        raise ReadError(f"{path.name} is not a valid .npz file ({exc})") from exc
    return _check_numeric(arr, f"{path.name}[{key!r}]")


def _frame_values(df, name):
    """Numbers and labels of a DataFrame read from a file (Parquet)."""
    numeric = [c for c in df.columns if df[c].dtype.kind in "biuf"]
    others = [c for c in df.columns if c not in numeric]
    index = df.index
    if others == [df.columns[0]] and len(df.columns) > 1 and df[others[0]].dtype.kind in "OUS":
        index = df[others[0]]  # a first text column names the rows
        df = df[numeric]
    elif others:
        c = others[0]
        raise ReadError(
            _check_message(df[c], f"{name}: column {c!r}")
            + (f" ({len(others) - 1} more such columns)" if len(others) > 1 else "")
        )
    default_index = type(index).__name__ == "RangeIndex"
    rows = None if default_index else np.asarray(index.astype(str), dtype=object)
    cols = np.asarray([str(c) for c in df.columns], dtype=object)
    return df.to_numpy(dtype=np.float64, na_value=np.nan), [rows, cols]


def _check_message(series, where):
    try:
        _check_numeric(np.asarray(series), where)
    except ReadError as exc:
        return str(exc)
    return f"{where} has dtype {series.dtype}, not a numeric type"


def _read_parquet(path):
    pd = import_optional("pandas", "reading .parquet files")
    import_optional("pyarrow", "reading .parquet files")
    try:
        df = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises its own error types for corrupt files
        raise ReadError(f"{path.name} is not a readable Parquet file ({exc})") from exc
    return _frame_values(df, path.name)


# --------------------------------------------------------------------------- public API
def from_anndata(adata, layer=None, *, dense=False):
    """The matrix of an AnnData with its observation and variable names.

    Parameters
    ----------
    adata : anndata.AnnData
    layer : str, optional
        Use ``adata.layers[layer]`` instead of ``adata.X``.
    dense : bool, default=False
        Return a dense ndarray even when the matrix is sparse (a sparse X otherwise stays a
        SciPy sparse matrix, which :class:`~skorg.QuestionnaireOrganizer` takes as it is).

    Returns
    -------
    data : LabelledArray
        ``X`` (float64, cells x genes as in AnnData), ``names = [obs_names, var_names]``.

    Examples
    --------
    >>> import anndata, numpy as np, scipy.sparse as sp
    >>> from skorg.io import from_anndata
    >>> adata = anndata.AnnData(sp.csr_matrix(np.eye(3)))
    >>> adata.obs_names = ["c0", "c1", "c2"]
    >>> data = from_anndata(adata)
    >>> data.shape, list(data.row_names)
    ((3, 3), ['c0', 'c1', 'c2'])
    """
    if container_kind(adata) != "anndata":
        raise TypeError(f"adata must be an anndata.AnnData, got {type(adata).__name__}.")
    try:
        X = data_of(adata, layer)
    except ValueError as exc:
        raise ReadError(str(exc)) from exc
    if hasattr(X, "to_memory"):  # a backed (on-disk) matrix
        X = X.to_memory()
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64) if not dense else X.toarray().astype(np.float64)
        if not dense:
            X.data = _check_numeric(X.data, "the AnnData matrix")
    else:
        X = _check_numeric(np.asarray(X), "the AnnData matrix")
    return LabelledArray(X, axis_labels(adata), "AnnData")


def read_array(
    path,
    *,
    key=None,
    sep=None,
    header="infer",
    index_col="infer",
    missing_values="error",
    encoding=None,
    layer=None,
    decimal=None,
):
    """Read a matrix or tensor with its labels from a file.

    Parameters
    ----------
    path : str or Path
        ``.csv``, ``.tsv``/``.tab``/``.txt`` (text tables), ``.npy``, ``.npz``, ``.parquet``
        (pandas with pyarrow) or ``.h5ad`` (anndata).
    key : str, optional
        The array of a ``.npz`` that holds several.
    sep : str, optional
        Separator of a text table: one character, or ``r"\\s+"`` for runs of whitespace.
        None detects it (see Notes; a tab for ``.tsv`` and ``.tab``).
    header : "infer" or bool, default="infer"
        Whether the first line of a text table names the columns; inferred by the rules in
        Notes.
    index_col : "infer" or bool, default="infer"
        Whether the first column of a text table names the rows; inferred by the rules in
        Notes.
    missing_values : {"error", "zero", "column_mean", "drop_rows", "drop_columns"}, \
default="error"
        What to do with empty cells (and ``NA``, ``NaN``, ``null``, ...) of a text table or
        NaN in a Parquet file: an error that names the first rows and columns concerned, or
        fill with 0 or the column's mean, or drop the rows or columns that have any (an
        error if that would drop them all).
    encoding : str, optional
        Of a text table; None reads UTF-8 (a byte-order mark is dropped) or UTF-16 when the
        file starts with its byte-order mark.
    layer : str, optional
        The layer of an ``.h5ad`` file to read instead of ``X``.
    decimal : {".", ","}, optional
        The decimal mark of a text table; None detects it (see Notes).

    Returns
    -------
    data : LabelledArray
        ``X`` as float64 (sparse for a sparse ``.h5ad``), ``names`` per axis, and for a text
        table ``layout``: what was detected and why (:meth:`LabelledArray.describe_layout`).

    Raises
    ------
    ReadError
        A missing or unreadable file, values that are not numbers or beyond the float64
        range (the message names the row, column and line), missing values under
        ``missing_values="error"``, a dtype that is not numeric (complex, dates, text,
        objects; booleans are read as 0 and 1), or an option that does not apply to the
        file (``layer`` on a CSV, ``key`` on a ``.npy``, ``header`` on a ``.parquet``, ...).
    MissingDependencyError
        The file type needs pandas, pyarrow or anndata (extra ``io``).

    Notes
    -----
    A text table is cut into cells by the standard library's :mod:`csv` (quoted fields may
    hold the separator: ``"1,000",2``). A cell is a *number* (``1``, ``-2.5e3``, ``inf``;
    thousands may be grouped by threes, ``1,234.5``), *missing* (empty, ``NA``, ``NaN``,
    ``null``, ...) or a *label* (anything else). A number beyond the float64 range
    (``1e400``) is an error, not infinity.

    *Separator*: of ``,``, tab, ``;`` and ``|``, the one that cuts the first lines into
    equally many fields (2 or more), the one whose cells are most often numbers; runs of
    whitespace when none does.

    *Decimal mark*: a comma when some cells are numbers only with a decimal comma
    (``2,5``) and every cell with a point fits a decimal comma too (``1.234,5``); a point
    otherwise. Cells such as ``1,000`` alone fit both (1000 or 1.0): in a comma-separated
    file (where such cells are quoted) they have thousands grouped by commas; in any other
    file they are an error asking for ``decimal``.

    *Header* (line 1 names the columns) when the file has 2 or more lines and either

    - line 1 holds labels (or empty cells) and no number; or
    - line 1, beyond a top-left cell that is empty or a label, holds integers that
      increase from left to right (hours 0-23, years, ``DataFrame(arr).to_csv()``'s 0, 1,
      2, ...), and the values below them are not all integers, or the top-left cell is
      empty (as ``DataFrame.to_csv`` and R's ``write.csv`` write above their index), or
      the first column below is all integers (an integer index under its name), or the
      integers are equal steps (3 or more) above a first column of labels.

    A line 1 that mixes labels and numbers (``2.1,x.0,0.5``) is data: its label is an
    error naming the line, with the hint to pass ``header=True``. A line 1 of increasing
    integers above integer values with a number in its first cell (``1,2,3`` over
    ``4,5,6``, or a distance matrix ``0,1,2`` over ``1,0,1``) is data; so
    ``DataFrame(int_arr).to_csv(index=False)`` needs ``header=True``.

    A line 1 with one field fewer than all the lines below, holding labels only (or 3 or
    more integers in equal steps), is a header above an index column (R's ``write.table``
    leaves out the top-left cell).

    *Index column* (column 1 names the rows) when the table has 2 or more columns and
    either the header's top-left cell is empty; or the first column below the header
    holds labels (or missing cells) and no number beside mostly numeric cells; or it
    counts the rows (0, 1, 2, ... or 1, 2, 3, ...) and there is a header or the other
    values are not all integers. A first column that mixes labels and numbers is data,
    and its labels are errors with the hint to pass ``index_col=True``.

    ``header``, ``index_col``, ``sep`` and ``decimal`` given explicitly override these
    rules. ``layout`` of the result records what was used and which rule decided.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import pandas as pd
    >>> from skorg.io import read_array
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> pd.DataFrame([[1.0, 2.0], [3.0, 4.0]], index=["g0", "g1"],
    ...              columns=["a", "b"]).to_csv(folder / "data.csv")
    >>> data = read_array(folder / "data.csv")
    >>> data.X
    array([[1., 2.],
           [3., 4.]])
    >>> list(data.row_names), list(data.column_names)
    (['g0', 'g1'], ['a', 'b'])
    >>> data.layout["header_reason"]
    'line 1 holds labels'
    """
    path = Path(path)
    if not path.is_file():
        raise ReadError(f"file not found: {path}")
    if missing_values not in MISSING_VALUES:
        raise ValueError(f"missing_values must be one of {MISSING_VALUES}, got {missing_values!r}.")
    for value, name in ((header, "header"), (index_col, "index_col")):
        if value != "infer" and not isinstance(value, bool):
            raise ValueError(f"{name} must be 'infer', True or False, got {value!r}.")
    if decimal not in (None, ".", ","):
        raise ValueError(f"decimal must be None, '.' or ',', got {decimal!r}.")
    if sep is not None and not (isinstance(sep, str) and (len(sep) == 1 or sep == WHITESPACE)):
        raise ValueError(f"sep must be one character or {WHITESPACE!r}, got {sep!r}.")
    suffix = path.suffix.lower()
    if suffix in (*_TEXT_SUFFIXES, ".npy", ".npz", ".parquet", ".h5ad"):
        given = {"key": key, "layer": layer, "sep": sep, "decimal": decimal}
        given |= {"encoding": encoding, "header": header, "index_col": index_col}
        _refuse_options(path, suffix, given)
    if suffix in _TEXT_SUFFIXES:
        X, rows, cols, layout, where = read_text_table(
            _decode(path, encoding),
            path.name,
            sep=sep,
            decimal=decimal,
            header=header,
            index_col=index_col,
            tab_separated=suffix in _TAB_SUFFIXES,
        )
        _handle_missing(X, np.isnan(X), missing_values, path.name, where)
        X, names = _fill_missing(X, [rows, cols], missing_values, path.name)
        return LabelledArray(X, names, path.name, layout)
    if suffix == ".npy":
        X = _read_npy(path)
        return LabelledArray(X, [None] * X.ndim, path.name)
    if suffix == ".npz":
        X = _read_npz(path, key)
        return LabelledArray(X, [None] * X.ndim, path.name)
    if suffix == ".parquet":
        X, names = _read_parquet(path)
        if np.isnan(X).any():
            rows, cols = names

            def where(i, j):
                row = f"row {rows[i]!r}" if rows is not None else f"row {i}"
                return f"{row}, column {cols[j]!r}"

            _handle_missing(X, np.isnan(X), missing_values, path.name, where)
            X, names = _fill_missing(X, names, missing_values, path.name)
        return LabelledArray(X, names, path.name)
    if suffix == ".h5ad":
        anndata = import_optional("anndata", "reading .h5ad files")
        try:
            adata = anndata.read_h5ad(path)
        except Exception as exc:  # h5py raises OSError or its own errors for corrupt files
            raise ReadError(f"{path.name} is not a readable .h5ad file ({exc})") from exc
        data = from_anndata(adata, layer)
        data.source = path.name
        return data
    raise ReadError(
        f"unsupported file type {suffix or '(none)'!r} of {path.name}: expected .csv, .tsv, "
        ".txt, .npy, .npz, .parquet or .h5ad"
    )
