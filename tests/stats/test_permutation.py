import itertools

import numpy as np
import pytest
from scipy.stats import chi2

from skorg.stats import (
    effect_size,
    paired_comparison,
    permutation_p_value,
    permutation_test_paired,
    permutation_test_two_sample,
)


def _binned_uniformity_p(p_values, bins=10):
    counts, _ = np.histogram(p_values, bins=bins, range=(0, 1))
    expected = len(p_values) / bins
    stat = ((counts - expected) ** 2 / expected).sum()
    return chi2.sf(stat, bins - 1)


def test_paired_p_values_are_uniform_under_the_null():
    # no difference between the conditions: the p-values must be uniform (binned chi-square)
    p = []
    for seed in range(400):
        rng = np.random.default_rng(seed)
        a = rng.normal(size=20)
        b = rng.normal(size=20)
        p.append(permutation_test_paired(a, b, n_resamples=499, random_state=seed)[1])
    assert _binned_uniformity_p(p) > 0.001
    # and the test keeps its level
    assert np.mean(np.asarray(p) <= 0.05) <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 400)


def test_two_sample_p_values_are_uniform_under_the_null():
    p = []
    for seed in range(300):
        rng = np.random.default_rng(seed)
        p.append(
            permutation_test_two_sample(
                rng.exponential(size=12), rng.exponential(size=17), n_resamples=499,
                random_state=seed,
            )[1]
        )  # fmt: skip
    assert _binned_uniformity_p(p) > 0.001


def test_exact_enumeration_matches_brute_force():
    d = np.array([0.5, 1.5, -0.2, 2.0, 0.7])
    stat, p = permutation_test_paired(d, n_resamples=10_000)
    null = [np.mean(np.array(s) * d) for s in itertools.product([1, -1], repeat=5)]
    assert stat == pytest.approx(d.mean())
    assert p == pytest.approx(np.mean(np.abs(null) >= abs(d.mean()) - 1e-15))
    _, p_greater = permutation_test_paired(d, n_resamples=10_000, alternative="greater")
    assert p_greater == pytest.approx(np.mean(np.array(null) >= d.mean() - 1e-15))


def test_p_value_plus_one_and_units():
    assert permutation_p_value(10.0, np.zeros(99), alternative="greater") == 0.01
    assert permutation_p_value(0.0, np.zeros(9), alternative="two-sided") == 1.0
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=30), rng.normal(size=30)
    _, p = permutation_test_paired(a, b, n_resamples=999)
    for s in (1e-150, 1e150):
        assert permutation_test_paired(a * s, b * s, n_resamples=999)[1] == p
        assert (
            permutation_test_two_sample(a * s, b * s, n_resamples=999)[1]
            == (permutation_test_two_sample(a, b, n_resamples=999)[1])
        )


def test_paired_comparison_detects_a_shift_and_reports_effect_size():
    rng = np.random.default_rng(3)
    b = rng.normal(size=40)
    a = b + 1.0 + 0.5 * rng.normal(size=40)
    out = paired_comparison(a, b)
    d = a - b
    assert out.difference.estimate == pytest.approx(d.mean())
    assert out.effect_size == pytest.approx(d.mean() / d.std(ddof=1))
    assert out.distinguishable and out.p_value < 0.001
    null = paired_comparison(b, b + 1e-3 * rng.normal(size=40) * 0)
    assert null.effect_size == 0.0 and not null.distinguishable and null.p_value == 1.0
    assert set(out.to_dict()) >= {"difference", "low", "high", "p_value", "effect_size"}
    assert effect_size([2.0, 2.0]) == np.inf


def test_bad_input():
    with pytest.raises(ValueError, match="same shape"):
        permutation_test_paired([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="alternative"):
        permutation_test_paired([1.0, 2.0], alternative="bigger")
    with pytest.raises(ValueError, match="n_resamples"):
        permutation_test_two_sample([1.0, 2.0], [1.0, 2.0], n_resamples=0)
