"""Which threading layer numba's parallel kernels run on: TBB where it is installed.

numba runs a parallel kernel (``prange``) on one of three layers, chosen once, at the first
parallel call of the process. Its default on Linux, GNU OpenMP, hands every thread a fixed
share of the tasks (``#pragma omp for``, static schedule, whatever
``numba.set_parallel_chunksize`` says) and ends the region at a barrier, where the calling
thread spins: when another process holds a core, the share of the thread that this core does
not run holds the whole call back by scheduler time slices (multiples of about 8 ms on a
2-core machine with one busy loop: a 0.2 ms Haar transform took 8 to 32 ms, 50 to 150 times
its one-thread time). TBB's ``parallel_for`` instead lets idle threads steal tasks, the
calling thread included, so the tasks that a descheduled thread has not started are run by
the others (the kernels hand out many small tasks, parallel chunk size 1, for that) and a
call on a busy machine stays near its one-thread time. The third layer, ``workqueue``, also
waits for fixed shares and is not thread-safe (numba aborts the process when two threads
call parallel kernels at once), so it is never chosen here.

TBB comes from the optional ``tbb`` package (``pip install skorg[tbb]``), whose library pip
puts in ``<prefix>/lib``, a folder the dynamic loader does not search: numba then silently
falls back to OpenMP. :func:`prefer_tbb` loads that library by its path, before numba
chooses, so that numba's own first choice (TBB) finds it. It changes nothing when numba's
threads already run, when ``NUMBA_THREADING_LAYER`` names a layer that is not TBB, or when
the package is absent. The results do not depend on the layer: every task writes its own
entries or accumulators, in a fixed order (tests/test_threading.py compares them bit for
bit across layers and thread counts).
"""

from __future__ import annotations

import os
import sys

__all__: list[str] = []

# numba's layer names that may resolve to TBB (numba's THREADING_LAYER setting)
_MAY_PICK_TBB = ("default", "safe", "threadsafe", "forksafe", "tbb")
# the file names of TBB's runtime library (oneTBB 2021 and later) on each platform
_LIBRARY = {"linux": "libtbb.so.12", "darwin": "libtbb.12.dylib", "win32": "tbb12.dll"}


def _library_paths():
    """Where a pip-installed ``tbb`` puts its runtime library: the data folders' lib."""
    name = _LIBRARY.get(sys.platform)
    if name is None:
        return []
    # pip's data folder is the prefix of the environment (a virtual environment's, else the
    # interpreter's), or the user base for ``pip install --user``; sysconfig would say the
    # same at a cost of milliseconds per import
    site = sys.modules.get("site")
    prefixes = dict.fromkeys(
        p
        for p in (sys.prefix, sys.exec_prefix, sys.base_prefix, getattr(site, "USER_BASE", None))
        if p
    )
    sub = ("Library", "bin") if sys.platform == "win32" else ("lib",)
    return [os.path.join(prefix, *sub, name) for prefix in prefixes]


def prefer_tbb():
    """Make TBB numba's threading layer if the ``tbb`` package is installed.

    Returns the path of the library loaded, or None where nothing was done.
    """
    numba = sys.modules.get("numba")
    if numba is None:
        # numba reads its layer setting at import; the environment says it before that
        layer = os.environ.get("NUMBA_THREADING_LAYER", "default").lower()
    else:
        try:
            numba.threading_layer()  # raises until the threads are launched
            return None
        except ValueError:
            pass
        layer = str(numba.config.THREADING_LAYER).lower()
    if layer not in _MAY_PICK_TBB:
        return None
    for path in _library_paths():
        if os.path.isfile(path):
            import ctypes

            try:
                # loaded globally, the library answers numba's later load by its name
                ctypes.CDLL(path, mode=getattr(ctypes, "RTLD_GLOBAL", 0))
            except OSError:
                continue
            return path
    return None
