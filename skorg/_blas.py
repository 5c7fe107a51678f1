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
