"""
Head specialization: the effective dynamics
===========================================

The ``D -> infinity`` limit of online SGD on the single-location task is a flow on a few order
parameters (see the user guide, *The effective dynamics of head specialization*). This example

1. compares SGD at several ``D`` with the flow started from the same order parameters (one
   head, spike prior): the distance shrinks as ``D`` grows;
2. runs the reviewers' test on the flow (F = 3, H = 8, centred Gaussian prior with variances
   3 > 2 > 1, learning rates 1 and 0.01): how often ``tau_1 < tau_2 < tau_3`` holds, with Wilson
   intervals, and the excursions;
3. the falsifier: the onset and the delay of the second direction against ``log D``, on the flow
   from initializations drawn at ``D = 10^2 ... 10^6``;
4. softmax against Bayes-softmax: the participation ratio of the learned heads.

The default run is small (a few minutes on a loaded CPU); ``--full`` runs 100 initializations.
"""

import argparse
import dataclasses
import time

import numpy as np
import torch

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
)

SMALL = dict(n_init=10, tau_max=25.0, n_samples=128, dims=(100, 10_000, 1_000_000), scale_init=6)
FULL = dict(
    n_init=100,
    tau_max=40.0,
    n_samples=256,
    dims=(100, 1000, 10_000, 100_000, 1_000_000),
    scale_init=20,
)
# the test suite's run: every step of the example at toy sizes (seconds, no conclusions)
TINY = dict(n_init=2, tau_max=1.0, n_samples=16, dims=(100, 1000), scale_init=6)
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


def reviewers_test(cfg, normalization="softmax"):
    res = run_flow_specialization_test(
        variances=VARIANCES,
        n_init=cfg["n_init"],
        tau_max=cfg["tau_max"],
        n_samples=cfg["n_samples"],
        learning_rates=(1.0, 0.01),
        normalization=normalization,
        dim=10_000,
    )
    print(f"\n[2] reviewers' test on the flow, {normalization}, D = 10^4 initializations")
    print(res.summary())
    return res


def log_d_scaling(cfg):
    print("\n[3] onset and delay of the second direction against log D (flow, lr 1)")
    rows = []
    for dim in cfg["dims"]:
        task = SingleLocationTask(GaussianPrior(VARIANCES), dim=dim, noise=0.1)
        start = random_initial_order(task, 8, cfg["scale_init"], random_state=1)
        flows = integrate_flow(
            start,
            task,
            t_max=cfg["tau_max"],
            learning_rate=1.0,
            value_learning_rate=0.2,
            record_every=0.25,
            n_samples=cfg["n_samples"],
            method="RK23",
            rtol=1e-3,
        )
        tau = np.array([specialization_events(f.t, f.m).times for f in flows])
        first = tau[:, 0]
        with np.errstate(invalid="ignore"):  # never captured: inf - inf, undetermined
            delay = tau[:, 1] - tau[:, 0]
        rows.append((dim, np.median(first), np.median(delay)))
        print(
            f"    D={dim:8d}  median tau_1 {np.median(first):6.2f}  "
            f"median tau_2 - tau_1 {np.median(delay):6.2f}"
        )
    rows = np.array(rows)
    ok = np.isfinite(rows[:, 1])
    if ok.sum() >= 2:
        slope = np.polyfit(np.log(rows[ok, 0]), rows[ok, 1], 1)[0]
        print(f"    slope of median tau_1 against log D: {slope:.2f}")
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n")[0])
    parser.add_argument("--full", action="store_true", help="100 initializations (long)")
    parser.add_argument("--tiny", action="store_true", help="toy sizes (the test suite's run)")
    args = parser.parse_args(argv)
    cfg = FULL if args.full else TINY if args.tiny else SMALL
    start = time.perf_counter()
    gaps = theory_against_sgd(**(dict(dims=(32, 64), seeds=1, t_max=0.5) if args.tiny else {}))
    tests = {norm: reviewers_test(cfg, norm) for norm in ("softmax", "bayes_softmax")}
    print("\n[4] participation ratio of the learned heads (1: one direction, 2: a mixture)")
    for norm, res in tests.items():
        for j, lr in enumerate(res.learning_rates):
            pr = res.participation[j]
            print(
                f"    {norm:13s} lr {lr:5.3g}: median {np.nanmedian(pr):.2f}, quartiles "
                f"{np.nanpercentile(pr, 25):.2f}-{np.nanpercentile(pr, 75):.2f}"
            )
    scaling = log_d_scaling(cfg)
    print(f"\ntotal time {time.perf_counter() - start:.1f} s")
    return gaps, tests, scaling


if __name__ == "__main__":
    main()
