import numpy as np
import pytest

torch = pytest.importorskip("torch")

from skorg.specialization import (  # noqa: E402
    AttentionRegressor,
    GaussianPrior,
    SingleLocationTask,
    bayes_risk,
    flipped_spike_prior,
    model_risk,
    order_parameters,
    posterior_position_weights,
    spike_prior,
)
from skorg.specialization._risk import _subspace  # noqa: E402


def _random_model(dim, n_heads, normalization, seed):
    rng = np.random.default_rng(seed)
    return AttentionRegressor.from_weights(
        rng.standard_normal((n_heads, dim)),
        rng.standard_normal(n_heads),
        rng.standard_normal((n_heads, dim)) * 0.3,
        normalization,
    )


def test_order_parameters_match_direct_computation():
    task = SingleLocationTask(GaussianPrior([2.0, 1.0]), dim=20)
    model = _random_model(20, 3, "softmax1", 0)
    K, V = model.keys.detach().numpy(), model.values.detach().numpy()
    op = order_parameters(model, task)
    np.testing.assert_allclose(op.m, K @ task.key_directions.T / 20, rtol=1e-12)
    np.testing.assert_allclose(op.q, K @ K.T / 20, rtol=1e-12)
    np.testing.assert_allclose(op.r, K @ K.T / 20 - op.m @ op.m.T, atol=1e-12)
    np.testing.assert_allclose(op.value_alignment, V @ task.value_direction / 20, rtol=1e-12)
    np.testing.assert_allclose(op.value_overlap, V @ V.T / 20, rtol=1e-12)
    np.testing.assert_array_equal(op.biases, model.biases.detach().numpy())


def test_residual_is_orthogonal_part_of_keys():
    task = SingleLocationTask(GaussianPrior([2.0, 1.0]), dim=20)
    model = _random_model(20, 3, "softmax", 1)
    K = model.keys.detach().numpy()
    P = task.key_directions.T @ task.key_directions / 20  # projector on span k*
    K_perp = K - K @ P
    np.testing.assert_allclose(order_parameters(model, task).r, K_perp @ K_perp.T / 20, atol=1e-12)


@pytest.mark.parametrize("normalization", ["softmax", "softmax1", "bayes_softmax"])
def test_subspace_reduction_is_exact(normalization):
    # outputs and labels depend on a token only through its projection on the subspace
    task = SingleLocationTask(flipped_spike_prior([1.0, 2.0]), n_tokens=3, dim=30, noise=0.0)
    model = _random_model(30, 2, normalization, 2)
    Q = _subspace(model, task)
    X, y, pos, _ = task.sample(20, random_state=4, return_latent=True)
    Xp = X @ Q
    Kp, Vp = (t.detach().numpy() @ Q for t in (model.keys, model.values))
    reduced = AttentionRegressor.from_weights(Kp, model.biases.detach(), Vp, normalization)
    from skorg.specialization import attention_forward

    got = attention_forward(
        torch.from_numpy(Xp), reduced.keys, reduced.biases, reduced.values, normalization, dim=30
    )
    torch.testing.assert_close(got, model(torch.from_numpy(X)))
    rel = Xp[np.arange(20), pos]
    np.testing.assert_allclose(rel @ (task.value_direction @ Q) / np.sqrt(30), y, atol=1e-12)


def test_model_risk_agrees_with_full_dimensional_monte_carlo():
    task = SingleLocationTask(GaussianPrior([2.0]), n_tokens=4, dim=40, noise=0.3)
    model = _random_model(40, 2, "softmax1", 3)
    r, se = model_risk(model, task, 40_000, random_state=0)
    X, y = task.sample(40_000, random_state=1)
    err = (y - model(torch.from_numpy(X)).detach().numpy()) ** 2
    assert abs(r - err.mean()) < 3 * np.hypot(se, err.std() / np.sqrt(err.size))


def test_bayes_risk_without_signal_is_exact():
    task = SingleLocationTask(spike_prior([0.0, 0.0]), n_tokens=5, dim=8, noise=0.5)
    r, se = bayes_risk(task, 1000)
    assert r == pytest.approx(0.25 + 1 - 1 / 5, abs=1e-14)
    assert se == pytest.approx(0.0, abs=1e-7)


def test_bayes_risk_matches_squared_error_of_posterior_mean():
    task = SingleLocationTask(GaussianPrior([3.0, 0.5], mean=[0.5, 0.0]), n_tokens=4, dim=12)
    r, se = bayes_risk(task, 100_000, random_state=0)
    X, y = task.sample(100_000, random_state=1)
    w = posterior_position_weights(X @ task.key_directions.T / np.sqrt(12), task.prior)
    err = (y - np.sum(w * (X @ task.value_direction / np.sqrt(12)), axis=1)) ** 2
    assert abs(r - err.mean()) < 3 * np.hypot(se, err.std() / np.sqrt(err.size))


def test_posterior_matches_bayes_rule_on_full_tokens():
    # brute force: likelihood of the whole sequence under each position, in R^D
    from scipy.stats import multivariate_normal

    prior = flipped_spike_prior([1.5, -0.5])
    task = SingleLocationTask(prior, n_tokens=3, dim=6)
    X, _ = task.sample(4, random_state=5)
    D = 6
    for i in range(4):
        lik = []
        for e in range(3):
            total = 0.0
            for theta, p in zip(prior.points, prior.probabilities, strict=True):
                mu = theta @ task.key_directions / np.sqrt(D)
                dens = [
                    multivariate_normal.pdf(X[i, l], mean=mu if l == e else np.zeros(D))
                    for l in range(3)
                ]
                total += p * np.prod(dens)
            lik.append(total)
        lik = np.array(lik) / np.sum(lik)
        u = X[i : i + 1] @ task.key_directions.T / np.sqrt(D)
        np.testing.assert_allclose(posterior_position_weights(u, prior)[0], lik, rtol=1e-10)


def test_risk_input_validation():
    task = SingleLocationTask(spike_prior([1.0]), dim=8)
    with pytest.raises(ValueError, match="dim"):
        model_risk(AttentionRegressor(9, 1), task)
    with pytest.raises(ValueError, match="n_samples"):
        bayes_risk(task, 1)
    with pytest.raises(ValueError, match="directions"):
        posterior_position_weights(np.zeros((2, 3, 2)), task.prior)
