"""The packet analysis, synthesis and materialized dictionary by the in-place schedule:
the level-by-level path's values, bit for bit, on every kind of tree, dtype and layout."""

import numpy as np
import pytest

from skorg.transforms import _packet_slot_apply as S
from skorg.transforms import (
    best_wavelet_packet_basis,
    inverse_wavelet_packet_transform,
    wavelet_packet_basis,
    wavelet_packet_dictionary,
)
from skorg.transforms._packet_core import _apply
from skorg.transforms._packet_plan import get_packet_plan
from skorg.transforms._packets import _dictionary_by_level, _prepare
from tests.transforms.test_packet_slots import ALL, ALL_IDS


def _same_bits(a, b):
    """Equal dtypes, shapes and bits (so -0.0 and +0.0 differ)."""
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


def _bases(tree, X, axis):
    out = [wavelet_packet_basis(tree, kind) for kind in ("haar", "walsh", "delta")]
    for direction in ("both", "time-frequency"):
        for cost in ("l1", 0.5):
            out.append(
                best_wavelet_packet_basis(X, tree, axis=axis, cost=cost, direction=direction)
            )
    return out


# (shape with n at `axis`, axis): one vector, rows first, rows last, a middle axis (no 2-D
# view of it), more columns than a block (256)
LAYOUTS = [((None,), 0), ((None, 7), 0), ((3, None), 1), ((2, None, 5), 1), ((None, 300), 0)]


def _data(tree, shape, axis, dtype, seed):
    n = tree.n_points
    rng = np.random.default_rng(seed)
    shape = tuple(n if s is None else s for s in shape)
    spread = np.exp(3 * rng.standard_normal(n)).reshape(
        [-1 if a == axis else 1 for a in range(len(shape))]
    )
    X = (rng.standard_normal(shape) * spread).astype(dtype)
    X.flat[::11] = 0.0  # exact zeros, some negative
    X.flat[::23] = -0.0
    return X


@pytest.mark.parametrize("tree", ALL, ids=ALL_IDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("layout", range(len(LAYOUTS)))
def test_analysis_and_synthesis_in_place_equal_level_by_level(tree, dtype, layout):
    shape, axis = LAYOUTS[layout]
    X = _data(tree, shape, axis, dtype, tree.n_points + layout)
    plan = get_packet_plan(tree)
    for basis in _bases(tree, X, axis):
        C = _apply(X, plan, basis, axis)
        _same_bits(C, _apply(X, plan, basis, axis, in_place=False))
        Y = _apply(C, plan, basis, axis, inverse=True)
        _same_bits(Y, _apply(C, plan, basis, axis, inverse=True, in_place=False))
        tol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(Y, X, rtol=tol, atol=tol * np.abs(X).max())


@pytest.mark.parametrize("tree", ALL, ids=ALL_IDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("layout", range(len(LAYOUTS)))
def test_dictionary_in_place_equals_level_by_level(tree, dtype, layout):
    shape, axis = LAYOUTS[layout]
    X = _data(tree, shape, axis, dtype, 2 * tree.n_points + layout)
    D = wavelet_packet_dictionary(X, tree, axis=axis)
    ref = _dictionary_by_level(X, tree, axis=axis)
    # a copied -0.0 reads +0.0 level by level (1 * u + 0 * u): equal values, and equal
    # bits everywhere else
    np.testing.assert_array_equal(D, ref)
    differ = D.view(np.uint8).reshape(*D.shape, -1) != ref.view(np.uint8).reshape(*D.shape, -1)
    assert np.all(D[differ.any(axis=-1)] == 0.0)


@pytest.mark.parametrize("factor", [1e-150, 1e150])
def test_in_place_at_extreme_scales(factor):
    tree = ALL[-1]
    X = _data(tree, (None, 9), 0, np.float64, 5) * factor
    plan = get_packet_plan(tree)
    for basis in _bases(tree, X, 0):
        # the public functions pick a power-of-two scale for such data
        Xc, axis, _, scale = _prepare(X, tree, 0)
        assert scale != 1.0
        C = _apply(Xc, plan, basis, axis, scale)
        _same_bits(C, _apply(Xc, plan, basis, axis, scale, in_place=False))
        Y = inverse_wavelet_packet_transform(C, tree, basis, axis=0)
        np.testing.assert_allclose(Y, X, rtol=1e-12, atol=1e-12 * np.abs(X).max())
    np.testing.assert_array_equal(
        wavelet_packet_dictionary(X, tree, axis=0), _dictionary_by_level(X, tree, axis=0)
    )


@pytest.mark.parametrize("tree", ALL[-3:], ids=ALL_IDS[-3:])
def test_parallel_blocks_equal_serial(tree, monkeypatch):
    X = _data(tree, (None, 700), 0, np.float64, 7)
    plan = get_packet_plan(tree)
    basis = best_wavelet_packet_basis(X, tree, axis=0)
    serial = (_apply(X, plan, basis, 0), wavelet_packet_dictionary(X, tree, axis=0))
    serial_back = _apply(serial[0], plan, basis, 0, inverse=True)
    monkeypatch.setattr(S, "SERIAL_SIZE", 0)
    assert S._buffers(plan.n, 700, 256)[1]  # the parallel kernels run
    _same_bits(_apply(X, plan, basis, 0), serial[0])
    _same_bits(wavelet_packet_dictionary(X, tree, axis=0), serial[1])
    _same_bits(_apply(serial[0], plan, basis, 0, inverse=True), serial_back)


def test_pruned_schedule_runs_only_needed_pairs():
    # the delta basis is the finest level: no pair at all; the Walsh basis (the coarsest
    # level) needs every pair; the Haar basis fewer
    tree = ALL[-3]  # dyadic 64
    plan = get_packet_plan(tree)
    counts = {}
    for kind in ("delta", "haar", "walsh"):
        b = wavelet_packet_basis(tree, kind)
        k = np.arange(plan.n)
        sched, cap = S.capture_schedule(plan, b.levels, b.positions, np.zeros_like(k), k)
        op_quad = sched[3]
        counts[kind] = int((~op_quad).sum() + 4 * op_quad.sum())  # the pairs that run
        if kind == "walsh":  # no capture between levels: every pair in a fused quad
            assert op_quad.all() and op_quad.shape[0] == plan.slots.quad_lev.shape[0]
        assert cap[0][-1] == plan.n  # every entry captured once
    assert counts["delta"] == 0
    assert counts["walsh"] == plan.slots.lev.shape[0]
    # Haar on a dyadic tree of 64 points: the scaling pairs only, one per folder (63)
    assert counts["haar"] == 63


def test_in_place_does_not_change_its_arguments():
    tree = ALL[-1]
    X = _data(tree, (None, 4), 0, np.float64, 9)
    keep = X.copy()
    plan = get_packet_plan(tree)
    basis = best_wavelet_packet_basis(X, tree, axis=0)
    C = _apply(X, plan, basis, 0)
    C_keep = C.copy()
    _apply(C, plan, basis, 0, inverse=True)
    wavelet_packet_dictionary(X, tree, axis=0)
    _same_bits(X, keep)
    _same_bits(C, C_keep)


def test_cached_schedules_are_those_of_their_basis():
    tree = ALL[-1]
    plan = get_packet_plan(tree)
    X = _data(tree, (None, 6), 0, np.float64, 11)
    bases = _bases(tree, X, 0)
    k = np.arange(plan.n)
    for _ in range(2):  # more bases than the cache holds, twice: evicted and rebuilt
        for basis in bases:
            sched, cap = S.basis_schedule(plan, basis)
            sched2, cap2 = S.capture_schedule(
                plan, basis.levels, basis.positions, np.zeros_like(k), k
            )
            for a, b in zip((*sched, *cap), (*sched2, *cap2)):
                np.testing.assert_array_equal(a, b)
    assert len(S._SCHEDULES[plan]) <= S._SCHEDULES_PER_PLAN
