"""The Monte Carlo population risk, its analytic gradient and the SGD noise, in one pass.

The effective dynamics needs, at every evaluation and for every initialization, the risk, its
gradient with respect to the order parameters and the covariance of the per-sample gradients.
All three are built from the same Cholesky factor, conditional covariance, scores and
attention weights, which are computed once here; the gradient is the reverse-mode derivative
written out by hand (see the user guide, *The analytic gradient*), so no autograd graph is
recorded. :func:`._montecarlo._risk_core_autograd` is the reference it is tested against.
"""

import numpy as np
import torch

from ._model import attention_weights
from ._montecarlo import _blocks, _chunks, _conditional

__all__ = []

# elements of one (inits x samples x tokens x heads) chunk: small enough that the arrays of a
# chunk stay in cache between the two dozen passes over them (measured fastest on 100 inits)
_BLOCK = 500_000


def _forward(omega, T, b, draws, normalization):
    """Factors, scores and weights shared by the risk, its gradient and the noise term."""
    H = b.shape[-1]
    q, qkv, qvv, m, ak, mv, av, b = _blocks(omega, T, b, H)
    Lq, Pw, S = _conditional(q, qkv, qvv, ak, av)
    n = b.shape[0]
    N, L = draws.eta.shape[:2]
    eta = draws.eta.reshape(1, N * L, H)
    # separate products keep the scores and value means contiguous (slices of one product are
    # strided views, on which every later elementwise pass is markedly slower)
    scores = (eta @ Lq.transpose(-1, -2)).reshape(n, N, L, H)
    cz = (eta @ Pw[:, :H].transpose(-1, -2)).reshape(n, N, L, H)
    cg0 = (draws.eta[:, 0, :] @ Pw[:, H, :, None])[..., 0]
    # the relevant token sits at position 0 (the model is symmetric in the positions)
    scores[:, :, 0] += draws.theta @ m.transpose(-1, -2)
    cz[:, :, 0] += draws.theta @ mv.transpose(-1, -2)
    scores += b[:, None, None, :]
    return Lq, Pw, S, attention_weights(scores, normalization), cz, cg0


def _backward(Lq, Pw, S, a, cz, mean_err, draws, normalization):
    """Gradients of ``mean_s err_s`` with respect to the symmetric part of omega, T and b.

    Where ``_conditional`` had to project an indefinite ``q`` (a trial state of an adaptive
    solver), this is the gradient at the projected ``q``: the projection is not differentiated.
    """
    n, N, L, H = a.shape
    w = 1.0 / N
    e = (2.0 * w) * mean_err  # d risk / d mean_err
    Szz, Szg = S[:, :H, :H], S[:, :H, H]
    a2 = a.reshape(n, N * L, H)
    # d risk / d a: the mean part, the quadratic form of the variance part, its a_0 . Szg term
    ga = (a2 @ (w * (Szz + Szz.transpose(-1, -2)))).reshape(n, N, L, H)
    ga += e[:, :, None, None] * cz
    ga[:, :, 0] -= (2.0 * w) * Szg[:, None, :]
    # through the normalization: softmax and softmax-1 have the same Jacobian per head
    # (da_i/ds_j = a_i (delta_ij - a_j)), Bayes-softmax normalizes over heads and tokens at once
    dims = (-2, -1) if normalization == "bayes_softmax" else -2
    gs = a * (ga - (a * ga).sum(dim=dims, keepdim=True))
    ea = e[:, :, None, None] * a  # d risk / d cz
    theta = draws.theta
    g_b = gs.sum(dim=(1, 2))
    g_m = gs[:, :, 0].transpose(-1, -2) @ theta
    g_mv = ea[:, :, 0].transpose(-1, -2) @ theta
    etaT = draws.eta.reshape(1, N * L, H).transpose(-1, -2)
    g_Lq = (etaT @ gs.reshape(n, N * L, H)).transpose(-1, -2)
    g_Pw = torch.cat(
        [
            (etaT @ ea.reshape(n, N * L, H)).transpose(-1, -2),
            -(e @ draws.eta[:, 0, :])[:, None, :],
        ],
        dim=-2,
    )
    # S = [[qvv, av], [av^T, 1]] - Pw Pw^T; the risk reads S[:H, :H], S[:H, H] and S[H, H]
    g_S = torch.zeros(n, H + 1, H + 1, dtype=a.dtype)
    g_S[:, :H, :H] = w * (a2.transpose(-1, -2) @ a2)
    g_S[:, :H, H] = (-2.0 * w) * a[:, :, 0].sum(dim=1)
    g_S[:, H, H] = 1.0
    g_Pw -= (g_S + g_S.transpose(-1, -2)) @ Pw
    # Pw^T = Lq^{-1} P^T with P = [qkv^T; ak^T]
    g_Pt = torch.linalg.solve_triangular(Lq.transpose(-1, -2), g_Pw.transpose(-1, -2), upper=True)
    g_Lq -= g_Pt @ Pw
    # q = Lq Lq^T: the symmetric gradient L^-T Phi(L^T dL) L^-1 (Phi: lower part, half diagonal)
    X = torch.tril(Lq.transpose(-1, -2) @ g_Lq)
    X = 0.5 * (X + torch.tril(X, -1).transpose(-1, -2))
    X = torch.linalg.solve_triangular(Lq.transpose(-1, -2), X, upper=True, left=True)
    g_q = torch.linalg.solve_triangular(Lq, X, upper=False, left=False)
    g_sym = torch.zeros(n, 2 * H, 2 * H, dtype=a.dtype)
    g_sym[:, :H, :H] = g_q
    g_sym[:, :H, H:] = g_Pt[:, :, :H]
    g_sym[:, H:, H:] = g_S[:, :H, :H]
    # _blocks reads omega through its symmetric part
    g_omega = 0.5 * (g_sym + g_sym.transpose(-1, -2))
    F = theta.shape[1]
    g_T = torch.empty(n, 2 * H, F + 1, dtype=a.dtype)
    g_T[:, :H, :F] = g_m
    g_T[:, :H, F] = g_Pt[:, :, H]
    g_T[:, H:, :F] = g_mv
    g_T[:, H:, F] = g_S[:, :H, H]
    return g_omega, g_T, g_b


def _noise_term(S, a, cz, cg0, draws, normalization, noise):
    """``E[sum_l gamma_l gamma_l^T]`` (n, 2H, 2H) from the shared factors (see ``_sgd_noise``)."""
    n, N, L, H = a.shape
    evals, evecs = torch.linalg.eigh(0.5 * (S + S.transpose(-1, -2)))
    root = evecs * evals.clamp_min(0.0).sqrt()[:, None, :]
    rho = draws.rho.reshape(1, N * L, H + 1)
    z = (rho @ root[:, :H].transpose(-1, -2)).reshape(n, N, L, H)
    z += cz
    y = (draws.rho[:, 0, :] @ root[:, H, :, None])[..., 0] + cg0 + noise * draws.eps
    per_head = (a * z).sum(dim=-2, keepdim=True)
    y_hat = per_head.sum(dim=-1)[..., 0]
    centre = y_hat[:, :, None, None] if normalization == "bayes_softmax" else per_head
    err_a = (y_hat - y)[:, :, None, None] * a
    gamma = torch.cat([err_a * (z - centre), err_a], dim=-1).reshape(n, N * L, 2 * H)
    return (gamma.transpose(-1, -2) @ gamma) / N


def _evaluate(omega, T, b, draws, normalization, noise, *, grad=False, noise_term=False):
    """Risk, standard error, gradient (if ``grad``) and SGD noise (if ``noise_term``).

    The arrays are NumPy with a leading axis of initializations; the gradient is that of
    :func:`._montecarlo._risk_core_autograd` (with respect to the raw ``omega``, ``T``, ``b``)
    and the noise that of :func:`._montecarlo._sgd_noise`, to rounding.
    """
    n, H = b.shape
    N, L = draws.eta.shape[:2]
    risk, se = np.empty(n), np.empty(n)
    grads = (np.empty_like(omega), np.empty_like(T), np.empty_like(b)) if grad else None
    noise_out = np.empty_like(omega) if noise_term else None
    with torch.no_grad():
        for sl in _chunks(n, N, L, H, _BLOCK):
            om, Tt, bt = (torch.from_numpy(np.ascontiguousarray(x[sl])) for x in (omega, T, b))
            Lq, Pw, S, a, cz, cg0 = _forward(om, Tt, bt, draws, normalization)
            k = a.shape[0]
            mean_err = (a * cz).sum(dim=(-2, -1)) - cg0
            Szz, Szg, Sgg = S[:, :H, :H], S[:, :H, H], S[:, H, H]
            a2 = a.reshape(k, N * L, H)
            quad = ((a2 @ Szz) * a2).reshape(k, N, L * H).sum(dim=-1)
            err = mean_err**2 + quad - 2.0 * (a[:, :, 0] * Szg[:, None, :]).sum(dim=-1)
            err += Sgg[:, None] + noise**2
            risk[sl] = err.mean(dim=1).numpy()
            # the groups sharing one token-noise draw are the independent units of the average
            per_draw = err.reshape(k, -1, draws.group).mean(dim=2)
            se[sl] = per_draw.std(dim=1).numpy() / np.sqrt(per_draw.shape[1])
            if grad:
                parts = _backward(Lq, Pw, S, a, cz, mean_err, draws, normalization)
                for out, part in zip(grads, parts, strict=True):
                    out[sl] = part.numpy()
            if noise_term:
                noise_out[sl] = _noise_term(S, a, cz, cg0, draws, normalization, noise).numpy()
    return risk, se, grads, noise_out


def _risk_core(omega, T, b, draws, normalization, noise, *, grad=False):
    """Risk, standard error and (if ``grad``) the gradient of ``risk`` for every init."""
    risk, se, grads, _ = _evaluate(omega, T, b, draws, normalization, noise, grad=grad)
    return risk, se, grads
