"""Haar-Walsh wavelet packets on organized trees: sparsity, compression, denoising and speed.

1. ``suite``: on datasets of the organization-quality suite (scikit-learn's wine and breast
   cancer, z-scored per column; shuffled smooth 64 x 64 matrices of ``skorg.datasets``, three
   kinds x two seeds; digits by name), trees from the default
   :class:`~skorg.QuestionnaireOrganizer`, and on them: the normalized l1 cost
   ``||C||_1 / ||X||_2`` of the tensor Haar basis, of the separable best basis (alternating,
   the default), of the independent per-axis choice, of the time-frequency tilings
   (alternating) and of the 2-D (non-separable) tiling; and the relative error after keeping
   the 5% largest coefficients in the Haar basis, the best basis and the 2-D tiling (NaN
   where the 2-D search is past its size limit).
2. ``denoise``: a known-noise experiment: clean shuffled smooth matrices (and one with an
   oscillating factor) plus Gaussian noise of known sigma, trees organized on the noisy
   matrix, soft thresholding at the universal threshold with the true sigma in the Haar and
   in the best basis: relative error against the clean matrix (mean and range over seeds).
3. ``runtime``: the separable best basis of a 1024 x 1024 matrix (dictionary and search on
   both axes, one sweep and the default alternation) on a dyadic tree and on an average
   linkage tree, best of three, with the peak of NumPy's allocations (``tracemalloc``); and
   the time per level of every pass through the dictionary against the tree Haar
   transform's, on the same tree and the same data (X along axis 0, float64):

   - *tree Haar*: the median time of ``haar_transform(X, tree, axis=0)`` divided by the
     tree's number of levels above the leaves, ``tree.n_levels - 1``;
   - *cost pass*: the whole dictionary pass of the search (every coefficient of every level
     computed, ``n_levels x n x B`` values, and its l1 cost summed:
     ``_cost_table(rows, plan, "l1")``, packet-ordered rows given);
   - *materialized dictionary*: :func:`~skorg.transforms.wavelet_packet_dictionary`, which
     writes ``n_levels`` copies of X; beside it its floor, writing ``n_levels`` fresh
     copies of X (``np.empty(...)[...] = X``), and the older level-by-level path;
   - *analysis* and *synthesis* of the best basis (l1, both directions):
     ``wavelet_packet_transform`` and its inverse (their core, without the checks), by the
     in-place schedule and by the older level-by-level path;

   each divided by the dictionary's levels above the finest, ``n_levels - 1``, and its
   ratio to tree Haar's per level (the target: at most 2). All are timed in turns, 15
   times each, in the same run (medians); beside each ratio, that of the fastest runs, the
   least disturbed by the machine's load. At this size ``haar_transform`` shares its work
   between the threads and the dictionary passes run on one (their parallel path starts at
   2^22 values). ``levels`` (by name only) runs these ratios alone, three times per tree.

4. ``tiling2d`` (by name only): the time and peak memory of
   :func:`~skorg.transforms.best_wavelet_packet_tiling_2d` on perfect dyadic trees from
   64 x 64 to 512 x 512 (traced with ``tracemalloc``, which slows NumPy a little), and its
   refusal at 1024 x 1024.

Run ``python benchmarks/bench_wavelet_packets.py`` (the first three) or name the parts
(``suite digits denoise runtime levels tiling2d``). This machine is shared: the times are
the best of three runs after a warm-up (the per-level figures: medians of 15, in turns),
and only ratios measured in the same run compare.
"""

from __future__ import annotations

import sys
import time
import tracemalloc

import numpy as np

from skorg import QuestionnaireOrganizer
from skorg.datasets import make_shuffled_matrix
from skorg.transforms import (
    best_wavelet_packet_basis,
    best_wavelet_packet_tiling_2d,
    haar_compress,
    haar_denoise,
    haar_transform,
    multi_best_wavelet_packet_basis,
    multi_haar_transform,
    multi_wavelet_packet_transform,
    wavelet_packet_dictionary,
    wavelet_packet_transform,
    wavelet_packet_transform_2d,
)
from skorg.transforms._packet_core import _apply, _block_width, _cost_table, _rows
from skorg.transforms._packet_plan import get_packet_plan
from skorg.transforms._packets import _dictionary_by_level
from skorg.trees import dyadic_tree, linkage_tree


def best_of(func, repeat=3):
    func()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        func()
        times.append(time.perf_counter() - t)
    return min(times)


def medians_in_turns(*funcs, repeat=25, stat=np.median):
    """The median (``stat``) time of each function, run in turns (one warm-up each first),
    so that a change of the machine's load falls on all of them alike."""
    for func in funcs:
        func()
    times = [[] for _ in funcs]
    for _ in range(repeat):
        for k, func in enumerate(funcs):
            t = time.perf_counter()
            func()
            times[k].append(time.perf_counter() - t)
    return [float(stat(v)) for v in times], [float(np.min(v)) for v in times]


def peak_mib(func):
    tracemalloc.start()
    try:
        func()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def labelled(name):
    from sklearn import datasets

    if name == "digits":
        X, _ = datasets.load_digits(return_X_y=True)
        return X[:, X.std(axis=0) > 0].astype(np.float64)
    loader = {"wine": datasets.load_wine, "breast_cancer": datasets.load_breast_cancer}[name]
    X, _ = loader(return_X_y=True)
    return ((X - X.mean(axis=0)) / X.std(axis=0)).astype(np.float64)


def scores(X, trees):
    norm = float(np.linalg.norm(X))
    haar = float(np.abs(multi_haar_transform(X, trees)).sum()) / norm
    best = multi_best_wavelet_packet_basis(X, trees)
    indep = multi_best_wavelet_packet_basis(X, trees, method="independent")
    tf = multi_best_wavelet_packet_basis(X, trees, direction="time-frequency")
    c_tf = float(np.abs(multi_wavelet_packet_transform(X, trees, tf)).sum()) / norm
    c_best = float(np.abs(multi_wavelet_packet_transform(X, trees, best)).sum()) / norm
    c_indep = float(np.abs(multi_wavelet_packet_transform(X, trees, indep)).sum()) / norm
    e_haar = haar_compress(X, trees, fraction=0.05).relative_error
    e_best = haar_compress(X, trees, fraction=0.05, basis=best).relative_error
    # the 2-D (non-separable) tiling; its 5% error read off its coefficients (orthonormal:
    # the error is the norm of those left out); NaN where the search is past its limit
    try:
        tiling = best_wavelet_packet_tiling_2d(X, trees)
    except MemoryError:
        c_2d = e_2d = float("nan")
    else:
        C = np.abs(wavelet_packet_transform_2d(X, trees, tiling))
        c_2d = float(C.sum()) / norm
        keep = int(np.ceil(0.05 * C.size))  # as haar_compress counts a fraction
        left = np.sort(C)[::-1][keep:]
        e_2d = float(np.sqrt(np.sum(left**2))) / norm
    return {
        "l1 haar": haar,
        "l1 best": c_best,
        "l1 indep": c_indep,
        "l1 tf": c_tf,
        "l1 2-D": c_2d,
        "err5 haar": e_haar,
        "err5 best": e_best,
        "err5 2-D": e_2d,
    }


COLS = ["l1 haar", "l1 best", "l1 indep", "l1 tf", "l1 2-D", "err5 haar", "err5 best", "err5 2-D"]


def print_row(name, row):
    print(f"{name:<28}" + "".join(f"{row[c]:>11.4f}" for c in COLS))


def bench_suite(names=("wine", "breast_cancer", "shuffled")):
    print("## suite: normalized l1 cost and 5% compression error, trees of the default organizer")
    print(f"{'dataset':<28}" + "".join(f"{c:>11}" for c in COLS))
    for name in names:
        if name == "shuffled":
            for kind in ("band", "ridge", "product"):
                acc = []
                for seed in (0, 1):
                    data = make_shuffled_matrix(64, 64, kind=kind, noise=0.05, random_state=seed)
                    org = QuestionnaireOrganizer().fit(data.X)
                    acc.append(scores(data.X, [org.row_tree_, org.column_tree_]))
                print_row(
                    f"shuffled {kind} 64 (2 seeds)", {c: np.mean([a[c] for a in acc]) for c in COLS}
                )
            continue
        X = labelled(name)
        org = QuestionnaireOrganizer().fit(X)
        print_row(f"{name} {X.shape}", scores(X, [org.row_tree_, org.column_tree_]))


def bench_denoise(n=64, sigma=0.1, seeds=(0, 1, 2)):
    print(f"\n## denoise: {n} x {n}, known sigma = {sigma}, universal soft threshold")
    print(f"{'matrix':<28}{'err haar':>22}{'err best':>22}")
    rng_t = np.arange(n)
    for kind in ("band", "ridge", "oscillating"):
        errs = {"haar": [], "best": []}
        for seed in seeds:
            rng = np.random.default_rng(seed)
            if kind == "oscillating":
                clean = np.outer(np.cos(np.pi * rng_t * 0.45), np.linspace(1.0, 2.0, n))
                clean = clean[np.ix_(rng.permutation(n), rng.permutation(n))]
            else:
                clean = make_shuffled_matrix(n, n, kind=kind, noise=0.0, random_state=seed).X
            clean = clean / np.abs(clean).max()
            noisy = clean + sigma * rng.standard_normal(clean.shape)
            org = QuestionnaireOrganizer().fit(noisy)
            trees = [org.row_tree_, org.column_tree_]
            for key, basis in (("haar", None), ("best", "best")):
                out = haar_denoise(noisy, trees, sigma=sigma, basis=basis)
                errs[key].append(np.linalg.norm(out.X - clean) / np.linalg.norm(clean))
        cells = [
            f"{np.mean(v):.4f} [{np.min(v):.3f}, {np.max(v):.3f}]"
            for v in (errs["haar"], errs["best"])
        ]
        print(f"{kind + f' ({len(seeds)} seeds)':<28}{cells[0]:>22}{cells[1]:>22}")


def bench_runtime(n=1024):
    print(f"\n## runtime: separable best basis of a {n} x {n} matrix (best of 3)")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, n))
    for name, tree in _runtime_trees(n, rng).items():
        plan = get_packet_plan(tree)
        one = best_of(
            lambda t=tree: multi_best_wavelet_packet_basis(X, [t, t], method="independent")
        )
        alt = best_of(lambda t=tree: multi_best_wavelet_packet_basis(X, [t, t]))
        tf = best_of(
            lambda t=tree: multi_best_wavelet_packet_basis(X, [t, t], direction="time-frequency")
        )
        mem = peak_mib(lambda t=tree: multi_best_wavelet_packet_basis(X, [t, t]))
        # the cost pass's own buffers, allocated inside numba (not seen by tracemalloc): a
        # block of the rows and its partial costs
        scratch = 8 * n * (_block_width(n, n) + 8 + plan.n_levels) / 2**20
        print(
            f"{name:<16} {plan.n_levels:>3} levels: one pass per axis {one:.3f} s, "
            f"alternating {alt:.3f} s (time-frequency {tf:.3f} s), peak {mem:.0f} MiB "
            f"of NumPy allocations + {scratch:.1f} MiB of kernel scratch "
            f"(X: {X.nbytes / 2**20:.0f} MiB)"
        )
        per_level_ratios(X, tree, plan)


def _runtime_trees(n, rng):
    return {
        "dyadic": dyadic_tree(n),
        "average linkage": linkage_tree(rng.standard_normal((n, 8)), method="average"),
    }


def bench_levels(n=1024, turns=3):
    """The per-level ratios alone, ``turns`` times (the spread of one run's ratios)."""
    print(f"\n## levels: time per level against tree Haar's, {n} x {n}, {turns} turns")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, n))
    for name, tree in _runtime_trees(n, rng).items():
        plan = get_packet_plan(tree)
        for turn in range(turns):
            print(f"{name:<16} turn {turn + 1}")
            per_level_ratios(X, tree, plan)


def per_level_ratios(X, tree, plan, repeat=15):
    """The time per level of every pass through the dictionary against the tree Haar
    transform's (see the module docstring), timed in turns in the same run (medians of
    ``repeat``; beside each, the ratio of the fastest runs)."""
    basis = best_wavelet_packet_basis(X, tree, axis=0)
    C = wavelet_packet_transform(X, tree, basis, axis=0)
    rows = _rows(X, plan, 0)
    L = plan.n_levels

    def fresh_copies():  # the floor of the materialized dictionary: n_levels new copies of X
        np.empty((L, *X.shape), dtype=X.dtype)[...] = X

    passes = [
        ("cost pass (search)", lambda: _cost_table(rows, plan, "l1")),
        ("materialized dictionary", lambda: wavelet_packet_dictionary(X, tree, axis=0)),
        ("  level by level", lambda: _dictionary_by_level(X, tree, axis=0)),
        ("  floor: n_levels fresh copies of X", fresh_copies),
        ("analysis of the best basis", lambda: _apply(X, plan, basis, 0)),
        ("  level by level", lambda: _apply(X, plan, basis, 0, in_place=False)),
        ("synthesis of the best basis", lambda: _apply(C, plan, basis, 0, inverse=True)),
        (
            "  level by level",
            lambda: _apply(C, plan, basis, 0, inverse=True, in_place=False),
        ),
    ]
    names = [p[0] for p in passes]
    funcs = [*(p[1] for p in passes), lambda: haar_transform(X, tree, axis=0)]
    medians, fastest = medians_in_turns(*funcs, repeat=repeat)
    d_levels, h_levels = max(L - 1, 1), max(tree.n_levels - 1, 1)
    per_haar, min_haar = medians[-1] / h_levels, fastest[-1] / h_levels
    print(
        f"{'':<16} per level (medians of {repeat} in turns): tree Haar {per_haar * 1e3:.3f} ms "
        f"({h_levels} levels, {medians[-1] * 1e3:.2f} ms); each pass over {d_levels} levels, "
        "per level and its ratio to tree Haar's (of the fastest runs):"
    )
    for name, med, low in zip(names, medians[:-1], fastest[:-1]):
        print(
            f"{'':<18} {name:<38} {med / d_levels * 1e3:7.3f} ms  ratio "
            f"{med / d_levels / per_haar:6.2f} ({low / d_levels / min_haar:.2f})"
        )


def bench_tiling_2d(sizes=(64, 128, 256, 512, 1024)):
    print("\n## tiling2d: the 2-D time-frequency tiling search on perfect dyadic trees")
    rng = np.random.default_rng(0)
    for n in sizes:
        tree = dyadic_tree(n)
        X = rng.standard_normal((n, n))
        t = time.perf_counter()
        tracemalloc.start()
        try:
            best_wavelet_packet_tiling_2d(X, [tree, tree])
        except MemoryError as err:
            print(f"{n} x {n}: refused before it starts: {err}")
            continue
        finally:
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
        elapsed = time.perf_counter() - t
        print(f"{n} x {n}: {elapsed:.2f} s, peak {peak:.0f} MiB of NumPy allocations")


def main(names):
    names = names or ["suite", "denoise", "runtime"]
    if "suite" in names or "digits" in names:
        sets = ["wine", "breast_cancer", "shuffled"] if "suite" in names else []
        bench_suite([*sets, *(["digits"] if "digits" in names else [])])
    if "denoise" in names:
        bench_denoise()
    if "runtime" in names:
        bench_runtime()
    if "levels" in names:
        bench_levels()
    if "tiling2d" in names:
        bench_tiling_2d()


if __name__ == "__main__":
    main(sys.argv[1:])
