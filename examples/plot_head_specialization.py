"""
Head specialization in the single-location model
================================================

Multi-head attention trained by online SGD on the single-location regression task
(Sagitova, Duranthon, Zdeborova, arXiv 2603.03993):

1. the reviewers' falsification test of sequential specialization: ``F = 3`` latent directions
   with ``Var(theta_1) > Var(theta_2) > Var(theta_3)``, ``H = 8`` heads, many seeds and two
   learning rates; the order in which the directions are captured, per run;
2. how the onset of specialization grows with the dimension ``D``;
3. the order parameters ``m_{h,f}`` of one run over ``t = samples / D``;
4. the test risk of softmax, softmax-1 and Bayes-softmax against the number of heads on a
   discrete prior, with the Monte Carlo Bayes risk;
5. greedy pruning of heads from trained 8-head models.

The default is a small version that runs in seconds; ``--full`` runs the full-size experiment
(about ten minutes of CPU). Figures need matplotlib and are skipped without it.
"""

import argparse
import time

import numpy as np
import torch

from skorg.specialization import (
    AttentionRegressor,
    DiscretePrior,
    GaussianPrior,
    SingleLocationTask,
    bayes_risk,
    model_risk,
    run_specialization_experiment,
    train_online,
)

SMALL = dict(
    dim=64,
    seeds=4,
    t_max=45.0,
    learning_rates=(3.0,),
    sweep_dims=(64, 128),
    sweep_seeds=3,
    sweep_t_max=40.0,
    head_dim=64,
    head_counts=(1, 2, 4),
    head_seeds=1,
    schedule=((3.0, 0.1, 30.0), (1.0, 0.03, 10.0)),
    prune_heads=4,
    risk_samples=20_000,
)
FULL = dict(
    dim=250,
    seeds=100,
    t_max=200.0,
    learning_rates=(1.0, 3.0),
    sweep_dims=(125, 250, 500, 1000),
    sweep_seeds=12,
    sweep_t_max=90.0,
    head_dim=100,
    head_counts=(1, 2, 3, 4, 6, 8),
    head_seeds=3,
    schedule=((3.0, 0.1, 100.0), (1.0, 0.03, 50.0), (0.3, 0.01, 50.0)),
    prune_heads=8,
    risk_samples=100_000,
)
VARIANCES = (24.0, 16.0, 8.0)
NORMALIZATIONS = ("softmax", "softmax1", "bayes_softmax")


def falsification(cfg):
    results = {}
    for norm in ("softmax", "bayes_softmax"):
        res = run_specialization_experiment(
            variances=VARIANCES,
            dims=(cfg["dim"],),
            learning_rates=cfg["learning_rates"],
            normalization=norm,
            n_seeds=cfg["seeds"],
            t_max=cfg["t_max"],
            random_state=0,
        )
        print(f"\n[1] sequential specialization, {norm}, H=8, Var(theta) = {VARIANCES}")
        print(res.summary())
        pair = res.times[..., [0, 1]]
        known = np.any(np.isfinite(pair), axis=-1)
        ok = known & (pair[..., 0] < pair[..., 1])
        print(f"    tau_1 < tau_2 in {ok.sum()} of {known.sum()} runs where it is known")
        results[norm] = res
    return results


def onset_sweep(cfg):
    res = run_specialization_experiment(
        variances=VARIANCES,
        dims=cfg["sweep_dims"],
        learning_rates=cfg["learning_rates"],
        normalization="softmax",
        n_seeds=cfg["sweep_seeds"],
        t_max=cfg["sweep_t_max"],
        random_state=1,
    )
    for j, lr in enumerate(res.learning_rates):
        print(f"\n[2] onset of specialization against D (softmax, lr {lr:g})")
        for D, row in zip(res.dims, res.onset_times()[:, j], strict=True):
            q1, med, q3 = np.percentile(row, [25, 50, 75])
            print(f"    D={D:5d}  median onset t={med:6.2f}  (quartiles {q1:.2f}, {q3:.2f})")
        print(f"    slope of median onset against log D: {res.onset_log_slope(j):.2f}")
    return res


def trajectories(cfg):
    task = SingleLocationTask(GaussianPrior(VARIANCES), dim=cfg["dim"], random_state=0)
    out = {}
    for norm in ("softmax", "bayes_softmax"):
        model = AttentionRegressor(cfg["dim"], 8, norm, random_state=0)
        out[norm] = train_online(
            model,
            task,
            t_max=cfg["t_max"],
            learning_rate=3.0,
            value_learning_rate=0.2,
            batch_size=8,
            record_every=0.5,
            random_state=0,
        )
    return out


def train_schedule(models, task, schedule, seed):
    for k, (lr, vlr, t_max) in enumerate(schedule):
        train_online(
            models,
            task,
            t_max=t_max,
            learning_rate=lr,
            value_learning_rate=vlr,
            batch_size=8,
            record_every=t_max,
            random_state=seed + 1000 * k,
        )


def risk_against_heads(cfg):
    a = 3.0
    prior = DiscretePrior([[a, 0.0], [-a, 0.0], [0.0, a], [0.0, -a]])
    task = SingleLocationTask(prior, dim=cfg["head_dim"], random_state=0)
    n = cfg["risk_samples"]
    r_bayes, se_bayes = bayes_risk(task, 4 * n, random_state=0)
    closed = {
        norm: model_risk(AttentionRegressor.bayes_optimal(task, norm), task, n)[0]
        for norm in NORMALIZATIONS
    }
    print(f"\n[4] discrete prior, 4 points +-{a} e_1, +-{a} e_2, D={task.dim}, L={task.n_tokens}")
    print(f"    Bayes risk (Monte Carlo): {r_bayes:.4f} +- {se_bayes:.4f}")
    print(
        "    closed-form weights (4 heads): " + ", ".join(f"{k} {v:.4f}" for k, v in closed.items())
    )
    risks, trained = {}, {}
    for norm in NORMALIZATIONS:
        risks[norm] = []
        for H in cfg["head_counts"]:
            models = [
                AttentionRegressor(task.dim, H, norm, random_state=s)
                for s in range(cfg["head_seeds"])
            ]
            train_schedule(models, task, cfg["schedule"], seed=H)
            vals = [model_risk(m, task, n, random_state=1)[0] for m in models]
            risks[norm].append(vals)
            print(
                f"    trained {norm:13s} H={H}: risk {np.mean(vals):.4f} "
                f"(seeds: {', '.join(f'{v:.4f}' for v in vals)})"
            )
        models = [AttentionRegressor(task.dim, cfg["prune_heads"], norm, random_state=99)]
        train_schedule(models, task, cfg["schedule"], seed=99)
        trained[norm] = models[0]
    return task, r_bayes, closed, risks, trained


def greedy_pruning(task, trained, n_samples):
    print("\n[5] greedy pruning (drop the head whose removal raises the risk least)")
    curves = {}
    for norm, model in trained.items():
        keep = list(range(model.n_heads))
        curve = [model_risk(model, task, n_samples, random_state=2)[0]]
        while len(keep) > 1:
            trials = [
                model_risk(
                    model.prune([h for h in keep if h != g]), task, n_samples, random_state=2
                )[0]
                for g in keep
            ]
            keep.remove(keep[int(np.argmin(trials))])
            curve.append(min(trials))
        curves[norm] = curve[::-1]  # risk with 1, 2, ..., H heads kept
        print(
            f"    {norm:13s} heads kept 1..{model.n_heads}: "
            + " ".join(f"{r:.3f}" for r in curves[norm])
        )
    return curves


def plot(exp, sweep, hists, heads, curves, cfg, prefix):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: figures skipped")
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for ax, (norm, hist) in zip(axes, hists.items(), strict=True):
        for f in range(3):
            ax.plot(
                hist.t,
                np.linalg.norm(hist.m[:, :, f], axis=1),
                label=f"||m[:, {f + 1}]||, Var={VARIANCES[f]:g}",
            )
        ax.axhline(1.0, color="k", lw=0.5, ls=":")
        ax.set(title=f"{norm}, H=8, D={cfg['dim']}", xlabel="t = samples / D")
    axes[0].set_ylabel("alignment norm over heads")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(f"{prefix}_order_parameters.png", dpi=120)

    _, r_bayes, closed, risks, _ = heads
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for norm in NORMALIZATIONS:
        axes[0].plot(cfg["head_counts"], np.mean(risks[norm], axis=1), "o-", label=norm)
    axes[0].axhline(r_bayes, color="k", ls="--", label="Bayes risk")
    axes[0].plot([4], [closed["bayes_softmax"]], "k*", ms=10, label="closed-form Bayes-softmax")
    axes[0].set(xlabel="heads H", ylabel="test risk", title="trained models, discrete prior")
    axes[0].legend(fontsize=8)
    for norm, curve in curves.items():
        axes[1].plot(range(1, len(curve) + 1), curve, "o-", label=norm)
    axes[1].axhline(r_bayes, color="k", ls="--", label="Bayes risk")
    axes[1].set(xlabel="heads kept", ylabel="test risk", title="greedy pruning")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(f"{prefix}_risk_heads.png", dpi=120)

    fig, ax = plt.subplots(figsize=(5, 3.6))
    for j, lr in enumerate(sweep.learning_rates):
        med = np.median(sweep.onset_times()[:, j], axis=-1)
        ax.plot(np.log(sweep.dims), med, "o-", label=f"median, lr {lr:g}")
    ax.legend(fontsize=8)
    ax.set(xlabel="log D", ylabel="onset t", title="specialization onset against D")
    fig.tight_layout()
    fig.savefig(f"{prefix}_onset.png", dpi=120)
    print(f"figures written to {prefix}_*.png")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="full-size experiment (minutes)")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads (1 is fastest for these small matrices)",
    )
    parser.add_argument("--prefix", default="head_specialization", help="figure file prefix")
    parser.add_argument("--no-plot", action="store_true", help="skip the figures")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    cfg = FULL if args.full else SMALL
    start = time.perf_counter()
    exp = falsification(cfg)
    sweep = onset_sweep(cfg)
    hists = trajectories(cfg)
    heads = risk_against_heads(cfg)
    curves = greedy_pruning(heads[0], heads[4], cfg["risk_samples"] // 4)
    print(f"\ntotal time {time.perf_counter() - start:.1f} s")
    if not args.no_plot:
        np.savez(
            f"{args.prefix}_results.npz",
            **{f"times_{k}": v.times for k, v in exp.items()},
            **{f"heads_{k}": v.heads for k, v in exp.items()},
            **{f"max_drop_{k}": v.max_drop for k, v in exp.items()},
            sweep_times=sweep.times,
            sweep_dims=np.asarray(sweep.dims),
        )
        plot(exp, sweep, hists, heads, curves, cfg, args.prefix)
    return exp, sweep, heads, curves


if __name__ == "__main__":
    main()
