"""Haar transforms, entropies and the softmax check in any units, finite near the range."""

import math

import numpy as np
import pytest

from skorg.transforms import (
    corner_block_logits,
    haar_transform,
    inverse_haar_transform,
    inverse_multi_haar_transform,
    l1_entropy,
    multi_haar_transform,
    paraproduct_decomposition,
    softmax_invariance_check,
)
from skorg.trees import dyadic_tree

FACTORS = [1e-300, 1e-150, 1e150, 1e200, 1e307]


@pytest.fixture(scope="module")
def data():
    return np.random.default_rng(1).standard_normal((8, 6))


@pytest.mark.parametrize("factor", FACTORS)
def test_haar_is_linear_and_finite_near_the_float_range(data, factor):
    t0, t1 = dyadic_tree(8), dyadic_tree(6)
    C = haar_transform(data * factor, t1)
    assert np.all(np.isfinite(C))
    np.testing.assert_allclose(C / factor, haar_transform(data, t1), rtol=1e-12, atol=0)
    np.testing.assert_allclose(inverse_haar_transform(C, t1) / factor, data, rtol=1e-10, atol=1e-12)
    M = multi_haar_transform(data * factor, [t0, t1])
    assert np.all(np.isfinite(M))
    np.testing.assert_allclose(M / factor, multi_haar_transform(data, [t0, t1]), rtol=1e-12, atol=0)
    back = inverse_multi_haar_transform(M, [t0, t1])
    np.testing.assert_allclose(back / factor, data, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("factor", FACTORS)
def test_normalized_l1_entropy_does_not_depend_on_units(data, factor):
    trees = [dyadic_tree(8), dyadic_tree(6)]
    value = l1_entropy(data * factor, trees, normalize=True)
    assert value == pytest.approx(l1_entropy(data, trees, normalize=True), rel=1e-12)
    # per batch entry, with entries of wildly different magnitude
    T = np.stack([data, data * factor, data / factor], axis=-1)
    batch = l1_entropy(T, [*trees, None], normalize=True)
    np.testing.assert_allclose(batch, batch[0], rtol=1e-12)
    # Parseval bound of the normalized entropy: between 1 and sqrt(size)
    assert 1.0 - 1e-12 <= value <= math.sqrt(data.size) + 1e-12


@pytest.mark.parametrize("M", [1e155, 1e200, 1e300])
def test_softmax_check_has_no_nan_for_huge_logits(M):
    rows = softmax_invariance_check(corner_block_logits(M))
    for row in rows:
        for key in ("rel_error", "rel_error_terms", "rel_omitted", "jacobian_max"):
            assert not math.isnan(row[key]), (row["variant"], key)
    by = {r["variant"]: r for r in rows}
    assert by["exact"]["rel_error"] < 1e-12  # the telescoping identity holds at any size
    # the true-derivative paraproduct error grows like the logit range (finite here), the
    # collapsed Eq. 18 one like its square (beyond the float range: inf)
    assert by["softmax"]["rel_error"] == pytest.approx(M * 2.041241452319315e-1, rel=1e-6)
    assert by["softmax_collapsed"]["rel_error"] == math.inf
    assert by["softmax"]["jacobian_max"] <= 0.25


def test_softmax_check_rejects_an_empty_variant_list():
    with pytest.raises(ValueError, match="variants"):
        softmax_invariance_check(corner_block_logits(1.0), variants=[])


def test_paraproduct_keeps_only_the_sums_by_default():
    f = np.random.default_rng(2).standard_normal((32, 16))
    res = paraproduct_decomposition(f, "tanh")
    assert res.mixed_terms is None and res.column_terms is None and res.row_terms is None
    full = paraproduct_decomposition(f, "tanh", keep_terms=True)
    np.testing.assert_allclose(res.column_sum, full.column_terms.sum(0), rtol=0, atol=1e-13)
    np.testing.assert_allclose(res.row_sum, full.row_terms.sum(0), rtol=0, atol=1e-13)
    np.testing.assert_allclose(res.reconstruct(), np.tanh(f), rtol=0, atol=1e-12)


def test_paraproduct_refuses_up_front_beyond_the_memory_budget(monkeypatch):
    monkeypatch.setenv("SKORG_MAX_MEMORY", "1")  # MiB
    f = np.zeros((128, 128))
    with pytest.raises(MemoryError, match=r"GiB.*memory budget"):
        paraproduct_decomposition(f, "tanh", keep_terms=True)
    paraproduct_decomposition(f[:16, :16], "tanh")  # small enough


def test_bad_memory_budget_setting_is_named(monkeypatch):
    monkeypatch.setenv("SKORG_MAX_MEMORY", "lots")
    with pytest.raises(ValueError, match="SKORG_MAX_MEMORY"):
        paraproduct_decomposition(np.zeros((4, 4)), "tanh")
