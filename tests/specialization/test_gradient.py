"""The analytic risk, gradient and SGD-noise pass against automatic differentiation."""

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from skorg.specialization import (  # noqa: E402
    NORMALIZATIONS,
    DiscretePrior,
    GaussianPrior,
    SingleLocationTask,
    population_risk,
    population_risk_gradient,
    random_initial_order,
)
from skorg.specialization._gradient import _evaluate  # noqa: E402
from skorg.specialization._montecarlo import _Draws, _risk_core_autograd, _sgd_noise  # noqa: E402
from skorg.specialization._population import _pack  # noqa: E402

BIASES = ["zero_biases", "random_biases"]


def _state(prior, biases, n_init=3, n_heads=3, seed=0):
    task = SingleLocationTask(prior, n_tokens=4, dim=500, noise=0.2, random_state=0)
    order = random_initial_order(
        task, n_heads, n_init, key_scale=1.0, value_scale=0.6, random_state=seed
    )
    if biases == "random_biases":
        rng = np.random.default_rng(seed + 1)
        order = dataclasses.replace(order, biases=rng.standard_normal(order.biases.shape))
    return task, order


PRIORS = {
    "gaussian": GaussianPrior([3.0, 2.0, 1.0], mean=[0.5, 0.0, -0.3]),
    "discrete": DiscretePrior([[2.0, 0.0, 0.0], [0.0, -1.5, 0.5], [0.5, 0.5, 1.0]]),
}


@pytest.mark.parametrize("prior", list(PRIORS))
@pytest.mark.parametrize("biases", BIASES)
@pytest.mark.parametrize("normalization", NORMALIZATIONS)
def test_analytic_pass_equals_autograd(normalization, biases, prior):
    task, order = _state(PRIORS[prior], biases)
    omega, T, b, _ = _pack(order, task)
    draws = _Draws(task, b.shape[1], 24, 3)
    risk0, se0, grads0 = _risk_core_autograd(
        omega, T, b, draws, normalization, task.noise, grad=True
    )
    noise0 = _sgd_noise(*(torch.from_numpy(x) for x in (omega, T, b)), draws, normalization, 0.2)
    before = [x.copy() for x in (omega, T, b)]
    risk, se, grads, noise = _evaluate(
        omega, T, b, draws, normalization, task.noise, grad=True, noise_term=True
    )
    for x, y in zip(before, (omega, T, b), strict=True):
        np.testing.assert_array_equal(x, y)  # arguments untouched
    np.testing.assert_allclose(risk, risk0, rtol=1e-13)
    np.testing.assert_allclose(se, se0, rtol=1e-10)
    scale = max(np.abs(g).max() for g in grads0)
    for g, g0 in zip(grads, grads0, strict=True):
        # relative to the gradient's scale: with softmax the bias gradient is exactly zero
        # (a constant shift of one head's scores does not move its weights), and both sides
        # hold rounding there
        np.testing.assert_allclose(g, g0, rtol=1e-12, atol=1e-12 * scale)
    np.testing.assert_allclose(noise, noise0.numpy(), rtol=1e-12, atol=1e-12 * np.abs(noise).max())


@pytest.mark.parametrize("biases", BIASES)
@pytest.mark.parametrize("normalization", NORMALIZATIONS)
def test_analytic_gradient_equals_central_differences(normalization, biases):
    task, order = _state(PRIORS["gaussian"], biases, n_init=1, n_heads=2, seed=4)
    _, _, grad = population_risk_gradient(order, task, normalization, n_samples=40)
    rng = np.random.default_rng(9)
    h = 1e-5
    for field in ("m", "q", "biases", "value_overlap", "key_value_overlap", "value_alignment"):
        x = getattr(order, field)
        d = rng.standard_normal(x.shape)
        if field in ("q", "value_overlap"):
            d = d + np.swapaxes(d, -1, -2)
        risk = [
            population_risk(
                dataclasses.replace(order, **{field: x + s * h * d}),
                task,
                normalization,
                n_samples=40,
            )[0]
            for s in (1, -1)
        ]
        fd = (risk[0] - risk[1]) / (2 * h)
        np.testing.assert_allclose(np.sum(getattr(grad, field) * d), fd, rtol=1e-6, atol=1e-9)


def test_softmax_bias_gradient_vanishes_and_softmax1_does_not():
    # softmax is invariant to a per-head shift of the scores; softmax-1 is not
    task, order = _state(PRIORS["gaussian"], "random_biases")
    _, _, g_soft = population_risk_gradient(order, task, "softmax", n_samples=32)
    _, _, g_one = population_risk_gradient(order, task, "softmax1", n_samples=32)
    assert np.abs(g_soft.biases).max() < 1e-14 * np.abs(g_soft.q).max()
    assert np.abs(g_one.biases).max() > 1e-3


def test_chunked_evaluation_equals_one_chunk(monkeypatch):
    from skorg.specialization import _gradient

    task, order = _state(PRIORS["gaussian"], "random_biases", n_init=7)
    omega, T, b, _ = _pack(order, task)
    draws = _Draws(task, b.shape[1], 16, 0)
    whole = _evaluate(omega, T, b, draws, "softmax1", 0.2, grad=True, noise_term=True)
    # one init per chunk
    monkeypatch.setattr(_gradient, "_BLOCK", 1)
    parts = _evaluate(omega, T, b, draws, "softmax1", 0.2, grad=True, noise_term=True)
    np.testing.assert_allclose(parts[0], whole[0], rtol=1e-14)
    for x, y in zip(parts[2], whole[2], strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(parts[3], whole[3], rtol=1e-12, atol=1e-15)
