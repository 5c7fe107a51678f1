import numpy as np
import pytest

pytest.importorskip("torch")

from skorg.specialization import (
    order_outcome,
    run_specialization_experiment,
)

SMALL = dict(
    variances=(24.0, 16.0, 8.0),
    dims=(64, 128),
    learning_rates=(3.0,),
    n_seeds=6,
    t_max=45.0,
    normalization="bayes_softmax",
    record_every=0.5,
    random_state=0,
)


@pytest.fixture(scope="module")
def small():
    return run_specialization_experiment(**SMALL)


def test_small_experiment_statistics_are_consistent(small):
    assert small.times.shape == (2, 1, 6, 3)
    np.testing.assert_array_equal(small.predicted_order, [0, 1, 2])
    recomputed = np.array(
        [
            [[order_outcome(tau, small.predicted_order) for tau in runs] for runs in per_lr]
            for per_lr in small.times
        ]
    )
    np.testing.assert_array_equal(small.outcomes, recomputed)
    np.testing.assert_allclose(small.order_fraction(), np.mean(recomputed == 1, axis=-1))
    np.testing.assert_array_equal(small.onset_times(), small.times.min(axis=-1))
    captured = np.isfinite(small.times)
    assert np.all((small.heads >= 0) == captured) and np.all((small.signs != 0) == captured)
    np.testing.assert_allclose(
        small.all_captured_fraction(), np.mean(np.isfinite(small.times).all(axis=-1), axis=-1)
    )
    assert "median_onset" in small.summary()


def test_small_experiment_captures_the_largest_variance_first(small):
    # every run captures some direction within t_max, and the first is the top-variance one
    first = np.argmin(small.times, axis=-1)
    assert np.all(np.isfinite(small.onset_times()))
    assert np.all(first == 0)


def test_experiment_is_deterministic(small):
    again = run_specialization_experiment(**SMALL)
    np.testing.assert_array_equal(again.times, small.times)
    np.testing.assert_array_equal(again.heads, small.heads)
