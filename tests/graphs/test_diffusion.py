import numpy as np
import pytest

from skorg._kernels._flexible import deflate_symmetrize, divide_by_outer
from skorg.graphs._diffusion import _symmetric_markov
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


@pytest.mark.parametrize("n", [1, 7, 8, 37, 512])
def test_in_place_kernels_equal_numpy_expressions(n):
    rng = np.random.default_rng(n)
    S = rng.random((n, n))  # not symmetric: the symmetrization must do real work
    r = rng.random(n) + 0.5
    out = S.copy()
    divide_by_outer(out, r)
    np.testing.assert_array_equal(out, S / np.outer(r, r))
    v = rng.normal(size=n)
    E = S - np.outer(v, v)
    for layout in (S.copy(), np.asfortranarray(S)):
        deflate_symmetrize(layout, v)
        np.testing.assert_array_equal(layout, 0.5 * (E + E.T))
        np.testing.assert_array_equal(layout, layout.T)


def _markov_reference(A, density_normalize):
    """The symmetric Markov conjugate with NumPy temporaries (the former implementation),
    on the affinity divided by its largest entry (the floor is relative)."""
    A = A / A.max()
    A = np.where(A > 1e-8, A, 0.0)
    isolated = A.sum(axis=1) == 0
    if isolated.any():
        A[isolated, isolated] = 1.0
    if density_normalize:
        r = A.sum(axis=1) + 1e-15
        A = A / np.outer(r, r)
    q = np.sqrt(A.sum(axis=1)) + 1e-15
    return A / np.outer(q, q), q


@pytest.mark.parametrize("density_normalize", [True, False])
def test_symmetric_markov_in_place_equals_reference(density_normalize):
    rng = np.random.default_rng(4)
    A = rng.random((40, 40)) ** 8  # some entries under the 1e-8 floor
    A = A + A.T
    A[3] = A[:, 3] = 0.0  # an isolated point
    A[5, 7] = A[7, 5] = 1e-9 * A.max()
    before = A.copy()
    S, q = _symmetric_markov(A, density_normalize)
    S_ref, q_ref = _markov_reference(A, density_normalize)
    np.testing.assert_array_equal(S, S_ref)
    np.testing.assert_array_equal(q, q_ref)
    np.testing.assert_array_equal(A, before)  # the caller's matrix is left alone
    assert S[3, 3] > 0 and S[5, 7] == 0.0


def test_eigenpairs_leave_the_input_alone_and_accept_float32():
    x = np.linspace(0, 1, 200)  # above the dense cutoff: the ARPACK path
    A = np.exp(-(np.subtract.outer(x, x) ** 2) / 0.01)
    before = A.copy()
    psi, lam = diffusion_eigenpairs(A, 5, check_input=False)
    np.testing.assert_array_equal(A, before)
    psi32, lam32 = diffusion_eigenpairs(A.astype(np.float32), 5)
    assert psi32.dtype == np.float64
    np.testing.assert_allclose(lam32, lam, atol=1e-6)
    # the eigenpairs of the Markov matrix P = D^-1 K, K the density-normalized affinity
    K = A / np.outer(A.sum(1), A.sum(1))
    P = K / K.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(P @ psi, psi * lam, atol=1e-8)
