"""The largest magnitude of a float array, and whether it is finite, in one pass.

The array is read as its IEEE-754 bit patterns (int64 for float64, int32 for
float32) with the sign bit masked off. For such non-negative patterns the
integer order is the order of the magnitudes, and every infinity or NaN sorts
above every finite value (its exponent field is all ones); NaN sorts above
infinity (a non-zero mantissa). An integer maximum is exact, needs no
floating-point flags, and vectorizes; two NumPy reductions (maximum, minimum)
read the array twice.
"""

import numba
import numpy as np
from numba import prange

from ._emd import _split


@numba.njit(cache=True)
def _peak_bits_range(bits, mask, lo, hi):
    # a slice, indexed from 0: with a loop from a variable start the compiled loop keeps a
    # negative-index check per element and does not vectorize (5-9x slower, in cache and
    # in memory alike)
    part = bits[lo:hi]
    peak = part[0] & mask
    for i in range(1, part.shape[0]):
        peak = max(peak, part[i] & mask)
    return peak


@numba.njit(cache=True)
def peak_bits_serial(bits, mask):
    """``max(bits & mask)`` over a non-empty 1-D integer array."""
    return _peak_bits_range(bits, mask, 0, bits.shape[0])


@numba.njit(parallel=True, cache=True)
def peak_bits(bits, mask, out):
    """``out[p]`` = the largest masked pattern of part ``p`` of ``bits`` (``out.shape[0]``
    contiguous parts, each non-empty)."""
    n_parts = out.shape[0]
    for p in prange(n_parts):
        # int64 throughout: a uint64 loop index would make the bounds float64
        lo, hi = _split(np.int64(bits.shape[0]), np.int64(n_parts), np.int64(p))
        out[p] = _peak_bits_range(bits, mask, lo, hi)


@numba.njit(parallel=True, cache=True)
def row_peak_bits(bits, mask, out):
    """``out[i]`` = the largest masked pattern of row ``i`` of the 2-D ``bits`` (C order,
    rows non-empty), on all threads."""
    for i in prange(bits.shape[0]):
        out[i] = _peak_bits_range(bits[i], mask, 0, bits.shape[1])


@numba.njit(cache=True)
def peak_bits_f64(x):
    """``max(bits & mask)`` of a non-empty 1-D contiguous float64 array, read as int64 in
    place (one argument: the cheapest call on a few values)."""
    bits = x.view(np.int64)
    return _peak_bits_range(bits, np.int64(0x7FFFFFFFFFFFFFFF), 0, bits.shape[0])


@numba.njit(cache=True)
def peak_bits_f32(x):
    """:func:`peak_bits_f64` of a float32 array (int32 patterns)."""
    bits = x.view(np.int32)
    return _peak_bits_range(bits, np.int32(0x7FFFFFFF), 0, bits.shape[0])
