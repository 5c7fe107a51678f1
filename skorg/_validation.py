"""Input checks shared by the public functions."""

from __future__ import annotations

from numbers import Integral

import numpy as np

__all__ = ["check_finite_array", "check_int_seed", "check_tree_for_axis"]


def check_finite_array(
    X, name="X", *, ndim=None, min_ndim=None, min_rows=2, allow_nan=False, dtype=np.float64
):
    """Convert to a float array and reject what the algorithms cannot use.

    Parameters
    ----------
    X : array-like
    name : str
        Name used in error messages.
    ndim, min_ndim : int, optional
        Exact or minimal number of dimensions.
    min_rows : int
        Minimal length of every axis.
    allow_nan : bool
        Let NaN through (inf is always rejected).
    dtype : dtype or None
        Target float dtype; None keeps float32 / float64 and converts the rest
        to float64.
    """
    if hasattr(X, "detach") and hasattr(X, "numpy"):  # torch tensors without importing torch
        X = X.detach().cpu().numpy()
    arr = np.asarray(X)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        raise TypeError(f"{name} must be a numeric array, got dtype {arr.dtype}.")
    if np.iscomplexobj(arr):
        raise TypeError(f"{name} must be real, got complex dtype {arr.dtype}.")
    if dtype is None:
        target = arr.dtype if arr.dtype in (np.float32, np.float64) else np.float64
    else:
        target = dtype
    arr = np.asarray(arr, dtype=target)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got an array of shape {arr.shape}.")
    if min_ndim is not None and arr.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimensions, got shape {arr.shape}.")
    for axis, length in enumerate(arr.shape):
        if length < min_rows:
            raise ValueError(
                f"{name} has {length} entries along axis {axis}; at least {min_rows} are needed "
                f"(shape {arr.shape})."
            )
    if allow_nan:
        bad = np.isinf(arr)
        what = "infinite values"
    else:
        bad = ~np.isfinite(arr)
        what = "NaN or infinite values"
    if bad.any():
        raise ValueError(f"{name} contains {int(bad.sum())} {what}; expected finite numbers.")
    return arr


def check_tree_for_axis(tree, n, name="tree", axis_name="rows"):
    """Check that ``tree`` is a PartitionTree on exactly ``n`` points."""
    # duck-typed on the class name so that this bottom layer does not import skorg.trees
    if not any(
        c.__name__ == "PartitionTree" and c.__module__.startswith("skorg.trees")
        for c in type(tree).__mro__
    ):
        raise TypeError(f"{name} must be a skorg.trees.PartitionTree, got {type(tree).__name__}.")
    if tree.n_points != n:
        raise ValueError(
            f"{name} is a tree on {tree.n_points} points but the data has {n} {axis_name}; "
            "the tree must have one leaf per entry of that axis."
        )
    return tree


def check_int_seed(random_state):
    """An integer seed: None means 0, so that paths that need one are deterministic by default."""
    if random_state is None:
        return 0
    if isinstance(random_state, Integral) and not isinstance(random_state, bool):
        return int(random_state)
    from sklearn.utils import check_random_state

    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
