"""Benchmark of the tree Haar transforms against PyWavelets and a dense-basis einsum baseline.

Run with ``python benchmarks/bench_haar.py`` (``--quick`` for fewer shapes, ``--large`` to add
the 1.3e8-element sweep point, about 3 GB). Needs the ``bench`` extra (PyWavelets).

1. One-axis Haar on a dyadic tree against ``pywt.wavedec(x, "haar", axis=...)`` (the same
   coefficients up to the sign of each detail, checked here): the issue's shapes and more, along
   rows and across rows, C and Fortran order, float32, the inverse against ``pywt.waverec``,
   and a shuffled leaf order (PyWavelets has no permutation, so it does less work there).
2. Time per element from 1.6e4 to 6.7e7 elements (rows of 1024, long rows, rows of 16,
   axis 0; each cell the best of three passes over the sizes): the largest over the
   smallest, beside the same for ``np.copy`` (reading X and writing a fresh array, the
   memory floor of any transform that returns a new array) and each transform's time in
   copies at the largest size; then the same transforms writing into a reused array
   (``out=``), whose pages the operating system need not clear, beside ``np.copyto``.
3. General trees (wide folders and chains; linkage trees, whose level representation pads
   every branch with one-child chains) against the dyadic tree, per element and per level,
   on 4096 points and on short rows of 256.
4. The bi-Haar against PyWavelets applied along each axis in turn, and the 1-D, bi- and
   tri-Haar against the dense-basis einsum (BLAS) baseline.

``--copy-floor`` (benchmarks/_copy_floor.py) instead prints the one-axis Haar's time per element
against the copy's, size by size from 1e4 to 1e8 elements, rows and columns, float64 and
float32, into new arrays and into ``out=``. ``--layer tbb|omp|workqueue`` runs any mode on that
threading layer.

``--load`` / ``--quiet-and-loaded`` (benchmarks/_load.py) instead time the one-axis Haar along
rows and columns from 128 x 1024 to 4096 x 4096 and the bi-Haar with the default threading, on
one thread and in PyWavelets, under busy loops on all cores but one (and quiet): medians of
interleaved calls, since a stall under load is intermittent and a best-of would hide it.

Every time is the best of ``REPEAT`` runs after a warm-up (JIT compiled first), the two sides
of a ratio measured one right after the other: this machine is shared, so only the ratios
are comparable between runs. Peak memory is the peak traced by ``tracemalloc`` of NumPy
allocations in the call (the kernels allocate through NumPy).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
import tracemalloc
from pathlib import Path

import numba
import numpy as np
import pywt

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _copy_floor import copy_floor_main  # noqa: E402
from _load import load_modes, threads_table  # noqa: E402

from skorg.transforms import (  # noqa: E402
    haar_basis,
    haar_transform,
    inverse_haar_transform,
    inverse_multi_haar_transform,
    multi_haar_transform,
)
from skorg.trees import PartitionTree, dyadic_tree, linkage_tree  # noqa: E402


def load_inputs():
    """bench_inputs from SKORG_SHARED (default ../shared), or an equivalent generator."""
    shared = Path(os.environ.get("SKORG_SHARED", ROOT.parent / "shared"))
    path = shared / "bench_inputs.py"
    if path.exists():
        spec = importlib.util.spec_from_file_location("bench_inputs", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.bench_matrix(512), module.bench_tensor((256, 256, 128))
    rng = np.random.default_rng(20250601)
    matrix = {"X": rng.random((512, 512))}
    for ax, n in enumerate((512, 512)):
        matrix[f"{'row' if ax == 0 else 'col'}_true_order"] = rng.permutation(n)
    tensor = {"X": rng.random((256, 256, 128))}
    for ax, n in enumerate((256, 256, 128)):
        tensor[f"axis{ax}_true_order"] = rng.permutation(n)
    return matrix, tensor


REPEAT = 7


def best_time(func, repeat=REPEAT):
    func()
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
    return best


def measure(func, repeat=3):
    best = best_time(func, repeat)
    tracemalloc.start()
    func()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return best, peak


def _check_against_pywt(X, tree, axis):
    C = haar_transform(X, tree, axis=axis)
    Xp = np.take(X, tree.leaf_order, axis=axis)
    ref = np.concatenate(pywt.wavedec(Xp, "haar", axis=axis), axis=axis)
    np.testing.assert_allclose(np.abs(C), np.abs(ref), atol=1e-5 * np.abs(ref).max())


def pywt_section(quick):
    rng = np.random.default_rng(0)
    cases = [
        # (label, shape, axis, dtype, layout, shuffled, inverse)
        ("rows", (64, 65536), 1, np.float64, "C", False, False),
        ("rows", (4096, 1024), 1, np.float64, "C", False, False),
        ("rows", (1024, 4096), 1, np.float64, "C", False, False),
        ("rows", (8192, 1024), 1, np.float64, "C", False, False),
        ("rows", (2048, 1024), 1, np.float64, "C", False, False),
        ("short rows", (65536, 16), 1, np.float64, "C", False, False),
        ("short rows", (262144, 64), 1, np.float64, "C", False, False),
        ("1-D", (1 << 22,), 0, np.float64, "C", False, False),
        ("small", (128, 128), 1, np.float64, "C", False, False),
        ("axis 0", (4096, 1024), 0, np.float64, "C", False, False),
        ("axis 0", (65536, 64), 0, np.float64, "C", False, False),
        ("axis 0", (16, 65536), 0, np.float64, "C", False, False),
        ("F order rows", (4096, 1024), 1, np.float64, "F", False, False),
        ("F order axis 0", (4096, 1024), 0, np.float64, "F", False, False),
        ("float32 rows", (4096, 1024), 1, np.float32, "C", False, False),
        ("float32 axis 0", (4096, 1024), 0, np.float32, "C", False, False),
        ("inverse rows", (4096, 1024), 1, np.float64, "C", False, True),
        ("inverse axis 0", (4096, 1024), 0, np.float64, "C", False, True),
        ("shuffled rows", (4096, 1024), 1, np.float64, "C", True, False),
        ("shuffled rows", (64, 65536), 1, np.float64, "C", True, False),
        ("shuffled axis 0", (4096, 1024), 0, np.float64, "C", True, False),
        ("shuffled 1-D", (1 << 22,), 0, np.float64, "C", True, False),
        # a middle axis with a short trailing run (B values per row)
        ("middle axis", (128, 128, 8), 1, np.float64, "C", False, False),
        ("middle axis", (128, 128, 8), 1, np.float32, "C", False, True),
        ("middle axis", (512, 64, 4), 1, np.float64, "C", False, False),
        ("middle axis", (64, 1024, 12), 1, np.float64, "C", False, True),
        ("middle axis", (2048, 64, 2), 1, np.float64, "C", False, False),
        ("middle axis", (32, 4, 2048), 1, np.float64, "C", False, True),
        # single short vectors: the cost of one call
        ("tiny", (2,), 0, np.float64, "C", False, False),
        ("tiny inverse", (2,), 0, np.float64, "C", False, True),
        ("tiny", (4,), 0, np.float64, "C", False, False),
        ("tiny inverse", (4,), 0, np.float64, "C", False, True),
        ("tiny inverse", (8,), 0, np.float64, "C", False, True),
        ("tiny", (64,), 0, np.float64, "C", False, False),
        ("tiny inverse", (64,), 0, np.float64, "C", False, True),
    ]
    if quick:
        cases = cases[:5] + cases[9:10]
    print(f"{'case':<16} {'shape':>14} {'axis':>4} {'skorg ms':>9} {'pywt ms':>9} "
          f"{'pywt/skorg':>10} {'pywt+take/skorg':>16}")  # fmt: skip
    for label, shape, axis, dtype, layout, shuffled, inverse in cases:
        X = rng.normal(size=shape).astype(dtype)
        if layout == "F":
            X = np.asfortranarray(X)
        n = shape[axis]
        tree = dyadic_tree(rng.permutation(n) if shuffled else n)
        _check_against_pywt(X, tree, axis)
        if inverse:
            C = haar_transform(X, tree, axis=axis)
            coeffs = pywt.wavedec(X, "haar", axis=axis)
            ours = best_time(lambda: inverse_haar_transform(C, tree, axis=axis))  # noqa: B023
            peer = best_time(lambda: pywt.waverec(coeffs, "haar", axis=axis))  # noqa: B023
        else:
            ours = best_time(lambda: haar_transform(X, tree, axis=axis))  # noqa: B023
            peer = best_time(lambda: pywt.wavedec(X, "haar", axis=axis))  # noqa: B023
        # a shuffled leaf order is a permutation, then the dyadic transform: PyWavelets needs
        # np.take first to compute the same coefficients
        fair = ""
        if shuffled:
            order = tree.leaf_order
            both = best_time(lambda: pywt.wavedec(np.take(X, order, axis=axis), "haar", axis=axis))  # noqa: B023
            fair = f"{both / ours:16.2f}"
        print(f"{label:<16} {'x'.join(map(str, shape)):>14} {axis:>4} {ours * 1e3:9.3f} "
              f"{peer * 1e3:9.3f} {peer / ours:10.2f} {fair}")  # fmt: skip


# passes over the sizes in the time-per-element sweep, each cell's best kept: on a shared
# machine a slow spell lasts seconds, longer than the repeats of one cell
SWEEP_PASSES = 3


def sweep_section(quick, large):
    rng = np.random.default_rng(1)
    sizes = [1 << k for k in range(14, 27, 3 if quick else 2)]
    if large:
        sizes.append(1 << 27)
    keys = ("rows", "long", "short", "axis0", "pywt", "np.copy")
    # the same transforms writing into an array given with out= (reused, so its pages are
    # mapped already) beside np.copyto, the memory floor of a transform into a given array
    out_keys = ("rows out=", "long out=", "short out=", "axis0 out=", "np.copyto")
    per = {key: [np.inf] * len(sizes) for key in keys + out_keys}
    t16 = dyadic_tree(16)
    t1024 = dyadic_tree(1024)
    for _ in range(1 if quick else SWEEP_PASSES):
        for i, size in enumerate(sizes):
            X = rng.normal(size=size)
            O = np.zeros_like(X)
            rows = X.reshape(-1, 1024)
            n_long = min(size, 1 << 16)
            long = X.reshape(-1, n_long)
            tlong = dyadic_tree(n_long)
            n0 = min(size // 16, 4096)
            col = X.reshape(n0, -1)
            t0 = dyadic_tree(n0)
            short = X.reshape(-1, 16)
            cases = ((rows, t1024, 1), (long, tlong, 1), (short, t16, 1), (col, t0, 0))
            calls = [
                lambda A=A, tree=tree, axis=axis: haar_transform(A, tree, axis=axis)
                for A, tree, axis in cases
            ]
            calls += [
                lambda: pywt.wavedec(rows, "haar", axis=1),  # noqa: B023
                # the memory floor of a transform that returns a new array: read X, write anew
                lambda: X.copy(),  # noqa: B023
            ]
            calls += [
                lambda A=A, tree=tree, axis=axis: haar_transform(
                    A,
                    tree,
                    axis=axis,
                    out=O.reshape(A.shape),  # noqa: B023
                )
                for A, tree, axis in cases
            ]
            calls.append(lambda: np.copyto(O, X))  # noqa: B023
            for key, call in zip(keys + out_keys, calls):
                per[key][i] = min(per[key][i], best_time(call) / size)
    print(f"{'elements':>10} {'rows of 1024 ns/el':>19} {'long rows ns/el':>16} "
          f"{'rows of 16 ns/el':>17} {'axis 0 ns/el':>13} {'pywt rows ns/el':>16} "
          f"{'np.copy ns/el':>14}")  # fmt: skip
    for i, size in enumerate(sizes):
        a, b, d, c, p, e = (per[key][i] * 1e9 for key in keys)
        print(f"{size:>10} {a:19.3f} {b:16.3f} {d:17.3f} {c:13.3f} {p:16.3f} {e:14.3f}")
    print(f"{'into out=':>10} {'rows of 1024 ns/el':>19} {'long rows ns/el':>16} "
          f"{'rows of 16 ns/el':>17} {'axis 0 ns/el':>13} {'np.copyto ns/el':>16}")  # fmt: skip
    for i, size in enumerate(sizes):
        a, b, d, c, e = (per[key][i] * 1e9 for key in out_keys)
        print(f"{size:>10} {a:19.3f} {b:16.3f} {d:17.3f} {c:13.3f} {e:16.3f}")
    for key, values in per.items():
        print(f"  {key}: largest / smallest time per element = {max(values) / min(values):.2f}")
    # the copy carries the move from cache to memory: at the largest size, how many copies'
    # time each transform takes
    ratios = ", ".join(f"{key} {per[key][-1] / per['np.copy'][-1]:.2f}"
                       for key in ("rows", "long", "short", "axis0", "pywt"))  # fmt: skip
    print(f"  at {sizes[-1]} elements, time / np.copy's time: {ratios}")
    ratios = ", ".join(f"{key} {per[key][-1] / per['np.copyto'][-1]:.2f}"
                       for key in out_keys[:-1])  # fmt: skip
    print(f"  at {sizes[-1]} elements, time / np.copyto's time: {ratios}")


def _general_trees(n, rng, depth, fanout):
    """The dyadic tree and three others on n points: random nested labels (wide folders and
    one-child chains) and two linkage trees, whose level representation pads every branch
    with one-child chains."""
    levels = [np.zeros(n, dtype=int)]
    for _ in range(depth):
        levels.append(levels[-1] * fanout + rng.integers(0, fanout, size=n))
    levels.append(np.arange(n))
    points = rng.normal(size=(n, 3))
    return (
        ("dyadic", dyadic_tree(n)),
        ("wide folders + chains", PartitionTree.from_levels(np.array(levels))),
        ("linkage (average)", linkage_tree(points, method="average")),
        ("linkage (ward)", linkage_tree(points, method="ward")),
    )


def _general_tree_table(title, trees, layouts):
    """Time per element of each tree against the first (dyadic) one, per layout."""
    print(f"{title:<34} {'levels':>6} {'nodes':>6} {'ms':>8} "
          f"{'ns/el':>7} {'x dyadic':>9} {'ns/el/level':>12}")  # fmt: skip
    base = {}
    for name, tree in trees:
        for axis, Y in layouts:
            t = best_time(lambda: haar_transform(Y, tree, axis=axis))  # noqa: B023
            base.setdefault(axis, t)
            depth = tree.n_levels - 1
            print(f"{name + f' axis {axis}':<34} {depth:>6} {tree.n_nodes:>6} {t * 1e3:8.2f} "
                  f"{t / Y.size * 1e9:7.3f} {t / base[axis]:9.2f} "
                  f"{t / Y.size / depth * 1e9:12.3f}")  # fmt: skip


def general_tree_section():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(1024, 4096))
    _general_tree_table(
        "tree (4096 points, 1024 rows)",
        _general_trees(4096, rng, depth=5, fanout=5),
        ((1, X), (0, X.T.copy())),
    )
    # short rows: the perfect binary tree's rows go a block at a time, other trees' rows
    # four at a time
    _general_tree_table(
        "tree (256 points, 4096 rows)",
        _general_trees(256, rng, depth=3, fanout=4),
        ((1, rng.normal(size=(4096, 256))),),
    )


def separable_pywt(X):
    """PyWavelets' full Haar along axis 1, then along axis 0 (the tensor-product basis)."""
    C = np.concatenate(pywt.wavedec(X, "haar", axis=1), axis=1)
    return np.concatenate(pywt.wavedec(C, "haar", axis=0), axis=0)


def bihaar_section():
    rng = np.random.default_rng(3)
    print(f"{'bi-Haar':<12} {'skorg ms':>9} {'pywt ms':>9} {'pywt/skorg':>10}")
    for n in (1024, 4096):
        X = rng.normal(size=(n, n))
        trees = [dyadic_tree(n), dyadic_tree(n)]
        C = multi_haar_transform(X, trees)
        np.testing.assert_allclose(np.abs(C), np.abs(separable_pywt(X)), atol=1e-9)
        ours = best_time(lambda: multi_haar_transform(X, trees), 3)  # noqa: B023
        peer = best_time(lambda: separable_pywt(X), 3)  # noqa: B023
        print(f"{n}x{n:<7} {ours * 1e3:9.2f} {peer * 1e3:9.2f} {peer / ours:10.2f}")


LOAD_SHAPES = [(128, 1024), (512, 1024), (1024, 1024), (4096, 1024), (1024, 4096), (4096, 4096)]
# seconds of calls per side and case in the load mode (at least LOAD_MIN_CALLS calls)
LOAD_SECONDS = 0.3
LOAD_MIN_CALLS = 5


def interleaved_medians(calls):
    """Median seconds of each named call (numba on one thread for the key "one thread"):
    short blocks of calls of one kind in turn, so that all of them see the same load, the
    first call of every block left out (it follows another kind of call: another library's
    frees, or threads still spinning after a parallel call, slow it down whichever it is)."""
    threads = numba.get_num_threads()
    for call in calls.values():
        call()  # warm: JIT from the cache, pages of the output
    start = time.perf_counter()
    calls["skorg"]()
    n_calls = int(min(201, max(LOAD_MIN_CALLS, LOAD_SECONDS / (time.perf_counter() - start))))
    per_block = 4
    times = {key: [] for key in calls}
    keys = list(calls)
    for i in range(-(-n_calls // (per_block - 1))):
        for key in keys[i % len(keys) :] + keys[: i % len(keys)]:  # the order rotates
            if key == "one thread":
                numba.set_num_threads(1)
            for j in range(per_block):
                begin = time.perf_counter()
                calls[key]()
                if j:
                    times[key].append(time.perf_counter() - begin)
            numba.set_num_threads(threads)
    return {key: float(np.median(t)) for key, t in times.items()}


def load_section(modes, quick):
    rng = np.random.default_rng(0)
    cases = {}
    for shape in LOAD_SHAPES[:2] if quick else LOAD_SHAPES:
        X = rng.random(shape)
        for axis, label in ((1, "rows"), (0, "columns")):
            tree = dyadic_tree(shape[axis])
            ours = lambda X=X, tree=tree, axis=axis: haar_transform(X, tree, axis=axis)  # noqa: E731
            peer = lambda X=X, axis=axis: pywt.wavedec(X, "haar", axis=axis)  # noqa: E731
            cases[f"Haar {label} {shape[0]} x {shape[1]}"] = (ours, peer)
    for n in (1024,) if quick else (1024, 4096):
        X = rng.random((n, n))
        trees = [dyadic_tree(n), dyadic_tree(n)]
        ours = lambda X=X, trees=trees: multi_haar_transform(X, trees)  # noqa: E731
        cases[f"bi-Haar {n} x {n}"] = (ours, lambda X=X: separable_pywt(X))

    def measure_case(name):
        ours, peer = cases[name]
        return interleaved_medians({"skorg": ours, "one thread": ours, "PyWavelets": peer})

    print("# medians of interleaved calls (skorg, skorg on one thread, PyWavelets)")
    threads_table(list(cases), measure_case, modes, extra=("PyWavelets",))


def main():
    modes, argv = load_modes(sys.argv[1:])  # applies --layer NAME, before any parallel call
    if modes:
        load_section(modes, "--quick" in argv)
        return
    if "--copy-floor" in argv:
        copy_floor_main(argv)
        return
    quick = "--quick" in argv
    print(f"# best of {REPEAT} runs per side, back to back; numba threads: "
          f"{numba.get_num_threads()}")  # fmt: skip
    print("\n## 1. one-axis Haar on dyadic trees against PyWavelets")
    pywt_section(quick)
    print("\n## 2. time per element (dyadic tree)")
    sweep_section(quick, "--large" in argv)
    threads = numba.get_num_threads()
    if threads > 1:
        print(f"\n## 2b. the same on one thread (numba threads: {threads} -> 1)")
        numba.set_num_threads(1)
        try:
            sweep_section(quick, "--large" in argv)
        finally:
            numba.set_num_threads(threads)
    print("\n## 3. general trees against the dyadic tree, per element and per level")
    general_tree_section()
    print("\n## 4. bi-Haar against PyWavelets along each axis")
    bihaar_section()
    print("\n## 5. against the dense-basis einsum baseline")
    einsum_section()


def einsum_section():
    matrix, tensor = load_inputs()
    M = matrix["X"]
    m_trees = [dyadic_tree(matrix["row_true_order"]), dyadic_tree(matrix["col_true_order"])]
    T = tensor["X"]
    t_trees = [dyadic_tree(tensor[f"axis{ax}_true_order"]) for ax in range(3)]
    m_basis = [haar_basis(t) for t in m_trees]
    t_basis = [haar_basis(t) for t in t_trees]
    C1 = haar_transform(M, m_trees[1])
    C2 = multi_haar_transform(M, m_trees)
    C3 = multi_haar_transform(T, t_trees)
    cases = [
        ("1-D rows 512x512", lambda: haar_transform(M, m_trees[1]),
         lambda: np.einsum("ij,jb->ib", M, m_basis[1], optimize=True)),
        ("1-D rows 512x512 inverse", lambda: inverse_haar_transform(C1, m_trees[1]),
         lambda: np.einsum("ib,jb->ij", C1, m_basis[1], optimize=True)),
        ("bi-Haar 512x512", lambda: multi_haar_transform(M, m_trees),
         lambda: np.einsum("ij,ia,jb->ab", M, *m_basis, optimize=True)),
        ("bi-Haar 512x512 inverse", lambda: inverse_multi_haar_transform(C2, m_trees),
         lambda: np.einsum("ab,ia,jb->ij", C2, *m_basis, optimize=True)),
        ("tri-Haar 256x256x128", lambda: multi_haar_transform(T, t_trees),
         lambda: np.einsum("ijk,ia,jb,kc->abc", T, *t_basis, optimize=True)),
        ("tri-Haar 256x256x128 inverse", lambda: inverse_multi_haar_transform(C3, t_trees),
         lambda: np.einsum("abc,ia,jb,kc->ijk", C3, *t_basis, optimize=True)),
    ]  # fmt: skip
    # correctness of the comparison itself
    np.testing.assert_allclose(cases[4][1](), cases[4][2](), atol=1e-9)
    np.testing.assert_allclose(cases[5][1](), T, atol=1e-9)
    print(f"{'case':<30} {'skorg s':>9} {'einsum s':>9} {'speed-up':>9} "
          f"{'skorg MB':>9} {'einsum MB':>10} {'mem ratio':>9}")  # fmt: skip
    for name, ours, baseline in cases:
        t_ours, m_ours = measure(ours)
        t_base, m_base = measure(baseline)
        print(
            f"{name:<30} {t_ours:9.4f} {t_base:9.4f} {t_base / t_ours:9.1f} "
            f"{m_ours / 2**20:9.1f} {m_base / 2**20:10.1f} {m_ours / m_base:9.2f}"
        )
    print(f"input tensor: {T.nbytes / 2**20:.1f} MB")


if __name__ == "__main__":
    main()
