import numpy as np
import pytest
from scipy.stats import binomtest

torch = pytest.importorskip("torch")

from skorg.specialization import (  # noqa: E402
    FlowSpecializationTest,
    participation_ratio,
    run_flow_specialization_test,
    specialization_events,
    unspecialized_time,
    wilson_interval,
)


@pytest.mark.parametrize("k,n", [(0, 10), (3, 10), (10, 10), (57, 100), (100, 100)])
def test_wilson_interval_matches_scipy(k, n):
    ci = binomtest(k, n).proportion_ci(0.95, method="wilson")
    np.testing.assert_allclose(wilson_interval(k, n), (ci.low, ci.high), atol=1e-12)


def test_wilson_interval_validates():
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(5, 3)
    with pytest.raises(ValueError, match="confidence"):
        wilson_interval(1, 3, confidence=1.5)


def test_participation_ratio_closed_forms_and_units():
    m = np.array([[2.0, 0.0, 0.0], [1.0, -1.0, 0.0], [1.0, 1.0, 1.0], [3.0, 1.0, 0.0]])
    expected = [1.0, 2.0, 3.0, 100.0 / 82.0]
    np.testing.assert_allclose(participation_ratio(m), expected, rtol=1e-12)
    for scale in (1e-150, 1e150):
        np.testing.assert_allclose(participation_ratio(m * scale), expected, rtol=1e-12)
    assert np.isnan(participation_ratio(np.zeros((1, 3)))[0])
    with pytest.raises(ValueError, match="finite"):
        participation_ratio(np.array([[np.nan, 1.0]]))


def test_unspecialized_time():
    t = np.array([0.0, 1.0, 2.0, 3.0])
    m = np.array(
        [
            [[0.01, 0.0], [0.0, 0.01]],
            [[0.5, 0.0], [0.05, 0.2]],  # second head not yet aligned
            [[0.8, 0.1], [0.6, 0.1]],
            [[1.0, 0.0], [1.0, 0.0]],
        ]
    )
    assert unspecialized_time(t, m, [2.0, 0.0]) == 2.0
    assert unspecialized_time(t, m, [0.0, 1.0]) == np.inf
    with pytest.raises(ValueError, match="non-zero"):
        unspecialized_time(t, m, [0.0, 0.0])
    with pytest.raises(ValueError, match="agree"):
        unspecialized_time(t, m, [1.0])


def test_flow_specialization_test_small_run():
    res = run_flow_specialization_test(
        variances=(6.0, 1.0),
        n_heads=2,
        dim=1000,
        n_init=3,
        learning_rates=(1.0, 0.01),
        tau_max=4.0,
        n_samples=64,
        record_every=0.5,
        threshold=0.05,
        keep_trajectories=True,
    )
    assert isinstance(res, FlowSpecializationTest)
    assert res.tau.shape == (2, 3, 2)
    np.testing.assert_array_equal(res.predicted_order, [0, 1])
    rows = res.table()
    assert [r["learning_rate"] for r in rows] == [1.0, 0.01]
    for r, out in zip(rows, res.outcomes, strict=True):
        assert r["order_held"] == np.sum(out == 1)
        assert r["order_held_interval"] == wilson_interval(r["order_held"], 3)
    for j, r in enumerate(rows):
        tau = res.tau[j][:, res.predicted_order]
        np.testing.assert_array_equal(r["captured_per_direction"], np.isfinite(tau).sum(axis=0))
        both = np.all(np.isfinite(tau), axis=1) & np.all(tau[:, :-1] < tau[:, 1:], axis=1)
        assert r["all_captured_in_order"] == int(both.sum())
        assert r["all_captured_in_order_interval"] == wilson_interval(int(both.sum()), 3)
    assert "Wilson" in res.summary()
    # tau is read from the trajectories on the rescaled time lr * t
    for j, lr in enumerate(res.learning_rates):
        for s, flow in enumerate(res.trajectories[j]):
            ev = specialization_events(lr * flow.t, flow.m, threshold=0.05)
            np.testing.assert_array_equal(res.tau[j, s], ev.times)
            np.testing.assert_array_equal(res.max_drop[j, s], ev.max_drop)
            np.testing.assert_allclose(res.participation[j, s], participation_ratio(flow.m[-1]))
