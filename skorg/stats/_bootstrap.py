"""Seeded bootstrap confidence intervals over inputs: percentile and BCa."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, ndtri

from .._validation import check_memory, memory_budget

__all__ = ["BootstrapResult", "bootstrap_ci", "bootstrap_of_means"]

_METHODS = ("percentile", "bca")


@dataclass(frozen=True)
class BootstrapResult:
    """A statistic with its bootstrap confidence interval.

    Attributes
    ----------
    estimate : float or ndarray
        The statistic on the data as given.
    low, high : float or ndarray
        Ends of the interval (same shape as ``estimate``).
    standard_error : float or ndarray
        Standard deviation of the bootstrap distribution.
    confidence_level : float
    method : str
        ``"percentile"`` or ``"bca"``.
    n_resamples : int
    distribution : ndarray of shape (n_resamples, ...)
        The statistic on every resample.
    """

    estimate: object
    low: object
    high: object
    standard_error: object
    confidence_level: float
    method: str
    n_resamples: int
    distribution: np.ndarray

    def contains(self, value):
        """Whether ``value`` lies in the closed interval (elementwise)."""
        return (self.low <= value) & (value <= self.high)

    def to_dict(self):
        """Estimate, interval and standard error as plain floats or lists (for JSON)."""

        def plain(v):
            v = np.asarray(v)
            return float(v) if v.ndim == 0 else v.tolist()

        return {
            "estimate": plain(self.estimate),
            "low": plain(self.low),
            "high": plain(self.high),
            "standard_error": plain(self.standard_error),
            "confidence_level": self.confidence_level,
            "method": self.method,
            "n_resamples": self.n_resamples,
        }


def _check_common(n_resamples, confidence_level, method):
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)):
        raise TypeError(f"n_resamples must be an integer, got {type(n_resamples).__name__}.")
    if n_resamples < 2:
        raise ValueError(f"n_resamples must be at least 2, got {n_resamples}.")
    check_level(confidence_level)
    if not isinstance(method, str) or method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}.")


def check_level(confidence_level, name="confidence_level"):
    """A real number strictly between 0 and 1 (NaN, complex, strings and bools refused)."""
    if isinstance(confidence_level, (bool, np.bool_)) or not isinstance(
        confidence_level, (int, float, np.integer, np.floating)
    ):
        raise TypeError(
            f"{name} must be a number in (0, 1), got {type(confidence_level).__name__}."
        )
    if not 0 < confidence_level < 1:
        raise ValueError(f"{name} must lie in (0, 1), got {confidence_level}.")
    return float(confidence_level)


def real_array(values, name="values"):
    """``values`` as a finite float64 array: complex, non-numeric, NaN and inf refused."""
    if hasattr(values, "detach") and hasattr(values, "numpy"):
        values = values.detach().cpu().numpy()
    arr = np.asarray(values)
    if np.iscomplexobj(arr):
        raise TypeError(f"{name} must be real, got complex values (dtype {arr.dtype}).")
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}.")
    arr = np.asarray(arr, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values; expected finite numbers.")
    return arr


def _check_values(values, name="values"):
    arr = real_array(values, name)
    if arr.ndim == 0 or arr.shape[0] < 2:
        raise ValueError(
            f"{name} must hold at least 2 observations along axis 0, got shape {arr.shape}."
        )
    return arr


# Resamples are drawn in blocks of rows whose scratch stays below the smaller of the memory
# budget and this (a few hundred MiB already run at memory speed).
_BLOCK_BYTES = 1 << 28


def row_blocks(n_rows, bytes_per_row, what):
    """``(start, stop)`` blocks of ``n_rows`` resamples whose scratch (``bytes_per_row`` each)
    fits the memory budget (:func:`skorg._validation.memory_budget`); MemoryError, with the
    figure, when one row does not.

    Every resample is drawn from one generator in order and reduced on its own, so that the
    results do not depend on the blocks (equal bit for bit to one block of all rows).
    """
    check_memory(bytes_per_row, what)
    step = max(1, min(memory_budget(), _BLOCK_BYTES) // max(int(bytes_per_row), 1))
    for start in range(0, n_rows, step):
        yield start, min(start + step, n_rows)


def _resample_blocks(n, n_resamples, random_state, bytes_per_row):
    """Index rows ``(block, n)`` of the resamples, block by block (one generator);
    ``bytes_per_row``: the scratch of one resample, its indices included."""
    rng = np.random.default_rng(random_state)
    for start, stop in row_blocks(n_resamples, bytes_per_row, "a block of bootstrap resamples"):
        yield start, stop, rng.integers(0, n, size=(stop - start, n))


def _resampled_sums(Z, n_resamples, random_state):
    """Column sums of ``Z[idx]`` for every resample ``idx``: shape (n_resamples, n_cols).

    Each sum is a pairwise sum over one contiguous row of gathered values, so a resample's
    sums depend on nothing but its indices (not on the block it falls in).
    """
    n, n_cols = Z.shape
    columns = np.ascontiguousarray(Z.T)
    out = np.empty((n_resamples, n_cols))
    # per resample: its indices and one column of gathered values
    for start, stop, idx in _resample_blocks(n, n_resamples, random_state, 16 * n):
        for c in range(n_cols):
            out[start:stop, c] = np.add.reduce(columns[c][idx], axis=1)
    return out


def _interval(theta, boot, jack, confidence_level, method):
    """Percentile or BCa ends from the bootstrap and jackknife distributions.

    ``theta`` has shape S, ``boot`` (B, *S), ``jack`` (n, *S) (only used by BCa).
    """
    alpha = (1 - confidence_level) / 2
    quantiles = np.array([alpha, 1 - alpha])
    theta = np.asarray(theta, dtype=np.float64)
    flat_boot = boot.reshape(boot.shape[0], -1)
    flat_theta = theta.reshape(-1)
    low = np.empty(flat_theta.size)
    high = np.empty(flat_theta.size)
    for j in range(flat_theta.size):
        b = flat_boot[:, j]
        q = quantiles
        if method == "bca":
            q = _bca_levels(flat_theta[j], b, jack.reshape(jack.shape[0], -1)[:, j], quantiles)
        low[j], high[j] = np.quantile(b, q)
    return low.reshape(theta.shape), high.reshape(theta.shape)


def _bca_levels(theta, boot, jack, quantiles):
    # Efron (1987): bias correction z0 from the share of resamples below the estimate (ties
    # count half, so a symmetric discrete distribution gives z0 = 0), acceleration from the
    # jackknife skewness. Degenerate cases fall back to the percentile levels.
    share = (np.sum(boot < theta) + 0.5 * np.sum(boot == theta)) / boot.size
    if not 0 < share < 1:
        return quantiles
    z0 = ndtri(share)
    top = np.max(np.abs(jack))
    if top > 0:  # by a power of two (exact): the mean of values near the float maximum
        jack = jack / np.ldexp(1.0, np.frexp(top)[1] - 1)
    d = jack.mean() - jack
    peak = np.max(np.abs(d))
    d = d / peak if peak > 0 else d  # the acceleration has no units; avoid under/overflow
    denom = 6.0 * np.sum(d**2) ** 1.5
    a = np.sum(d**3) / denom if denom > 0 else 0.0
    z = ndtri(quantiles)
    adjusted = ndtr(z0 + (z0 + z) / (1 - a * (z0 + z)))
    return np.clip(np.nan_to_num(adjusted, nan=0.5), 0.0, 1.0)


def bootstrap_ci(
    values,
    statistic=None,
    *,
    n_resamples=2000,
    confidence_level=0.95,
    method="bca",
    random_state=0,
):
    """Bootstrap confidence interval of a statistic, resampling observations (rows).

    The observations are the inputs of an analysis (sentences, images, batches): each
    resample draws ``n`` of them with replacement.

    Parameters
    ----------
    values : array-like of shape (n_observations, ...)
        One row per observation.
    statistic : callable, optional
        ``statistic(sample) -> float or ndarray`` for a sample of rows; default: the mean over
        rows (computed for all resamples at once).
    n_resamples : int, default=2000
    confidence_level : float, default=0.95
    method : {"bca", "percentile"}, default="bca"
        Percentile interval, or the bias-corrected and accelerated interval (Efron 1987),
        whose acceleration comes from the jackknife.
    random_state : int, Generator or None, default=0
        Seed of the resamples: the same seed gives the same interval.

    Returns
    -------
    result : BootstrapResult

    Notes
    -----
    The percentile interval takes the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of
    the statistic over resamples. BCa moves these levels to
    ``Phi(z0 + (z0 + z) / (1 - a (z0 + z)))`` with ``z0`` the normal quantile of the share of
    resamples below the estimate and ``a`` the jackknife acceleration; it is second-order
    accurate (Efron and Tibshirani, *An Introduction to the Bootstrap*, 1993, ch. 14).

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.stats import bootstrap_ci
    >>> x = np.arange(20.0)
    >>> ci = bootstrap_ci(x, random_state=0)
    >>> float(ci.estimate), bool(ci.low < 9.5 < ci.high)
    (9.5, True)
    """
    _check_common(n_resamples, confidence_level, method)
    arr = _check_values(values)
    if statistic is None:
        return bootstrap_of_means(
            arr,
            n_resamples=n_resamples,
            confidence_level=confidence_level,
            method=method,
            random_state=random_state,
        )
    if not callable(statistic):
        raise TypeError(f"statistic must be callable or None, got {type(statistic).__name__}.")
    n = arr.shape[0]
    theta = _statistic_value(statistic, arr)
    boot = [
        _statistic_value(statistic, arr[i])
        # per resample: its indices and the resampled rows
        for _, _, block in _resample_blocks(n, n_resamples, random_state, 8 * n + arr.nbytes)
        for i in block
    ]
    if any(b.shape != theta.shape for b in boot):
        raise ValueError("statistic must return the same shape for every sample.")
    boot = np.stack(boot)
    jack = None
    if method == "bca":  # leave-one-out samples one at a time (never an n x n mask)
        jack = np.stack([_statistic_value(statistic, np.delete(arr, k, axis=0)) for k in range(n)])
    return _result(theta, boot, jack, confidence_level, method)


def _statistic_value(statistic, sample):
    value = np.asarray(statistic(sample))
    if np.iscomplexobj(value):
        raise TypeError("statistic must return real numbers, got complex values.")
    return np.asarray(value, dtype=np.float64)


def _result(theta, boot, jack, confidence_level, method):
    if not np.all(np.isfinite(boot)):
        raise ValueError("the statistic is not finite on some resamples.")
    low, high = _interval(theta, boot, jack, confidence_level, method)
    se = _standard_error(boot)
    if theta.ndim == 0:
        theta, low, high, se = float(theta), float(low), float(high), float(se)
    return BootstrapResult(theta, low, high, se, confidence_level, method, boot.shape[0], boot)


def _standard_error(boot):
    """``boot.std(axis=0, ddof=1)`` without overflow near the float maximum: every column is
    scaled by the power of two that brings its peak to [0.5, 1) (exact, so that the result is
    the same bits wherever the plain formula does not overflow or underflow)."""
    peak = np.max(np.abs(boot), axis=0) if boot.shape[0] else np.zeros(boot.shape[1:])
    exponent = np.frexp(np.where(peak > 0, peak, 1.0))[1]
    s = np.ldexp(1.0, np.clip(-exponent, -1020, 1020))
    return (boot * s).std(axis=0, ddof=1) / s


def bootstrap_of_means(
    values,
    function=None,
    *,
    n_resamples=2000,
    confidence_level=0.95,
    method="bca",
    random_state=0,
):
    """Bootstrap interval of a function of the column means, for every resample at once.

    Many statistics of an analysis over inputs are smooth functions of per-input means (the
    mean pruning curve, its area, a ratio of two means): resampling the inputs only changes
    how often each row is counted, so only the means of the resampled rows are needed (drawn
    in blocks within the memory budget, the same for any block size).

    Parameters
    ----------
    values : array-like of shape (n_observations,) or (n_observations, n_columns)
    function : callable, optional
        ``function(means) -> float or ndarray`` where ``means`` has shape
        ``(n_resamples, n_columns)`` (one row per resample; vectorized); default: the means
        themselves.
    n_resamples, confidence_level, method, random_state
        As in :func:`bootstrap_ci`.

    Returns
    -------
    result : BootstrapResult

    Examples
    --------
    >>> import numpy as np
    >>> from skorg.stats import bootstrap_of_means
    >>> x = np.column_stack([np.arange(10.0), np.ones(10)])
    >>> ci = bootstrap_of_means(x, lambda m: m[:, 0] / m[:, 1])
    >>> float(ci.estimate)
    4.5
    """
    _check_common(n_resamples, confidence_level, method)
    if function is not None and not callable(function):
        raise TypeError(f"function must be callable or None, got {type(function).__name__}.")
    arr = _check_values(values)
    vector = arr.ndim == 1
    X = arr.reshape(arr.shape[0], -1)
    n = X.shape[0]
    fn = function if function is not None else (lambda m: m)
    # Centre before summing so that data of any scale (1e-150 or 1e150) gives the same
    # relative interval.
    scale = np.max(np.abs(X), axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    Z = X / scale
    shift = Z.mean(axis=0)
    # drawn in blocks within the memory budget; every resample's sums on their own
    means = (_resampled_sums(Z - shift, n_resamples, random_state) / n + shift) * scale
    # a mean lies within the range of its data: remove the rounding of the shift (a share of
    # zeros would otherwise come back as -0.0 or -1e-17)
    means = np.clip(means, X.min(axis=0), X.max(axis=0))
    # X.mean itself, bit for bit, but through a power of two: finite near the float maximum
    p2 = np.ldexp(1.0, np.frexp(scale)[1] - 1)  # in (scale / 2, scale]
    full = (X / p2).mean(axis=0, keepdims=True) * p2
    jack = None
    if method == "bca":
        jack = ((Z.sum(axis=0) - Z) / (n - 1)) * scale
    theta = np.asarray(fn(full), dtype=np.float64)[0]
    boot = np.asarray(fn(means), dtype=np.float64)
    if boot.shape[0] != n_resamples:
        raise ValueError("function must return one row per resample (vectorized over rows).")
    if jack is not None:
        jack = np.asarray(fn(jack), dtype=np.float64)
    if vector and function is None:
        theta, boot = theta.reshape(()), boot.reshape(-1)
        jack = None if jack is None else jack.reshape(-1)
    return _result(theta, boot, jack, confidence_level, method)
