"""Load mode of the benchmarks: every figure quiet and under load, beside its one-thread time.

A user's machine is rarely idle. ``--load`` runs a benchmark's threading table with busy
loops of normal priority (``python -c "while True: pass"``) on all the cores this process may
use but one, started before the timings and stopped after them; ``--quiet-and-loaded``
prints the quiet table and then the loaded one in the same run. Every row has skorg's time
with the default threading, its time on one thread (``NUMBA_NUM_THREADS=1`` in a subprocess,
or ``numba.set_num_threads(1)`` in process) under the same conditions, and the ratio of the
two: the parallel kernels should never be more than about 1.1 times slower than one thread,
whatever the load (user guide, "Speed and precision").

    python benchmarks/bench_haar.py --quiet-and-loaded
    python benchmarks/bench_emd.py --load
    python benchmarks/bench_haar.py --quiet-and-loaded --layer omp   # on numba's OpenMP layer

``--layer NAME`` (tbb, omp or workqueue) runs a benchmark, and the subprocesses it starts, on
that threading layer instead of skorg's choice (TBB where installed).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from contextlib import contextmanager

__all__ = [
    "LAYERS",
    "LOAD_FLAGS",
    "busy_loops",
    "load_modes",
    "one_thread_env",
    "select_layer",
    "threads_table",
]

LOAD_FLAGS = ("--load", "--quiet-and-loaded")
# numba's threading layers a benchmark may be run on (``--layer NAME``); the default is
# skorg's choice (TBB where the tbb package is installed, else numba's own)
LAYERS = ("tbb", "omp", "workqueue")
# the busy loops' start-up (an interpreter each) must be over before the first timing
_SPIN_UP_SECONDS = 1.0


def _fail(message):
    print(message, file=sys.stderr)
    sys.exit(2)


def select_layer(argv):
    """Apply ``--layer NAME`` (one of LAYERS) and return the other arguments.

    The layer goes into ``NUMBA_THREADING_LAYER``, for this process (numba reads it when it
    launches its threads, at the first parallel call) and the subprocesses that the
    benchmarks start; skorg's own choice (skorg/_threading.py) defers to it. A layer that
    this installation cannot load ends the benchmark with one line (exit code 2).
    """
    argv = list(argv)
    if "--layer" not in argv:
        return argv
    i = argv.index("--layer")
    name = argv[i + 1].lower() if i + 1 < len(argv) else ""
    if name not in LAYERS:
        _fail(f"--layer must be one of {', '.join(LAYERS)}, got {name!r}")
    os.environ["NUMBA_THREADING_LAYER"] = name
    numba = sys.modules.get("numba")
    if numba is not None:
        try:
            numba.threading_layer()
        except ValueError:  # threads not launched yet: the layer can still be chosen
            numba.config.THREADING_LAYER = name
        else:
            _fail("--layer: numba's threads are already running; pass it before any call")
    return argv[:i] + argv[i + 2 :]


def check_layer():
    """The layer numba runs on (its threads launched now); ends the benchmark with one line
    where it is not the one that ``--layer`` asked for."""
    layer = _layer()
    wanted = os.environ.get("NUMBA_THREADING_LAYER", "default").lower()
    if wanted in LAYERS and layer != wanted:
        _fail(f"--layer {wanted}: numba runs on {layer} here")
    return layer


def load_modes(argv):
    """(modes, remaining arguments): modes is None without a load flag, else the list of
    ``False`` (quiet) and ``True`` (loaded) to run. ``--layer NAME`` is applied
    (:func:`select_layer`) and left out of the remaining arguments."""
    argv = select_layer(argv)
    modes = None
    if "--quiet-and-loaded" in argv:
        modes = [False, True]
    elif "--load" in argv:
        modes = [True]
    return modes, [a for a in argv if a not in LOAD_FLAGS]


def usable_cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@contextmanager
def busy_loops(enabled=True):
    """Busy loops of normal priority on all usable cores but one (at least one loop)."""
    if not enabled:
        yield 0
        return
    n = max(1, usable_cores() - 1)
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        time.sleep(_SPIN_UP_SECONDS)
        yield n
    finally:
        for loop in loops:
            loop.terminate()
        for loop in loops:
            loop.wait()


def one_thread_env(env=None):
    """A copy of the environment (or of ``env``) in which numba runs on one thread."""
    env = dict(os.environ if env is None else env)
    env["NUMBA_NUM_THREADS"] = "1"
    return env


def _layer():
    """The threading layer skorg's kernels run on here (and in children with this
    environment): skorg chooses it at import, numba at its threads' launch."""
    import numba

    import skorg  # noqa: F401  (skorg/_threading.py)

    numba.set_num_threads(numba.get_num_threads())  # launches the threads
    return numba.threading_layer()


def threads_table(cases, measure, modes, extra=()):
    """Time every case with the default threading and on one thread, quiet and/or loaded.

    ``measure(case)`` returns a dict of seconds with the keys ``"skorg"`` and ``"one
    thread"`` (measured one right after the other) and the keys of ``extra`` (other
    libraries' times, where they apply). Prints one table per mode and returns the rows.
    """
    import numba

    print(
        f"# numba {numba.__version__}, {numba.config.NUMBA_NUM_THREADS} threads on the layer "
        f"{check_layer()}, {usable_cores()} usable cores"
    )
    rows = []
    for loaded in modes:
        with busy_loops(loaded) as n_loops:
            label = f"loaded ({n_loops} busy loops)" if loaded else "quiet"
            head = f"{'case (' + label + ')':<44}{'skorg ms':>11}{'1 thread ms':>13}"
            head += "".join(f"{key + ' ms':>14}" for key in extra)
            print(head + f"{'skorg/1 thread':>16}")
            for case in cases:
                times = measure(case)
                ratio = times["skorg"] / times["one thread"]
                line = f"{case:<44}{1e3 * times['skorg']:>11.2f}{1e3 * times['one thread']:>13.2f}"
                line += "".join(
                    f"{1e3 * times[key]:>14.2f}" if key in times else f"{'-':>14}" for key in extra
                )
                print(line + f"{ratio:>15.2f}x", flush=True)
                rows.append({"case": case, "loaded": loaded, **times, "ratio": ratio})
    if len(modes) == 2:
        worst = max(r["ratio"] for r in rows if r["loaded"])
        print(f"# loaded: the largest skorg / one-thread ratio is {worst:.2f} (target: 1.10)")
    return rows
