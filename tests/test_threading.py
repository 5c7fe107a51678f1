"""The results do not depend on numba's threading layer or thread count (bit for bit), and
skorg makes TBB the layer where the ``tbb`` package is installed (skorg/_threading.py)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numba
import pytest

from skorg import _threading

ROOT = Path(__file__).resolve().parents[1]

# One process per threading choice. Sizes are above the thresholds below which the kernels
# stay on the calling thread (2^17 values for the Haar transforms, 2e7 inner steps for the
# EMD sums, 512 points for the flexible trees' parallel rounds), so every parallel family
# runs its parallel path (Haar rows from 4 MB staged, columns of few rows by subtrees or by
# narrowed blocks); each result is hashed from its bytes.
WORKER = r"""
import hashlib, json, sys
import numpy as np
import numba
from skorg.datasets import make_shuffled_matrix, make_shuffled_tensor
from skorg.metrics import multi_tree_emd
from skorg.organize import questionnaire
from skorg.transforms import bihaar_transform, haar_transform, inverse_haar_transform
from skorg.trees import dyadic_tree, linkage_tree

digests = {}

def put(name, *arrays):
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str((a.dtype.str, a.shape)).encode())
        h.update(a.tobytes())
    digests[name] = h.hexdigest()

def put_tree(name, tree):
    put(name, tree.parent, tree.leaf_order, tree.level)

rng = np.random.default_rng(7)
X = rng.standard_normal((768, 1024))
rows, cols = dyadic_tree(1024), dyadic_tree(768)
other = linkage_tree(rng.standard_normal((1024, 3)))
put("haar rows", haar_transform(X, rows, axis=1))
put("haar columns", haar_transform(X, cols, axis=0))
put("haar other tree", haar_transform(X, other, axis=1))
put("haar rows out=", haar_transform(X, rows, axis=1, out=np.empty_like(X)))
put("haar rows float32", haar_transform(np.tile(X, (2, 1)).astype(np.float32), rows, axis=1))
put("haar columns by subtrees", haar_transform(X[:512], dyadic_tree(512), axis=0))
put("haar columns, narrowed blocks", haar_transform(X[:128], dyadic_tree(128), axis=0))
put("inverse haar", inverse_haar_transform(X, rows, axis=1))
put("bihaar", bihaar_transform(X, cols, rows))
put("emd", multi_tree_emd(X, [None, rows], axis=0, alphas=1.0, betas=0.0))
put("emd 3-D", multi_tree_emd(X[:512].reshape(64, 8, 1024), [None, dyadic_tree(8), rows], axis=0))

M = make_shuffled_matrix(512, 512, noise=0.02, random_state=3).X
fit = questionnaire(M, n_iter=2, preset="paper_2d_holder")
for axis, (tree, dist) in enumerate(zip(fit.trees, fit.distances)):
    put_tree(f"2-D tree {axis}", tree)
    put(f"2-D distances {axis}", dist)
T = make_shuffled_tensor((96, 96, 48), noise=0.02, random_state=4).X
fit = questionnaire(T, n_iter=2, preset="paper_3d_heads")
for axis, (tree, dist) in enumerate(zip(fit.trees, fit.distances)):
    put_tree(f"3-D tree {axis}", tree)
    put(f"3-D distances {axis}", dist)
layer = numba.threading_layer() if numba.get_num_threads() > 1 else "one thread"
print(json.dumps({"layer": layer, "threads": numba.get_num_threads(), "digests": digests}))
"""


def _run(env_changes):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_THREADING")}
    env.pop("SKORG_SERIAL_WHEN_BUSY", None)
    env.pop("NUMBA_NUM_THREADS", None)
    env.update(env_changes)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", WORKER], capture_output=True, text=True, env=env, cwd=ROOT
    )
    return done


def test_results_equal_bit_for_bit_whatever_the_threading():
    one = _run({"NUMBA_NUM_THREADS": "1"})
    assert one.returncode == 0, one.stderr
    reference = json.loads(one.stdout.splitlines()[-1])
    assert reference["threads"] == 1
    compared = []
    # the default choice, then each layer numba has here on three threads (an uneven share)
    choices = [{}] + [
        # the parallel kernels share out even where this machine's cores are taken
        {"NUMBA_NUM_THREADS": "3", "NUMBA_THREADING_LAYER": layer, "SKORG_SERIAL_WHEN_BUSY": "0"}
        for layer in ("tbb", "omp", "workqueue")
    ]
    for choice in choices:
        done = _run(choice)
        if done.returncode != 0:
            # a layer that this installation lacks (TBB without the tbb package, OpenMP
            # without libgomp) is not a choice a user has
            assert "No threading layer could be loaded" in done.stderr, done.stderr
            continue
        result = json.loads(done.stdout.splitlines()[-1])
        assert result["digests"] == reference["digests"], (choice, result["layer"])
        compared.append((result["layer"], result["threads"]))
    # the default and at least one layer on three threads were compared
    assert len(compared) >= 2 and all(threads > 1 for _, threads in compared[1:]), compared
    # with the tbb package installed, the default is TBB (found by skorg, not by the loader)
    if _tbb_installed():
        assert compared[0][0] in ("tbb", "one thread"), compared


def _tbb_installed():
    from importlib import metadata

    try:
        metadata.distribution("tbb")
    except metadata.PackageNotFoundError:
        return False
    return True


def _prefer_tbb_in_a_fresh_process(env_changes, before=""):
    """prefer_tbb() and whether it looked for the library, in a process whose numba threads
    are not launched yet (``before`` runs first)."""
    code = (
        "from skorg import _threading\n"
        f"{before}\n"
        "looked = []\n"
        "_threading._library_paths = lambda: looked.append(1) or ['/nonexistent/libtbb.so.12']\n"
        "print(_threading.prefer_tbb(), bool(looked))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_THREADING")}
    env.update(env_changes, PYTHONPATH=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    return out.stdout.split()


def test_prefer_tbb_looks_only_where_numba_may_choose_tbb():
    # the default layer: the library looked for (absent here, so nothing loaded)
    assert _prefer_tbb_in_a_fresh_process({}) == ["None", "True"]
    assert _prefer_tbb_in_a_fresh_process({"NUMBA_THREADING_LAYER": "tbb"}) == ["None", "True"]
    # a layer named by the user that is not TBB: left alone
    for layer in ("omp", "workqueue"):
        got = _prefer_tbb_in_a_fresh_process({"NUMBA_THREADING_LAYER": layer})
        assert got == ["None", "False"], layer
    # numba's threads already launched (the layer is chosen for good): left alone
    launch = "import numba; numba.set_num_threads(1)"
    assert _prefer_tbb_in_a_fresh_process({}, before=launch) == ["None", "False"]


def test_library_paths_are_where_pip_puts_data():
    paths = _threading._library_paths()
    if sys.platform not in _threading._LIBRARY:
        assert paths == []
        return

    sub = ("Library", "bin") if sys.platform == "win32" else ("lib",)
    expected = os.path.join(sys.prefix, *sub, _threading._LIBRARY[sys.platform])
    assert expected in paths


class _Helpers:
    """A stand-in for the helper threads' times on and waiting for a core (ns), and the
    clock."""

    def __init__(self, monkeypatch):
        self.times = [0, 0, 0]
        self.now = 1000.0
        monkeypatch.setattr(_threading, "_helper_times", lambda caller: tuple(self.times))
        monkeypatch.setattr(_threading.time, "monotonic", lambda: self.now)
        state = _threading._Contention()
        state.enabled = True
        monkeypatch.setattr(_threading, "_state", state)

    def step(self, seconds, running, waiting, slices=1):
        self.now += seconds
        self.times[0] += int(running * 1e9)
        self.times[1] += int(waiting * 1e9)
        self.times[2] += slices
        return _threading.available_threads()


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two numba threads")
def test_available_threads_serial_while_the_cores_are_taken(monkeypatch):
    previous = numba.get_num_threads()
    numba.set_num_threads(2)
    try:
        helpers = _Helpers(monkeypatch)
        assert _threading.available_threads() == 2  # the first look: a baseline
        # helpers that waited for a core under 10% of their runnable time: parallel
        assert helpers.step(0.06, 0.009, 0.0009) == 2
        # 20%, but in wake-ups of an idle core (the allowance per time slice): parallel
        assert helpers.step(0.06, 0.008, 0.002, slices=50) == 2
        # 20% in one slice: serial for _HOLD_MIN_SECONDS, and no look before _PROBE_SECONDS
        assert helpers.step(0.06, 0.008, 0.002) == 1
        assert _threading._state.hold == _threading._HOLD_MIN_SECONDS
        assert helpers.step(0.01, 0.0, 0.0) == 1
        # helpers that hardly ran (serial calls): nothing learnt, the hold runs out
        assert helpers.step(0.06, 0.0002, 0.0002) == 1
        assert helpers.step(0.2, 0.0, 0.0) == 2  # a retry
        # the retry finds the cores taken: the hold doubles, up to _HOLD_MAX_SECONDS
        assert helpers.step(0.06, 0.005, 0.005) == 1
        assert _threading._state.hold == 2 * _threading._HOLD_MIN_SECONDS
        for _ in range(8):
            helpers.step(_threading._state.hold + 0.01, 0.0, 0.0)
            helpers.step(0.06, 0.005, 0.005)
        assert _threading._state.hold == _threading._HOLD_MAX_SECONDS
        # a look at helpers that ran and hardly waited: parallel again, the hold starts over
        helpers.step(_threading._HOLD_MAX_SECONDS + 0.01, 0.0, 0.0)
        assert helpers.step(0.06, 0.01, 0.0) == 2 and _threading._state.hold == 0.0
        # parallel_threads: numba's count for the calls inside (this thread only), restored
        helpers.step(0.06, 0.005, 0.005)
        with _threading.parallel_threads() as inside:
            assert inside == 1 and numba.get_num_threads() == 1
        assert numba.get_num_threads() == 2
        # suspended (skorg warmup): all threads, whatever the cores
        with _threading.watch_suspended():
            assert _threading.available_threads() == 2
        assert _threading.available_threads() == 1
        # one thread asked for: one thread, whatever the cores
        numba.set_num_threads(1)
        assert _threading.available_threads() == 1
    finally:
        numba.set_num_threads(previous)


def test_helper_times_leave_the_caller_out():
    import threading

    caller = str(threading.get_native_id())
    running, waiting, slices = _threading._helper_times(caller)
    alone = _threading._helper_times("none")  # every thread, the caller included
    assert min(running, waiting, slices) >= 0 and alone[0] >= running


def test_serial_when_busy_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("SKORG_SERIAL_WHEN_BUSY", "0")
    assert not _threading._Contention().enabled
    monkeypatch.setenv("SKORG_SERIAL_WHEN_BUSY", "1")
    assert _threading._Contention().enabled == os.path.isdir("/proc/self/task")
