"""The one-axis Haar against the copy, size by size (``bench_haar.py --copy-floor``).

Any transform that reads an array and writes another moves at least the bytes of a copy, so
the copy is its floor at every size: ``np.copy`` (read X, write a new array, whose pages the
system maps and clears) for ``haar_transform(X, tree, axis=...)``, and ``np.copyto`` into a
reused array for ``haar_transform(..., out=O)``. The target (issue 35): at every size from
1e4 to 1e8 elements, the Haar's time per element within 1.5x of its copy's, and no step
between neighbouring sizes above twice the copy's own step.

Sizes lie on a log grid, four per decade (``--per-decade K``), from 1e4 to 1e8 elements
(``--max-size N``; ``--quick`` stops at 1e6). The tree is the perfect binary tree on 1024
points, along rows (an m x 1024 matrix, axis 1) and along columns (a 1024 x m matrix,
axis 0), in float64 and float32. Each cell is the best of interleaved repetitions of the Haar
and its copy (one right after the other, so that both see the same machine), over two
passes through the sizes (a slow spell of a shared machine lasts seconds); a repetition of a
small size loops enough calls to last about 0.2 ms.

Columns of a table: time per element of the copy and of the Haar (ns), their ratio (target
<= 1.5), and the step from the size before: the time per element at this size over that of
the size before, for the Haar and for the copy. A step is within target when the Haar's is at
most twice ``max(1, copy's step)``: the copy's own jumps (out of a cache level) are allowed
twice over, and a drop counts as no step. ``ok`` says whether both hold. A summary line per
table gives the largest ratio and the largest step excess.
"""

from __future__ import annotations

import time

import numba
import numpy as np

from skorg.transforms import haar_transform
from skorg.trees import dyadic_tree

__all__ = ["copy_floor_main"]

N_POINTS = 1024
RATIO_TARGET = 1.5
STEP_FACTOR = 2.0
# each timed repetition lasts at least this long (several calls of a small size)
_MIN_REP_SECONDS = 2e-4
# seconds of repetitions per cell and pass, and passes over the sizes
_CELL_SECONDS = 0.25
_PASSES = 2


def _sizes(per_decade, max_size):
    sizes = []
    k = 0
    while True:
        size = 10 ** (4 + k / per_decade)
        if size > max_size * (1 + 1e-9):
            break
        sizes.append(max(1, round(size / N_POINTS)))  # vectors of 1024 points
        k += 1
    return sorted(set(sizes))


def _interleaved_best(first, second):
    """Best seconds per call of two calls, timed in alternation."""
    first()
    second()
    start = time.perf_counter()
    first()
    one = max(time.perf_counter() - start, 1e-7)
    inner = max(1, int(_MIN_REP_SECONDS / one))
    reps = int(min(60, max(3, _CELL_SECONDS / (2 * one * inner))))
    best = [np.inf, np.inf]
    for _ in range(reps):
        for i, call in enumerate((first, second)):
            begin = time.perf_counter()
            for _ in range(inner):
                call()
            best[i] = min(best[i], (time.perf_counter() - begin) / inner)
    return best


def _cases(dtype, m, rng):
    """(label, (X, haar into a new array, np.copy, haar into out=, np.copyto)) per axis, one
    axis at a time (at 1e8 float64 values, X, out, a result and a copy take 3.2 GB)."""
    tree = dyadic_tree(N_POINTS)
    for label, shape, axis in (("rows", (m, N_POINTS), 1), ("columns", (N_POINTS, m), 0)):
        X = rng.standard_normal(shape).astype(dtype)
        O = np.empty_like(X)
        O.fill(0.0)  # mapped before the first call

        def new(X=X, axis=axis):
            return haar_transform(X, tree, axis=axis)

        def into(X=X, O=O, axis=axis):
            return haar_transform(X, tree, axis=axis, out=O)

        np.testing.assert_array_equal(new(), into())
        yield label, (X, new, X.copy, into, lambda X=X, O=O: np.copyto(O, X))
        del X, O, new, into


def _measure(dtype, sizes):
    """ns per element: {(axis label, mode): {"haar": [...], "copy": [...]}}."""
    rng = np.random.default_rng(0)
    table = {
        (label, mode): {"haar": [np.inf] * len(sizes), "copy": [np.inf] * len(sizes)}
        for label in ("rows", "columns")
        for mode in ("new", "out")
    }
    for _ in range(_PASSES):
        for i, m in enumerate(sizes):
            for label, (X, new, copy, into, copyto) in _cases(dtype, m, rng):
                for mode, (haar, floor) in (("new", (new, copy)), ("out", (into, copyto))):
                    t_haar, t_copy = _interleaved_best(haar, floor)
                    cell = table[label, mode]
                    cell["haar"][i] = min(cell["haar"][i], t_haar / X.size * 1e9)
                    cell["copy"][i] = min(cell["copy"][i], t_copy / X.size * 1e9)
    return table


def _print_table(title, sizes, cell):
    haar, copy = cell["haar"], cell["copy"]
    print(f"\n### {title}")
    print(f"{'elements':>11} {'copy ns/el':>11} {'Haar ns/el':>11} {'Haar/copy':>10} "
          f"{'Haar step':>10} {'copy step':>10} {'ok':>4}")  # fmt: skip
    worst_ratio = 0.0
    worst_step = 0.0
    failures = 0
    for i, m in enumerate(sizes):
        ratio = haar[i] / copy[i]
        worst_ratio = max(worst_ratio, ratio)
        ok = ratio <= RATIO_TARGET
        steps = f"{'-':>10} {'-':>10}"
        if i:
            h_step = haar[i] / haar[i - 1]
            c_step = copy[i] / copy[i - 1]
            excess = h_step / (STEP_FACTOR * max(1.0, c_step))
            worst_step = max(worst_step, excess)
            ok = ok and excess <= 1.0
            steps = f"{h_step:>10.2f} {c_step:>10.2f}"
        failures += not ok
        print(f"{m * N_POINTS:>11} {copy[i]:>11.3f} {haar[i]:>11.3f} {ratio:>10.2f} {steps} "
              f"{'yes' if ok else 'no':>4}")  # fmt: skip
    print(f"  largest Haar/copy {worst_ratio:.2f} (target {RATIO_TARGET}); largest step over "
          f"{STEP_FACTOR:g} x max(1, copy's step): {worst_step:.2f} (target 1); "
          f"{len(sizes) - failures}/{len(sizes)} sizes ok")  # fmt: skip
    return failures


def copy_floor_main(argv):
    per_decade = int(argv[argv.index("--per-decade") + 1]) if "--per-decade" in argv else 4
    max_size = 1e6 if "--quick" in argv else 1e8
    if "--max-size" in argv:
        max_size = float(argv[argv.index("--max-size") + 1])
    sizes = _sizes(per_decade, max_size)
    numba.set_num_threads(numba.get_num_threads())  # launch the threads: the layer is fixed
    print(f"# one-axis Haar on the perfect binary tree of {N_POINTS} points against the copy; "
          f"numba {numba.get_num_threads()} threads on the layer {numba.threading_layer()}; "
          f"best of interleaved repetitions over {_PASSES} passes")  # fmt: skip
    failures = 0
    for dtype in (np.float64, np.float32):
        table = _measure(dtype, sizes)
        for label in ("rows", "columns"):
            for mode, floor in (("new", "np.copy"), ("out", "np.copyto")):
                layout = "m x 1024, axis 1" if label == "rows" else "1024 x m, axis 0"
                into = "new arrays" if mode == "new" else "into out="
                title = f"{np.dtype(dtype).name} {label} ({layout}), {into} against {floor}"
                failures += _print_table(title, sizes, table[label, mode])
    print(f"\n# {failures} cells out of target in all")
