"""Resamples drawn in blocks within the memory budget: the same numbers, bit for bit."""

import numpy as np
import pytest
from scipy.stats import hypergeom

from skorg.stats import (
    bootstrap_ci,
    bootstrap_of_means,
    jaccard_null,
    permutation_test_paired,
    permutation_test_two_sample,
)

# 0.002 MiB: about 2 KiB of scratch, so that blocks hold a few resamples each
TINY = "0.002"


def _both(monkeypatch, call):
    monkeypatch.delenv("SKORG_MAX_MEMORY", raising=False)
    whole = call()
    monkeypatch.setenv("SKORG_MAX_MEMORY", TINY)
    blocked = call()
    return whole, blocked


def test_bootstrap_of_means_in_blocks_equals_one_block(monkeypatch):
    X = np.random.default_rng(0).normal(size=(40, 3)) * [1.0, 1e-200, 1e200]
    whole, blocked = _both(monkeypatch, lambda: bootstrap_of_means(X, random_state=7))
    assert np.array_equal(whole.distribution, blocked.distribution)
    assert np.array_equal(whole.low, blocked.low) and np.array_equal(whole.high, blocked.high)
    assert np.array_equal(whole.standard_error, blocked.standard_error)


def test_the_resampled_means_are_those_of_the_drawn_rows():
    # the indices come from the generator in order, one row of n per resample
    x = np.random.default_rng(2).normal(size=30)
    ci = bootstrap_of_means(x, n_resamples=500, method="percentile", random_state=3)
    idx = np.random.default_rng(3).integers(0, 30, size=(500, 30))
    np.testing.assert_allclose(ci.distribution, x[idx].mean(axis=1), rtol=1e-13)


def test_bootstrap_ci_with_a_statistic_in_blocks_equals_one_block(monkeypatch):
    x = np.random.default_rng(1).normal(size=25)

    def call():
        return bootstrap_ci(x, np.median, n_resamples=300, random_state=4)

    whole, blocked = _both(monkeypatch, call)
    assert np.array_equal(whole.distribution, blocked.distribution)
    assert (whole.low, whole.high) == (blocked.low, blocked.high)
    idx = np.random.default_rng(4).integers(0, 25, size=(300, 25))
    assert np.array_equal(whole.distribution, np.median(x[idx], axis=1))


def test_permutation_tests_in_blocks_equal_one_block(monkeypatch):
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=30), rng.normal(size=23) + 0.3
    whole, blocked = _both(
        monkeypatch, lambda: permutation_test_paired(a, n_resamples=999, random_state=1)
    )
    assert whole == blocked
    whole, blocked = _both(
        monkeypatch, lambda: permutation_test_two_sample(a, b, n_resamples=999, random_state=1)
    )
    assert whole == blocked


def test_the_paired_null_is_the_mean_of_the_drawn_sign_flips():
    d = np.random.default_rng(6).normal(size=20)
    stat, p = permutation_test_paired(d, n_resamples=499, random_state=2)
    signs = np.random.default_rng(2).integers(0, 2, size=(499, 20)) * 2 - 1
    z = d / np.max(np.abs(d))
    null = (signs * z).sum(axis=1) / 20
    hits = np.sum(np.abs(null) >= abs(z.mean()) - 1e-12 * np.max(np.abs(null)))
    assert p == (1 + hits) / 500 and stat == d.mean()


def test_a_million_values_with_the_defaults_stay_within_a_small_budget(monkeypatch):
    # 10^6 values, 2000 resamples: 14.9 GiB of indices at once before; now blocks of 256 MiB
    # at most. Under a 64 MiB budget one resample (16 MB of scratch) still fits.
    monkeypatch.setenv("SKORG_MAX_MEMORY", "64")
    x = np.random.default_rng(0).random(10**6)
    ci = bootstrap_ci(x, n_resamples=4, method="percentile")
    assert ci.low < x.mean() < ci.high
    monkeypatch.setenv("SKORG_MAX_MEMORY", "8")  # one resample needs 16 MB: said up front
    with pytest.raises(MemoryError, match=r"bootstrap resamples needs about 0\.0149 GiB"):
        bootstrap_ci(x, n_resamples=20)
    with pytest.raises(MemoryError, match=r"sign flips needs about 0\.0224 GiB"):
        permutation_test_paired(x, n_resamples=20)


def test_jaccard_null_matches_the_hypergeometric_law_and_does_not_scale_with_n():
    for n in (1, 2, 5, 17, 60):
        for m in range(1, n + 1):
            null = jaccard_null(n, m)
            k = null["shared"]
            assert k.tolist() == list(range(max(0, 2 * m - n), m + 1))
            ref = hypergeom.pmf(k, n, m, m)
            np.testing.assert_allclose(null["pmf"], ref / ref.sum(), rtol=1e-12, atol=0)
            assert null["expectation"] == pytest.approx(float(null["values"] @ null["pmf"]))
    # n = 10**12 (past 120 s in SciPy's hypergeom before): P(K = k) for m = 5 in closed form
    null = jaccard_null(10**12, 5)
    assert null["shared"].tolist() == [0, 1, 2, 3, 4, 5]
    n, m = 10**12, 5
    from math import comb

    exact = [comb(m, k) * comb(n - m, m - k) / comb(n, m) for k in range(6)]
    np.testing.assert_allclose(null["pmf"], exact, rtol=1e-12)
