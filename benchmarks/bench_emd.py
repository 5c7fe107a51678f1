"""Benchmark: tree EMD and multi-tree EMD against a plain NumPy/SciPy baseline.

Baseline: a dense averaging matrix M (|T| x n, row F = weight(F) / |F| on the points of F) applied
to the data, then ``scipy.spatial.distance.cdist(..., "cityblock")`` between the slices' features
(for a tensor, ``M0 X[:, :, t] M1^T`` per slice). skorg: ``tree_emd`` / ``multi_tree_emd``.

Every case and implementation runs in its own subprocess, which loads the input from a file, warms
the JIT on a small input (not timed), records its resident memory, runs once and reports the
growth of the peak resident memory and the time. The peak is the kernel's high-water mark
(VmHWM, reset after the warm-up), which sees numba's allocations, unlike tracemalloc. The two
results are compared (max relative difference).

    python benchmarks/bench_emd.py                  # all cases
    python benchmarks/bench_emd.py 2d_1024_dyadic   # some
    python benchmarks/bench_emd.py --threads 1      # numba threads (default: all)
    python benchmarks/bench_emd.py --quiet-and-loaded   # default threading against one thread,
                                                    # quiet and under load (_load.py)
    python benchmarks/bench_emd.py 3d_1024x1024x144_f32   # opt-in: the memory bound, no baseline
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SKORG_SHARED", ROOT.parent / "shared"))
LOAD_REPEATS = 3  # processes per side in the load mode (medians)
ALPHA, BETA = 0.0, 1.0  # the paper's 3-D preset; the cost does not depend on them

# name: (shape, compared axis, tree kind)
CASES = {
    "2d_512_dyadic": ((512, 512), 1, "dyadic"),
    "2d_512_flex": ((512, 512), 1, "flex"),
    "2d_1024_dyadic": ((1024, 1024), 1, "dyadic"),
    "2d_1024_flex": ((1024, 1024), 1, "flex"),
    "2d_2048_dyadic": ((2048, 2048), 1, "dyadic"),
    "2d_2048_flex": ((2048, 2048), 1, "flex"),
    "3d_256x256x128_axis0": ((256, 256, 128), 0, "flex"),
    "3d_256x256x128_axis1": ((256, 256, 128), 1, "flex"),
    "3d_256x256x128_axis2": ((256, 256, 128), 2, "flex"),
}
# Opt-in: float32 features in chunks of the default working memory; the dense baseline would need
# about 5 GB of features plus einsum temporaries, so it is not run.
LARGE = {"3d_1024x1024x144_f32": ((1024, 1024, 144), 2, "dyadic")}


# --------------------------------------------------------------------------- inputs
def bench_input(shape):
    """The benchmark array: shared/bench_inputs.py when present, else an equivalent generator."""
    if (SHARED / "bench_inputs.py").exists():
        sys.path.insert(0, str(SHARED))
        import bench_inputs

        if len(shape) == 2:
            return bench_inputs.bench_matrix(shape[0])["X"]
        return bench_inputs.bench_tensor(shape)["X"]
    # same recipe: a smooth function of sorted latent coordinates, axes shuffled, noise 0.02
    rng = np.random.default_rng(20250601 + int(np.prod(shape)) % 100003)
    latents = [np.sort(rng.uniform(0, 1, n)) for n in shape]
    grids = np.meshgrid(*latents, indexing="ij")
    x, y = grids[0], grids[1]
    z = grids[2] if len(shape) == 3 else 0.5
    w = 0.08 + 0.15 * z
    F = np.exp(-((x - y - 0.4 * (z - 0.5)) ** 2) / (2 * w**2)) + 0.15 * np.cos(2 * np.pi * x)
    F = F[np.ix_(*[rng.permutation(n) for n in shape])]
    return F + 0.02 * rng.standard_normal(shape)


def flex_like_tree(n, seed):
    """Random tree shaped like a flexible tree: 1-4 children per folder (mean about 2.5), so
    about 1.6 n nodes, with one-child chains."""
    from skorg.trees import PartitionTree

    rng = np.random.default_rng(seed)
    groups = np.arange(n)  # folder label of every leaf position at the current level
    levels = [groups]
    while groups.max() > 0:
        n_folders = groups.max() + 1
        sizes = rng.choice([1, 2, 3, 4], size=n_folders, p=[0.1, 0.4, 0.35, 0.15])
        parent = np.repeat(np.arange(n_folders), sizes)[:n_folders]
        if parent.max() == groups.max():  # guarantee progress
            parent[-1] = parent[-2]
        groups = parent[groups]
        levels.append(groups)
    levels = np.array(levels[::-1])
    order = rng.permutation(n)
    return PartitionTree.from_levels(levels[:, np.argsort(order)], leaf_order=order)


def make_trees(shape, axis, kind):
    from skorg.trees import dyadic_tree

    trees = []
    for a, n in enumerate(shape):
        if a == axis:
            trees.append(None)
        elif kind == "dyadic":
            trees.append(dyadic_tree(np.random.default_rng(a).permutation(n)))
        else:
            trees.append(flex_like_tree(n, seed=a))
    return trees


# --------------------------------------------------------------------------- implementations
def averaging_matrix(tree, alpha, beta):
    """Dense (n_nodes x n) matrix of weighted folder means."""
    M = np.zeros((tree.n_nodes, tree.n_points))
    w = (tree.size / tree.n_points) ** beta * 2.0 ** (-alpha * tree.level)
    for node in range(tree.n_nodes):
        M[node, tree.folder(node)] = w[node] / tree.size[node]
    return M


def baseline(X, trees, axis):
    from scipy.spatial.distance import cdist

    Xm = np.moveaxis(X, axis, -1)
    others = [t for t in trees if t is not None]
    mats = [averaging_matrix(t, ALPHA, BETA) for t in others]
    if len(mats) == 1:
        F = (mats[0] @ Xm).T
    else:
        M0, M1 = mats
        F = np.einsum("in,nmt,jm->tij", M0, Xm, M1, optimize=True).reshape(Xm.shape[-1], -1)
    return cdist(F, F, "cityblock")


def skorg_emd(X, trees, axis):
    from skorg.metrics import multi_tree_emd, tree_emd

    if X.ndim == 2 and axis == 1:
        return tree_emd(X, trees[0], alpha=ALPHA, beta=BETA)
    return multi_tree_emd(X, trees, axis=axis, alphas=ALPHA, betas=BETA)


def all_cases():
    return {**CASES, **LARGE}


def current_rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def reset_peak():
    """Reset the kernel's peak-RSS mark (VmHWM) to the current RSS, where Linux allows it.

    ``ru_maxrss`` would not do: it survives exec, so a child would inherit the parent's peak.
    """
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_one(name, impl, input_path, output_path):
    shape, axis, kind = all_cases()[name]
    X = np.load(input_path)
    trees = make_trees(shape, axis, kind)
    if impl == "skorg":
        small = X[(slice(0, 16),) * X.ndim]
        skorg_emd(small, make_trees(small.shape, axis, kind), axis)  # JIT from the cache
        fn = skorg_emd
    else:
        fn = baseline
    reset_peak()
    before = current_rss_mb()
    start = time.perf_counter()
    D = fn(X, trees, axis)
    seconds = time.perf_counter() - start
    peak = peak_rss_mb() - before
    np.save(output_path, D)
    print(json.dumps({"seconds": seconds, "peak_mb": peak}))


def spawn(name, impl, input_path, output_path, threads):
    env = dict(os.environ)
    if threads:
        env["NUMBA_NUM_THREADS"] = str(threads)
    cmd = [sys.executable, __file__, "--run", name, impl, input_path, output_path]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{name}/{impl} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def load_main(names, modes):
    """skorg's time with the default threading and on one thread, quiet and/or loaded."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _load import threads_table

    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for name in names:
            shape, _, _ = all_cases()[name]
            X = bench_input(shape)
            paths[name] = os.path.join(tmp, f"{name}.npy")
            np.save(paths[name], X.astype(np.float32) if name in LARGE else X)
        out = os.path.join(tmp, "D.npy")

        def measure(name):
            # one run per process is at the mercy of the machine's minute: the one-thread
            # time alone moved 3.6x between two quiet runs, so each side is the median of
            # LOAD_REPEATS processes, the two sides alternated
            ours, one = [], []
            for _ in range(LOAD_REPEATS):
                ours.append(spawn(name, "skorg", paths[name], out, None)["seconds"])
                one.append(spawn(name, "skorg", paths[name], out, 1)["seconds"])
            return {"skorg": float(np.median(ours)), "one thread": float(np.median(one))}

        threads_table(names, measure, modes)


def main(argv):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _load import load_modes

    modes, argv = load_modes(argv)
    if modes:
        load_main(argv or [n for n in CASES if n not in LARGE], modes)
        return
    threads = None
    if "--threads" in argv:
        i = argv.index("--threads")
        threads = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2 :]
    names = argv or list(CASES)
    import numba

    print(f"numba threads: {threads or numba.config.NUMBA_NUM_THREADS}, cpus: {os.cpu_count()}")
    header = (
        f"{'case':<24}{'features':>12}{'skorg s':>9}{'base s':>9}{'speedup':>9}"
        f"{'skorg MB':>10}{'base MB':>9}{'mem ratio':>10}{'max rel diff':>14}"
    )
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            shape, axis, kind = all_cases()[name]
            X = bench_input(shape)
            if name in LARGE:
                X = X.astype(np.float32)
            path = os.path.join(tmp, "X.npy")
            np.save(path, X)
            del X
            trees = make_trees(shape, axis, kind)
            n_feat = int(np.prod([t.n_nodes for t in trees if t is not None]))
            s = spawn(name, "skorg", path, os.path.join(tmp, "skorg.npy"), threads)
            if name in LARGE:
                print(
                    f"{name:<24}{n_feat:>12}{s['seconds']:>9.2f}{'-':>9}{'-':>9}"
                    f"{s['peak_mb']:>10.0f}{'-':>9}{'-':>10}{'-':>14}",
                    flush=True,
                )
                continue
            b = spawn(name, "baseline", path, os.path.join(tmp, "baseline.npy"), threads)
            ds = np.load(os.path.join(tmp, "skorg.npy"))
            db = np.load(os.path.join(tmp, "baseline.npy"))
            diff = np.abs(ds - db).max() / np.abs(db).max()
            print(
                f"{name:<24}{n_feat:>12}{s['seconds']:>9.2f}{b['seconds']:>9.2f}"
                f"{b['seconds'] / s['seconds']:>8.1f}x{s['peak_mb']:>10.0f}{b['peak_mb']:>9.0f}"
                f"{b['peak_mb'] / max(s['peak_mb'], 1):>9.1f}x{diff:>14.1e}",
                flush=True,
            )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--run":
        sys.path.insert(0, str(ROOT))
        run_one(*sys.argv[2:6])
    else:
        main(sys.argv[1:])
