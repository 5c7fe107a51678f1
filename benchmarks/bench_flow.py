"""Benchmark: the effective dynamics of head specialization, analytic pass against autograd.

1. One evaluation of the flow's coefficients (risk, gradient and SGD-noise term) for 100
   initializations (F = 3, H = 8, L = 4, 64 token-noise draws x 6 signals), best of several
   repeats, by the reference path (autograd's backward pass, then the noise term recomputed
   from scratch) and by the analytic pass; the ratio is the speed-up.
2. The same flow run end to end (100 initializations, ``tau`` to 10 at learning rate 0.01)
   with each path, and the largest difference of the trajectories.
3. ``--reviewers``: the wall time of the reviewers' run (100 initializations x learning rates
   0.01 and 1, ``tau`` up to 200) with the analytic pass.

    python benchmarks/bench_flow.py               # 1 and 2 (about a minute)
    python benchmarks/bench_flow.py --reviewers   # also 3 (minutes)
"""

import argparse
import time

import numpy as np
import torch

from skorg.specialization import (
    GaussianPrior,
    SingleLocationTask,
    _flow,
    integrate_flow,
    random_initial_order,
    run_flow_specialization_test,
)
from skorg.specialization._gradient import _evaluate
from skorg.specialization._montecarlo import _Draws, _risk_core_autograd, _sgd_noise
from skorg.specialization._population import _pack

VARIANCES = (3.0, 2.0, 1.0)


def _reference(omega, T, b, draws, normalization, noise, *, grad=False, noise_term=False):
    """The path the flow used before the analytic pass: autograd, then the noise separately."""
    risk, se, grads = _risk_core_autograd(omega, T, b, draws, normalization, noise, grad=grad)
    N = None
    if noise_term:
        args = (torch.from_numpy(x) for x in (omega, T, b))
        N = _sgd_noise(*args, draws, normalization, noise).numpy()
    return risk, se, grads, N


def _best(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def one_evaluation(repeats=7):
    task = SingleLocationTask(GaussianPrior(VARIANCES), dim=10_000, noise=0.1)
    # a state past the start: keys and values of order one, biases non-zero
    order = random_initial_order(task, 8, 100, key_scale=0.5, value_scale=0.3, random_state=0)
    omega, T, b, _ = _pack(order, task)
    b = np.random.default_rng(1).standard_normal(b.shape)
    draws = _Draws(task, 8, 64, 0)
    print("[1] one evaluation, 100 inits (risk + gradient + SGD noise), best of", repeats)
    for norm in ("softmax", "softmax1", "bayes_softmax"):
        kw = dict(grad=True, noise_term=True)
        old = _best(lambda: _reference(omega, T, b, draws, norm, 0.1, **kw), repeats)  # noqa: B023
        new = _best(lambda: _evaluate(omega, T, b, draws, norm, 0.1, **kw), repeats)  # noqa: B023
        print(
            f"    {norm:13s} autograd {old * 1e3:7.1f} ms  analytic {new * 1e3:7.1f} ms  "
            f"speed-up {old / new:5.2f}x"
        )


def end_to_end(tau_max=10.0, n_init=100):
    task = SingleLocationTask(GaussianPrior(VARIANCES), dim=10_000, noise=0.1)
    start = random_initial_order(task, 8, n_init, random_state=0)
    lr = 0.01
    kw = dict(
        t_max=tau_max / lr,
        learning_rate=lr,
        value_learning_rate=0.2 * lr,
        record_every=1.0 / lr,
        n_samples=64,
        method="midpoint",
        step=0.25 / lr,
        fresh_draws=True,
        progress=False,
    )
    print(f"[2] the flow end to end: {n_init} inits, tau to {tau_max:g}, lr {lr}")
    seconds, runs = {}, {}
    for name, fn in (("autograd", _reference), ("analytic", _evaluate)):
        _flow._evaluate = fn
        t0 = time.perf_counter()
        runs[name] = integrate_flow(start, task, **kw)
        seconds[name] = time.perf_counter() - t0
    _flow._evaluate = _evaluate
    gap = max(np.abs(a.m - b.m).max() for a, b in zip(*runs.values(), strict=True))
    print(
        f"    autograd {seconds['autograd']:6.1f} s  analytic {seconds['analytic']:6.1f} s  "
        f"speed-up {seconds['autograd'] / seconds['analytic']:5.2f}x  "
        f"max |m_autograd - m_analytic| = {gap:.1e}"
    )


def reviewers(tau_max=200.0):
    t0 = time.perf_counter()
    res = run_flow_specialization_test(
        variances=VARIANCES,
        n_init=100,
        learning_rates=(0.01, 1.0),
        tau_max=tau_max,
        progress=False,
    )
    print(
        f"[3] the reviewers' run (100 inits x lr 0.01 and 1, tau to {tau_max:g}): "
        f"{time.perf_counter() - t0:.0f} s"
    )
    print(res.summary())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n")[0])
    parser.add_argument("--reviewers", action="store_true", help="also the reviewers' run")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    one_evaluation()
    end_to_end()
    if args.reviewers:
        reviewers()


if __name__ == "__main__":
    main()
