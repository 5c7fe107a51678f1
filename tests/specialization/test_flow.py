import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from skorg.specialization import (  # noqa: E402
    AttentionRegressor,
    DiscretePrior,
    FlowTrajectory,
    GaussianPrior,
    OrderParameters,
    SingleLocationTask,
    bayes_risk,
    integrate_flow,
    order_parameters,
    random_initial_order,
    specialization_events,
    spike_prior,
    train_online,
)


@pytest.fixture(autouse=True)
def _one_thread():
    # these tensors are tiny: one torch thread is much faster on a shared machine
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _stack(orders):
    return OrderParameters(
        *(
            np.stack([getattr(o, f.name) for o in orders])
            for f in dataclasses.fields(OrderParameters)
        )
    )


@pytest.mark.parametrize("normalization", ["softmax", "softmax1", "bayes_softmax"])
def test_gradient_flow_risk_is_non_increasing(normalization):
    task = SingleLocationTask(GaussianPrior([2.0, 1.0], mean=[0.5, 0.0]), dim=100, noise=0.1)
    start = random_initial_order(task, 2, 2, key_scale=0.5, value_scale=0.1, random_state=0)
    flows = integrate_flow(
        start,
        task,
        normalization,
        t_max=3.0,
        learning_rate=0.5,
        sgd_noise=False,
        record_every=0.25,
        n_samples=128,
        rtol=1e-6,
        atol=1e-9,
    )
    for flow in flows:
        assert isinstance(flow, FlowTrajectory)
        assert np.all(np.diff(flow.risk) <= 1e-7)
        assert flow.risk[-1] < flow.risk[0] - 0.05


@pytest.mark.slow
def test_flow_matches_sgd_and_the_gap_shrinks_with_dim():
    # one head, spike prior: the SGD order parameters approach the flow started from the same
    # initial order parameters as D grows (finite-D fluctuations are O(1 / sqrt(D)))
    gaps = {}
    for dim in (64, 1024):
        task = SingleLocationTask(spike_prior([2.0]), n_tokens=4, dim=dim, noise=0.1)
        models = [
            AttentionRegressor(dim, 1, key_scale=0.5, random_state=s, dtype=torch.float64)
            for s in range(4)
        ]
        start = _stack([order_parameters(m, task) for m in models])
        flows = integrate_flow(
            start, task, t_max=3.0, learning_rate=0.5, record_every=0.5, n_samples=2048
        )
        hists = train_online(models, task, t_max=3.0, learning_rate=0.5, record_every=0.5)
        gaps[dim] = np.mean(
            [
                max(
                    np.abs(h.m - f.m).max(),
                    np.abs(h.order.value_alignment - f.order.value_alignment).max(),
                )
                for h, f in zip(hists, flows, strict=True)
            ]
        )
    # measured: 0.073 at D = 64, 0.024 at 256, 0.018 at 1024 (four seeds)
    assert gaps[1024] < 0.5 * gaps[64]
    assert gaps[1024] < 0.03


@pytest.mark.slow
def test_sgd_noise_term_grows_the_overlaps_like_sgd():
    # at a large per-sample step the eta^2 noise term is what keeps q of SGD: without it the
    # flow misses q by far more than the finite-D fluctuations
    dim, lr = 400, 1.0
    task = SingleLocationTask(spike_prior([2.0]), n_tokens=4, dim=dim, noise=0.1)
    models = [
        AttentionRegressor(dim, 1, key_scale=0.5, random_state=s, dtype=torch.float64)
        for s in range(3)
    ]
    start = _stack([order_parameters(m, task) for m in models])
    kw = dict(
        t_max=2.0, learning_rate=lr, value_learning_rate=0.3, record_every=1.0, n_samples=2048
    )
    with_noise = integrate_flow(start, task, **kw)
    without = integrate_flow(start, task, sgd_noise=False, **kw)
    hists = train_online(
        models, task, t_max=2.0, learning_rate=lr, value_learning_rate=0.3, record_every=1.0
    )
    q_sgd = np.mean([h.order.value_overlap[-1, 0, 0] for h in hists])
    q_noise = np.mean([f.order.value_overlap[-1, 0, 0] for f in with_noise])
    q_plain = np.mean([f.order.value_overlap[-1, 0, 0] for f in without])
    assert abs(q_noise - q_sgd) < 0.5 * abs(q_plain - q_sgd)


def test_bayes_softmax_fixed_point_has_the_bayes_risk():
    # linearly independent support points: the Bayes keys have a non-singular overlap q
    prior = DiscretePrior([[2.5, 0.0], [0.0, 2.0]], [0.6, 0.4])
    task = SingleLocationTask(prior, n_tokens=4, dim=32, noise=0.1)
    start = order_parameters(AttentionRegressor.bayes_optimal(task), task)
    flow = integrate_flow(
        start, task, "bayes_softmax", t_max=0.5, sgd_noise=False, record_every=0.5, n_samples=4000
    )
    ref, ref_se = bayes_risk(task, 400_000, random_state=3)
    assert abs(flow.risk[0] - ref) < 4 * np.hypot(flow.risk_std_error[0], ref_se)
    # a fixed point: nothing moves beyond the Monte Carlo error of the gradient
    assert np.abs(flow.m[-1] - flow.m[0]).max() < 0.01
    assert abs(flow.risk[-1] - flow.risk[0]) < 1e-3


def test_events_run_on_a_flow_and_flow_is_deterministic():
    task = SingleLocationTask(spike_prior([3.0]), dim=1000, noise=0.1)
    start = random_initial_order(task, 2, 2, random_state=1)
    kw = dict(
        t_max=6.0, learning_rate=1.0, value_learning_rate=0.3, record_every=0.5, n_samples=256
    )
    flows = integrate_flow(start, task, **kw)
    again = integrate_flow(start, task, **kw)
    for a, b in zip(flows, again, strict=True):
        np.testing.assert_array_equal(a.m, b.m)
    for flow in flows:
        ev = specialization_events(flow.t, flow.m, threshold=0.02)
        norms = np.linalg.norm(flow.m, axis=1)
        for f in range(norms.shape[1]):
            above = np.flatnonzero(norms[:, f] > 0.02)
            expected = flow.t[above[0]] if above.size else np.inf
            assert ev.times[f] == expected


def test_integrate_flow_validates():
    task = SingleLocationTask(spike_prior([1.0]), dim=50)
    start = random_initial_order(task, 1, random_state=0)
    with pytest.raises(ValueError, match="learning_rate"):
        integrate_flow(start, task, learning_rate=-1.0)
    with pytest.raises(ValueError, match="t_max"):
        integrate_flow(start, task, t_max=0)
    with pytest.raises(ValueError, match="normalization"):
        integrate_flow(start, task, "tanh")
    with pytest.raises(ValueError, match="step"):
        integrate_flow(start, task, method="midpoint", step=-0.1)
    with pytest.raises(ValueError, match="leading axis"):
        integrate_flow(
            random_initial_order(task, 1, 2, random_state=0).__class__(
                *(np.stack([x, x]) for x in dataclasses.astuple(random_initial_order(task, 1, 2)))
            ),
            task,
        )


def test_midpoint_matches_a_tight_adaptive_run_at_second_order():
    task = SingleLocationTask(spike_prior([2.0]), n_tokens=4, dim=100, noise=0.1)
    start = random_initial_order(task, 2, 1, key_scale=0.5, value_scale=0.1, random_state=0)
    kw = dict(t_max=2.0, learning_rate=0.5, record_every=0.5, n_samples=128, sgd_noise=False)
    ref = integrate_flow(start, task, rtol=1e-9, atol=1e-12, **kw)[0]
    errs = []
    for step in (0.1, 0.05):
        mid = integrate_flow(start, task, method="midpoint", step=step, **kw)[0]
        np.testing.assert_array_equal(mid.t, ref.t)
        errs.append(np.abs(mid.order.q - ref.order.q).max() + np.abs(mid.m - ref.m).max())
    # second order: halving the step divides the error by about four
    assert errs[0] < 1e-3
    assert errs[1] < 0.35 * errs[0]


def test_midpoint_keeps_the_gram_matrix_positive_from_zero_values():
    # values start at zero, on the boundary of the cone: the congruence step never leaves it
    task = SingleLocationTask(GaussianPrior([3.0, 2.0, 1.0]), dim=10_000, noise=0.1)
    start = random_initial_order(task, 4, 2, random_state=0)
    flows = integrate_flow(
        start,
        task,
        t_max=8.0,
        learning_rate=1.0,
        value_learning_rate=0.2,
        record_every=2.0,
        n_samples=32,
        method="midpoint",
        step=0.25,
        fresh_draws=True,
    )
    for flow in flows:
        o = flow.order
        for k in range(flow.t.size):
            omega = np.block(
                [[o.q[k], o.key_value_overlap[k]], [o.key_value_overlap[k].T, o.value_overlap[k]]]
            )
            T = np.concatenate(
                [
                    np.concatenate([o.m[k], o.key_value_alignment[k][:, None]], axis=1),
                    np.concatenate([o.value_key_alignment[k], o.value_alignment[k][:, None]], 1),
                ]
            )
            full = np.block([[omega, T], [T.T, np.eye(4)]])
            assert np.linalg.eigvalsh(full)[0] > -1e-10
    again = integrate_flow(
        start,
        task,
        t_max=8.0,
        learning_rate=1.0,
        value_learning_rate=0.2,
        record_every=2.0,
        n_samples=32,
        method="midpoint",
        step=0.25,
        fresh_draws=True,
    )
    np.testing.assert_array_equal(again[0].m, flows[0].m)


def test_saddle_escape_follows_the_variances_whatever_their_order():
    # the signal design is isotropic per token-noise draw: the Monte Carlo error cannot favour
    # one latent direction, so permuting the variances permutes the growth of the alignments
    growth = {}
    for var in ([3.0, 2.0, 1.0], [1.0, 3.0, 2.0]):
        task = SingleLocationTask(GaussianPrior(var), dim=10_000, noise=0.1)
        start = random_initial_order(task, 1, 1, random_state=0)
        flow = integrate_flow(
            start,
            task,
            t_max=4.0,
            learning_rate=1.0,
            value_learning_rate=0.2,
            record_every=4.0,
            n_samples=64,
            method="midpoint",
            step=0.2,
            sgd_noise=False,
        )[0]
        growth[tuple(var)] = np.abs(flow.m[-1, 0]) / np.abs(flow.m[0, 0])
    for var, g in growth.items():
        assert list(np.argsort(-g)) == list(np.argsort(-np.asarray(var)))


def test_midpoint_step_is_the_explicit_midpoint_rule_on_the_weights():
    # one step of integrate_flow equals W_mid = W + (h/2) K_0 W, W_new = W + h K_mid W_mid on
    # weight vectors whose Gram matrix is the start, with K_mid evaluated at the Gram of W_mid
    from skorg.specialization._flow import _coefficients
    from skorg.specialization._montecarlo import _Draws
    from skorg.specialization._population import _pack

    task = SingleLocationTask(GaussianPrior([2.0, 1.0]), dim=400, noise=0.1)
    start = random_initial_order(task, 2, 3, key_scale=0.5, value_scale=0.2, random_state=2)
    lr, h = 0.5, 0.4
    flows = integrate_flow(
        start,
        task,
        t_max=h,
        learning_rate=lr,
        record_every=h,
        step=h,
        method="midpoint",
        sgd_noise=False,
        n_samples=32,
        random_state=5,
    )
    omega, T, b, _ = _pack(start, task)
    n, W = omega.shape[:2]
    F1 = T.shape[2]
    full = np.block([[omega, T], [np.swapaxes(T, 1, 2), np.broadcast_to(np.eye(F1), (n, F1, F1))]])
    evals, evecs = np.linalg.eigh(full)
    vecs = evecs * np.sqrt(np.clip(evals, 0, None))[:, None, :]  # rows: weights then targets
    draws = _Draws(task, 2, 32, 5)
    lam = np.full(W, lr)

    def velocity(v, bias):
        gram = v @ np.swapaxes(v, 1, 2)
        A, B, _, d_b = _coefficients(
            gram[:, :W, :W], gram[:, :W, W:], bias, draws, "softmax", 0.1, lam, lr, False
        )
        K = np.concatenate([A, B], axis=2)  # the velocity of the weights: K @ (weights, targets)
        return K @ v, d_b

    v0, db0 = velocity(vecs, b)
    mid = vecs.copy()
    mid[:, :W] += 0.5 * h * v0
    v1, db1 = velocity(mid, b + 0.5 * h * db0)
    new = vecs.copy()
    new[:, :W] += h * v1
    gram = new @ np.swapaxes(new, 1, 2)
    for i, flow in enumerate(flows):
        np.testing.assert_allclose(flow.order.q[-1], gram[i, :2, :2], rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(flow.m[-1], gram[i, :2, W : W + 2], rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(
            flow.order.value_overlap[-1], gram[i, 2:W, 2:W], rtol=1e-10, atol=1e-14
        )
        np.testing.assert_allclose(flow.order.biases[-1], b[i] + h * db1[i], rtol=1e-10, atol=1e-14)
