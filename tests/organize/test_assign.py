import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import adjusted_rand_score

from skorg import QuestionnaireOrganizer
from skorg.organize import assign_to_tree, questionnaire

LATENT = np.random.default_rng(3).uniform(0, 1, 800)


@pytest.fixture(scope="module")
def smooth():
    rng = np.random.default_rng(3)
    t = rng.uniform(0, 1, 800)
    y = np.linspace(0, 1, 60)
    return np.exp(-((t[:, None] - y) ** 2) / 0.02) + 0.05 * rng.standard_normal((800, 60))


@pytest.mark.parametrize("n_neighbors", [1, 5])
def test_training_row_lands_in_its_own_folder(smooth, n_neighbors):
    org = QuestionnaireOrganizer(n_iter=1).fit(smooth)
    rows = np.array([0, 17, 401, 799])
    labels = assign_to_tree(org.row_tree_, smooth, smooth[rows], org.trees_[1:],
                            n_neighbors=n_neighbors)  # fmt: skip
    want = np.stack([org.row_tree_.labels(lv)[rows] for lv in range(org.row_tree_.n_levels)], 1)
    np.testing.assert_array_equal(labels, want)


def test_new_rows_follow_their_nearest_training_row(smooth):
    org = QuestionnaireOrganizer(n_iter=1).fit(smooth[:600])
    new = smooth[600:] + 0.0
    labels = assign_to_tree(org.row_tree_, smooth[:600], new, [org.column_tree_])
    assert labels.shape == (200, org.row_tree_.n_levels)
    assert (labels[:, 0] == 0).all()
    # each level refines the one above: a folder's label fixes its parent's
    tree = org.row_tree_
    for level in range(1, tree.n_levels):
        nodes = labels[:, level] + tree.level_ptr[level]
        np.testing.assert_array_equal(tree.parent[nodes] - tree.level_ptr[level - 1],
                                      labels[:, level - 1])  # fmt: skip


def test_tensor_axis():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((6, 20, 5))
    res = questionnaire(X, n_iter=1)
    labels = assign_to_tree(res.trees[1], X, X[:, [3, 11]], [res.trees[0], res.trees[2]], axis=1)
    want = np.stack([res.trees[1].labels(lv)[[3, 11]] for lv in range(res.trees[1].n_levels)], 1)
    np.testing.assert_array_equal(labels, want)


def test_assign_errors(smooth):
    org = QuestionnaireOrganizer(n_iter=1).fit(smooth[:100])
    with pytest.raises(ValueError, match="X_new must have shape"):
        assign_to_tree(org.row_tree_, smooth[:100], smooth[:3, :10], org.trees_[1:])
    with pytest.raises(ValueError, match="n_neighbors"):
        assign_to_tree(org.row_tree_, smooth[:100], smooth[:3], org.trees_[1:], n_neighbors=0)
    with pytest.raises(ValueError, match="tree"):
        assign_to_tree(org.row_tree_, smooth[:50], smooth[:3], org.trees_[1:])


def _matched_level_ari(a, b):
    out = []
    for level in range(1, a.n_levels - 1):
        k = a.level_nodes(level).shape[0]
        best = min(range(b.n_levels), key=lambda lv: abs(b.level_nodes(lv).shape[0] - k))
        out.append(adjusted_rand_score(a.labels(level), b.labels(best)))
    return np.array(out)


def test_sparse_questionnaire_agrees_with_dense(smooth):
    # the same algorithm on both paths: flexible trees, beta = 1 (the sparse path's builder)
    same = {"ordering": "tree", "tree_method": "flexible", "emd_beta": 1.0, "n_iter": 2}
    dense = questionnaire(smooth, affinity_mode="dense", **same)
    sparse = questionnaire(smooth, affinity_mode="sparse", **same)
    # measured here: |Spearman| of the leaf orders 0.980 (rows) and 0.965 (columns); ARI at
    # matched levels 0.52-0.95 (rows), 0.51-0.90 (columns); both recover the latent row
    # coordinate equally well (|Spearman| 0.857 dense, 0.859 sparse)
    for axis in (0, 1):
        a, b = dense.trees[axis], sparse.trees[axis]
        assert abs(spearmanr(a.leaf_position, b.leaf_position)[0]) >= 0.95
        assert _matched_level_ari(a, b).mean() >= 0.6
    recovery = [abs(spearmanr(LATENT[r.trees[0].leaf_order], np.arange(800))[0])
                for r in (dense, sparse)]  # fmt: skip
    assert recovery[1] >= recovery[0] - 0.02
    assert sparse.params["affinity_mode"] == "sparse"
    assert sparse.distances[0].shape == (800, 800) and sparse.distances[0].nnz < 800 * 40


def test_affinity_mode_hooks(smooth):
    org = QuestionnaireOrganizer(affinity_mode="sparse", n_neighbors=10, n_iter=1).fit(smooth)
    assert org.affinities_[0].nnz < 800 * 25
    np.testing.assert_array_equal(org.row_order_, org.row_tree_.leaf_order)
    with pytest.raises(ValueError, match="affinity_mode"):
        questionnaire(smooth, affinity_mode="knn")
    with pytest.raises(ValueError, match="sparse path"):
        questionnaire(smooth, affinity_mode="sparse", init_affinity="gaussian")
    auto = questionnaire(smooth[:50], n_iter=1)
    assert not hasattr(auto.affinities[0], "nnz")  # short axes stay dense under "auto"
