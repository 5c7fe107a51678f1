import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from skorg.specialization import (  # noqa: E402
    NORMALIZATIONS,
    AttentionRegressor,
    DiscretePrior,
    GaussianPrior,
    OrderParameters,
    SingleLocationTask,
    bayes_risk,
    flipped_spike_prior,
    model_risk,
    order_parameters,
    population_risk,
    population_risk_gradient,
    random_initial_order,
    spike_prior,
)

FIELDS = [f.name for f in dataclasses.fields(OrderParameters)]


def _random_model(dim, n_heads, normalization, seed, value_scale=0.3):
    rng = np.random.default_rng(seed)
    return AttentionRegressor.from_weights(
        rng.standard_normal((n_heads, dim)),
        rng.standard_normal(n_heads),
        rng.standard_normal((n_heads, dim)) * value_scale,
        normalization,
    )


@pytest.mark.slow
@pytest.mark.parametrize("normalization", NORMALIZATIONS)
def test_population_risk_matches_monte_carlo_risk_of_the_weights(normalization):
    # an independent oracle: model_risk samples whole sequences and labels, at finite D
    task = SingleLocationTask(
        GaussianPrior([2.0, 1.0], mean=[0.5, 0.0]), n_tokens=3, dim=30, noise=0.2
    )
    model = _random_model(30, 2, normalization, 3)
    risk, se = population_risk(order_parameters(model, task), task, normalization, n_samples=20_000)
    mc, mc_se = model_risk(model, task, 200_000, random_state=11)
    assert abs(risk - mc) < 4 * np.hypot(se, mc_se)


@pytest.mark.parametrize("normalization", NORMALIZATIONS)
@pytest.mark.parametrize("field", FIELDS)
def test_gradient_equals_finite_differences(normalization, field):
    task = SingleLocationTask(
        GaussianPrior([2.0, 1.0], mean=[0.5, 0.0]), n_tokens=3, dim=30, noise=0.2
    )
    order = order_parameters(_random_model(30, 2, normalization, 0), task)
    _, _, grad = population_risk_gradient(order, task, normalization, n_samples=300)
    rng = np.random.default_rng(1)
    x = getattr(order, field)
    d = rng.standard_normal(x.shape)
    if field in ("q", "value_overlap"):
        d = d + d.T
    h = 1e-5
    plus = population_risk(
        dataclasses.replace(order, **{field: x + h * d}), task, normalization, n_samples=300
    )[0]
    minus = population_risk(
        dataclasses.replace(order, **{field: x - h * d}), task, normalization, n_samples=300
    )[0]
    fd = (plus - minus) / (2 * h)
    np.testing.assert_allclose(np.sum(getattr(grad, field) * d), fd, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("normalization", NORMALIZATIONS)
def test_zero_keys_closed_form(normalization):
    # constant scores: head h puts the same weight alpha_h on every token, so
    # y_hat = sum_l x_l . u / sqrt(D) with u = sum_h alpha_h v_h, and
    # R = 1 + Delta^2 + L |u|^2 / D - 2 u . v* / D + E (theta . U)^2 with U_f = u . k*_f / D
    prior = DiscretePrior([[1.5, 0.5], [-1.5, 0.5]])
    task = SingleLocationTask(prior, n_tokens=3, dim=40, noise=0.3, random_state=2)
    rng = np.random.default_rng(4)
    H, L = 3, task.n_tokens
    V = rng.standard_normal((H, 40))
    b = rng.standard_normal(H)
    model = AttentionRegressor.from_weights(np.zeros((H, 40)), b, V, normalization)
    order = order_parameters(model, task)
    if normalization == "softmax":
        alpha = np.full(H, 1.0 / L)
    elif normalization == "softmax1":
        alpha = np.exp(b) / (1 + L * np.exp(b))
    else:
        alpha = np.exp(b) / (L * np.exp(b).sum())
    u = alpha @ V
    U = u @ task.key_directions.T / 40
    signal = np.sum(prior.probabilities * (prior.points @ U) ** 2)
    closed = 1 + 0.09 + L * (u @ u) / 40 - 2 * (u @ task.value_direction) / 40 + signal
    # exact: the draws are stratified over the two support points and the scores are constant
    risk, _ = population_risk(order, task, normalization, n_samples=64)
    np.testing.assert_allclose(risk, closed, rtol=1e-8)  # up to the 1e-12 ridge on q


def test_zero_values_risk_is_label_variance():
    task = SingleLocationTask(GaussianPrior([3.0, 2.0]), dim=200, noise=0.25)
    order = random_initial_order(task, 4, n_init=3, key_scale=1.0, random_state=0)
    # y_hat = 0; the draws' moments are matched, so E (label part)^2 = 1 exactly
    risk, _ = population_risk(order, task, n_samples=128)
    np.testing.assert_allclose(risk, 1 + 0.25**2, rtol=1e-12)


@pytest.mark.parametrize(
    "prior",
    [flipped_spike_prior([2.0, 1.0]), DiscretePrior([[2.5, 0.0], [0.0, 2.0], [-1.0, -1.0]])],
)
def test_bayes_softmax_closed_form_has_the_bayes_risk(prior):
    task = SingleLocationTask(prior, n_tokens=4, dim=32, noise=0.1)
    order = order_parameters(AttentionRegressor.bayes_optimal(task), task)
    risk, se = population_risk(order, task, "bayes_softmax", n_samples=60_000)
    ref, ref_se = bayes_risk(task, 400_000, random_state=3)
    assert abs(risk - ref) < 4 * np.hypot(se, ref_se)


def test_random_initial_order_has_the_law_of_the_model_init():
    task = SingleLocationTask(GaussianPrior([1.0, 1.0]), dim=50)
    ks, vs, H = 0.3, 0.2, 3
    order = random_initial_order(task, H, 4000, key_scale=ks, value_scale=vs, random_state=1)
    # E q_hh = ks^2, Var q_hh = 2 ks^4 / D, E m^2 = ks^2 / D, E k.v = 0
    q_diag = np.diagonal(order.q, axis1=1, axis2=2).ravel()
    assert abs(q_diag.mean() - ks**2) < 4 * np.sqrt(2 * ks**4 / 50 / q_diag.size)
    np.testing.assert_allclose(q_diag.var(), 2 * ks**4 / 50, rtol=0.1)
    np.testing.assert_allclose(np.mean(order.m**2), ks**2 / 50, rtol=0.05)
    np.testing.assert_allclose(
        np.mean(np.diagonal(order.value_overlap, axis1=1, axis2=2)), vs**2, rtol=0.02
    )
    assert abs(order.key_value_overlap.mean()) < 4 * ks * vs / np.sqrt(
        50 * order.key_value_overlap.size
    )
    assert np.all(order.biases == 0)
    # deterministic
    again = random_initial_order(task, H, 4000, key_scale=ks, value_scale=vs, random_state=1)
    np.testing.assert_array_equal(order.q, again.q)


def test_population_risk_is_deterministic_and_leaves_order_unchanged():
    task = SingleLocationTask(spike_prior([1.0, 0.5]), dim=40)
    order = order_parameters(_random_model(40, 2, "softmax1", 5), task)
    before = {k: np.copy(getattr(order, k)) for k in FIELDS}
    r1 = population_risk(order, task, "softmax1", n_samples=100, random_state=7)
    r2 = population_risk(order, task, "softmax1", n_samples=100, random_state=7)
    assert r1 == r2
    for k in FIELDS:
        np.testing.assert_array_equal(getattr(order, k), before[k])


def test_population_risk_validates_its_arguments():
    task = SingleLocationTask(spike_prior([1.0]), dim=20)
    model = _random_model(20, 2, "softmax", 0)
    op = order_parameters(model, task)
    with pytest.raises(ValueError, match="key_value_overlap"):
        population_risk(dataclasses.replace(op, key_value_overlap=None), task)
    with pytest.raises(ValueError, match="Gram matrix"):
        population_risk(dataclasses.replace(op, q=-op.q), task)
    with pytest.raises(ValueError, match="finite"):
        population_risk(dataclasses.replace(op, biases=np.array([np.nan, 0.0])), task)
    with pytest.raises(ValueError, match="directions"):
        other = SingleLocationTask(spike_prior([1.0, 2.0]), dim=20)
        population_risk(op, other)
    with pytest.raises(ValueError, match="n_samples"):
        population_risk(op, task, n_samples=1)
    with pytest.raises(ValueError, match="normalization"):
        population_risk(op, task, "relu")
    with pytest.raises(TypeError, match="OrderParameters"):
        population_risk({"m": 1}, task)


def test_gaussian_design_is_isotropic_per_group():
    from skorg.specialization._montecarlo import _gaussian_design

    F = 3
    z = _gaussian_design(np.random.default_rng(0), 50, F).reshape(50, 2 * F, F)
    np.testing.assert_allclose(z.sum(axis=1), 0.0, atol=1e-12)
    second = np.einsum("gkf,gke->gfe", z, z) / (2 * F)
    radius2 = np.trace(second, axis1=1, axis2=2) / F
    np.testing.assert_allclose(second, radius2[:, None, None] * np.eye(F), atol=1e-12)
    np.testing.assert_allclose(second.mean(axis=0), np.eye(F), atol=1e-12)
