"""Benchmark: paraproduct decomposition of a logit matrix over all scales, against a plain
NumPy implementation written here (every P_{j,j'} f rebuilt by reshape-mean for each use).

Input: the 2-D benchmark matrix of ``shared/bench_inputs.py`` (times 4, as logits), or an
equivalent smooth shuffled matrix when shared/ is absent. Every run is its own subprocess so
the peak resident memory is its own. The naive result is checked against skorg's.

    python benchmarks/bench_paraproduct.py            # all cases
    python benchmarks/bench_paraproduct.py 512_softmax
    python benchmarks/bench_paraproduct.py --quiet-and-loaded   # skorg against one thread,
                                                               # quiet and under load (_load.py)
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

# (name, n, nonlinearity)
CASES = [
    ("256_softmax", 256, "softmax"),
    ("512_softmax", 512, "softmax"),
    ("512_tanh", 512, "tanh"),
    ("1024_softmax", 1024, "softmax"),
]
NAIVE_MAX_N = 512


def bench_input(n):
    if (SHARED / "bench_inputs.py").exists():
        sys.path.insert(0, str(SHARED))
        import bench_inputs

        return 4.0 * bench_inputs.bench_matrix(n)["X"]
    rng = np.random.default_rng(20250601 + n)
    x, y = np.sort(rng.uniform(size=n)), np.sort(rng.uniform(size=n))
    w = 0.12 + 0.08 * x[:, None]
    F = (
        np.exp(-((x[:, None] - y[None, :]) ** 2) / (2 * w**2))
        + 0.25 * (1 + np.sin(2 * np.pi * x[:, None])) * y[None, :]
    )
    F = F[np.ix_(rng.permutation(n), rng.permutation(n))] + 0.02 * rng.standard_normal((n, n))
    return 4.0 * F


# ----------------------------------------------------------------------------- naive baseline
def _naive_average(f, j, jp):
    ny, nx = f.shape
    rows, cols = 1 << jp, 1 << j
    means = f.reshape(rows, ny // rows, cols, nx // cols).mean(axis=(1, 3))
    return np.repeat(np.repeat(means, ny // rows, axis=0), nx // cols, axis=1)


def _naive_softmax(x):
    z = np.exp(x - x.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def _naive_terms(name, u, a, b, c):
    if name == "tanh":
        t = np.tanh(u)
        return (1 - t**2) * c, -2 * t * (1 - t**2) * a * b
    s = _naive_softmax(u)
    first = s * (c - (s * c).sum(axis=1, keepdims=True))
    da = s * (a - (s * a).sum(axis=1, keepdims=True))
    second = da * (b - (s * b).sum(axis=1, keepdims=True)) - s * (da * b).sum(axis=1, keepdims=True)
    return first, second


def naive_decomposition(f, name):
    A = np.tanh if name == "tanh" else _naive_softmax
    if name != "tanh":
        f = f - f.max(axis=1, keepdims=True)
    J = int(np.log2(f.shape[0]))
    total = A(_naive_average(f, 0, 0))
    for j in range(J):
        total = total + A(_naive_average(f, j + 1, 0)) - A(_naive_average(f, j, 0))
        total = total + A(_naive_average(f, 0, j + 1)) - A(_naive_average(f, 0, j))
    first = np.zeros_like(f)
    second = np.zeros_like(f)
    for j in range(J):
        for jp in range(J):
            u = _naive_average(f, j, jp)
            p10, p01 = _naive_average(f, j + 1, jp), _naive_average(f, j, jp + 1)
            p11 = _naive_average(f, j + 1, jp + 1)
            total = total + A(p11) - A(p01) - A(p10) + A(u)
            t1, t2 = _naive_terms(name, u, p10 - u, p01 - u, p11 - p01 - p10 + u)
            first += t1
            second += t2
    return total, first, second


# ----------------------------------------------------------------------------- runner
def run_one(name, impl):
    _, n, nonlinearity = next(c for c in CASES if c[0] == name)
    f = bench_input(n)
    # both processes import the same modules, so peak RSS compares the algorithms
    sys.path.insert(0, str(ROOT))
    from skorg.transforms import paraproduct_decomposition

    if impl == "skorg":
        paraproduct_decomposition(f[:16, :16], nonlinearity)  # warm imports and caches
        start = time.perf_counter()
        res = paraproduct_decomposition(f, nonlinearity, keep_terms=False)
        seconds = time.perf_counter() - start
        out = {"first": res.first_order, "second": res.second_order, "total": res.reconstruct()}
    else:
        start = time.perf_counter()
        total, first, second = naive_decomposition(f, nonlinearity)
        seconds = time.perf_counter() - start
        out = {"first": first, "second": second, "total": total}
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    np.savez(ROOT / f".bench_paraproduct_{name}_{impl}.npz", **out)
    print(json.dumps({"seconds": seconds, "peak_mb": peak_mb, "parallel": _numba_launched()}))


def _numba_launched():
    """Whether any numba parallel region ran in this process (its threads are launched)."""
    numba = sys.modules.get("numba")
    if numba is None:
        return False
    try:
        numba.threading_layer()
    except ValueError:  # "not initialized": no parallel call
        return False
    return True


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


# processes per side and case in the load mode, the two sides in alternation
LOAD_RUNS = 5


def load_main(names, modes):
    """skorg's time with the default threading and on one thread, quiet and/or loaded.

    The decomposition is NumPy throughout (no numba parallel region, no BLAS call: each
    process reports whether numba's threads were launched), so the two sides run the same
    single-threaded code, and their ratio measures the machine: the medians of ``LOAD_RUNS``
    processes per side, the sides in alternation, so that both see the same load (one
    process per side, one after the other, gave 1.10-1.19 by chance).
    """
    from _load import one_thread_env, threads_table

    launched = []

    def timed(name, env=None):
        result = measure(name, "skorg", env)
        (ROOT / f".bench_paraproduct_{name}_skorg.npz").unlink()
        launched.append(result.get("parallel", False))
        return result["seconds"]

    def both(name):
        times = {"skorg": [], "one thread": []}
        for i in range(LOAD_RUNS):
            sides = [("skorg", None), ("one thread", one_thread_env())]
            for key, env in sides if i % 2 == 0 else sides[::-1]:
                times[key].append(timed(name, env))
        return {key: float(np.median(t)) for key, t in times.items()}

    threads_table(names or [c[0] for c in CASES], both, modes)
    print(f"# medians of {LOAD_RUNS} processes per side, alternated; numba parallel regions "
          f"run: {'yes' if any(launched) else 'none'}")  # fmt: skip


def _agree(name):
    paths = [ROOT / f".bench_paraproduct_{name}_{impl}.npz" for impl in ("skorg", "naive")]
    a, b = (np.load(p) for p in paths)
    ok = all(np.allclose(a[k], b[k], rtol=1e-9, atol=1e-12) for k in ("first", "second", "total"))
    for p in paths:
        p.unlink()
    return ok


def main(names):
    print(
        f"{'case':<14}{'skorg s':>9}{'peak MB':>9}{'naive s':>9}{'naive MB':>10}"
        f"{'time ratio':>12}{'mem ratio':>11}{'agree':>7}"
    )
    for name, n, _ in CASES:
        if names and name not in names:
            continue
        ours = measure(name, "skorg")
        line = f"{name:<14}{ours['seconds']:>9.2f}{ours['peak_mb']:>9.0f}"
        if n <= NAIVE_MAX_N:
            base = measure(name, "naive")
            line += (
                f"{base['seconds']:>9.2f}{base['peak_mb']:>10.0f}"
                f"{base['seconds'] / ours['seconds']:>11.1f}x"
                f"{ours['peak_mb'] / base['peak_mb']:>10.2f}x{_agree(name)!s:>7}"
            )
        else:
            (ROOT / f".bench_paraproduct_{name}_skorg.npz").unlink()
            line += f"{'-':>9}{'-':>10}{'-':>12}{'-':>11}{'-':>7}"
        print(line, flush=True)
    print("time ratio = naive seconds / skorg seconds; mem ratio = skorg peak / naive peak (RSS)")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _load import load_modes

    modes, args = load_modes(sys.argv[1:])
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        run_one(sys.argv[2], sys.argv[3])
    elif modes:
        load_main(args, modes)
    else:
        main(args)
