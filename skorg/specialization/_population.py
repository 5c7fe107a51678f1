"""The population risk of the attention regressor as a function of its order parameters.

As ``D`` grows, the risk of a model depends on its weights only through the Gram matrix of the
keys, the values and the target directions (the order parameters) and the biases; this module
evaluates that function, and its gradient, by Monte Carlo with common random numbers.
"""

import numbers

import numpy as np

from ._gradient import _risk_core
from ._model import _check_normalization
from ._montecarlo import _Draws
from ._risk import OrderParameters
from ._task import SingleLocationTask, _as_rng

__all__ = ["population_risk", "population_risk_gradient", "random_initial_order"]

_EXTRA = ("key_value_overlap", "value_key_alignment", "key_value_alignment")


def _check_task(task):
    if not isinstance(task, SingleLocationTask):
        raise TypeError(f"task must be a SingleLocationTask, got {type(task).__name__}.")


def _check_count(name, val, low):
    if not isinstance(val, numbers.Integral) or isinstance(val, bool) or val < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {val!r}.")


def _pack(order, task):
    """(omega, T, b) float64 arrays with one leading axis from an OrderParameters.

    ``omega`` (n, 2H, 2H) is the Gram matrix of the keys then the values (divided by D), ``T``
    (n, 2H, F + 1) their overlaps with ``k*_1, ..., k*_F, v*``.
    """
    if not isinstance(order, OrderParameters):
        raise TypeError(f"order must be an OrderParameters, got {type(order).__name__}.")
    missing = [name for name in _EXTRA if getattr(order, name) is None]
    if missing:
        raise ValueError(
            f"order has no {', '.join(missing)}: the population risk needs the whole Gram "
            "matrix; build it with order_parameters(model, task) or random_initial_order."
        )
    m = np.asarray(order.m, dtype=np.float64)
    if m.ndim < 2:
        raise ValueError(f"order.m must have shape (..., n_heads, F), got {m.shape}.")
    lead, (H, F) = m.shape[:-2], m.shape[-2:]
    if F != task.n_directions:
        raise ValueError(f"order.m has F={F} directions but the task has {task.n_directions}.")
    expected = {
        "q": (H, H),
        "biases": (H,),
        "value_alignment": (H,),
        "value_overlap": (H, H),
        "key_value_overlap": (H, H),
        "value_key_alignment": (H, F),
        "key_value_alignment": (H,),
    }
    arrs = {"m": m}
    for name, shape in expected.items():
        arr = np.asarray(getattr(order, name), dtype=np.float64)
        if arr.shape != lead + shape:
            raise ValueError(f"order.{name} must have shape {lead + shape}, got {arr.shape}.")
        arrs[name] = arr
    if not all(np.all(np.isfinite(a)) for a in arrs.values()):
        raise ValueError("order must be finite (no NaN or inf).")
    n = int(np.prod(lead)) if lead else 1
    a = {k: v.reshape(n, *v.shape[len(lead) :]) for k, v in arrs.items()}
    omega = np.block(
        [
            [a["q"], a["key_value_overlap"]],
            [np.swapaxes(a["key_value_overlap"], 1, 2), a["value_overlap"]],
        ]
    )
    T = np.concatenate(
        [
            np.concatenate([a["m"], a["key_value_alignment"][:, :, None]], axis=2),
            np.concatenate([a["value_key_alignment"], a["value_alignment"][:, :, None]], axis=2),
        ],
        axis=1,
    )
    # the Gram matrix of (weights, targets) must be positive semi-definite: otherwise no
    # weights have these overlaps and the risk below would be meaningless
    full = np.block(
        [[omega, T], [np.swapaxes(T, 1, 2), np.broadcast_to(np.eye(F + 1), (n, F + 1, F + 1))]]
    )
    full = 0.5 * (full + np.swapaxes(full, 1, 2))
    low = np.linalg.eigvalsh(full)[:, 0]
    scale = np.maximum(1.0, np.abs(full).max(axis=(1, 2)))
    if np.any(low < -1e-8 * scale):
        raise ValueError(
            "order is not the Gram matrix of any weights (the matrix of overlaps between keys, "
            "values and target directions has a negative eigenvalue); check q, value_overlap "
            "and key_value_overlap against m and the alignments."
        )
    return omega, T, a["biases"], lead


def _unpack(omega, T, b, lead, H, F):
    """An OrderParameters from (omega, T, b) arrays with one leading axis."""
    fields = dict(
        m=T[:, :H, :F],
        q=omega[:, :H, :H],
        biases=b,
        value_alignment=T[:, H:, F],
        value_overlap=omega[:, H:, H:],
        key_value_overlap=omega[:, :H, H:],
        value_key_alignment=T[:, H:, :F],
        key_value_alignment=T[:, :H, F],
    )
    return OrderParameters(
        **{k: np.asarray(v).reshape(*lead, *v.shape[1:]) for k, v in fields.items()}
    )


def _check_mc(task, normalization, n_samples):
    _check_task(task)
    _check_normalization(normalization)
    _check_count("n_samples", n_samples, 2)


def population_risk(order, task, normalization="softmax", *, n_samples=4096, random_state=0):
    """The population risk ``E (y - y_hat)^2`` of the model with the given order parameters.

    Parameters
    ----------
    order : OrderParameters
        All eight fields filled (:func:`order_parameters` or :func:`random_initial_order`);
        leading axes, if any, index independent models.
    task : SingleLocationTask
        Gives the prior, ``L`` and the noise; the dimension ``D`` does not enter.
    normalization : {"softmax", "softmax1", "bayes_softmax"}, default="softmax"
    n_samples : int, default=4096
        Monte Carlo draws of the token noise and the signal.
    random_state : int, Generator or None, default=0
        Seeds the draws. The same seed gives the same draws for every ``order``, so the risk is
        a smooth deterministic function of the order parameters (common random numbers).

    Returns
    -------
    risk : ndarray of shape order.m.shape[:-2]
    std_error : ndarray of the same shape
        Monte Carlo standard error of ``risk`` (as an estimate of the exact expectation).

    Notes
    -----
    Given the signal ``theta``, the key projections ``sigma_l = (x_l . k_h / sqrt(D))_h`` of the
    tokens are independent ``N(0, q)`` (shifted by ``m theta`` for the relevant token); given
    them, the value projections and the label part are Gaussian with a mean linear in
    ``sigma_l`` and a fixed covariance ``S`` (the Schur complement of ``q`` in the Gram matrix).
    The squared error is therefore averaged over the values and the label in closed form, and
    only the ``L x H`` standard normals behind the scores and ``theta`` are sampled: see the user
    guide, section *The effective dynamics of head specialization*.

    Examples
    --------
    >>> from skorg.specialization import SingleLocationTask, spike_prior, random_initial_order
    >>> task = SingleLocationTask(spike_prior([1.0]), dim=100, noise=0.0)
    >>> order = random_initial_order(task, n_heads=2, random_state=0)
    >>> risk, se = population_risk(order, task)  # values start at zero: y_hat = 0, risk E y^2
    >>> round(float(risk), 12)
    1.0
    """
    _check_mc(task, normalization, n_samples)
    omega, T, b, lead = _pack(order, task)
    draws = _Draws(task, b.shape[1], n_samples, random_state)
    risk, se, _ = _risk_core(omega, T, b, draws, normalization, task.noise)
    return risk.reshape(lead), se.reshape(lead)


def population_risk_gradient(
    order, task, normalization="softmax", *, n_samples=4096, random_state=0
):
    """The population risk and its gradient with respect to every order parameter.

    Parameters
    ----------
    order, task, normalization, n_samples, random_state
        As in :func:`population_risk`.

    Returns
    -------
    risk, std_error : ndarray
        As :func:`population_risk` returns them.
    gradient : OrderParameters
        Each field holds ``d risk / d field`` of the implemented (Monte Carlo) risk, exact up to
        rounding: the reverse-mode derivative through the sample average, written out by hand
        (user guide, *The analytic gradient*; it equals automatic differentiation's to 1e-12).
        The symmetric matrices ``q`` and ``value_overlap`` are differentiated entry by entry
        through their symmetric part, so a symmetric perturbation ``dq`` changes the risk by
        ``sum(gradient.q * dq)``.

    Examples
    --------
    >>> from skorg.specialization import SingleLocationTask, spike_prior, random_initial_order
    >>> task = SingleLocationTask(spike_prior([1.0]), dim=100, noise=0.0)
    >>> order = random_initial_order(task, n_heads=1, random_state=0)
    >>> _, _, grad = population_risk_gradient(order, task, n_samples=256)
    >>> bool(grad.value_alignment[0] < 0)  # aligning the value with v* lowers the risk
    True
    """
    _check_mc(task, normalization, n_samples)
    omega, T, b, lead = _pack(order, task)
    H, F = b.shape[1], task.n_directions
    draws = _Draws(task, H, n_samples, random_state)
    risk, se, (g_omega, g_T, g_b) = _risk_core(
        omega, T, b, draws, normalization, task.noise, grad=True
    )
    # the off-diagonal key/value block appears twice in omega (above and below the diagonal)
    g_omega = g_omega.copy()
    g_omega[:, :H, H:] += np.swapaxes(g_omega[:, H:, :H], 1, 2)
    gradient = _unpack(g_omega, g_T, g_b, lead, H, F)
    return risk.reshape(lead), se.reshape(lead), gradient


def _bartlett_gram(n_vectors, dof, rng):
    """The Gram matrix of ``n_vectors`` standard Gaussian vectors in ``R^dof`` (Bartlett)."""
    A = np.tril(rng.standard_normal((n_vectors, n_vectors)), -1)
    A[np.diag_indices(n_vectors)] = np.sqrt(rng.chisquare(dof - np.arange(n_vectors)))
    return A @ A.T


def random_initial_order(
    task, n_heads, n_init=None, *, key_scale=0.1, value_scale=0.0, random_state=0
):
    """Order parameters of freshly initialized models, drawn exactly at the task's dimension.

    The law is that of :class:`AttentionRegressor`'s initialization (keys
    ``key_scale * N(0, I_D)``, values ``value_scale * N(0, I_D)``, zero biases) at ``D =
    task.dim``: the alignments start at order ``key_scale / sqrt(D)``, which is what sets the
    ``log D`` escape time of the flow. Only ``O(n_heads^2)`` numbers are drawn per model, so
    ``D`` can be as large as wanted.

    Parameters
    ----------
    task : SingleLocationTask
    n_heads : int
    n_init : int, default=None
        Number of independent initializations (a leading axis); None for a single one.
    key_scale, value_scale : float, default=0.1, 0.0
    random_state : int, Generator or None, default=0

    Returns
    -------
    OrderParameters

    Examples
    --------
    >>> from skorg.specialization import SingleLocationTask, GaussianPrior
    >>> task = SingleLocationTask(GaussianPrior([3.0, 2.0, 1.0]), dim=10_000)
    >>> order = random_initial_order(task, n_heads=8, n_init=100)
    >>> order.m.shape, bool(abs(order.m).max() < 0.01)
    ((100, 8, 3), True)
    """
    _check_task(task)
    _check_count("n_heads", n_heads, 1)
    if n_init is not None:
        _check_count("n_init", n_init, 1)
    for name, val in (("key_scale", key_scale), ("value_scale", value_scale)):
        if not (isinstance(val, numbers.Real) and np.isfinite(val) and val >= 0):
            raise ValueError(f"{name} must be a finite non-negative number, got {val!r}.")
    rng = _as_rng(random_state)
    H, F, D = int(n_heads), task.n_directions, task.dim
    count = 1 if n_init is None else int(n_init)
    scale = np.concatenate([np.full(H, key_scale), np.full(H, value_scale)])
    dof = D - F - 1
    omegas, Ts = [], []
    for _ in range(count):
        # coordinates on the target frame, then the Gram of the components orthogonal to it
        U = rng.standard_normal((2 * H, F + 1))
        if dof >= 2 * H:
            rest = _bartlett_gram(2 * H, dof, rng)
        else:
            Z = rng.standard_normal((2 * H, dof))
            rest = Z @ Z.T
        omegas.append(np.outer(scale, scale) * (U @ U.T + rest) / D)
        Ts.append(scale[:, None] * U / np.sqrt(D))
    lead = () if n_init is None else (count,)
    return _unpack(np.stack(omegas), np.stack(Ts), np.zeros((count, H)), lead, H, F)
