"""Tree EMD, multi-tree EMD and the dual affinity: brute force, reference parity, kernels."""

import itertools

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from skorg._kernels import _emd as kernels
from skorg.metrics import dual_affinity, multi_tree_emd, tree_emd, tree_emd_features
from skorg.trees import PartitionTree, dyadic_tree

from ..conftest import ref_tree


# --------------------------------------------------------------------------- oracles
def random_tree(n, rng, n_levels=4, max_children=6):
    """Random nested partition with one-child chains and many-children folders."""
    order = rng.permutation(n)
    segments = [(0, n)]
    levels = [np.zeros(n, dtype=np.intp)]
    for _ in range(n_levels):
        nxt = []
        for s, e in segments:
            size = e - s
            # one part (a one-child chain) a third of the time, else up to max_children parts
            parts = 1 if size == 1 or rng.random() < 1 / 3 else rng.integers(2, max_children + 1)
            parts = min(parts, size)
            cuts = np.sort(rng.choice(np.arange(s + 1, e), size=parts - 1, replace=False))
            bounds = [s, *cuts.tolist(), e]
            nxt.extend(itertools.pairwise(bounds))
        segments = nxt
        labels = np.empty(n, dtype=np.intp)
        relabel = rng.permutation(len(segments)) * 3 + 7  # labels are arbitrary integers
        for lab, (s, e) in zip(relabel, segments, strict=True):
            labels[order[s:e]] = lab
        levels.append(labels)
    return PartitionTree.from_levels(np.array(levels), leaf_order=order)


def node_weight(tree, node, alpha, beta):
    return (tree.size[node] / tree.n_points) ** beta * 2.0 ** (-alpha * tree.level[node])


def brute_tree_emd(X, tree, alpha, beta):
    """Plain sum over every node (root, chains, leaves) of the weighted folder-mean gaps."""
    D = np.zeros((X.shape[1], X.shape[1]))
    for node in range(tree.n_nodes):
        means = X[tree.folder(node)].mean(axis=0)
        D += node_weight(tree, node, alpha, beta) * np.abs(means[:, None] - means[None, :])
    return D


def brute_multi_tree_emd(X, trees, axis, alphas, betas):
    """Sum over every combination of nodes of the trees on the other axes."""
    others = [a for a in range(X.ndim) if a != axis]
    Xm = np.moveaxis(X, axis, -1)
    n_t = Xm.shape[-1]
    D = np.zeros((n_t, n_t))
    node_lists = [range(trees[a].n_nodes) for a in others]
    for combo in itertools.product(*node_lists):
        w = 1.0
        folders = []
        for a, node in zip(others, combo, strict=True):
            w *= node_weight(trees[a], node, alphas[a], betas[a])
            folders.append(trees[a].folder(node))
        block = Xm[np.ix_(*folders, np.arange(n_t))]
        means = block.reshape(-1, n_t).mean(axis=0)
        D += w * np.abs(means[:, None] - means[None, :])
    return D


@pytest.fixture
def rng():
    return np.random.default_rng(20240611)


# --------------------------------------------------------------------------- tree EMD
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("alpha", "beta"), [(0.0, 1.0), (1.0, 0.0), (0.5, 0.5), (-0.7, -1.3)])
def test_tree_emd_matches_brute_force(seed, alpha, beta):
    rng = np.random.default_rng(seed)
    n, m = 37, 23
    tree = random_tree(n, rng)
    assert np.any(tree.n_children == 1) and tree.n_children.max() >= 3
    X = rng.standard_normal((n, m)) * 3 + 1
    D = tree_emd(X, tree, alpha=alpha, beta=beta)
    np.testing.assert_allclose(D, brute_tree_emd(X, tree, alpha, beta), rtol=1e-12, atol=0)
    assert np.array_equal(D, D.T) and np.all(np.diag(D) == 0)


def test_tree_emd_features_are_an_l1_embedding(rng):
    tree = random_tree(40, rng)
    X = rng.standard_normal((40, 30))
    F = tree_emd_features(X, tree, alpha=0.3, beta=0.8)
    # one feature per distinct folder: chains collapse, nothing is dropped at these weights
    distinct = {(s, e) for s, e in zip(tree.start, tree.end, strict=True)}
    assert F.shape == (30, len(distinct)) < (30, tree.n_nodes)
    D = tree_emd(X, tree, alpha=0.3, beta=0.8)
    np.testing.assert_allclose(cdist(F, F, "cityblock"), D, rtol=1e-12)


def test_exclude_singletons_and_folder_weights(rng):
    tree = random_tree(30, rng)
    X = rng.standard_normal((30, 12))
    fw = rng.uniform(0, 2, tree.n_nodes)
    fw[::5] = 0.0
    expected_w = np.zeros((12, 12))
    expected_s = np.zeros((12, 12))
    for node in range(tree.n_nodes):
        means = X[tree.folder(node)].mean(axis=0)
        gap = node_weight(tree, node, 0.5, 1.0) * np.abs(means[:, None] - means[None, :])
        expected_w += fw[node] * gap
        expected_s += gap * (tree.size[node] > 1)
    got_w = tree_emd(X, tree, alpha=0.5, folder_weights=fw)
    got_s = tree_emd(X, tree, alpha=0.5, exclude_singletons=True)
    np.testing.assert_allclose(got_w, expected_w, rtol=1e-12)
    np.testing.assert_allclose(got_s, expected_s, rtol=1e-12)


def test_single_point_tree_is_absolute_difference():
    x = np.array([[1.0, 4.0, -2.0]])
    np.testing.assert_array_equal(tree_emd(x, dyadic_tree(1)), np.abs(x.T - x))


def test_dyadic_closed_form():
    # two rows, beta = 0: root gap + both leaf gaps
    X = np.array([[0.0, 1.0, 1.0], [0.0, 1.0, 3.0]])
    expected = np.array([[0, 3, 6], [3, 0, 3], [6, 3, 0]], dtype=float)
    np.testing.assert_array_equal(tree_emd(X, dyadic_tree(2), beta=0.0), expected)


# --------------------------------------------------------------------------- multi-tree EMD
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_multi_tree_emd_3d_matches_brute_force(rng, axis):
    shape = (9, 8, 7)
    X = rng.standard_normal(shape)
    trees = [random_tree(s, rng, n_levels=3) for s in shape]
    alphas, betas = [0.4, -0.3, 1.0], [1.0, 0.5, -0.5]
    trees_in = [t if a != axis else None for a, t in enumerate(trees)]
    D = multi_tree_emd(X, trees_in, axis=axis, alphas=alphas, betas=betas)
    expected = brute_multi_tree_emd(X, trees, axis, alphas, betas)
    np.testing.assert_allclose(D, expected, rtol=1e-12)
    # the same with only the other axes' trees and parameters
    others = [a for a in range(3) if a != axis]
    D2 = multi_tree_emd(
        X,
        [trees[a] for a in others],
        axis=axis,
        alphas=[alphas[a] for a in others],
        betas=[betas[a] for a in others],
    )
    np.testing.assert_array_equal(D, D2)


@pytest.mark.parametrize("axis", [1, -1])
def test_multi_tree_emd_4d_matches_brute_force(rng, axis):
    shape = (5, 4, 6, 5)
    X = rng.standard_normal(shape)
    trees = [random_tree(s, rng, n_levels=2, max_children=3) for s in shape]
    alphas, betas = [0.2, 0.0, -0.5, 1.0], [1.0, 0.3, 0.0, 2.0]
    trees_in = [t if a != axis % 4 else None for a, t in enumerate(trees)]
    D = multi_tree_emd(X, trees_in, axis=axis, alphas=alphas, betas=betas)
    expected = brute_multi_tree_emd(X, trees, axis % 4, alphas, betas)
    np.testing.assert_allclose(D, expected, rtol=1e-12)


def test_multi_tree_emd_on_a_matrix_is_tree_emd(rng):
    X = rng.standard_normal((20, 15))
    tree = random_tree(15, rng)
    np.testing.assert_array_equal(
        multi_tree_emd(X, [None, tree], axis=0, alphas=0.5, betas=0.5),
        tree_emd(X.T, tree, alpha=0.5, beta=0.5),
    )


def test_read_only_input(rng):
    X = rng.standard_normal((6, 7, 8))
    trees = [None, random_tree(7, rng), random_tree(8, rng)]
    expected = multi_tree_emd(X, trees, axis=0)
    X.flags.writeable = False
    np.testing.assert_array_equal(multi_tree_emd(X, trees, axis=0), expected)


def test_multi_tree_emd_chunks_agree(rng):
    # three trees: the feature matrix is built in chunks bounded by working_memory
    X = rng.standard_normal((16, 12, 6, 10))
    trees = [dyadic_tree(16), random_tree(12, rng), random_tree(6, rng), None]
    full = multi_tree_emd(X, trees, alphas=0.5)
    # 1e-4 MiB holds less than one folder of the first tree: one folder per chunk
    chunked = multi_tree_emd(X, trees, alphas=0.5, working_memory=1e-4)
    np.testing.assert_allclose(chunked, full, rtol=1e-13)


@pytest.mark.parametrize("order", ["C", "F"])
def test_two_tree_emd_of_many_strided_slices_matches_brute_force(rng, order):
    # 37 slices along the axis of largest stride: the prefix table gathers them in blocks
    # (two full ones and a remainder), across cache-set-aliased rows
    X = np.asarray(rng.standard_normal((37, 10, 12)), order=order)
    trees = [random_tree(s, rng, n_levels=3) for s in X.shape]
    axis = 0 if order == "C" else 2
    trees_in = [t if a != axis else None for a, t in enumerate(trees)]
    D = multi_tree_emd(X, trees_in, axis=axis, alphas=0.3, betas=0.5)
    expected = brute_multi_tree_emd(X, trees, axis, [0.3] * 3, [0.5] * 3)
    np.testing.assert_allclose(D, expected, rtol=1e-12)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_two_tree_emd_ignores_memory_layout(rng, axis):
    X = rng.standard_normal((13, 11, 9))
    trees = [random_tree(s, rng, n_levels=3) for s in X.shape]
    trees[axis] = None
    expected = multi_tree_emd(X, trees, axis=axis, alphas=0.3)
    for view in (np.asfortranarray(X), np.transpose(np.transpose(X).copy()), X[::1, ::1, ::1]):
        np.testing.assert_array_equal(multi_tree_emd(view, trees, axis=axis, alphas=0.3), expected)
    doubled = np.repeat(X, 2, axis=axis)[(slice(None),) * axis + (slice(None, None, 2),)]
    np.testing.assert_array_equal(multi_tree_emd(doubled, trees, axis=axis, alphas=0.3), expected)


def test_two_tree_kernel_threads_and_blocks_do_not_change_the_sums(rng):
    # large enough for the parallel kernels; 127 x 127 bi-folder features in blocks of 4 rows
    X = rng.standard_normal((64, 64, 64))
    trees = [dyadic_tree(64), random_tree(64, rng, n_levels=4), None]
    one = multi_tree_emd(X, trees, n_jobs=1)
    two = multi_tree_emd(X, trees, n_jobs=2)
    np.testing.assert_array_equal(one, two)
    np.testing.assert_allclose(
        one, brute_multi_tree_emd(X, [*trees[:2], None], 2, [0.0] * 3, [1.0] * 3), rtol=1e-12
    )
    assert np.all(np.diag(one) == 0) and np.array_equal(one, one.T)


def test_two_tree_emd_long_axis_takes_the_chunked_path(rng):
    # 8 accumulators of 60 x 60 doubles are 0.22 MiB: below that bound the chunked path runs
    X = rng.standard_normal((9, 7, 60))
    trees = [random_tree(9, rng), random_tree(7, rng), None]
    fused = multi_tree_emd(X, trees, alphas=0.5)
    chunked = multi_tree_emd(X, trees, alphas=0.5, working_memory=0.2)
    np.testing.assert_allclose(chunked, fused, rtol=1e-13)
    expected = brute_multi_tree_emd(X, trees, 2, [0.5] * 3, [1.0] * 3)
    np.testing.assert_allclose(chunked, expected, rtol=1e-12)


def test_two_tree_emd_of_identical_slices_is_zero(rng):
    X = rng.standard_normal((20, 18, 6))
    X[:, :, 4] = X[:, :, 1]
    X[:, :, 5] = 3.0  # a constant slice
    trees = [random_tree(20, rng), random_tree(18, rng), None]
    for dtype in (np.float64, np.float32):
        D = multi_tree_emd(X, trees, dtype=dtype)
        assert D[1, 4] == D[4, 1] == 0.0
        others = ~np.eye(6, dtype=bool)
        others[1, 4] = others[4, 1] = False
        assert np.all(D[others] > 0)


# --------------------------------------------------------------------------- reference parity
@pytest.mark.parametrize("i", range(4))
def test_reference_tree_emd(reference, i):
    data = reference("tree_emd")
    row_tree, col_tree = ref_tree(data, "row"), ref_tree(data, "col")
    alpha, beta = data["alphas"][i], data["betas"][i]
    col = tree_emd(data["X"], row_tree, alpha=alpha, beta=beta)
    row = tree_emd(data["X"].T, col_tree, alpha=alpha, beta=beta)
    np.testing.assert_allclose(col, data["col_emd"][i], rtol=1e-10)
    np.testing.assert_allclose(row, data["row_emd"][i], rtol=1e-10)
    np.testing.assert_allclose(dual_affinity(col), data["col_dual_aff"][i], rtol=1e-10)
    np.testing.assert_allclose(dual_affinity(row), data["row_dual_aff"][i], rtol=1e-10)


@pytest.mark.parametrize("i", range(2))
def test_reference_bitree_emd(reference, i):
    data = reference("bitree_emd")
    trees = [ref_tree(data, "axis0"), ref_tree(data, "axis1"), None]
    alphas = [data["axis0_alphas"][i], data["axis1_alphas"][i], 0.0]
    betas = [data["axis0_betas"][i], data["axis1_betas"][i], 0.0]
    d = multi_tree_emd(data["X"], trees, axis=2, alphas=alphas, betas=betas)
    np.testing.assert_allclose(d, data["axis2_emd"][i], rtol=1e-10)
    np.testing.assert_allclose(dual_affinity(d), data["axis2_dual_aff"][i], rtol=1e-10)


# --------------------------------------------------------------------------- precision, threads
def test_float32_agrees_with_float64(rng):
    X = rng.uniform(0, 1, (64, 40))
    tree = random_tree(64, rng)
    d64 = tree_emd(X, tree, alpha=0.5)
    d32 = tree_emd(X, tree, alpha=0.5, dtype=np.float32)
    d32_in = tree_emd(X.astype(np.float32), tree, alpha=0.5)
    assert d32.dtype == d32_in.dtype == np.float32
    # features round to float32 (u = 2**-24 relative each), then float32 differences are summed
    # in runs of at most _LOWP_RUN terms (see test_pairwise_kernel_matches_cdist): the error of
    # a distance is bounded by the feature rounding plus (_LOWP_RUN + 1) u times the distance
    F = tree_emd_features(X, tree, alpha=0.5)
    u = 2.0**-24
    feature_part = 2 * u * (np.abs(F).sum(1)[:, None] + np.abs(F).sum(1)[None, :])
    bound = feature_part * (1 + 1e-3) + (kernels._LOWP_RUN + 1) * u * d64 * (1 + 1e-3)
    assert np.all(np.abs(d32 - d64) <= bound)
    np.testing.assert_allclose(d32_in, d64, rtol=1e-5)
    X3 = rng.uniform(0, 1, (12, 10, 9))
    trees = [random_tree(12, rng), random_tree(10, rng), None]
    m64 = multi_tree_emd(X3, trees)
    m32 = multi_tree_emd(X3, trees, dtype="float32")
    assert m32.dtype == np.float32
    np.testing.assert_allclose(m32, m64, rtol=1e-5)


def test_n_jobs_gives_identical_results(rng):
    # 150 columns: 3 tiles of 64 with one thread, tiles of 32 with two; the result must not move
    X = rng.standard_normal((50, 150))
    tree = random_tree(50, rng)
    d1 = tree_emd(X, tree, n_jobs=1)
    d2 = tree_emd(X, tree, n_jobs=2)
    np.testing.assert_array_equal(d1, d2)
    X3 = rng.standard_normal((10, 12, 40))
    trees = [random_tree(10, rng), random_tree(12, rng), None]
    np.testing.assert_array_equal(
        multi_tree_emd(X3, trees, n_jobs=1), multi_tree_emd(X3, trees, n_jobs=-1)
    )


@pytest.mark.parametrize("m", [1, 3, 5, 17, 70, 150])
@pytest.mark.parametrize("k", [0, 1, 7, 1100])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_pairwise_kernel_matches_cdist(rng, m, k, dtype):
    F = rng.standard_normal((m, k)).astype(dtype)
    for tile in (8, 16, 64):
        n_tiles = -(-m // tile)
        ti, tj = np.triu_indices(n_tiles)
        out = np.zeros((m, m))
        kernels.pairwise_l1_sym(F, ti.astype(np.intp), tj.astype(np.intp), tile, 512, out, -1.0)
        expected = cdist(F.astype(np.float64), F.astype(np.float64), "cityblock")
        if dtype == np.float64:
            np.testing.assert_allclose(out, expected, rtol=1e-13, atol=1e-13)
        else:
            # float32 differences summed in float32 runs of at most _LOWP_RUN terms: each term
            # and each partial sum rounds once (u = 2**-24), so the error is at most
            # (_LOWP_RUN + 1) u times the exact sum (plus float64 rounding)
            bound = (kernels._LOWP_RUN + 1) * 2.0**-24 * expected + 1e-13
            assert np.all(np.abs(out - expected) <= bound)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_multiply_add_subtracts_exactly_fused_or_not(rng, dtype):
    from fractions import Fraction

    import numba

    from skorg._kernels._muladd import muladd

    @numba.njit
    def muladd_all(a, b, c, out):
        for i in range(a.shape[0]):
            out[i] = muladd(a[i], b[i], c[i])

    @numba.njit
    def difference(x, y, minus_one, out):
        for i in range(x.shape[0]):
            out[i] = muladd(y[i], minus_one, x[i])

    # a * b + c: rounded once where the processor fuses it, else the product and the sum
    # rounded each; every value is one of the two
    a, b, c = (rng.standard_normal(300).astype(dtype) for _ in range(3))
    out = np.empty(300, dtype=dtype)
    muladd_all(a, b, c, out)
    exact = [
        Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)) for x, y, z in zip(a, b, c)
    ]
    # (float32 rounds through float64: a double rounding these seeded operands never meet)
    fused = np.array([float(v) for v in exact]).astype(dtype)
    unfused = (a * b) + c
    assert np.all((out == fused) | (out == unfused))
    # muladd(y, -1, x) is x - y bit for bit either way (-1 * y is exact), over magnitudes
    # from tiny to huge, signed zeros too
    x = (rng.standard_normal(1000) * np.exp2(rng.integers(-60, 60, 1000))).astype(dtype)
    y = (rng.standard_normal(1000) * np.exp2(rng.integers(-60, 60, 1000))).astype(dtype)
    x[:3], y[:3] = [0.0, -0.0, 1.5], [0.0, 0.0, 1.5]
    d = np.empty_like(x)
    difference(x, y, -1.0, d)
    bits = np.uint64 if dtype == np.float64 else np.uint32
    np.testing.assert_array_equal(d.view(bits), (x - y).view(bits))


def test_pairwise_kernel_on_integers_is_exact(rng):
    # integer features: every difference and every partial sum is exact in any order, so the
    # kernel's multiply-add differences must give cdist's distances exactly
    for dtype in (np.float64, np.float32):
        F = rng.integers(-50, 50, size=(37, 300)).astype(dtype)
        ti, tj = np.triu_indices(-(-37 // 8))
        out = np.zeros((37, 37))
        kernels.pairwise_l1_sym(F, ti.astype(np.intp), tj.astype(np.intp), 8, 512, out, -1.0)
        np.testing.assert_array_equal(
            out, cdist(F.astype(np.float64), F.astype(np.float64), "cityblock")
        )


def test_folder_mean_kernels(rng):
    tree = random_tree(25, rng)
    leaf_order = np.array(tree.leaf_order)
    start, end = np.array(tree.start), np.array(tree.end)
    scale = rng.uniform(0.5, 2, tree.n_nodes) / tree.size
    Y = rng.standard_normal((3, 25, 40))
    expected = np.stack(
        [scale[f] * Y[:, tree.folder(f), :].sum(axis=1) for f in range(tree.n_nodes)], axis=1
    )
    out = np.empty((3, tree.n_nodes, 40))
    kernels.folder_means_mid(Y, leaf_order, start, end, scale, 16, 2, out)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-14)
    out2 = np.empty((40, tree.n_nodes))
    kernels.folder_means_rows(np.ascontiguousarray(Y[1].T), leaf_order, start, end, scale, 2, out2)
    np.testing.assert_allclose(out2, expected[1].T, rtol=1e-12, atol=1e-14)


# --------------------------------------------------------------------------- dual affinity
def test_dual_affinity_closed_form():
    d = np.array([[0.0, 1.0, 4.0], [1.0, 0.0, 2.0], [4.0, 2.0, 0.0]])
    # median over all 9 entries, the three zeros included, is 1
    np.testing.assert_allclose(dual_affinity(d), np.exp(-d))
    np.testing.assert_allclose(dual_affinity(d, epsilon=2.0), np.exp(-d / 2.0))
    zero_median = np.zeros((3, 3))
    zero_median[0, 1] = zero_median[1, 0] = 3.0
    np.testing.assert_allclose(dual_affinity(zero_median), np.exp(-zero_median))


@pytest.mark.parametrize("m", [1, 2, 3, 4, 7, 10, 33, 200])
def test_symmetric_dual_affinity_equals_the_full_median(rng, m):
    from skorg.metrics._emd import _symmetric_dual_affinity

    for values in (rng.uniform(0, 5, (m, m)), rng.integers(0, 3, (m, m)).astype(float)):
        d = np.triu(values, 1)
        d = d + d.T  # symmetric, zero diagonal, many ties in the integer case
        for epsilon in (1.0, 0.3):
            np.testing.assert_array_equal(
                _symmetric_dual_affinity(d, epsilon), dual_affinity(d, epsilon=epsilon)
            )


# --------------------------------------------------------------------------- validation
def test_errors(rng):
    X = rng.standard_normal((10, 6))
    tree = dyadic_tree(10)
    with pytest.raises(ValueError, match=r"tree on 9 points but the data has 10 rows"):
        tree_emd(X, dyadic_tree(9))
    bad = X.copy()
    bad[2, 3] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite"):
        tree_emd(bad, tree)
    bad[2, 3] = np.inf
    with pytest.raises(ValueError, match="NaN or infinite"):
        multi_tree_emd(bad, [tree, None])
    with pytest.raises(ValueError, match="must be 2-D"):
        tree_emd(X[:, :, None], tree)
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        multi_tree_emd(X[:, 0], [tree])
    with pytest.raises(TypeError, match="PartitionTree"):
        tree_emd(X, np.arange(10))
    with pytest.raises(ValueError, match="alpha must be a finite real"):
        tree_emd(X, tree, alpha=np.inf)
    with pytest.raises(ValueError, match="beta must be a finite real"):
        tree_emd(X, tree, beta="1")
    with pytest.raises(ValueError, match="folder_weights must have one entry per tree node"):
        tree_emd(X, tree, folder_weights=np.ones(3))
    with pytest.raises(ValueError, match="non-negative"):
        tree_emd(X, tree, folder_weights=-np.ones(tree.n_nodes))
    with pytest.raises(ValueError, match="dtype must be"):
        tree_emd(X, tree, dtype=np.int64)
    with pytest.raises(ValueError, match="n_jobs"):
        tree_emd(X, tree, n_jobs=0)
    X3 = rng.standard_normal((10, 6, 4))
    with pytest.raises(ValueError, match=r"trees\[2\] \(the compared axis\) must be None"):
        multi_tree_emd(X3, [tree, dyadic_tree(6), dyadic_tree(4)], axis=2)
    with pytest.raises(ValueError, match="trees must be a scalar or a sequence of length 3"):
        multi_tree_emd(X3, [tree], axis=2)
    with pytest.raises(ValueError, match=r"trees\[1\] is a tree on 5 points .* 6 entries"):
        multi_tree_emd(X3, [tree, dyadic_tree(5), None])
    with pytest.raises(ValueError, match="alphas must be a scalar or a sequence"):
        multi_tree_emd(X3, [tree, dyadic_tree(6), None], alphas=[1.0] * 4)
    with pytest.raises(ValueError, match="axis must be an integer"):
        multi_tree_emd(X3, [tree, dyadic_tree(6), None], axis=3)
    with pytest.raises(ValueError, match="square"):
        dual_affinity(np.ones((2, 3)))
    with pytest.raises(ValueError, match="non-negative"):
        dual_affinity(-np.ones((2, 2)))
    with pytest.raises(ValueError, match="epsilon must be positive"):
        dual_affinity(np.ones((2, 2)), epsilon=0.0)


# --------------------------------------------------------------------------- NumPy small paths
def test_small_feature_means_equal_the_kernels_bit_for_bit(rng, monkeypatch):
    from skorg.metrics import _emd_core as _emd

    for shape, ax in (((7, 32), 1), ((33, 5), 0), ((3, 16, 4), 1), ((2, 3, 25), 2)):
        for dtype in (np.float64, np.float32):
            Z = rng.standard_normal(shape).astype(dtype)
            plan = _emd._folder_plan(random_tree(shape[ax], rng), 0.5, 1.0, False, None, "t")
            small = _emd._reduce_axis(Z, ax, plan, dtype, compiled=False)
            compiled = _emd._reduce_axis(Z, ax, plan, dtype, compiled=True)
            assert small.dtype == compiled.dtype == dtype
            np.testing.assert_array_equal(small, compiled)
    # the features take the kernels once their pairwise sums would (and only then): a
    # 300-row matrix on a 300-point tree is past the NumPy bound for its sums, not its means
    X = rng.standard_normal((300, 300))
    plan = _emd._padded(_emd._folder_plan(random_tree(300, rng), 0.5, 1.0, False, None, "t"))
    calls = []
    real = _emd._reduce_axis
    monkeypatch.setattr(_emd, "_reduce_axis", lambda *a, **k: calls.append(a[-1]) or real(*a, **k))
    F = _emd._features(X, {1: plan}, np.float64)
    assert 300 * 300 * F.shape[1] // 2 >= _emd._NUMPY_MAX_WORK and calls == [True]
    calls.clear()
    _emd._features(
        X[:20, :40],
        {1: _emd._padded(_emd._folder_plan(random_tree(40, rng), 0.5, 1.0, False, None, "t"))},
        np.float64,
    )
    assert calls == [False]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_small_pairwise_sums_equal_the_kernel(rng, monkeypatch, dtype):
    from skorg.metrics import _emd_core as _emd

    F = rng.standard_normal((37, 300)).astype(dtype)
    start = rng.random((37, 37))
    start = start + start.T
    small, compiled = start.copy(), start.copy()
    _emd._add_pairwise_l1(F, small)
    monkeypatch.setattr(_emd, "_NUMPY_MAX_WORK", 0)
    _emd._add_pairwise_l1(F, compiled)
    exact = start + cdist(F.astype(np.float64), F.astype(np.float64), "cityblock")
    np.testing.assert_allclose(small, exact, rtol=1e-14)
    np.testing.assert_array_equal(small, small.T)
    rtol = 1e-13 if dtype == np.float64 else (kernels._LOWP_RUN + 1) * 2.0**-24
    np.testing.assert_allclose(compiled, exact, rtol=rtol)


@pytest.mark.parametrize("m", [1, 2, 5, 64])
def test_symmetric_dual_affinity_is_exp_of_the_triangle_mirrored(rng, m):
    from skorg.metrics._emd import _symmetric_dual_affinity

    d = rng.random((m, m))
    d = d + d.T
    np.fill_diagonal(d, 0.0)
    A = _symmetric_dual_affinity(d, 1.0)
    pairs = [(i, j) for i in range(m) for j in range(i + 1, m)]  # row by row
    upper = np.array([d[i, j] for i, j in pairs])
    scale = np.median(d) if np.median(d) != 0 else 1.0
    expected = np.eye(m)
    for (i, j), value in zip(pairs, np.exp(-upper / scale)):
        expected[i, j] = expected[j, i] = value
    np.testing.assert_array_equal(A, expected)


def test_n_jobs_gives_identical_results_on_the_compiled_path(rng):
    # above the NumPy path's size and the parallel threshold: serial against parallel tiles
    X = rng.standard_normal((400, 400))
    tree = random_tree(400, rng, n_levels=6)
    d1 = tree_emd(X, tree, n_jobs=1)
    np.testing.assert_array_equal(d1, tree_emd(X, tree, n_jobs=2))
    np.testing.assert_allclose(
        d1, cdist(*[tree_emd_features(X, tree)] * 2, "cityblock"), rtol=1e-12
    )
