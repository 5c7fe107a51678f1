"""ranking_stability with fractions that select fewer than one head, and bad fractions."""

import numpy as np
import pytest

from skorg.attention import ranking_stability


def test_a_tiny_fraction_still_selects_the_extreme_head():
    scores = np.array([[1.0, 2.0, 3.0, 4.0], [1.0, 3.0, 2.0, 4.0]])
    out = ranking_stability(scores, fraction=1e-12)
    assert out["always_top"].tolist() == [3] and out["always_bottom"].tolist() == [0]
    assert out["top_overlap"] == 1.0 and out["bottom_overlap"] == 1.0


@pytest.mark.parametrize("fraction", [np.nan, 0.0, 0.9, "0.1", True])
def test_bad_fractions_are_named(fraction):
    with pytest.raises(ValueError, match="fraction"):
        ranking_stability(np.ones((2, 4)), fraction=fraction)
