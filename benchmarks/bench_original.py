"""Benchmark: the original implementation and skorg side by side, in one run.

The original is the Python pyquest bundled in the public repository
``obfasina/OrganizedAttention`` (folder ``Julia_allcodes_plus_dependencies/pyquest-master``).
Nothing of it is in this repository: point ``--original PATH`` or the environment variable
``SKORG_ORIGINAL`` at a checkout of that folder. Without it the benchmark says so in one line
and stops.

Each side runs in its own subprocess on the same input (``bench_inputs.bench_input`` of
``shared/bench_inputs.py``, ``SKORG_SHARED``) and the same algorithm: the 2-D Hoelder preset
(cosine initial affinity, ordered flexible trees with tree constant 1, alpha 1 and beta 0, 10
iterations, the published Jacobi-like schedule: the original's ``questionnaire3.pyquest``,
skorg's ``preset="paper_2d_holder", schedule="jacobi"``) and the 3-D heads preset (flexible
trees, alpha 0 and beta 1, 3 iterations, the published 3-D schedule: ``questionnaire.pyquest3d``
and ``preset="paper_3d_heads", schedule="reference_3d"``). The original runs from a
temporary folder outside this repository, with ``np.float`` and ``np.int`` set to ``float`` and
``int`` in its process (today's NumPy removed them; its files are not touched), once, after its
imports; skorg warms its compiled kernels on small inputs first, then runs ``SKORG_RUNS`` (3)
times and the median counts. The original takes about 10 s per 512 x 512 or 256 x 256 x 128 case.

    SKORG_ORIGINAL=/path/to/pyquest-master python benchmarks/bench_original.py            # all
    python benchmarks/bench_original.py --original /path/to/pyquest-master 2d_holder_256
    python benchmarks/bench_original.py --layer omp     # skorg on numba's OpenMP layer
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SKORG_SHARED", ROOT.parent / "shared"))
SKORG_RUNS = 3

# Run in the original's process: the NumPy aliases it needs, then the questionnaire on the
# benchmark input; prints the seconds of the call (the imports and the input not counted).
ORIGINAL_RUNNER = r"""
import json, sys, time
original, shared, name = sys.argv[1:4]
import numpy as np
np.float, np.int = float, int  # removed from NumPy 1.24 on; the original still reads them
sys.path.insert(0, shared)
import bench_inputs
case = next(c for c in bench_inputs.BENCH_CASES if c["case"] == name)
X = bench_inputs.bench_input(case)
sys.path.insert(0, original)
if case["kind"] == "holder2d":
    import questionnaire3 as q
    params = q.PyQuestParams(
        q.INIT_AFF_COS_SIM, q.TREE_TYPE_FLEXIBLE, q.DUAL_EMD, q.DUAL_EMD, threshold=0.0,
        tree_constant=case["tree_constant"], n_iters=case["n_iters"],
        row_alpha=case["alpha"], row_beta=case["beta"],
        col_alpha=case["alpha"], col_beta=case["beta"])
    run = lambda: q.pyquest(X, params)
else:
    import questionnaire as q
    flex = q.TREE_TYPE_FLEXIBLE
    weights = {f"{a}_{w}": case[w] for a in ("row", "col", "chan") for w in ("alpha", "beta")}
    params = q.PyQuest3DParams(
        q.INIT_AFF_COS_SIM, [flex, flex, flex], q.DUAL_EMD, q.DUAL_EMD, q.DUAL_EMD,
        n_iters=case["n_iters"], row_tree_constant=case["tree_constant"], **weights)
    run = lambda: q.pyquest3d(X, params)
start = time.perf_counter()
run()
print(json.dumps({"seconds": time.perf_counter() - start}))
"""

# skorg on the same input and algorithm (presets with the original's schedules)
SKORG_RUNNER = r"""
import json, sys, time
shared, name, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
import numpy as np
sys.path.insert(0, shared)
import bench_inputs
from skorg.organize import questionnaire
case = next(c for c in bench_inputs.BENCH_CASES if c["case"] == name)
X = bench_inputs.bench_input(case)
if case["kind"] == "holder2d":
    options = dict(preset="paper_2d_holder", schedule="jacobi")
else:
    options = dict(preset="paper_3d_heads", schedule="reference_3d")
# every kernel compiled or loaded from the cache first, the parallel ones too (they start
# above a size threshold): on slices, and for matrices on a random matrix of up to 520 x 520
for size in (24, 160):
    questionnaire(X[(slice(0, size),) * X.ndim], n_iter=1, **options)
if X.ndim == 2:
    warm = np.random.default_rng(0).random(tuple(min(n, 520) for n in X.shape))
    questionnaire(warm, n_iter=1, **options)
seconds = []
for _ in range(runs):
    start = time.perf_counter()
    questionnaire(X, n_iter=case["n_iters"], **options)
    seconds.append(time.perf_counter() - start)
print(json.dumps({"seconds": float(np.median(seconds)), "runs": seconds}))
"""


def _original_path(argv):
    if "--original" in argv:
        i = argv.index("--original")
        return argv[i + 1], argv[:i] + argv[i + 2 :]
    return os.environ.get("SKORG_ORIGINAL"), argv


def _run(code, args, cwd, env=None):
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=cwd, env=env
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr else "failed")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv):
    original, names = _original_path(argv)
    marker = "questionnaire3.py"
    if not original or not (Path(original) / marker).is_file():
        print(
            "skipped: the original implementation is not at hand (set SKORG_ORIGINAL or "
            "--original to a checkout of obfasina/OrganizedAttention's "
            "Julia_allcodes_plus_dependencies/pyquest-master)"
        )
        return
    if not (SHARED / "bench_inputs.py").is_file():
        print(f"skipped: {SHARED / 'bench_inputs.py'} (the benchmark inputs) is not at hand")
        return
    sys.path.insert(0, str(SHARED))
    import bench_inputs

    cases = [c["case"] for c in bench_inputs.BENCH_CASES]
    names = names or cases
    unknown = sorted(set(names) - set(cases))
    if unknown:
        print(f"unknown cases {unknown}; the cases are {cases}")
        return
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    )
    print(f"# original: {Path(original).resolve()}; skorg: median of {SKORG_RUNS} runs, warmed up")
    print(f"{'case':<18}{'original s':>12}{'skorg s':>10}{'speed-up':>10}")
    with tempfile.TemporaryDirectory() as outside:  # neither side runs from the repository
        for name in names:
            theirs = _run(
                ORIGINAL_RUNNER, [str(Path(original).resolve()), str(SHARED), name], outside
            )
            ours = _run(SKORG_RUNNER, [str(SHARED), name, str(SKORG_RUNS)], outside, env)
            ratio = theirs["seconds"] / ours["seconds"]
            print(
                f"{name:<18}{theirs['seconds']:>12.2f}{ours['seconds']:>10.3f}{ratio:>9.1f}x",
                flush=True,
            )


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _load import select_layer

    main(select_layer(sys.argv[1:]))  # --layer NAME: skorg's side on that threading layer
