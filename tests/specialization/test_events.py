import numpy as np
import pytest

pytest.importorskip("torch")

from skorg.specialization import order_outcome, specialization_events


def test_events_on_a_hand_made_trace():
    t = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    m = np.zeros((5, 3, 2))
    # direction 0: head 2 grows (negative sign), dips by 25% at t=3, recovers
    m[:, 2, 0] = [0.1, 0.5, -1.2, -0.9, -1.3]
    m[:, 0, 0] = [0.0, 0.0, 0.2, 0.0, 0.0]
    # direction 1: split over two heads, column norm sqrt(0.8^2 + 0.8^2) > 1 first at t=4
    m[:, 0, 1] = [0.0, 0.2, 0.5, 0.7, 0.8]
    m[:, 1, 1] = [0.0, 0.2, 0.5, 0.7, 0.8]
    ev = specialization_events(t, m, threshold=1.0, drop=0.1)
    np.testing.assert_array_equal(ev.times, [2.0, 4.0])
    assert ev.heads[0] == 2 and ev.signs[0] == -1
    assert ev.heads[1] == 0 and ev.signs[1] == 1  # ties resolve to the first head
    norm0 = np.linalg.norm(m[2:, :, 0], axis=1)
    np.testing.assert_allclose(ev.max_drop, [1 - norm0[1] / norm0[0], 0.0])
    np.testing.assert_array_equal(ev.excursion, [True, False])


def test_never_captured_direction():
    ev = specialization_events([0.0, 1.0], np.zeros((2, 2, 1)) + 0.1)
    assert np.isinf(ev.times[0]) and ev.heads[0] == -1 and ev.signs[0] == 0


@pytest.mark.parametrize(
    ("times", "expected"),
    [
        ([1.0, 2.0, 3.0], 1),
        ([1.0, 2.0, np.inf], 1),
        ([2.0, 1.0, 3.0], -1),
        ([1.0, 1.0, 3.0], -1),
        ([np.inf, 1.0, np.inf], -1),
        ([1.0, np.inf, np.inf], 0),
        ([np.inf, np.inf, np.inf], 0),
    ],
)
def test_order_outcome(times, expected):
    assert order_outcome(times, [0, 1, 2]) == expected


def test_order_outcome_uses_the_predicted_permutation():
    assert order_outcome([3.0, 1.0, 2.0], [1, 2, 0]) == 1


def test_event_input_validation():
    with pytest.raises(ValueError, match="increasing"):
        specialization_events([1.0, 0.0], np.zeros((2, 1, 1)))
    with pytest.raises(ValueError, match="shape"):
        specialization_events([0.0], np.zeros((2, 1, 1)))
