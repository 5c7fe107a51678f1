"""Read matrices and tensors with their labels: text tables, NumPy, Parquet and AnnData.

The readers behind ``skorg organize FILE``. Text tables (CSV, TSV, spreadsheet exports) are
read by the standard library, with their separator, decimal mark, header line and index
column detected (:func:`read_array`, Notes); Parquet goes through pandas and pyarrow and
``.h5ad`` through anndata (extra ``io``: ``pip install skorg[io]``), each imported only when
a file needs it.
"""

from ._readers import (
    MISSING_VALUES,
    LabelledArray,
    MissingDependencyError,
    ReadError,
    from_anndata,
    read_array,
)

__all__ = [
    "MISSING_VALUES",
    "LabelledArray",
    "MissingDependencyError",
    "ReadError",
    "from_anndata",
    "read_array",
]
