"""The population risk of the attention regressor as a function of its order parameters.

As ``D`` grows, the risk of a model depends on its weights only through the Gram matrix of the
keys, the values and the target directions (the order parameters) and the biases; this module
evaluates that function, and its gradient, by Monte Carlo with common random numbers.
"""

import numbers

import numpy as np
import torch

from ._model import _check_normalization, attention_weights
from ._risk import OrderParameters
from ._task import DiscretePrior, SingleLocationTask, _as_rng

__all__ = ["population_risk", "population_risk_gradient", "random_initial_order"]

# elements of one (inits x samples x tokens x heads) block: bounds the memory of one evaluation
_BLOCK = 2_000_000
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


def _moment_matched(z):
    """Standard normal draws (N, L, k) shifted and whitened per position to exact moments.

    Every term of the risk that is linear or quadratic in the draws (the label part, the value
    means) is then averaged exactly, so its Monte Carlo error cannot leak into the gradient:
    without this, the error of ``E eta eta^T`` is amplified by ``q^{-1}`` in the derivative
    with respect to nearly collinear keys, and makes the dynamics needlessly stiff.
    """
    n = z.shape[0]
    if n <= z.shape[2] + 1:
        return z
    z = z - z.mean(axis=0, keepdims=True)
    out = np.empty_like(z)
    for pos in range(z.shape[1]):
        cov = z[:, pos].T @ z[:, pos] / n
        chol = np.linalg.cholesky(cov)
        out[:, pos] = np.linalg.solve(chol, z[:, pos].T).T
    return out


def _orthogonal(rng, n, F):
    """``n`` Haar-random orthogonal F x F matrices (QR of Gaussians, signs fixed)."""
    Q, R = np.linalg.qr(rng.standard_normal((n, F, F)))
    return Q * np.sign(np.diagonal(R, axis1=1, axis2=2))[:, None, :]


def _gaussian_design(rng, n_groups, F):
    """Standard normal signals in groups of ``2 F``: ``+-r U e_j`` for a random rotation ``U``.

    Each group shares one radius ``r`` (stratified chi_F quantiles, shuffled, rescaled so that
    the mean of ``r^2`` is exactly ``F``) and one rotation. Within a group the odd moments vanish
    and the second moment is ``r^2 / F`` times the identity, so whatever the group is paired with
    (one draw of the token noise) sees an isotropic signal: the Monte Carlo error of a term such
    as ``E theta_f theta_g g(eta)`` is a common factor of the identity and cannot favour one
    latent direction over another (independent draws of theta give each direction its own error,
    of the size of the saddle-escape rates themselves). Fourth and higher moments are exact on
    average over the rotations.
    """
    from scipy.stats import chi

    r = chi.ppf((np.arange(n_groups) + 0.5) / n_groups, F)
    r = rng.permutation(r * np.sqrt(F / np.mean(r**2)))
    U = _orthogonal(rng, n_groups, F)  # columns U e_j
    pts = np.concatenate([U, -U], axis=2).transpose(0, 2, 1)  # (n_groups, 2F, F)
    return (r[:, None, None] * pts).reshape(n_groups * 2 * F, F)


class _Draws:
    """The common random numbers: token noise, signals and label noise, fixed once.

    ``n_samples`` draws of the token noise; for a Gaussian prior each is paired with the ``2F``
    signals of :func:`_gaussian_design` (so ``eta`` has ``2 F n_samples`` rows, in groups of
    ``group`` consecutive rows sharing one token-noise draw); a discrete prior is stratified.
    """

    def __init__(self, task, n_heads, n_samples, random_state):
        rng = _as_rng(random_state)
        L, H, F = task.n_tokens, n_heads, task.n_directions
        eta = _moment_matched(rng.standard_normal((n_samples, L, H)))
        prior = task.prior
        if isinstance(prior, DiscretePrior):
            # stratified: each support point gets its exact share of the draws, so a discrete
            # prior adds no sampling error of its own
            cum = np.cumsum(prior.probabilities)
            idx = np.searchsorted(cum / cum[-1], (np.arange(n_samples) + 0.5) / n_samples)
            theta = prior.points[np.minimum(idx, prior.points.shape[0] - 1)]
            self.group = 1
        else:
            self.group = 2 * F
            z = _gaussian_design(rng, n_samples, F)
            theta = prior.mean + np.sqrt(prior.variances) * z
            eta = np.repeat(eta, self.group, axis=0)
        n_rows = eta.shape[0]
        self.eta = torch.from_numpy(np.ascontiguousarray(eta))
        self.theta = torch.from_numpy(np.asarray(theta, dtype=np.float64).reshape(n_rows, F))
        # residual value/label noise and label noise, used by the SGD-noise term only
        self.rho = torch.from_numpy(rng.standard_normal((n_rows, L, H + 1)))
        self.eps = torch.from_numpy(rng.standard_normal(n_rows))


def _blocks(omega, T, b, H):
    """Split torch (omega, T, b) into the named overlaps."""
    omega = 0.5 * (omega + omega.transpose(-1, -2))
    q, qkv, qvv = omega[:, :H, :H], omega[:, :H, H:], omega[:, H:, H:]
    m, ak = T[:, :H, :-1], T[:, :H, -1]
    mv, av = T[:, H:, :-1], T[:, H:, -1]
    return q, qkv, qvv, m, ak, mv, av, b


def _conditional(q, qkv, qvv, ak, av):
    """Key Cholesky factor, whitened value/label loadings and the residual covariance.

    With ``sigma = Lq eta`` the key projections of a token, its value projections and label
    part are ``Pw eta + residual`` with the residual ``N(0, S)`` independent of ``eta``.
    """
    H = q.shape[-1]
    eye = torch.eye(H, dtype=q.dtype)
    # a tiny ridge keeps the factor defined when some key is exactly zero (its scores are then
    # constant, which the ridge reproduces to 1e-6)
    Lq, info = torch.linalg.cholesky_ex(q + 1e-12 * eye)
    if bool((info > 0).any()):
        # a trial state of the integrator (or rounding) can leave q slightly indefinite:
        # project the failing ones on the positive semi-definite cone before factoring
        evals, evecs = torch.linalg.eigh(q)
        floor = 1e-10 * evals.abs().amax(dim=-1, keepdim=True) + 1e-12
        fixed = (evecs * evals.clamp_min(0.0)[:, None, :]) @ evecs.transpose(-1, -2)
        bad = (info > 0)[:, None, None]
        q = torch.where(bad, fixed + floor[:, :, None] * eye, q)
        Lq = torch.linalg.cholesky(q + 1e-12 * eye)
    P = torch.cat([qkv.transpose(-1, -2), ak[:, None, :]], dim=-2)  # (n, H + 1, H)
    Pw = torch.linalg.solve_triangular(Lq, P.transpose(-1, -2), upper=False).transpose(-1, -2)
    top = torch.cat([qvv, av[:, :, None]], dim=-1)
    bottom = torch.cat([av[:, None, :], torch.ones_like(av[:, :1])[:, None, :]], dim=-1)
    S = torch.cat([top, bottom], dim=-2) - Pw @ Pw.transpose(-1, -2)
    return Lq, Pw, S


def _scores_and_means(draws, Lq, Pw, m, mv, b):
    n, H = b.shape
    N, L = draws.eta.shape[:2]
    eta, theta = draws.eta, draws.theta
    # one batched product gives the key projections, the conditional value means and the
    # label mean of every token: (n, N L, H) @ (n, H, 2H + 1)
    loads = torch.cat([Lq, Pw], dim=-2).transpose(-1, -2)
    proj = (eta.reshape(1, N * L, H) @ loads).reshape(n, N, L, 2 * H + 1)
    # the relevant token sits at position 0: the model is symmetric in the positions
    shift = theta @ torch.cat([m, mv], dim=-2).transpose(-1, -2)  # (n, N, 2H)
    shift = torch.nn.functional.pad(shift[:, :, None, :], (0, 1, 0, L - 1))
    proj = proj + shift
    scores = proj[..., :H] + b[:, None, None, :]
    return scores, proj[..., H : 2 * H], proj[:, :, 0, 2 * H]


def _sample_errors(omega, T, b, draws, normalization, noise):
    """Per-draw conditional squared errors ``E[(y - y_hat)^2 | eta, theta]``, shape (n, N)."""
    H = b.shape[-1]
    q, qkv, qvv, m, ak, mv, av, b = _blocks(omega, T, b, H)
    Lq, Pw, S = _conditional(q, qkv, qvv, ak, av)
    scores, cz, cg0 = _scores_and_means(draws, Lq, Pw, m, mv, b)
    a = attention_weights(scores, normalization)
    mean_err = (a * cz).sum(dim=(-2, -1)) - cg0
    Szz, Szg, Sgg = S[:, :H, :H], S[:, :H, H], S[:, H, H]
    n, N, L, _ = a.shape
    quad = ((a.reshape(n, N * L, H) @ Szz) * a.reshape(n, N * L, H)).reshape(n, N, L * H)
    var_err = (
        quad.sum(dim=-1)
        - 2.0 * (a[:, :, 0] * Szg[:, None, :]).sum(dim=-1)
        + Sgg[:, None]
        + noise**2
    )
    return mean_err**2 + var_err


def _sgd_noise(omega, T, b, draws, normalization, noise):
    """``E[sum_l gamma_l gamma_l^T]`` (n, 2H, 2H): the per-sample gradient's covariance.

    ``gamma_{a,l}`` is the derivative of the per-sample loss ``(y - y_hat)^2 / 2`` with respect
    to the projection ``w_a . x_l / sqrt(D)`` of token ``l`` on weight ``a`` (keys, then values).
    """
    H = b.shape[-1]
    with torch.no_grad():
        q, qkv, qvv, m, ak, mv, av, b = _blocks(omega, T, b, H)
        Lq, Pw, S = _conditional(q, qkv, qvv, ak, av)
        scores, cz, cg0 = _scores_and_means(draws, Lq, Pw, m, mv, b)
        evals, evecs = torch.linalg.eigh(0.5 * (S + S.transpose(-1, -2)))
        root = evecs * evals.clamp_min(0.0).sqrt()[:, None, :]
        resid = torch.einsum("slk,njk->nslj", draws.rho, root)
        z = cz + resid[..., :H]
        y = cg0 + resid[:, :, 0, H] + noise * draws.eps
        a = attention_weights(scores, normalization)
        per_head = (a * z).sum(dim=-2, keepdim=True)
        y_hat = per_head.sum(dim=-1)[..., 0]
        centre = y_hat[:, :, None, None] if normalization == "bayes_softmax" else per_head
        err = (y_hat - y)[:, :, None, None]
        gamma = torch.cat([err * a * (z - centre), err * a], dim=-1)  # (n, N, L, 2H)
        return torch.einsum("nsla,nslc->nac", gamma, gamma) / gamma.shape[1]


def _chunks(n, n_samples, L, H):
    size = max(1, _BLOCK // max(1, n_samples * L * H))
    return [slice(i, min(n, i + size)) for i in range(0, n, size)]


def _risk_core(omega, T, b, draws, normalization, noise, *, grad=False):
    """Risk, standard error and (if ``grad``) the gradient of ``risk`` for every init."""
    n, H = b.shape
    L, N = draws.eta.shape[1], draws.eta.shape[0]
    risk, se = np.empty(n), np.empty(n)
    grads = (np.empty_like(omega), np.empty_like(T), np.empty_like(b)) if grad else None
    for sl in _chunks(n, N, L, H):
        args = [
            torch.from_numpy(np.ascontiguousarray(x[sl])).requires_grad_(grad)
            for x in (omega, T, b)
        ]
        with torch.set_grad_enabled(grad):
            err = _sample_errors(*args, draws, normalization, noise)
            mean = err.mean(dim=1)
            if grad:
                g = torch.autograd.grad(mean.sum(), args)
                for out, gi in zip(grads, g, strict=True):
                    out[sl] = gi.numpy()
        risk[sl] = mean.detach().numpy()
        # the groups sharing one token-noise draw are the independent units of the average
        per_draw = err.detach().reshape(err.shape[0], -1, draws.group).mean(dim=2)
        se[sl] = per_draw.std(dim=1).numpy() / np.sqrt(per_draw.shape[1])
    return risk, se, grads


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
        rounding (automatic differentiation through the sample average). The symmetric
        matrices ``q`` and ``value_overlap`` are differentiated entry by entry through their
        symmetric part, so a symmetric perturbation ``dq`` changes the risk by
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
