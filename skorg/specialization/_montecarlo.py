"""Monte Carlo machinery of the population risk: the common random numbers and the
reference (automatic differentiation) evaluation of the risk, its gradient and the SGD noise.

:mod:`._gradient` evaluates the same three quantities in one pass with the gradient written
out by hand; the functions here are the oracle it is tested against (and the baseline of its
speed-up).
"""

import numpy as np
import torch

from ._model import attention_weights
from ._task import DiscretePrior, _as_rng

__all__ = []

# elements of one (inits x samples x tokens x heads) block: bounds the memory of one evaluation
_BLOCK = 2_000_000


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


def _chunks(n, n_samples, L, H, block=None):
    size = max(1, (block or _BLOCK) // max(1, n_samples * L * H))
    return [slice(i, min(n, i + size)) for i in range(0, n, size)]


def _risk_core_autograd(omega, T, b, draws, normalization, noise, *, grad=False):
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
