"""How numba's parallel kernels share out: on TBB where it is installed, on one thread while
the cores are taken.

numba runs a parallel kernel (``prange``) on one of three layers, chosen once, at the first
parallel call of the process. Its default on Linux, GNU OpenMP, hands every thread a fixed
share of the tasks (``#pragma omp for``, static schedule, whatever
``numba.set_parallel_chunksize`` says) and ends the region at a barrier, where the calling
thread spins: when another process holds a core, the share of the thread that this core does
not run holds the whole call back by scheduler time slices (multiples of about 8 ms on a
2-core machine with one busy loop: a 0.2 ms Haar transform took 8 to 32 ms, 50 to 150 times
its one-thread time). TBB's ``parallel_for`` instead lets idle threads steal tasks, the
calling thread included, so the tasks that a descheduled thread has not started are run by
the others (the kernels hand out many small tasks, parallel chunk size 1, for that): a call
on a busy machine waits only for the task that a descheduled thread has started (which is
why :func:`available_threads`, below, keeps the calls on one thread while the cores are
taken). The third layer, ``workqueue``, also
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
import threading
import time
from contextlib import contextmanager

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


# --------------------------------------------------------------------------- busy cores
# TBB's calling thread takes over the tasks nobody started, but not a task that a thread
# descheduled mid-way holds: on a machine whose cores are all taken (another process's busy
# loop on the other core, more runnable threads than cores), a parallel call can still wait
# a scheduler time slice (ms) for it, many times a call's own length. The kernels' callers
# therefore ask available_threads(), which watches the helper threads (every thread of the
# process but the caller: numba's workers, which run only in parallel calls): of the time
# they were runnable since the last look, the share they spent waiting for a core (their
# run-queue delay, /proc/self/task/*/schedstat on Linux, read at most once per
# _PROBE_SECONDS), less _WAKE_SECONDS per time slice (waking on an idle core takes some
# microseconds; a core that another program holds, a time slice of milliseconds). Above
# _BUSY_SHARE the cores are taken, and parallel calls run on the
# calling thread alone for a while (_HOLD_MIN_SECONDS, doubled each time a retry finds the
# cores still taken, up to _HOLD_MAX_SECONDS), so that a busy machine costs at most the
# retries; a look after less than _MIN_RUNNABLE_SECONDS of helper time (no parallel call
# since, or serial ones only) decides nothing. The caller's own waits do not count: they
# slow a serial call as much. The results do not change: every kernel gives the same bits on
# any number of threads. SKORG_SERIAL_WHEN_BUSY=0 in the environment turns the watch off
# (the parallel kernels then always share out).
_PROBE_SECONDS = 0.05
_BUSY_SHARE = 0.1
_MIN_RUNNABLE_SECONDS = 0.001
_WAKE_SECONDS = 50e-6
_HOLD_MIN_SECONDS = 0.2
_HOLD_MAX_SECONDS = 3.2
_TASKS = "/proc/self/task"


class _Contention:
    """The probe's state, shared by the process's threads (updated under a lock)."""

    def __init__(self):
        self.lock = threading.Lock()
        flag = os.environ.get("SKORG_SERIAL_WHEN_BUSY", "1").strip().lower()
        self.enabled = flag not in ("0", "false", "no", "off") and os.path.isdir(_TASKS)
        self.next_probe = 0.0
        self.last = None  # the helpers' (running ns, waiting ns, slices) at the last look
        self.serial_until = 0.0
        self.hold = 0.0


_state = None
# calls inside watch_suspended() (nested, any thread) share out whatever the load
_suspended = 0
_suspend_lock = threading.Lock()


def _helper_times(caller):
    """Summed time on a core and waiting for one (ns), and number of time slices, of the
    process's threads but ``caller`` (a native thread id), so far."""
    running = waiting = slices = 0
    for task in os.listdir(_TASKS):
        if task == caller:
            continue
        try:
            with open(f"{_TASKS}/{task}/schedstat", "rb") as f:
                fields = f.read().split()
            running += int(fields[0])
            waiting += int(fields[1])
            slices += int(fields[2])
        except (OSError, IndexError, ValueError):  # a thread that ended meanwhile
            pass
    return running, waiting, slices


def _probe(state, now):
    state.next_probe = now + _PROBE_SECONDS
    try:
        times = _helper_times(str(threading.get_native_id()))
    except OSError:
        state.enabled = False
        return
    if state.last is not None:
        running = (times[0] - state.last[0]) * 1e-9
        waiting = (times[1] - state.last[1]) * 1e-9
        if running + waiting < _MIN_RUNNABLE_SECONDS:
            return  # the helpers hardly ran: nothing learnt (and state.last kept)
        waking = (times[2] - state.last[2]) * _WAKE_SECONDS
        if waiting - waking > _BUSY_SHARE * (running + waiting):
            state.hold = min(max(2 * state.hold, _HOLD_MIN_SECONDS), _HOLD_MAX_SECONDS)
            state.serial_until = now + state.hold
        else:
            state.hold = 0.0  # the helpers ran and hardly waited: the cores are free
    state.last = times


def available_threads():
    """numba's thread count for the next parallel call, or 1 while the cores are taken."""
    global _state
    import numba

    n = numba.get_num_threads()
    if n == 1:
        return 1
    state = _state
    if state is None:
        state = _state = _Contention()
    if not state.enabled or _suspended:
        return n
    now = time.monotonic()
    if now >= state.next_probe and state.lock.acquire(blocking=False):
        try:
            _probe(state, now)
        finally:
            state.lock.release()
    if now < state.serial_until:
        return 1
    return n


@contextmanager
def parallel_threads():
    """Run the parallel kernels called inside on :func:`available_threads` threads.

    numba's thread count is per thread (thread-local), so this changes nothing for other
    threads; inside, ``numba.get_num_threads()`` says the count in force.
    """
    import numba

    n = available_threads()
    previous = numba.get_num_threads()
    if n == previous:
        yield n
        return
    numba.set_num_threads(n)
    try:
        yield n
    finally:
        numba.set_num_threads(previous)


@contextmanager
def watch_suspended():
    """Let the parallel calls inside share out whatever the load (``skorg warmup`` compiles
    the parallel kernels by running them)."""
    global _suspended
    with _suspend_lock:
        _suspended += 1
    try:
        yield
    finally:
        with _suspend_lock:
            _suspended -= 1
