"""Exact order statistics (selection) shared by the tree builders and the dual affinity."""

from __future__ import annotations

import numpy as np

from ._kernels._flexible import split_window

__all__ = ["order_statistics"]

# Sample size of the selection in order_statistics, and the smallest input it is used on.
_SELECT_SAMPLE = 1024
_SELECT_MIN = 8 * _SELECT_SAMPLE


def order_statistics(x, ranks):
    """The values of the given ranks (sorted, 0-based) of x; x may be reordered.

    On large inputs, a strided sample brackets the ranks with two of its order statistics
    (four standard deviations of the sample rank to spare each side), one pass keeps the
    entries between them, and the selection runs on those alone; when the bracket misses
    (it is checked by counting), on everything. The values are exact either way.
    """
    n = x.shape[0]
    if n >= _SELECT_MIN:
        sample = x[:: n // _SELECT_SAMPLE]
        s = sample.shape[0]
        spare = int(2.0 * np.sqrt(s)) + 1
        lo = max(ranks[0] * s // n - spare, 0)
        hi = min(ranks[-1] * s // n + spare, s - 1)
        bracket = np.partition(sample, [lo, hi])
        below, inside = split_window(x, bracket[lo], bracket[hi])
        if below <= ranks[0] and ranks[-1] < below + inside.shape[0]:
            local = [r - below for r in ranks]
            inside.partition(local)
            return [float(inside[r]) for r in local]
    x.partition(ranks)
    return [float(x[r]) for r in ranks]
