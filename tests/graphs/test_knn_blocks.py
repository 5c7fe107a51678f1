"""Block-wise L1 nearest neighbours: the exact block search against brute force, blocking
invariance, merges, nearest-neighbour descent's recall, and the path choice of the organizer."""

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from skorg.graphs import (
    empty_knn_lists,
    knn_indices,
    l1_cross_distances,
    l1_knn_block,
    l1_knn_descent,
    l1_knn_recall,
    merge_knn_lists,
)
from skorg.organize._sparse import choose_paths


def _brute(F, k):
    D = cdist(F, F, "cityblock")
    np.fill_diagonal(D, np.inf)
    n = F.shape[0]
    order = np.lexsort((np.broadcast_to(np.arange(n), D.shape), D), axis=1)[:, :k]
    return np.take_along_axis(D, order, 1), order


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_block_search_equals_brute_force(dtype):
    rng = np.random.default_rng(0)
    F = rng.random((203, 37)).astype(dtype)
    d, i = l1_knn_block(F, F, 6)
    d_ref, i_ref = _brute(F.astype(np.float64), 6)
    np.testing.assert_array_equal(i, i_ref)
    np.testing.assert_allclose(d, d_ref, rtol=1e-6 if dtype == np.float32 else 1e-13)


def test_ties_go_to_the_smaller_index():
    F = np.array([[0.0], [1.0], [-1.0], [2.0], [-2.0]])
    d, i = l1_knn_block(F, F, 4)
    np.testing.assert_array_equal(i[0], [1, 2, 3, 4])
    np.testing.assert_array_equal(d[0], [1.0, 1.0, 2.0, 2.0])


def test_blocked_search_is_bit_for_bit_the_whole():
    rng = np.random.default_rng(1)
    F = rng.random((301, 1100)).astype(np.float32)  # features past one 512 chunk
    whole = l1_knn_block(F, F, 5)
    ids = np.arange(301)
    lists = empty_knn_lists(301, 5)
    for lo in range(0, 301, 77):
        part = (lists[0][lo : lo + 77], lists[1][lo : lo + 77])
        for start in (150, 0, 47):  # references in uneven blocks, in any order
            stop = {150: 301, 0: 47, 47: 150}[start]
            l1_knn_block(F[lo : lo + 77], F[start:stop], query_ids=ids[lo : lo + 77],
                         reference_ids=ids[start:stop], lists=part)  # fmt: skip
    np.testing.assert_array_equal(lists[0], whole[0])
    np.testing.assert_array_equal(lists[1], whole[1])


def test_merge_of_two_reference_halves_is_the_whole():
    rng = np.random.default_rng(2)
    F = rng.random((120, 20))
    a = l1_knn_block(F, F[:60], 4, reference_ids=np.arange(60))
    b = l1_knn_block(F, F[60:], 4, reference_ids=np.arange(60, 120))
    merged = merge_knn_lists(a, b)
    whole = l1_knn_block(F, F, 4)
    np.testing.assert_array_equal(merged[1], whole[1])
    np.testing.assert_array_equal(merged[0], whole[0])
    again = merge_knn_lists(merged, merged)  # duplicates are kept once
    np.testing.assert_array_equal(again[1], whole[1])


def test_cross_distances_equal_cdist():
    rng = np.random.default_rng(3)
    Q, F = rng.random((9, 700)), rng.random((13, 700))
    np.testing.assert_allclose(l1_cross_distances(Q, F), cdist(Q, F, "cityblock"), rtol=1e-13)


def test_descent_is_exact_on_one_block_and_deterministic():
    rng = np.random.default_rng(4)
    F = rng.random((300, 8))
    _, i = l1_knn_descent(F, 5, block_size=512)
    np.testing.assert_array_equal(i, _brute(F, 5)[1])
    G = rng.random((2500, 6))
    a = l1_knn_descent(G, 10, block_size=256, random_state=3)
    b = l1_knn_descent(G, 10, block_size=256, random_state=3)
    np.testing.assert_array_equal(a[1], b[1])


def test_descent_recall_on_clusters_and_the_recall_estimate():
    rng = np.random.default_rng(5)
    centers = rng.random((10, 12)) * 20
    F = (centers[rng.integers(0, 10, 4000)] + rng.standard_normal((4000, 12))).astype(np.float32)
    _, idx = l1_knn_descent(F, 10, block_size=256, random_state=0)
    exact = _brute(F.astype(np.float64), 10)[1]
    true_recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(idx, exact)])
    assert true_recall >= 0.95
    est = l1_knn_recall(F, idx, n_samples=400, random_state=0)
    assert abs(est - true_recall) < 0.03
    assert l1_knn_recall(F, exact, n_samples=100) == 1.0
    shuffled = np.random.default_rng(0).permutation(exact.ravel()).reshape(exact.shape)
    assert l1_knn_recall(F, shuffled, n_samples=200) < 0.1


def test_knn_indices_manhattan_backends():
    rng = np.random.default_rng(6)
    F = rng.random((500, 5))
    exact = knn_indices(F, 7, metric="manhattan", backend="exact")
    np.testing.assert_array_equal(exact, _brute(F, 7)[1])
    approx = knn_indices(F, 7, metric="manhattan", backend="descent", random_state=0)
    assert np.mean([len(set(a) & set(b)) / 7 for a, b in zip(approx, exact)]) > 0.95
    with pytest.raises(ValueError, match="manhattan"):
        knn_indices(F, 3, backend="descent")


def test_path_choice_from_predicted_time_and_memory(monkeypatch):
    paths, reasons = choose_paths((3000, 2000))
    assert paths == [False, False] and "3000 < 4096" in reasons[0]
    monkeypatch.setenv("SKORG_MAX_MEMORY", "4096")  # 4 GiB: a dense 20,000-axis needs ~27
    paths, reasons = choose_paths((20_000, 2000))
    assert paths == [True, False] and "budget" in reasons[0]
    monkeypatch.setenv("SKORG_MAX_MEMORY", str(10**9))
    paths, reasons = choose_paths((60_000, 2000))  # fits, but O(m^2) is slower
    assert paths[0] and "faster" in reasons[0]
    assert choose_paths((50, 40), "sparse")[0] == [True, True]
    with pytest.raises(ValueError, match="affinity_mode"):
        choose_paths((5, 5), "fast")
