"""The comparison report: tri-Haar network entropy of two models (or two layer sets)."""

from __future__ import annotations

import time

import numpy as np

from . import _figures as figs
from ._html import Figure, Report, Table

__all__ = ["compare_report"]

PRESET = "paper_3d_heads"


def _p(p):
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def _entropies(maps, step, label):
    """Per sample: organized trees, whole-network and per-layer normalized entropies."""
    from skorg.attention import network_entropy, network_tensor
    from skorg.organize import QuestionnaireOrganizer

    whole, whole_support, per_layer, organizers = [], [], [], []
    layers = maps.layers
    n_heads = len(maps.heads)
    for s in range(maps.n_samples):
        step(f"organizing {label}, sample {s + 1}/{maps.n_samples}")
        X, _ = network_tensor(maps, s)
        org = QuestionnaireOrganizer(preset=PRESET).fit(X)
        organizers.append(org)
        whole.append(network_entropy(X, org.trees_, selection="all", normalize=True))
        whole_support.append(network_entropy(X, org.trees_, selection="support", normalize=True))
        row = []
        for i in range(len(layers)):
            # each layer's heads organized on their own (a layer is a network of its heads)
            Xl = np.ascontiguousarray(X[:, :, i * n_heads : (i + 1) * n_heads])
            if Xl.shape[2] < 2:
                row.append(float("nan"))
                continue
            trees = QuestionnaireOrganizer(preset=PRESET).fit(Xl).trees_
            row.append(network_entropy(Xl, trees, selection="all", normalize=True))
        per_layer.append(row)
    return np.array(whole), np.array(whole_support), np.array(per_layer), organizers


def compare_report(
    setup_a,
    setup_b,
    *,
    layers_a=None,
    layers_b=None,
    n_resamples=2000,
    random_state=0,
    progress=None,
):
    """Compare the attention networks of two models (or two layer sets) on the same text.

    Both models read the same inputs; each input's query x key x head tensor is organized
    by the 3-D questionnaire and its normalized tri-Haar entropy computed (lower is
    sparser), for the whole network and for every layer on its own. The two models are
    compared per input (paired: the same sentence) with bootstrap intervals, a paired
    permutation test and the effect size; their head trees are shown side by side.

    Parameters
    ----------
    setup_a, setup_b : dict
        From :func:`load_attention_setup` (the same sentences for both).
    layers_a, layers_b : sequence of int, optional
        Layers of each model to keep (all by default): two layer sets of one model compare
        with ``setup_a is setup_b``.
    n_resamples : int, default=2000
    random_state : int, default=0
    progress : Progress, optional

    Returns
    -------
    report : Report
    """
    from skorg.attention import extract_attention
    from skorg.stats import bootstrap_of_means, compare_samples, paired_comparison

    step = progress.step if progress is not None else (lambda label: None)
    start = time.perf_counter()
    label_a = setup_a["label"] + (f" layers {list(layers_a)}" if layers_a is not None else "")
    label_b = setup_b["label"] + (f" layers {list(layers_b)}" if layers_b is not None else "")
    if len(setup_a["samples"]) != len(setup_b["samples"]):
        raise ValueError("both models must read the same inputs.")
    results = {}
    for key, setup, layers in (("a", setup_a, layers_a), ("b", setup_b, layers_b)):
        step(f"extracting attention of {key}")
        maps = extract_attention(
            setup["model"],
            setup["inputs"],
            tokenizer=setup["tokenizer"],
            layers=layers,
            windows="image",
        )
        results[key] = (maps, *_entropies(maps, step, key))

    step("comparing")
    maps_a, whole_a, support_a, layer_a, org_a = results["a"]
    maps_b, whole_b, support_b, layer_b, org_b = results["b"]
    opts = {"n_resamples": n_resamples, "random_state": random_state}
    tests = []
    for coefficients, a, b in (
        ("all", whole_a, whole_b),
        ("400 largest support", support_a, support_b),
    ):
        cmp = compare_samples(a, b, paired=True, **opts) if a.size > 1 else None
        row = {
            "coefficients": coefficients,
            "inputs": int(a.size),
            "mean_a": float(a.mean()),
            "mean_b": float(b.mean()),
            "difference": float(a.mean() - b.mean()),
        }
        if cmp is not None:
            ci = cmp["interval_difference"]
            row.update(
                low=ci["low"],
                high=ci["high"],
                p_value=cmp["p_value"],
                effect_size_dz=cmp["effect_size"],
                a_lower_in=cmp["fraction_a_lower"],
            )
        tests.append(row)

    layer_rows = []
    for key, L, maps in (("a", layer_a, maps_a), ("b", layer_b, maps_b)):
        for i, layer in enumerate(maps.layers):
            v = L[:, i]
            row = {"model": key, "layer": int(layer), "mean_entropy": float(np.mean(v))}
            if v.size > 1 and np.all(np.isfinite(v)):
                ci = bootstrap_of_means(v, **opts)
                row.update(low=ci.low, high=ci.high)
            layer_rows.append(row)
    paired_layers = []
    if layer_a.shape[1] == layer_b.shape[1] and layer_a.shape[0] > 1:
        for i in range(layer_a.shape[1]):
            a, b = layer_a[:, i], layer_b[:, i]
            if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
                continue
            t = paired_comparison(a, b, **opts).to_dict()
            paired_layers.append(
                {
                    "layer_a": int(maps_a.layers[i]),
                    "layer_b": int(maps_b.layers[i]),
                    "difference": t["difference"],
                    "low": t["low"],
                    "high": t["high"],
                    "p_value": t["p_value"],
                    "effect_size_dz": t["effect_size"],
                }
            )

    main = tests[0]
    if "p_value" in main:
        distinguishable = (main["low"] > 0 or main["high"] < 0) and main["p_value"] < 0.05
        verdict = (
            ("a is sparser than b" if main["difference"] < 0 else "b is sparser than a")
            if distinguishable
            else "the two networks are not distinguishable"
        )
        sentence = (
            f"Whole-network tri-Haar entropy (all coefficients, normalized, lower is sparser), "
            f"paired over {main['inputs']} inputs: a {main['mean_a']:.3f}, b "
            f"{main['mean_b']:.3f}, a - b {main['difference']:+.3f} (95% CI "
            f"[{main['low']:+.3f}, {main['high']:+.3f}], {_p(main['p_value'])}, d_z "
            f"{main['effect_size_dz']:.2f}): {verdict}."
        )
    else:
        sentence = (
            f"Whole-network tri-Haar entropy of the single input: a {main['mean_a']:.3f}, b "
            f"{main['mean_b']:.3f} (one input: no interval or test)."
        )
    report = Report(
        "skorg comparison report",
        summary=[
            f"a: {label_a}; {len(maps_a.layers)} layers x {len(maps_a.heads)} heads.",
            f"b: {label_b}; {len(maps_b.layers)} layers x {len(maps_b.heads)} heads.",
            sentence,
        ],
        meta={"preset": PRESET, "inputs": maps_a.n_samples},
    )
    s = report.section("Whole-network entropy")
    s.text(
        "Each input's query x key x head tensor is organized by the 3-D questionnaire; its "
        "tri-Haar l1 entropy divided by the Frobenius norm is compared between the models "
        "on the same inputs: mean difference with a 95% BCa bootstrap interval, paired "
        "permutation p-value (sign flips, with the +1) and Cohen's d_z."
    )
    s.text(sentence)
    s.table(Table("network_comparison", tests, caption="Model a minus model b, paired by input"))
    s.table(
        Table(
            "network_entropy_per_input",
            [
                {
                    "input": i,
                    "a_all": whole_a[i],
                    "b_all": whole_b[i],
                    "a_support": support_a[i],
                    "b_support": support_b[i],
                }
                for i in range(whole_a.size)
            ],
            caption="Normalized tri-Haar entropy of every input",
        )
    )
    s = report.section("Per-layer entropy")
    s.text(
        "Every layer's heads organized on their own (query x key x the layer's heads), "
        "normalized tri-Haar entropy over inputs with a 95% bootstrap interval."
        + (" Layers paired by position in the two layer sets." if paired_layers else "")
    )
    series = {
        f"{key}": [r["mean_entropy"] for r in layer_rows if r["model"] == key] for key in "ab"
    }
    n_max = max(len(v) for v in series.values())
    s.figure(
        figs.line_plot(
            np.arange(n_max),
            {k: v + [np.nan] * (n_max - len(v)) for k, v in series.items()},
            xlabel="layer position",
            ylabel="normalized tri-Haar entropy",
            title="per-layer entropy (mean over inputs)",
            caption="Per-layer entropy of both models.",
        )
    )
    s.table(Table("layer_entropy", layer_rows, caption="Per-layer entropy with its interval"))
    if paired_layers:
        s.table(
            Table("layer_comparison", paired_layers, caption="Layer by layer: a minus b, paired")
        )
    caption = "Largest tri-Haar coefficients of input 0 of both networks (the paper's Fig. 6)."
    try:
        from skorg.attention import network_tensor

        from ._plots import plot_top_coefficients

        nets = {
            key: (network_tensor(maps, 0)[0], orgs[0].trees_)
            for key, maps, orgs in (("a", maps_a, org_a), ("b", maps_b, org_b))
        }
        s.figure(Figure.from_matplotlib(plot_top_coefficients(nets), caption))
    except ImportError:
        s.figure(Figure(None, caption))
    s = report.section("Head trees side by side")
    for key, maps, orgs in (("a", maps_a, org_a), ("b", maps_b, org_b)):
        tree = orgs[0].trees_[2]
        index = maps.head_index()
        names = [f"L{int(a)}H{int(b)}" for a, b in index]
        s.text(f"{key}: head tree of input 0, folders per level {tree.level_sizes().tolist()}.")
        s.figure(
            figs.tree_plot(
                tree,
                leaf_labels=names,
                leaf_colors=index[:, 0],
                color_label="layer",
                title=f"head tree of {key} (input 0)",
                caption=f"Partition tree on the heads of {key}; leaves in tree order.",
            )
        )
    report.meta["analysis time"] = f"{time.perf_counter() - start:.1f} s"
    return report
