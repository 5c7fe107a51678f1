"""
Head specialization: the effective dynamics
===========================================

The ``D -> infinity`` limit of online SGD on the single-location task is a flow on a few order
parameters (see the user guide, *The effective dynamics of head specialization*). This example

1. compares SGD at several ``D`` with the flow started from the same order parameters (one
   head, spike prior): the distance shrinks as ``D`` grows;
2. runs the reviewers' test on the flow (F = 3, H = 8, centred Gaussian prior with variances
   3 > 2 > 1, learning rates 0.01 and 1, ``tau_f`` = first ``tau = lr t`` with
   ``||m_{:,f}|| > 1``): how often ``tau_1 < tau_2 < tau_3`` holds, with Wilson intervals,
   and the excursions, for softmax and Bayes-softmax;
3. the participation ratio of the learned heads (one direction or a mixture);
4. the unspecialized phase (a prior with a mean) and the specialization onset and the delay
   of the second direction against ``log D``, on the flow from initializations drawn at
   ``D = 10^2 ... 10^4``, with a least-squares fit and its 95% interval.

The default run takes about half an hour on a shared two-core machine; ``--full`` runs 100
initializations (the reviewers' size, about an hour more); ``--tiny`` is the test suite's run.
"""

import argparse
import dataclasses
import time

import numpy as np
import torch
from scipy import stats

from skorg.specialization import (
    AttentionRegressor,
    GaussianPrior,
    OrderParameters,
    SingleLocationTask,
    integrate_flow,
    order_parameters,
    random_initial_order,
    run_flow_specialization_test,
    specialization_events,
    spike_prior,
    train_online,
    unspecialized_time,
)

# tau_max: the first capture needs tau ~ 100-150 at D = 10^4 (an escape rate of about 0.04
# per unit of tau from alignments of order 1e-3); n_samples: token-noise draws per step
SMALL = dict(n_init=12, tau_max=250.0, n_samples=64, step=0.25, dims=(100, 1000, 10_000), n_scale=8)
FULL = dict(
    n_init=100, tau_max=250.0, n_samples=64, step=0.25, dims=(100, 1000, 10_000), n_scale=24
)
# the test suite's run: every step of the example at toy sizes (seconds, no conclusions)
TINY = dict(n_init=2, tau_max=1.0, n_samples=8, step=0.5, dims=(100, 1000), n_scale=2)
VARIANCES = (3.0, 2.0, 1.0)


def theory_against_sgd(dims=(64, 256, 1024), seeds=4, t_max=3.0):
    print("\n[1] SGD against the flow from the same start (1 head, spike prior, lr 0.5)")
    out = {}
    for dim in dims:
        task = SingleLocationTask(spike_prior([2.0]), dim=dim, noise=0.1)
        models = [
            AttentionRegressor(dim, 1, key_scale=0.5, random_state=s, dtype=torch.float64)
            for s in range(seeds)
        ]
        orders = [order_parameters(m, task) for m in models]
        start = OrderParameters(
            *(
                np.stack([getattr(o, f.name) for o in orders])
                for f in dataclasses.fields(OrderParameters)
            )
        )
        flows = integrate_flow(
            start, task, t_max=t_max, learning_rate=0.5, record_every=0.5, n_samples=2048
        )
        hists = train_online(models, task, t_max=t_max, learning_rate=0.5, record_every=0.5)
        gap = [np.abs(h.m - f.m).max() for h, f in zip(hists, flows, strict=True)]
        out[dim] = (np.mean(gap), np.std(gap) / np.sqrt(seeds))
        print(f"    D={dim:5d}  max_t |m_SGD - m_flow| = {out[dim][0]:.4f} +- {out[dim][1]:.4f}")
    return out


def reviewers_test(cfg, normalization="softmax", n_init=None):
    res = run_flow_specialization_test(
        variances=VARIANCES,
        n_init=n_init or cfg["n_init"],
        tau_max=cfg["tau_max"],
        n_samples=cfg["n_samples"],
        step=cfg["step"],
        learning_rates=(0.01, 1.0),
        normalization=normalization,
        dim=10_000,
        record_every=1.0,
        keep_trajectories=True,
    )
    print(f"\n[2] reviewers' test on the flow, {normalization}, D = 10^4 initializations")
    print(res.summary())
    return res


def _fit(dims, values):
    """Least-squares slope of ``values`` against ``log D`` with its 95% t interval."""
    x = np.log(np.repeat(dims, [len(v) for v in values]))
    y = np.concatenate(values)
    ok = np.isfinite(y)
    if ok.sum() < 3 or np.unique(x[ok]).size < 2:
        return np.nan, np.nan, np.nan
    fit = stats.linregress(x[ok], y[ok])
    half = stats.t.ppf(0.975, ok.sum() - 2) * fit.stderr
    return fit.slope, fit.slope - half, fit.slope + half


def log_d_scaling(cfg):
    print("\n[4] against log D (flow, lr 0.01, tau = lr t; initializations drawn at each D)")
    lr, rows = 0.01, {}
    for dim in cfg["dims"]:
        kw = dict(
            t_max=cfg["tau_max"] / lr,
            learning_rate=lr,
            value_learning_rate=0.2 * lr,
            record_every=1.0 / lr,
            n_samples=cfg["n_samples"],
            method="midpoint",
            step=cfg["step"] / lr,
            fresh_draws=True,
        )
        task = SingleLocationTask(GaussianPrior(VARIANCES), dim=dim, noise=0.1)
        start = random_initial_order(task, 8, cfg["n_scale"], random_state=1)
        flows = integrate_flow(start, task, **kw)
        tau = np.array([specialization_events(lr * f.t, f.m).times for f in flows])
        with np.errstate(invalid="ignore"):  # never captured: inf - inf, undetermined
            delay = tau[:, 1] - tau[:, 0]
        # the unspecialized phase needs a mean signal: the same prior shifted along e_1
        shifted = SingleLocationTask(
            GaussianPrior(VARIANCES, mean=(1.5, 0.0, 0.0)), dim=dim, noise=0.1
        )
        kw_short = dict(kw, t_max=min(20.0, cfg["tau_max"]) / lr, record_every=0.25 / lr)
        flows_mean = integrate_flow(start, shifted, **kw_short)
        unspec = np.array(
            [unspecialized_time(lr * f.t, f.m, shifted.prior.mean) for f in flows_mean]
        )
        rows[dim] = dict(tau1=tau[:, 0], tau2=tau[:, 1], delay=delay, unspecialized=unspec)
        captured = np.isfinite(tau).sum(axis=0)
        print(
            f"    D={dim:6d}  captured (f=1,2,3) {captured.tolist()} of {len(flows)}  "
            f"median tau_1 {np.median(tau[:, 0]):7.2f}  tau_2 {np.median(tau[:, 1]):7.2f}  "
            f"tau_2 - tau_1 {np.median(delay):7.2f}  unspecialized {np.median(unspec):6.2f}"
        )
    dims = list(rows)
    for key in ("unspecialized", "tau1", "tau2", "delay"):
        slope, lo, hi = _fit(dims, [rows[d][key] for d in dims])
        print(f"    slope of {key:13s} against log D: {slope:7.2f}  [95%: {lo:.2f}, {hi:.2f}]")
    return rows


def plot(tests, rows):
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: figures skipped")
        return
    res = tests["softmax"]
    _, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for j, lr in enumerate(res.learning_rates):
        flow = res.trajectories[j][0]
        for f in range(flow.m.shape[2]):
            axes[j].plot(lr * flow.t, np.linalg.norm(flow.m[:, :, f], axis=1), label=f"f={f + 1}")
        axes[j].axhline(1.0, color="grey", lw=0.5)
        axes[j].set(title=f"softmax, lr {lr:g}", xlabel="tau = lr t", ylabel="||m_{:,f}||")
        axes[j].legend()
    _, ax = plt.subplots(figsize=(5, 3.6))
    for key in ("tau1", "tau2"):
        med = [np.median(rows[d][key]) for d in rows]
        ax.semilogx(list(rows), med, "o-", label=f"median {key}")
    ax.set(xlabel="D", ylabel="tau", title="specialization against D (flow, lr 0.01)")
    ax.legend()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n")[0])
    parser.add_argument("--full", action="store_true", help="100 initializations (long)")
    parser.add_argument("--tiny", action="store_true", help="toy sizes (the test suite's run)")
    args = parser.parse_args(argv)
    cfg = FULL if args.full else TINY if args.tiny else SMALL
    start = time.perf_counter()
    gaps = theory_against_sgd(**(dict(dims=(32, 64), seeds=1, t_max=0.5) if args.tiny else {}))
    tests = {
        "softmax": reviewers_test(cfg, "softmax"),
        # a smaller Bayes-softmax run: it is there for the participation ratio
        "bayes_softmax": reviewers_test(cfg, "bayes_softmax", n_init=cfg["n_scale"]),
    }
    print("\n[3] participation ratio of the learned heads (1: one direction, 2: a mixture)")
    for norm, res in tests.items():
        for j, lr in enumerate(res.learning_rates):
            pr = res.participation[j]
            print(
                f"    {norm:13s} lr {lr:5.3g}: median {np.nanmedian(pr):.2f}, quartiles "
                f"{np.nanpercentile(pr, 25):.2f}-{np.nanpercentile(pr, 75):.2f}"
            )
    scaling = log_d_scaling(cfg)
    plot(tests, scaling)
    print(f"\ntotal time {time.perf_counter() - start:.1f} s")
    return gaps, tests, scaling


if __name__ == "__main__":
    main()
