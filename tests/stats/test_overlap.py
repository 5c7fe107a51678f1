import itertools

import numpy as np
import pytest

from skorg.stats import jaccard_null, mean_pairwise_jaccard, top_set_overlap_test


@pytest.mark.parametrize(("n", "m"), [(6, 2), (7, 3), (5, 5), (8, 1)])
def test_jaccard_null_equals_brute_force_enumeration(n, m):
    subsets = [set(c) for c in itertools.combinations(range(n), m)]
    values = [len(a & b) / len(a | b) for a in subsets for b in subsets]
    null = jaccard_null(n, m)
    assert null["expectation"] == pytest.approx(np.mean(values), rel=1e-12)
    for v, p in zip(null["values"], null["pmf"]):
        assert p == pytest.approx(np.mean(np.isclose(values, v)), rel=1e-12)


def test_permutation_null_of_jaccard_overlaps_equals_the_hypergeometric_expectation():
    rng = np.random.default_rng(0)
    n_items, m, n_sets = 72, 8, 6
    masks = np.zeros((n_sets, n_items), dtype=bool)
    for row in masks:
        row[rng.choice(n_items, m, replace=False)] = True
    out = top_set_overlap_test(masks, n_resamples=4000, random_state=1)
    # simulate the same null by hand to get its spread: the mean of 4000 draws is within
    # 4 standard errors of the exact expectation
    from skorg.stats._overlap import _random_masks

    draws = _random_masks(np.random.default_rng(1), 4000, n_sets, n_items, m)
    sim = mean_pairwise_jaccard(draws)
    exact = jaccard_null(n_items, m)["expectation"]
    assert out["overlap_null_mean"] == exact
    assert abs(sim.mean() - exact) < 4 * sim.std() / np.sqrt(sim.size)
    always = draws.all(axis=1).sum(axis=1)
    # 72 * (8 / 72) ** 6 = 1.4e-4 items expected in all six sets: almost none in 4000 draws
    assert out["always_null_mean"] == pytest.approx(72 * (8 / 72) ** 6)
    assert always.sum() <= 3
    np.testing.assert_allclose(out["overlap_null_quantiles"][1], np.median(sim))
    # random sets: neither test rejects
    assert out["overlap_p_value"] > 0.05


def test_identical_sets_are_significant_and_counted():
    masks = np.zeros((4, 30), dtype=bool)
    masks[:, [3, 7, 9]] = True
    out = top_set_overlap_test(masks, n_resamples=499)
    assert out["overlap"] == 1.0 and out["always"] == 3
    assert out["overlap_p_value"] == 1 / 500 and out["always_p_value"] == 1 / 500
    assert out["always_null_mean"] == pytest.approx(30 * 0.1**4)


def test_mean_pairwise_jaccard_brute_force():
    rng = np.random.default_rng(2)
    masks = rng.random((5, 12)) < 0.4
    masks[0] = False
    masks[1] = False  # two empty sets are equal: Jaccard 1
    pairs = []
    for i, j in itertools.combinations(range(5), 2):
        u = (masks[i] | masks[j]).sum()
        pairs.append(1.0 if u == 0 else (masks[i] & masks[j]).sum() / u)
    assert mean_pairwise_jaccard(masks) == pytest.approx(np.mean(pairs))


def test_bad_input():
    with pytest.raises(ValueError, match="set_size"):
        jaccard_null(5, 6)
    with pytest.raises(TypeError, match="n_items"):
        jaccard_null(5.0, 2)
    with pytest.raises(ValueError, match="same number"):
        top_set_overlap_test(np.eye(3, dtype=bool) | np.eye(3, k=1, dtype=bool))
    with pytest.raises(TypeError, match="boolean"):
        top_set_overlap_test(np.ones((2, 3)))


def test_always_in_every_set_null_mean_is_exact():
    masks = np.zeros((3, 10), dtype=bool)
    masks[:, :4] = True
    from skorg.stats._overlap import _random_masks

    draws = _random_masks(np.random.default_rng(0), 20000, 3, 10, 4)
    always = draws.all(axis=1).sum(axis=1)
    expected = top_set_overlap_test(masks, n_resamples=10)["always_null_mean"]
    assert expected == pytest.approx(10 * 0.4**3)
    assert abs(always.mean() - expected) < 4 * always.std() / np.sqrt(always.size)
