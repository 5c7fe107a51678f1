"""One switch for running BLAS on a single thread around small products."""

from __future__ import annotations

from contextlib import contextmanager

_controller = None


@contextmanager
def serial_blas(enabled=True):
    """Limit BLAS to one thread inside the block (when ``enabled``).

    Small products gain nothing from BLAS threads, and OpenBLAS workers keep spinning for a
    while after each threaded call, which starves the numba kernels that follow on a
    2-core machine. Results are the same bits: each output entry is summed by one thread
    either way.
    """
    global _controller
    if not enabled:
        yield
        return
    if _controller is None:
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
    with _controller.limit(limits=1, user_api="blas"):
        yield


# Multiply-adds from which a Gram product X @ X.T is split into two column halves. Each half
# runs on one BLAS thread, the two side by side on two of numba's threads: about 1.8 times
# faster than one BLAS thread on a 2-core machine (256 x 32768: 27-37 ms against 51-68 ms),
# without OpenBLAS's spinning workers (see serial_blas). The split depends on the size
# alone, so the result is the same bits whatever the number of threads.
_SPLIT_GRAM_MIN = 2**28
_SPLIT_GRAM_MIN_COLUMNS = 2048


def row_gram(X):
    """``X @ X.T`` of a 2-D float array, for large X in two column halves side by side.

    Up to ``_SPLIT_GRAM_MIN`` multiply-adds (or fewer than ``_SPLIT_GRAM_MIN_COLUMNS``
    columns) it is one product on one BLAS thread. Above, the halves' Gram products
    (symmetric rank-k updates) run on two threads when numba has two, else one after the
    other, and are added.
    """
    n, k = X.shape
    if n * n * k < _SPLIT_GRAM_MIN or k < _SPLIT_GRAM_MIN_COLUMNS:
        with serial_blas():
            return X @ X.T
    import numba

    half = k // 2 // 64 * 64  # whole cache lines in the first half
    left, right = X[:, :half], X[:, half:]
    with serial_blas():
        if numba.get_num_threads() < 2:
            G = left @ left.T
            G += right @ right.T
            return G
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(2) as pool:
            future = pool.submit(lambda: right @ right.T)
            G = left @ left.T
            G += future.result()
        return G
