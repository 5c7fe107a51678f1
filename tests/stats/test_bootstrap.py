import numpy as np
import pytest

from skorg.stats import bootstrap_ci, bootstrap_of_means

LEVEL = 0.95
N_SEEDS = 400
# three binomial standard deviations of the observed coverage around the stated level
TOL = 3 * np.sqrt(LEVEL * (1 - LEVEL) / N_SEEDS)


@pytest.mark.parametrize(
    ("method", "kind"), [("percentile", "normal"), ("bca", "normal"), ("bca", "exponential")]
)
def test_interval_of_a_known_mean_difference_has_its_coverage(method, kind):
    # paired data whose true mean difference is 0.7: the interval must cover it in about
    # 95% of the seeds
    hits = 0
    for seed in range(N_SEEDS):
        rng = np.random.default_rng(seed)
        # skewed noise needs more inputs for the bootstrap to reach its level
        n = 60 if kind == "normal" else 150
        base = rng.normal(size=n)
        noise = rng.normal(size=n) if kind == "normal" else rng.exponential(size=n) - 1.0
        a, b = base + 0.7 + noise, base
        ci = bootstrap_of_means(a - b, n_resamples=999, method=method, random_state=seed)
        hits += ci.low <= 0.7 <= ci.high
    assert abs(hits / N_SEEDS - LEVEL) <= TOL


def test_generic_statistic_matches_the_fast_mean_path():
    x = np.random.default_rng(1).normal(size=(25, 3))
    fast = bootstrap_of_means(x, n_resamples=300, method="bca", random_state=4)
    slow = bootstrap_ci(x, lambda s: s.mean(axis=0), n_resamples=300, method="bca", random_state=4)
    np.testing.assert_allclose(fast.distribution, slow.distribution, rtol=1e-12)
    np.testing.assert_allclose(fast.low, slow.low, rtol=1e-12)
    np.testing.assert_allclose(fast.high, slow.high, rtol=1e-12)
    np.testing.assert_allclose(fast.estimate, x.mean(axis=0), rtol=1e-14)
    assert bootstrap_ci(x[:, 0], random_state=0).estimate == pytest.approx(x[:, 0].mean())


def test_percentile_interval_is_the_quantiles_of_the_resampled_means():
    x = np.random.default_rng(2).normal(size=30)
    ci = bootstrap_of_means(x, n_resamples=500, method="percentile", random_state=3)
    idx = np.random.default_rng(3).integers(0, 30, size=(500, 30))
    brute = x[idx].mean(axis=1)
    np.testing.assert_allclose(ci.distribution, brute, rtol=1e-12)
    np.testing.assert_allclose([ci.low, ci.high], np.quantile(brute, [0.025, 0.975]), rtol=1e-12)
    assert ci.standard_error == pytest.approx(brute.std(ddof=1), rel=1e-10)


def test_bca_on_symmetric_data_is_close_to_percentile_and_seeded():
    x = np.concatenate([np.arange(-10.0, 11.0)])
    a = bootstrap_of_means(x, method="bca", random_state=0)
    b = bootstrap_of_means(x, method="bca", random_state=0)
    assert (a.low, a.high) == (b.low, b.high)
    p = bootstrap_of_means(x, method="percentile", random_state=0)
    assert abs(a.low - p.low) < 0.2 and abs(a.high - p.high) < 0.2


def test_function_of_means_ratio_and_units():
    rng = np.random.default_rng(5)
    X = np.column_stack([rng.random(40), 1 + rng.random(40)])
    ratio = lambda m: m[:, 0] / m[:, 1]  # noqa: E731
    ci = bootstrap_of_means(X, ratio, random_state=0)
    assert ci.estimate == pytest.approx(X[:, 0].mean() / X[:, 1].mean(), rel=1e-14)
    for scale in (1e-150, 1e150):
        scaled = bootstrap_of_means(X * scale, ratio, random_state=0)
        np.testing.assert_allclose([scaled.low, scaled.high], [ci.low, ci.high], rtol=1e-10)
        mean_ci = bootstrap_of_means(X[:, 0] * scale, random_state=0)
        ref = bootstrap_of_means(X[:, 0], random_state=0)
        np.testing.assert_allclose(
            [mean_ci.low / scale, mean_ci.high / scale], [ref.low, ref.high], rtol=1e-10
        )


def test_constant_data_gives_a_point_interval():
    ci = bootstrap_of_means(np.full(10, 3.0), method="bca")
    assert ci.low == ci.high == ci.estimate == 3.0
    assert ci.contains(3.0) and ci.to_dict()["estimate"] == 3.0


def test_bad_input():
    with pytest.raises(ValueError, match="at least 2 observations"):
        bootstrap_ci([1.0])
    with pytest.raises(ValueError, match="NaN"):
        bootstrap_ci([1.0, np.nan])
    with pytest.raises(ValueError, match="confidence_level"):
        bootstrap_ci([1.0, 2.0], confidence_level=1.5)
    with pytest.raises(ValueError, match="method"):
        bootstrap_ci([1.0, 2.0], method="normal")
    with pytest.raises(TypeError, match="n_resamples"):
        bootstrap_ci([1.0, 2.0], n_resamples=10.5)
    with pytest.raises(TypeError, match="statistic"):
        bootstrap_ci([1.0, 2.0], statistic="mean")
    x = np.array([1.0, 2.0, 3.0])
    bootstrap_ci(x)
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])  # not changed


def test_resampled_means_stay_within_the_data_range():
    within = np.zeros(72)
    within[[3, 40]] = 1.0  # a share of 2 / 72
    ci = bootstrap_of_means(within, method="percentile", random_state=0)
    assert ci.distribution.min() >= 0.0 and ci.distribution.max() <= 1.0
    assert np.all(np.signbit(ci.distribution) == False)  # noqa: E712  (no -0.0 either)
    assert 0.0 <= ci.low <= 2 / 72 <= ci.high
