import numpy as np
import pytest

from skorg.attention import AttentionMaps, softmax_invariance_survey
from skorg.transforms import softmax_invariance_check
from skorg.trees import dyadic_tree


def maps_from_logits(logits):
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return AttentionMaps.from_array(e / e.sum(-1, keepdims=True), logits)


def test_survey_matches_the_check_on_every_head_and_closed_forms():
    rng = np.random.default_rng(0)
    logits = 4 * rng.normal(size=(1, 2, 3, 8, 8))
    logits[0, 1, 2] = 1.5  # a constant head: uniform rows, every expansion is exact
    maps = maps_from_logits(logits)
    out = softmax_invariance_survey(maps, n_resamples=300)
    assert out["n_heads"] == 6 and len(out["heads"]) == 24
    trees = [dyadic_tree(np.arange(8)), dyadic_tree(np.arange(8))]
    flat = logits[0].reshape(6, 8, 8)
    by_variant = {}
    for h in range(6):
        for r in softmax_invariance_check(flat[h], row_tree=trees[0], column_tree=trees[1]):
            by_variant.setdefault(r["variant"], []).append(r["rel_error"])
    for row in out["summary"]:
        errs = np.array(by_variant[row["variant"]])
        assert row["median"] == pytest.approx(np.median(errs), rel=1e-12, abs=1e-300)
        assert row["q1"] == pytest.approx(np.quantile(errs, 0.25), rel=1e-12, abs=1e-300)
        assert row["share_within"] == pytest.approx(np.mean(errs <= 0.1))
        assert row["share_low"] <= row["share_within"] <= row["share_high"]
    exact = next(r for r in out["summary"] if r["variant"] == "exact")
    assert exact["share_within"] == 1.0 and exact["q3"] < 1e-12
    for r in out["heads"]:
        assert 0 <= r["a1_max"] <= 0.25 and 0 <= r["a2_max"] <= 1 / (6 * np.sqrt(3)) + 1e-15
    const = [r for r in out["heads"] if r["head"] == "L1H2"]
    s = 1 / 8
    assert const[0]["a1_max"] == pytest.approx(s * (1 - s), rel=1e-12)
    assert const[0]["a2_max"] == pytest.approx(s * (1 - s) * (1 - 2 * s), rel=1e-12)
    assert all(r["rel_error"] < 1e-12 for r in const)


def test_survey_on_organized_trees_and_bad_input():
    rng = np.random.default_rng(1)
    maps = maps_from_logits(rng.normal(size=(1, 1, 2, 6, 6)))
    perm = rng.permutation(6)
    trees = [dyadic_tree(perm), dyadic_tree(perm)]
    out = softmax_invariance_survey(maps, trees, heads=[1], n_resamples=100)
    direct = softmax_invariance_check(
        maps.logits[0, 0, 1].astype(float), row_tree=trees[0], column_tree=trees[1]
    )
    assert [r["rel_error"] for r in out["heads"]] == pytest.approx(
        [r["rel_error"] for r in direct], rel=1e-12
    )
    with pytest.raises(ValueError, match="do not match"):
        softmax_invariance_survey(maps, [dyadic_tree(4), dyadic_tree(4)])
    with pytest.raises(ValueError, match="no logits"):
        softmax_invariance_survey(AttentionMaps.from_array(np.full((1, 1, 1, 4, 4), 0.25)))
