"""The attention report: organize, rank and prune the heads of a transformer."""

from __future__ import annotations

import time

import numpy as np

from . import _figures as figs
from ._attention_heads import head_paraproduct_rows, pick_heads
from ._attention_setup import PRESET, _head_names
from ._errors import InputError
from ._html import Figure, Report, Table
from ._paraproduct import reviewers_rows
from ._uncertainty import (
    best_vs_rest_rows,
    entropy_test_rows,
    head_entropy_rows,
    pruning_rows,
    pruning_sentence,
    stability_rows,
    stability_sentence,
    survey_sentence,
)

__all__ = ["attention_report"]


def attention_report(
    setup,
    *,
    prune_steps=11,
    n_heatmaps=3,
    n_random=5,
    n_resamples=2000,
    random_state=0,
    sensitivity=True,
    tie_axes=None,
    progress=None,
):
    """Analyse the heads of one model and return the :class:`~skorg.report.Report`.

    Every comparison comes with its uncertainty: bootstrap intervals over inputs for the
    pruning curves and areas, paired tests of each order against random pruning (the mean
    of ``n_random`` random orders), the ranking stability against random rankings, and the
    network entropy of the organized trees against token order and random trees as paired
    tests over inputs.

    Parameters
    ----------
    setup : dict
        From :func:`load_attention_setup`.
    prune_steps : int, default=11
        Points of the pruning curves (fractions 0 to 1).
    n_heatmaps : int, default=3
        Heads shown as organized and original heatmaps (sparsest, middle, densest).
    n_random : int, default=5
        Random prune orders averaged into the random baseline.
    n_resamples : int, default=2000
        Bootstrap resamples and null draws.
    random_state : int, default=0
    sensitivity : bool, default=True
        Add the sweep of the thresholds the paper fixed (:func:`~skorg.attention.sensitivity_sweep`:
        support sizes, set fractions, number of inputs, the Eq. 18 tolerance).
    tie_axes : (0, 1), optional
        Rank, prune and measure entropy on trees that tie queries and keys (one tree and one
        order for both, see :class:`~skorg.QuestionnaireOrganizer`); by default the paper's
        separate query and key trees. The organized maps show both either way.
    progress : Progress, optional

    Returns
    -------
    report : Report
    """
    from skorg.attention import (
        RaggedAttentionMaps,
        attention_entropy,
        extract_attention,
        head_confidence,
        head_gradient_importance,
        head_sparsity,
        network_entropy,
        network_tensor,
        prune_curves,
        rank_heads,
        ranking_stability,
        sensitivity_sweep,
        softmax_invariance_survey,
    )
    from skorg.metrics import diffusion_embedding
    from skorg.organize import QuestionnaireOrganizer
    from skorg.trees import dyadic_tree

    step = progress.step if progress is not None else (lambda label: None)
    start = time.perf_counter()
    model = setup["model"]

    step("extracting attention")
    maps = extract_attention(model, setup["inputs"], tokenizer=setup["tokenizer"])
    if isinstance(maps, RaggedAttentionMaps):
        raise InputError(
            f"{getattr(getattr(model, 'config', None), 'model_type', type(model).__name__)}: its "
            "layers have attention maps of different sizes "
            f"({len(maps.groups)} groups): the report analyses one (layer, head, query, key) "
            "tensor; rank their heads in Python with skorg.attention.head_sparsity and rank_heads"
        )
    n_samples = maps.n_samples
    organizers = []

    if tie_axes is not None and sorted(tie_axes) != [0, 1]:
        raise ValueError(f"tie_axes must be None or (0, 1) (queries and keys), got {tie_axes!r}.")
    tie = None if tie_axes is None else (0, 1)

    def organize(T):
        step(f"organizing heads, sample {len(organizers) + 1}/{n_samples}")
        organizers.append(QuestionnaireOrganizer(preset=PRESET, tie_axes=tie).fit(T))
        return organizers[-1].trees_

    sparsity = head_sparsity(maps, organize=organize)
    X, head_index = network_tensor(maps, 0)
    names = _head_names(head_index)
    org = organizers[0]
    # the other choice on sample 0, for the organized maps side by side
    other = QuestionnaireOrganizer(preset=PRESET, tie_axes=(0, 1) if tie is None else None)
    other.fit(X)
    keep = maps.valid_tokens(0)
    tokens = [maps.tokens[0][i] for i in keep] if maps.tokens else [str(i) for i in keep]

    step("ranking heads and gradient importance")
    scores = {
        "sparsity": sparsity,
        "attention_entropy": attention_entropy(maps),
        "confidence": head_confidence(maps),
        "gradient": head_gradient_importance(model, setup["gradient_batches"], setup["loss"]),
    }
    table = rank_heads(scores)
    stability = (
        ranking_stability(
            sparsity, fraction=0.1, n_resamples=n_resamples, random_state=random_state
        )
        if n_samples > 1
        else None
    )

    step("pruning heads in every order")
    fractions = np.linspace(0.0, 1.0, int(prune_steps))
    pruning = prune_curves(
        model,
        table,
        setup["metric"],
        fractions=fractions,
        n_random=n_random,
        n_resamples=n_resamples,
        random_state=random_state,
    )

    step("network entropy and paraproduct check")
    token_sparsity = head_sparsity(maps, organize=lambda T: [dyadic_tree(n) for n in T.shape])
    rng = np.random.default_rng(random_state)
    # the null of "no organization": balanced trees on a random order of queries and keys,
    # drawn anew for every input
    random_sparsity = head_sparsity(
        maps, organize=lambda T: [dyadic_tree(rng.permutation(n)) for n in T.shape]
    )
    entropy_rows = []
    for s, o in enumerate(organizers):
        Xs, _ = network_tensor(maps, s)
        plain = [dyadic_tree(np.arange(n)) for n in Xs.shape]
        shuffled = [dyadic_tree(rng.permutation(n)) for n in Xs.shape]
        for selection in ("support", "all"):
            entropy_rows.append(
                {
                    "sample": s,
                    "tokens": Xs.shape[0],
                    "coefficients": "400 largest support" if selection == "support" else "all",
                    "organized_trees": network_entropy(
                        Xs, o.trees_, selection=selection, normalize=True
                    ),
                    "dyadic_on_original_order": network_entropy(
                        Xs, plain, selection=selection, normalize=True
                    ),
                    "dyadic_on_random_order": network_entropy(
                        Xs, shuffled, selection=selection, normalize=True
                    ),
                }
            )

    picks = pick_heads(table["scores"]["sparsity"], n_heatmaps)
    para_rows = reviewers_rows() + head_paraproduct_rows(maps, org, picks)
    survey = None
    if maps.logits is not None:
        step("paraproduct check of every head")
        survey = softmax_invariance_survey(
            maps, org.trees_[:2], n_resamples=n_resamples, random_state=random_state
        )
    sweep = []
    if sensitivity:
        step("sensitivity to the thresholds")
        sweep = sensitivity_sweep(
            maps,
            [o.trees_[:2] for o in organizers],
            survey=survey,
            default_scores=sparsity,
            # the stability table's own test at the default settings, and the same number
            # of null draws for the others: one test, one p-value
            stability=stability,
            n_resamples=n_resamples,
            random_state=random_state,
        )
    tests = {
        "tied": tie is not None,
        "other": other,
        "sweep": sweep,
        "entropy": entropy_test_rows(entropy_rows, random_state=random_state),
        "heads": head_entropy_rows(
            names, sparsity, token_sparsity, random_sparsity, random_state=random_state
        )
        if n_samples > 1
        else [],
        "token_sparsity": token_sparsity,
        "survey": survey,
    }

    step("drawing the report")
    report = _build(
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
    )
    report.meta["analysis time"] = f"{time.perf_counter() - start:.1f} s"
    return report


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

    n_heads = X.shape[2]
    n_layers = len(np.unique(head_index[:, 0]))
    mean_scores = table["scores"]
    first = [names[h] for h in table["orders"]["sparsity"][:5]]
    best = pruning.best
    summary = [
        f"Model: {setup['label']}; {len(maps.layers)} layers x {len(maps.heads)} heads; "
        f"{maps.n_samples} inputs organized; pruning metric on "
        f"{setup.get('metric_inputs', 'the inputs')}; sample 0 has {X.shape[0]} tokens.",
        f"Sparsest heads (bi-Haar l1 entropy on the organized query and key trees, "
        f"pruned first): {', '.join(first)}.",
        pruning_sentence(pruning, setup["metric_label"]) + f" Largest area: {best}.",
    ]
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
            "title": names[h],
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
            leaf_labels=names,
            leaf_colors=head_index[:, 0],
            color_label="layer",
            title="head tree (sample 0)",
            caption="Partition tree on the heads; leaves in tree order.",
        )
    )
    embedding, _ = diffusion_embedding(org.affinities_[2], 2)
    shown = set(picks) | set(table["orders"]["sparsity"][:5].tolist())
    labels = [name if h in shown or n_heads <= 24 else "" for h, name in enumerate(names)]
    s.figure(
        figs.scatter_embedding(
            embedding,
            labels=labels,
            colors=head_index[:, 0],
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
                    "head": names[h],
                    "layer": int(head_index[h, 0]),
                    "leaf_position": int(head_tree.leaf_position[h]),
                    "diffusion_1": embedding[h, 0],
                    "diffusion_2": embedding[h, 1],
                }
                for h in range(n_heads)
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
    grids = {k: np.asarray(v).reshape(n_layers, -1) for k, v in mean_scores.items()}
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
        keep = maps.valid_tokens(0)
        f = np.asarray(maps.logits[0], dtype=float).reshape(-1, *maps.logits.shape[3:])[h]
        f = f[np.ix_(keep, keep)]
        if np.all(np.isfinite(f)):
            caption = (
                f"Head {names[h]} (sparsest), sample 0, organized trees: softmax of its logits "
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
