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
   the violations, the excursions and the captures per direction; at 0.01 to a horizon long
   enough for the third direction;
3. softmax against Bayes-softmax: the participation ratio of the learned heads in runs that
   learned two or more directions (one direction or a mixture), with bootstrap intervals;
4. the unspecialized phase (a prior with a mean), the specialization onset and the delays of
   the second and third directions against ``log D``, on the flow from initializations drawn at
   ``D = 10^2 ... 10^4``, with least-squares slopes and their 95% intervals;
5. learning rate 1: the flow against finite-``D`` SGD from the same starts (is the SGD-noise
   domination real?).

``--part`` runs one section (repeatable). On a shared two-core machine the default run takes
about twenty minutes; ``--full`` is the reviewers' size (100 initializations to ``tau = 2000``:
``--full --part mixture`` took 47 minutes, ``--full --part logd`` about 8); ``--tiny`` is the
test suite's run.
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
    model_risk,
    order_parameters,
    participation_ratio,
    random_initial_order,
    run_flow_specialization_test,
    specialization_events,
    spike_prior,
    train_online,
    unspecialized_time,
    wilson_interval,
)

# tau_long: the horizon at lr 0.01 (the first capture needs tau ~ 150-180 at D = 10^4, the
# second two to three times longer); tau_lr1: at lr 1; n_samples: token-noise draws per step
SMALL = dict(
    n_init=12, tau_long=600.0, tau_lr1=200.0, n_samples=64, step=0.25, n_bayes=12,
    dims=(100, 1000, 10_000), n_scale=8, tau_scale=600.0,
    sgd_dims=(250, 1000), sgd_seeds=2, sgd_t=20.0,
)  # fmt: skip
FULL = dict(
    SMALL, n_init=100, tau_long=2000.0, n_bayes=16, n_scale=16,
    sgd_dims=(250, 1000, 4000), sgd_seeds=4,
)  # fmt: skip
# the test suite's run: every step of the example at toy sizes (seconds, no conclusions)
TINY = dict(
    n_init=2, tau_long=1.0, tau_lr1=1.0, n_samples=8, step=0.5, n_bayes=2,
    dims=(100, 1000), n_scale=2, tau_scale=1.0, sgd_dims=(32, 64), sgd_seeds=1, sgd_t=0.5,
)  # fmt: skip
VARIANCES = (3.0, 2.0, 1.0)
PARTS = ("theory", "table", "mixture", "logd", "lr1")


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


def reviewers_test(cfg, normalization="softmax", n_init=None, rates=(0.01, 1.0)):
    """The reviewers' table: lr 0.01 to ``tau_long``, lr 1 to ``tau_lr1``."""
    n_init = n_init or cfg["n_init"]
    print(
        f"\n[2] reviewers' test on the flow, {normalization}, {n_init} initializations at D = 10^4"
    )
    out = {}
    for lr in rates:
        tau_max = cfg["tau_long"] if lr < 1 else cfg["tau_lr1"]
        start = time.perf_counter()
        res = run_flow_specialization_test(
            variances=VARIANCES, n_init=n_init, tau_max=tau_max, n_samples=cfg["n_samples"],
            step=cfg["step"], learning_rates=(lr,), normalization=normalization, dim=10_000,
            record_every=1.0, keep_trajectories=lr < 1,
        )  # fmt: skip
        print(f"    lr {lr:g}, tau to {tau_max:g} ({time.perf_counter() - start:.0f} s)")
        print(res.summary())
        tau = res.tau[0]
        bad = np.flatnonzero(res.outcomes[0] == -1)
        for i in bad[:5]:
            print(f"    violation: init {i}, tau_f = {np.round(tau[i], 1).tolist()}")
        if lr < 1:
            captured = np.isfinite(tau)
            for f in range(tau.shape[1]):
                if captured[:, f].any():
                    q = np.percentile(tau[captured[:, f], f], [25, 50, 75])
                    print(f"    tau_{f + 1}: captured {captured[:, f].sum()} of {n_init}, "
                          f"quartiles {q[0]:.1f} / {q[1]:.1f} / {q[2]:.1f}")  # fmt: skip
        print(f"    final risk: median {np.median(res.final_risk):.3f}")
        out[lr] = res
    return out


def _bootstrap_mean(x, rng, n_boot=2000):
    x = np.asarray(x, dtype=np.float64)
    if x.size < 2:
        return np.nan, np.nan
    means = rng.choice(x, size=(n_boot, x.size)).mean(axis=1)
    return tuple(np.percentile(means, [2.5, 97.5]))


def mixture_measure(tests, min_norm=0.5):
    """Participation ratio of the learned heads once two or more directions are learned."""
    print("\n[3] participation ratio of the learned heads (1: one direction, 2: a mixture)")
    print(f"    runs at lr 0.01 that captured >= 2 directions; heads with ||m_h|| >= {min_norm}")
    rng = np.random.default_rng(0)
    out = {}
    for norm, res in tests.items():
        flows = res[0.01].trajectories[0]
        tau = res[0.01].tau[0]
        per_run, heads = [], []
        for flow, t in zip(flows, tau, strict=True):
            if np.isfinite(t).sum() < 2:
                continue
            m = flow.m[-1]
            learned = np.linalg.norm(m, axis=1) >= min_norm
            if learned.any():
                pr = participation_ratio(m[learned])
                per_run.append(pr.mean())
                heads.extend(pr.tolist())
        heads = np.asarray(heads)
        if not per_run:
            print(f"    {norm:13s}: no run captured two directions")
            continue
        lo, hi = _bootstrap_mean(per_run, rng)
        mixed = int(np.sum(heads > 1.5))
        wlo, whi = wilson_interval(mixed, heads.size)
        print(
            f"    {norm:13s}: {len(per_run)} runs, {heads.size} heads; mean PR per run "
            f"{np.mean(per_run):.2f} [95% bootstrap {lo:.2f}, {hi:.2f}]; heads with PR > 1.5: "
            f"{mixed} of {heads.size} [Wilson {wlo:.2f}, {whi:.2f}]"
        )
        out[norm] = dict(per_run=np.asarray(per_run), heads=heads)
    return out


def _fit(dims, values):
    """Least-squares slope of ``values`` against ``log D`` with its 95% t interval."""
    x = np.log(np.repeat(dims, [len(v) for v in values]))
    y = np.concatenate(values)
    ok = np.isfinite(y)
    if ok.sum() < 3 or np.unique(x[ok]).size < 2:
        return np.nan, np.nan, np.nan, int(ok.sum())
    fit = stats.linregress(x[ok], y[ok])
    half = stats.t.ppf(0.975, ok.sum() - 2) * fit.stderr
    return fit.slope, fit.slope - half, fit.slope + half, int(ok.sum())


def log_d_scaling(cfg):
    lr = 0.01
    print(f"\n[4] against log D (flow, lr {lr}, tau = lr t to {cfg['tau_scale']:g}; "
          f"{cfg['n_scale']} initializations drawn at each D)")  # fmt: skip
    rows = {}
    for dim in cfg["dims"]:
        kw = dict(
            t_max=cfg["tau_scale"] / lr, learning_rate=lr, value_learning_rate=0.2 * lr,
            record_every=1.0 / lr, n_samples=cfg["n_samples"], method="midpoint",
            step=cfg["step"] / lr, fresh_draws=True,
        )  # fmt: skip
        task = SingleLocationTask(GaussianPrior(VARIANCES), dim=dim, noise=0.1)
        start = random_initial_order(task, 8, cfg["n_scale"], random_state=1)
        flows = integrate_flow(start, task, **kw)
        tau = np.array([specialization_events(lr * f.t, f.m).times for f in flows])
        with np.errstate(invalid="ignore"):  # never captured: inf - inf, undetermined
            delay2, delay3 = tau[:, 1] - tau[:, 0], tau[:, 2] - tau[:, 1]
        # the unspecialized phase needs a mean signal: the same prior shifted along e_1
        shifted = SingleLocationTask(
            GaussianPrior(VARIANCES, mean=(1.5, 0.0, 0.0)), dim=dim, noise=0.1
        )
        kw_short = dict(kw, t_max=min(20.0, cfg["tau_scale"]) / lr, record_every=0.25 / lr)
        flows_mean = integrate_flow(start, shifted, **kw_short)
        unspec = np.array(
            [unspecialized_time(lr * f.t, f.m, shifted.prior.mean) for f in flows_mean]
        )
        rows[dim] = dict(
            tau1=tau[:, 0], tau2=tau[:, 1], tau3=tau[:, 2], delay2=delay2, delay3=delay3,
            unspecialized=unspec,
        )  # fmt: skip
        captured = np.isfinite(tau).sum(axis=0)
        print(
            f"    D={dim:6d}  captured (f=1,2,3) {captured.tolist()} of {len(flows)}  median "
            f"tau_1 {np.median(tau[:, 0]):7.2f}  tau_2 {np.median(tau[:, 1]):7.2f}  tau_3 "
            f"{np.median(tau[:, 2]):7.2f}  tau_2 - tau_1 {np.median(delay2):7.2f}  "
            f"unspecialized {np.median(unspec):6.2f}"
        )
    dims = list(rows)
    for key in ("unspecialized", "tau1", "tau2", "delay2", "tau3", "delay3"):
        slope, lo, hi, used = _fit(dims, [rows[d][key] for d in dims])
        print(
            f"    slope of {key:13s} against log D: {slope:7.2f}  [95%: {lo:.2f}, {hi:.2f}]"
            f"  ({used} captured runs)"
        )
    return rows


def lr1_against_sgd(cfg, n_heads=8, t_max=None):
    """lr 1: SGD at finite D against the flow from the same starts."""
    t_max = t_max or cfg["sgd_t"]
    lr, seeds = 1.0, cfg["sgd_seeds"]
    print(f"\n[5] lr 1 (values 0.2): SGD at finite D against the flow from the same start "
          f"(H = {n_heads}, t to {t_max:g}, {seeds} seeds, risk by model_risk)")  # fmt: skip
    out = {}
    for dim in cfg["sgd_dims"]:
        task = SingleLocationTask(GaussianPrior(VARIANCES), dim=dim, noise=0.1, random_state=0)
        models = [
            AttentionRegressor(dim, n_heads, key_scale=0.1, random_state=s, dtype=torch.float64)
            for s in range(seeds)
        ]
        orders = [order_parameters(m, task) for m in models]
        start = OrderParameters(
            *(
                np.stack([getattr(o, f.name) for o in orders])
                for f in dataclasses.fields(OrderParameters)
            )
        )
        t0 = time.perf_counter()
        hists = train_online(
            models, task, t_max=t_max, learning_rate=lr, value_learning_rate=0.2 * lr,
            batch_size=1, record_every=t_max / 4,
        )  # fmt: skip
        sgd_s = time.perf_counter() - t0
        row = {}
        for label, noise_term in (("flow", True), ("flow, no SGD noise", False)):
            flows = integrate_flow(
                start, task, t_max=t_max, learning_rate=lr, value_learning_rate=0.2 * lr,
                record_every=t_max / 4, n_samples=cfg["n_samples"], method="midpoint",
                step=cfg["step"] / lr, fresh_draws=True, sgd_noise=noise_term,
            )  # fmt: skip
            row[label] = flows
        # the models were trained in place: the Monte Carlo risk of their final weights
        sgd_risk = np.array([model_risk(m, task, 20_000, random_state=1)[0] for m in models])
        qd = {
            "SGD": np.mean([np.diagonal(h.order.q[-1]).mean() for h in hists]),
            **{k: np.mean([np.diagonal(f.order.q[-1]).mean() for f in v]) for k, v in row.items()},
        }
        risks = {
            "SGD": sgd_risk.mean(),
            **{k: np.mean([f.risk[-1] for f in v]) for k, v in row.items()},
        }
        print(f"    D={dim:5d} (SGD {sgd_s:.0f} s): risk at t={t_max:g}  " + "  ".join(
            f"{k} {risks[k]:.3f}" for k in risks) + "  | mean q_hh  " + "  ".join(
            f"{k} {qd[k]:.3f}" for k in qd))  # fmt: skip
        out[dim] = dict(risk=risks, q=qd)
    return out


def plot(tests, rows):
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: figures skipped")
        return
    res = tests["softmax"][0.01]
    _, ax = plt.subplots(figsize=(5, 3.6))
    flow = res.trajectories[0][0]
    for f in range(flow.m.shape[2]):
        ax.plot(0.01 * flow.t, np.linalg.norm(flow.m[:, :, f], axis=1), label=f"f={f + 1}")
    ax.axhline(1.0, color="grey", lw=0.5)
    ax.set(title="softmax, lr 0.01", xlabel="tau = lr t", ylabel="||m_{:,f}||")
    ax.legend()
    if rows:
        _, ax = plt.subplots(figsize=(5, 3.6))
        for key in ("tau1", "tau2", "tau3"):
            med = [np.median(rows[d][key]) for d in rows]
            ax.semilogx(list(rows), med, "o-", label=f"median {key}")
        ax.set(xlabel="D", ylabel="tau", title="specialization against D (flow, lr 0.01)")
        ax.legend()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n")[0])
    parser.add_argument("--full", action="store_true", help="100 initializations (long)")
    parser.add_argument("--tiny", action="store_true", help="toy sizes (the test suite's run)")
    parser.add_argument("--part", action="append", choices=PARTS, help="run only these parts")
    args = parser.parse_args(argv)
    cfg = FULL if args.full else TINY if args.tiny else SMALL
    parts = set(args.part or PARTS)
    torch.set_num_threads(1)
    start = time.perf_counter()
    out = {}
    if "theory" in parts:
        tiny = dict(dims=(32, 64), seeds=1, t_max=0.5) if args.tiny else {}
        out["theory"] = theory_against_sgd(**tiny)
    if parts & {"table", "mixture"}:
        tests = {"softmax": reviewers_test(cfg, "softmax")}
        if "mixture" in parts:
            tests["bayes_softmax"] = reviewers_test(
                cfg, "bayes_softmax", n_init=cfg["n_bayes"], rates=(0.01,)
            )
            out["mixture"] = mixture_measure(tests)
        out["table"] = tests
    if "logd" in parts:
        out["logd"] = log_d_scaling(cfg)
    if "lr1" in parts:
        out["lr1"] = lr1_against_sgd(cfg)
    if "table" in out:
        plot(out["table"], out.get("logd"))
    print(f"\ntotal time {time.perf_counter() - start:.1f} s")
    return out


if __name__ == "__main__":
    main()
