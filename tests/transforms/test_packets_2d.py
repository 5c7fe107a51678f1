"""The 2-D time-frequency tiling of the Haar-Walsh packets: exhaustive minimum, bases, bounds."""

import itertools
import pickle

import numpy as np
import pytest

from skorg.transforms import (
    WaveletPacketTiling2D,
    best_wavelet_packet_tiling_2d,
    inverse_wavelet_packet_transform_2d,
    multi_best_wavelet_packet_basis,
    multi_haar_transform,
    multi_wavelet_packet_transform,
    wavelet_packet_dictionary,
    wavelet_packet_transform_2d,
)
from skorg.transforms._packet_plan import get_packet_plan
from skorg.transforms._packet_tiling_2d import _Axis
from skorg.trees import PartitionTree, dyadic_tree
from tests.transforms.test_packets import random_tree


def _children_1d(ax, j, a, i):
    """The two splits of 1-D tile ``i`` of layer ``(j, a)``: (time children, freq children)."""
    t = [(j, a + 1, int(c)) for c in np.flatnonzero(ax.time[j, a + 1] == i)]
    f = [(j - 1, a, int(c)) for c in np.flatnonzero(ax.freq[j - 1, a] == i)]
    return t, f


def all_tilings_2d(axes, limit=200000):
    """Every 2-D tiling, as sets of leaf tile pairs, by brute-force recursion (splitting one
    axis then the other, or the other way round, can give the same tiling: kept once)."""
    memo = {}

    def tilings(n0, n1):
        key = (n0, n1)
        if key in memo:
            return memo[key]
        (j0, a0, i0), (j1, a1, i1) = n0, n1
        out = set()
        if a0 == j0 and a1 == j1:
            out.add(frozenset([key]))
        splits = []
        if a0 < j0:
            for side in _children_1d(axes[0], j0, a0, i0):
                splits.append([(c, n1) for c in side])
        if a1 < j1:
            for side in _children_1d(axes[1], j1, a1, i1):
                splits.append([(n0, c) for c in side])
        for parts in splits:
            for combo in itertools.product(*[tilings(*p) for p in parts]):
                out.add(frozenset().union(*combo))
                assert len(out) < limit, "too many tilings for an exhaustive test"
        memo[key] = list(out)
        return memo[key]

    L0, L1 = axes[0].plan.n_levels, axes[1].plan.n_levels
    return tilings((L0 - 1, 0, 0), (L1 - 1, 0, 0))


def _entries(axes, tiling):
    """(j0, p0, j1, p1) of the leaf tile pairs of a tiling."""
    out = []
    for (j0, _, i0), (j1, _, i1) in sorted(tiling):
        out.append((j0, int(axes[0].rep[j0, j0][i0]), j1, int(axes[1].rep[j1, j1][i1])))
    return np.array(out)


def _dict_2d(X, trees):
    """D[j0, p0, j1, p1]: the full 2-D dictionary (small matrices only)."""
    rows = wavelet_packet_dictionary(X, trees[0], axis=0)
    D = np.stack([wavelet_packet_dictionary(r, trees[1], axis=1) for r in rows])
    return D.transpose(0, 2, 1, 3)  # (L0, n0, L1, n1)


def _dense(trees, entries):
    """The basis vectors of the entries as columns of an (n0 n1) x (n0 n1) matrix."""
    n0, n1 = trees[0].n_points, trees[1].n_points
    D0 = wavelet_packet_dictionary(np.eye(n0), trees[0], axis=1)  # (L0, n0 points, n0 pos)
    D1 = wavelet_packet_dictionary(np.eye(n1), trees[1], axis=1)
    cols = [np.outer(D0[j0][:, p0], D1[j1][:, p1]).ravel() for j0, p0, j1, p1 in entries]
    return np.array(cols).T


_TILINGS = {}


def _tilings_of(trees, axes, shape):
    """Every tiling of a pair of trees (enumerated once), and each one's entries as sorted
    flat indices of the 2-D dictionary."""
    key = (id(trees[0]), id(trees[1]))
    if key not in _TILINGS:
        tilings = all_tilings_2d(axes)
        flat = np.array([np.ravel_multi_index(_entries(axes, t).T, shape) for t in tilings])
        _TILINGS[key] = (tilings, np.sort(flat, axis=1))
    return _TILINGS[key]


PAIRS = [
    (dyadic_tree(2), dyadic_tree(2)),
    (dyadic_tree(2), dyadic_tree(3)),
    (dyadic_tree(4), dyadic_tree(2)),
    (dyadic_tree(3), dyadic_tree(3)),
    (
        PartitionTree.from_levels([[0, 0, 0], [0, 1, 2]]),  # one 3-way folder
        PartitionTree.from_levels([[0, 0, 0], [0, 0, 1], [0, 0, 1], [0, 1, 2]]),  # a chain
    ),
    (random_tree(4, np.random.default_rng(1)), random_tree(2, np.random.default_rng(11))),
    (random_tree(5, np.random.default_rng(2)), random_tree(2, np.random.default_rng(12))),
]
# 12, 220, 308, 36561, 36561, 7828 and 24276 tilings
PAIR_IDS = ["2x2", "2x3", "4x2", "3x3", "folder-chain", "random4x2", "random5x2"]


@pytest.mark.parametrize("trees", PAIRS, ids=PAIR_IDS)
@pytest.mark.parametrize("cost", ["l1", 0.5, "entropy"])
def test_best_tiling_is_the_exhaustive_minimum(trees, cost):
    n0, n1 = trees[0].n_points, trees[1].n_points
    rng = np.random.default_rng(n0 * 10 + n1)
    X = rng.standard_normal((n0, n1)) * np.exp(rng.standard_normal((n0, 1)))
    axes = [_Axis(get_packet_plan(t)) for t in trees]
    D = _dict_2d(X, trees)
    energy = float(np.sum(X * X))

    def entry_costs(c):
        a = np.abs(c)
        if cost == "l1":
            return a
        if cost == 0.5:
            return a**0.5
        e = a**2 / energy
        return np.where(e > 0, -e * np.log(np.where(e > 0, e, 1.0)), 0.0)

    def reported(total):  # as the search reports it: the l^p norm, the entropy
        return total**2.0 if cost == 0.5 else total

    def cost_of(c):
        return reported(entry_costs(c).sum())

    tilings, flat = _tilings_of(trees, axes, D.shape)
    costs = reported(entry_costs(D).ravel()[flat].sum(axis=1))
    best = best_wavelet_packet_tiling_2d(X, trees, cost=cost)
    assert best.cost == pytest.approx(min(costs), rel=1e-10, abs=1e-12)
    C = wavelet_packet_transform_2d(X, trees, best)
    assert cost_of(C) == pytest.approx(best.cost, rel=1e-10, abs=1e-12)
    # the chosen entries are one of the tilings; every tiling is an orthonormal basis
    mine = np.sort(np.ravel_multi_index(best.to_array().T, D.shape))
    assert any(np.array_equal(mine, f) for f in flat)
    for t in tilings[:: max(1, len(tilings) // 25)]:
        W = _dense(trees, _entries(axes, t))
        np.testing.assert_allclose(W.T @ W, np.eye(n0 * n1), atol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_never_above_the_separable_bases_and_a_perfect_round_trip(seed):
    rng = np.random.default_rng(seed)
    trees = [random_tree(int(rng.integers(5, 14)), rng), random_tree(int(rng.integers(5, 14)), rng)]
    n0, n1 = trees[0].n_points, trees[1].n_points
    X = rng.standard_normal((n0, n1)) * np.exp(rng.standard_normal((n0, 1)))
    best = best_wavelet_packet_tiling_2d(X, trees)
    C = wavelet_packet_transform_2d(X, trees, best)
    assert np.abs(C).sum() == pytest.approx(best.cost, rel=1e-10)
    np.testing.assert_allclose(np.linalg.norm(C), np.linalg.norm(X), rtol=1e-12)
    np.testing.assert_allclose(inverse_wavelet_packet_transform_2d(C, trees, best), X, atol=1e-12)
    separable = [np.abs(multi_haar_transform(X, trees)).sum()]
    for direction in ("both", "time-frequency"):
        for method in ("alternate", "independent"):
            bases = multi_best_wavelet_packet_basis(X, trees, direction=direction, method=method)
            separable.append(np.abs(multi_wavelet_packet_transform(X, trees, bases)).sum())
    assert best.cost <= min(separable) * (1 + 1e-12)


def test_units_layout_and_the_basis_object():
    rng = np.random.default_rng(3)
    trees = [dyadic_tree(8), random_tree(6, rng)]
    X = rng.standard_normal((8, 6))
    ref = best_wavelet_packet_tiling_2d(X, trees)
    for factor in (2.0**-600, 1e-150, 1e150, 2.0**600):
        got = best_wavelet_packet_tiling_2d(X * factor, trees)
        assert got == ref
        assert got.cost == pytest.approx(ref.cost * factor, rel=1e-12)
    C32 = wavelet_packet_transform_2d(X.astype(np.float32), trees, ref)
    assert C32.dtype == np.float32
    np.testing.assert_allclose(C32, wavelet_packet_transform_2d(X, trees, ref), atol=1e-5)
    again = WaveletPacketTiling2D.from_array(ref.to_array())
    assert again == ref and hash(again) == hash(ref)
    assert pickle.loads(pickle.dumps(ref)) == ref
    before = X.copy()
    wavelet_packet_transform_2d(X, trees, ref)
    np.testing.assert_array_equal(X, before)


def test_bad_tilings_and_arguments_are_named():
    trees = [dyadic_tree(4), dyadic_tree(2)]
    X = np.ones((4, 2))
    good = best_wavelet_packet_tiling_2d(X, trees)
    arr = good.to_array()
    with pytest.raises(ValueError, match="twice"):
        wavelet_packet_transform_2d(
            X, trees, WaveletPacketTiling2D.from_array(np.r_[arr[:-1], arr[:1]])
        )
    # the finest level on both axes (the points) with one entry moved to level 0: a set of
    # eight distinct entries that is not a basis
    delta = np.array([[2, p, 1, q] for p in range(4) for q in range(2)])
    ok = WaveletPacketTiling2D.from_array(delta)
    np.testing.assert_allclose(
        inverse_wavelet_packet_transform_2d(wavelet_packet_transform_2d(X, trees, ok), trees, ok), X
    )
    bad = delta.copy()
    bad[0] = [0, 0, 1, 0]
    with pytest.raises(ValueError, match="not a tiling"):
        wavelet_packet_transform_2d(X, trees, WaveletPacketTiling2D.from_array(bad))
    with pytest.raises(ValueError, match="levels in"):
        wavelet_packet_transform_2d(
            X, trees, WaveletPacketTiling2D.from_array(delta + np.array([9, 0, 0, 0]))
        )
    with pytest.raises(ValueError, match="entries"):
        wavelet_packet_transform_2d(X, trees, WaveletPacketTiling2D.from_array(delta[:4]))
    with pytest.raises(TypeError, match="WaveletPacketTiling2D"):
        wavelet_packet_transform_2d(X, trees, "haar")
    with pytest.raises(ValueError, match="matrix"):
        best_wavelet_packet_tiling_2d(np.ones((4, 2, 1)), [*trees, dyadic_tree(1)])
    with pytest.raises(ValueError, match="max_tile_pairs"):
        best_wavelet_packet_tiling_2d(X, trees, max_tile_pairs=0)
    with pytest.raises(ValueError, match="shape"):
        WaveletPacketTiling2D([[0, 0, 0]], [[0, 0, 0]])
    with pytest.raises(ValueError, match="coefficients"):
        inverse_wavelet_packet_transform_2d(np.ones(3), trees, good)


def test_the_size_limit_is_checked_before_the_search_starts():
    trees = [dyadic_tree(1024), dyadic_tree(1024)]
    # refused from the trees alone: no 1024 x 1024 dictionary is computed first
    with pytest.raises(MemoryError, match=r"20481 x 20481 = 419471361 pairs of tiles"):
        best_wavelet_packet_tiling_2d(np.zeros((1024, 1024)), trees)
    with pytest.raises(MemoryError, match="max_tile_pairs=100"):
        best_wavelet_packet_tiling_2d(np.ones((8, 8)), [dyadic_tree(8)] * 2, max_tile_pairs=100)


def test_degenerate_matrices():
    trees = [dyadic_tree(1), dyadic_tree(3)]
    for X in (np.zeros((1, 3)), np.ones((1, 3)), np.array([[1.0, 1.0, 5.0]])):
        best = best_wavelet_packet_tiling_2d(X, trees)
        C = wavelet_packet_transform_2d(X, trees, best)
        np.testing.assert_allclose(
            inverse_wavelet_packet_transform_2d(C, trees, best), X, atol=1e-12
        )
    assert best_wavelet_packet_tiling_2d(np.zeros((4, 4)), [dyadic_tree(4)] * 2).cost == 0.0
