"""order_outcome refuses NaN capture times and orders that are not permutations."""

import numpy as np
import pytest

from skorg.specialization import order_outcome


def test_nan_times_are_refused_not_read_as_in_order():
    with pytest.raises(ValueError, match="times"):
        order_outcome([np.nan, 1.0, 2.0], [0, 1, 2])


@pytest.mark.parametrize("order", [[0, 0, 1], [0, 1], [0.0, 1.0, 2.0], [0, 1, 3]])
def test_order_must_be_a_permutation(order):
    with pytest.raises(ValueError, match="order"):
        order_outcome([1.0, 2.0, 3.0], order)
