"""Large scratch arrays kept from one step of a fit to the next.

A fit such as the questionnaire calls the same kernels many times on tables of one size
(the two-tree EMD's float64 prefix table is as large as the data in float64). Allocated
afresh, every such table costs the operating system's first touch of each of its pages,
about as long as writing it once more. Inside :func:`reusing_scratch` the table of a given
name is allocated once and handed out again while it is large enough.

The pool lives in a :class:`contextvars.ContextVar`, so every thread (and every
``asyncio`` task) has its own and the function stays thread-safe; outside a
:func:`reusing_scratch` call :func:`scratch_empty` is :func:`numpy.empty`. The pool is
dropped when the decorated call returns, so nothing stays allocated after a fit.
"""

from __future__ import annotations

import contextvars
import functools

import numpy as np

_POOL = contextvars.ContextVar("skorg_scratch_pool", default=None)


def reusing_scratch(func):
    """Decorate ``func`` so that its calls of :func:`scratch_empty` share one pool.

    Nested calls use the outermost call's pool.
    """

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if _POOL.get() is not None:
            return func(*args, **kwargs)
        token = _POOL.set({})
        try:
            return func(*args, **kwargs)
        finally:
            _POOL.reset(token)

    return wrapper


def scratch_empty(name, shape, dtype):
    """An uninitialized array of ``shape`` and ``dtype``, reused within :func:`reusing_scratch`.

    The caller must be done with the array before it asks for ``name`` again, and must not
    return it: the next request of the same name gets the same memory.
    """
    pool = _POOL.get()
    if pool is None:
        return np.empty(shape, dtype=dtype)
    dtype = np.dtype(dtype)
    size = int(np.prod(shape, dtype=np.int64))
    flat = pool.get(name)
    if flat is None or flat.dtype != dtype or flat.shape[0] < size:
        pool[name] = None  # free the smaller one before the larger one is allocated
        flat = np.empty(size, dtype=dtype)
        pool[name] = flat
    return flat[:size].reshape(shape)
