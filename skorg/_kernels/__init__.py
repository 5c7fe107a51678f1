"""numba kernels: arrays in, arrays out; no validation and no Python objects.

Every kernel is compiled with ``cache=True``; set ``NUMBA_CACHE_DIR`` where the
package directory is read-only.
"""
