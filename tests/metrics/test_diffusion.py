import numpy as np
import pytest

from skorg.metrics import diffusion_eigenpairs, diffusion_embedding


def test_reference_markov_eigenpairs(reference):
    data = reference("flex_tree")
    psi, lam = diffusion_eigenpairs(data["affinity"], 12)
    np.testing.assert_allclose(lam, data["markov_vals"], atol=1e-9)
    np.testing.assert_allclose(psi, data["markov_vecs"], atol=1e-9)


def test_right_eigenvectors_of_the_markov_matrix():
    rng = np.random.default_rng(0)
    pts = 0.5 * rng.normal(size=(30, 2))  # no affinity below the 1e-8 floor
    A = np.exp(-((pts[:, None] - pts[None]) ** 2).sum(-1))
    psi, lam = diffusion_eigenpairs(A, 6, density_normalize=False, by_magnitude=False)
    P = A / A.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(P @ psi, psi * lam, atol=1e-10)
    assert lam[0] == pytest.approx(1.0) and np.all(np.diff(lam) <= 1e-12)
    np.testing.assert_array_equal(psi[:, 0], 1.0)


def test_disconnected_graph_gives_finite_coordinates():
    A = np.kron(np.eye(3), np.full((5, 5), 0.5)) + 0.5 * np.eye(15)
    psi, lam = diffusion_eigenpairs(A, 5)
    assert np.all(np.isfinite(psi))
    np.testing.assert_allclose(lam[:3], 1.0, atol=1e-12)
    # coordinates are constant on each component
    for block in range(3):
        rows = psi[5 * block : 5 * block + 5]
        np.testing.assert_allclose(rows[:, :3], rows[0, :3][None].repeat(5, 0), atol=1e-9)


def test_signs_are_deterministic():
    x = np.linspace(0, 1, 12)
    A = np.exp(-(np.subtract.outer(x, x) ** 2) / 0.1)
    psi1, _ = diffusion_eigenpairs(A, 4)
    perm = np.arange(12)[::-1]
    psi2, _ = diffusion_eigenpairs(A[np.ix_(perm, perm)], 4)
    assert np.all(psi1[0, 1:] > 0) and np.all(psi2[0, 1:] > 0)
    np.testing.assert_allclose(np.abs(psi1[perm]), np.abs(psi2), atol=1e-10)


def test_embedding_is_monotone_on_a_line():
    x = np.linspace(0, 1, 40)
    emb, lam = diffusion_embedding(
        np.exp(-(np.subtract.outer(x, x) ** 2) / 0.05), 2, diffusion_time=2
    )
    d = np.diff(emb[:, 0])
    assert np.all(d > 0) or np.all(d < 0)
    assert lam.shape == (2,)


def test_small_inputs():
    psi, _ = diffusion_eigenpairs(np.eye(2), 12)
    assert psi.shape == (2, 2) and np.all(np.isfinite(psi))
