"""The basis argument of the tree Haar tools: unchanged by default, exact in any basis."""

import numpy as np
import pytest

from skorg import QuestionnaireOrganizer
from skorg.datasets import make_shuffled_matrix
from skorg.transforms import (
    haar_compress,
    haar_denoise,
    l1_entropy,
    multi_best_wavelet_packet_basis,
    multi_wavelet_packet_transform,
)
from skorg.trees import dyadic_tree


@pytest.fixture(scope="module")
def organized():
    data = make_shuffled_matrix(40, 32, kind="band", noise=0.05, random_state=0)
    org = QuestionnaireOrganizer(n_iter=1).fit(data.X)
    return data.X, org


def test_l1_entropy_in_a_basis(organized):
    X, org = organized
    trees = [org.row_tree_, org.column_tree_]
    haar = l1_entropy(X, trees)
    assert l1_entropy(X, trees, basis="haar") == pytest.approx(haar, rel=1e-12)
    best = l1_entropy(X, trees, basis="best")
    bases = multi_best_wavelet_packet_basis(X, trees)
    assert best == pytest.approx(np.abs(multi_wavelet_packet_transform(X, trees, bases)).sum())
    assert best <= haar * (1 + 1e-12)
    assert l1_entropy(X, trees, basis=bases) == pytest.approx(best)
    # the support selection counts the regions of the packet vectors: every Walsh vector
    # spans its whole axis, so the ties keep the first k in row-major order
    walsh = l1_entropy(X, trees, basis="walsh", selection="support", k=10)
    C = multi_wavelet_packet_transform(X, trees, "walsh")
    assert walsh == pytest.approx(np.abs(C.ravel()[:10]).sum())
    with pytest.raises(ValueError, match="basis"):
        l1_entropy(X, trees, basis="db4")


def test_compression_and_denoising_in_a_basis(organized):
    X, org = organized
    trees = [org.row_tree_, org.column_tree_]
    ref = haar_compress(X, trees, fraction=0.05)
    same = haar_compress(X, trees, fraction=0.05, basis="haar")
    np.testing.assert_allclose(same.X, ref.X, atol=1e-12)
    assert ref.bases is None and same.bases is not None
    best = haar_compress(X, trees, fraction=0.05, basis="best")
    C = multi_wavelet_packet_transform(X, trees, best.bases)
    dropped = np.where(best.coefficients == 0, C, 0.0)
    assert best.n_kept == int(np.ceil(0.05 * X.size))
    assert best.error == pytest.approx(np.linalg.norm(dropped), rel=1e-9)
    den = haar_denoise(X, trees)
    np.testing.assert_allclose(haar_denoise(X, trees, basis="haar").X, den.X, atol=1e-12)
    den_best = haar_denoise(X, trees, basis="best", sigma=0.05)
    assert np.all(np.isfinite(den_best.X))
    # soft thresholding in an orthonormal basis never moves the data farther than the
    # threshold times the number of coefficients, and keeps the root average
    assert den_best.error <= den_best.threshold * np.sqrt(X.size) + 1e-12


def test_known_noise_denoising_in_the_best_basis_against_haar():
    rng = np.random.default_rng(3)
    n = 64
    tree = dyadic_tree(n)
    t = np.arange(n)
    clean = np.outer(np.cos(np.pi * t * 0.5), np.ones(n)) + np.outer(np.ones(n), t / n)
    sigma = 0.1
    noisy = clean + sigma * rng.standard_normal((n, n))
    errs = {}
    for basis in (None, "best"):
        out = haar_denoise(noisy, [tree, tree], sigma=sigma, basis=basis)
        errs[basis] = np.linalg.norm(out.X - clean) / np.linalg.norm(clean)
    # an oscillation along the rows is one Walsh packet: the adapted basis denoises better
    assert errs["best"] < errs[None]


def test_score_in_a_basis(organized):
    X, org = organized
    ref = org.score(X)
    assert org.score(X, basis="haar") == pytest.approx(ref, rel=1e-12)
    assert org.score(X, basis=None) == ref
    assert org.score(X, basis="best") >= ref - 1e-12
