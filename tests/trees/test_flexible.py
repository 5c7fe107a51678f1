import numpy as np
import pytest

from skorg._kernels._flexible import mean_pairwise_distance, round_distances, split_window
from skorg.metrics import cosine_affinity
from skorg.trees import PartitionTree, flexible_tree
from skorg.trees._flexible import _median, _ordered_tree, _symmetric_median
from tests.conftest import ref_tree


def test_reference_ordered_tree_exact(reference):
    data = reference("flex_tree")
    tree = flexible_tree(data["affinity"], tree_constant=1.0)
    expected = ref_tree(data, "ordered_c1")
    # the same nested partitions AND the reference's leaf-ordering rule
    np.testing.assert_array_equal(tree.to_levels(), expected.to_levels())
    np.testing.assert_array_equal(tree.leaf_order, data["ordered_c1_leaf_order"])
    # the unordered variant of the original has the same partitions
    assert tree.same_partitions(ref_tree(data, "plain_c1"))


@pytest.mark.parametrize("case", ["tree_emd", "haar", "quest2d_holder"])
@pytest.mark.parametrize("axis", ["row", "col"])
def test_reference_trees_from_cosine_init(reference, case, axis):
    data = reference(case)
    prefix = f"{axis}_iter00" if case.startswith("quest") else axis
    tree = flexible_tree(data[f"init_{axis}_aff"])
    assert tree == ref_tree(data, prefix)


def test_tree_shape_statistics():
    x = np.sort(np.random.default_rng(0).uniform(size=200))
    tree = flexible_tree(np.exp(-(np.subtract.outer(x, x) ** 2) / 0.01))
    bottom = tree.level_sizes()[-2]
    assert 200 / 4 < bottom < 200 / 2  # about 2.5 to 3 points per folder at the bottom
    assert tree.n_children.max() <= 8


def test_leaf_order_recovers_a_curve():
    rng = np.random.default_rng(3)
    x = rng.uniform(size=60)
    tree = flexible_tree(np.exp(-(np.subtract.outer(x, x) ** 2) / 0.02))
    ordered = x[tree.leaf_order]
    rho = np.corrcoef(np.argsort(np.argsort(ordered)), np.arange(60))[0, 1]
    assert abs(rho) > 0.97


def test_disconnected_graph_terminates():
    # two blocks and two points with no affinity to anything (cosine <= 0 everywhere)
    A = np.zeros((14, 14))
    A[:6, :6] = 0.9
    A[6:12, 6:12] = 0.8
    np.fill_diagonal(A, 1.0)
    tree = flexible_tree(A)
    assert tree.n_points == 14 and tree.level_sizes()[0] == 1
    blocks = [set(tree.folder(v)) for v in range(tree.n_nodes)]
    assert set(range(6)) in blocks and set(range(6, 12)) in blocks


def test_all_zero_affinity_and_tiny_inputs():
    for n in (2, 3, 5, 12):
        tree = flexible_tree(np.eye(n))
        assert tree.n_points == n and tree.level_sizes()[0] == 1
    tree = flexible_tree(np.ones((1, 1)))
    assert tree.n_points == 1


def test_duplicates_and_constant_rows():
    X = np.vstack([np.ones((4, 6)), np.tile(np.arange(6.0), (4, 1)), np.zeros((2, 6))])
    tree = flexible_tree(cosine_affinity(X))
    assert isinstance(tree, PartitionTree) and tree.n_points == 10


def test_rejects_bad_input():
    with pytest.raises(ValueError, match="square"):
        flexible_tree(np.ones((3, 4)))
    with pytest.raises(ValueError, match="NaN"):
        flexible_tree(np.full((3, 3), np.nan))
    with pytest.raises(ValueError, match="tree_constant"):
        flexible_tree(np.eye(3), tree_constant=0)
    with pytest.raises(ValueError, match="non-negative"):
        flexible_tree(-np.ones((3, 3)))


def _pair_distance(emb, i, j):
    """Euclidean distance, squares added in coordinate order (the kernels' order)."""
    acc = 0.0
    for c in range(emb.shape[1]):
        diff = emb[i, c] - emb[j, c]
        acc += diff * diff
    return np.sqrt(acc)


def _brute_group_sums(emb, labels, n_groups):
    """Symmetric group sums: every pair i < j added to both halves, pairs in (i, j) order."""
    sums = np.zeros((n_groups, n_groups))
    for i in range(emb.shape[0]):
        for j in range(i + 1, emb.shape[0]):
            d = _pair_distance(emb, i, j)
            sums[labels[i], labels[j]] += d
            sums[labels[j], labels[i]] += d
    counts = np.bincount(labels, minlength=n_groups).astype(float)
    return sums, counts


def _brute_round(emb, labels, n_groups):
    sums, counts = _brute_group_sums(emb, labels, n_groups)
    D = sums / np.outer(counts, counts)
    D[~np.isfinite(D)] = np.inf
    np.fill_diagonal(D, np.inf)
    return D, D[np.triu_indices(n_groups, 1)]


@pytest.mark.parametrize(
    "n, k, n_groups", [(1, 3, 1), (2, 1, 2), (23, 5, 23), (40, 11, 7), (37, 4, 1)]
)
def test_round_distances_equals_brute_force(n, k, n_groups):
    rng = np.random.default_rng(n * 100 + n_groups)
    emb = rng.normal(size=(n, k)) * rng.uniform(0.1, 10, size=k)
    if n_groups == n:
        labels = np.arange(n)  # the first round: every point its own group
    else:
        labels = rng.permutation(np.arange(n) % n_groups)
    D, tri = round_distances(emb, labels, n_groups)
    D_ref, tri_ref = _brute_round(emb, labels, n_groups)
    # the same additions in the same order: the same bits
    np.testing.assert_array_equal(D, D_ref)
    np.testing.assert_array_equal(tri, tri_ref)
    np.testing.assert_array_equal(D, D.T)
    # and an independent oracle: the mean of the point distance matrix over group blocks
    pd = np.sqrt(((emb[:, None] - emb[None]) ** 2).sum(-1))
    for a in range(n_groups):
        for b in range(a + 1, n_groups):
            block = pd[np.ix_(labels == a, labels == b)]
            assert D[a, b] == pytest.approx(block.mean(), rel=1e-12)


def test_round_distances_first_round_on_a_tiled_size():
    # 8-row blocks, 4 KiB rows, an odd tail: the mirrored lower triangle is exact everywhere
    for n in (8, 64, 517):
        emb = np.random.default_rng(n).normal(size=(n, 3))
        D, tri = round_distances(emb, np.arange(n), n)
        iu = np.triu_indices(n, 1)
        expected = np.sqrt(((emb[iu[0]] - emb[iu[1]]) ** 2).sum(-1))
        np.testing.assert_allclose(tri, expected, rtol=1e-15, atol=0)
        np.testing.assert_array_equal(D[iu], tri)
        np.testing.assert_array_equal(D.T[iu], tri)
        assert np.all(np.isinf(np.diag(D)))


def test_round_distances_non_finite_become_inf():
    emb = np.array([[0.0, 1.0], [np.nan, 0.0], [1.0, 1.0], [np.inf, 0.0]])
    for labels, m in ((np.arange(4), 4), (np.array([0, 1, 0, 2]), 3)):
        D, tri = round_distances(emb, labels, m)
        D_ref, tri_ref = _brute_round(emb, labels, m)
        np.testing.assert_array_equal(D, D_ref)
        np.testing.assert_array_equal(tri, tri_ref)
        assert not np.isnan(D).any()


def test_mean_pairwise_distance_equals_brute_force_with_diagonal():
    rng = np.random.default_rng(5)
    emb = rng.normal(size=(31, 6))
    labels = rng.integers(0, 5, size=31)
    labels[:5] = np.arange(5)
    sums, counts = _brute_group_sums(emb, labels, 5)
    np.testing.assert_array_equal(
        mean_pairwise_distance(emb, labels, 5), sums / np.outer(counts, counts)
    )


def test_split_window_equals_brute_force():
    rng = np.random.default_rng(2)
    x = np.round(rng.normal(size=1000), 1)  # many ties at the window edges
    x[::97] = np.inf
    x[5] = np.nan
    for lo, hi in ((-0.5, 0.3), (0.3, 0.3), (-np.inf, np.inf), (2.0, 1.0)):
        below, inside = split_window(x, lo, hi)
        assert below == np.count_nonzero(x < lo)
        np.testing.assert_array_equal(inside, x[(x >= lo) & (x <= hi)])


def _full_matrix(tri, m):
    D = np.full((m, m), np.inf)
    iu = np.triu_indices(m, 1)
    D[iu] = tri
    D.T[iu] = tri
    return D


@pytest.mark.parametrize("m", [2, 3, 4, 60, 181, 300])
def test_symmetric_median_equals_median_of_the_full_matrix(m):
    rng = np.random.default_rng(m)
    n_tri = m * (m - 1) // 2
    cases = [
        rng.normal(size=n_tri),
        np.round(rng.exponential(size=n_tri), 1),  # ties
        np.where(rng.random(n_tri) < 0.3, np.inf, rng.random(n_tri)),  # unusable pairs
        np.sort(rng.random(n_tri)),  # sorted: the strided sample is exact
        np.sort(rng.random(n_tri))[::-1].copy(),
    ]
    # a sample that misses the median: every sampled position holds a huge value
    bad = rng.random(n_tri)
    if n_tri >= 8192:
        bad[:: n_tri // 1024] = 1e9 + np.arange(bad[:: n_tri // 1024].shape[0])
    cases.append(bad)
    for tri in cases:
        expected = _median(_full_matrix(tri, m))
        assert _symmetric_median(tri.copy(), m) == expected
        # and with NumPy's own median where it is finite
        if np.isfinite(expected):
            assert expected == np.median(_full_matrix(tri, m))


def _random_nested_levels(rng, n, n_levels):
    levels = [np.arange(n)]
    for _ in range(n_levels - 2):
        groups = rng.integers(0, max(levels[-1].max() // 2, 1) + 1, size=levels[-1].max() + 1)
        levels.append(np.unique(groups, return_inverse=True)[1][levels[-1]])
    levels.append(np.zeros(n, dtype=int))
    return [np.asarray(lv, dtype=np.int64) for lv in levels[::-1]]


def test_ordered_tree_equals_validated_from_levels():
    rng = np.random.default_rng(9)
    for n, n_levels in ((2, 2), (10, 3), (50, 6), (200, 8)):
        levels = _random_nested_levels(rng, n, n_levels)
        psi1 = np.round(rng.normal(size=n), 1)  # ties between folder means
        tree = _ordered_tree(levels, psi1)
        keys = []
        for row in levels[1:]:
            keys += [-(np.bincount(row, weights=psi1) / np.bincount(row))[row], row]
        checked = PartitionTree.from_levels(np.stack(levels), leaf_order=np.lexsort(keys[::-1]))
        assert tree == checked
        for name in ("start", "end", "parent", "child_ptr", "level", "level_ptr", "leaf_position"):
            np.testing.assert_array_equal(getattr(tree, name), getattr(checked, name))
        np.testing.assert_array_equal(tree.to_levels(), checked.to_levels())


def _coordinate_order_distances(emb):
    """All point distances, squares added in coordinate order (the kernels' order)."""
    acc = np.zeros((emb.shape[0], emb.shape[0]))
    for c in range(emb.shape[1]):
        diff = emb[:, None, c] - emb[None, :, c]
        acc += diff * diff
    return np.sqrt(acc)


def test_round_distances_parallel_path_exact_and_thread_independent():
    import numba

    from skorg._kernels._flexible import _PARALLEL_MIN_POINTS, _PARTS, _pair_balanced_rows

    n = _PARALLEL_MIN_POINTS + 37
    rng = np.random.default_rng(17)
    emb = rng.normal(size=(n, 11)) * rng.uniform(0.1, 10, size=11)
    pd = _coordinate_order_distances(emb)
    iu = np.triu_indices(n, 1)
    # the fixed parts: contiguous point ranges with about equal pair counts
    bounds = _pair_balanced_rows(n, _PARTS)
    pairs = np.diff(n * (n - 1) // 2 - (n - bounds) * (n - bounds - 1) // 2)
    assert bounds[0] == 0 and bounds[-1] == n and np.all(np.diff(bounds) >= 0)
    assert np.all(np.abs(pairs - n * (n - 1) / 2 / _PARTS) <= n)
    cases = [
        (np.arange(n), n),  # the first round
        (rng.permutation(np.arange(n) % 53), 53),
        (np.sort(rng.permutation(np.arange(n) % 4)), 4),
        (np.zeros(n, dtype=np.int64), 1),
    ]
    previous = numba.get_num_threads()
    try:
        for labels, m in cases:
            labels = labels.astype(np.int64)
            runs = []
            for threads in (1, 2):
                numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
                runs.append(round_distances(emb, labels, m))
            (D, tri), (D2, tri2) = runs
            # the same bits on one thread and on two
            np.testing.assert_array_equal(D, D2)
            np.testing.assert_array_equal(tri, tri2)
            np.testing.assert_array_equal(D, D.T)
            np.testing.assert_array_equal(tri, D[np.triu_indices(m, 1)])
            assert D.shape == (m, m) and D.dtype == np.float64 and np.all(np.isinf(np.diag(D)))
            # exact oracle: each part sums its pairs (i, j), i < j, in order into the upper
            # triangle; the part sums are added in part order
            counts = np.bincount(labels, minlength=m).astype(float)
            total = np.zeros((m, m))
            for p in range(_PARTS):
                part = np.zeros((m, m))
                rows = (iu[0] >= bounds[p]) & (iu[0] < bounds[p + 1])
                gi, gj = labels[iu[0][rows]], labels[iu[1][rows]]
                np.add.at(part, (np.minimum(gi, gj), np.maximum(gi, gj)), pd[iu][rows])
                total = total + part
            expected = total / np.outer(counts, counts)
            if m == n:  # the first round: the distances themselves
                expected = pd.copy()
            np.fill_diagonal(expected, np.inf)
            upper = np.triu_indices(m, 1)
            np.testing.assert_array_equal(tri, expected[upper])
            # brute-force NumPy reference: the mean of the point distances over group blocks
            ref = np.full((m, m), np.inf)
            for a, b in zip(*upper):
                ref[a, b] = ref[b, a] = pd[np.ix_(labels == a, labels == b)].mean()
            np.testing.assert_allclose(D, ref, rtol=1e-12, atol=0)
    finally:
        numba.set_num_threads(previous)
