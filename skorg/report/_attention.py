"""The attention report: organize, rank and prune the heads of a transformer."""

from __future__ import annotations

import time

import numpy as np

from ._attention_heads import head_paraproduct_rows, pick_heads
from ._attention_sections import _build
from ._attention_setup import PRESET, _head_names
from ._paraproduct import reviewers_rows
from ._uncertainty import (
    entropy_test_rows,
    head_entropy_rows,
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
    # windowed models (Swin): every block at image positions, so that samples are images
    maps = extract_attention(model, setup["inputs"], tokenizer=setup["tokenizer"], windows="image")
    ragged = isinstance(maps, RaggedAttentionMaps)
    primary, offset = _primary_group(maps)
    n_samples = maps.n_samples
    organizers = []

    if tie_axes is not None and sorted(tie_axes) != [0, 1]:
        raise ValueError(f"tie_axes must be None or (0, 1) (queries and keys), got {tie_axes!r}.")
    tie = None if tie_axes is None else (0, 1)

    def organize(T):
        step(f"organizing heads, sample {len(organizers) + 1}/{n_samples}")
        organizers.append(QuestionnaireOrganizer(preset=PRESET, tie_axes=tie).fit(T))
        return organizers[-1].trees_

    def organize_other(T):  # the other groups of layers of different sizes
        return QuestionnaireOrganizer(preset=PRESET, tie_axes=tie).fit(T).trees_

    groups = maps.groups if ragged else [maps]
    sparsity = np.concatenate(
        [head_sparsity(g, organize=organize if g is primary else organize_other) for g in groups],
        axis=1,
    )
    X, primary_index = network_tensor(primary, 0)
    n_primary = X.shape[2]
    head_index = maps.head_index()
    names = _head_names(head_index)
    org = organizers[0]
    # the other choice on sample 0, for the organized maps side by side
    other = QuestionnaireOrganizer(preset=PRESET, tie_axes=(0, 1) if tie is None else None)
    other.fit(X)
    keep = primary.valid_tokens(0)
    tokens = [primary.tokens[0][i] for i in keep] if primary.tokens else [str(i) for i in keep]

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
        Xs, _ = network_tensor(primary, s)
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

    picks = pick_heads(table["scores"]["sparsity"][offset : offset + n_primary], n_heatmaps)
    para_rows = reviewers_rows() + head_paraproduct_rows(primary, org, picks)
    survey = None
    if primary.logits is not None:
        step("paraproduct check of every head")
        survey = softmax_invariance_survey(
            primary, org.trees_[:2], n_resamples=n_resamples, random_state=random_state
        )
    sweep = []
    if sensitivity:
        step("sensitivity to the thresholds")
        sweep = sensitivity_sweep(
            primary,
            [o.trees_[:2] for o in organizers],
            survey=survey,
            default_scores=sparsity[:, offset : offset + n_primary],
            # the stability table's own test at the default settings, and the same number
            # of null draws for the others: one test, one p-value (layers of different
            # sizes: the sweep is of the group the 3-D sections use, the table of all heads)
            stability=None if ragged else stability,
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
        "primary": {
            "maps": primary,
            "names": _head_names(primary_index),
            "index": primary_index,
            "offset": offset,
            "ragged": ragged,
        },
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


def _primary_group(maps):
    """The maps the query x key x head sections analyse, and the index of their first head.

    One group of equal-sized layers: of the groups whose queries and keys are the same
    positions (square maps, which the tied organization needs), the one with the most heads
    (the first on a tie), since those sections organize one (query, key, head) tensor per
    input.
    """
    groups = getattr(maps, "groups", None)
    if groups is None:
        return maps, 0
    sizes = [g.probs.shape[1] * g.probs.shape[2] for g in groups]
    square = [g.probs.shape[3] == g.probs.shape[4] for g in groups]
    candidates = [i for i in range(len(groups)) if square[i]] or list(range(len(groups)))
    best = max(candidates, key=lambda i: (sizes[i], -i))
    return groups[best], int(sum(sizes[:best]))
