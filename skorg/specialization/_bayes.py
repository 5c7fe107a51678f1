"""The posterior over the relevant position and a Monte Carlo estimate of the Bayes risk.

NumPy only: the Bayes estimator sees a token only through its ``F`` latent projections, so the
Monte Carlo runs in R^F whatever the token dimension.
"""

import numbers

import numpy as np
from scipy.special import softmax

from ._task import SingleLocationTask, _as_rng, _real_array

__all__ = ["bayes_risk", "posterior_position_weights"]


def posterior_position_weights(latent, prior):
    """Posterior probability that each token is the relevant one.

    Parameters
    ----------
    latent : array-like of shape (n_samples, n_tokens, F)
        Latent projections ``u_l = (x_l . k*_f / sqrt(D))_f`` of every token.
    prior : DiscretePrior or GaussianPrior

    Returns
    -------
    weights : ndarray of shape (n_samples, n_tokens)
        ``w_l`` proportional to ``E_theta exp(theta . u_l - |theta|^2 / 2)``; rows sum to one.

    Notes
    -----
    The relevant position is uniform a priori and the tokens are independent given it, so the
    posterior of position ``l`` is the likelihood ratio of ``x_l`` under "shifted" against
    "pure noise", normalized over ``l``. The label part ``x_l . v* / sqrt(D)`` is independent of
    the ``u_l`` because ``v*`` is orthogonal to every ``k*_f``.

    Examples
    --------
    >>> from skorg.specialization import spike_prior
    >>> w = posterior_position_weights([[[1.0], [0.0]]], spike_prior([1.0]))
    >>> w.round(4)
    array([[0.7311, 0.2689]])
    """
    latent = _real_array(latent, "latent")
    if latent.ndim != 3:
        raise ValueError(f"latent must have shape (n_samples, n_tokens, F), got {latent.shape}.")
    if latent.shape[2] != prior.n_directions:
        raise ValueError(
            f"latent has {latent.shape[2]} directions but the prior has {prior.n_directions}."
        )
    if not np.all(np.isfinite(latent)):
        raise ValueError("latent must be finite (no NaN or inf).")
    return softmax(prior.log_evidence(latent), axis=1)


def bayes_risk(task, n_samples=200_000, random_state=0, *, batch_size=50_000):
    """Monte Carlo estimate of the Bayes risk of a single-location task.

    Parameters
    ----------
    task : SingleLocationTask
    n_samples : int, default=200_000
    random_state : int, Generator or None, default=0
    batch_size : int, default=50_000
        Samples drawn at a time (bounds memory).

    Returns
    -------
    risk : float
        Estimate of ``E (y - E[y | X])^2`` (the squared-error Bayes risk).
    std_error : float
        Its Monte Carlo standard error.

    Notes
    -----
    With ``w`` the posterior over the relevant position and ``g_l = x_l . v* / sqrt(D)``
    (independent standard normals, independent of ``w``), the posterior mean is
    ``sum_l w_l g_l`` and the Bayes risk is ``Delta^2 + 1 - 2 E[w_e] + E[sum_l w_l^2]``; since
    ``E[w_e | X] = sum_l w_l^2`` this is ``Delta^2 + 1 - E[sum_l w_l^2]``, whose Monte Carlo
    average (over latent projections only) has a much smaller variance than the squared error.

    Examples
    --------
    >>> from skorg.specialization import SingleLocationTask, spike_prior
    >>> task = SingleLocationTask(spike_prior([0.0]), n_tokens=4, dim=8, noise=0.0)
    >>> bayes_risk(task, n_samples=100)  # no signal: w is uniform, risk 1 - 1/L exactly
    (0.75, 0.0)
    """
    if not isinstance(task, SingleLocationTask):
        raise TypeError(f"task must be a SingleLocationTask, got {type(task).__name__}.")
    for name, val in (("n_samples", n_samples), ("batch_size", batch_size)):
        if not isinstance(val, numbers.Integral) or val < 2:
            raise ValueError(f"{name} must be an integer >= 2, got {val!r}.")
    rng = _as_rng(random_state)
    L, F = task.n_tokens, task.n_directions
    total, total_sq, done = 0.0, 0.0, 0
    while done < n_samples:
        n = min(batch_size, n_samples - done)
        latent = rng.standard_normal((n, L, F))
        positions = rng.integers(L, size=n)
        latent[np.arange(n), positions] += task.prior.sample(n, rng)
        w = posterior_position_weights(latent, task.prior)
        values = 1.0 - np.sum(w**2, axis=1)
        total += values.sum()
        total_sq += np.sum(values**2)
        done += n
    mean = total / n_samples
    var = max(total_sq / n_samples - mean**2, 0.0) * n_samples / (n_samples - 1)
    return float(task.noise**2 + mean), float(np.sqrt(var / n_samples))
