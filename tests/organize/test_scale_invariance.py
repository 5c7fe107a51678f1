"""The organizer does not depend on the units of the data (1e-150 to 1e150)."""

import numpy as np
import pytest

from skorg import QuestionnaireOrganizer
from skorg.datasets import make_shuffled_matrix
from skorg.organize import leaf_order
from skorg.trees import dyadic_tree

FACTORS = [1e-150, 1e-30, 1e-3, 1e9, 1e30, 1e150]


@pytest.fixture(scope="module")
def band():
    return make_shuffled_matrix(48, 40, kind="band", random_state=0).X


def _same_fit(a, b):
    assert all(s.same_partitions(t) for s, t in zip(a.trees_, b.trees_, strict=True))
    for oa, ob in zip(a.orders_, b.orders_, strict=True):
        np.testing.assert_array_equal(oa, ob)


@pytest.mark.parametrize("factor", FACTORS)
def test_dense_organizer_is_scale_invariant(band, factor):
    base = QuestionnaireOrganizer(n_iter=2).fit(band)
    scaled = QuestionnaireOrganizer(n_iter=2).fit(band * factor)
    _same_fit(base, scaled)
    # the distances are in the data's units: they scale with it
    for d0, d1 in zip(base.distances_, scaled.distances_, strict=True):
        if d0 is not None:
            np.testing.assert_allclose(d1, d0 * factor, rtol=1e-12, atol=0)
    assert scaled.score(band * factor) == pytest.approx(base.score(band), rel=1e-12)


@pytest.mark.parametrize("factor", [1e-150, 1e150])
def test_sparse_path_is_scale_invariant(band, factor):
    params = dict(n_iter=1, affinity_mode="sparse", n_neighbors=8, random_state=0)
    base = QuestionnaireOrganizer(**params).fit(band)
    scaled = QuestionnaireOrganizer(**params).fit(band * factor)
    _same_fit(base, scaled)


@pytest.mark.parametrize("factor", [1e-200, 1e200, 1e300])
def test_score_is_finite_and_unchanged_near_the_float_range(band, factor):
    org = QuestionnaireOrganizer(n_iter=1).fit(band)
    value = org.score(band * factor)
    assert np.isfinite(value)
    assert value == pytest.approx(org.score(band), rel=1e-12)


def test_score_is_unchanged_when_single_rows_are_extreme(band):
    org = QuestionnaireOrganizer(n_iter=1).fit(band)
    X = band.copy()
    X[0] *= 1e300
    X[1] *= 1e-300
    assert org.score(X) == pytest.approx(org.score(band), rel=1e-12)


@pytest.mark.parametrize("strategy", ["emd_olo", "tree_olo"])
@pytest.mark.parametrize("factor", [1e-250, 1e-9, 1e9, 1e250])
def test_leaf_order_does_not_depend_on_units(strategy, factor):
    rng = np.random.default_rng(3)
    x = rng.permutation(32).astype(float)
    d = np.abs(np.subtract.outer(x, x)) + rng.random((32, 32)) * 0.1
    d = d + d.T
    tree = dyadic_tree(32)
    np.testing.assert_array_equal(
        leaf_order(tree, d * factor, strategy), leaf_order(tree, d, strategy)
    )
