"""Tables and sentences that carry the intervals, nulls and p-values of the attention report."""

from __future__ import annotations

import numpy as np

__all__ = [
    "entropy_test_rows",
    "head_entropy_rows",
    "pruning_rows",
    "pruning_sentence",
    "stability_rows",
    "stability_sentence",
    "survey_sentence",
    "verdict",
]


def _p(p):
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def verdict(difference, low, high, p, *, than="random", level=0.95):
    """A sentence fragment that says what the interval of a difference allows one to say."""
    span = f"{difference:+.3f}, {level:.0%} CI [{low:+.3f}, {high:+.3f}], {_p(p)}"
    # both the interval and the permutation test must agree: with few inputs the bootstrap
    # interval is too narrow, and the exact test says so
    significant = p < 1 - level
    if low > 0 and significant:
        return f"better than {than} ({span})"
    if high < 0 and significant:
        return f"worse than {than} ({span})"
    return f"not distinguishable from {than} ({span})"


def pruning_rows(pruning):
    """One row per order: area, prunable fraction, their intervals, the tests against random."""
    rows = []
    for name in sorted(pruning.auc, key=lambda k: -pruning.auc[k]):
        row = {"order": name, "auc": pruning.auc[name]}
        ci = pruning.intervals.get(name)
        if ci is not None:
            row.update(auc_low=ci["auc"].low, auc_high=ci["auc"].high)
        row["prunable_fraction"] = pruning.prunable[name]
        if ci is not None:
            row.update(prunable_low=ci["prunable"].low, prunable_high=ci["prunable"].high)
        vs = pruning.versus_random.get(name)
        if vs is not None:
            row.update(
                auc_minus_random=vs["difference"],
                difference_low=vs["low"],
                difference_high=vs["high"],
                p_value=vs["p_value"],
                p_value_vs_random_orders=vs.get("p_value_orders"),
                verdict=verdict(vs["difference"], vs["low"], vs["high"], vs["p_value"]).split(" (")[
                    0
                ],
            )
        rows.append(row)
    return rows


def best_vs_rest_rows(pruning):
    best = pruning.best
    return [
        {
            "best": best,
            "other": name,
            "auc_difference": d["difference"],
            "low": d["low"],
            "high": d["high"],
            "p_value": d["p_value"],
            "distinguishable": d["distinguishable"],
        }
        for name, d in pruning.best_vs_rest.items()
    ]


def pruning_sentence(pruning, metric_label):
    """The summary line of the pruning study, with intervals and the verdict against random."""
    level = pruning.confidence_level
    parts = []
    for name in sorted(pruning.auc, key=lambda k: -pruning.auc[k]):
        text = f"{name} {pruning.auc[name]:.3f}"
        ci = pruning.intervals.get(name)
        if ci is not None:
            text += f" [{ci['auc'].low:.3f}, {ci['auc'].high:.3f}]"
        parts.append(text)
    n_random = pruning.random_auc.size
    random_note = f" (random: mean of {n_random} random orders)" if n_random > 1 else ""
    line = (
        f"Pruning (area under the {metric_label} curve, 1 = no loss"
        + (f", {level:.0%} bootstrap intervals over inputs" if pruning.intervals else "")
        + f"){random_note}: "
        + ", ".join(parts)
        + "."
    )
    verdicts = [
        f"{name} is {verdict(v['difference'], v['low'], v['high'], v['p_value'], level=level)}"
        for name, v in pruning.versus_random.items()
    ]
    if verdicts:
        line += " Against random pruning: " + "; ".join(verdicts) + "."
    return line


def stability_rows(stability, n_batches):
    rows = []
    for end in ("top", "bottom"):
        null = stability[f"{end}_null"]
        q = null["overlap_null_quantiles"]
        rows.append(
            {
                "set": f"{end} 10%",
                "batches": n_batches,
                "mean_jaccard": null["overlap"],
                "null_mean_jaccard": null["overlap_null_mean"],
                "null_2.5%": q[0],
                "null_97.5%": q[2],
                "p_value": null["overlap_p_value"],
                "heads_always_in": null["always"],
                "null_mean_always_in": null["always_null_mean"],
                "p_value_always_in": null["always_p_value"],
            }
        )
    return rows


def stability_sentence(stability, n_batches):
    parts = []
    for end in ("top", "bottom"):
        null = stability[f"{end}_null"]
        sig = (
            "more stable than random rankings"
            if null["overlap_p_value"] < 0.05
            else ("not distinguishable from random rankings")
        )
        parts.append(
            f"the {end}-10% sets overlap by {null['overlap']:.2f} (Jaccard; random rankings "
            f"{null['overlap_null_mean']:.2f}, {_p(null['overlap_p_value'])}: {sig}), "
            f"{null['always']} head{'s' if null['always'] != 1 else ''} in every set "
            f"(random: {null['always_null_mean']:.2g}, {_p(null['always_p_value'])})"
        )
    return (
        f"Stability of the sparsity ranking across the {n_batches} inputs: "
        + "; ".join(parts)
        + "."
    )


def entropy_test_rows(entropy_rows, *, random_state=0):
    """Paired tests over inputs: organized trees against token order and random trees."""
    from skorg.stats import paired_comparison

    rows = []
    for coefficients in dict.fromkeys(r["coefficients"] for r in entropy_rows):
        sub = [r for r in entropy_rows if r["coefficients"] == coefficients]
        if len(sub) < 2:
            continue
        org = np.array([r["organized_trees"] for r in sub])
        for other, label in (
            ("dyadic_on_original_order", "token order"),
            ("dyadic_on_random_order", "random trees"),
        ):
            alt = np.array([r[other] for r in sub])
            test = paired_comparison(org, alt, random_state=random_state)
            d = test.to_dict()
            rows.append(
                {
                    "coefficients": coefficients,
                    "organized_vs": label,
                    "inputs": d["n"],
                    "mean_difference": d["difference"],
                    "low": d["low"],
                    "high": d["high"],
                    "p_value": d["p_value"],
                    "effect_size_dz": d["effect_size"],
                    "organized_lower_in": float(np.mean(org < alt)),
                }
            )
    return rows


def head_entropy_rows(names, organized, token_order, random_trees=None, *, random_state=0):
    """Per head: organized against token-order (and random-tree) bi-Haar entropy, each as a
    paired test over inputs."""
    from skorg.stats import paired_comparison

    def test(other, h):
        return paired_comparison(
            organized[:, h], other[:, h], n_resamples=1000, random_state=random_state
        ).to_dict()

    rows = []
    for h, name in enumerate(names):
        token = test(token_order, h)
        row = {
            "head": name,
            "organized": float(organized[:, h].mean()),
            "token_order": float(token_order[:, h].mean()),
            "difference": token["difference"],
            "low": token["low"],
            "high": token["high"],
            "p_value": token["p_value"],
            "effect_size_dz": token["effect_size"],
        }
        if random_trees is not None:
            rand = test(random_trees, h)
            row.update(
                random_trees=float(random_trees[:, h].mean()),
                difference_random=rand["difference"],
                low_random=rand["low"],
                high_random=rand["high"],
                p_value_random=rand["p_value"],
                effect_size_dz_random=rand["effect_size"],
            )
        rows.append(row)
    return rows


def survey_sentence(survey):
    """One line on the Eq. 18 survey: the collapsed form's error over every head."""
    from ._paraproduct import variant_name

    row = {r["variant"]: r for r in survey["summary"]}
    c, t = row["softmax_collapsed"], row["softmax"]
    return (
        f"Eq. 18 over all {survey['n_heads']} heads of sample 0 (organized trees): "
        f"{variant_name('softmax_collapsed')} has median relative error {c['median']:.3g} "
        f"(quartiles {c['q1']:.3g} to {c['q3']:.3g}) and is within "
        f"{survey['tolerance']:.0%} of softmax on {c['share_within']:.0%} of the heads "
        f"(95% CI {c['share_low']:.0%} to {c['share_high']:.0%}); "
        f"{variant_name('softmax')} has median {t['median']:.3g}. The true A' and A'' reach only "
        f"{c['a1_median']:.3f} and {c['a2_median']:.3f} (medians over heads)."
    )
