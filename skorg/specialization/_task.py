"""The high-dimensional single-location regression task and its signal priors.

NumPy only at import time: torch is imported inside :meth:`SingleLocationTask.sample` when a torch
batch is asked for.
"""

import numbers
import threading

import numpy as np
from scipy.special import logsumexp

__all__ = [
    "DiscretePrior",
    "GaussianPrior",
    "SingleLocationTask",
    "flipped_spike_prior",
    "spike_prior",
]


def _as_rng(random_state):
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(2**31))
    return np.random.default_rng(random_state)


def _real_array(value, name):
    """``value`` as a float64 array; complex, non-numeric and ragged input refused by name."""
    try:
        arr = np.asarray(value)
    except ValueError:  # a ragged nesting of lists
        raise ValueError(f"{name} must be a rectangular array of numbers.") from None
    if np.iscomplexobj(arr) or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}.")
    return arr.astype(np.float64)


def _finite_array(value, name, ndim):
    arr = _real_array(value, name)
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got an array of shape {arr.shape}.")
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN or inf).")
    return arr


class DiscretePrior:
    """A signal prior with finitely many points ``theta_h`` of probabilities ``pi_h``.

    Parameters
    ----------
    points : array-like of shape (n_points, n_directions)
        The support points theta_h.
    probabilities : array-like of shape (n_points,), default=None
        Their probabilities (non-negative, summing to one). Uniform when None.

    Attributes
    ----------
    mean : ndarray of shape (n_directions,)
    covariance : ndarray of shape (n_directions, n_directions)

    Examples
    --------
    >>> prior = DiscretePrior([[1.0, 0.0], [-1.0, 0.0]])
    >>> prior.mean
    array([0., 0.])
    """

    kind = "discrete"

    def __init__(self, points, probabilities=None):
        points = _finite_array(points, "points", 2)
        if probabilities is None:
            probabilities = np.full(points.shape[0], 1.0 / points.shape[0])
        probabilities = _finite_array(probabilities, "probabilities", 1)
        if probabilities.shape[0] != points.shape[0]:
            raise ValueError(
                f"probabilities has {probabilities.shape[0]} entries but there are "
                f"{points.shape[0]} points."
            )
        if np.any(probabilities < 0) or not np.isclose(probabilities.sum(), 1.0, atol=1e-10):
            raise ValueError("probabilities must be non-negative and sum to one.")
        self.points = points
        self.probabilities = probabilities

    @property
    def n_directions(self):
        return self.points.shape[1]

    @property
    def mean(self):
        return self.probabilities @ self.points

    @property
    def covariance(self):
        centred = self.points - self.mean
        return (centred * self.probabilities[:, None]).T @ centred

    def sample(self, n_samples, rng):
        """Draw ``n_samples`` signals, an array of shape (n_samples, n_directions)."""
        idx = rng.choice(self.points.shape[0], size=n_samples, p=self.probabilities)
        return self.points[idx]

    def log_evidence(self, u):
        """``log E_theta exp(theta . u - |theta|^2 / 2)`` for each row of ``u`` (..., F).

        This is the log likelihood ratio of a token whose latent projections are ``u`` being the
        relevant one rather than pure noise.
        """
        with np.errstate(divide="ignore"):
            log_pi = np.log(self.probabilities)
        logits = u @ self.points.T - 0.5 * np.sum(self.points**2, axis=1) + log_pi
        return logsumexp(logits, axis=-1)

    def __repr__(self):
        return f"DiscretePrior(n_points={self.points.shape[0]}, n_directions={self.n_directions})"


class GaussianPrior:
    """A Gaussian signal prior with independent coordinates: ``theta_f ~ N(mean_f, variances_f)``.

    Parameters
    ----------
    variances : array-like of shape (n_directions,)
        Non-negative variances (zero makes that coordinate deterministic).
    mean : array-like of shape (n_directions,), default=None
        Zero when None.

    Examples
    --------
    >>> prior = GaussianPrior([3.0, 2.0, 1.0])
    >>> prior.covariance.diagonal()
    array([3., 2., 1.])
    """

    kind = "gaussian"

    def __init__(self, variances, mean=None):
        variances = _finite_array(variances, "variances", 1)
        if np.any(variances < 0):
            raise ValueError("variances must be non-negative.")
        mean = np.zeros_like(variances) if mean is None else _finite_array(mean, "mean", 1)
        if mean.shape != variances.shape:
            raise ValueError(f"mean has shape {mean.shape}, variances {variances.shape}.")
        self.variances = variances
        self._mean = mean

    @property
    def n_directions(self):
        return self.variances.shape[0]

    @property
    def mean(self):
        return self._mean.copy()

    @property
    def covariance(self):
        return np.diag(self.variances)

    def sample(self, n_samples, rng):
        """Draw ``n_samples`` signals, an array of shape (n_samples, n_directions)."""
        z = rng.standard_normal((n_samples, self.n_directions))
        return self._mean + np.sqrt(self.variances) * z

    def log_evidence(self, u):
        """``log E_theta exp(theta . u - |theta|^2 / 2)`` for each row of ``u`` (..., F).

        Notes
        -----
        Per coordinate, completing the square in the Gaussian integral gives
        ``(nu u^2 + 2 mu u - mu^2) / (2 (1 + nu)) - log(1 + nu) / 2``.
        """
        nu, mu = self.variances, self._mean
        per_coord = (nu * u**2 + 2 * mu * u - mu**2) / (2 * (1 + nu)) - 0.5 * np.log1p(nu)
        return per_coord.sum(axis=-1)

    def __repr__(self):
        return f"GaussianPrior(variances={self.variances.tolist()}, mean={self._mean.tolist()})"


def spike_prior(theta):
    """The single-spike prior: ``theta`` is always the given vector.

    Examples
    --------
    >>> spike_prior([2.0]).points
    array([[2.]])
    """
    theta = _finite_array(theta, "theta", 1)
    return DiscretePrior(theta[None, :], [1.0])


def flipped_spike_prior(theta):
    """The flipped-spike prior: ``+theta`` or ``-theta`` with probability one half each.

    Examples
    --------
    >>> flipped_spike_prior([2.0]).points
    array([[ 2.],
           [-2.]])
    """
    theta = _finite_array(theta, "theta", 1)
    return DiscretePrior(np.stack([theta, -theta]), [0.5, 0.5])


class SingleLocationTask:
    """The single-location regression task of [1]_ (see the user guide).

    A sequence holds ``n_tokens`` tokens in R^dim, all ``N(0, I)`` except the relevant one at a
    uniformly random position ``e``, shifted by ``sum_f theta_f k*_f / sqrt(dim)`` with
    ``theta ~ prior``. The label is ``y = x_e . v* / sqrt(dim) + noise * eps``.

    Parameters
    ----------
    prior : DiscretePrior or GaussianPrior
        The law of the signal theta; its dimension is the number ``F`` of latent directions.
    n_tokens : int, default=4
        Sequence length ``L``.
    dim : int, default=500
        Token dimension ``D``.
    noise : float, default=0.1
        Label noise standard deviation ``Delta``.
    directions : {"random", "canonical"}, default="random"
        ``"random"``: the ``k*_f`` and ``v*`` are a random orthonormal frame (scaled by sqrt(dim))
        drawn from ``random_state``; ``"canonical"``: the first ``F + 1`` coordinate axes.
    random_state : int, Generator or None, default=0
        Seeds the directions.

    Attributes
    ----------
    key_directions : ndarray of shape (F, dim)
        ``k*_f``, each of norm ``sqrt(dim)``, mutually orthogonal.
    value_direction : ndarray of shape (dim,)
        ``v*``, of norm ``sqrt(dim)``, orthogonal to every ``k*_f``.

    Notes
    -----
    The paper leaves ``L``, ``D`` and the noise level open; the defaults here (``L = 4``,
    ``D = 500``, ``Delta = 0.1``) keep a specialization run to seconds on a CPU.

    References
    ----------
    .. [1] Sagitova, Duranthon, Zdeborova, "Specialization of softmax attention heads: insights
       from the high-dimensional single-location model", arXiv 2603.03993 (2026).

    Examples
    --------
    >>> task = SingleLocationTask(spike_prior([1.0]), n_tokens=3, dim=8, random_state=0)
    >>> X, y = task.sample(5, random_state=1)
    >>> X.shape, y.shape
    ((5, 3, 8), (5,))
    """

    def __init__(
        self, prior, *, n_tokens=4, dim=500, noise=0.1, directions="random", random_state=0
    ):
        if not hasattr(prior, "log_evidence") or not hasattr(prior, "sample"):
            raise TypeError(f"prior must be a DiscretePrior or GaussianPrior, got {prior!r}.")
        for name, val, low in (("n_tokens", n_tokens, 2), ("dim", dim, prior.n_directions + 1)):
            if not isinstance(val, numbers.Integral) or isinstance(val, bool) or val < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {val!r}.")
        if not (isinstance(noise, numbers.Real) and np.isfinite(noise) and noise >= 0):
            raise ValueError(f"noise must be a finite non-negative number, got {noise!r}.")
        if directions not in ("random", "canonical"):
            raise ValueError(f"directions must be 'random' or 'canonical', got {directions!r}.")
        self.prior = prior
        self.n_tokens = int(n_tokens)
        self.dim = int(dim)
        self.noise = float(noise)
        self._directions = directions
        self._frame = None
        self._lock = threading.Lock()
        # The frame (dim x (F + 1) numbers) is drawn when first used, so that the paths that
        # need only the order parameters (the effective dynamics) take any dim. A generator
        # shared with the caller is drawn from now, as the caller expects its state to move.
        if isinstance(random_state, (np.random.Generator, np.random.RandomState)):
            self._rng = _as_rng(random_state)
            self._draw_frame()
        else:
            self._rng = None if directions == "canonical" else _as_rng(random_state)

    def _draw_frame(self):
        from .._validation import check_memory

        with self._lock:
            if self._frame is not None:
                return self._frame
            n_dir, D = self.prior.n_directions, self.dim
            # the Gaussian draw, its QR factors and the two scaled copies, in float64
            check_memory(5 * 8 * D * (n_dir + 1), f"the task's directions at dim={D}")
            if self._directions == "canonical":
                frame = np.eye(D, n_dir + 1)
            else:
                frame, _ = np.linalg.qr(self._rng.standard_normal((D, n_dir + 1)))
            self._frame = (
                np.sqrt(D) * frame[:, :n_dir].T.copy(),
                np.sqrt(D) * frame[:, n_dir].copy(),
            )
            return self._frame

    @property
    def key_directions(self):
        """``k*_f``, shape (F, dim): each of norm ``sqrt(dim)``, mutually orthogonal."""
        return self._draw_frame()[0]

    @property
    def value_direction(self):
        """``v*``, shape (dim,): of norm ``sqrt(dim)``, orthogonal to every ``k*_f``."""
        return self._draw_frame()[1]

    def __getstate__(self):
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def n_directions(self):
        return self.prior.n_directions

    def sample(
        self, n_samples, random_state=None, *, backend="numpy", dtype=None, return_latent=False
    ):
        """Draw ``n_samples`` independent sequences.

        Parameters
        ----------
        n_samples : int
        random_state : int, Generator or None
        backend : {"numpy", "torch"}, default="numpy"
            ``"torch"`` draws the Gaussian tokens with a torch generator seeded from
            ``random_state`` (a different stream from the numpy one) and returns tensors.
        dtype : dtype, default=None
            float64 for numpy, torch.float32 for torch when None.
        return_latent : bool, default=False
            Also return the relevant positions and the signals.

        Returns
        -------
        X : array of shape (n_samples, n_tokens, dim)
        y : array of shape (n_samples,)
        positions : ndarray of int of shape (n_samples,), if ``return_latent``
        theta : ndarray of shape (n_samples, F), if ``return_latent``
        """
        if not isinstance(n_samples, numbers.Integral) or n_samples < 1:
            raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}.")
        if backend not in ("numpy", "torch"):
            raise ValueError(f"backend must be 'numpy' or 'torch', got {backend!r}.")
        rng = _as_rng(random_state)
        n, L, D = int(n_samples), self.n_tokens, self.dim
        positions = rng.integers(L, size=n)
        theta = self.prior.sample(n, rng)
        shift = theta @ (self.key_directions / np.sqrt(D))
        label_noise = self.noise * rng.standard_normal(n)
        w_star = self.value_direction / np.sqrt(D)
        rows = np.arange(n)
        if backend == "numpy":
            X = rng.standard_normal((n, L, D))
            X[rows, positions] += shift
            y = X[rows, positions] @ w_star + label_noise
            if dtype is not None:
                X, y = X.astype(dtype), y.astype(dtype)
        else:
            import torch

            dtype = torch.float32 if dtype is None else dtype
            gen = torch.Generator().manual_seed(int(rng.integers(2**62)))
            X = torch.randn((n, L, D), generator=gen, dtype=dtype)
            pos_t = torch.from_numpy(positions)
            X[torch.arange(n), pos_t] += torch.from_numpy(shift).to(dtype)
            y = X[torch.arange(n), pos_t] @ torch.from_numpy(w_star).to(dtype)
            y = y + torch.from_numpy(label_noise).to(dtype)
        if return_latent:
            return X, y, positions, theta
        return X, y

    def __repr__(self):
        return (
            f"SingleLocationTask({self.prior!r}, n_tokens={self.n_tokens}, dim={self.dim}, "
            f"noise={self.noise})"
        )
