"""Arguments of the attention toolkit checked by name: tolerances, sinks, head ids, levels."""

import numpy as np
import pytest

from skorg.attention import (
    AttentionMaps,
    head_sparsity,
    prune_curves,
    rank_heads,
    sensitivity_sweep,
    softmax_invariance_survey,
)
from skorg.transforms import softmax_invariance_check
from skorg.trees import dyadic_tree


def _maps(n=1, heads=3, seed=0):
    logits = np.random.default_rng(seed).normal(size=(n, 1, heads, 8, 8))
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return AttentionMaps.from_array(e / e.sum(-1, keepdims=True), logits)


@pytest.mark.parametrize("atol", [np.nan, -1e-3, 1.0, np.inf, "0.1", True])
def test_from_array_refuses_a_bad_tolerance(atol):
    # rows summing to 3.6 were accepted with atol=nan
    with pytest.raises(ValueError, match=r"atol must be a number in \[0, 1\)"):
        AttentionMaps.from_array(np.full((1, 1, 2, 4, 4), 0.9), atol=atol)


def test_from_array_takes_a_tolerance_and_refuses_a_negative_sink():
    p = np.full((1, 1, 2, 4, 4), 0.25)
    assert AttentionMaps.from_array(p + 1e-3, atol=1e-2).probs.shape == (1, 1, 2, 4, 4)
    with pytest.raises(ValueError, match="sum to 1"):
        AttentionMaps.from_array(p + 1e-3, atol=1e-4)
    # rows summing to 1.1 with a sink of -0.1 were accepted
    rows = np.full((1, 1, 2, 4, 4), 1.1 / 4)
    with pytest.raises(ValueError, match=r"sink is a probability mass and must lie in \[0, 1\]"):
        AttentionMaps.from_array(rows, sink=np.full((1, 1, 2, 4), -0.1))
    sunk = AttentionMaps.from_array(p * 0.8, sink=np.full((1, 1, 2, 4), 0.2))
    assert np.array_equal(sunk.sink, np.full((1, 1, 2, 4), 0.2))


def test_the_viewers_refuse_a_fully_masked_sample():
    p = np.zeros((2, 1, 2, 4, 4))
    p[0] = 0.25
    mask = np.zeros((2, 4, 4), dtype=bool)
    mask[0] = True
    maps = AttentionMaps.from_array(p, mask=mask)
    assert maps.to_circuitsvis(0)["attention"].shape == (2, 4, 4)
    with pytest.raises(ValueError, match="sample 1 is fully masked"):
        maps.to_circuitsvis(1)  # was a reshape ValueError
    with pytest.raises(ValueError, match="sample 1 is fully masked"):
        maps.to_bertviz(1)


@pytest.mark.parametrize(
    ("heads", "error", "match"),
    [
        ([0.5], TypeError, "heads must hold integer flat head ids"),  # was head 0
        ([True], TypeError, "heads must hold integer"),
        ([], ValueError, "heads is empty"),  # was an IndexError
        ([0, 0], ValueError, "heads holds a head more than once"),
        ([3], ValueError, r"heads: head 3 is not in \[0, 3\)"),
        ("0", TypeError, "heads must be a sequence"),
    ],
)
def test_survey_heads_must_be_distinct_integer_ids(heads, error, match):
    with pytest.raises(error, match=match):
        softmax_invariance_survey(_maps(), heads=heads, n_resamples=50)


def test_survey_of_chosen_heads_equals_the_full_survey_rows():
    maps = _maps()
    full = softmax_invariance_survey(maps, n_resamples=50)
    part = softmax_invariance_survey(maps, heads=[np.int64(2), 0], n_resamples=50)
    want = [r for r in full["heads"] if r["head"] in ("L0H2", "L0H0")]
    key = lambda r: (r["head"], r["variant"])  # noqa: E731
    assert sorted(part["heads"], key=key) == sorted(want, key=key)
    for kw in ({"tolerance": np.nan}, {"tolerance": np.inf}, {"confidence_level": 1.5}):
        with pytest.raises(ValueError, match=next(iter(kw))):
            softmax_invariance_survey(maps, n_resamples=50, **kw)
    with pytest.raises(TypeError, match="sample must be an int"):
        softmax_invariance_survey(maps, sample=0.0)


def _sweep_inputs():
    maps = _maps(n=3, heads=4, seed=1)
    trees = [(dyadic_tree(8), dyadic_tree(8))] * 3
    return maps, trees


def test_sensitivity_sweep_uses_the_default_scores_it_is_given():
    maps, trees = _sweep_inputs()
    kw = {"ks": (16,), "default_k": 64, "fractions": (0.5,), "n_resamples": 100}
    computed = sensitivity_sweep(maps, trees, **kw)
    scores = head_sparsity(maps, trees=trees[0], selection="support", k=64)
    given = sensitivity_sweep(maps, trees, default_scores=scores, **kw)
    assert given == computed  # the same scores: the same rows
    # reversed scores: the k rows now compare with them (k=64 is the given table itself)
    other = sensitivity_sweep(maps, trees, default_scores=-scores, **kw)
    by = {(r["parameter"], r["value"]): r for r in other}
    mean16 = head_sparsity(maps, trees=trees[0], selection="support", k=16).mean(axis=0)
    from scipy.stats import spearmanr

    rho = spearmanr(mean16, -scores.mean(axis=0)).statistic
    assert by["k", 16]["spearman_vs_default"] == pytest.approx(rho)
    assert by["k", 64]["spearman_vs_default"] == pytest.approx(1.0)
    for bad in (np.full((3, 4), np.nan), np.zeros((3, 5)), np.zeros(4)):
        with pytest.raises(ValueError, match="default_scores must be finite, of shape"):
            sensitivity_sweep(maps, trees, default_scores=bad, **kw)


@pytest.mark.parametrize(
    ("kw", "error", "match"),
    [
        ({"ks": (2.5,)}, TypeError, "ks must hold integers"),  # was k=2
        ({"ks": ()}, ValueError, "ks must hold at least one value"),
        ({"ks": (0,)}, ValueError, "ks must hold integers of at least 1"),
        ({"default_k": 64.0}, TypeError, "default_k must hold integers"),
        ({"fractions": (np.nan,)}, ValueError, "fractions must lie in"),
        ({"default_fraction": 0.7}, ValueError, "default_fraction must lie in"),
        ({"batch_counts": (2.5,)}, TypeError, "batch_counts must hold integers"),
    ],
)
def test_sensitivity_sweep_checks_its_settings(kw, error, match):
    maps, trees = _sweep_inputs()
    with pytest.raises(error, match=match):
        sensitivity_sweep(maps, trees, **{"ks": (16,), "default_k": 64, **kw})


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"confidence_level": 1.5}, "confidence_level"),
        ({"confidence_level": 0}, "confidence_level"),
        ({"confidence_level": np.nan}, "confidence_level"),
        ({"method": "foo"}, "method"),
        ({"n_resamples": 2.5}, "n_resamples"),
    ],
)
def test_prune_curves_checks_its_settings_whatever_the_metric_returns(fake_tlens, kw, match):
    for metric in (lambda m: 1.0, lambda m: np.ones(4)):  # one number, or one per input
        with pytest.raises(ValueError, match=match):
            prune_curves(fake_tlens, {"a": [0, 1, 2, 3]}, metric, fractions=[0, 1], **kw)


def test_rank_heads_refuses_zero_heads_and_complex_scores():
    for empty in ([], np.zeros((3, 0)), np.zeros((0, 4))):
        with pytest.raises(ValueError, match=r"scores\['confidence'\] holds no heads"):
            rank_heads({"confidence": empty})
    with pytest.raises(TypeError, match=r"scores\['confidence'\] must hold real numbers"):
        rank_heads({"confidence": [1 + 1j, 2.0]})


def test_one_variant_name_is_that_variant_alone():
    f = np.random.default_rng(3).normal(size=(8, 8))
    one = softmax_invariance_check(f, variants="softmax")
    assert [r["variant"] for r in one] == ["softmax"]
    listed = softmax_invariance_check(f, variants=["softmax"])
    assert one[0]["rel_error"] == listed[0]["rel_error"]
