"""Scaling of QuestionnaireOrganizer with the number of rows: dense versus sparse path.

Run ``python benchmarks/bench_scale.py`` (add ``--quick`` for sizes up to 5,000). Each case
runs in a fresh subprocess (JIT and pynndescent compiled first, outside the timing) that
reports wall time and its own peak resident memory. Rows are noisy smooth profiles of 200
columns from ``bench_inputs.smooth_matrix`` (shared/, or an equivalent generator). The dense
path is the baseline: ratios are sparse / dense at the same size, and the agreement columns
compare the row trees: |Spearman| of the row leaf orders of the two paths, and each path's
|Spearman| against the latent row coordinate. The scaling exponent is the least-squares slope
of log time (and log peak memory) against log rows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
N_COLS = 200
# The dense path holds several (n, n) float64 matrices at once (about 6 x 3.2 GB at 20,000
# rows), more than this 24 GB machine can spare next to other work: it stops at 10,000.
DENSE_SIZES = (1_000, 2_000, 5_000, 10_000)
SPARSE_SIZES = (1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000)


def _load_inputs():
    shared = Path(os.environ.get("SKORG_SHARED", ROOT.parent / "shared"))
    path = shared / "bench_inputs.py"
    if path.exists():
        import importlib.util

        spec = importlib.util.spec_from_file_location("bench_inputs", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.smooth_matrix
    return _smooth_matrix


def _smooth_matrix(n_rows, n_cols, seed, noise=0.02, kind="band"):
    """Fallback: a shuffled noisy band matrix with latent row coordinates."""
    rng = np.random.default_rng(seed)
    x, y = np.sort(rng.uniform(0, 1, n_rows)), np.linspace(0, 1, n_cols)
    clean = np.exp(-((x[:, None] - y[None, :]) ** 2) / (2 * 0.08**2))
    perm = rng.permutation(n_rows)
    X = clean[perm] + noise * rng.standard_normal((n_rows, n_cols))
    return {"X": X, "row_latent": x[perm]}


def _case(mode, n):
    """Runs in the subprocess: warm up, fit once, print a JSON line."""
    import resource
    import time

    from scipy.stats import spearmanr

    from skorg import QuestionnaireOrganizer
    from skorg.metrics import knn_indices

    warm = _load_inputs()(600, 40, 1)["X"]
    QuestionnaireOrganizer(affinity_mode=mode, n_iter=1).fit(warm)
    if mode == "sparse" and n > 8192:
        z = np.random.default_rng(0).standard_normal((500, 8)).astype(np.float32)
        for metric in ("euclidean", "manhattan"):
            knn_indices(z, 5, metric=metric, backend="pynndescent")
    data = _load_inputs()(n, N_COLS, 0)
    X, latent = data["X"], data["row_latent"]
    start = time.perf_counter()
    org = QuestionnaireOrganizer(affinity_mode=mode).fit(X)
    elapsed = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10  # MiB
    order = org.row_tree_.leaf_order
    rho = abs(spearmanr(latent[order], np.arange(n))[0])
    print(json.dumps({"mode": mode, "n": n, "time": elapsed, "peak": peak, "rho": rho,
                      "position": org.row_tree_.leaf_position.tolist()}))  # fmt: skip


def _run(mode, n):
    out = subprocess.run(
        [sys.executable, __file__, "--case", mode, str(n)], capture_output=True, text=True,
        cwd=ROOT, check=False,
    )  # fmt: skip
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        print(f"  {mode} n={n} failed: {out.stderr.strip().splitlines()[-1:]}", flush=True)
        return None
    return json.loads(lines[-1])


def _slope(rows, key):
    if len(rows) < 2:
        return float("nan")
    n = np.log([r["n"] for r in rows])
    v = np.log([r[key] for r in rows])
    return float(np.polyfit(n, v, 1)[0])


def main(quick=False):
    from scipy.stats import spearmanr

    dense_sizes = [n for n in DENSE_SIZES if not quick or n <= 5_000]
    sparse_sizes = [n for n in SPARSE_SIZES if not quick or n <= 5_000]
    results = {"dense": {}, "sparse": {}}
    for mode, sizes in (("dense", dense_sizes), ("sparse", sparse_sizes)):
        for n in sizes:
            r = _run(mode, n)
            if r is None:
                break
            results[mode][n] = r
            print(f"  {mode:6s} n={n:>7d}: {r['time']:8.1f} s  {r['peak']:8.0f} MiB", flush=True)
    print()
    header = (
        f"{'rows':>7} | {'dense s':>8} {'MiB':>7} {'rho':>6} | {'sparse s':>8} {'MiB':>7} "
        f"{'rho':>6} | {'t ratio':>7} {'mem ratio':>9} | {'|rho| s-d':>9}"
    )
    print(header)
    print("-" * len(header))
    for n in sorted(set(results["dense"]) | set(results["sparse"])):
        d, s = results["dense"].get(n), results["sparse"].get(n)
        cells = [f"{n:>7d}"]
        cells.append(f"{d['time']:8.1f} {d['peak']:7.0f} {d['rho']:6.3f}" if d else " " * 23)
        cells.append(f"{s['time']:8.1f} {s['peak']:7.0f} {s['rho']:6.3f}" if s else " " * 23)
        if d and s:
            agree = abs(spearmanr(d["position"], s["position"])[0])
            cells.append(f"{s['time'] / d['time']:7.2f} {s['peak'] / d['peak']:9.2f}")
            cells.append(f"{agree:9.3f}")
        else:
            cells.extend([" " * 17, " " * 9])
        print(" | ".join(cells))
    for mode in ("dense", "sparse"):
        rows = [results[mode][n] for n in sorted(results[mode]) if n >= 2_000]
        t_exp, m_exp = _slope(rows, "time"), _slope(rows, "peak")
        print(f"{mode}: time ~ n^{t_exp:.2f}, peak memory ~ n^{m_exp:.2f} (fit over n >= 2000)")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--case":
        _case(sys.argv[2], int(sys.argv[3]))
    else:
        main(quick="--quick" in sys.argv)
