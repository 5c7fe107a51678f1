"""File readers: CSV/TSV (pandas), .npy/.npz, Parquet (pyarrow) and .h5ad (anndata).

pandas, pyarrow and anndata are imported only when a file needs them (extra ``io``).
"""

from __future__ import annotations

import csv
import math
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .._labels import axis_labels, container_kind, data_of

__all__ = [
    "MISSING_VALUES",
    "LabelledArray",
    "MissingDependencyError",
    "ReadError",
    "from_anndata",
    "read_array",
]

# what a CSV cell may hold for "no value"
_MISSING_TOKENS = frozenset(
    {"", "na", "nan", "n/a", "null", "none", "-", "?", "#n/a", "<na>", "-nan", "nat"}
)
MISSING_VALUES = ("error", "zero", "column_mean", "drop_rows", "drop_columns")
_BOOL_TOKENS = frozenset({"true", "false"})


class ReadError(ValueError):
    """A file that cannot be read as a numeric matrix or tensor; the message says why."""


class MissingDependencyError(ImportError):
    """Reading this kind of file needs an optional package; the message names it."""


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
    """

    X: object
    names: list
    source: str = ""

    @property
    def shape(self):
        return self.X.shape

    @property
    def row_names(self):
        return self.names[0]

    @property
    def column_names(self):
        return self.names[1] if len(self.names) > 1 else None


def _import(module, what):
    try:
        return __import__(module)
    except ImportError as exc:
        raise MissingDependencyError(
            f"{what} needs {module}: install it with `pip install skorg[io]`"
        ) from exc


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


# --------------------------------------------------------------------------- text tables
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


def _sniff_separator(path, lines):
    if path.suffix.lower() in (".tsv", ".tab"):
        return "\t"
    sample = "\n".join(lines[:20])
    try:
        return csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
    except csv.Error:
        pass
    for sep in (",", ";", "\t", "|"):
        if sep in lines[0]:
            return sep
    return r"\s+" if len(lines[0].split()) > 1 else ","


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def _is_missing(text):
    return text.strip().lower() in _MISSING_TOKENS


def _describe_cell(value):
    """Why a cell is not a number, in a few words."""
    value = str(value)
    text = value.strip()
    if text.lower() in _BOOL_TOKENS:
        return f"{value!r} is a boolean; write 1/0 instead"
    try:
        complex(text.replace("i", "j"))
    except ValueError:
        pass
    else:
        return f"{value!r} is a complex number; keep its real part or magnitude"
    try:
        np.datetime64(text)
    except ValueError:
        pass
    else:
        return f"{value!r} is a date or time; convert it to a number first"
    return f"{value!r} is not a number"


def _read_text_table(path, sep, header, index_col, missing_values, encoding):
    pd = _import("pandas", f"reading {path.suffix or 'text'} files")
    text = _decode(path, encoding)
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise ReadError(f"{path.name} is empty")
    if sep is None:
        sep = _sniff_separator(path, lines)
    import io

    if len(sep) == 1:  # rows of different lengths are a broken file, not missing cells
        widths = [len(row) for row in csv.reader(lines, delimiter=sep)]
        if len(set(widths)) > 1:
            line = next(k for k, w in enumerate(widths) if w != widths[0])
            raise ReadError(
                f"{path.name} has rows of different lengths {sorted(set(widths))} (separator "
                f"{sep!r}): the first line has {widths[0]} fields, non-empty line {line + 1} "
                f"has {widths[line]}"
            )
    try:
        cells = pd.read_csv(
            io.StringIO(text),
            sep=sep,
            header=None,
            dtype=str,
            keep_default_na=False,
            skip_blank_lines=True,
            engine="python" if len(sep) > 1 else "c",
        )
    except (pd.errors.ParserError, ValueError) as exc:
        raise ReadError(f"cannot parse {path.name} with separator {sep!r}: {exc}") from exc
    cells = cells.to_numpy(dtype=object)
    cells = np.where(pd.isna(cells), "", cells).astype(str)
    number = np.vectorize(_is_number, otypes=[bool])(cells)
    missing = np.vectorize(_is_missing, otypes=[bool])(cells) & ~number

    if header == "infer":
        # a header: a first line with a cell that is neither a number nor empty beyond the
        # first column (df.to_csv() writes an empty first cell above the index)
        first = ~number[0] & ~missing[0]
        header = bool(first[1:].any() or (cells.shape[1] == 1 and first[0]))
        if cells.shape[0] == 1:
            header = False
    header = bool(header)
    body, bnum, bmiss = cells, number, missing
    if header:
        body, bnum, bmiss = cells[1:], number[1:], missing[1:]
    if body.shape[0] == 0:
        raise ReadError(f"{path.name} has a header line and no data")
    if index_col == "infer":
        # an index: an empty corner cell above it (df.to_csv()), or labels that are not
        # numbers in a first column followed by numeric ones
        corner_empty = header and cells[0, 0].strip() == ""
        labels = (~bnum[:, 0] & ~bmiss[:, 0]).any()
        rest_numeric = body.shape[1] > 1 and (bnum[:, 1:] | bmiss[:, 1:]).mean() > 0.5
        index_col = bool(body.shape[1] > 1 and (corner_empty or (labels and rest_numeric)))
    index_col = bool(index_col)
    row_names = None
    column_names = None
    if index_col:
        if body.shape[1] < 2:
            raise ReadError(f"{path.name} has only the index column, no values")
        row_names = np.asarray([c.strip() for c in body[:, 0]], dtype=object)
        body, bnum, bmiss = body[:, 1:], bnum[:, 1:], bmiss[:, 1:]
    if header:
        names = cells[0, 1:] if index_col else cells[0]
        column_names = np.asarray([c.strip() for c in names], dtype=object)
    line0 = 2 if header else 1

    def where(i, j):
        row = f"row {row_names[i]!r}" if row_names is not None else f"row {i}"
        col = f"column {column_names[j]!r}" if column_names is not None else f"column {j}"
        return f"{row}, {col} (line {line0 + i})"

    bad = ~bnum & ~bmiss
    if bad.any():
        i, j = np.argwhere(bad)[0]
        more = int(bad.sum()) - 1
        raise ReadError(
            f"{path.name}: {where(i, j)}: {_describe_cell(body[i, j])}"
            + (f" ({more} more such cells)" if more else "")
        )
    X = np.zeros(body.shape, dtype=np.float64)
    X[bnum] = [float(v) for v in body[bnum]]
    X[bmiss] = np.nan
    # "nan" and "inf" parse as numbers: NaN counts as missing, inf is left to the analysis
    _handle_missing(X, np.isnan(X), missing_values, path.name, where)
    return X, row_names, column_names


def _handle_missing(X, mask, missing_values, name, where):
    """Under ``missing_values="error"``, an error naming where the first ones are."""
    if not mask.any():
        return
    count = int(mask.sum())
    if missing_values == "error":
        first = [where(i, j) for i, j in np.argwhere(mask)[:3]]
        raise ReadError(
            f"{name} has {count} missing value{'s' if count > 1 else ''}, at "
            + "; ".join(first)
            + (" and more" if count > 3 else "")
            + f"; fill them, or choose missing_values from {MISSING_VALUES[1:]}"
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
    if missing_values == "drop_rows":
        keep = ~mask.any(axis=1)
        return X[keep], [None if rows is None else rows[keep], cols]
    keep = ~mask.any(axis=0)
    return X[:, keep], [rows, None if cols is None else cols[keep]]


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
    pd = _import("pandas", "reading .parquet files")
    _import("pyarrow", "reading .parquet files")
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
):
    """Read a matrix or tensor with its labels from a file.

    Parameters
    ----------
    path : str or Path
        ``.csv``, ``.tsv``/``.tab``/``.txt`` (text tables, read by pandas), ``.npy``, ``.npz``,
        ``.parquet`` (pandas with pyarrow) or ``.h5ad`` (anndata).
    key : str, optional
        The array of a ``.npz`` that holds several.
    sep : str, optional
        Separator of a text table; None detects it (``,``, ``;``, tab, ``|``, or runs of
        whitespace; a tab for ``.tsv``).
    header : "infer" or bool, default="infer"
        Whether the first line of a text table names the columns; inferred from a first line
        with cells that are not numbers.
    index_col : "infer" or bool, default="infer"
        Whether the first column names the rows; inferred from an empty top-left cell (as
        ``DataFrame.to_csv`` writes) or a first column of labels beside numbers.
    missing_values : {"error", "zero", "column_mean", "drop_rows", "drop_columns"}, \
default="error"
        What to do with empty cells (and ``NA``, ``NaN``, ``null``, ...) of a text table or
        NaN in a Parquet file: an error that names the first rows and columns concerned, or
        fill with 0 or the column's mean, or drop the rows or columns that have any.
    encoding : str, optional
        Of a text table; None reads UTF-8 (a byte-order mark is dropped) or UTF-16 when the
        file starts with its byte-order mark.
    layer : str, optional
        The layer of an ``.h5ad`` file to read instead of ``X``.

    Returns
    -------
    data : LabelledArray
        ``X`` as float64 (sparse for a sparse ``.h5ad``), ``names`` per axis.

    Raises
    ------
    ReadError
        A missing or unreadable file, values that are not numbers (the message names the
        row and column), missing values under ``missing_values="error"``, or a dtype that is
        not numeric (complex, dates, text, objects; booleans are read as 0 and 1).
    MissingDependencyError
        The file type needs pandas, pyarrow or anndata (extra ``io``).

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
    """
    path = Path(path)
    if not path.is_file():
        raise ReadError(f"file not found: {path}")
    if missing_values not in MISSING_VALUES:
        raise ValueError(f"missing_values must be one of {MISSING_VALUES}, got {missing_values!r}.")
    for value, name in ((header, "header"), (index_col, "index_col")):
        if value != "infer" and not isinstance(value, bool):
            raise ValueError(f"{name} must be 'infer', True or False, got {value!r}.")
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv", ".tab", ".txt"):
        X, rows, cols = _read_text_table(path, sep, header, index_col, missing_values, encoding)
        X, names = _fill_missing(X, [rows, cols], missing_values, path.name)
        return LabelledArray(X, names, path.name)
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
        anndata = _import("anndata", "reading .h5ad files")
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
