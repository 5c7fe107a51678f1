"""Sparse counts through Dask, out of core: blocks on disk, per-block work on a LocalCluster.

Run ``python benchmarks/bench_scale_dask.py`` (``--quick`` for 20,000 and 100,000 rows;
``--sizes 20000,1000000`` for others). Simulated single-cell counts (12 cell types with their
own gene rates, log-normal library sizes, Poisson counts, 2,000 columns, about 4.5% non-zero)
are written as one ``.npz`` CSR file per block of 20,000 rows, so no process ever holds the
dense matrix; a Dask array reads them back, a block per task, on a ``LocalCluster`` of two
worker processes (one thread each). Each size runs in a fresh subprocess, which reports the
wall time of every stage and the peak resident memory of the driver and of the workers:

- ``gather``: the memory plan (a count of stored entries per block, on the workers) and the
  CSR matrix gathered block by block (what ``QuestionnaireOrganizer.fit`` does with a Dask
  array before the in-memory path);
- ``score``: the organizer's per-row Haar ratios on the column tree, a block of rows per task
  (nothing gathered but one number per row);
- ``features``: the rows' tree-EMD features on the column tree, a block per task, gathered into
  the driver (the k-NN path's input; refused before it starts when it passes the memory
  budget, which the table says);
- ``fit``: ``QuestionnaireOrganizer().fit`` of the Dask array against the same fit in memory
  (sizes up to ``--fit-max``), the ratio of the two times in the same subprocess, and whether
  the trees are equal.

Times per row are the stage time over the rows; the scaling exponent of each stage is the
least-squares slope of log time (and log peak memory) against log rows. The machine is shared:
the times carry its load, the ratios less so.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
N_COLS = 2_000
N_TYPES = 12
BLOCK_ROWS = 20_000
SIZES = (20_000, 100_000, 300_000, 1_000_000)
SEED = 0


def count_block(lo, hi, n_cols=N_COLS, seed=SEED):
    """Rows ``lo:hi`` of the simulated counts (CSR, int32 values) and their cell types.

    The gene rates of the types come from ``seed`` alone and each block's cells from
    ``(seed, lo)``, so any block can be made on its own (and the matrix of n rows is the same
    whatever the block size that multiplies into it, up to the block boundaries).
    """
    import scipy.sparse as sp

    rates_rng = np.random.default_rng(seed)
    base = rates_rng.gamma(0.6, 1.0, n_cols)
    rates = base * rates_rng.lognormal(0.0, 1.0, (N_TYPES, n_cols))
    rates *= 0.047 / rates.mean()  # about 4.5% of the entries non-zero
    rng = np.random.default_rng([seed, lo])
    types = rng.integers(0, N_TYPES, hi - lo)
    library = rng.lognormal(0.0, 0.5, (hi - lo, 1))
    counts = rng.poisson(rates[types] * library).astype(np.int32)
    return sp.csr_matrix(counts), types


def write_blocks(n_rows, folder):
    """The counts of ``n_rows`` rows as one .npz per block; returns the paths and row ranges."""
    import scipy.sparse as sp

    paths = []
    step = min(BLOCK_ROWS, max(1, -(-n_rows // 4)))  # at least 4 blocks
    for lo in range(0, n_rows, step):
        hi = min(n_rows, lo + step)
        block, types = count_block(lo, hi)
        path = Path(folder) / f"block_{lo:09d}.npz"
        sp.save_npz(path, block, compressed=False)
        np.save(path.with_suffix(".types.npy"), types)
        paths.append((str(path), lo, hi))
    return paths


def _load_npz(path):
    import scipy.sparse as sp

    return sp.load_npz(path).tocsr()


def dask_counts(paths):
    """A Dask array of sparse blocks, each read from its file by a task."""
    import dask
    import dask.array as da
    import scipy.sparse as sp

    meta = sp.csr_matrix((0, 0), dtype=np.int32)
    parts = [
        da.from_delayed(
            dask.delayed(_load_npz)(p), shape=(hi - lo, N_COLS), dtype=np.int32, meta=meta
        )
        for p, lo, hi in paths
    ]
    return da.concatenate(parts, axis=0)


def _peak_mib():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10


def _case(n, fit_max):
    """In the subprocess: every stage at n rows, one JSON line."""
    import time

    from distributed import Client, LocalCluster

    from skorg import QuestionnaireOrganizer
    from skorg._validation import memory_budget
    from skorg.organize._dask_blocks import block_score_ratios, block_tree_emd_embedding
    from skorg.organize._dask_input import load_blocks
    from skorg.trees import dyadic_tree

    out = {"n": n, "budget_mib": memory_budget() / 2**20}
    with tempfile.TemporaryDirectory(prefix="skorg_dask_bench_") as folder:
        t = time.perf_counter()
        paths = write_blocks(n, folder)
        out["write"] = time.perf_counter() - t
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address=None)  # fmt: skip
        with cluster, Client(cluster) as client:
            Xd = dask_counts(paths)
            tree = dyadic_tree(N_COLS)  # the cost depends on the tree's size only
            warm = count_block(0, 200)[0].astype(np.float64)  # JIT, outside the timing
            block_score_ratios(Xd[:200], [None, tree], None)
            block_tree_emd_embedding(warm, [None, tree], client=client)
            if n <= fit_max:
                QuestionnaireOrganizer(n_iter=1).fit(warm.toarray())

            t = time.perf_counter()
            X = load_blocks(Xd)
            out["gather"] = time.perf_counter() - t
            out["nnz_fraction"] = X.nnz / (X.shape[0] * X.shape[1])
            out["gather_peak"] = _peak_mib()

            t = time.perf_counter()
            ratios = block_score_ratios(Xd, [None, tree], None)
            out["score"] = time.perf_counter() - t
            out["score_rows"] = int(ratios.size)

            t = time.perf_counter()
            try:
                F = block_tree_emd_embedding(X, [None, tree], client=client)
            except MemoryError as exc:
                out["features"] = None
                out["features_refused"] = str(exc)
            else:
                out["features"] = time.perf_counter() - t
                out["features_width"] = int(F.shape[1])
                del F
            out["features_peak"] = _peak_mib()

            if n <= fit_max:
                t = time.perf_counter()
                a = QuestionnaireOrganizer(random_state=0).fit(Xd)
                out["fit_dask"] = time.perf_counter() - t
                t = time.perf_counter()
                try:
                    b = QuestionnaireOrganizer(random_state=0).fit(X)
                except MemoryError as exc:  # refused before it starts: said, not hidden
                    out["fit_memory_refused"] = str(exc)
                else:
                    out["fit_memory"] = time.perf_counter() - t
                    out["fit_equal"] = all(ta == tb for ta, tb in zip(a.trees_, b.trees_))
            workers = client.run(_peak_mib)
            out["worker_peak"] = max(workers.values())
        out["driver_peak"] = _peak_mib()
    print(json.dumps(out))


def _run(n, fit_max):
    proc = subprocess.run(
        [sys.executable, __file__, "--case", str(n), "--fit-max", str(fit_max)],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = [ln for ln in proc.stderr.strip().splitlines() if not ln.startswith("INFO")][-3:]
        print(f"  n={n} failed: {tail}", flush=True)
        return None
    return json.loads(lines[-1])


def _slope(rows, key):
    rows = [r for r in rows if r.get(key)]
    if len(rows) < 2:
        return float("nan")
    return float(np.polyfit(np.log([r["n"] for r in rows]), np.log([r[key] for r in rows]), 1)[0])


def main(sizes, fit_max):
    rows = []
    for n in sizes:
        r = _run(n, fit_max)
        if r is None:
            break
        rows.append(r)
        print(json.dumps(r), flush=True)
    print()
    head = (f"{'rows':>9} | {'gather s':>8} {'us/row':>7} | {'score s':>8} {'us/row':>7} | "
            f"{'feat s':>8} {'us/row':>7} | {'driver MiB':>10} {'worker MiB':>10} | "
            f"{'fit dask/mem':>12} {'equal':>5}")  # fmt: skip
    print(head)
    print("-" * len(head))
    for r in rows:
        n = r["n"]
        feat = (f"{r['features']:8.1f} {1e6 * r['features'] / n:7.1f}" if r.get("features")
                else f"{'refused':>8} {'':>7}")  # fmt: skip
        fit = (f"{r['fit_dask'] / r['fit_memory']:12.2f} {r['fit_equal']!s:>5}"
               if "fit_memory" in r else f"{'':>12} {'':>5}")  # fmt: skip
        print(f"{n:>9d} | {r['gather']:8.1f} {1e6 * r['gather'] / n:7.1f} | {r['score']:8.1f} "
              f"{1e6 * r['score'] / n:7.1f} | {feat} | {r['driver_peak']:10.0f} "
              f"{r['worker_peak']:10.0f} | {fit}")  # fmt: skip
    for key in ("gather", "score", "features", "driver_peak", "worker_peak"):
        print(f"{key}: ~ n^{_slope(rows, key):.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", default=None)
    parser.add_argument("--fit-max", type=int, default=5_000)
    parser.add_argument("--case", type=int, default=None)
    args = parser.parse_args()
    if args.case is not None:
        _case(args.case, args.fit_max)
    else:
        sizes = SIZES[:2] if args.quick else SIZES
        if args.sizes:
            sizes = [int(s) for s in args.sizes.split(",")]
        main(sizes, args.fit_max)
