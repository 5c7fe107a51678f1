"""Scaling of QuestionnaireOrganizer with the number of rows, on simulated sparse counts.

Run ``python benchmarks/bench_scale.py`` (``--quick``: up to 5,000 rows; ``--sizes 1000,20000``
for chosen sizes; ``--cols 2000``). The data are cells x genes counts of the kind scanpy users
bring (:func:`simulated_counts`): 12 cell types with their own gene rates (a log-normal base
rate times a log-normal fold of sigma 1 per type and gene), log-normal library
sizes, Poisson counts scaled to 4.5% non-zero, CSR.

Each case runs in a fresh subprocess (the compiled kernels warmed up first, outside the
timing) that reports ``QuestionnaireOrganizer(random_state=0).fit(X)``'s wall and CPU time
(all threads; less sensitive to a busy machine), its own peak resident memory, the path of
each axis (chosen by predicted time and memory), the k-NN recall (the row axis's final
tree-EMD features, searched as the fit searches them, against the exact search on 256
sampled rows) and the ARI of the row tree cut into 12 folders
against the simulated types. Beside it, where the condensed distances fit (up to 20,000
rows), SciPy's average linkage (cosine) and Ward on the same log1p-normalized rows, timed in
the same subprocess. The scaling exponents are least-squares slopes of log time and log peak
memory against log rows, over the sizes on the k-NN path. Timings on a shared machine are
noisy: compare ratios from one run. Each case's JSON line is also appended to
``<tempdir>/skorg_bench_scale.jsonl``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
N_COLS = 2000
N_TYPES = 12
SIZES = (1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000)
# SciPy's linkage needs the n (n - 1) / 2 condensed distances (1.6 GB at 20,000 rows)
BASELINE_MAX = 20_000


def simulated_counts(n_rows, n_cols=N_COLS, n_types=N_TYPES, density=0.045, seed=0):
    """Sparse counts of ``n_types`` cell types: ``(X, labels)``, X a CSR float64 matrix.

    Row ``i`` of type ``t`` is Poisson with rates ``s * lib_i * p_t``: ``p_t`` the type's gene
    profile (a log-normal base rate times a log-normal fold of sigma 1, drawn per type and
    gene), ``lib_i`` log-normal (sigma 0.5) and ``s`` set so that the expected fraction
    of non-zero entries is ``density``. Generated a block of 5,000 rows at a time.
    """
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    base = rng.lognormal(0.0, 1.5, n_cols)
    rates = np.empty((n_types, n_cols))
    for t in range(n_types):
        fold = rng.lognormal(0.0, 1.0, n_cols)  # every gene's rate of its own in each type
        rates[t] = base * fold / np.sum(base * fold)
    labels = rng.integers(0, n_types, n_rows)
    lib = rng.lognormal(0.0, 0.5, n_rows)
    probe = min(n_rows, 2000)

    def nonzero_fraction(scale):
        lam = scale * lib[:probe, None] * rates[labels[:probe]]
        return float(np.mean(-np.expm1(-lam)))

    lo, hi = 1.0, 1e7
    for _ in range(60):  # bisection on the log scale
        mid = np.sqrt(lo * hi)
        lo, hi = (mid, hi) if nonzero_fraction(mid) < density else (lo, mid)
    scale = np.sqrt(lo * hi)
    blocks = []
    for a in range(0, n_rows, 5000):
        lam = scale * lib[a : a + 5000, None] * rates[labels[a : a + 5000]]
        blocks.append(sp.csr_matrix(rng.poisson(lam).astype(np.float64)))
    return sp.vstack(blocks).tocsr(), labels


def _peak_mib():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10


def _case(n, n_cols, baselines):
    """Runs in the subprocess: warm up, fit once, print a JSON line."""
    import time

    from sklearn.metrics import adjusted_rand_score

    from skorg import QuestionnaireOrganizer, set_config
    from skorg.graphs import knn_indices, l1_knn_recall
    from skorg.organize._preprocess import preprocess_data
    from skorg.organize._sparse import choose_paths, emd_feature_blocks

    set_config(progress=False)
    warm, _ = simulated_counts(600, 60, seed=1)
    QuestionnaireOrganizer(n_iter=1).fit(warm)
    QuestionnaireOrganizer(n_iter=1, affinity_mode="sparse", random_state=0).fit(warm)
    z = np.random.default_rng(0).random((9000, 16)).astype(np.float32)
    knn_indices(z, 5, metric="manhattan")  # the descent's kernels, float32 and float64
    knn_indices(z.astype(np.float64), 5, metric="manhattan")
    X, labels = simulated_counts(n, n_cols)
    base_mib = _peak_mib()
    start, cpu = time.perf_counter(), time.process_time()
    org = QuestionnaireOrganizer(random_state=0).fit(X)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = _peak_mib()
    paths, reasons = choose_paths(X.shape)
    out = {
        "n": n, "time": elapsed, "cpu": cpu, "peak": peak, "peak_before_fit": base_mib,
        "paths": ["k-NN" if p else "dense" for p in paths], "reason": reasons[0],
        "ari": adjusted_rand_score(labels, org.row_tree_.cut(N_TYPES)),
        "methods": [h["method"] for h in org.history_ if h["axis"] == 0],
    }  # fmt: skip
    Xp, _ = preprocess_data(X, "auto")
    if paths[0]:  # the recall of the fit's last row search, on its features
        top = float(np.abs(Xp.data).max())
        Xe = Xp * 2.0 ** -np.ceil(np.log2(top) + 1e-12)
        p = org.params_ if hasattr(org, "params_") else {}
        alpha = p.get("emd_alpha", 0.0) if isinstance(p, dict) else 0.0
        beta = p.get("emd_beta", 1.0) if isinstance(p, dict) else 1.0
        F = emd_feature_blocks(Xe, [None, org.column_tree_], 0, [alpha] * 2, [beta] * 2)
        idx = knn_indices(F, 15, metric="manhattan", random_state=0)
        out["recall"] = l1_knn_recall(F, idx, n_samples=256, random_state=0)
        del F
    if baselines:
        from scipy.cluster.hierarchy import fcluster, linkage

        rows = Xp.toarray()
        for name, method, metric in (
            ("average_cosine", "average", "cosine"),
            ("ward", "ward", "euclidean"),
        ):
            start = time.perf_counter()
            Z = linkage(rows, method=method, metric=metric)
            out[f"{name}_time"] = time.perf_counter() - start
            out[f"{name}_ari"] = adjusted_rand_score(labels, fcluster(Z, N_TYPES, "maxclust"))
            del Z
    line = json.dumps(out)
    print(line)
    import tempfile

    # every case also appended here, so that a long run's finished cases survive it
    with open(Path(tempfile.gettempdir()) / "skorg_bench_scale.jsonl", "a") as log:
        log.write(line + "\n")


def _run(n, n_cols, baselines):
    cmd = [sys.executable, __file__, "--case", str(n), str(n_cols), str(int(baselines))]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        print(f"  n={n} failed: {out.stderr.strip().splitlines()[-1:]}", flush=True)
        return None
    return json.loads(lines[-1])


def _slope(rows, key):
    if len(rows) < 2:
        return float("nan")
    n = np.log([r["n"] for r in rows])
    v = np.log([r[key] for r in rows])
    return float(np.polyfit(n, v, 1)[0])


def main(sizes, n_cols):
    results = []
    for n in sizes:
        r = _run(n, n_cols, n <= BASELINE_MAX)
        if r is None:
            continue
        results.append(r)
        print(f"  n={n:>7d}: {r['time']:8.1f} s {r['peak']:8.0f} MiB  {r['paths']}  "
              f"{r['reason']}", flush=True)  # fmt: skip
    print()
    header = (
        f"{'rows':>7} | {'path':>5} {'time s':>8} {'cpu s':>7} {'peak MiB':>8} {'s/1k rows':>9} "
        f"{'recall':>6} {'ARI':>6} | {'avg-cos s':>9} {'ARI':>6} | {'Ward s':>7} {'ARI':>6}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        per_1k = 1000 * r["time"] / r["n"]
        cells = [
            f"{r['n']:>7d}",
            f"{r['paths'][0]:>5} {r['time']:8.1f} {r['cpu']:7.1f} {r['peak']:8.0f} {per_1k:9.2f} "
            f"{r.get('recall', float('nan')):6.3f} {r['ari']:6.3f}",
        ]
        if "ward_time" in r:
            cells.append(f"{r['average_cosine_time']:9.1f} {r['average_cosine_ari']:6.3f}")
            cells.append(f"{r['ward_time']:7.1f} {r['ward_ari']:6.3f}")
        print(" | ".join(cells))
    knn = [r for r in results if r["paths"][0] == "k-NN"]
    print(
        f"k-NN path (n = {[r['n'] for r in knn]}): time ~ n^{_slope(knn, 'time'):.2f}, "
        f"CPU time ~ n^{_slope(knn, 'cpu'):.2f}, peak memory ~ n^{_slope(knn, 'peak'):.2f}"
    )
    return results


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--case":
        _case(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1")
    else:
        args = sys.argv[1:]
        sizes = [n for n in SIZES if "--quick" not in args or n <= 5_000]
        if "--sizes" in args:
            sizes = [int(v) for v in args[args.index("--sizes") + 1].split(",")]
        cols = int(args[args.index("--cols") + 1]) if "--cols" in args else N_COLS
        main(sizes, cols)
