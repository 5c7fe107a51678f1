"""Order parameters of a model and a Monte Carlo estimate of its test risk."""

import numbers
from dataclasses import dataclass

import numpy as np
import torch

from ._model import AttentionRegressor, attention_forward
from ._task import SingleLocationTask, _as_rng

__all__ = ["OrderParameters", "model_risk", "order_parameters"]


@dataclass(frozen=True)
class OrderParameters:
    """The order parameters of a model (leading axes, if any, index records or replicas).

    Attributes
    ----------
    m : ndarray of shape (..., n_heads, F)
        Alignments ``k_h . k*_f / D``.
    q : ndarray of shape (..., n_heads, n_heads)
        Key overlaps ``k_h . k_g / D``.
    biases : ndarray of shape (..., n_heads)
    value_alignment : ndarray of shape (..., n_heads)
        ``v_h . v* / D``.
    value_overlap : ndarray of shape (..., n_heads, n_heads)
        ``v_h . v_g / D``.
    key_value_overlap : ndarray of shape (..., n_heads, n_heads) or None
        ``k_h . v_g / D`` (row: key head, column: value head).
    value_key_alignment : ndarray of shape (..., n_heads, F) or None
        ``v_h . k*_f / D``.
    key_value_alignment : ndarray of shape (..., n_heads) or None
        ``k_h . v* / D``.

    Notes
    -----
    The first five fields are the ones the paper tracks; the last three complete the Gram matrix
    of the weights and the target directions, which the population risk and its gradient flow
    need in general (:func:`population_risk`). :func:`order_parameters` fills all eight;
    :func:`train_online` records the first five (the last three are None there).
    """

    m: np.ndarray
    q: np.ndarray
    biases: np.ndarray
    value_alignment: np.ndarray
    value_overlap: np.ndarray
    key_value_overlap: np.ndarray | None = None
    value_key_alignment: np.ndarray | None = None
    key_value_alignment: np.ndarray | None = None

    @property
    def r(self):
        """Residual overlaps ``q - m m^T``, the key overlap outside the latent span."""
        return self.q - self.m @ np.swapaxes(self.m, -1, -2)


def _weights(model):
    return model.keys.detach(), model.biases.detach(), model.values.detach()


def _order_tensors(keys, biases, values, kstar, vstar):
    """Order parameters from (..., H, D) weights and float64 target directions, as tensors."""
    D = keys.shape[-1]
    keys, values = keys.to(torch.float64), values.to(torch.float64)
    return (
        keys @ kstar.T / D,
        keys @ keys.transpose(-1, -2) / D,
        biases.to(torch.float64),
        values @ vstar / D,
        values @ values.transpose(-1, -2) / D,
    )


def order_parameters(model, task):
    """The order parameters of ``model`` relative to the directions of ``task``.

    Parameters
    ----------
    model : AttentionRegressor
    task : SingleLocationTask

    Returns
    -------
    OrderParameters

    Examples
    --------
    >>> from skorg.specialization import AttentionRegressor, SingleLocationTask, spike_prior
    >>> task = SingleLocationTask(spike_prior([1.5]), dim=16)
    >>> order_parameters(AttentionRegressor.bayes_optimal(task), task).m
    array([[1.5]])
    """
    _check_pair(model, task)
    kstar = torch.from_numpy(task.key_directions)
    vstar = torch.from_numpy(task.value_direction)
    keys, biases, values = _weights(model)
    base = [t.numpy() for t in _order_tensors(keys, biases, values, kstar, vstar)]
    keys, values, D = keys.to(torch.float64), values.to(torch.float64), task.dim
    extra = (keys @ values.T / D, values @ kstar.T / D, keys @ vstar / D)
    return OrderParameters(*base, *(t.numpy() for t in extra))


def _check_pair(model, task):
    if not isinstance(model, AttentionRegressor):
        raise TypeError(f"model must be an AttentionRegressor, got {type(model).__name__}.")
    if not isinstance(task, SingleLocationTask):
        raise TypeError(f"task must be a SingleLocationTask, got {type(task).__name__}.")
    if model.dim != task.dim:
        raise ValueError(f"model has dim={model.dim} but task has dim={task.dim}.")


def _subspace(model, task):
    """Orthonormal basis (D, p) of a subspace holding the weights and the target directions."""
    keys, _, values = (t.to(torch.float64).numpy() for t in _weights(model))
    cols = np.concatenate([task.key_directions, task.value_direction[None], keys, values], axis=0).T
    basis, _ = np.linalg.qr(cols)
    return basis


def model_risk(model, task, n_samples=100_000, random_state=0, *, batch_size=20_000):
    """Monte Carlo estimate of the test risk ``E (y - y_hat)^2`` of a model on a task.

    Parameters
    ----------
    model : AttentionRegressor
    task : SingleLocationTask
    n_samples : int, default=100_000
    random_state : int, Generator or None, default=0
    batch_size : int, default=20_000

    Returns
    -------
    risk : float
    std_error : float
        Monte Carlo standard error of ``risk``.

    Notes
    -----
    The model and the label see a token only through its projection on the span ``S`` of the
    keys, the values, the ``k*_f`` and ``v*`` (dimension ``p <= 2H + F + 1``); the projection
    of a ``N(0, I_D)`` token on an orthonormal basis of ``S`` is ``N(0, I_p)``. Sampling tokens
    in ``S`` directly is therefore exact in distribution for any ``D`` and costs ``O(p)`` per
    token instead of ``O(D)``.

    Examples
    --------
    >>> from skorg.specialization import AttentionRegressor, SingleLocationTask, spike_prior
    >>> task = SingleLocationTask(spike_prior([0.0]), n_tokens=4, dim=16, noise=0.0)
    >>> zero = AttentionRegressor(16, 1, value_scale=0.0)
    >>> round(model_risk(zero, task, n_samples=100_000)[0], 1)  # predicts 0, risk E y^2 = 1
    1.0
    """
    _check_pair(model, task)
    for name, val in (("n_samples", n_samples), ("batch_size", batch_size)):
        if not isinstance(val, numbers.Integral) or val < 2:
            raise ValueError(f"{name} must be an integer >= 2, got {val!r}.")
    rng = _as_rng(random_state)
    basis = _subspace(model, task)
    D, L = task.dim, task.n_tokens
    keys, biases, values = (t.to(torch.float64) for t in _weights(model))
    basis_t = torch.from_numpy(basis)
    keys_p, values_p = keys @ basis_t, values @ basis_t
    shift_map = task.key_directions @ basis / np.sqrt(D)
    w_star = task.value_direction @ basis / np.sqrt(D)
    total, total_sq, done = 0.0, 0.0, 0
    with torch.no_grad():
        while done < n_samples:
            n = min(batch_size, n_samples - done)
            xi = rng.standard_normal((n, L, basis.shape[1]))
            pos = rng.integers(L, size=n)
            xi[np.arange(n), pos] += task.prior.sample(n, rng) @ shift_map
            y = xi[np.arange(n), pos] @ w_star + task.noise * rng.standard_normal(n)
            y_hat = attention_forward(
                torch.from_numpy(xi), keys_p, biases, values_p, model.normalization, dim=D
            ).numpy()
            err = (y - y_hat) ** 2
            total += err.sum()
            total_sq += np.sum(err**2)
            done += n
    mean = total / n_samples
    var = max(total_sq / n_samples - mean**2, 0.0) * n_samples / (n_samples - 1)
    return float(mean), float(np.sqrt(var / n_samples))
