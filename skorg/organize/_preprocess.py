"""Transforms of the data before it is organized (``preprocess``): counts and text."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["PREPROCESS", "is_count_data", "preprocess_data"]

PREPROCESS = ("auto", "log1p", "log1p_normalized", "binary", "tfidf")

# "auto" reads X as counts when at least this fraction of its entries is zero (raw counts of
# words, genes or events are mostly zeros; integer-valued measurements seldom are)
_COUNT_ZERO_FRACTION = 0.25
# relative distance to the nearest integer within which X / (smallest nonzero) is integer
_INTEGER_TOLERANCE = 1e-6
# and counts are heavy-tailed: the largest at least this many times the median nonzero count
# (bounded integer measurements such as pixel intensities or ratings are not)
_COUNT_TAIL = 10.0


def _values(X):
    """The stored values (a sparse matrix's nonzeros) and the number of entries."""
    if sp.issparse(X):
        return X.data, int(np.prod(X.shape))
    return X.ravel(), X.size


def _smallest_nonzero(values):
    nonzero = np.abs(values[values != 0])
    return float(nonzero.min()) if nonzero.size else 0.0


def is_count_data(X):
    """Whether X looks like raw counts, whatever their unit: no negative entry, at least a
    quarter of the entries zero, every entry an integer multiple of the smallest nonzero one
    (counts times any positive factor pass) and a heavy tail (the largest entry at least 10
    times the median nonzero one)."""
    values, size = _values(X)
    if size == 0 or np.any(values < 0):
        return False
    n_zero = size - np.count_nonzero(values)
    unit = _smallest_nonzero(values)
    if unit == 0 or n_zero < _COUNT_ZERO_FRACTION * size:
        return False
    ratio = values[values != 0] / unit
    if float(ratio.max()) < _COUNT_TAIL * float(np.median(ratio)):
        return False
    return bool(np.all(np.abs(ratio - np.round(ratio)) <= _INTEGER_TOLERANCE * ratio))


def _in_units(values, unit):
    """``values / unit``, rounded where it is an integer within rounding: counts in any unit
    give the counts themselves, bit for bit."""
    ratio = values / unit
    nearest = np.round(ratio)
    close = np.abs(ratio - nearest) <= _INTEGER_TOLERANCE * np.abs(ratio)
    return np.where(close, nearest, ratio)


def _log1p_normalized(X, unit):
    if unit == 0:
        return _map_values(X, lambda v: np.zeros_like(v, dtype=np.float64))
    C = _map_values(X, lambda v: _in_units(v, unit))
    scales = []  # per axis: (median total / total) ** (1 / ndim), 1 for an empty slice
    for axis in range(C.ndim):
        other = tuple(a for a in range(C.ndim) if a != axis)
        totals = np.asarray(C.sum(axis=other if not sp.issparse(C) else 1 - axis)).ravel()
        positive = totals[totals > 0]
        typical = float(np.median(positive)) if positive.size else 1.0
        safe = np.where(totals > 0, totals, typical)
        scales.append((typical / safe) ** (1.0 / C.ndim))
    if sp.issparse(C):
        C = sp.diags(scales[0]) @ C @ sp.diags(scales[1])
        C = C.tocsr()
        C.data = np.log1p(C.data)
        return C
    for axis, scale in enumerate(scales):
        shape = [1] * C.ndim
        shape[axis] = -1
        C = C * scale.reshape(shape)
    return np.log1p(C)


def _map_values(X, func):
    if sp.issparse(X):
        out = X.copy()
        out.data = func(out.data)
        return out
    return func(X)


def preprocess_data(X, preprocess):
    """``X`` transformed as ``preprocess`` says, and the transform applied.

    Parameters
    ----------
    X : ndarray or sparse matrix
        Finite values (validated by the caller); not modified.
    preprocess : {"auto", "log1p", "binary", "tfidf"} or None
        - None: X as given.
        - ``"log1p"``: ``log(1 + X / u)``, ``u`` the smallest nonzero magnitude of X: for
          counts (``u = 1``) the usual ``log1p``, and the same result for X in any unit.
          Needs X >= 0.
        - ``"log1p_normalized"``: ``log(1 + C_ij m / (r_i c_j) ** (1/2))`` with ``C = X / u``
          as above, ``r`` and ``c`` the row and column totals of C and ``m`` the geometric
          mean of their medians: every row and column brought to a typical total before the
          logarithm, on both axes alike (cells and genes, documents and words, in either
          orientation); for a tensor, the totals of every axis, to the power ``1 / ndim``.
          Needs X >= 0.
        - ``"binary"``: 1 where X is nonzero, 0 elsewhere (presence, as for text).
        - ``"tfidf"``: scikit-learn's TF-IDF of the rows as documents (smooth idf, rows of
          unit l2 norm). Needs a matrix with X >= 0.
        - ``"auto"``: ``"log1p_normalized"`` for raw counts (see :func:`is_count_data`),
          else None.

    Returns
    -------
    X : ndarray or sparse matrix
        float64, a new array unless the transform is None.
    applied : str or None
        The transform applied (``"auto"`` resolved).
    """
    if preprocess is not None and preprocess not in PREPROCESS:
        raise ValueError(f"preprocess must be one of {PREPROCESS} or None, got {preprocess!r}.")
    if preprocess == "auto":
        preprocess = "log1p_normalized" if is_count_data(X) else None
    if preprocess is None:
        return X, None
    values, _ = _values(X)
    if preprocess != "binary" and np.any(values < 0):
        raise ValueError(
            f"preprocess={preprocess!r} needs non-negative X (counts); X has "
            f"{int(np.sum(values < 0))} negative entries. Use preprocess=None or 'binary'."
        )
    if preprocess == "binary":
        return _map_values(X, lambda v: (v != 0).astype(np.float64)), preprocess
    if preprocess == "log1p":
        unit = _smallest_nonzero(values)
        if unit == 0:
            return _map_values(X, lambda v: np.zeros_like(v, dtype=np.float64)), preprocess
        return _map_values(X, lambda v: np.log1p(_in_units(v, unit))), preprocess
    if preprocess == "log1p_normalized":
        return _log1p_normalized(X, _smallest_nonzero(values)), preprocess
    if X.ndim != 2:
        raise ValueError(f"preprocess='tfidf' needs a matrix (documents x terms), got {X.ndim}-D.")
    from sklearn.feature_extraction.text import TfidfTransformer

    out = TfidfTransformer().fit_transform(X)  # sparse CSR, float64
    return (out if sp.issparse(X) else out.toarray()), preprocess
