"""Benchmark of the tree Haar transforms against a dense-basis einsum baseline.

Run with ``python benchmarks/bench_haar.py``. Cases: the 1-D transform of every row and the
bi-Haar transform of a 512 x 512 matrix, and the tri-Haar transform of a 256 x 256 x 128
tensor, forward and inverse. The baseline forms the dense orthonormal basis of every tree and
contracts it with ``numpy.einsum(..., optimize=True)`` (BLAS). Times are the best of a few
runs after a warm-up (JIT compiled first); peak memory is the peak traced by ``tracemalloc``
of NumPy allocations in the call (the kernels allocate through NumPy).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from skorg.transforms import (  # noqa: E402
    haar_basis,
    haar_transform,
    inverse_haar_transform,
    inverse_multi_haar_transform,
    multi_haar_transform,
)
from skorg.trees import dyadic_tree  # noqa: E402


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


def measure(func, repeat=3):
    func()
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
    tracemalloc.start()
    func()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return best, peak


def main():
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
