"""Input checks shared by the public functions."""

from __future__ import annotations

import math
import struct
from numbers import Integral

import numpy as np

from ._kernels import _peak
from ._threading import available_threads

__all__ = [
    "check_finite_array",
    "check_int_seed",
    "check_memory",
    "check_tree_for_axis",
    "finite_peak",
    "memory_budget",
    "plain_magnitude",
    "plain_values",
    "pow2_scale",
    "safe_exponent",
    "safe_norm",
    "scale_rows",
    "scaled_copy",
    "unscale",
]


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
    if hasattr(X, "tocsr") and hasattr(X, "nnz"):  # scipy.sparse, without importing it
        raise TypeError(
            f"{name} is a sparse matrix ({type(X).__name__}); this function needs a dense "
            f"array: pass {name}.toarray()."
        )
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
    elif np.isfinite(finite_peak(arr)):
        return arr  # no temporary array of the size of the data (finite_peak)
    else:
        bad = ~np.isfinite(arr)
        what = "NaN or infinite values"
    if bad.any():
        raise ValueError(f"{name} contains {int(bad.sum())} {what}; expected finite numbers.")
    return arr


def finite_peak(X, *, compiled_from=None):
    """``max |X|`` without a temporary the size of X: one compiled pass over a large
    contiguous float array, two NumPy reductions otherwise.

    NaN when X holds a NaN, infinity when it holds an infinity (but no NaN), 0.0 when it
    is empty; so ``np.isfinite(finite_peak(X))`` is ``np.all(np.isfinite(X))``. A SciPy
    sparse matrix gives the peak of its entries (duplicates summed, the argument unchanged).
    ``compiled_from``: the size from which the compiled pass is taken (default: where it
    beats NumPy's reductions by enough to pay for its compilation on a first call); callers
    that run compiled kernels anyway pass a smaller one, as the pass costs less per call.
    """
    if hasattr(X, "tocsr") and hasattr(X, "nnz"):  # scipy.sparse, without importing it
        Y = X.tocsr()
        if not Y.has_canonical_format:
            Y = Y.copy()
            Y.sum_duplicates()
        X = Y.data
    X = np.asarray(X)
    if X.size == 0:
        return 0.0
    if (
        X.dtype in _PEAK_BITS
        and X.size >= (_PEAK_BITS[X.dtype][2] if compiled_from is None else compiled_from)
        and (X.flags.c_contiguous or X.flags.f_contiguous)
    ):
        return _peak_of_bits(X)
    # the ufunc reductions themselves: np.max's wrapper costs microseconds on small arrays
    hi = float(np.maximum.reduce(X, axis=None))
    lo = float(np.minimum.reduce(X, axis=None))
    if hi != hi or lo != lo:  # NaN propagates through max and min
        return float("nan")
    return max(hi, -lo)


# Large float arrays have their peak found in one pass by a compiled kernel
# (skorg._kernels._peak), on all threads from _PEAK_PARALLEL_MIN values: NumPy's two
# reductions read an array twice, which costs as much as a Haar transform once the array
# leaves the cache. Smaller ones use NumPy's reductions (as fast in cache, and nothing to
# compile on a first call). float dtype -> (integer view, sign bit off, kernel from this size;
# the float32 kernel widens to 64-bit lanes, so it pays only beyond L2)
_PEAK_BITS = {
    np.dtype(np.float64): (np.dtype(np.int64), np.int64(0x7FFFFFFFFFFFFFFF), 1 << 18),
    np.dtype(np.float32): (np.dtype(np.int32), np.int32(0x7FFFFFFF), 1 << 20),
}
_PEAK_PARALLEL_MIN = 1 << 21


# up to this many values plain_magnitude looks at them as Python floats
_PLAIN_PYTHON_MAX = 16


def plain_values(values, itemsize):
    """:func:`plain_magnitude` of the values of a float array of ``itemsize`` bytes, given as a
    list of Python floats (exact): for a few values, where a compiled pass costs more.

    First from their Euclidean norm (``math.hypot``: not finite if any value is not), which
    lies between ``max |x|`` and ``sqrt(len)`` times it, so that well inside the range one
    C call decides; near its ends ``max |x|`` itself does.
    """
    norm = math.hypot(*values)
    if norm - norm != 0.0:  # NaN or infinity (or finite values too large for a norm)
        return False
    low, end = (_PLAIN_MIN, _PLAIN_END) if itemsize == 8 else (_PLAIN_MIN32, _PLAIN_END32)
    if 2.0 * low * math.sqrt(len(values)) <= norm < end:
        return True  # (a factor 2 against rounding)
    peak = max(map(abs, values))
    return low <= peak < end


def plain_magnitude(X):
    """Whether ``max |X|`` is finite and within ``[2**-(L + 1), 2**L)``, the range in which
    :func:`scaled_copy` with ``limit=safe_exponent(X.dtype)`` leaves X as it is (L is
    :data:`SAFE_EXPONENT` for float64, :data:`SAFE_EXPONENT_FLOAT32` for float32); False for
    an all-zero X.

    X must be a non-empty C- or F-contiguous float32/float64 ndarray in native byte order
    (the caller has checked): one compiled pass over its bit patterns, without the checks
    and conversions of :func:`finite_peak`, which cost microseconds on small arrays.
    """
    if X.size >= _PEAK_PARALLEL_MIN:
        m = _peak_of_bits(X)
        if X.dtype.itemsize == 8:
            return _PLAIN_MIN <= m < _PLAIN_END
        return _PLAIN_MIN32 <= m < _PLAIN_END32
    flat = X.ravel(order="K")  # a view in memory order
    if X.size <= _PLAIN_PYTHON_MAX:
        # a few values: as Python floats (exact), cheaper than a call of a compiled kernel
        return plain_values(flat.tolist(), X.dtype.itemsize)
    if X.dtype.itemsize == 8:
        biased = int(_peak.peak_bits_f64(flat)) >> 52  # the exponent field (+1023)
        return 1023 - SAFE_EXPONENT - 1 <= biased < 1023 + SAFE_EXPONENT
    biased = int(_peak.peak_bits_f32(flat)) >> 23  # the exponent field (+127)
    return 127 - SAFE_EXPONENT_FLOAT32 - 1 <= biased < 127 + SAFE_EXPONENT_FLOAT32


def _peak_of_bits(X):
    """:func:`finite_peak` of a contiguous float array, in one pass over its bit patterns."""
    view, mask, _ = _PEAK_BITS[X.dtype]
    bits = (X.reshape(-1) if X.flags.c_contiguous else X.reshape(-1, order="F")).view(view)
    n_threads = available_threads() if X.size >= _PEAK_PARALLEL_MIN else 1
    if n_threads == 1:
        top = _peak.peak_bits_serial(bits, mask)
    else:
        parts = np.empty(n_threads, dtype=view)
        _peak.peak_bits(bits, mask, parts)
        top = parts.max()
    # the float with these bits (struct: a fraction of NumPy's cost on one value)
    if view.itemsize == 8:
        return struct.unpack("<d", struct.pack("<q", int(top)))[0]
    return struct.unpack("<f", struct.pack("<i", int(top)))[0]


def _row_peaks(X):
    """``max |x|`` of every row of a 2-D float array, NaN entries ignored (a row of NaN
    only gives NaN): one compiled pass over the bit patterns of a large C-ordered array
    (as :func:`finite_peak`), two NumPy reductions otherwise."""
    if X.dtype in _PEAK_BITS and X.flags.c_contiguous and X.size >= _PEAK_BITS[X.dtype][2]:
        view, mask, _ = _PEAK_BITS[X.dtype]
        top = np.empty(X.shape[0], dtype=view)
        _peak.row_peak_bits(X.view(view), mask, top)
        m = top.view(X.dtype).astype(np.float64)
        odd = np.flatnonzero(np.isnan(m))  # rows holding a NaN: their peak without it
        if odd.shape[0]:
            m[odd] = _row_peaks_reduced(X[odd])
        return m
    return _row_peaks_reduced(X)


def _row_peaks_reduced(X):
    # fmax / fmin skip NaN; two reductions over the rows, no temporary the size of X
    with np.errstate(invalid="ignore"):
        return np.fmax(np.fmax.reduce(X, axis=1), -np.fmin.reduce(X, axis=1)).astype(
            np.float64, copy=False
        )


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


# Data whose largest magnitude lies in [2**-SAFE_EXPONENT, 2**SAFE_EXPONENT] can be squared,
# summed over a million terms and exponentiated in float64 without overflow or underflow.
SAFE_EXPONENT = 400
_PLAIN_MIN = math.ldexp(1.0, -SAFE_EXPONENT - 1)
_PLAIN_END = math.ldexp(1.0, SAFE_EXPONENT)
# The same for float32 computations (a range of 2**+-128): sums of up to 2**80 terms of data
# within 2**+-40, and their square roots, stay far inside it.
SAFE_EXPONENT_FLOAT32 = 40
_PLAIN_MIN32 = math.ldexp(1.0, -SAFE_EXPONENT_FLOAT32 - 1)
_PLAIN_END32 = math.ldexp(1.0, SAFE_EXPONENT_FLOAT32)


def safe_exponent(dtype):
    """The ``limit`` of :func:`pow2_scale` for computations in ``dtype`` (float32 or not)."""
    return SAFE_EXPONENT_FLOAT32 if np.dtype(dtype) == np.float32 else SAFE_EXPONENT


def pow2_scale(X, *, always=False, limit=SAFE_EXPONENT, peak=None):
    """A power of two ``s`` such that ``max |X| * s`` lies in [0.5, 1).

    Multiplying by a power of two is exact in floating point (barring underflow), so a
    computation that is homogeneous in X gives bit for bit the same result on ``X * s``,
    rescaled, as on X, while its squares and sums can no longer overflow or underflow.
    Returns 1.0 for an all-zero (or empty) array, and, unless ``always``, when ``max |X|``
    already lies in ``[2**-limit, 2**limit]`` (then no copy is needed). ``peak``: ``max |X|``
    when the caller has it already (see :func:`finite_peak`).
    """
    if not (hasattr(X, "tocsr") and hasattr(X, "nnz")):  # sparse matrices: their entries
        X = np.asarray(X)
    if X.size == 0:
        return 1.0
    m = finite_peak(X) if peak is None else float(peak)
    if m == 0.0 or not math.isfinite(m):
        return 1.0
    exponent = math.frexp(m)[1]  # Python's, exact as NumPy's, without a ufunc call
    if not always and -limit <= exponent <= limit:
        return 1.0
    return math.ldexp(1.0, min(max(-exponent, -1020), 1020))


def scaled_copy(X, *, always=False, limit=SAFE_EXPONENT, peak=None):
    """``(X * s, s)`` with ``s = pow2_scale(X)``; X itself (not a copy) when ``s == 1``."""
    s = pow2_scale(X, always=always, limit=limit, peak=peak)
    if s == 1.0:
        return X, 1.0
    if X.dtype == np.float64:
        return X * s, s
    return np.multiply(X, s, dtype=np.float64).astype(X.dtype), s


def unscale(values, s, source, *, degree=1, name="X", what="The result", out=None):
    """A result computed on ``source = X * s`` brought back to the units of X, exactly.

    ``values`` is homogeneous of ``degree`` in X (its values for X are those for ``X * s``
    divided by ``s**degree``) and ``s`` a power of two from :func:`pow2_scale`, so the
    rescaling is one exact ``ldexp``. When the largest value would pass the largest float of
    its dtype (X near the float maximum: sums, norms or squares of its entries), or fall to
    zero although it is not (a square of subnormal data), nothing is rescaled and a
    ValueError names the magnitude of X from which the result is representable, instead of
    an infinity or a zero in the output; smaller values underflow as in any float
    computation. ``source`` (an array or sparse matrix) gives the magnitude of X for that
    message only. ``values`` may be a sparse matrix (its entries are rescaled, on a copy);
    ``out``: rescale an ndarray in place.
    """
    if s == 1.0:
        return values
    sparse = hasattr(values, "tocsr") and hasattr(values, "nnz")  # a sparse matrix
    arr = values.data if sparse else np.asarray(values)
    shift = degree * (1 - math.frexp(s)[1])  # values / s**degree == ldexp(values, shift)
    if arr.size:
        dtype = arr.dtype if arr.dtype.kind == "f" else np.dtype(np.float64)
        top = finite_peak(arr)
        with np.errstate(over="ignore", under="ignore"):
            moved = float(np.ldexp(dtype.type(top), shift))  # in the result's own dtype
        if top > 0 and (moved == 0.0 or math.isinf(moved)):
            _refuse_unscaled(top, shift, source, degree, name, what, dtype, math.isinf(moved))
    if sparse:
        values = values.copy()
        values.data = np.ldexp(values.data, shift)
        return values
    if np.ndim(values) == 0 and not isinstance(values, np.ndarray):
        return float(math.ldexp(float(values), shift))
    if out is not None:
        return np.ldexp(arr, shift, out=out)
    return np.ldexp(arr, shift)


def _refuse_unscaled(top, shift, source, degree, name, what, dtype, too_large):
    """The error of :func:`unscale`: the magnitude of X at which the result's largest value
    ``ldexp(top, shift)`` would reach the end of the range of ``dtype``."""
    info = np.finfo(dtype)
    end = float(info.max) if too_large else float(info.smallest_subnormal)
    peak = math.ldexp(finite_peak(source), shift // degree)  # max |X|
    # the result grows as the magnitude of X to the power `degree`
    bound = peak * 2.0 ** ((math.log2(end) - math.log2(top) - shift) / degree)
    grows = {1: "in proportion to", 2: "as the square of"}.get(degree, f"as the power {degree} of")
    if too_large:
        problem = f"the largest value would pass the largest {dtype} ({end:.4g})"
        fix = f"finite up to a largest magnitude of about {bound:.4g}: divide {name} by"
    else:
        problem = f"even the largest value would fall to zero in {dtype}"
        fix = f"nonzero from a largest magnitude of about {bound:.4g}: multiply {name} by"
    raise ValueError(
        f"{what} cannot be represented: {problem}. {name} has largest magnitude {peak:.4g}; "
        f"the result grows {grows} the magnitude of {name}, so for this {name} it is {fix} a "
        "constant first."
    )


def scale_rows(X, *, limit=SAFE_EXPONENT):
    """X (2-D) with every row multiplied by a power of two when its magnitude is extreme.

    For quantities that do not change when a row is multiplied by a positive number
    (cosines, normalized entropies): rows whose largest magnitude lies outside
    ``[2**-limit, 2**limit]`` are brought (exactly) to largest magnitude in [0.5, 1)
    so that their squares cannot overflow or underflow. X itself when no row needs it.
    NaN entries are ignored in the maxima.
    """
    if X.shape[1] == 0:
        return X
    m = _row_peaks(X)
    m = np.where(np.isfinite(m), m, 0.0)
    exponent = np.frexp(m)[1]
    bad = (m > 0) & ((exponent > limit) | (exponent < -limit))
    if not bad.any():
        return X
    s = np.where(bad, np.ldexp(1.0, np.clip(-exponent, -1020, 1020)), 1.0)
    return (X * s[:, None]).astype(X.dtype, copy=False)


def memory_budget():
    """The working-memory budget of one call, in bytes.

    ``SKORG_MAX_MEMORY`` (MiB) when set, otherwise half of the machine's physical memory
    (8 GiB where that cannot be read). Paths whose memory grows faster than their input
    (the paraproduct, dense pairwise matrices, the command line's data) compare their
    estimate with it before they allocate.
    """
    import os

    value = os.environ.get("SKORG_MAX_MEMORY")
    if value:
        try:
            mib = float(value)
        except ValueError:
            mib = float("nan")
        if not (np.isfinite(mib) and mib > 0):
            raise ValueError(f"SKORG_MAX_MEMORY must be a positive number of MiB, got {value!r}.")
        return int(mib * 2**20)
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2)
    except (AttributeError, ValueError, OSError):
        return 8 * 2**30


def check_memory(nbytes, what):
    """Raise MemoryError, with the figures, when ``nbytes`` exceeds :func:`memory_budget`."""
    budget = memory_budget()
    if nbytes > budget:
        raise MemoryError(
            f"{what} needs about {nbytes / 2**30:.3g} GiB, more than the memory budget of "
            f"{budget / 2**30:.3g} GiB (half the physical memory, or SKORG_MAX_MEMORY in MiB)."
        )


def safe_norm(x):
    """Euclidean (Frobenius) norm of any finite array without overflow or underflow of the
    squares: scaled by the largest magnitude when that is extreme."""
    x = np.asarray(x, dtype=np.float64).ravel()
    if x.size == 0:
        return 0.0
    m = float(np.max(np.abs(x)))
    if m == 0.0 or not np.isfinite(m):
        return m
    if 2.0**-400 <= m <= 2.0**400:
        return float(np.sqrt(np.dot(x, x)))
    y = x / m
    return m * float(np.sqrt(np.dot(y, y)))
