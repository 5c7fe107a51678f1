"""The effective dynamics: the high-dimensional limit of online SGD on the order parameters."""

import itertools
import numbers
import time
from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp

from .._progress import progress_bar
from ._gradient import _evaluate, _risk_core
from ._model import _check_normalization
from ._montecarlo import _Draws
from ._population import _check_count, _check_task, _pack, _unpack
from ._risk import OrderParameters
from ._task import _as_rng

__all__ = ["FlowTrajectory", "integrate_flow"]


@dataclass(frozen=True)
class FlowTrajectory:
    """Order parameters of one run of the effective dynamics, against ``t = samples seen / D``.

    The same interface as :class:`TrainingHistory` (``t``, ``order``, ``risk``, ``m``), so
    :func:`specialization_events` and the other analyses run on either.

    Attributes
    ----------
    t : ndarray of shape (n_records,)
    order : OrderParameters
        All eight fields, each with a leading axis of length ``n_records``.
    risk : ndarray of shape (n_records,)
        The population risk (Monte Carlo with the flow's common random numbers).
    risk_std_error : ndarray of shape (n_records,)
        Its Monte Carlo standard error.
    learning_rate, value_learning_rate, bias_learning_rate : float
    sgd_noise : bool
    params : dict
        The integration settings and the solver's statistics.
    """

    t: np.ndarray
    order: OrderParameters
    risk: np.ndarray
    risk_std_error: np.ndarray
    learning_rate: float
    value_learning_rate: float
    bias_learning_rate: float
    sgd_noise: bool
    params: dict = field(default_factory=dict)

    @property
    def m(self):
        """Alignments ``m_{h,f}``, shape (n_records, n_heads, F)."""
        return self.order.m


def _rate(name, val, default):
    val = default if val is None else val
    if not (isinstance(val, numbers.Real) and not isinstance(val, bool) and np.isfinite(val)):
        raise ValueError(f"{name} must be a finite positive number, got {val!r}.")
    if val <= 0:
        raise ValueError(f"{name} must be a finite positive number, got {val!r}.")
    return float(val)


def _coefficients(omega, T, b, draws, normalization, noise, lam, lam_b, with_noise):
    """The drift of the weights as a linear map, the SGD-noise increment and the bias drift.

    The averaged SGD step moves the weights by ``dW/dt = A W + B E^T`` (``E`` selects the target
    columns): ``A = -2 Lambda G_ww``, ``B = -2 Lambda G_wT / 2``. Returned with the noise
    ``Lambda N Lambda`` (zero without SGD noise) and ``db/dt``.
    """
    # one pass shares the factors, scores and weights between the gradient and the noise term
    _, _, (g_omega, g_T, g_b), N = _evaluate(
        omega, T, b, draws, normalization, noise, grad=True, noise_term=with_noise
    )
    # G: gradient of the mean per-sample loss R / 2 with respect to the Gram matrix of
    # (weights, targets), entry by entry; the weight-target block is shared by two entries
    G_ww = 0.25 * (g_omega + np.swapaxes(g_omega, 1, 2))
    A = -2.0 * lam[None, :, None] * G_ww
    B = -2.0 * lam[None, :, None] * (0.25 * g_T)
    if N is not None:
        N = np.outer(lam, lam)[None] * N
    return A, B, N, -lam_b * 0.5 * g_b


def _derivative(omega, T, b, draws, normalization, noise, lam, lam_b, with_noise):
    """Time derivatives of (omega, T, b) for every initialization (see the user guide)."""
    A, B, N, d_b = _coefficients(omega, T, b, draws, normalization, noise, lam, lam_b, with_noise)
    AO = A @ omega + B @ np.swapaxes(T, 1, 2)
    d_omega = AO + np.swapaxes(AO, 1, 2)
    if N is not None:
        d_omega = d_omega + N
    d_T = A @ T + B
    return d_omega, d_T, d_b


def _congruence_step(omega, T, b, coef, h, pre=None):
    """One step of length ``h`` as a congruence of the Gram matrix; returns it and its map.

    The weights (and the fixed targets) move by a linear map ``M``, so the Gram matrix of
    (weights, targets) becomes ``M (Omega_full + h N / 2) M^T + h N / 2``, the noise added
    half before, half after. It stays positive semi-definite and the targets stay orthonormal
    whatever ``h``, which an explicit step of ``dOmega/dt`` does not guarantee: values started
    at zero sit on the boundary of the cone, and a step that leaves it makes the conditional
    covariance of the values negative.

    With ``K = [[A, B], [0, 0]]`` the velocity of the weights is ``K W``. Without ``pre`` the
    step is Euler's, ``M = I + h K``; with the map ``pre`` of the predictor (the half step to
    the midpoint, where ``K`` was evaluated) it is the explicit midpoint rule
    ``W + h K_mid W_mid``, i.e. ``M = I + h K pre``. The coefficients multiply the weights in
    their own basis, so they carry the inverse of the key Gram matrix, and their Monte Carlo
    error is large along nearly collinear keys; ``K W`` is a velocity of the size of the
    weights, but a power of ``K`` (a Taylor polynomial ``I + hK + (hK)^2 / 2`` or ``exp(hK)``
    with the coefficients frozen) applies that amplified error again and blows up.
    """
    A, B, N, d_b = coef
    n, W, C = B.shape
    K = np.zeros((n, W + C, W + C))
    K[:, :W, :W] = h * A
    K[:, :W, W:] = h * B
    M = np.broadcast_to(np.eye(W + C), K.shape) + (K if pre is None else K @ pre)
    M11, M12 = M[:, :W, :W], M[:, :W, W:]
    if N is not None:
        omega = omega + 0.5 * h * N
    # M Omega_full M^T, blockwise; the target block stays the identity exactly
    MT = M11 @ T + M12
    P = M11 @ omega @ np.swapaxes(M11, 1, 2)
    C = M11 @ T @ np.swapaxes(M12, 1, 2)
    omega = P + C + np.swapaxes(C, 1, 2) + M12 @ np.swapaxes(M12, 1, 2)
    if N is not None:
        omega = omega + 0.5 * h * N
    omega = 0.5 * (omega + np.swapaxes(omega, 1, 2))
    return (omega, MT, b + h * d_b), M


def integrate_flow(
    initial,
    task,
    normalization="softmax",
    *,
    t_max=10.0,
    learning_rate=0.5,
    value_learning_rate=None,
    bias_learning_rate=None,
    train_keys=True,
    train_biases=True,
    train_values=True,
    sgd_noise=True,
    record_every=0.1,
    n_samples=1024,
    random_state=0,
    rtol=1e-4,
    atol=1e-6,
    method="RK45",
    step=None,
    fresh_draws=False,
    progress=None,
    n_threads=1,
):
    """Integrate the effective dynamics of online SGD from one or many initial order parameters.

    Parameters
    ----------
    initial : OrderParameters
        All eight fields (:func:`random_initial_order` or :func:`order_parameters`); a leading
        axis indexes independent initializations, integrated together (vectorized).
    task : SingleLocationTask
        The prior, ``L`` and the noise; ``D`` only matters through the initial condition.
    normalization : {"softmax", "softmax1", "bayes_softmax"}, default="softmax"
    t_max : float, default=10.0
        Length in ``t = samples seen / D``.
    learning_rate : float, default=0.5
        Key step ``eta`` per sample, as in :func:`train_online`.
    value_learning_rate : float, default=None
        Value step per sample; ``learning_rate`` when None.
    bias_learning_rate : float, default=None
        Bias rate per unit of ``t``: :func:`train_online`'s per-sample bias step times ``D``.
        ``learning_rate`` when None, which matches :func:`train_online`'s default.
    train_keys, train_biases, train_values : bool, default=True
    sgd_noise : bool, default=True
        Include the ``eta^2`` term by which the online-SGD noise grows the weight overlaps
        (which does not vanish as ``D`` grows at a fixed per-sample step). With False the
        dynamics is the gradient flow of the population risk, whose risk never increases.
    record_every : float, default=0.1
    n_samples : int, default=1024
        Common random numbers of the Monte Carlo risk (see :func:`population_risk`); the risk
        standard error at every record is in :attr:`FlowTrajectory.risk_std_error`.
    random_state : int, Generator or None, default=0
    rtol, atol : float, default=1e-4, 1e-6
        Tolerances of :func:`scipy.integrate.solve_ivp`.
    method : str, default="RK45"
        A :func:`scipy.integrate.solve_ivp` method, or ``"midpoint"``: a fixed-step explicit
        midpoint rule (second order, two evaluations a step) applied as a congruence of the
        Gram matrix, which keeps it positive semi-definite whatever the step (see Notes). Use
        it for long runs from values started at zero, where the adaptive methods are driven
        to tiny steps near the boundary of the cone.
    step : float, default=None
        Step in ``t`` of ``"midpoint"`` (ignored otherwise); ``0.1`` divided by the largest
        rate when None, i.e. a step of 0.1 in ``learning_rate * t``. Halving it moves the
        trajectories by a few 1e-3 at the default (measured in the tests).
    fresh_draws : bool, default=False
        With ``"midpoint"``, draw new common random numbers at every step (seeded from
        ``random_state``; the two stages of a step share them). The flow is then no longer the
        exact gradient flow of one fixed Monte Carlo risk, which a long run overfits (with a
        few hundred draws the keys grow along directions that lower the risk of those draws
        only), but an unbiased stochastic approximation of the flow of the exact risk, whose
        Monte Carlo error averages out over steps as the SGD noise of a batch of
        ``n_samples`` does.
    progress : bool, default=None
        A progress bar in ``t``; None follows ``skorg.get_config()["progress"]``.
    n_threads : int or None, default=1
        Torch threads during the integration (restored afterwards). The tensors are small, and
        on a loaded machine one thread is many times faster than several; None leaves torch's
        setting alone.

    Returns
    -------
    FlowTrajectory or list of FlowTrajectory
        A list when ``initial`` has a leading axis.

    Notes
    -----
    Writing ``Omega`` for the Gram matrix (divided by ``D``) of the weights and the target
    directions and ``G`` for the gradient of the mean per-sample loss ``R / 2`` with respect to
    it, one SGD step moves a weight ``w_a`` by ``-eta_a (2 / D) sum_b G_ab w_b`` on average,
    and ``D`` steps make one unit of ``t``; hence

    ``dOmega/dt = -2 (Lambda G Omega + Omega G Lambda) + Lambda N Lambda``,

    with ``Lambda`` the diagonal of the learning rates (zero on the fixed target directions)
    and ``N_ac = E sum_l gamma_{a,l} gamma_{c,l}`` the covariance of the per-sample gradients
    (the SGD noise, weight-weight block only); the biases follow ``db/dt = -eta_b dR/(2 db)``.
    See the user guide for the derivation and its assumptions.

    The ``"midpoint"`` method freezes ``A = -2 Lambda G`` (and the weight-target block ``B``,
    the noise and the bias drift) at the predicted midpoint of each step and moves the whole
    Gram matrix by the congruence ``M Omega M^T`` with ``M = I + h K_mid (I + h K_0 / 2)``,
    ``K = [[A, B], [0, 0]]`` at the start and at the predicted midpoint: the explicit midpoint
    rule ``W + h K_mid W_mid`` for the weights, whose Gram matrix it moves as a linear map of
    the weights, as an SGD step itself moves them.

    Examples
    --------
    >>> from skorg.specialization import SingleLocationTask, spike_prior, random_initial_order
    >>> task = SingleLocationTask(spike_prior([2.0]), dim=1000)
    >>> start = random_initial_order(task, n_heads=1, random_state=0)
    >>> flow = integrate_flow(start, task, t_max=2.0, record_every=1.0, n_samples=256)
    >>> flow.t
    array([0., 1., 2.])
    >>> bool(flow.risk[-1] < flow.risk[0])
    True
    """
    _check_task(task)
    _check_normalization(normalization)
    _check_count("n_samples", n_samples, 2)
    t_max = _rate("t_max", t_max, None)
    record_every = _rate("record_every", record_every, None)
    learning_rate = _rate("learning_rate", learning_rate, None)
    value_learning_rate = _rate("value_learning_rate", value_learning_rate, learning_rate)
    bias_learning_rate = _rate("bias_learning_rate", bias_learning_rate, learning_rate)
    for name, val in (("rtol", rtol), ("atol", atol)):
        _rate(name, val, None)
    if step is not None:
        step = _rate("step", step, None)
    omega0, T0, b0, lead = _pack(initial, task)
    if len(lead) > 1:
        raise ValueError(f"initial must have at most one leading axis, got {lead}.")
    n, H = b0.shape
    F = task.n_directions
    lam = np.concatenate(
        [
            np.full(H, learning_rate if train_keys else 0.0),
            np.full(H, value_learning_rate if train_values else 0.0),
        ]
    )
    lam_b = bias_learning_rate if train_biases else 0.0
    draws = _Draws(task, H, n_samples, random_state)
    sizes = (4 * H * H, 2 * H * (F + 1), H)

    def split(y):
        a, b_, c = np.split(y.reshape(n, -1), np.cumsum(sizes)[:2], axis=1)
        return (
            np.ascontiguousarray(a.reshape(n, 2 * H, 2 * H)),
            np.ascontiguousarray(b_.reshape(n, 2 * H, F + 1)),
            np.ascontiguousarray(c),
        )

    bar = progress_bar(total=t_max, desc="flow (t)", unit="t", enabled=progress)
    n_eval = [0]
    args = (draws, normalization, task.noise, lam, lam_b, sgd_noise)

    def fun(t, y):
        n_eval[0] += 1
        bar.update(max(0.0, min(t, t_max) - bar.n))
        parts = _derivative(*split(y), *args)
        return np.concatenate([p.reshape(n, -1) for p in parts], axis=1).ravel()

    y0 = np.concatenate([omega0.reshape(n, -1), T0.reshape(n, -1), b0], axis=1).ravel()
    n_rec = int(np.floor(t_max / record_every + 1e-9))
    grid = np.unique(np.append(np.arange(n_rec + 1) * record_every, t_max))
    start = time.perf_counter()
    import torch

    threads = torch.get_num_threads()
    if n_threads is not None:
        _check_count("n_threads", n_threads, 1)
        torch.set_num_threads(int(n_threads))
    try:
        if method == "midpoint":
            fastest = max(lam.max(), lam_b, learning_rate)
            h_max = 0.1 / fastest if step is None else step
            states = [(omega0, T0, b0)]
            state = states[0]
            seeds = np.random.SeedSequence(
                _as_rng(random_state).integers(2**63) if fresh_draws else 0
            )
            for t0, t1 in itertools.pairwise(grid):
                k = max(1, int(np.ceil((t1 - t0) / h_max - 1e-9)))
                h = (t1 - t0) / k
                for _ in range(k):
                    if fresh_draws:
                        draws = _Draws(task, H, n_samples, np.random.default_rng(seeds.spawn(1)[0]))
                        args = (draws, *args[1:])
                    half, pre = _congruence_step(*state, _coefficients(*state, *args), 0.5 * h)
                    state, _ = _congruence_step(*state, _coefficients(*half, *args), h, pre)
                    n_eval[0] += 2
                if not all(np.all(np.isfinite(x)) for x in state):
                    raise FloatingPointError(
                        f"the effective dynamics diverged at t={t1:.3g}; lower step."
                    )
                states.append(state)
                bar.update(t1 - bar.n)
            Y = np.stack([np.concatenate([x.reshape(n, -1) for x in st], axis=1) for st in states])
            sol_t = grid
        else:
            sol = solve_ivp(fun, (0.0, t_max), y0, method=method, t_eval=grid, rtol=rtol, atol=atol)
            if not sol.success or not np.all(np.isfinite(sol.y)):
                raise FloatingPointError(
                    f"the effective dynamics could not be integrated ({sol.message}); lower "
                    "the learning rates or t_max, or use method='midpoint'."
                )
            Y = sol.y.T.reshape(sol.t.size, n, -1)
            sol_t = sol.t
    finally:
        torch.set_num_threads(threads)
        bar.close()
    T_rec = sol_t.size
    omegas, Ts, bs = zip(*(split(Y[k].ravel()) for k in range(T_rec)), strict=True)
    omegas, Ts, bs = np.stack(omegas, 1), np.stack(Ts, 1), np.stack(bs, 1)  # (n, T, ...)
    flat = (omegas.reshape(n * T_rec, 2 * H, 2 * H), Ts.reshape(n * T_rec, 2 * H, F + 1))
    # with fresh draws the records are scored on the fixed draws of random_state, which the
    # dynamics never saw: an honest estimate of the exact risk
    draws = _Draws(task, H, n_samples, random_state)
    risk, se, _ = _risk_core(*flat, bs.reshape(n * T_rec, H), draws, normalization, task.noise)
    risk, se = risk.reshape(n, T_rec), se.reshape(n, T_rec)
    params = dict(
        normalization=normalization,
        n_samples=n_samples,
        random_state=random_state,
        rtol=rtol,
        atol=atol,
        method=method,
        step=step,
        fresh_draws=bool(fresh_draws),
        n_evaluations=n_eval[0],
        seconds=time.perf_counter() - start,
        train_keys=train_keys,
        train_biases=train_biases,
        train_values=train_values,
    )
    out = [
        FlowTrajectory(
            t=np.array(sol_t, dtype=np.float64),
            order=_unpack(omegas[i], Ts[i], bs[i], (T_rec,), H, F),
            risk=risk[i],
            risk_std_error=se[i],
            learning_rate=learning_rate,
            value_learning_rate=value_learning_rate,
            bias_learning_rate=bias_learning_rate,
            sgd_noise=bool(sgd_noise),
            params=params,
        )
        for i in range(n)
    ]
    return out if lead else out[0]
