"""Benchmark: tree EMD of a SciPy sparse matrix against the same call on its dense copy.

A 20,000 x 1,000 matrix with 1% nonzeros (scanpy-like counts are sparser still), the distances
between its columns on a dyadic tree of its rows. Each case runs in its own process: the JIT is
warmed on a small input first, then the call runs three times; it prints the best time, the
rise of the peak resident memory over the process's state before the calls (the sparse input
already built), and a checksum that must agree between the two.

    python benchmarks/bench_sparse_input.py           # both cases, one process each
    python benchmarks/bench_sparse_input.py sparse    # one case, in this process
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time

import numpy as np
import scipy.sparse as sp

from skorg.metrics import tree_emd
from skorg.trees import dyadic_tree

N_ROWS, N_COLS, DENSITY = 20_000, 1_000, 0.01


def run(case):
    S = sp.random(N_ROWS, N_COLS, density=DENSITY, format="csr", random_state=0)
    tree = dyadic_tree(N_ROWS)
    small = sp.random(64, 32, density=0.1, format="csr", random_state=1)
    tree_emd(small, dyadic_tree(64))  # compile both paths, not timed
    tree_emd(small.toarray(), dyadic_tree(64))
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    best = np.inf
    for _ in range(3):
        start = time.perf_counter()
        D = tree_emd(S if case == "sparse" else S.toarray(), tree)
        best = min(best, time.perf_counter() - start)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        f"{case:>6}: best of 3 {best:6.2f} s, peak rise {(peak - base) / 1024:5.0f} MB, "
        f"checksum {D.sum():.10e}"
    )


if __name__ == "__main__":
    if len(sys.argv) > 1:
        run(sys.argv[1])
    else:
        for case in ("sparse", "dense"):
            subprocess.run([sys.executable, __file__, case], check=True)
