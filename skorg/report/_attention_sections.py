"""The attention report's sections: the summary, figures and tables of one analysis."""

from __future__ import annotations

import numpy as np

from . import _figures as figs
from ._attention_setup import PRESET
from ._html import Figure, Report, Table
from ._uncertainty import (
    best_vs_rest_rows,
    pruning_rows,
    pruning_sentence,
    stability_rows,
    stability_sentence,
    survey_sentence,
)


def _direction(row):
    """Which side is sparser, in words, as the interval and the test allow."""
    significant = row["p_value"] < 0.05
    if row["high"] < 0 and significant:
        return "organized sparser"
    if row["low"] > 0 and significant:
        return f"{row['organized_vs']} sparser"
    return "not distinguishable"


def _spearman(a, b):
    from scipy.stats import spearmanr

    return float(spearmanr(a, b).statistic)


def _grid(values, head_index):
    """(layer, head) grid of per-head values; blank (NaN) past a layer's heads."""
    layers, rows = np.unique(head_index[:, 0], return_inverse=True)
    grid = np.full((len(layers), int(head_index[:, 1].max()) + 1), np.nan)
    grid[rows, head_index[:, 1]] = np.asarray(values, dtype=float)
    return grid


def _layers_and_heads(maps, head_index):
    """ "6 layers x 12 heads", or for layers of different sizes the count of each."""
    layers = np.unique(head_index[:, 0])
    per_layer = {int((head_index[:, 0] == layer).sum()) for layer in layers}
    if len(per_layer) == 1 and not hasattr(maps, "groups"):
        return f"{len(layers)} layers x {per_layer.pop()} heads"
    return (
        f"{len(layers)} layers of {len(maps.groups)} different sizes (pooled, reduced or "
        f"windowed stages), {len(head_index)} heads in all"
    )


def _build(
    setup,
    maps,
    X,
    names,
    head_index,
    tokens,
    org,
    table,
    scores,
    stability,
    pruning,
    entropy_rows,
    para_rows,
    picks,
    diffusion_embedding,
    tests,
):
    from ._paraproduct import PARAPRODUCT_COLUMNS, paraproduct_section

    view = tests["primary"]
    primary, pnames, pindex, offset = view["maps"], view["names"], view["index"], view["offset"]
    n_heads = len(head_index)  # every head of every layer
    n_shown = X.shape[2]  # the heads of the query x key x head sections
    mean_scores = table["scores"]
    first = [names[h] for h in table["orders"]["sparsity"][:5]]
    best = pruning.best
    summary = [
        f"Model: {setup['label']}; {_layers_and_heads(maps, head_index)}; "
        f"{maps.n_samples} inputs organized; pruning metric on "
        f"{setup.get('metric_inputs', 'the inputs')}; sample 0 has {X.shape[0]} tokens.",
        f"Sparsest heads (bi-Haar l1 entropy on the organized query and key trees, "
        f"pruned first): {', '.join(first)}.",
        pruning_sentence(pruning, setup["metric_label"]) + f" Largest area: {best}.",
    ]
    if view["ragged"]:
        summary.insert(
            1,
            "Layers of different sizes: the query x key x head sections (organized maps, head "
            f"tree, network entropy, paraproduct check, sensitivity) use layers "
            f"{primary.layers.tolist()} ({n_shown} of the {n_heads} heads, "
            f"{X.shape[0]} x {X.shape[1]} positions on sample 0), the largest group of "
            "equal-sized layers; the head scores, ranking, stability and pruning use every head "
            "of every layer.",
        )
    if stability is not None:
        summary.append(stability_sentence(stability, maps.n_samples))
    # both coefficient sets, in the same form, whichever way each falls: all coefficients,
    # and the paper's 400 of largest support
    for coefficients, what in (
        ("all", "all coefficients"),
        ("400 largest support", "the paper's 400 coefficients of largest support"),
    ):
        rows = [r for r in tests["entropy"] if r["coefficients"] == coefficients]
        if rows:
            parts = [
                f"against {r['organized_vs']} {r['mean_difference']:+.3f} "
                f"[{r['low']:+.3f}, {r['high']:+.3f}] ("
                + ("p < 0.001" if r["p_value"] < 0.001 else f"p = {r['p_value']:.3f}")
                + f", d_z {r['effect_size_dz']:.2f}; "
                + _direction(r)
                + ")"
                for r in rows
            ]
            summary.append(
                f"Tri-Haar network entropy ({what}, normalized, lower is sparser), "
                f"organized trees minus the alternative, paired over {rows[0]['inputs']} "
                "inputs: " + "; ".join(parts) + "."
            )
            continue
        ent = next(r for r in entropy_rows if r["coefficients"] == coefficients)
        summary.append(
            f"Tri-Haar network entropy of sample 0 ({what}, normalized, lower is "
            f"sparser): {ent['organized_trees']:.3f} on the organized trees, "
            f"{ent['dyadic_on_original_order']:.3f} on the token order, "
            f"{ent['dyadic_on_random_order']:.3f} on random trees (one input: no interval)."
        )
    used = "tied" if tests["tied"] else "separate (untied)"
    summary.append(
        f"Query and key trees: {used}. Every ranking, pruning and entropy figure uses "
        + (
            "one tree and one order for queries and keys (tie_axes=(0, 1)); "
            if tests["tied"]
            else "the paper's separate query and key trees; "
        )
        + "the organized maps show the tied and the untied organization side by side."
    )
    report = Report(
        "skorg attention report",
        summary=summary,
        meta={
            "preset": PRESET,
            "query-key trees": used,
            "inputs": maps.n_samples,
            "heads": n_heads,
            "attention read as": maps.source,
            **({"embedding": setup["embedding"]} if setup.get("embedding") else {}),
        },
    )

    s = report.section("Organized and original attention maps")
    tied, untied = (org, tests["other"]) if tests["tied"] else (tests["other"], org)
    s.text(
        "Each head's attention (rows: queries, columns: keys, colour: attention weight) of "
        "sample 0, first in token order, then with queries and keys in the leaf orders of the "
        "trees the 3-D questionnaire learned from all heads at once: untied (a tree and an "
        "order for the queries and another for the keys, the paper's), and tied (one tree "
        "and one order for both, tie_axes=(0, 1): a token's features are its query and its "
        "key slice). Tied, every head is the same relation under one relabelling of the "
        "tokens: the diagonal stays the diagonal and a symmetric head stays symmetric, and a "
        "previous-token line stays a line wherever the shared order keeps consecutive "
        "tokens consecutive; untied, the two orders differ and such lines scatter. "
        f"The entropy figures, the ranking and the pruning use the {used} trees. Shown: the "
        "sparsest, a middle and the least sparse head by the entropy ranking."
    )
    s.text("Sample 0: " + str(setup["samples"][0]))
    panels = [
        {
            "title": pnames[h],
            "X": X[:, :, h],
            "row_order": untied.orders_[0],
            "col_order": untied.orders_[1],
            "label": "organized, untied" + ("" if tests["tied"] else " (used)"),
            "more": [
                (
                    "organized, tied" + (" (used)" if tests["tied"] else ""),
                    tied.orders_[0],
                    tied.orders_[1],
                )
            ],
            "row_labels": tokens,
            "col_labels": tokens,
            "value": "attention weight",
        }
        for h in picks
    ]
    qlabel, klabel = setup["axis_labels"]
    s.figure(
        figs.heatmap_pairs(
            panels,
            xlabel=klabel,
            ylabel=qlabel,
            caption="Attention maps of sample 0 in token order (left), organized with separate "
            "query and key trees (middle) and with queries and keys tied (right).",
        )
    )

    s = report.section("Head tree and diffusion embedding")
    head_tree = org.trees_[2]
    s.text(
        "The tree the questionnaire learned on the heads axis: heads joined low in the tree "
        "attend alike over the organized query-key geometry. Folders per level (root first): "
        f"{head_tree.level_sizes().tolist()}. Leaf colour: layer."
    )
    s.figure(
        figs.tree_plot(
            head_tree,
            leaf_labels=pnames,
            leaf_colors=pindex[:, 0],
            color_label="layer",
            title="head tree (sample 0)",
            caption="Partition tree on the heads; leaves in tree order.",
        )
    )
    embedding, _ = diffusion_embedding(org.affinities_[2], 2)
    top = [h - offset for h in table["orders"]["sparsity"][:5].tolist()]
    shown = set(picks) | {h for h in top if 0 <= h < n_shown}
    labels = [name if h in shown or n_shown <= 24 else "" for h, name in enumerate(pnames)]
    s.figure(
        figs.scatter_embedding(
            embedding,
            labels=labels,
            colors=pindex[:, 0],
            color_label="layer",
            title="heads in diffusion coordinates",
            caption="First two diffusion coordinates of the final head "
            "affinity (tree EMD between heads); labelled: the five "
            "sparsest heads and those of the heatmaps.",
        )
    )
    s.table(
        Table(
            "head_embedding",
            [
                {
                    "head": pnames[h],
                    "layer": int(pindex[h, 0]),
                    "leaf_position": int(head_tree.leaf_position[h]),
                    "diffusion_1": embedding[h, 0],
                    "diffusion_2": embedding[h, 1],
                }
                for h in range(n_shown)
            ],
            caption="Head coordinates and positions in the tree's leaf order",
            max_rows=12,
        )
    )

    s = report.section("Head ranking: entropy against the baselines")
    s.text(
        "sparsity: bi-Haar l1 entropy of each head on its sample's organized query and key "
        "trees (the 400 coefficients of largest support, averaged over inputs), pruned low "
        "first. Baselines: attention_entropy (mean Shannon entropy of the rows, pruned high "
        "first), confidence (mean largest weight, pruned low first), gradient (Michel et al. "
        "2019 head importance, pruned low first). A rank of 0 is pruned first."
    )
    grids = {k: _grid(v, head_index) for k, v in mean_scores.items()}
    s.figure(figs.score_grids(grids, caption="Every score per layer and head (mean over inputs)."))
    ranks = table["ranks"]
    rows = []
    for h in table["orders"]["sparsity"]:
        row = {"head": names[h], "layer": int(head_index[h, 0]), "index": int(head_index[h, 1])}
        row.update({k: float(mean_scores[k][h]) for k in scores})
        row.update({f"rank_{k}": int(ranks[k][h]) for k in ranks})
        rows.append(row)
    s.table(
        Table(
            "head_scores",
            rows,
            caption="Heads in the sparsity pruning order",
            max_rows=15,
            html_columns=["head", *scores, "rank_sparsity", "rank_random"],
        )
    )
    corr = [
        {"score": a, **{b: _spearman(mean_scores[a], mean_scores[b]) for b in scores}}
        for a in scores
    ]
    s.table(
        Table("score_correlation", corr, caption="Spearman correlation of the scores across heads")
    )
    if stability is not None:
        s.text(
            stability_sentence(stability, maps.n_samples)
            + " Null: every input ranks the heads in a uniformly random order (exact "
            "hypergeometric expectation; p-values from random rankings, with the +1)."
        )
        s.table(
            Table(
                "ranking_stability",
                stability_rows(stability, maps.n_samples),
                caption="Top and bottom 10% sets of the sparsity ranking against random rankings",
            )
        )
    if tests["heads"]:
        n_lower = sum(r["high"] < 0 for r in tests["heads"])
        n_lower_random = sum(r.get("high_random", 0.0) < 0 for r in tests["heads"])
        s.text(
            "Per head, the bi-Haar entropy on the organized trees against dyadic trees on the "
            f"token order, as a paired test over the {maps.n_samples} inputs: {n_lower} of "
            f"{n_heads} heads are sparser on the organized trees (interval below 0); against "
            f"dyadic trees on a random order of queries and keys: {n_lower_random} of {n_heads}."
        )
        try:
            from ._plots import plot_head_entropies

            fig = plot_head_entropies(
                {"organized trees": scores["sparsity"], "token order": tests["token_sparsity"]},
                labels=names,
                title="per-head bi-Haar entropy (mean and 95% range over inputs)",
            )
            s.figure(Figure.from_matplotlib(fig, "Per-head entropy, organized and token order."))
        except ImportError:
            s.figure(Figure(None, "Per-head entropy, organized and token order."))
        s.table(
            Table(
                "head_entropy_tests",
                tests["heads"],
                caption="Per head: organized minus token-order entropy, paired over inputs",
                max_rows=12,
            )
        )

    s = report.section("Pruning curves")
    s.text(
        f"Heads are masked cumulatively in each order; the metric is the {setup['metric_label']} "
        f"(unpruned: {pruning.baseline:.3f}), measured once per input and step on "
        f"{setup.get('metric_inputs', 'the inputs')}; the intervals resample those inputs "
        f"({pruning.confidence_level:.0%} BCa bootstrap; the model is not re-run). "
        "random is the mean curve of "
        f"{max(pruning.random_auc.size, 1)} random orders. The area under the curve and the "
        f"largest fraction that keeps {pruning.threshold:.0%} of the metric compare the "
        "orders; each order's area is compared with random on the same resampled inputs "
        "(paired bootstrap interval, paired permutation p-value) and with the areas of the "
        "random orders themselves."
    )
    if setup.get("embedding"):
        s.text(f"The embedding is {setup['embedding']}.")
    s.text(pruning_sentence(pruning, setup["metric_label"]))
    try:
        from ._plots import plot_pruning_curves

        fig = plot_pruning_curves(pruning, ylabel=setup["metric_label"])
        s.figure(Figure.from_matplotlib(fig, "Task metric against the fraction of heads removed."))
    except ImportError:
        s.figure(Figure(None, "Task metric against the fraction of heads removed."))
    curve_rows = []
    for i, f in enumerate(pruning.fractions):
        row = {"fraction": f}
        for k, v in pruning.curves.items():
            row[k] = float(v[i])
            band = pruning.intervals.get(k, {}).get("curve")
            if band is not None:
                row[f"{k}_low"] = float(band.low[i])
                row[f"{k}_high"] = float(band.high[i])
        curve_rows.append(row)
    s.table(
        Table(
            "pruning_curves",
            curve_rows,
            caption="Metric after each pruning step (mean over inputs, with interval)",
            html_columns=["fraction", *pruning.curves],
        )
    )
    s.table(
        Table(
            "pruning_summary",
            pruning_rows(pruning),
            caption="Area under the curve (1 = no loss) and prunable fraction, with intervals "
            "and the paired test against random",
        )
    )
    if pruning.best_vs_rest:
        s.table(
            Table(
                "pruning_best_vs_rest",
                best_vs_rest_rows(pruning),
                caption=f"Area of the best order ({pruning.best}) minus each other order",
            )
        )
    if pruning.random_auc.size > 1:
        q = np.quantile(pruning.random_auc, [0.0, 0.5, 1.0])
        s.text(
            f"Areas of the {pruning.random_auc.size} random orders: min {q[0]:.3f}, median "
            f"{q[1]:.3f}, max {q[2]:.3f}."
        )

    s = report.section("Tri-Haar network entropy")
    s.text(
        "The l1 norm of the tri-Haar coefficients of the whole query x key x head tensor, "
        "divided by its Frobenius norm: lower means the network is sparser (smoother) on those "
        "trees. The organized trees are compared with balanced dyadic trees on the token and "
        "head order as given, and on random orders. Two coefficient sets: all of them, and the "
        "400 of largest support (the paper's definition). Organizing moves energy into the "
        "coarse, large-support coefficients, so the restricted sum can grow while the full "
        "sum drops: compare each set only across trees."
    )
    s.table(
        Table(
            "network_entropy",
            entropy_rows,
            caption="Normalized tri-Haar l1 entropy per input and coefficient set",
        )
    )
    if tests["entropy"]:
        s.table(
            Table(
                "network_entropy_tests",
                tests["entropy"],
                caption="Organized trees minus token order and random trees: paired over "
                "inputs (mean difference, 95% BCa interval, permutation p-value, d_z)",
            )
        )

    paraproduct_section(report, para_rows, PARAPRODUCT_COLUMNS, real_heads=True)
    if tests["survey"] is not None:
        survey = tests["survey"]
        report.summary.append(survey_sentence(survey))
        s = report.sections[-1]
        h = picks[0]
        keep = primary.valid_tokens(0)
        f = np.asarray(primary.logits[0], dtype=float).reshape(-1, *primary.logits.shape[3:])[h]
        f = f[np.ix_(keep, keep)]
        if np.all(np.isfinite(f)):
            caption = (
                f"Head {pnames[h]} (sparsest), sample 0, organized trees: softmax of its logits "
                "beside the four reconstructions (the paper's Fig. 2), and the size of the "
                "mixed terms across scales (Fig. 4)."
            )
            try:
                from ._plots import plot_paraproduct_reconstructions, plot_scale_coefficients

                kw = {"row_tree": org.trees_[0], "column_tree": org.trees_[1]}
                s.figure(Figure.from_matplotlib(plot_paraproduct_reconstructions(f, **kw), caption))
                s.figure(Figure.from_matplotlib(plot_scale_coefficients(f, **kw), caption))
            except ImportError:
                s.figure(Figure(None, caption))
        s.text(
            survey_sentence(survey)
            + " Per variant over every head of sample 0 on its organized trees: median and "
            "quartiles of the relative error, the share of heads within "
            f"{survey['tolerance']:.0%} (95% bootstrap interval over heads), and the median "
            "over heads of the largest true A' = s(1 - s) (at most 1/4) and diagonal "
            "A'' = s(1 - s)(1 - 2s) (at most 0.096) at the block averages, which Eq. 18 sets "
            "to 1."
        )
        s.table(
            Table(
                "paraproduct_survey",
                survey["summary"],
                caption="Eq. 18 over every head: distribution of each variant's relative error",
            )
        )
        s.table(
            Table(
                "paraproduct_survey_heads",
                survey["heads"],
                caption="Every head and variant",
                max_rows=12,
            )
        )
    if tests["sweep"]:
        s = report.section("Sensitivity to the fixed thresholds")
        s.text(
            "The paper fixed the support size of the entropy (400 coefficients), the 10% sets "
            "of the stability test, the number of inputs and the 10% tolerance of the Eq. 18 "
            "verdict. Each row changes one of them: for k, the agreement of the sparsity "
            "ranking with k = 400 (Spearman, and the Jaccard overlap of the 10% pruned "
            "first); for the fraction and the number of inputs, the stability of the top and "
            "bottom sets against random rankings; for the tolerance, the share of heads "
            "within it for every variant (95% bootstrap interval over heads)."
        )
        for parameter in ("k", "fraction", "n_batches", "tolerance"):
            rows = [r for r in tests["sweep"] if r["parameter"] == parameter]
            if rows:
                s.table(
                    Table(
                        f"sensitivity_{parameter}",
                        rows,
                        caption=f"Sweep of {parameter}",
                        # the parameter is the caption's; each part of a split table
                        # repeats the value
                        html_columns=[c for c in rows[0] if c != "parameter"],
                    )
                )
    return report
