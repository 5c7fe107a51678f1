"""Counts, record times, learning rates and dimensions checked before any work."""

import numpy as np
import pytest

from skorg.specialization import (
    GaussianPrior,
    SingleLocationTask,
    random_initial_order,
    run_flow_specialization_test,
    unspecialized_time,
    wilson_interval,
)


@pytest.mark.parametrize(
    ("k", "n", "name"), [(2.5, 10, "successes"), (3, 10.5, "trials"), (np.nan, 10, "successes")]
)
def test_wilson_interval_takes_counts(k, n, name):
    with pytest.raises(ValueError, match=f"{name} must be whole numbers"):
        wilson_interval(k, n)  # (2.5, 10) was accepted


def test_wilson_interval_of_whole_numbers_and_bad_types():
    assert wilson_interval(3.0, 10) == wilson_interval(3, 10)
    low, high = wilson_interval(np.array([0, 5]), np.array([10, 10]))
    assert low[0] == 0.0 and high[1] == 1 - low[1]  # symmetric about 1/2 at 5 of 10
    with pytest.raises(TypeError, match="successes must be whole numbers"):
        wilson_interval(True, 10)
    with pytest.raises(TypeError, match="trials must be whole numbers"):
        wilson_interval(3, "10")
    with pytest.raises(ValueError, match="confidence must be a number in"):
        wilson_interval(3, 10, confidence=np.nan)


def test_unspecialized_time_refuses_decreasing_or_complex_records():
    m = [[[0.0, 0.01]], [[0.5, 0.1]], [[1.0, 0.0]]]
    assert unspecialized_time([0.0, 1.0, 2.0], m, [1.0, 0.0]) == 1.0
    with pytest.raises(ValueError, match="t must hold finite record times in increasing order"):
        unspecialized_time([2.0, 1.0, 0.0], m, [1.0, 0.0])  # returned 1.0
    with pytest.raises(ValueError, match="t must hold finite"):
        unspecialized_time([0.0, np.nan, 2.0], m, [1.0, 0.0])
    with pytest.raises(TypeError, match="m must hold real numbers"):
        unspecialized_time([0.0, 1.0, 2.0], np.asarray(m) + 0j, [1.0, 0.0])


@pytest.mark.parametrize("rates", [(0,), (-1.0,), (np.nan,), (np.inf,), ("1",), (True,)])
def test_flow_test_refuses_non_positive_learning_rates(rates):
    # (0,) was a ZeroDivisionError
    with pytest.raises(ValueError, match="learning_rates must hold finite positive numbers"):
        run_flow_specialization_test(learning_rates=rates, n_init=1, n_heads=2, tau_max=1.0)
    with pytest.raises(TypeError, match="learning_rates must be a sequence"):
        run_flow_specialization_test(learning_rates=1.0)


def test_the_flow_test_takes_any_dimension_and_the_frame_is_checked_when_used(monkeypatch):
    monkeypatch.setenv("SKORG_MAX_MEMORY", "64")
    # dim = 10**12: asked for 29.1 TiB (the task's frame) before; the flow needs none of it
    res = run_flow_specialization_test(
        dim=10**12, n_init=1, n_heads=2, learning_rates=(1.0,), tau_max=1.0, n_samples=16,
        progress=False,
    )  # fmt: skip
    assert res.tau.shape == (1, 1, 3) and res.params["dim"] == 10**12
    task = SingleLocationTask(GaussianPrior([3.0, 2.0, 1.0]), dim=10**12)
    assert random_initial_order(task, 2).m.shape == (2, 3)
    with pytest.raises(
        MemoryError, match=r"directions at dim=1000000000000 needs about 1.49e\+05 GiB"
    ):
        task.key_directions


def test_a_frame_drawn_when_first_used_is_the_one_drawn_at_once():
    # an integer seed: the same frame whenever it is drawn; a Generator: drawn at once
    a = SingleLocationTask(GaussianPrior([2.0, 1.0]), dim=12, random_state=5)
    rng = np.random.default_rng(5)
    frame, _ = np.linalg.qr(rng.standard_normal((12, 3)))
    assert np.array_equal(a.key_directions, np.sqrt(12) * frame[:, :2].T)
    assert np.array_equal(a.value_direction, np.sqrt(12) * frame[:, 2])
    g = np.random.default_rng(5)
    b = SingleLocationTask(GaussianPrior([2.0, 1.0]), dim=12, random_state=g)
    assert np.array_equal(b.key_directions, a.key_directions)
    assert not np.array_equal(g.standard_normal(3), np.random.default_rng(5).standard_normal(3))
    import pickle

    c = SingleLocationTask(GaussianPrior([2.0, 1.0]), dim=12, random_state=5)
    c = pickle.loads(pickle.dumps(c))  # not drawn yet: drawn after the round trip
    assert np.array_equal(c.key_directions, a.key_directions)
