import numpy as np
import pytest

from skorg.attention import compare_networks, network_entropy
from skorg.stats import permutation_test_paired, permutation_test_two_sample
from skorg.trees import dyadic_tree


def dyadic(X):
    return [dyadic_tree(n) for n in X.shape]


def test_compare_networks_paired_interval_and_test():
    rng = np.random.default_rng(0)
    a = [np.ones((4, 4, 4)) + 0.05 * rng.random((4, 4, 4)) for _ in range(10)]
    b = [rng.random((4, 4, 4)) for _ in range(10)]
    out = compare_networks(a, b, dyadic, selection="all", normalize=True, n_resamples=500)
    ea = [network_entropy(X, dyadic(X), selection="all", normalize=True) for X in a]
    eb = [network_entropy(X, dyadic(X), selection="all", normalize=True) for X in b]
    np.testing.assert_allclose(out["a"], ea)
    d = np.array(ea) - np.array(eb)
    assert out["paired"] and out["difference"] == pytest.approx(d.mean())
    assert out["p_value"] == permutation_test_paired(d, n_resamples=9999)[1]
    assert out["effect_size"] == pytest.approx(d.mean() / d.std(ddof=1))
    ci = out["interval_difference"]
    assert ci["low"] <= out["difference"] <= ci["high"] < 0 and out["distinguishable"]
    assert out["fraction_a_lower"] == 1.0


def test_compare_networks_same_model_is_not_distinguishable():
    rng = np.random.default_rng(1)
    a = [rng.random((4, 4, 2)) for _ in range(8)]
    out = compare_networks(a, a, dyadic, selection="all")
    assert out["difference"] == 0.0 and out["p_value"] == 1.0 and not out["distinguishable"]


def test_compare_networks_two_sample_when_lengths_differ():
    rng = np.random.default_rng(2)
    a = [rng.random((4, 4, 2)) for _ in range(6)]
    b = [rng.random((4, 4, 2)) + 3.0 for _ in range(9)]
    out = compare_networks(a, b, dyadic, selection="all", normalize=True, n_resamples=400)
    assert not out["paired"]
    assert out["p_value"] == permutation_test_two_sample(out["a"], out["b"], n_resamples=9999)[1]
    assert out["interval_difference"]["low"] <= out["difference"]
    assert out["difference"] <= out["interval_difference"]["high"]
    with pytest.raises(ValueError, match="paired=True"):
        compare_networks(a, b, dyadic, paired=True)
    with pytest.raises(TypeError, match="organize"):
        compare_networks(a, b, None)
    single = compare_networks(a[:1], b[:1], dyadic)
    assert single["p_value"] is None and single["interval_difference"] is None
