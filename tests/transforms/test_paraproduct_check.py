"""The reviewers' softmax-invariance test (Eq. 18) and the example script."""

import itertools
import pathlib
import runpy
import time

import numpy as np
import pytest
from numpy.testing import assert_allclose

from skorg.transforms import (
    corner_block_logits,
    format_table,
    paraproduct_decomposition,
    softmax_invariance_check,
)

EXAMPLE = pathlib.Path(__file__).parents[2] / "examples" / "plot_paraproduct_softmax_invariance.py"
MS = [1.0, 10.0, 100.0, 1000.0]


def _check(M):
    return {r["variant"]: r for r in softmax_invariance_check(corner_block_logits(M))}


def test_corner_block_softmax_closed_form():
    M = 3.0
    res = paraproduct_decomposition(corner_block_logits(M))
    top = np.full(4, 0.25)
    bottom = np.array([1, 1, np.exp(M), np.exp(M)]) / (2 + 2 * np.exp(M))
    assert_allclose(res.values, [top, top, bottom, bottom], rtol=1e-15)


@pytest.mark.parametrize("M", [*MS, 1e5, 1e8])
def test_verdict_rows_are_finite_and_exact_identity_holds(M):
    rows = _check(M)
    assert list(rows) == ["exact", "softmax", "softmax_exp", "softmax_collapsed"]
    for name, row in rows.items():
        for key in ("rel_error", "rel_error_terms", "rel_omitted", "jacobian_max"):
            assert np.isfinite(row[key]), (name, key)
    assert rows["exact"]["rel_error"] < 1e-14
    # the softmax Jacobian is bounded by 1/4; the collapse sets the factor to 1
    assert rows["softmax"]["jacobian_max"] <= 0.25
    assert rows["softmax"]["factor_max"] == rows["softmax"]["jacobian_max"]
    assert rows["softmax_collapsed"]["factor_max"] == 1.0
    # the factor the paper sets to 1: exp of the largest block mean (M, the 2 x 2 block)
    assert_allclose(rows["exact"]["log10_exp_Pf_max"], M / np.log(10), rtol=1e-14)


def test_collapsed_expansion_fails_and_worsens_with_M():
    errors = [_check(M)["softmax_collapsed"]["rel_error"] for M in MS]
    assert all(e1 < e2 for e1, e2 in itertools.pairwise(errors))
    # |c| and |a b| grow like M and M**2 while softmax stays bounded
    assert errors[-1] > 1e5 and errors[1] > 1
    assert errors[-1] / errors[-2] > 50


def test_true_derivative_expansion_is_accurate_only_for_small_logits():
    small = _check(0.1)["softmax"]["rel_error"]
    assert small < 1e-3
    assert _check(1.0)["softmax"]["rel_error"] < 0.05
    assert _check(1000.0)["softmax"]["rel_error"] > 1


def test_variant_subset_and_errors():
    rows = softmax_invariance_check(corner_block_logits(1.0), variants=["softmax_collapsed"])
    assert [r["variant"] for r in rows] == ["softmax_collapsed"]
    with pytest.raises(ValueError, match="Unknown variants"):
        softmax_invariance_check(np.zeros((4, 4)), variants=["relu"])
    with pytest.raises(ValueError, match="even integer"):
        corner_block_logits(1.0, n=3)


def test_band_of_scales_on_organised_matrix():
    n = 64
    x = (np.arange(n) + 0.5) / n
    f = 4 * np.sin(2 * np.pi * x)[:, None] * np.cos(3 * x)[None, :]
    rows = {r["variant"]: r for r in softmax_invariance_check(f, scales=np.arange(2, 6))}
    assert rows["exact"]["rel_error"] < 1e-14
    assert rows["softmax"]["rel_error"] < rows["softmax_collapsed"]["rel_error"]


def test_format_table():
    text = format_table([{"M": 1, "err": 0.5}, {"M": 10, "err": 0.25}], ["err", "M"])
    assert text.splitlines() == ["err   M", "----  --", "0.5   1", "0.25  10"]
    assert format_table([]) == ""


def test_example_runs_quickly(capsys):
    start = time.perf_counter()
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    assert time.perf_counter() - start < 20
    out = capsys.readouterr().out
    assert "softmax_collapsed" in out and "1000" in out
