"""Compile the numba kernels ahead of time (``skorg warmup``), and tell whether a run will.

skorg's kernels are compiled by numba on first use and cached on disk (next to the package,
or in ``NUMBA_CACHE_DIR``), so only the first call in a fresh install pays the compilation,
several seconds. ``warmup`` runs small, representative calls that compile and cache every
kernel a fit, a Haar transform or the command line uses, so that the first real call is fast.
"""

from __future__ import annotations

import os
import time

__all__ = ["kernels_cached", "warmup"]


def _sentinels():
    """Kernels that ``skorg warmup`` compiles and that a fit of a matrix of a few hundred rows
    or of a 3-D tensor uses (a smaller matrix compiles nothing: its EMD runs in NumPy)."""
    from ._kernels import _emd, _flexible

    return (_flexible._round_distances_serial, _flexible.join_round, _emd.pairwise_l1_sym_serial)


def kernels_cached():
    """Whether numba's on-disk cache holds the kernels of a fit.

    Returns
    -------
    cached : bool or None
        True when the cache index of every sentinel kernel exists, False when one is
        missing (the next fit compiles), None when numba's cache layout cannot be read.
    """
    try:
        for dispatcher in _sentinels():
            index = dispatcher._cache._cache_file._index_path
            if not os.path.exists(index):
                return False
    except AttributeError:  # another numba version: cannot tell, say nothing
        return None
    return True


def _calls():
    import numpy as np

    from ._validation import finite_peak, scale_rows
    from .organize import QuestionnaireOrganizer
    from .transforms import (
        haar_transform,
        inverse_haar_transform,
        inverse_multi_haar_transform,
        multi_haar_transform,
    )
    from .trees import dyadic_tree

    rng = np.random.default_rng(0)
    i, j = np.meshgrid(np.linspace(0, 1, 96), np.linspace(0, 1, 128))
    matrix = np.cos(3 * i + 2 * j) + 0.05 * rng.normal(size=i.shape)
    tensor = rng.random((20, 18, 6))

    def haar():
        # every path of the one-axis transform (long and short lanes, blocks of short rows,
        # row segments; perfect binary and other trees; serial and, from 2^17 values,
        # parallel) and the fused N-D one
        for dtype in (np.float64, np.float32):
            for shape, axis in (((4, 512), 1), ((8, 40), 1), ((512, 20), 0), ((1024, 1024), 1),
                                ((1024, 1024), 0), ((16, 16), 1), ((16384, 16), 1)):  # fmt: skip
                X = rng.normal(size=shape).astype(dtype)
                n = shape[axis]
                for m in (n, n - 1):
                    Y = np.take(X, np.arange(m), axis=axis)
                    tree = dyadic_tree(m)
                    inverse_haar_transform(haar_transform(Y, tree, axis=axis), tree, axis=axis)
            # the one-pass peak of the input checks (serial, and parallel from 2^21 values)
            for size in (1 << 20, 1 << 21):
                finite_peak(np.zeros(size, dtype=dtype))
            scale_rows(np.zeros((1024, 1024), dtype=dtype))  # and its per-row twin
            T = rng.normal(size=(6, 8, 16)).astype(dtype)
            trees = [dyadic_tree(k) for k in T.shape]
            inverse_multi_haar_transform(multi_haar_transform(T, trees), trees)

    def packets():
        # the wavelet packet kernels: every cost kind, the transforms both ways, serial and
        # (from 2^22 values) parallel
        from .transforms import (
            best_wavelet_packet_basis,
            inverse_wavelet_packet_transform,
            wavelet_packet_transform,
        )

        for shape in ((8, 40), (2048, 2048)):
            X = rng.normal(size=shape)
            tree = dyadic_tree(shape[1])
            for cost in ("l1", 0.5, "entropy"):
                basis = best_wavelet_packet_basis(X, tree, cost=cost)
            C = wavelet_packet_transform(X, tree, basis)
            inverse_wavelet_packet_transform(C, tree, basis)

    # a 128 x 96 fit runs its EMD in NumPy (nothing to compile); from about 256 x 192 the
    # compiled serial kernels take over, and from about 520 x 520 the parallel ones
    larger = np.cos(3 * rng.random((256, 1)) + 2 * rng.random((1, 192)))
    return [
        ("questionnaire on a 128 x 96 matrix", lambda: QuestionnaireOrganizer().fit(matrix)),
        ("questionnaire on a 256 x 192 matrix", lambda: QuestionnaireOrganizer().fit(larger)),
        (
            "questionnaire on a 20 x 18 x 6 tensor",
            lambda: QuestionnaireOrganizer(preset="paper_3d_heads").fit(tensor),
        ),
        ("tree Haar transforms (float64 and float32)", haar),
        ("Haar-Walsh wavelet packets", packets),
        (
            "parallel kernels (a 520 x 520 matrix)",
            lambda: QuestionnaireOrganizer(n_iter=1).fit(rng.random((520, 520))),
        ),
    ]


def warmup(progress=None):
    """Compile and cache the kernels of the common calls; returns the seconds it took.

    Parameters
    ----------
    progress : skorg.report.Progress or None
        Receives one step per group of calls.

    Returns
    -------
    seconds : float
    """
    from ._threading import watch_suspended

    start = time.perf_counter()
    # every parallel path taken, to compile its kernels, however busy the machine is
    with watch_suspended():
        for label, call in _calls():
            if progress is not None:
                progress.step(label)
            call()
    if progress is not None:
        progress.done()
    return time.perf_counter() - start
