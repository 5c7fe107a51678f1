"""Haar-Walsh wavelet packets: orthonormal bases, members, reconstruction and best bases."""

import itertools
import pickle

import numpy as np
import pytest
from scipy.linalg import hadamard

from skorg.transforms import (
    WaveletPacketBasis,
    best_wavelet_packet_basis,
    haar_basis,
    haar_transform,
    inverse_multi_wavelet_packet_transform,
    inverse_wavelet_packet_transform,
    multi_best_wavelet_packet_basis,
    multi_haar_transform,
    multi_wavelet_packet_transform,
    wavelet_packet_basis,
    wavelet_packet_basis_matrix,
    wavelet_packet_dictionary,
    wavelet_packet_info,
    wavelet_packet_transform,
)
from skorg.transforms._packet_plan import get_packet_plan
from skorg.trees import PartitionTree, dyadic_tree


def random_tree(n, rng, max_children=4, chain_prob=0.2):
    """A random tree on n points: multi-way folders, one-child chains, uneven depths."""
    labels = [np.zeros(n, dtype=int)]
    while len(np.unique(labels[-1])) < n:
        prev = labels[-1]
        new = np.empty(n, dtype=int)
        nxt = 0
        for lab in np.unique(prev):
            members = np.flatnonzero(prev == lab)
            if members.shape[0] == 1 or rng.random() < chain_prob:
                new[members] = nxt
                nxt += 1
                continue
            k = int(rng.integers(2, min(max_children, members.shape[0]) + 1))
            cuts = np.sort(rng.choice(np.arange(1, members.shape[0]), k - 1, replace=False))
            perm = rng.permutation(members)
            for part in np.split(perm, cuts):
                new[part] = nxt
                nxt += 1
        labels.append(new)
    return PartitionTree.from_levels(np.array(labels))


def _trees():
    rng = np.random.default_rng(7)
    out = [
        dyadic_tree(1),
        dyadic_tree(2),
        dyadic_tree(8),
        dyadic_tree(5),
        PartitionTree.from_levels([[0, 0, 0, 0, 0], [0, 1, 2, 3, 4]]),  # one 5-way folder
        PartitionTree.from_levels([[0, 0, 0], [0, 0, 1], [0, 0, 1], [0, 1, 2]]),  # a chain
    ]
    out += [random_tree(int(n), rng) for n in (3, 4, 6, 7, 9)]
    return out


TREES = _trees()
IDS = [f"tree{i}-n{t.n_points}" for i, t in enumerate(TREES)]


def _enumerate(children, node, costs):
    """Every basis under ``node`` of a binary-or-unary tree of subspaces, as lists of nodes."""
    kids = children.get(node, [])
    yield [node]
    if kids:
        for combo in itertools.product(*[list(_enumerate(children, k, costs)) for k in kids]):
            yield [x for part in combo for x in part]


def all_bases(tree):
    """Every basis of both searches' trees of subspaces, as (n_levels, n) masks."""
    plan = get_packet_plan(tree)
    L = plan.n_levels
    masks = []
    # regions: node (j, r); children the regions of level j + 1 inside it
    children = {}
    for j in range(1, L):
        for r, par in enumerate(plan.region_parent[j]):
            children.setdefault((j - 1, int(par)), []).append((j, r))
    for nodes in _enumerate(children, (0, 0), None):
        m = np.zeros((L, plan.n), dtype=bool)
        for j, r in nodes:
            m[j] |= plan.region_of[j] == r
        masks.append(m)
    # tags: node (j, g); children the tags of level j - 1 made from it
    children = {}
    for j in range(L - 1):
        for g, par in enumerate(plan.tag_parent[j]):
            children.setdefault((j + 1, int(par)), []).append((j, g))
    for nodes in _enumerate(children, (L - 1, 0), None):
        m = np.zeros((L, plan.n), dtype=bool)
        for j, g in nodes:
            m[j] |= plan.tag[j] == g
        masks.append(m)
    return masks


def _basis(mask):
    lv, pos = np.nonzero(mask)
    return WaveletPacketBasis(lv, pos)


@pytest.mark.parametrize("tree", TREES, ids=IDS)
def test_every_basis_of_the_dictionary_is_orthonormal_and_reconstructs(tree):
    n = tree.n_points
    x = np.random.default_rng(n).standard_normal((3, n))
    masks = all_bases(tree)
    # every basis of the small trees, an even sample of the larger ones' (hundreds)
    for mask in masks[:: max(1, len(masks) // 60)]:
        basis = _basis(mask)
        assert mask.sum() == n
        W = wavelet_packet_basis_matrix(tree, basis)
        np.testing.assert_allclose(W.T @ W, np.eye(n), atol=1e-12)
        C = wavelet_packet_transform(x, tree, basis)
        np.testing.assert_allclose(C, x @ W, atol=1e-12)
        np.testing.assert_allclose(inverse_wavelet_packet_transform(C, tree, basis), x, atol=1e-12)


@pytest.mark.parametrize("tree", TREES, ids=IDS)
def test_the_dictionary_levels_are_the_basis_coefficients(tree):
    x = np.random.default_rng(3).standard_normal(tree.n_points)
    D = wavelet_packet_dictionary(x, tree)
    n = tree.n_points
    for j in range(D.shape[0]):
        level = WaveletPacketBasis(np.full(n, j), np.arange(n))
        np.testing.assert_allclose(D[j], wavelet_packet_basis_matrix(tree, level).T @ x, atol=1e-12)
    # the finest level is the data in the packet order
    np.testing.assert_array_equal(D[-1], x[wavelet_packet_info(tree)["packet_order"]])


@pytest.mark.parametrize("tree", TREES, ids=IDS)
def test_the_haar_member_equals_the_tree_haar_transform(tree):
    x = np.random.default_rng(5).standard_normal((4, tree.n_points))
    basis = wavelet_packet_basis(tree, "haar")
    np.testing.assert_allclose(
        wavelet_packet_transform(x, tree, basis), haar_transform(x, tree), atol=1e-12
    )
    np.testing.assert_allclose(
        wavelet_packet_basis_matrix(tree, basis), haar_basis(tree), atol=1e-12
    )


@pytest.mark.parametrize("n", [2, 4, 8, 16])
def test_the_walsh_member_is_the_walsh_hadamard_basis_on_dyadic_trees(n):
    W = wavelet_packet_basis_matrix(dyadic_tree(n), "walsh")
    # every Walsh vector is one row of the Sylvester-Hadamard matrix / sqrt(n), once
    P = W.T @ hadamard(n) / np.sqrt(n)
    np.testing.assert_allclose(np.sort(np.abs(P), axis=1)[:, -1], 1.0, atol=1e-12)
    np.testing.assert_allclose(np.abs(P).sum(axis=0), 1.0, atol=1e-12)
    np.testing.assert_allclose(np.abs(np.round(P)), np.abs(P), atol=1e-12)
    # and the tags are the sequency: the number of sign changes along the leaf order
    tags = wavelet_packet_info(dyadic_tree(n))["tag"][0]
    signs = np.sign(W[np.asarray(dyadic_tree(n).leaf_order)])
    np.testing.assert_array_equal(np.sum(signs[1:] != signs[:-1], axis=0), tags)


def _cost_of(values, cost):
    a = np.abs(values)
    if cost == "l1":
        return a.sum()
    if cost == "entropy":
        e = values**2 / np.sum(values**2)
        return -np.sum(np.where(e > 0, e * np.log(np.where(e > 0, e, 1.0)), 0.0))
    if callable(cost):
        return cost(values).sum()
    return np.sum(a**cost) ** (1 / cost)  # the l^p norm, as best_wavelet_packet_basis reports


COSTS = ["l1", 0.5, 2.5, "entropy", lambda c: np.sqrt(np.abs(c))]


@pytest.mark.parametrize("cost", COSTS, ids=["l1", "p0.5", "p2.5", "entropy", "callable"])
@pytest.mark.parametrize("tree", TREES[1:], ids=IDS[1:])
def test_best_basis_is_the_exhaustive_minimum_and_never_above_haar(tree, cost):
    n = tree.n_points
    rng = np.random.default_rng(n + 11)
    X = rng.standard_normal((2, n)) * np.exp(rng.standard_normal(n))
    masks = all_bases(tree)
    # the cost of every basis, read off the dictionary (its levels are checked against the
    # dense basis vectors in test_the_dictionary_levels_are_the_basis_coefficients)
    D = wavelet_packet_dictionary(X, tree)
    costs = [
        _cost_of(np.concatenate([D[j][:, m[j]] for j in range(m.shape[0])], axis=1), cost)
        for m in masks
    ]
    best = best_wavelet_packet_basis(X, tree, cost=cost)
    C = wavelet_packet_transform(X, tree, best)
    assert _cost_of(C, cost) == pytest.approx(min(costs), rel=1e-10, abs=1e-12)
    assert best.cost == pytest.approx(min(costs), rel=1e-10, abs=1e-12)
    haar = _cost_of(haar_transform(X, tree), cost)
    assert best.cost <= haar * (1 + 1e-12)
    for direction in ("coarse-to-fine", "fine-to-coarse"):
        one = best_wavelet_packet_basis(X, tree, cost=cost, direction=direction)
        assert one.direction == direction
        assert _cost_of(wavelet_packet_transform(X, tree, one), cost) == pytest.approx(
            one.cost, rel=1e-10, abs=1e-12
        )
        assert best.cost <= one.cost * (1 + 1e-12)
    fine = best_wavelet_packet_basis(X, tree, cost=cost, direction="fine-to-coarse")
    assert fine.cost <= haar * (1 + 1e-12)


def test_best_basis_on_a_larger_random_tree_beats_haar_and_walsh():
    rng = np.random.default_rng(0)
    tree = random_tree(200, rng, max_children=5)
    X = rng.standard_normal((5, 200))
    best = best_wavelet_packet_basis(X, tree)
    for kind in ("haar", "walsh", "delta"):
        assert best.cost <= np.abs(wavelet_packet_transform(X, tree, kind)).sum() * (1 + 1e-12)
    C = wavelet_packet_transform(X, tree, best)
    np.testing.assert_allclose(np.abs(C).sum(), best.cost, rtol=1e-10)
    np.testing.assert_allclose(inverse_wavelet_packet_transform(C, tree, best), X, atol=1e-10)
    np.testing.assert_allclose(np.linalg.norm(C), np.linalg.norm(X), rtol=1e-12)


def test_a_periodic_signal_picks_a_frequency_basis():
    # an oscillation along the leaf order is one Walsh vector: cost its l1 norm, sqrt(n)
    n = 64
    tree = dyadic_tree(n)
    x = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    best = best_wavelet_packet_basis(x, tree)
    C = wavelet_packet_transform(x, tree, best)
    assert np.sum(np.abs(C) > 1e-9) == 1
    assert best.cost == pytest.approx(np.sqrt(n))
    assert np.abs(haar_transform(x, tree)).sum() > 4 * best.cost


@pytest.mark.parametrize("factor", [2.0**-500, 2.0**500, 1e-150, 1e150])
@pytest.mark.parametrize("cost", ["l1", 0.7, "entropy"])
def test_units_do_not_change_the_basis(factor, cost):
    rng = np.random.default_rng(2)
    tree = random_tree(40, rng)
    X = rng.standard_normal((3, 40))
    ref = best_wavelet_packet_basis(X, tree, cost=cost)
    got = best_wavelet_packet_basis(X * factor, tree, cost=cost)
    assert got == ref
    if cost == "entropy":
        assert got.cost == pytest.approx(ref.cost, rel=1e-12)
    else:  # an l^p norm: in data units
        assert got.cost == pytest.approx(ref.cost * factor, rel=1e-12)
    C = wavelet_packet_transform(X * factor, tree, got)
    assert np.all(np.isfinite(C))
    np.testing.assert_allclose(
        C / factor, wavelet_packet_transform(X, tree, ref), rtol=1e-12, atol=1e-300
    )
    back = inverse_wavelet_packet_transform(C, tree, got)
    np.testing.assert_allclose(back / factor, X, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("factor", [1e-300, 1e300, 1e307])
def test_finite_near_the_float_range(factor):
    tree = dyadic_tree(16)
    x = np.random.default_rng(1).standard_normal((2, 16)) * factor
    for kind in ("haar", "walsh"):
        C = wavelet_packet_transform(x, tree, kind)
        assert np.all(np.isfinite(C))
        np.testing.assert_allclose(
            C / factor, wavelet_packet_transform(x / factor, tree, kind), rtol=1e-12
        )
    # the choice is unit-free (the l1 cost itself exceeds the float range at 1e307)
    assert best_wavelet_packet_basis(x, tree) == best_wavelet_packet_basis(x / factor, tree)


def test_layouts_dtypes_and_axes():
    rng = np.random.default_rng(4)
    tree = random_tree(12, rng)
    X = rng.standard_normal((5, 12, 3))
    basis = best_wavelet_packet_basis(X, tree, axis=1)
    C = wavelet_packet_transform(X, tree, basis, axis=1)
    W = wavelet_packet_basis_matrix(tree, basis)
    np.testing.assert_allclose(C, np.einsum("anb,nk->akb", X, W), atol=1e-12)
    np.testing.assert_allclose(
        wavelet_packet_transform(np.asfortranarray(X), tree, basis, axis=-2), C, atol=0
    )
    back = inverse_wavelet_packet_transform(C, tree, basis, axis=1)
    np.testing.assert_allclose(back, X, atol=1e-12)
    C32 = wavelet_packet_transform(X.astype(np.float32), tree, basis, axis=1)
    assert C32.dtype == np.float32
    np.testing.assert_allclose(C32, C, rtol=1e-5, atol=1e-5)
    assert inverse_wavelet_packet_transform(C32, tree, basis, axis=1).dtype == np.float32
    # the cost sums over every vector along the axis: the same as moving the axis last
    moved = best_wavelet_packet_basis(np.moveaxis(X, 1, -1), tree)
    assert moved == basis and moved.cost == pytest.approx(basis.cost)
    # the argument is not changed
    before = X.copy()
    wavelet_packet_transform(X, tree, basis, axis=1)
    np.testing.assert_array_equal(X, before)


def test_separable_transform_of_a_matrix_and_a_tensor():
    rng = np.random.default_rng(6)
    t0, t1, t2 = random_tree(10, rng), random_tree(7, rng), dyadic_tree(4)
    X = rng.standard_normal((10, 7))
    bases = multi_best_wavelet_packet_basis(X, [t0, t1], method="independent")
    assert bases[0] == best_wavelet_packet_basis(X, t0, axis=0)
    assert bases[1] == best_wavelet_packet_basis(X, t1, axis=1)
    C = multi_wavelet_packet_transform(X, [t0, t1], bases)
    W0, W1 = (wavelet_packet_basis_matrix(t, b) for t, b in zip((t0, t1), bases))
    np.testing.assert_allclose(C, W0.T @ X @ W1, atol=1e-12)
    np.testing.assert_allclose(
        inverse_multi_wavelet_packet_transform(C, [t0, t1], bases), X, atol=1e-12
    )
    # the Haar member on every axis is the multi Haar transform
    T = rng.standard_normal((10, 7, 4))
    np.testing.assert_allclose(
        multi_wavelet_packet_transform(T, [t0, None, t2], "haar"),
        multi_haar_transform(T, [t0, None, t2]),
        atol=1e-12,
    )


def test_basis_round_trips_and_pickles():
    tree = TREES[-1]
    x = np.random.default_rng(0).standard_normal(tree.n_points)
    basis = best_wavelet_packet_basis(x, tree, cost="entropy")
    again = WaveletPacketBasis.from_array(basis.to_array())
    assert again == basis and hash(again) == hash(basis)
    loaded = pickle.loads(pickle.dumps(basis))
    assert loaded == basis and loaded.cost == basis.cost and loaded.direction == basis.direction
    np.testing.assert_array_equal(
        wavelet_packet_transform(x, tree, again), wavelet_packet_transform(x, tree, basis)
    )
    # the coefficients follow the basis's order: a permuted basis permutes them
    perm = np.random.default_rng(1).permutation(tree.n_points)
    shuffled = WaveletPacketBasis(basis.levels[perm], basis.positions[perm])
    np.testing.assert_allclose(
        wavelet_packet_transform(x, tree, shuffled), wavelet_packet_transform(x, tree, basis)[perm]
    )


def test_bad_bases_and_arguments_are_named():
    tree = dyadic_tree(4)
    x = np.ones(4)
    with pytest.raises(ValueError, match="not an orthonormal basis"):
        wavelet_packet_transform(x, tree, WaveletPacketBasis([0, 0, 1, 2], [0, 1, 2, 3]))
    with pytest.raises(ValueError, match="twice"):
        wavelet_packet_transform(x, tree, WaveletPacketBasis([0, 0, 0, 0], [0, 1, 1, 2]))
    with pytest.raises(ValueError, match="outside the dictionary"):
        wavelet_packet_transform(x, tree, WaveletPacketBasis([0, 0, 0, 5], [0, 1, 2, 3]))
    with pytest.raises(ValueError, match="entries but the tree"):
        wavelet_packet_transform(x, tree, WaveletPacketBasis([0, 0], [0, 1]))
    with pytest.raises(TypeError, match="WaveletPacketBasis"):
        wavelet_packet_transform(x, tree, 3)
    with pytest.raises(ValueError, match="kind must be"):
        wavelet_packet_basis(tree, "db4")
    with pytest.raises(ValueError, match="cost"):
        best_wavelet_packet_basis(x, tree, cost="l7")
    with pytest.raises(ValueError, match="cost"):
        best_wavelet_packet_basis(x, tree, cost=-1.0)
    with pytest.raises(ValueError, match="direction"):
        best_wavelet_packet_basis(x, tree, direction="up")
    with pytest.raises(ValueError, match="one cost per coefficient"):
        best_wavelet_packet_basis(x, tree, cost=lambda c: c.sum())
    with pytest.raises(ValueError, match="NaN"):
        wavelet_packet_transform(np.array([1.0, np.nan, 0, 0]), tree, "haar")
    with pytest.raises(ValueError, match="points but axis"):
        wavelet_packet_transform(np.ones(5), tree, "haar")
    with pytest.raises(ValueError, match="shape"):
        WaveletPacketBasis.from_array(np.zeros((4, 3), dtype=int))


def test_memory_is_checked_before_the_dictionary_is_allocated(monkeypatch):
    monkeypatch.setenv("SKORG_MAX_MEMORY", "0.01")
    tree = dyadic_tree(64)
    with pytest.raises(MemoryError, match="packet dictionary"):
        wavelet_packet_dictionary(np.ones((100, 64)), tree)


def test_degenerate_data():
    tree = random_tree(9, np.random.default_rng(3))
    for x in (np.zeros(9), np.ones(9), np.r_[np.zeros(8), 1.0]):
        for cost in ("l1", "entropy", 0.5):
            basis = best_wavelet_packet_basis(x, tree, cost=cost)
            assert np.isfinite(basis.cost)
            C = wavelet_packet_transform(x, tree, basis)
            np.testing.assert_allclose(
                inverse_wavelet_packet_transform(C, tree, basis), x, atol=1e-12
            )
    one = dyadic_tree(1)
    assert wavelet_packet_transform(np.array([3.0]), one, "haar")[0] == 3.0
    assert best_wavelet_packet_basis(np.array([-3.0]), one).cost == 3.0


def test_alternating_separable_search_never_above_the_tensor_haar_cost():
    rng = np.random.default_rng(8)
    for _ in range(3):
        t0, t1 = random_tree(12, rng), random_tree(9, rng)
        X = rng.standard_normal((12, 9)) * np.exp(rng.standard_normal((12, 1)))
        haar = np.abs(multi_haar_transform(X, [t0, t1])).sum()
        bases = multi_best_wavelet_packet_basis(X, [t0, t1])
        C = multi_wavelet_packet_transform(X, [t0, t1], bases)
        assert np.abs(C).sum() <= haar * (1 + 1e-12)
        assert bases[-1].cost == pytest.approx(np.abs(C).sum(), rel=1e-10)
        # run to convergence, no axis has a cheaper basis given the others (a coordinate
        # minimum), and more sweeps only lower the cost
        more = multi_best_wavelet_packet_basis(X, [t0, t1], max_sweeps=20)
        assert more[-1].cost <= bases[-1].cost * (1 + 1e-12)
        bases = more
        Y = wavelet_packet_transform(X, t0, bases[0], axis=0)
        assert bases[1].cost <= best_wavelet_packet_basis(Y, t1, axis=1).cost * (1 + 1e-12)
        Y = wavelet_packet_transform(X, t1, bases[1], axis=1)
        assert bases[1].cost <= best_wavelet_packet_basis(Y, t0, axis=0).cost * (1 + 1e-12)
    independent = multi_best_wavelet_packet_basis(X, [t0, t1], method="independent")
    assert independent[0] == best_wavelet_packet_basis(X, t0, axis=0)
    with pytest.raises(ValueError, match="method"):
        multi_best_wavelet_packet_basis(X, [t0, t1], method="greedy")
    with pytest.raises(ValueError, match="max_sweeps"):
        multi_best_wavelet_packet_basis(X, [t0, t1], max_sweeps=0)


def all_tilings(tree, limit=5000):
    """Every time-frequency tiling of the dictionary (up to ``limit``), as (L, n) masks."""
    from skorg.transforms._packet_tiling import _links, _tiles

    plan = get_packet_plan(tree)
    L = plan.n_levels
    inv, rep = _tiles(plan)
    time, freq = _links(plan, inv, rep)

    def kids(j, a, i):
        t = [(j, a + 1, int(c)) for c in np.flatnonzero(time[j, a + 1] == i)]
        f = [(j - 1, a, int(c)) for c in np.flatnonzero(freq[j - 1, a] == i)]
        return t, f

    def tilings(node):
        j, a, i = node
        if a == j:
            yield [node]
            return
        for side in kids(j, a, i):
            for combo in itertools.product(*[list(tilings(k)) for k in side]):
                yield [x for part in combo for x in part]

    masks = []
    for nodes in itertools.islice(tilings((L - 1, 0, 0)), limit):
        m = np.zeros((L, plan.n), dtype=bool)
        for j, a, i in nodes:
            m[j, rep[j, a][i]] = True
        masks.append(m)
    return masks


@pytest.mark.parametrize("tree", TREES[1:9], ids=IDS[1:9])
def test_time_frequency_best_basis_is_the_exhaustive_minimum_over_tilings(tree):
    n = tree.n_points
    rng = np.random.default_rng(n + 3)
    X = rng.standard_normal((2, n)) * np.exp(rng.standard_normal(n))
    D = wavelet_packet_dictionary(X, tree)
    masks = all_tilings(tree)
    costs = []
    for m in masks[:: max(1, len(masks) // 40)]:
        W = wavelet_packet_basis_matrix(tree, _basis(m))  # every tiling is a basis
        np.testing.assert_allclose(W.T @ W, np.eye(n), atol=1e-12)
    for m in masks:
        costs.append(np.abs(np.concatenate([D[j][:, m[j]] for j in range(m.shape[0])], 1)).sum())
    best = best_wavelet_packet_basis(X, tree, direction="time-frequency")
    assert best.direction == "time-frequency"
    assert best.cost == pytest.approx(min(costs), rel=1e-10)
    assert np.abs(wavelet_packet_transform(X, tree, best)).sum() == pytest.approx(best.cost)
    # the region and tag bases are tilings: never cheaper than the tiling search
    assert best.cost <= best_wavelet_packet_basis(X, tree).cost * (1 + 1e-12)
    for m in all_bases(tree):
        assert any(np.array_equal(m, t) for t in masks)
