import numpy as np
import pytest

torch = pytest.importorskip("torch")

from skorg.specialization import (  # noqa: E402
    AttentionRegressor,
    GaussianPrior,
    SingleLocationTask,
    order_parameters,
    train_online,
)


@pytest.fixture
def task():
    return SingleLocationTask(GaussianPrior([3.0, 1.0]), n_tokens=4, dim=32, noise=0.1)


def test_tracker_equals_direct_computation_from_weights(task):
    model = AttentionRegressor(32, 3, "softmax1", value_scale=0.1, random_state=0)
    start = order_parameters(model, task)
    hist = train_online(
        model, task, t_max=2.0, learning_rate=1.0, batch_size=4, record_every=0.5, random_state=1
    )
    np.testing.assert_allclose(hist.t, [0.0, 0.5, 1.0, 1.5, 2.0])
    end = order_parameters(model, task)
    for name in ("m", "q", "biases", "value_alignment", "value_overlap"):
        np.testing.assert_allclose(getattr(hist.order, name)[0], getattr(start, name), rtol=1e-12)
        np.testing.assert_allclose(getattr(hist.order, name)[-1], getattr(end, name), rtol=1e-12)
    np.testing.assert_allclose(hist.order.r[-1], end.r, rtol=1e-12, atol=1e-15)
    assert not np.allclose(hist.m[0], hist.m[-1])


@pytest.mark.parametrize("normalization", ["softmax", "softmax1", "bayes_softmax"])
def test_one_step_is_sgd_with_documented_rates(task, normalization):
    model = AttentionRegressor(
        32, 2, normalization, value_scale=0.5, random_state=3, dtype=torch.float64
    )
    with torch.no_grad():
        model.biases.copy_(torch.tensor([0.3, -0.2]))
    ref = AttentionRegressor.from_weights(
        model.keys.detach(), model.biases.detach(), model.values.detach(), normalization
    )
    B, lr, vlr = 4, 0.7, 0.2
    train_online(
        model,
        task,
        t_max=B / 32,
        learning_rate=lr,
        value_learning_rate=vlr,
        batch_size=B,
        random_state=5,
    )
    # the same samples: the trainer draws them from this generator, one batch per step
    X, y = task.sample(B, np.random.default_rng(5), backend="torch", dtype=torch.float64)
    loss = 0.5 * ((y - ref(X)) ** 2).sum()
    gk, gb, gv = torch.autograd.grad(loss, [ref.keys, ref.biases, ref.values])
    torch.testing.assert_close(model.keys, ref.keys - lr * gk)
    torch.testing.assert_close(model.biases, ref.biases - lr / 32 * gb)
    torch.testing.assert_close(model.values, ref.values - vlr * gv)


def test_frozen_groups_do_not_move(task):
    model = AttentionRegressor(32, 2, "bayes_softmax", value_scale=0.3, random_state=0)
    keys, values = model.keys.detach().clone(), model.values.detach().clone()
    train_online(model, task, t_max=1.0, train_keys=False, train_values=False)
    assert torch.equal(model.keys, keys) and torch.equal(model.values, values)
    assert not torch.equal(model.biases.detach(), torch.zeros(2))


def test_replicas_return_one_history_each(task):
    models = [AttentionRegressor(32, 2, random_state=s) for s in range(3)]
    hists = train_online(models, task, t_max=1.0, record_every=0.5, risk_samples=200)
    assert len(hists) == 3
    for model, hist in zip(models, hists, strict=True):
        assert hist.m.shape == (3, 2, 2) and hist.risk.shape == (3,)
        np.testing.assert_allclose(hist.m[-1], order_parameters(model, task).m, rtol=1e-12)
    assert not np.allclose(hists[0].m[-1], hists[1].m[-1])


def test_training_is_deterministic(task):
    runs = []
    for _ in range(2):
        model = AttentionRegressor(32, 2, random_state=0)
        runs.append(train_online(model, task, t_max=1.0, random_state=4).m)
    np.testing.assert_array_equal(runs[0], runs[1])


def test_divergence_is_reported(task):
    model = AttentionRegressor(32, 2, "softmax1", value_scale=1.0, random_state=0)
    with pytest.raises(FloatingPointError, match="learning rates"):
        train_online(model, task, t_max=5.0, learning_rate=1e6, record_every=0.5)


def test_train_validation(task):
    with pytest.raises(ValueError, match="replicas"):
        train_online([AttentionRegressor(32, 2), AttentionRegressor(32, 3)], task)
    with pytest.raises(ValueError, match="learning_rate"):
        train_online(AttentionRegressor(32, 2), task, learning_rate=0.0)
    with pytest.raises(ValueError, match="batch_size"):
        train_online(AttentionRegressor(32, 2), task, batch_size=1.5)
    with pytest.raises(ValueError, match="dim"):
        train_online(AttentionRegressor(16, 2), task)
