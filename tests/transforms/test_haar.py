"""Tree Haar transforms: orthonormality, reconstruction, reference parity, dyadic Haar."""

from pathlib import Path

import numpy as np
import pytest

from skorg.transforms import (
    bihaar_transform,
    haar_basis,
    haar_coefficient_info,
    haar_support,
    haar_transform,
    inverse_bihaar_transform,
    inverse_haar_transform,
    inverse_multi_haar_transform,
    inverse_trihaar_transform,
    multi_haar_transform,
    trihaar_transform,
)
from skorg.trees import PartitionTree, dyadic_tree

DATA = Path(__file__).resolve().parents[1] / "data"

# float64 round-off on these sizes is ~1e-15; float32 coefficients are computed with float64
# folder sums and rounded once, so their error is a few float32 ulps of the data scale.
ATOL64 = 1e-12
RTOL32 = 1e-5


def random_tree(n, rng, n_levels=5, max_children=7):
    """Random nested partitions: many-children folders, one-child chains, random leaf order."""
    levels = [np.zeros(n, dtype=np.intp)]
    for _ in range(n_levels - 2):
        parent = levels[-1]
        labels = np.empty(n, dtype=np.intp)
        next_label = 0
        for lab in np.unique(parent):
            members = np.flatnonzero(parent == lab)
            # one child with probability 1/4 (a chain), otherwise up to max_children
            k = 1 if rng.random() < 0.25 else int(rng.integers(1, max_children + 1))
            k = min(k, members.shape[0])
            cuts = np.sort(rng.choice(np.arange(1, members.shape[0]), k - 1, replace=False))
            parts = np.split(rng.permutation(members), cuts)
            for part in parts:
                labels[part] = next_label
                next_label += 1
        levels.append(labels)
    levels.append(np.arange(n))
    return PartitionTree.from_levels(np.array(levels))


def dense_haar_basis(tree):
    """The basis from its definition, one folder at a time, bfs order."""
    n = tree.n_points
    cols = [np.full(n, 1.0 / np.sqrt(n))]
    for node in range(tree.n_nodes):
        kids = list(tree.children(node))
        if len(kids) < 2:
            continue
        kids.sort(key=lambda c: (-tree.size[c], -c))
        for i in range(len(kids) - 1):
            s = tree.size[kids[i]]
            m = sum(tree.size[c] for c in kids[i + 1 :])
            norm = np.sqrt(s * m * (s + m))
            v = np.zeros(n)
            v[tree.folder(kids[i])] = m / norm
            for c in kids[i + 1 :]:
                v[tree.folder(c)] = -s / norm
            cols.append(v)
    return np.stack(cols, axis=1)


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def trees(rng):
    return [random_tree(n, rng) for n in (37, 23, 11)]


def test_random_trees_have_chains_and_wide_folders(trees):
    n_children = np.concatenate([t.n_children for t in trees])
    assert (n_children == 1).any()
    assert n_children.max() >= 4


@pytest.mark.parametrize("order", ["bfs", "reference"])
def test_basis_is_orthonormal(trees, order):
    for tree in trees:
        B = haar_basis(tree, order=order)
        np.testing.assert_allclose(B.T @ B, np.eye(tree.n_points), atol=ATOL64)
        np.testing.assert_allclose(B @ B.T, np.eye(tree.n_points), atol=ATOL64)


def test_basis_matches_definition(trees):
    for tree in trees:
        np.testing.assert_allclose(haar_basis(tree), dense_haar_basis(tree), atol=ATOL64)


def test_metadata_describes_basis(trees):
    for tree in trees:
        B = haar_basis(tree)
        info = haar_coefficient_info(tree)
        np.testing.assert_array_equal(np.count_nonzero(np.abs(B) > 1e-14, axis=0), info["support"])
        np.testing.assert_array_equal(info["support"], haar_support(tree))
        np.testing.assert_array_equal(info["plus_size"] + info["minus_size"], info["support"])
        np.testing.assert_array_equal(info["level"], tree.level[info["node"]])
        for k in range(1, tree.n_points):
            plus = tree.folder(info["plus_node"][k])
            assert tree.parent[info["plus_node"][k]] == info["node"][k]
            assert np.all(B[plus, k] > 0) and plus.shape[0] == info["plus_size"][k]
        assert info["rank"][0] == -1 and info["support"][0] == tree.n_points


def test_closed_form_coefficient(trees, rng):
    # <f, psi> = sqrt(s M / (s + M)) (mean on '+' child - mean on the rest of the support)
    tree = trees[0]
    x = rng.standard_normal(tree.n_points)
    C = haar_transform(x, tree)
    B = haar_basis(tree)
    info = haar_coefficient_info(tree)
    for k in range(1, tree.n_points):
        plus = tree.folder(info["plus_node"][k])
        rest = np.setdiff1d(np.flatnonzero(B[:, k]), plus)
        s, m = info["plus_size"][k], info["minus_size"][k]
        expected = np.sqrt(s * m / (s + m)) * (x[plus].mean() - x[rest].mean())
        assert abs(C[k] - expected) < ATOL64


@pytest.mark.parametrize("order", ["bfs", "reference"])
def test_transform_equals_dense_basis_along_every_axis(trees, rng, order):
    X = rng.standard_normal((37, 23, 11))
    for axis, tree in enumerate(trees):
        B = haar_basis(tree, order=order)
        expected = np.moveaxis(np.tensordot(X, B, axes=([axis], [0])), -1, axis)
        C = haar_transform(X, tree, axis=axis, order=order)
        np.testing.assert_allclose(C, expected, atol=ATOL64)
        np.testing.assert_allclose(
            inverse_haar_transform(C, tree, axis=axis, order=order), X, atol=ATOL64
        )


def test_parseval_and_reconstruction_float64(trees, rng):
    X = rng.standard_normal((37, 23, 11))
    C = multi_haar_transform(X, trees)
    assert abs(np.linalg.norm(C) - np.linalg.norm(X)) < ATOL64 * np.linalg.norm(X)
    np.testing.assert_allclose(inverse_multi_haar_transform(C, trees), X, atol=ATOL64)
    C3 = trihaar_transform(X, *trees)
    np.testing.assert_array_equal(C3, C)
    np.testing.assert_allclose(inverse_trihaar_transform(C3, *trees), X, atol=ATOL64)
    M = X[:, :, 0]
    C2 = bihaar_transform(M, trees[0], trees[1])
    np.testing.assert_allclose(C2, haar_basis(trees[0]).T @ M @ haar_basis(trees[1]), atol=ATOL64)
    np.testing.assert_allclose(inverse_bihaar_transform(C2, trees[0], trees[1]), M, atol=ATOL64)
    v = X[:, 0, 0]
    np.testing.assert_allclose(inverse_haar_transform(haar_transform(v, trees[0]), trees[0]), v,
                               atol=ATOL64)  # fmt: skip


def test_float32_preserved_and_accurate(trees, rng):
    X = rng.standard_normal((37, 23, 11)).astype(np.float32)
    C = multi_haar_transform(X, trees)
    assert C.dtype == np.float32
    C64 = multi_haar_transform(X.astype(np.float64), trees)
    np.testing.assert_allclose(C, C64, rtol=0, atol=RTOL32 * np.abs(X).max())
    back = inverse_multi_haar_transform(C, trees)
    assert back.dtype == np.float32
    np.testing.assert_allclose(back, X, rtol=0, atol=RTOL32 * np.abs(X).max())
    M = X[:, :, 0]
    C2 = bihaar_transform(M, trees[0], trees[1])
    assert C2.dtype == np.float32
    expected = bihaar_transform(M.astype(np.float64), trees[0], trees[1])
    np.testing.assert_allclose(C2, expected, rtol=0, atol=RTOL32 * np.abs(M).max())


def test_none_leaves_axis_and_input_untouched(trees, rng):
    X = rng.standard_normal((37, 23, 11))
    X0 = X.copy()
    C = multi_haar_transform(X, [trees[0], None, trees[2]])
    np.testing.assert_allclose(
        C, haar_transform(haar_transform(X, trees[0], axis=0), trees[2], axis=2), atol=ATOL64
    )
    np.testing.assert_array_equal(X, X0)
    same = multi_haar_transform(X, [None, None, None])
    np.testing.assert_array_equal(same, X)
    assert same is not X


def test_non_contiguous_and_integer_input(trees, rng):
    X = rng.standard_normal((11, 37)).T  # Fortran-ordered view
    np.testing.assert_allclose(
        haar_transform(X, trees[0], axis=0), haar_basis(trees[0]).T @ X, atol=ATOL64
    )
    ints = rng.integers(-5, 5, size=23)
    C = haar_transform(ints, trees[1])
    assert C.dtype == np.float64
    np.testing.assert_allclose(C, haar_basis(trees[1]).T @ ints, atol=ATOL64)


def test_single_point_tree_is_identity():
    tree = dyadic_tree(1)
    x = np.array([[3.0], [-2.0]])
    np.testing.assert_array_equal(haar_transform(x, tree), x)
    np.testing.assert_array_equal(haar_basis(tree), [[1.0]])


def test_reference_basis_and_bihaar():
    d = np.load(DATA / "haar.npz")
    row = PartitionTree.from_levels(d["row_levels"])
    col = PartitionTree.from_levels(d["col_levels"])
    np.testing.assert_array_equal(row.leaf_order, d["row_leaf_order"])
    # the reference order reproduces the stored bases column for column
    np.testing.assert_allclose(haar_basis(row, order="reference"), d["row_haar"], atol=1e-12)
    np.testing.assert_allclose(haar_basis(col, order="reference"), d["col_haar"], atol=1e-12)
    C = bihaar_transform(d["X"], row, col, order="reference")
    np.testing.assert_allclose(C, d["bihaar"], atol=1e-10)
    # the default (bfs) order is a permutation, found from the stored metadata
    perms = []
    for p, tree in (("row", row), ("col", col)):
        info = haar_coefficient_info(tree)
        label = info["node"] - tree.level_ptr[info["level"]]
        plus_label = np.where(
            info["rank"] >= 0, info["plus_node"] - tree.level_ptr[info["level"] + 1], -1
        )
        ours = list(zip(info["level"], label, info["rank"], plus_label, strict=True))
        ref = list(
            zip(d[f"{p}_haar_level"], d[f"{p}_haar_label"], d[f"{p}_haar_rank"],
                d[f"{p}_haar_plus_label"], strict=True)
        )  # fmt: skip
        perm = np.array([ref.index(key) for key in ours])
        np.testing.assert_array_equal(np.sort(perm), np.arange(tree.n_points))
        np.testing.assert_array_equal(info["support"], d[f"{p}_haar_support"][perm])
        np.testing.assert_array_equal(info["plus_size"], d[f"{p}_haar_plus_size"][perm])
        np.testing.assert_array_equal(info["minus_size"], d[f"{p}_haar_minus_size"][perm])
        np.testing.assert_allclose(haar_basis(tree), d[f"{p}_haar"][:, perm], atol=1e-12)
        perms.append(perm)
    C = bihaar_transform(d["X"], row, col)
    np.testing.assert_allclose(C, d["bihaar"][np.ix_(perms[0], perms[1])], atol=1e-10)
    # the two orders really differ on this case, so the matching above is not vacuous
    assert (perms[0] != np.arange(48)).any() or (perms[1] != np.arange(40)).any()


def ordinary_haar_matrix(n):
    """Orthonormal Haar wavelets on n = 2**k points, rows = basis vectors (textbook)."""
    rows = [np.full(n, 1.0 / np.sqrt(n))]
    width = n
    while width >= 2:
        for start in range(0, n, width):
            v = np.zeros(n)
            v[start : start + width // 2] = 1.0
            v[start + width // 2 : start + width] = -1.0
            rows.append(v / np.sqrt(width))
        width //= 2
    return np.array(rows)


@pytest.mark.parametrize("k", [1, 3, 6])
def test_dyadic_tree_is_ordinary_haar(k, rng):
    n = 2**k
    W = ordinary_haar_matrix(n)
    order = rng.permutation(n)
    tree = dyadic_tree(order)
    B = haar_basis(tree)
    # the textbook basis lives on positions of the leaf order
    Wp = np.zeros_like(W)
    Wp[:, order] = W
    overlap = np.abs(Wp @ B)
    np.testing.assert_allclose(np.sort(overlap, axis=1)[:, -1], 1.0, atol=ATOL64)
    np.testing.assert_allclose(overlap.sum(axis=1), 1.0, atol=ATOL64)
    x = rng.standard_normal(n)
    np.testing.assert_allclose(np.sort(np.abs(haar_transform(x, tree))), np.sort(np.abs(Wp @ x)),
                               atol=ATOL64)  # fmt: skip


def test_errors(trees, rng):
    X = rng.standard_normal((37, 23))
    with pytest.raises(ValueError, match="NaN or infinity"):
        haar_transform(np.full(37, np.nan), trees[0])
    with pytest.raises(ValueError, match="has 23 points but axis 0"):
        haar_transform(X, trees[1], axis=0)
    with pytest.raises(TypeError, match="PartitionTree"):
        haar_transform(X, "dyadic")
    with pytest.raises(ValueError, match="one tree per axis"):
        multi_haar_transform(X, [trees[0]])
    with pytest.raises(ValueError, match="out of range"):
        haar_transform(X, trees[0], axis=2)
    with pytest.raises(ValueError, match="order must be one of"):
        haar_transform(X, trees[1], order="dfs")
    with pytest.raises(ValueError, match="2-D array"):
        bihaar_transform(X[:, 0], trees[0], trees[1])
    with pytest.raises(ValueError, match="3-D array"):
        trihaar_transform(X, trees[0], trees[1], None)
    with pytest.raises(ValueError, match="empty"):
        haar_transform(np.zeros((0, 23)), trees[1])
    with pytest.raises(TypeError, match="real numbers"):
        haar_transform(np.ones(23, dtype=complex), trees[1])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_input_check_of_small_arrays_finds_every_non_finite_value_and_the_peak(dtype):
    # small contiguous inputs take the compiled one-pass peak too (half the cost of two
    # reductions per call): a NaN or infinity anywhere is refused, and the peak it gives
    # sets the exact power-of-two rescaling of extreme data
    rng = np.random.default_rng(7)
    for n in (1, 2, 3, 5, 8, 64, 4095):
        tree = dyadic_tree(n)
        x = rng.standard_normal(n).astype(dtype)
        for where in {0, n // 2, n - 1}:
            for value in (np.nan, np.inf, -np.inf):
                y = x.copy()
                y[where] = value
                with pytest.raises(ValueError, match="NaN or infinity"):
                    haar_transform(y, tree)
                with pytest.raises(ValueError, match="NaN or infinity"):
                    inverse_haar_transform(y, tree)
        C = haar_transform(x, tree)
        for k in (-90, 90) if dtype == np.float32 else (-900, 900):
            scale = dtype(2.0**k)
            np.testing.assert_array_equal(haar_transform(x * scale, tree), C * scale)
            np.testing.assert_array_equal(inverse_haar_transform(C * scale, tree),
                                          inverse_haar_transform(C, tree) * scale)  # fmt: skip


def test_one_point_tree_is_the_identity_on_wide_arrays():
    from skorg.transforms import haar_transform, inverse_haar_transform
    from skorg.trees import PartitionTree

    tree = PartitionTree.from_levels([[0]])
    X = np.arange(40.0).reshape(1, 40) + 1.0
    np.testing.assert_array_equal(haar_transform(X, tree, axis=0), X)
    np.testing.assert_array_equal(inverse_haar_transform(X, tree, axis=0), X)
    np.testing.assert_array_equal(haar_transform(np.array([3.0]), tree), [3.0])


def _irregular_tree(n, seed):
    """Random nested partitions with wide folders and one-child chains."""
    from skorg.trees import PartitionTree

    rng = np.random.default_rng(seed)
    levels = [np.zeros(n, dtype=int)]
    for _ in range(3):
        levels.append(levels[-1] * 4 + rng.integers(0, 4, size=n))
    levels.append(levels[-1])  # a level that repeats: every folder gets a one-child chain
    levels.append(np.arange(n))
    return PartitionTree.from_levels(np.array(levels))


@pytest.mark.parametrize(
    ("shape", "dtype", "order"),
    [
        ((9, 17, 16), np.float64, "bfs"),
        ((5, 3, 40, 33), np.float64, "reference"),
        ((9, 17, 16), np.float32, "bfs"),
    ],
)
def test_fused_last_two_axes_match_the_dense_basis(shape, dtype, order):
    """Tensors whose last two axes take the fused slab kernels (>= 2 x threads slabs)."""
    from unittest import mock

    import skorg.transforms._haar_dispatch as haar_dispatch
    from skorg.transforms import haar_basis, inverse_multi_haar_transform, multi_haar_transform

    rng = np.random.default_rng(0)
    X = rng.normal(size=shape).astype(dtype)
    trees = [_irregular_tree(n, seed) for seed, n in enumerate(shape)]
    fused = haar_dispatch._apply_last2
    with mock.patch.object(haar_dispatch, "_apply_last2", wraps=fused) as spy:
        C = multi_haar_transform(X, trees, order=order)
    assert spy.call_count == 1  # the fused path is the one under test
    expected = X.astype(np.float64)
    for axis, tree in enumerate(trees):
        H = haar_basis(tree, order=order)
        expected = np.moveaxis(np.tensordot(np.moveaxis(expected, axis, -1), H, axes=1), -1, axis)
    tol = 1e-10 if dtype == np.float64 else 2e-4
    np.testing.assert_allclose(C, expected, atol=tol * np.abs(expected).max())
    back = inverse_multi_haar_transform(C, trees, order=order)
    np.testing.assert_allclose(back, X, atol=tol * np.abs(X).max())
