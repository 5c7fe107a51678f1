"""Benchmark: memory of the paraproduct decomposition, as a multiple of its input.

Each case runs in its own subprocess, so that the figures are its own: the peak of the
Python allocations during the call (``tracemalloc``, which sees NumPy's buffers), what the
result keeps afterwards, and the rise of the resident high-water mark (``ru_maxrss``), each
divided by the size of the float64 input matrix.

    python benchmarks/bench_memory.py              # 512, 1024 and 2048, with and without terms
    python benchmarks/bench_memory.py 2048_sums
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time

CASES = {
    "512_sums": (512, False),
    "512_terms": (512, True),
    "1024_sums": (1024, False),
    "2048_sums": (2048, False),
}


def run_case(name):
    import tracemalloc

    import numpy as np

    from skorg.transforms import paraproduct_decomposition

    n, keep = CASES[name]
    f = np.random.default_rng(0).standard_normal((n, n)) * 4.0
    paraproduct_decomposition(f[:64, :64], "softmax")  # imports and first calls outside
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    tracemalloc.start()
    start = time.perf_counter()
    result = paraproduct_decomposition(f, "softmax", keep_terms=keep)
    seconds = time.perf_counter() - start
    kept, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base_rss
    del result
    return {
        "case": name,
        "input_MiB": f.nbytes / 2**20,
        "peak_x_input": peak / f.nbytes,
        "kept_x_input": kept / f.nbytes,
        "rss_rise_x_input": rss / f.nbytes,
        "seconds": seconds,
    }


def main(argv):
    if len(argv) == 2 and argv[0] == "--case":
        print(json.dumps(run_case(argv[1])))
        return
    names = argv or list(CASES)
    print(f"{'case':<12}{'input MiB':>10}{'peak x':>8}{'kept x':>8}{'RSS rise x':>12}{'s':>7}")
    for name in names:
        out = subprocess.run(
            [sys.executable, __file__, "--case", name], capture_output=True, text=True, check=True
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"{r['case']:<12}{r['input_MiB']:>10.0f}{r['peak_x_input']:>8.1f}"
            f"{r['kept_x_input']:>8.1f}{r['rss_rise_x_input']:>12.1f}{r['seconds']:>7.1f}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
