"""Benchmark: the questionnaire (2-D Hoelder preset, 3-D heads preset) against a plain
NumPy/SciPy implementation of the same algorithm, on the inputs on which the original
implementation was timed (``shared/bench_inputs.py``).

Every case runs in its own subprocess. JIT compilation is warmed on a small input first and
not timed; skorg then runs ``SKORG_RUNS`` (3) times, and the median is reported with the best
in brackets (the original's ratio from the median); peak memory is the rise of the
resident-set high-water mark (VmHWM, reset after the imports and the warm-up) above the
resident set at the start of the runs.

    python benchmarks/bench_questionnaire.py                # all cases
    python benchmarks/bench_questionnaire.py 2d_512 3d_256  # some
    python benchmarks/bench_questionnaire.py --trees        # float32 vs float64 trees
    python benchmarks/bench_questionnaire.py --quiet-and-loaded  # default threading against
                                                # one thread, quiet and under load (_load.py)

``--trees`` counts, on the reference cases of ``tests/data`` and on the benchmark inputs,
how often ``emd_dtype="float32"`` gives other trees than float64: every (iteration, axis) tree
of the questionnaire's history is compared as an ordered tree (equal partitions and leaf
order) and as nested partitions.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SKORG_SHARED", ROOT.parent / "shared"))

# (name, kind, shape, n_iter, schedule, run the naive baseline too). The 2-D cases use the
# published 2-D (Jacobi-like) schedule and the "_ref" 3-D case the published 3-D schedule, so
# that they run the same algorithm as the original's timings; the other 3-D cases the default.
CASES = [
    ("2d_256", "2d", (256, 256), 10, "jacobi", True),
    ("2d_512", "2d", (512, 512), 10, "jacobi", True),
    ("2d_1024", "2d", (1024, 1024), 10, "jacobi", False),
    ("2d_2048", "2d", (2048, 2048), 3, "jacobi", False),
    ("3d_128x128x72", "3d", (128, 128, 72), 3, "alternating", True),
    ("3d_256x256x128", "3d", (256, 256, 128), 3, "alternating", False),
    ("3d_256x256x128_ref", "3d", (256, 256, 128), 3, "reference_3d", False),
    ("3d_512x512x144", "3d", (512, 512, 144), 3, "alternating", False),
    ("3d_1024x1024x144", "3d", (1024, 1024, 144), 3, "alternating", False),
]
# Timings of the original implementation on this kind of machine (2 cores), from SPEC 5.
ORIGINAL_SECONDS = {"2d_512": 7.3, "3d_256x256x128": 11.6, "3d_256x256x128_ref": 11.6}
# runs of skorg per case after the warm-up (median and best reported); the naive baseline
# runs once
SKORG_RUNS = 3
# float32 tree EMD (emd_dtype="float32") is timed too, except on the largest cases.
FLOAT32_CASES = {"2d_512", "2d_1024", "3d_256x256x128", "3d_256x256x128_ref", "3d_512x512x144"}


def bench_input(kind, shape):
    """The benchmark array: shared/bench_inputs.py when present, else the same generator."""
    if (SHARED / "bench_inputs.py").exists():
        sys.path.insert(0, str(SHARED))
        import bench_inputs

        if kind == "2d":
            return bench_inputs.bench_matrix(shape[0])["X"]
        return bench_inputs.bench_tensor(shape)["X"]
    from skorg.datasets import make_shuffled_matrix, make_shuffled_tensor

    if kind == "2d":
        return make_shuffled_matrix(*shape, noise=0.02, random_state=20250601 + shape[0]).X
    return make_shuffled_tensor(shape, noise=0.02, random_state=20250602).X


def _reset_peak():
    """Reset the peak-RSS mark (VmHWM) to the current RSS, so imports do not count."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _peak_mb():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def run_one(name, impl):
    _, kind, shape, n_iter, schedule, _ = next(c for c in CASES if c[0] == name)
    X = bench_input(kind, shape)
    if impl in ("skorg", "skorg32"):
        from skorg.organize import questionnaire

        preset = "paper_2d_holder" if kind == "2d" else "paper_3d_heads"
        options = dict(
            preset=preset,
            schedule=schedule,
            emd_dtype="float32" if impl == "skorg32" else "float64",
        )
        # warm every kernel, the parallel ones too (they only start above a size threshold,
        # 512 points for the flexible tree's rounds): on slices, and for matrices on a random
        # matrix of up to 520 x 520
        for size in (24, 160):
            warm = X[(slice(0, size),) * X.ndim]
            questionnaire(warm, n_iter=1, **options)
        if kind == "2d":
            warm = np.random.default_rng(0).random(tuple(min(n, 520) for n in shape))
            questionnaire(warm, n_iter=1, **options)
        base_mb = _rss_mb()
        _reset_peak()
        # this machine is shared and its speed drifts by tens of percent within minutes:
        # several runs, their median reported (and the best)
        runs = []
        for _ in range(SKORG_RUNS):
            start = time.perf_counter()
            questionnaire(X, n_iter=n_iter, **options)
            runs.append(time.perf_counter() - start)
        peak = _peak_mb() - base_mb
        print(json.dumps({"seconds": float(np.median(runs)), "best": min(runs), "runs": runs,
                          "peak_mb": peak}))  # fmt: skip
        return
    else:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        import _naive_questionnaire as naive

        base_mb = _rss_mb()
        _reset_peak()
        start = time.perf_counter()
        if kind == "2d":
            naive.questionnaire_2d(X, n_iter, alpha=1.0, beta=0.0)
        else:
            naive.questionnaire_3d(X, n_iter, alpha=0.0, beta=1.0)
    seconds = time.perf_counter() - start
    # peak working memory above what the process held before the run (imports, input)
    print(json.dumps({"seconds": seconds, "peak_mb": _peak_mb() - base_mb}))


TREE_CASES = [
    # (label, source, options): source is a tests/data case or a benchmark CASES name
    ("ref quest2d_holder (jacobi)", "quest2d_holder", dict(preset="paper_2d_holder",
                                                         schedule="jacobi")),
    ("ref quest2d_plain", "quest2d_plain", dict(n_iter=3, emd_alpha=0.0, emd_beta=1.0)),
    ("ref quest3d (reference_3d)", "quest3d", dict(preset="paper_3d_heads",
                                                 schedule="reference_3d")),
    ("ref quest3d (alternating)", "quest3d", dict(preset="paper_3d_heads")),
    ("bench 2d_256", "2d_256", None),
    ("bench 2d_512", "2d_512", None),
    ("bench 3d_128x128x72", "3d_128x128x72", None),
    ("bench 3d_256x256x128", "3d_256x256x128", None),
    ("bench 3d_256x256x128_ref", "3d_256x256x128_ref", None),
    # the default questionnaire (no preset) on the benchmark inputs and bundled datasets
    ("default bench 2d_512", "2d_512", {}),
    ("default bench 3d_128x128x72", "3d_128x128x72", {}),
    ("default bench 3d_256x256x128", "3d_256x256x128", {}),
    ("default digits", "sklearn:digits", {}),
    ("default wine", "sklearn:wine", {}),
    ("default breast cancer", "sklearn:breast_cancer", {}),
]  # fmt: skip


def _tree_case_input(source):
    if source.startswith("sklearn:"):
        import sklearn.datasets

        X = getattr(sklearn.datasets, f"load_{source[8:]}")().data
        return (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
    case = next((c for c in CASES if c[0] == source), None)
    if case is not None:
        return bench_input(case[1], case[2])
    with np.load(ROOT / "tests" / "data" / f"{source}.npz") as z:
        return z["X"]


def compare_trees():
    """float32 against float64 tree EMD: how many history trees differ."""
    sys.path.insert(0, str(ROOT))
    from skorg.organize import questionnaire

    print(f"{'case':<30}{'trees':>6}{'ordered equal':>15}{'partitions equal':>18}")
    total = [0, 0, 0]
    for label, source, options in TREE_CASES:
        X = _tree_case_input(source)
        if options is None:
            _, kind, _, n_iter, schedule, _ = next(c for c in CASES if c[0] == source)
            preset = "paper_2d_holder" if kind == "2d" else "paper_3d_heads"
            options = dict(preset=preset, schedule=schedule, n_iter=n_iter)
        runs = {}
        for dtype in ("float64", "float32"):
            res = questionnaire(X, emd_dtype=dtype, **options)
            runs[dtype] = {(h["iteration"], h["axis"]): h["tree"] for h in res.history}
        keys = sorted(runs["float64"])
        ordered = sum(runs["float32"][k] == runs["float64"][k] for k in keys)
        nested = sum(runs["float32"][k].same_partitions(runs["float64"][k]) for k in keys)
        total = [total[0] + len(keys), total[1] + ordered, total[2] + nested]
        print(f"{label:<30}{len(keys):>6}{ordered:>15}{nested:>18}", flush=True)
    print(f"{'all':<30}{total[0]:>6}{total[1]:>15}{total[2]:>18}")


def measure(name, impl, env=None):
    out = subprocess.run(
        [sys.executable, __file__, "--one", name, impl],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env=env,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


# the fits of the load mode (the 2-D and 3-D cases)
LOAD_CASES = ["2d_512", "3d_128x128x72", "3d_256x256x128"]


def load_main(names, modes):
    """skorg's median time with the default threading and on one thread, quiet and/or
    loaded (each a subprocess: warm-up, then SKORG_RUNS fits)."""
    from _load import one_thread_env, threads_table

    def both(name):
        ours = measure(name, "skorg")["seconds"]
        return {"skorg": ours, "one thread": measure(name, "skorg", one_thread_env())["seconds"]}

    threads_table(names or LOAD_CASES, both, modes)


def main(names):
    print(f"# skorg: median (best) of {SKORG_RUNS} runs after a warm-up; the naive baseline: "
          "one run; 'vs original' from the medians")  # fmt: skip
    print(
        f"{'case':<20}{'n_iter':>7}{'skorg s':>14}{'peak MB':>9}{'f32 s':>14}{'naive s':>9}"
        f"{'naive MB':>10}{'speed-up':>10}{'vs original':>13}{'f32 vs orig':>13}"
    )
    for name, _, _, n_iter, _, with_naive in CASES:
        if names and name not in names:
            continue
        ours = measure(name, "skorg")
        timed = f"{ours['seconds']:.2f} ({ours['best']:.2f})"
        line = f"{name:<20}{n_iter:>7}{timed:>14}{ours['peak_mb']:>9.0f}"
        f32 = measure(name, "skorg32") if name in FLOAT32_CASES else None
        line += f"{f32['seconds']:.2f} ({f32['best']:.2f})".rjust(14) if f32 else f"{'-':>14}"
        if with_naive:
            base = measure(name, "naive")
            ratio = base["seconds"] / ours["seconds"]
            line += f"{base['seconds']:>9.2f}{base['peak_mb']:>10.0f}{ratio:>9.1f}x"
        else:
            line += f"{'-':>9}{'-':>10}{'-':>10}"
        if name in ORIGINAL_SECONDS:
            line += f"{ORIGINAL_SECONDS[name] / ours['seconds']:>12.1f}x"
            if f32:
                line += f"{ORIGINAL_SECONDS[name] / f32['seconds']:>12.1f}x"
        print(line, flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--trees":
        compare_trees()
    elif len(sys.argv) > 1 and sys.argv[1] == "--one":
        run_one(sys.argv[2], sys.argv[3])
    else:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from _load import load_modes

        modes, args = load_modes(sys.argv[1:])
        if modes:
            load_main(args, modes)
        else:
            main(args)
