"""The "smoothest" ordering (the default): the candidate of least relative second
differences, polished by short reversals, and what it recovers that the shortest path folds."""

import numpy as np
import pytest
from sklearn.metrics.pairwise import euclidean_distances

from skorg.datasets import make_shuffled_matrix
from skorg.metrics import order_spearman
from skorg.organize import leaf_order, questionnaire
from skorg.organize._ordering import (
    _AVERAGE_MARGIN,
    _POLISH_WINDOW,
    _SMALL_SLICE,
    _angular_distances,
    _polish,
    _rounded,
    _rounded_optimal_leaf_order,
    _second_difference_score,
)


def _euclid(U):
    E = euclidean_distances(U)
    E = 0.5 * (E + E.T)
    np.fill_diagonal(E, 0.0)
    return E


def _brute_score(U, order):
    """The relative second differences, straight from the slices."""
    Y = U[order]
    q = np.sum(Y * Y, axis=1)
    floor = _SMALL_SLICE * np.sum(U * U, axis=1).mean()
    num = np.sum((Y[:-2] - 2 * Y[1:-1] + Y[2:]) ** 2, axis=1)
    return float(np.sum(num / (q[:-2] + 4 * q[1:-1] + q[2:] + 6 * floor)))


def _cyclic_rho(order):
    n = order.shape[0]
    return max(order_spearman(order, np.roll(np.arange(n), r)) for r in range(n))


def test_score_from_the_gram_matrix_equals_the_slices():
    U = np.random.default_rng(0).normal(size=(9, 5))
    U[3] = 0.0  # a zero slice: the floor keeps it finite
    sq = _euclid(U) ** 2
    squares = np.sum(U * U, axis=1)
    for seed in range(5):
        order = np.random.default_rng(seed).permutation(9)
        np.testing.assert_allclose(
            _second_difference_score(sq, squares, order), _brute_score(U, order), rtol=1e-10
        )


def test_default_is_the_smoothest_candidate_polished():
    for kind in ("band", "ridge", "product"):
        X = make_shuffled_matrix(40, 32, kind=kind, noise=0.05, random_state=2).X
        res = questionnaire(X)
        assert res.params["ordering"] == "smoothest"
        for axis, U in enumerate((X, X.T)):
            E = _euclid(U)
            G = U @ U.T
            Uc = U - U.mean(axis=1, keepdims=True)
            centered = Uc @ Uc.T
            geometries = (
                res.distances[axis],
                E,
                _angular_distances(G),
                _angular_distances(centered),
            )
            best = {}
            for method, among in (("single", geometries), ("average", geometries[:2])):
                candidates = [_rounded_optimal_leaf_order(D, method) for D in among]
                scores = [_brute_score(U, o) for o in candidates]
                best[method] = (candidates[int(np.argmin(scores))], min(scores))
            chosen = best["single"][0]
            if best["average"][1] < best["single"][1] * (1 - _AVERAGE_MARGIN):
                chosen = best["average"][0]
            sq = _rounded(E) ** 2
            got = res.orders[axis]
            window = min(_POLISH_WINDOW, U.shape[0] // 8)
            np.testing.assert_array_equal(got, _polish(chosen, sq, window))

            def path(o, sq=sq):
                return float(sq[o[:-1], o[1:]].sum())

            assert path(got) <= path(chosen)
            # no reversal of a short run shortens the polished path (brute force)
            n, w = got.shape[0], min(_POLISH_WINDOW, U.shape[0] // 8)
            for i in range(n):
                for j in range(i + 2, min(n, i + w) + 1):
                    o = got.copy()
                    o[i:j] = o[i:j][::-1]
                    assert path(o) >= path(got) * (1 - 1e-9)
            # the public function gives the same order
            np.testing.assert_array_equal(
                leaf_order(res.trees[axis], res.distances[axis], "smoothest", slices=U), got
            )


def _months(n_years=80, seed=0):
    """Years x months: a yearly cycle whose way up and way down pass the same levels (the
    shortest path folds it), and anomalies that persist from month to month."""
    rng = np.random.default_rng(seed)
    months = np.arange(12)
    mean = 10 * np.cos(2 * np.pi * months / 12)
    anomaly = np.zeros((n_years, 12))
    anomaly[:, 0] = rng.normal(size=n_years)
    for m in range(1, 12):
        anomaly[:, m] = 0.9 * anomaly[:, m - 1] + np.sqrt(1 - 0.81) * rng.normal(size=n_years)
    return mean + 1.5 * anomaly


def test_a_yearly_cycle_is_not_folded():
    X = _months()
    perm = np.random.default_rng(1).permutation(12)
    Xs = X[:, perm]
    smooth = questionnaire(Xs, ordering="smoothest").orders[1]
    short = questionnaire(Xs, ordering="shortest").orders[1]
    steps = set(np.diff(perm[smooth]) % 12)  # the cycle, cut somewhere, either way round
    assert steps in ({1}, {11})
    assert _cyclic_rho(perm[short]) < 0.9  # the fold this ordering exists to avoid


def _strokes(seed, n_img=150, h=10, w=10):
    """Images of one slanted stroke each, fading out at the top and bottom borders."""
    rng = np.random.default_rng(seed)
    rows, cols = np.arange(h), np.arange(w)
    profile = np.exp(-0.5 * ((rows - 4.5) / 2.5) ** 2)
    T = np.empty((n_img, h, w))
    for i in range(n_img):
        centre = rng.uniform(2, 7) + rng.uniform(-0.6, 0.6) * (rows - 4.5)
        T[i] = profile[:, None] * np.exp(-0.5 * (cols[None, :] - centre[:, None]) ** 2)
    return T + 0.01 * rng.random(T.shape)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_image_rows_faint_at_both_borders(seed):
    """By size the two faint borders are neighbours, and the shortest path joins them; the
    shape of the rows (cosine geometry) and the relative criterion keep them apart."""
    T = _strokes(seed)
    perm = np.random.default_rng(seed).permutation(10)
    smooth = questionnaire(T[:, perm]).orders[1]
    short = questionnaire(T[:, perm], ordering="shortest").orders[1]
    assert perm[smooth].tolist() in (list(range(10)), list(range(9, -1, -1)))
    assert order_spearman(perm[short], np.arange(10)) < 0.5


def test_smoothest_needs_the_slices():
    X = make_shuffled_matrix(12, 10, random_state=0).X
    res = questionnaire(X, n_iter=1)
    with pytest.raises(ValueError, match="needs the slices"):
        leaf_order(res.trees[0], res.distances[0], "smoothest")
    with pytest.raises(ValueError, match="one row per point"):
        leaf_order(res.trees[0], res.distances[0], "smoothest", slices=X[:5])
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="slices"):
        leaf_order(res.trees[0], res.distances[0], "smoothest", slices=bad)


@pytest.mark.parametrize("factor", [2.0**-600, 1e-150, 1e150])
def test_smoothest_order_does_not_depend_on_units(factor):
    X = _months(40)[:, np.random.default_rng(3).permutation(12)]
    want = questionnaire(X).orders
    got = questionnaire(X * factor).orders
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)


def test_polish_leaves_a_short_axis_alone():
    order = np.array([2, 0, 1, 3, 4, 5, 6])
    sq = np.random.default_rng(0).random((7, 7))
    np.testing.assert_array_equal(_polish(order, sq + sq.T, 1), order)
