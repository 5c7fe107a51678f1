import numpy as np
import pytest

from skorg.attention import (
    AttentionMaps,
    head_sparsity,
    ranking_stability,
    sensitivity_sweep,
    softmax_invariance_survey,
)
from skorg.trees import dyadic_tree


def test_sweep_rows_equal_the_direct_computations():
    rng = np.random.default_rng(0)
    logits = 3 * rng.normal(size=(6, 2, 3, 8, 8))
    e = np.exp(logits - logits.max(-1, keepdims=True))
    maps = AttentionMaps.from_array(e / e.sum(-1, keepdims=True), logits)
    trees = [(dyadic_tree(rng.permutation(8)), dyadic_tree(rng.permutation(8))) for _ in range(6)]
    survey = softmax_invariance_survey(maps, trees[0], n_resamples=100)
    rows = sensitivity_sweep(
        maps, trees, ks=(8, 32), default_k=64, fractions=(0.2, 0.5), survey=survey,
        tolerances=(0.1, 1.0), n_resamples=300,
    )  # fmt: skip
    by = {(r["parameter"], r["value"]): r for r in rows}
    assert set(by) == {
        ("k", 8), ("k", 32), ("k", 64), ("fraction", 0.2), ("fraction", 0.5),
        ("n_batches", 2), ("n_batches", 4), ("n_batches", 6), ("tolerance", 0.1),
        ("tolerance", 1.0),
    }  # fmt: skip
    assert by["k", 64]["spearman_vs_default"] == pytest.approx(1.0)
    assert by["k", 64]["pruned_first_jaccard_vs_default"] == 1.0
    # the stability rows are the ranking_stability test on the same scores
    it = iter(trees)
    base = head_sparsity(maps, organize=lambda X: next(it), selection="support", k=64)
    direct = ranking_stability(base, fraction=0.2, n_resamples=300)
    assert by["fraction", 0.2]["top_overlap"] == pytest.approx(direct["top_overlap"])
    assert by["fraction", 0.2]["bottom_overlap"] == pytest.approx(direct["bottom_overlap"])
    assert by["fraction", 0.2]["top_p_value"] == direct["top_null"]["overlap_p_value"]
    direct4 = ranking_stability(base[:4], fraction=0.1, n_resamples=300)
    assert by["n_batches", 4]["top_overlap"] == pytest.approx(direct4["top_overlap"])
    errs = np.array([r["rel_error"] for r in survey["heads"] if r["variant"] == "softmax"])
    assert by["tolerance", 0.1]["softmax_share"] == pytest.approx(np.mean(errs <= 0.1))
    assert by["tolerance", 1.0]["exact_share"] == 1.0
    again = sensitivity_sweep(
        maps, trees, ks=(8, 32), default_k=64, fractions=(0.2, 0.5), default_scores=base,
        n_resamples=300,
    )  # fmt: skip
    assert again == [r for r in rows if r["parameter"] != "tolerance"]
    with pytest.raises(ValueError, match="one pair per sample"):
        sensitivity_sweep(maps, trees[:2])
    with pytest.raises(ValueError, match="fraction"):
        sensitivity_sweep(maps, trees, ks=(8,), default_k=8, fractions=(0.9,))


def test_default_rows_report_the_given_stability_test_and_scores():
    # one test, one p-value: at the default settings the sweep reports the stability test it
    # is given (the report's, with its 2000 null draws), and otherwise runs that same test
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(8), size=(5, 3, 4, 8))
    maps = AttentionMaps.from_array(p)
    trees = [(dyadic_tree(8), dyadic_tree(rng.permutation(8)))] * 5
    it = iter(trees)
    scores = head_sparsity(maps, organize=lambda X: next(it), selection="support", k=16)
    given = ranking_stability(scores, fraction=0.1, n_resamples=2000)
    rows = sensitivity_sweep(
        maps, trees, ks=(16,), default_k=16, fractions=(0.1, 0.25), default_scores=scores,
        stability=given, n_resamples=2000,
    )  # fmt: skip
    by = {(r["parameter"], r["value"]): r for r in rows}
    for key in (("fraction", 0.1), ("n_batches", 5)):
        for end in ("top", "bottom"):
            assert by[key][f"{end}_p_value"] == given[f"{end}_null"]["overlap_p_value"]
            assert by[key][f"{end}_overlap"] == given[f"{end}_overlap"]
    # without it, the same numbers from the same test and draws
    again = sensitivity_sweep(
        maps, trees, ks=(16,), default_k=16, fractions=(0.1, 0.25), n_resamples=2000
    )
    assert again == rows
    other = ranking_stability(scores, fraction=0.25, n_resamples=2000)
    assert by["fraction", 0.25]["bottom_p_value"] == other["bottom_null"]["overlap_p_value"]
    with pytest.raises(ValueError, match="default_scores must be finite, of shape"):
        sensitivity_sweep(maps, trees, ks=(16,), default_k=16, default_scores=scores[:2])
