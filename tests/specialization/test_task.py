import numpy as np
import pytest
from scipy import integrate

torch = pytest.importorskip("torch")

from skorg.specialization import (  # noqa: E402
    DiscretePrior,
    GaussianPrior,
    SingleLocationTask,
    flipped_spike_prior,
    spike_prior,
)


@pytest.mark.parametrize("directions", ["random", "canonical"])
def test_directions_are_orthogonal_with_norm_sqrt_dim(directions):
    task = SingleLocationTask(GaussianPrior([1.0, 2.0, 3.0]), dim=40, directions=directions)
    frame = np.vstack([task.key_directions, task.value_direction])
    np.testing.assert_allclose(frame @ frame.T / 40, np.eye(4), atol=1e-12)


def test_noiseless_label_is_the_value_projection_of_the_relevant_token():
    task = SingleLocationTask(flipped_spike_prior([2.0, 1.0]), n_tokens=5, dim=30, noise=0.0)
    X, y, pos, theta = task.sample(50, random_state=3, return_latent=True)
    rel = X[np.arange(50), pos]
    np.testing.assert_allclose(y, rel @ task.value_direction / np.sqrt(30), atol=1e-12)
    assert set(map(tuple, theta)) <= {(2.0, 1.0), (-2.0, -1.0)}


def test_relevant_token_is_shifted_by_theta_along_the_key_directions():
    # the shift is the only difference between two draws that share their Gaussian noise
    task = SingleLocationTask(spike_prior([3.0, -1.0]), n_tokens=4, dim=20, noise=0.0)
    zero = SingleLocationTask(spike_prior([0.0, 0.0]), n_tokens=4, dim=20, noise=0.0)
    X, _, pos, _ = task.sample(10, random_state=7, return_latent=True)
    X0, _ = zero.sample(10, random_state=7)
    diff = X - X0
    expected = np.zeros_like(X)
    expected[np.arange(10), pos] = np.array([3.0, -1.0]) @ task.key_directions / np.sqrt(20)
    np.testing.assert_allclose(diff, expected, atol=1e-12)


def test_torch_backend_is_seeded_and_consistent():
    task = SingleLocationTask(GaussianPrior([1.0]), n_tokens=3, dim=16, noise=0.0)
    X1, y1, pos, _ = task.sample(8, random_state=2, backend="torch", return_latent=True)
    X2, y2 = task.sample(8, random_state=2, backend="torch")
    assert X1.dtype == torch.float32 and X1.shape == (8, 3, 16)
    assert torch.equal(X1, X2) and torch.equal(y1, y2)
    w = torch.tensor(task.value_direction / 4.0, dtype=torch.float32)
    torch.testing.assert_close(y1, X1[torch.arange(8), torch.from_numpy(pos)] @ w)


def test_discrete_prior_moments_and_log_evidence():
    pts = np.array([[1.0, 0.0], [0.0, 2.0], [-1.0, -1.0]])
    pi = np.array([0.5, 0.3, 0.2])
    prior = DiscretePrior(pts, pi)
    np.testing.assert_allclose(prior.mean, pi @ pts)
    second = sum(p * np.outer(x, x) for p, x in zip(pi, pts, strict=True))
    np.testing.assert_allclose(prior.covariance, second - np.outer(prior.mean, prior.mean))
    u = np.array([[0.3, -0.7], [1.0, 2.0]])
    direct = [
        np.log(sum(p * np.exp(x @ v - x @ x / 2) for p, x in zip(pi, pts, strict=True))) for v in u
    ]
    np.testing.assert_allclose(prior.log_evidence(u), direct, rtol=1e-12)


@pytest.mark.parametrize(("nu", "mu", "u"), [(2.0, 0.0, 0.7), (0.5, 1.5, -1.2), (0.0, 1.0, 0.4)])
def test_gaussian_log_evidence_matches_quadrature(nu, mu, u):
    prior = GaussianPrior([nu], mean=[mu])
    if nu == 0:
        expected = mu * u - mu**2 / 2
    else:
        dens = lambda th: (  # noqa: E731
            np.exp(-((th - mu) ** 2) / (2 * nu))
            / np.sqrt(2 * np.pi * nu)
            * np.exp(th * u - th**2 / 2)
        )
        expected = np.log(integrate.quad(dens, -40, 40, epsabs=1e-14, epsrel=1e-12)[0])
    np.testing.assert_allclose(prior.log_evidence(np.array([u])), expected, rtol=1e-10)


def test_gaussian_log_evidence_adds_over_coordinates():
    prior = GaussianPrior([2.0, 0.5], mean=[0.1, -1.0])
    u = np.array([0.3, 0.9])
    parts = [
        GaussianPrior([v], mean=[m]).log_evidence(u[[i]])
        for i, (v, m) in enumerate([(2.0, 0.1), (0.5, -1.0)])
    ]
    np.testing.assert_allclose(prior.log_evidence(u), sum(parts), rtol=1e-12)


def test_priors_sample_their_laws():
    rng = np.random.default_rng(0)
    assert np.all(spike_prior([1.5]).sample(5, rng) == 1.5)
    s = GaussianPrior([4.0, 0.0], mean=[0.0, 2.0]).sample(1000, rng)
    assert np.all(s[:, 1] == 2.0)
    assert abs(s[:, 0].var() - 4.0) < 4 * 4.0 * np.sqrt(2 / 1000)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: DiscretePrior([1.0, 2.0]), "2-D"),
        (lambda: DiscretePrior([[1.0]], [0.5]), "sum to one"),
        (lambda: DiscretePrior([[np.nan]]), "finite"),
        (lambda: GaussianPrior([-1.0]), "non-negative"),
        (lambda: SingleLocationTask(spike_prior([1.0]), n_tokens=1), "n_tokens"),
        (lambda: SingleLocationTask(spike_prior([1.0, 2.0]), dim=2), "dim"),
        (lambda: SingleLocationTask(spike_prior([1.0]), noise=-1.0), "noise"),
    ],
)
def test_invalid_inputs_are_rejected(make, match):
    with pytest.raises(ValueError, match=match):
        make()
