"""The statistics refuse what they cannot use (complex, NaN, non-counts, non-bools) by name."""

import numpy as np
import pytest

from skorg.stats import (
    bootstrap_ci,
    bootstrap_of_means,
    compare_samples,
    effect_size,
    mean_pairwise_jaccard,
    paired_comparison,
    permutation_p_value,
    permutation_test_paired,
    permutation_test_two_sample,
)

COMPLEX = [1 + 5j, 2 - 5j, 3 + 9j, 4]


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: bootstrap_ci(COMPLEX), "values"),
        (lambda: bootstrap_ci(COMPLEX, lambda s: s.mean()), "values"),
        (lambda: bootstrap_of_means(COMPLEX), "values"),
        (lambda: permutation_test_paired(COMPLEX), "a"),
        (lambda: permutation_test_paired([1.0, 2.0, 3.0, 4.0], COMPLEX), "b"),
        (lambda: permutation_test_two_sample(COMPLEX, [1.0, 2.0]), "a"),
        (lambda: paired_comparison(COMPLEX), "a"),
        (lambda: compare_samples(COMPLEX, [1.0, 2.0]), "a"),
        (lambda: compare_samples([1.0, 2.0], COMPLEX), "b"),
        (lambda: effect_size(COMPLEX), "d"),
        (lambda: permutation_p_value(0.5 + 1j, [0.1, 0.2]), "observed"),
        (lambda: permutation_p_value(0.5, COMPLEX), "null"),
        (lambda: mean_pairwise_jaccard(np.ones((2, 3)) * (1 + 0j)), "masks"),
    ],
)
def test_complex_input_is_refused_by_name(call, name):
    with pytest.raises(TypeError, match=rf"^{name} .*(real|complex|bool)"):
        call()


def test_a_statistic_returning_complex_values_is_refused():
    with pytest.raises(TypeError, match="statistic must return real"):
        bootstrap_ci([1.0, 2.0, 3.0], lambda s: s.mean() + 1j, n_resamples=10)


@pytest.mark.parametrize(
    ("observed", "null", "name"),
    [(0.5, [0.1, np.nan, 0.2, 0.3], "null"), (np.nan, [0.1, 0.2, 0.3], "observed")],
)
def test_permutation_p_value_refuses_nan(observed, null, name):
    # were 0.2 and 0.25
    with pytest.raises(ValueError, match=rf"^{name} contains NaN"):
        permutation_p_value(observed, null)


def test_permutation_p_value_refuses_a_vector_observed_and_bad_alternatives():
    with pytest.raises(ValueError, match="observed must be one number"):
        permutation_p_value([0.1, 0.2], [0.1, 0.2])
    for alt in ("sideways", None, 3):
        with pytest.raises(ValueError, match="alternative"):
            permutation_p_value(0.1, [0.1, 0.2], alternative=alt)
        with pytest.raises(ValueError, match="alternative"):
            permutation_test_two_sample([1.0, 2.0], [3.0, 4.0], alternative=alt)


@pytest.mark.parametrize("value", [0.5, np.nan, 2, -1])
def test_mean_pairwise_jaccard_takes_only_bools_or_zero_one(value):
    masks = np.array([[1.0, 0.0, 1.0], [1.0, 1.0, 0.0]])
    masks[0, 1] = value
    with pytest.raises(ValueError, match="masks must hold booleans or the numbers 0 and 1"):
        mean_pairwise_jaccard(masks)


def test_mean_pairwise_jaccard_zero_one_numbers_equal_bools():
    masks = np.array([[1, 0, 1, 1], [1, 1, 0, 1], [0, 0, 1, 1]])
    # pairs: {0,2,3}&{0,1,3} = 2/4, {0,2,3}&{2,3} = 2/3, {0,1,3}&{2,3} = 1/4
    expected = (2 / 4 + 2 / 3 + 1 / 4) / 3
    assert mean_pairwise_jaccard(masks) == pytest.approx(expected, rel=1e-15)
    assert mean_pairwise_jaccard(masks.astype(bool)) == mean_pairwise_jaccard(masks)
    with pytest.raises(TypeError, match="masks must be boolean"):
        mean_pairwise_jaccard(np.full((2, 3), "a"))
    with pytest.raises(ValueError, match="masks must have shape"):
        mean_pairwise_jaccard([True, False])


@pytest.mark.parametrize("paired", ["yes", 1, 0.0, "no"])
def test_compare_samples_paired_must_be_a_bool(paired):
    with pytest.raises(TypeError, match="paired must be True, False or None"):
        compare_samples([1.0, 2.0, 3.0], [2.0, 3.0, 4.0], paired=paired)
    out = compare_samples([1.0, 2.0, 3.0], [2.0, 3.0, 5.0], paired=np.bool_(False))
    assert out["paired"] is False


@pytest.mark.parametrize("level", [1.5, 0.0, np.nan, "0.9", True])
def test_compare_samples_checks_its_level_even_without_intervals(level):
    # one value on each side: no interval is computed, the level is still checked
    with pytest.raises((ValueError, TypeError), match="confidence_level"):
        compare_samples([1.0], [2.0], confidence_level=level)


def test_effect_size_of_nothing_is_refused():
    with pytest.raises(ValueError, match="d holds 0 difference"):
        effect_size([])  # was 0.0
    with pytest.raises(ValueError, match="d holds 1 difference"):
        effect_size([2.0])  # was inf: no standard deviation of one value
    with pytest.raises(ValueError, match="d contains NaN"):
        effect_size([1.0, np.nan])
    assert effect_size([1.0, 2.0, 3.0]) == pytest.approx(2.0, rel=1e-15)  # mean 2, sd 1
    assert effect_size([0.0, 0.0]) == 0.0 and effect_size([2.0, 2.0]) == np.inf


def test_standard_error_is_finite_and_scale_exact_near_the_float_maximum():
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 7.0, 11.0])
    ref = bootstrap_ci(x, random_state=3)
    big = bootstrap_ci(x * 2.0**1020, random_state=3)  # about 1e307: the sum of squares is inf
    assert np.isfinite(big.standard_error)
    assert big.standard_error == ref.standard_error * 2.0**1020  # a power of two: exact
    assert big.estimate == ref.estimate * 2.0**1020
    assert (big.low, big.high) == (ref.low * 2.0**1020, ref.high * 2.0**1020)
    tiny = bootstrap_ci(x * 2.0**-1060, random_state=3)  # subnormal data
    assert tiny.standard_error == pytest.approx(ref.standard_error * 2.0**-1060, rel=1e-12)
    # per column: a huge column does not flush a small one to zero
    two = bootstrap_of_means(np.column_stack([x * 1e307, x]), random_state=3)
    # (a column of a table is summed in another order than a vector: equal to rounding)
    assert two.standard_error[1] == pytest.approx(ref.standard_error, rel=1e-13)
    assert two.standard_error[0] == pytest.approx(ref.standard_error * 1e307, rel=1e-14)
    # unchanged in the ordinary range: the bits of the plain formula
    assert ref.standard_error == ref.distribution.std(ddof=1)


def test_strings_are_refused_by_name():
    with pytest.raises(TypeError, match="values must be numeric"):
        bootstrap_ci(["a", "b", "c"])
    with pytest.raises(ValueError, match="method must be one of"):
        bootstrap_ci([1.0, 2.0], method=["bca"])


def test_means_near_the_float_maximum_are_finite_and_the_plain_bits_below():
    x = np.linspace(1.0, 2.0, 30)
    big = x * 2.0**1022  # thirty values near 1e308: their sum is past the float maximum
    stat, _ = permutation_test_paired(big, n_resamples=99)
    assert stat == x.mean() * 2.0**1022
    assert permutation_test_two_sample(big, big / 2, n_resamples=99)[0] == x.mean() * 2.0**1021
    assert compare_samples(big, big / 2, n_resamples=50)["difference"] == x.mean() * 2.0**1021
    assert permutation_test_paired(x, n_resamples=99)[0] == x.mean()
