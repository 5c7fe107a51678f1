"""Labelled containers (pandas, polars, xarray, AnnData): read their axis labels, rebuild them
reordered.

Nothing here imports pandas, polars, xarray or anndata: a container is recognised by the module
of its type, and rebuilt through its own methods or constructor.
"""

from __future__ import annotations

import numpy as np

__all__ = ["axis_labels", "container_kind", "data_of", "frame_like", "reorder_like"]


def container_kind(X):
    """``"pandas"``, ``"polars"``, ``"xarray"`` (a DataArray), ``"anndata"`` or None."""
    module = type(X).__module__.split(".")[0]
    if module == "anndata" and hasattr(X, "obs_names") and hasattr(X, "var_names"):
        return "anndata"
    if module == "pandas" and hasattr(X, "iloc") and hasattr(X, "columns"):
        return "pandas"
    if module == "polars" and hasattr(X, "columns") and hasattr(X, "schema"):
        return "polars"
    if module == "xarray" and hasattr(X, "dims") and hasattr(X, "isel"):
        return "xarray"
    return None


def axis_labels(X):
    """The labels of every axis of X (an ndarray of labels, or None where X has none); None
    for an unlabelled X (an array, a sparse matrix, a list).

    A pandas DataFrame has its index and columns, a polars DataFrame its column names, an
    xarray DataArray the coordinate of each dimension that has one.
    """
    kind = container_kind(X)
    if kind == "pandas":
        return [np.asarray(X.index), np.asarray(X.columns)]
    if kind == "polars":
        return [None, np.asarray(X.columns, dtype=object)]
    if kind == "xarray":
        return [np.asarray(X[d].values) if d in X.coords else None for d in X.dims]
    if kind == "anndata":
        return [np.asarray(X.obs_names, dtype=object), np.asarray(X.var_names, dtype=object)]
    return None


def data_of(X, layer=None):
    """The matrix inside an AnnData (``X``, or ``layers[layer]``); anything else as it is."""
    if container_kind(X) != "anndata":
        if layer is not None:
            raise ValueError(f"layer={layer!r} needs an AnnData, got {type(X).__name__}.")
        return X
    if layer is None:
        if X.X is None:
            raise ValueError("The AnnData has no X; pass layer= to use one of its layers.")
        return X.X
    if layer not in X.layers:
        raise ValueError(f"The AnnData has no layer {layer!r}; it has {sorted(X.layers)}.")
    return X.layers[layer]


def reorder_like(values, X, orders):
    """``values`` (X's data with axis ``a`` taken in ``orders[a]``) as a container of X's kind.

    ``orders[a]`` may be None for an axis kept in place. Labels follow their rows and columns;
    an ndarray comes back for an input without labels.
    """
    kind = container_kind(X)
    if kind == "pandas":
        index = X.index if orders[0] is None else X.index[orders[0]]
        columns = X.columns if orders[1] is None else X.columns[orders[1]]
        return type(X)(values, index=index, columns=columns)
    if kind == "polars":
        columns = list(X.columns)
        if orders[1] is not None:
            columns = [columns[j] for j in orders[1]]
        return type(X)(np.asarray(values), schema=columns, orient="row")
    if kind == "anndata":  # obs, var, layers and X follow the orders
        return X[orders[0], orders[1]].copy()
    if kind == "xarray":
        picked = X.isel({d: o for d, o in zip(X.dims, orders) if o is not None})
        return picked.copy(data=values)
    return values


def frame_like(values, X, columns):
    """``values`` as a DataFrame of X's kind (pandas or polars) with new column names, X's
    index kept; an ndarray for anything else."""
    kind = container_kind(X)
    columns = [str(c) for c in columns]
    if kind == "pandas":
        return type(X)(values, index=X.index, columns=columns)
    if kind == "polars":
        return type(X)(np.asarray(values), schema=columns, orient="row")
    return values


def check_output_columns(X, expected, estimator):
    """A DataFrame given to ``inverse_transform`` must carry the estimator's output names."""
    if container_kind(X) not in ("pandas", "polars"):
        return
    got = [str(c) for c in X.columns]
    expected = [str(c) for c in expected]
    if got != expected:
        more = "..." if len(expected) > 5 else ""
        raise ValueError(
            f"X's columns are not the output features of this {type(estimator).__name__}; "
            f"expected {expected[:5]}{more} (get_feature_names_out()), got {got[:5]}"
            f"{'...' if len(got) > 5 else ''}."
        )
