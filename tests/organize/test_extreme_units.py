"""The organizer's trees and orders do not depend on the units of X down to the subnormals
and up to near the float maximum, with every tree method, dense and sparse."""

import numpy as np
import pytest
import scipy.sparse as sp

from skorg import QuestionnaireOrganizer
from skorg.organize import questionnaire
from skorg.organize._presets import ORGANIZER_TREE_METHODS


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 50, size=(16, 12)).astype(np.float64)
    X[X < 25] = 0.0  # half zeros: a sparse matrix worth the name
    return X / 64.0


@pytest.fixture(scope="module")
def reference(data):
    return {
        m: QuestionnaireOrganizer(n_iter=1, tree_method=m).fit(data) for m in ORGANIZER_TREE_METHODS
    }


@pytest.mark.parametrize("kind", ["dense", "sparse"])
@pytest.mark.parametrize("factor", [1e-310, 1e307])
@pytest.mark.parametrize("method", ORGANIZER_TREE_METHODS)
def test_every_tree_method_in_extreme_units(data, reference, method, factor, kind):
    X = data * factor  # 1e-310: every entry subnormal
    X = sp.csr_matrix(X) if kind == "sparse" else X
    got = QuestionnaireOrganizer(n_iter=1, tree_method=method).fit(X)
    want = reference[method]
    for a, b in zip(got.trees_, want.trees_, strict=True):
        assert a == b  # partitions and leaf order
    for a, b in zip(got.orders_, want.orders_, strict=True):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(got.distances_, want.distances_, strict=True):
        assert np.isfinite(a).all()
        np.testing.assert_allclose(a, b * factor, rtol=1e-9, atol=0)


def test_distances_past_the_float_range_are_refused_with_the_magnitude(data):
    X = np.where(data > 0, data, -0.5) / data.max() * 1.7e308  # up to the float maximum
    with pytest.raises(ValueError, match=r"distances \(distances_\) cannot be represented"):
        questionnaire(X, n_iter=1)
