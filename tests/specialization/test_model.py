import numpy as np
import pytest

torch = pytest.importorskip("torch")

from skorg.specialization import (  # noqa: E402
    AttentionRegressor,
    DiscretePrior,
    SingleLocationTask,
    attention_forward,
    bayes_risk,
    flipped_spike_prior,
    model_risk,
    posterior_position_weights,
    spike_prior,
)


def _brute_force(X, K, b, V, normalization):
    """Loops over samples, heads and tokens, straight from the model's definition."""
    n, L, D = X.shape
    H = K.shape[0]
    out = np.zeros(n)
    for i in range(n):
        s = np.array([[X[i, l] @ K[h] / np.sqrt(D) + b[h] for h in range(H)] for l in range(L)])
        z = np.array([[X[i, l] @ V[h] / np.sqrt(D) for h in range(H)] for l in range(L)])
        e = np.exp(s)
        if normalization == "softmax":
            a = e / e.sum(axis=0, keepdims=True)
        elif normalization == "softmax1":
            a = e / (1.0 + e.sum(axis=0, keepdims=True))
        else:
            a = e / e.sum()
        out[i] = np.sum(a * z)
    return out


@pytest.mark.parametrize("normalization", ["softmax", "softmax1", "bayes_softmax"])
def test_forward_matches_brute_force(normalization):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((6, 4, 10))
    K, V = rng.standard_normal((3, 10)), rng.standard_normal((3, 10))
    b = rng.standard_normal(3)
    model = AttentionRegressor.from_weights(K, b, V, normalization)
    got = model(torch.from_numpy(X)).detach().numpy()
    np.testing.assert_allclose(got, _brute_force(X, K, b, V, normalization), rtol=1e-12)


def test_softmax1_is_stable_for_large_scores():
    X = torch.full((1, 3, 4), 100.0, dtype=torch.float64)
    K = torch.full((1, 4), 10.0, dtype=torch.float64)
    V = torch.ones(1, 4, dtype=torch.float64)
    y = attention_forward(X, K, torch.zeros(1, dtype=torch.float64), V, "softmax1")
    # scores of 1000 on all 3 tokens: weights 1/3 each (up to e^-1000), values 200
    torch.testing.assert_close(y, torch.tensor([200.0], dtype=torch.float64))


def test_softmax1_head_with_very_negative_bias_switches_off():
    rng = np.random.default_rng(1)
    X = torch.from_numpy(rng.standard_normal((5, 3, 8)))
    K, V = rng.standard_normal((2, 8)), rng.standard_normal((2, 8))
    both = AttentionRegressor.from_weights(K, [0.3, -800.0], V, "softmax1")
    one = AttentionRegressor.from_weights(K[:1], [0.3], V[:1], "softmax1")
    torch.testing.assert_close(both(X), one(X), rtol=1e-14, atol=1e-15)


def test_softmax_ignores_biases_and_bayes_softmax_with_one_head_is_softmax():
    rng = np.random.default_rng(2)
    X = torch.from_numpy(rng.standard_normal((5, 4, 8)))
    K, V = rng.standard_normal((1, 8)), rng.standard_normal((1, 8))
    ref = AttentionRegressor.from_weights(K, [0.0], V, "softmax")(X)
    torch.testing.assert_close(AttentionRegressor.from_weights(K, [5.0], V, "softmax")(X), ref)
    bayes = AttentionRegressor.from_weights(K, [-3.0], V, "bayes_softmax")(X)
    torch.testing.assert_close(bayes, ref)


def test_bayes_softmax_with_shared_keys_averages_softmax_heads():
    rng = np.random.default_rng(3)
    X = torch.from_numpy(rng.standard_normal((5, 4, 8)))
    k = rng.standard_normal(8)
    K, V = np.stack([k, k, k]), rng.standard_normal((3, 8))
    bayes = AttentionRegressor.from_weights(K, [0.7] * 3, V, "bayes_softmax")(X)
    soft = AttentionRegressor.from_weights(K, [0.0] * 3, V, "softmax")(X)
    torch.testing.assert_close(bayes, soft / 3)


def test_replica_axes_broadcast():
    rng = np.random.default_rng(4)
    X = torch.from_numpy(rng.standard_normal((2, 5, 3, 6)))
    K, V = (
        torch.from_numpy(rng.standard_normal((2, 4, 6))),
        torch.from_numpy(rng.standard_normal((2, 4, 6))),
    )
    b = torch.from_numpy(rng.standard_normal((2, 4)))
    for norm in ("softmax", "softmax1", "bayes_softmax"):
        stacked = attention_forward(X, K, b, V, norm)
        for r in range(2):
            torch.testing.assert_close(stacked[r], attention_forward(X[r], K[r], b[r], V[r], norm))


def test_prune_keeps_heads_and_permutation_invariance():
    rng = np.random.default_rng(5)
    X = torch.from_numpy(rng.standard_normal((4, 3, 6)))
    model = AttentionRegressor.from_weights(
        rng.standard_normal((4, 6)),
        rng.standard_normal(4),
        rng.standard_normal((4, 6)),
        "bayes_softmax",
    )
    torch.testing.assert_close(model.prune([2, 0, 3, 1])(X), model(X))
    assert model.prune([1, 3]).n_heads == 2
    torch.testing.assert_close(model.prune([3]).keys, model.keys[3:])
    with pytest.raises(ValueError, match="repeat"):
        model.prune([1, 1])
    with pytest.raises(ValueError, match="ids in"):
        model.prune([4])


def test_bayes_optimal_estimator_is_the_posterior_mean():
    prior = DiscretePrior([[2.0, 0.0], [-2.0, 0.0], [0.0, 1.0]], [0.5, 0.3, 0.2])
    task = SingleLocationTask(prior, n_tokens=5, dim=24, noise=0.2)
    X, _ = task.sample(40, random_state=8)
    y_hat = AttentionRegressor.bayes_optimal(task)(torch.from_numpy(X)).detach().numpy()
    latent = X @ task.key_directions.T / np.sqrt(24)
    w = posterior_position_weights(latent, prior)
    g = X @ task.value_direction / np.sqrt(24)
    np.testing.assert_allclose(y_hat, np.sum(w * g, axis=1), rtol=1e-10)


def test_bayes_softmax_reaches_bayes_risk_and_softmax_does_not():
    task = SingleLocationTask(flipped_spike_prior([2.0]), n_tokens=4, dim=64, noise=0.1)
    r_bayes, se_bayes = bayes_risk(task, 200_000, random_state=0)
    r_model, se_model = model_risk(AttentionRegressor.bayes_optimal(task), task, 200_000, 1)
    se = np.hypot(se_bayes, se_model)
    assert abs(r_model - r_bayes) < 3 * se
    # softmax with the same keys, and even the best scalar rescaling of its value v*
    soft = AttentionRegressor.bayes_optimal(task, "softmax")
    X, y = task.sample(100_000, random_state=2)
    y_hat = soft(torch.from_numpy(X)).detach().numpy()
    c = (y @ y_hat) / (y_hat @ y_hat)
    err = (y - c * y_hat) ** 2
    r_soft, se_soft = err.mean(), err.std() / np.sqrt(err.size)
    assert r_soft - r_bayes > 10 * np.hypot(se_soft, se_bayes)


def test_single_spike_softmax_is_bayes_optimal():
    task = SingleLocationTask(spike_prior([1.5, 0.5]), n_tokens=3, dim=16)
    X = torch.from_numpy(task.sample(30, random_state=0)[0])
    torch.testing.assert_close(
        AttentionRegressor.bayes_optimal(task, "softmax")(X),
        AttentionRegressor.bayes_optimal(task)(X),
    )


def test_invalid_model_arguments():
    with pytest.raises(ValueError, match="normalization"):
        AttentionRegressor(4, 2, "relu")
    with pytest.raises(ValueError, match="n_heads"):
        AttentionRegressor(4, 0)
    with pytest.raises(ValueError, match="dimension"):
        AttentionRegressor(4, 1)(torch.zeros(2, 3, 5))
    with pytest.raises(ValueError, match="DiscretePrior"):
        from skorg.specialization import GaussianPrior

        AttentionRegressor.bayes_optimal(SingleLocationTask(GaussianPrior([1.0]), dim=8))
