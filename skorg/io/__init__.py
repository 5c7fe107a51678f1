"""Read matrices and tensors with their labels: text tables, NumPy, Parquet and AnnData.

The readers behind ``skorg organize FILE``. CSV/TSV go through pandas, Parquet through
pyarrow and ``.h5ad`` through anndata (extra ``io``: ``pip install skorg[io]``); each is
imported only when a file needs it.
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
