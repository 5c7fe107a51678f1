"""Cold start: the first fit in a fresh install, with an empty numba cache, in a fresh process.

Run with ``python benchmarks/bench_cold_start.py [--repeat N] [--layer tbb|omp|workqueue]``.
Every measurement is a new Python process with its own empty ``NUMBA_CACHE_DIR`` (a fresh
install as far as numba is concerned):

- ``cold``: import skorg, then the first ``QuestionnaireOrganizer().fit`` of a 128 x 96
  matrix (it compiles and caches the kernels it needs), then a second fit in the same process;
- ``cached``: a second process on that cache: the first fit loads the compiled kernels;
- ``warmup``: ``skorg warmup`` in a new process on another empty cache, then a first fit in a
  process after it.

Compilation is CPU-bound and this machine is shared, so each figure is the best of
``--repeat`` runs (default 2), and the warm second fit of the same process is the baseline.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FIT = r"""
import json, time
t0 = time.perf_counter()
import numpy as np
import skorg
from skorg import QuestionnaireOrganizer
from skorg.datasets import make_shuffled_matrix
t1 = time.perf_counter()
X = make_shuffled_matrix(128, 96, kind="band", random_state=0).X
t2 = time.perf_counter()
QuestionnaireOrganizer().fit(X)
t3 = time.perf_counter()
QuestionnaireOrganizer().fit(X)
t4 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "first_fit": t3 - t2, "second_fit": t4 - t3}))
"""


def _run(code_or_args, cache):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    if isinstance(code_or_args, str):
        cmd = [sys.executable, "-c", code_or_args]
    else:
        cmd = [sys.executable, "-m", "skorg", *code_or_args]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return out


def _fit(cache):
    return json.loads(_run(FIT, cache).stdout.strip().splitlines()[-1])


def main():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _load import select_layer

    argv = select_layer(sys.argv[1:])  # --layer NAME: the fits on that threading layer
    repeat = int(argv[argv.index("--repeat") + 1]) if "--repeat" in argv else 2
    rows = {"cold": [], "cached": [], "warmup": [], "after_warmup": []}
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as cold, tempfile.TemporaryDirectory() as warm:
            rows["cold"].append(_fit(cold))
            rows["cached"].append(_fit(cold))
            start = time.perf_counter()
            _run(["warmup", "--quiet"], warm)
            rows["warmup"].append({"warmup": time.perf_counter() - start})
            rows["after_warmup"].append(_fit(warm))

    def best(name, key):
        return min(r[key] for r in rows[name])

    warm_fit = min(best("cold", "second_fit"), best("cached", "second_fit"))
    layer = os.environ.get("NUMBA_THREADING_LAYER", "skorg's choice")
    print(
        f"# best of {repeat} fresh processes; 128 x 96 matrix, QuestionnaireOrganizer(); "
        f"threading layer: {layer}"
    )
    print(f"{'case':<34} {'seconds':>8} {'x warm fit':>10}")
    for label, name, key in (
        ("import skorg (cold cache)", "cold", "import"),
        ("first fit, empty numba cache", "cold", "first_fit"),
        ("first fit, cache from that run", "cached", "first_fit"),
        ("skorg warmup (empty cache)", "warmup", "warmup"),
        ("first fit after skorg warmup", "after_warmup", "first_fit"),
        ("warm fit (second in a process)", "cold", "second_fit"),
    ):
        value = best(name, key)
        print(f"{label:<34} {value:8.2f} {value / warm_fit:10.1f}")


if __name__ == "__main__":
    main()
