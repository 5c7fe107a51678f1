"""l1 entropy, compression, denoising and the mixed Holder exponent on tree Haar bases."""

import numpy as np
import pytest

from skorg.transforms import (
    haar_basis,
    haar_compress,
    haar_denoise,
    haar_support,
    inverse_multi_haar_transform,
    l1_entropy,
    mixed_holder_exponent,
    multi_haar_transform,
)
from skorg.trees import PartitionTree, dyadic_tree


def smooth_matrix(n_rows, n_cols, seed, noise=0.02):
    """The shared bench_inputs generator ("band" kind), re-implemented for the tests.

    A smooth bivariate function at sorted random latent points, rows and columns shuffled,
    plus Gaussian noise; ``true_order`` arrays restore the latent order.
    """
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(0.0, 1.0, n_rows))[:, None]
    y = np.sort(rng.uniform(0.0, 1.0, n_cols))[None, :]
    w = 0.12 + 0.08 * x
    F = np.exp(-((x - y) ** 2) / (2.0 * w**2)) + 0.25 * (1.0 + np.sin(2.0 * np.pi * x)) * y
    row_perm = rng.permutation(n_rows)
    col_perm = rng.permutation(n_cols)
    X = F[np.ix_(row_perm, col_perm)] + noise * rng.standard_normal((n_rows, n_cols))
    return X, np.argsort(row_perm), np.argsort(col_perm), F


def dense_coefficients(X, trees):
    C = X
    for ax, tree in enumerate(trees):
        C = np.moveaxis(np.tensordot(C, haar_basis(tree), axes=([ax], [0])), -1, ax)
    return C


@pytest.fixture
def cube():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((12, 10, 6))
    trees = [dyadic_tree(rng.permutation(n)) for n in X.shape]
    return X, trees


def test_all_and_normalized(cube):
    X, trees = cube
    C = dense_coefficients(X, trees)
    assert l1_entropy(X, trees) == pytest.approx(np.abs(C).sum(), rel=1e-12)
    assert l1_entropy(X, trees, normalize=True) == pytest.approx(
        np.abs(C).sum() / np.linalg.norm(X), rel=1e-12
    )
    assert l1_entropy(np.zeros((4, 4)), [dyadic_tree(4)] * 2, normalize=True) == 0.0


@pytest.mark.parametrize("k", [1, 7, 50, 720, 5000])
def test_support_selection_is_network_entropy(cube, k):
    X, trees = cube
    C = dense_coefficients(X, trees)
    supports = np.multiply.outer(
        np.multiply.outer(haar_support(trees[0]), haar_support(trees[1])), haar_support(trees[2])
    ).ravel()
    ranked = sorted(range(supports.shape[0]), key=lambda i: (-supports[i], i))[:k]
    expected = np.abs(C.ravel()[ranked]).sum()
    assert l1_entropy(X, trees, selection="support", k=k) == pytest.approx(expected, rel=1e-12)


def test_coarsest_block(cube):
    X, trees = cube
    C = dense_coefficients(X, trees)
    # default block for k=400 in 3-D: round(400 ** (1/3)) = 7 per axis, clipped to 6 on axis 2
    assert l1_entropy(X, trees, selection="coarsest") == pytest.approx(
        np.abs(C[:7, :7, :6]).sum(), rel=1e-12
    )
    assert l1_entropy(X, trees, selection="coarsest", shape=(2, 3, 4)) == pytest.approx(
        np.abs(C[:2, :3, :4]).sum(), rel=1e-12
    )
    M = np.random.default_rng(0).standard_normal((30, 25))
    t2 = [dyadic_tree(30), dyadic_tree(25)]
    C2 = dense_coefficients(M, t2)
    assert l1_entropy(M, t2, selection="coarsest") == pytest.approx(
        np.abs(C2[:20, :20]).sum(), rel=1e-12
    )
    assert l1_entropy(M, t2, selection="coarsest", k=100, normalize=True) == pytest.approx(
        np.abs(C2[:10, :10]).sum() / np.linalg.norm(M), rel=1e-12
    )


def test_batch_axis_gives_one_entropy_per_slice(cube):
    X, trees = cube
    out = l1_entropy(X, [trees[0], trees[1], None], selection="support", k=30, normalize=True)
    assert out.shape == (6,)
    for h in range(6):
        assert out[h] == pytest.approx(
            l1_entropy(X[:, :, h], trees[:2], selection="support", k=30, normalize=True),
            rel=1e-12,
        )


def test_entropy_errors(cube):
    X, trees = cube
    with pytest.raises(ValueError, match="selection"):
        l1_entropy(X, trees, selection="largest")
    with pytest.raises(ValueError, match="k must be"):
        l1_entropy(X, trees, k=0)
    with pytest.raises(ValueError, match="one positive block size"):
        l1_entropy(X, trees, selection="coarsest", shape=(3, 3))
    with pytest.raises(ValueError, match="at least one PartitionTree"):
        l1_entropy(X, [None, None, None])
    with pytest.raises(ValueError, match="one tree per axis"):
        l1_entropy(X, trees[:2])


def test_organized_trees_are_sparse_and_compress():
    X, row_true, col_true, _ = smooth_matrix(128, 96, seed=7)
    rng = np.random.default_rng(1)
    good = [dyadic_tree(row_true), dyadic_tree(col_true)]
    bad = [dyadic_tree(rng.permutation(128)), dyadic_tree(rng.permutation(96))]
    e_good = l1_entropy(X, good, normalize=True)
    e_bad = l1_entropy(X, bad, normalize=True)
    assert e_good < 0.25 * e_bad  # measured 10.3 against 48.5
    # the coarse (largest-support) coefficients carry the energy on organized trees, so the
    # paper's restricted entropies are LARGER there: they are not sparsity measures alone
    for selection in ("support", "coarsest"):
        assert l1_entropy(X, good, selection=selection, normalize=True) > 1.5 * l1_entropy(
            X, bad, selection=selection, normalize=True
        )
    # 5 % of the coefficients keep 5 % relative error on good trees (measured 4.4 %), while
    # random trees lose about half of the matrix (measured 47 %)
    kept_good = haar_compress(X, good, fraction=0.05)
    kept_bad = haar_compress(X, bad, fraction=0.05)
    assert kept_good.n_kept == int(np.ceil(0.05 * X.size))
    assert kept_good.relative_error < 0.05
    assert kept_bad.relative_error > 0.4


def test_compress_error_is_dropped_energy(cube):
    X, trees = cube
    C = dense_coefficients(X, trees)
    mags = np.sort(np.abs(C).ravel())[::-1]
    out = haar_compress(X, trees, n_keep=100)
    assert out.n_kept == 100
    assert out.error == pytest.approx(np.sqrt((mags[100:] ** 2).sum()), rel=1e-10)
    assert out.relative_error == pytest.approx(out.error / np.linalg.norm(X), rel=1e-12)
    np.testing.assert_allclose(out.X, inverse_multi_haar_transform(out.coefficients, trees),
                               atol=1e-12)  # fmt: skip
    thr = haar_compress(X, trees, threshold=float(mags[100]))
    assert thr.n_kept == 100
    np.testing.assert_allclose(thr.X, out.X, atol=1e-12)
    full = haar_compress(X, trees, fraction=1.0)
    np.testing.assert_allclose(full.X, X, atol=1e-12)
    with pytest.raises(ValueError, match="exactly one"):
        haar_compress(X, trees, n_keep=3, threshold=1.0)


def test_denoise_recovers_smooth_matrix():
    _, _, _, F = smooth_matrix(128, 128, seed=5, noise=0.0)
    sigma = 0.05
    noisy = F + sigma * np.random.default_rng(2).standard_normal(F.shape)
    trees = [dyadic_tree(128), dyadic_tree(128)]
    out = haar_denoise(noisy, trees)
    # the MAD estimate of the finest scale sees the noise level
    C = multi_haar_transform(noisy, trees)
    finest = np.abs(C[64:, 64:])
    assert np.median(finest) / 0.6745 == pytest.approx(sigma, rel=0.1)
    assert out.threshold == pytest.approx(
        np.median(finest) / 0.6745 * np.sqrt(2 * np.log(F.size)), rel=1e-12
    )
    # measured errors against the clean matrix: noisy 6.40, soft 5.58, hard 3.57
    assert np.linalg.norm(out.X - F) < 0.9 * np.linalg.norm(noisy - F)
    hard = haar_denoise(noisy, trees, mode="hard")
    assert hard.n_kept == out.n_kept
    assert np.linalg.norm(hard.X - F) < 0.6 * np.linalg.norm(noisy - F)
    assert out.error == pytest.approx(np.linalg.norm(noisy - out.X), rel=1e-12)
    assert out.coefficients[0, 0] == C[0, 0]


@pytest.mark.parametrize("alpha", [0.25, 1.0])
def test_holder_exponent_of_synthetic_coefficients(alpha):
    rng = np.random.default_rng(0)
    trees = [
        PartitionTree.from_levels([[0] * 9, [0, 0, 0, 1, 1, 1, 2, 2, 2], list(range(9))]),
        dyadic_tree(rng.permutation(16)),
    ]
    frac = np.multiply.outer(haar_support(trees[0]) / 9, haar_support(trees[1]) / 16)
    C = 2.0 * frac ** (0.5 + alpha) * rng.choice([-1.0, 1.0], size=frac.shape)
    X = inverse_multi_haar_transform(C, trees)
    for method in ("max", "all"):
        fit = mixed_holder_exponent(X, trees, method=method)
        assert fit.alpha == pytest.approx(alpha, abs=1e-9)
        assert fit.constant == pytest.approx(2.0, rel=1e-9)
    with pytest.raises(ValueError, match="two support sizes"):
        mixed_holder_exponent(np.ones((9, 16)), trees)
